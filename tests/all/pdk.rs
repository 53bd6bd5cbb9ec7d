//! A tool written with `locara-pdk` (`test.shout`, `crates/locara-test-guests`), shipped by an
//! app and called through the whole pipeline: its schemas and description come from its code.

use locara_facade::{AppManifest, Locara, LocaraConfig, RunRequest};
use locara_registry::{prepare_manifest, sign_manifest};
use locara_test_artifacts::{PDK_SHOUT, PDK_SHOUT_MANIFEST, TestHome};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pdk_tool_shipped_by_an_app_runs_with_the_schemas_of_its_code() {
    let home = TestHome::new();
    let app_dir = tempfile::tempdir().unwrap();
    let wasm = std::fs::read(PDK_SHOUT).unwrap();
    let template = std::fs::read_to_string(PDK_SHOUT_MANIFEST).unwrap();
    let manifest = prepare_manifest(&template, &wasm).unwrap().to_json_pretty();
    std::fs::write(app_dir.path().join("shout.wasm"), &wasm).unwrap();
    std::fs::write(app_dir.path().join("shout.json"), &manifest).unwrap();
    let signature = sign_manifest(manifest.as_bytes(), &home.key).to_json_pretty();
    std::fs::write(app_dir.path().join("shout.sig.json"), &signature).unwrap();
    let app = AppManifest::from_json(
        &json!({
            "schema_version": 1,
            "name": "shouting-app",
            "tools": [{"path": "shout.wasm", "manifest": "shout.json", "signature": "shout.sig.json"}],
        })
        .to_string(),
    )
    .unwrap();
    let locara =
        Locara::new(&LocaraConfig::new(home.path()).with_app(app.clone(), app_dir.path())).unwrap();

    let described = locara.describe("test.shout").unwrap();
    let described = serde_json::to_value(&described).unwrap();
    assert!(
        described
            .to_string()
            .contains("Shouts the text: returns it in capitals"),
        "{described}"
    );

    let response = locara
        .run(RunRequest::new(
            "test.shout",
            json!({"text": "hi", "bangs": 2}),
        ))
        .await
        .unwrap();
    assert!(response.ok, "{:?}", response.error);
    assert_eq!(response.output.unwrap(), json!({"text": "HI!!"}));

    // The schema derived from `bangs: u8` bounds it before the tool runs.
    let error = locara
        .run(RunRequest::new(
            "test.shout",
            json!({"text": "hi", "bangs": 300}),
        ))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "invalid_input", "{error}");
    assert!(error.to_string().contains("bangs"), "{error}");

    // The tool's own `ToolError::bad_args` reaches the caller with its message.
    let outcome = locara
        .run(RunRequest::new("test.shout", json!({"text": " "})))
        .await;
    let message = match outcome {
        Ok(response) => {
            assert!(!response.ok);
            format!("{:?}", response.error)
        }
        Err(error) => error.to_string(),
    };
    assert!(
        message.contains("text is empty; pass the text to shout"),
        "{message}"
    );

    // A manifest changed after signing is refused.
    std::fs::write(
        app_dir.path().join("shout.json"),
        manifest.replace("Shouts the text", "Whispers the text"),
    )
    .unwrap();
    let refused = Locara::new(&LocaraConfig::new(home.path()).with_app(app, app_dir.path()));
    let Err(error) = refused else {
        panic!("a manifest changed after signing was accepted");
    };
    assert!(error.to_string().contains("signature"), "{error}");
}
