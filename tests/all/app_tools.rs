//! An app that ships its own signed tool beside its `locara.json`.

use locara_facade::{AppManifest, Locara, LocaraConfig, RunRequest};
use locara_registry::{prepare_manifest, sign_manifest};
use locara_test_artifacts::{PROBE, PROBE_MANIFEST, TestHome};
use serde_json::json;

/// Writes the probe, its manifest and its signature into `dir`, signed by `home`'s key.
fn ship_probe(home: &TestHome, dir: &std::path::Path) {
    let wasm = std::fs::read(PROBE).unwrap();
    let manifest =
        prepare_manifest(&std::fs::read_to_string(PROBE_MANIFEST).unwrap(), &wasm).unwrap();
    let bytes = manifest.to_json_pretty();
    std::fs::write(dir.join("probe.wasm"), &wasm).unwrap();
    std::fs::write(dir.join("probe.json"), &bytes).unwrap();
    std::fs::write(
        dir.join("probe.sig.json"),
        sign_manifest(bytes.as_bytes(), &home.key).to_json_pretty(),
    )
    .unwrap();
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
    assert_eq!(tools, ["test.probe@0.1.0", "text.chunk@0.1.0"]);

    let echo = RunRequest::new("test.probe", json!({"op": "echo"}))
        .with_workspace(app_dir.path().join("data"));
    let response = locara.run(echo).await.unwrap();
    assert!(response.ok, "{:?}", response.error);
    assert_eq!(response.output.unwrap(), json!({"echo": {"op": "echo"}}));

    // The grant is `data/`, relative to the app: the app's own directory is not granted.
    let outside =
        RunRequest::new("test.probe", json!({"op": "echo"})).with_workspace(app_dir.path());
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
