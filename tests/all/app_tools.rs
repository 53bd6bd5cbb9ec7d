//! An app that ships its own signed tool beside its `locara.json`.

use locara_facade::{AppManifest, Locara, LocaraConfig, RunRequest};
use locara_registry::{prepare_manifest, sign_manifest};
use locara_test_artifacts::{PROBE, PROBE_MANIFEST, TestHome};
use serde_json::json;

/// Writes the probe as tool `id@version`, its manifest and its signature into `dir` as
/// `<stem>.wasm`, `<stem>.json` and `<stem>.sig.json`, signed by `home`'s key.
fn ship_probe_as(home: &TestHome, dir: &std::path::Path, stem: &str, id: &str, version: &str) {
    let wasm = std::fs::read(PROBE).unwrap();
    let mut template: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(PROBE_MANIFEST).unwrap()).unwrap();
    template["id"] = json!(id);
    template["version"] = json!(version);
    let manifest = prepare_manifest(&template.to_string(), &wasm).unwrap();
    let bytes = manifest.to_json_pretty();
    std::fs::write(dir.join(format!("{stem}.wasm")), &wasm).unwrap();
    std::fs::write(dir.join(format!("{stem}.json")), &bytes).unwrap();
    std::fs::write(
        dir.join(format!("{stem}.sig.json")),
        sign_manifest(bytes.as_bytes(), &home.key).to_json_pretty(),
    )
    .unwrap();
}

/// Ships the probe as the app's own `field.probe@0.1.0` (`probe.*`); the registry of a
/// `TestHome` has `test.probe@0.1.0`, which an app may not ship under the same name.
fn ship_probe(home: &TestHome, dir: &std::path::Path) {
    ship_probe_as(home, dir, "probe", "field.probe", "0.1.0");
}

const APP: &str = r#"{
    "schema_version": 1,
    "name": "field-app",
    "tools": [
        "text.chunk@0.1.0",
        {"path": "probe.wasm", "manifest": "probe.json", "signature": "probe.sig.json"}
    ],
    "grants": {"fs": [{"path": "data", "write": false}]}
}"#;

/// An app manifest with `registry` tools and a shipped tool for each stem of `shipped`.
fn app_with(registry: &[&str], shipped: &[&str]) -> AppManifest {
    let mut tools: Vec<serde_json::Value> = registry.iter().map(|r| json!(r)).collect();
    for stem in shipped {
        tools.push(json!({
            "path": format!("{stem}.wasm"),
            "manifest": format!("{stem}.json"),
            "signature": format!("{stem}.sig.json"),
        }));
    }
    let app = json!({"schema_version": 1, "name": "field-app", "tools": tools});
    AppManifest::from_json(&app.to_string()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shipped_tool_is_verified_listed_and_run_with_the_apps_grants() {
    let home = TestHome::new();
    let app_dir = tempfile::tempdir().unwrap();
    ship_probe(&home, app_dir.path());
    std::fs::create_dir(app_dir.path().join("data")).unwrap();
    std::fs::write(app_dir.path().join("data/in.txt"), "from the app").unwrap();
    let config = LocaraConfig::new(home.path())
        .with_app(AppManifest::from_json(APP).unwrap(), app_dir.path());
    let locara = Locara::new(&config).unwrap();

    let tools: Vec<String> = locara.list().into_iter().map(|t| t.tool).collect();
    assert_eq!(tools, ["field.probe@0.1.0", "text.chunk@0.1.0"]);

    let echo = RunRequest::new("field.probe", json!({"op": "echo"}))
        .with_workspace(app_dir.path().join("data"));
    let response = locara.run(echo).await.unwrap();
    assert!(response.ok, "{:?}", response.error);
    assert_eq!(response.output.unwrap(), json!({"echo": {"op": "echo"}}));

    // The grant is `data/`, relative to the app: the app's own directory is not granted.
    let outside =
        RunRequest::new("field.probe", json!({"op": "echo"})).with_workspace(app_dir.path());
    let error = locara.run(outside).await.unwrap_err();
    assert_eq!(error.code(), "capability_denied", "{error}");
}

#[test]
fn a_shipped_tool_whose_wasm_was_swapped_is_refused_at_startup() {
    let home = TestHome::new();
    let app_dir = tempfile::tempdir().unwrap();
    ship_probe(&home, app_dir.path());
    let mut wasm = std::fs::read(app_dir.path().join("probe.wasm")).unwrap();
    let last = wasm.len() - 1;
    wasm[last] ^= 0xff;
    std::fs::write(app_dir.path().join("probe.wasm"), wasm).unwrap();
    let config = LocaraConfig::new(home.path())
        .with_app(AppManifest::from_json(APP).unwrap(), app_dir.path());
    let error = Locara::new(&config).unwrap_err();
    assert!(error.to_string().contains("hash mismatch"), "{error}");
}

#[test]
fn a_shipped_tool_named_like_a_registry_tool_is_refused_at_startup() {
    let home = TestHome::new();
    let app_dir = tempfile::tempdir().unwrap();
    let start = |app: AppManifest| {
        Locara::new(&LocaraConfig::new(home.path()).with_app(app, app_dir.path())).unwrap_err()
    };

    // The registry has test.probe@0.1.0; the app ships its own build under that name. The app
    // need not even declare the registry's: the name is taken.
    ship_probe_as(&home, app_dir.path(), "same", "test.probe", "0.1.0");
    let error = start(app_with(&["text.chunk@0.1.0"], &["same"]));
    assert_eq!(error.code(), "conflicting_tool", "{error}");
    let registry_dir = home.registry_dir().join("tools/test.probe/0.1.0");
    assert_eq!(
        error.to_string(),
        format!(
            "the app ships `test.probe@0.1.0` ({}), and the registry has `test.probe@0.1.0` too ({}): one name for two tools",
            app_dir.path().join("same.json").display(),
            registry_dir.display()
        )
    );
    assert!(
        error.hint().contains("another id or version"),
        "{}",
        error.hint()
    );

    // Another version of a registry tool's id is a different tool, and is served.
    ship_probe_as(&home, app_dir.path(), "newer", "test.probe", "0.2.0");
    let locara = Locara::new(
        &LocaraConfig::new(home.path())
            .with_app(app_with(&["test.probe@0.1.0"], &["newer"]), app_dir.path()),
    )
    .unwrap();
    let tools: Vec<String> = locara.list().into_iter().map(|t| t.tool).collect();
    assert_eq!(tools, ["test.probe@0.1.0", "test.probe@0.2.0"]);

    // Pinned as a registry tool and shipped: refused even when the registry lacks it.
    ship_probe(&home, app_dir.path());
    let error = start(app_with(&["field.probe@0.1.0"], &["probe"]));
    assert_eq!(error.code(), "conflicting_tool", "{error}");
    assert!(
        error
            .to_string()
            .ends_with("and the app manifest also lists `field.probe@0.1.0` as a registry tool: one name for two tools"),
        "{error}"
    );

    // Two shipped tools with one id: the app's resolver holds one per id, so neither is taken.
    ship_probe_as(&home, app_dir.path(), "other", "field.probe", "0.3.0");
    let error = start(app_with(&[], &["probe", "other"]));
    assert_eq!(error.code(), "conflicting_tool", "{error}");
    assert_eq!(
        error.to_string(),
        format!(
            "the app ships two tools with the id `field.probe`: {} (`field.probe@0.1.0`) and {} (`field.probe@0.3.0`)",
            app_dir.path().join("probe.json").display(),
            app_dir.path().join("other.json").display()
        )
    );
}
