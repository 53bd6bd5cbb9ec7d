//! The memory tools through the facade: offered by `with_memory`, scoped by the request's
//! user, and searched with the weights the host configured.

use locara_facade::{HybridWeights, Locara, LocaraConfig, RunRequest};
use locara_registry::ModelStore;
use locara_test_artifacts::TestHome;
use serde_json::{Value, json};

async fn call(locara: &Locara, user: &str, tool: &str, arguments: Value) -> Value {
    let response = locara
        .run(RunRequest::new(tool, arguments).with_user(user))
        .await
        .unwrap();
    assert!(response.ok, "{tool}: {:?}", response.error);
    response.output.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_chooses_the_weights_and_the_request_the_user() {
    let home = TestHome::new();
    let config = LocaraConfig::new(home.path());
    let models = ModelStore::new(config.models_dir());
    let blobs = locara_upstream::fetch::BlobCache::user_default();
    let search = locara_memory::manifests().remove(1);
    locara_upstream::models::install_missing(&search, &models, &blobs, |_| {}).unwrap();

    let hybrid = Locara::new(&config.clone().with_memory()).unwrap();
    call(
        &hybrid,
        "ann",
        "memory.save",
        json!({"text": "Ann's daughter starts school in September"}),
    )
    .await;
    // A paraphrase that shares no word with the note: found by meaning.
    let query = json!({"query": "when does her kid begin classes"});
    let found = call(&hybrid, "ann", "memory.search", query.clone()).await;
    assert_eq!(found["results"].as_array().unwrap().len(), 1, "{found}");
    // Another user on the same host finds nothing.
    let other = call(&hybrid, "ben", "memory.search", query.clone()).await;
    assert_eq!(other["results"], json!([]));

    // Full text only: the paraphrase finds nothing, the note's own words do.
    let text_only =
        Locara::new(&config.clone().with_memory_weights(HybridWeights::TEXT_ONLY)).unwrap();
    let missed = call(&text_only, "ann", "memory.search", query).await;
    assert_eq!(missed["results"], json!([]), "{missed}");
    let worded = call(
        &text_only,
        "ann",
        "memory.search",
        json!({"query": "school September"}),
    )
    .await;
    assert_eq!(worded["results"].as_array().unwrap().len(), 1, "{worded}");

    let broken = HybridWeights {
        vector: -1.0,
        text: 0.5,
    };
    let error = Locara::new(&config.with_memory_weights(broken)).unwrap_err();
    assert_eq!(error.code(), "invalid_config", "{error}");
}
