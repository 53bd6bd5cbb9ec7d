//! Every registry refusal, triggered for real on an installed tool and seen through the facade.

use std::path::{Path, PathBuf};

use locara_facade::{Locara, LocaraConfig, RunRequest};
use locara_registry::{Registry, RegistryConfig, TrustStore, generate_keypair, prepare_manifest};
use locara_test_artifacts::TestHome;
use serde_json::json;

fn tool_dir(home: &TestHome, id: &str) -> PathBuf {
    home.registry_dir().join("tools").join(id).join("0.1.0")
}

fn flip_byte(path: &Path, offset: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[offset] ^= 0x01;
    std::fs::write(path, bytes).unwrap();
}

async fn run_text_chunk(
    home: &TestHome,
) -> Result<locara_facade::RunResponse, locara_facade::Error> {
    let locara = Locara::new(&LocaraConfig::new(home.path()))?;
    locara
        .run(RunRequest::new("text.chunk", json!({"text": "a b c"})))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untampered_tool_runs() {
    let home = TestHome::new();
    assert!(run_text_chunk(&home).await.unwrap().ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_artifact_byte_is_a_hash_mismatch() {
    let home = TestHome::new();
    flip_byte(
        &tool_dir(&home, "text.chunk").join("text.chunk-0.1.0.wasm"),
        100,
    );
    let error = run_text_chunk(&home).await.unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("hash mismatch")
            && message.contains("found")
            && message.contains("expected"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_manifest_byte_is_a_bad_signature() {
    let home = TestHome::new();
    let manifest = tool_dir(&home, "text.chunk").join("manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    // Change the description's first letter: still valid JSON, no longer what was signed.
    let at = text.find("\"description\": \"").unwrap() + "\"description\": \"".len();
    flip_byte(&manifest, at);
    let error = Locara::new(&LocaraConfig::new(home.path()))
        .unwrap()
        .describe("text.chunk")
        .unwrap_err();
    assert_eq!(
        error.code(),
        "not_found",
        "a manifest that fails verification is not listed"
    );
    let error = run_text_chunk(&home).await.unwrap_err();
    assert!(error.to_string().contains("signature"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_signature_is_unsigned() {
    let home = TestHome::new();
    std::fs::remove_file(tool_dir(&home, "text.chunk").join("manifest.sig.json")).unwrap();
    let error = run_text_chunk(&home).await.unwrap_err();
    assert!(
        error.to_string().contains("unsigned") || error.to_string().contains("not signed"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_signed_by_an_unknown_key_is_refused() {
    let home = TestHome::new();
    let stranger = generate_keypair("stranger").unwrap();
    // The stranger republishes text.chunk with their own key (trusting only themselves to do so).
    let registry = Registry::new(
        RegistryConfig::new(home.registry_dir())
            .with_trust(TrustStore::new().with_key(stranger.public_key().clone())),
    )
    .unwrap();
    let wasm = std::fs::read(tool_dir(&home, "text.chunk").join("text.chunk-0.1.0.wasm")).unwrap();
    let template = std::fs::read_to_string(
        locara_test_artifacts::TOOLS
            .iter()
            .find(|(id, ..)| *id == "text.chunk")
            .unwrap()
            .2,
    )
    .unwrap();
    registry
        .publish(
            &prepare_manifest(&template, &wasm).unwrap(),
            &wasm,
            &stranger,
        )
        .unwrap();
    let error = run_text_chunk(&home).await.unwrap_err();
    assert!(
        error.to_string().contains("not in the trust store"),
        "{error}"
    );
    assert!(
        error.to_string().contains(stranger.key_id().as_str()),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_older_than_the_lock_is_a_rollback() {
    let home = TestHome::new();
    let registry = home.registry();
    // Publish text.chunk 0.2.0 (same module, new version) and pin it in the home's lockfile.
    let wasm = std::fs::read(tool_dir(&home, "text.chunk").join("text.chunk-0.1.0.wasm")).unwrap();
    let (_, _, template) = locara_test_artifacts::TOOLS
        .iter()
        .find(|(id, ..)| *id == "text.chunk")
        .unwrap();
    let template = std::fs::read_to_string(template)
        .unwrap()
        .replace("\"version\": \"0.1.0\"", "\"version\": \"0.2.0\"");
    registry
        .publish(
            &prepare_manifest(&template, &wasm).unwrap(),
            &wasm,
            &home.key,
        )
        .unwrap();

    let locara = Locara::new(&LocaraConfig::new(home.path())).unwrap();
    let latest = locara
        .run(RunRequest::new("text.chunk", json!({"text": "a"})))
        .await
        .unwrap();
    assert_eq!(
        latest.tool, "text.chunk@0.2.0",
        "a bare id takes the newest and pins it"
    );
    let error = locara
        .run(RunRequest::new("text.chunk@0.1.0", json!({"text": "a"})))
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("roll text.chunk back to 0.1.0") && message.contains("pins 0.2.0"),
        "{message}"
    );
    let lock = std::fs::read_to_string(home.path().join("locara.lock")).unwrap();
    assert!(lock.contains("\"0.2.0\""), "{lock}");
}
