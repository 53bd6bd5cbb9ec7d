//! In-process tools: a host registers an async fn with a manifest, and it goes through the
//! same pipeline as a signed wasm tool — search, describe, schemas, limits, output cap,
//! approval, batches, chains and receipts.

use std::{sync::Arc, time::Duration};

use locara_facade::{
    ApprovalDecision, ApprovalRequest, Approver, BackendKind, BatchRequest, ChainRequest, Grants,
    HandlerError, HostTool, Locara, LocaraConfig, RunRequest, SafetyTier, ToolHandler,
    ToolManifest,
};
use locara_manifest::LimitsSpec;
use locara_registry::generate_keypair;
use locara_test_artifacts::TestHome;
use serde_json::{Value, json};

/// Counts the words of `text`; sleeps `sleep_ms` first; returns `bad` output when asked.
#[derive(Debug)]
struct WordCount;

#[async_trait::async_trait]
impl ToolHandler for WordCount {
    async fn call(
        &self,
        arguments: Value,
        _context: &locara_facade::CallContext,
    ) -> Result<Value, HandlerError> {
        if let Some(ms) = arguments["sleep_ms"].as_u64() {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        let text = arguments["text"].as_str().unwrap_or_default();
        match arguments["mode"].as_str() {
            Some("fail") => Err(HandlerError::new(
                "the text is not in a language this counter knows",
                "give English text",
            )),
            Some("bad") => Ok(json!({"words": "many"})),
            Some("huge") => Ok(json!({"words": 0, "echo": text.repeat(10_000)})),
            Some("panic") => panic!("deliberate"),
            _ => Ok(json!({"words": text.split_whitespace().count()})),
        }
    }
}

fn manifest(id: &str, tier: SafetyTier) -> ToolManifest {
    HostTool::manifest_template(id.parse().unwrap(), "1.0.0".parse().unwrap())
        .with_display_name("Word counter")
        .with_description("Count the words in a text (runs in the host process).")
        .with_safety_tier(tier)
        .with_limits(
            serde_json::from_value::<LimitsSpec>(
                json!({"wall_time_ms": 2000, "output_bytes": 10000}),
            )
            .unwrap(),
        )
        .with_input_schema(json!({
            "type": "object",
            "required": ["text"],
            "properties": {
                "text": {"type": "string"},
                "sleep_ms": {"type": "integer", "minimum": 0},
                "mode": {"enum": ["fail", "bad", "huge", "panic"]}
            },
            "additionalProperties": false
        }))
        .with_output_schema(json!({
            "type": "object",
            "required": ["words"],
            "properties": {"words": {"type": "integer"}}
        }))
}

fn host_tool(id: &str, tier: SafetyTier) -> HostTool {
    HostTool::new(manifest(id, tier), Arc::new(WordCount)).unwrap()
}

#[derive(Debug)]
struct Yes;

#[async_trait::async_trait]
impl Approver for Yes {
    async fn approve(&self, _: &ApprovalRequest) -> ApprovalDecision {
        ApprovalDecision::approve("test", "yes")
    }
}

fn locara(home: &TestHome) -> Locara {
    Locara::new(
        &LocaraConfig::new(home.path())
            .with_engine(BackendKind::Wasmtime)
            .with_grants(Grants::new().with_max_safety_tier(SafetyTier::Privileged))
            .with_host_tool(host_tool("host.word-count", SafetyTier::ReadOnly))
            .with_host_tool(host_tool("host.admin-count", SafetyTier::Privileged))
            .with_approver(Arc::new(Yes))
            .with_receipt_key(generate_keypair("host").unwrap()),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_tool_is_searched_described_and_run_like_any_tool() {
    let home = TestHome::new();
    let locara = locara(&home);
    assert_eq!(
        locara.search_tools("count the words", 1)[0].id,
        "host.word-count"
    );
    let description = locara.describe("host.word-count").unwrap();
    assert_eq!(description.backend, "in_process");
    assert_eq!(description.input_schema["required"], json!(["text"]));
    assert_eq!(locara.describe("text.chunk").unwrap().backend, "wasm");

    let response = locara
        .run(RunRequest::new("host.word-count", json!({"text": "one two three"})).with_receipt())
        .await
        .unwrap();
    assert!(response.ok, "{:?}", response.error);
    assert_eq!(response.tool, "host.word-count@1.0.0");
    assert_eq!(response.output, Some(json!({"words": 3})));
    assert_eq!(response.stats.engine, "in-process");
    assert_eq!(response.stats.limits.wall_time_ms, 2000);
    let receipt = response.receipt.unwrap();
    assert_eq!(
        receipt.receipt["manifest_sha256"].as_str().unwrap().len(),
        64
    );
    assert_eq!(receipt.receipt["engine"], "in-process");

    // The input schema is checked before the handler runs.
    let error = locara
        .run(RunRequest::new("host.word-count", json!({"text": 7})))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "invalid_input");
    assert_eq!(error.report().violations[0].pointer, "/text");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_tool_fails_as_data_under_its_limits_and_schemas() {
    let home = TestHome::new();
    let locara = locara(&home);
    let run = |arguments: Value| locara.run(RunRequest::new("host.word-count", arguments));

    let failed = run(json!({"text": "x", "mode": "fail"})).await.unwrap();
    let error = failed.error.unwrap();
    assert_eq!(
        (error.code.as_str(), error.exit_code),
        ("tool_error", Some(1))
    );
    assert_eq!(error.hint, "give English text");

    let bad = run(json!({"text": "x", "mode": "bad"})).await.unwrap();
    assert_eq!(bad.error.unwrap().code, "invalid_output");

    let slow = run(json!({"text": "x", "sleep_ms": 5000})).await.unwrap();
    let error = slow.error.unwrap();
    assert_eq!(
        (error.code.as_str(), error.limit.as_deref()),
        ("limit_exceeded", Some("wall_time"))
    );
    assert!(slow.stats.elapsed_ms < 4000.0, "{}", slow.stats.elapsed_ms);

    let huge = run(json!({"text": "abcdefgh", "mode": "huge"}))
        .await
        .unwrap();
    let error = huge.error.unwrap();
    assert_eq!(
        (error.code.as_str(), error.limit.as_deref()),
        ("limit_exceeded", Some("output_bytes"))
    );

    let panicked = run(json!({"text": "x", "mode": "panic"})).await.unwrap();
    assert_eq!(panicked.error.unwrap().code, "crashed");
    // The host is fine afterwards.
    assert!(run(json!({"text": "still here"})).await.unwrap().ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_tools_take_part_in_tiers_batches_and_chains() {
    let home = TestHome::new();
    let locara = locara(&home);
    // Privileged host tools are approved like any other; the decision is recorded.
    let response = locara
        .run(RunRequest::new("host.admin-count", json!({"text": "a b"})))
        .await
        .unwrap();
    assert_eq!(response.approval.unwrap().by, "test");

    // Read-only host calls of a batch overlap: four 250 ms calls end well before 1 s.
    let started = std::time::Instant::now();
    let calls = (0..4)
        .map(|_| RunRequest::new("host.word-count", json!({"text": "a", "sleep_ms": 250})))
        .collect();
    let batch = locara.run_batch(BatchRequest::new(calls)).await;
    assert!(batch.ok, "{batch:?}");
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );

    // A chain feeds a wasm tool's output to the host tool.
    let chain = ChainRequest::new(vec![
        RunRequest::new(
            "text.chunk",
            json!({"text": "One two. Three four five.", "max_chars": 9}),
        ),
        RunRequest::new(
            "host.word-count",
            json!({"text": {"$ref": "steps.0.output.chunks.1.text"}}),
        ),
    ]);
    let response = locara.run_chain(chain).await;
    assert!(response.ok, "{response:?}");
    let bound = response.steps[0].output.as_ref().unwrap()["chunks"][1]["text"]
        .as_str()
        .unwrap();
    let words = bound.split_whitespace().count();
    assert!(words > 0);
    assert_eq!(response.steps[1].output, Some(json!({"words": words})));

    // An app that admits only read-only tools refuses the privileged one before asking.
    let strict = Locara::new(
        &LocaraConfig::new(home.path())
            .with_grants(Grants::new())
            .with_host_tool(host_tool("host.admin-count", SafetyTier::Privileged)),
    )
    .unwrap();
    let error = strict
        .run(RunRequest::new("host.admin-count", json!({"text": "a"})))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "capability_denied");
}
