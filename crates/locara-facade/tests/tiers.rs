//! Safety tiers, approval and receipts, end to end through `Locara`: batches run read-only
//! calls together and the others alone, privileged calls wait for the host's approver, and
//! each call can come with a receipt signed by the host.

use std::sync::{Arc, Mutex, OnceLock};

use locara_facade::{
    ApprovalDecision, ApprovalRequest, Approver, BackendKind, BatchRequest, Grants, Locara,
    LocaraConfig, Receipt, RunRequest, SafetyTier, SignedReceipt, SigningKey, receipt_digest,
};
use locara_registry::{Digest, TrustStore, generate_keypair};
use locara_test_artifacts::TestHome;
use serde_json::{Value, json};

fn home() -> &'static TestHome {
    static HOME: OnceLock<TestHome> = OnceLock::new();
    HOME.get_or_init(|| {
        let home = TestHome::new();
        home.publish_probe_as("test.reader", "read_only");
        home.publish_probe_as("test.writer", "side_effecting");
        home.publish_probe_as("test.admin", "privileged");
        home
    })
}

fn config(engine: BackendKind) -> LocaraConfig {
    LocaraConfig::new(home().path())
        .with_engine(engine)
        .with_grants(Grants::new().with_max_safety_tier(SafetyTier::Privileged))
}

fn sleep(tool: &str, ms: u64) -> RunRequest {
    RunRequest::new(tool, json!({"op": "sleep", "ms": ms})).with_receipt()
}

fn receipt_key() -> SigningKey {
    generate_keypair("host").unwrap()
}

/// The receipt of a response, checked against `key`.
fn receipt(response: &locara_facade::RunResponse, key: &SigningKey) -> Receipt {
    let signed = response.receipt.as_ref().expect("a receipt was asked for");
    let trust = TrustStore::new().with_key(key.public_key().clone());
    signed.verify(&trust).expect("the receipt verifies");
    serde_json::from_value(signed.receipt.clone()).expect("a receipt body")
}

/// `[start, end]` of a call in milliseconds since the epoch, from its signed receipt.
fn interval(receipt: &Receipt) -> (f64, f64) {
    let start = receipt.started_at_unix_ms as f64;
    (start, start + receipt.duration_ms)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_calls_of_a_batch_overlap_and_the_others_run_alone_in_order() {
    for engine in BackendKind::ALL {
        let key = receipt_key();
        let locara = Locara::new(&config(engine).with_receipt_key(key.clone())).unwrap();
        // Warm the compiled-module cache, so that the batch measures running, not compiling.
        for tool in ["test.reader", "test.writer"] {
            assert!(locara.run(sleep(tool, 0)).await.unwrap().ok);
        }

        let calls = vec![
            sleep("test.reader", 400),
            sleep("test.reader", 400),
            sleep("test.reader", 400),
            sleep("test.reader", 400),
            sleep("test.writer", 200),
            sleep("test.writer", 200),
            sleep("test.reader", 200),
            sleep("test.reader", 200),
        ];
        let batch = locara.run_batch(BatchRequest::new(calls)).await;
        assert!(batch.ok, "{batch:?}");
        let tiers: Vec<_> = batch
            .results
            .iter()
            .map(|r| r.safety_tier.as_deref().unwrap())
            .collect();
        assert_eq!(
            tiers,
            [
                "read_only",
                "read_only",
                "read_only",
                "read_only",
                "side_effecting",
                "side_effecting",
                "read_only",
                "read_only"
            ]
        );
        let spans: Vec<(f64, f64)> = batch
            .results
            .iter()
            .map(|r| interval(&receipt(r.response.as_ref().unwrap(), &key)))
            .collect();
        // Results come back in the order of the request.
        for (result, ms) in batch
            .results
            .iter()
            .zip([400, 400, 400, 400, 200, 200, 200, 200])
        {
            assert_eq!(
                result.response.as_ref().unwrap().output,
                Some(json!({"slept_ms": ms}))
            );
        }
        // The four leading reads ran together: each started before any of them ended.
        let first_end = spans[..4].iter().map(|s| s.1).fold(f64::MAX, f64::min);
        let last_start = spans[..4].iter().map(|s| s.0).fold(0.0, f64::max);
        assert!(
            last_start < first_end,
            "{engine:?}: reads did not overlap: {spans:?}"
        );
        // About the time of one: far less than the 1.6 s they would take one after another.
        let reads = spans[..4].iter().map(|s| s.1).fold(0.0, f64::max) - spans[0].0;
        assert!(
            reads < 1200.0,
            "{engine:?}: four 400 ms reads took {reads} ms"
        );
        // Each write started after everything before it ended, and ended before anything
        // after it started (1 ms of slack: the start is whole milliseconds).
        for w in [4, 5] {
            let before = spans[..w].iter().map(|s| s.1).fold(0.0, f64::max);
            let after = spans[w + 1..].iter().map(|s| s.0).fold(f64::MAX, f64::min);
            assert!(
                spans[w].0 + 1.0 >= before,
                "{engine:?}: write {w} overlapped earlier calls: {spans:?}"
            );
            assert!(
                spans[w].1 <= after + 1.0,
                "{engine:?}: write {w} overlapped later calls: {spans:?}"
            );
        }
        // The two trailing reads ran together again.
        assert!(
            spans[7].0 < spans[6].1 && spans[6].0 < spans[7].1,
            "{engine:?}: {spans:?}"
        );
    }
}

/// Answers with a fixed decision and records what it was asked.
#[derive(Debug)]
struct Fixed {
    approve: bool,
    asked: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl Approver for Fixed {
    async fn approve(&self, request: &ApprovalRequest) -> ApprovalDecision {
        self.asked.lock().unwrap().push(request.tool.to_string());
        if self.approve {
            ApprovalDecision::approve("test host", "allowed by the test")
        } else {
            ApprovalDecision::deny("test host", "refused by the test")
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn privileged_calls_wait_for_approval_and_a_denial_is_a_structured_result() {
    let echo = || RunRequest::new("test.admin", json!({"op": "echo", "text": "x"}));

    // No approver: denied, as data in the batch; the read-only call still runs.
    let locara = Locara::new(&config(BackendKind::Wasmtime)).unwrap();
    let batch = locara
        .run_batch(BatchRequest::new(vec![
            echo(),
            RunRequest::new("test.reader", json!({"op": "echo", "text": "y"})),
        ]))
        .await;
    assert!(!batch.ok);
    let denied = batch.results[0].error.as_ref().expect("denied");
    assert_eq!(denied.code, "approval_denied");
    assert!(
        denied.message.contains("no approver is configured"),
        "{denied:?}"
    );
    assert!(!denied.hint.is_empty());
    assert_eq!(batch.results[0].safety_tier.as_deref(), Some("privileged"));
    assert!(batch.results[1].response.as_ref().unwrap().ok);

    // An approver that says no: the same code, its name and reason in the message.
    let no = Arc::new(Fixed {
        approve: false,
        asked: Mutex::new(Vec::new()),
    });
    let locara = Locara::new(&config(BackendKind::Wasmtime).with_approver(no.clone())).unwrap();
    let error = locara.run(echo()).await.unwrap_err();
    assert_eq!(error.code(), "approval_denied");
    assert!(
        error.to_string().contains("test host: refused by the test"),
        "{error}"
    );
    assert_eq!(*no.asked.lock().unwrap(), ["test.admin@0.1.0"]);

    // An approver that says yes: the call runs, and the decision is in the response and in
    // its signed receipt.
    let key = receipt_key();
    let yes = Arc::new(Fixed {
        approve: true,
        asked: Mutex::new(Vec::new()),
    });
    let locara = Locara::new(
        &config(BackendKind::Wasmtime)
            .with_approver(yes.clone())
            .with_receipt_key(key.clone()),
    )
    .unwrap();
    let response = locara.run(echo().with_receipt()).await.unwrap();
    assert!(response.ok, "{:?}", response.error);
    let approval = response.approval.clone().expect("approval recorded");
    assert!(approval.approved);
    assert_eq!(approval.by, "test host");
    assert_eq!(receipt(&response, &key).approval, Some(approval));
    // Read-only calls are never put to the approver.
    locara
        .run(RunRequest::new(
            "test.reader",
            json!({"op": "echo", "text": "z"}),
        ))
        .await
        .unwrap();
    assert_eq!(*yes.asked.lock().unwrap(), ["test.admin@0.1.0"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receipt_pins_the_signed_tool_the_input_and_the_output() {
    let key = receipt_key();
    let locara = Locara::new(&config(BackendKind::Wasmtime).with_receipt_key(key.clone())).unwrap();
    let arguments = json!({"text": "One. Two. Three.", "max_chars": 6});
    let response = locara
        .run(RunRequest::new("text.chunk", arguments.clone()).with_receipt())
        .await
        .unwrap();
    assert!(response.ok);
    let body = receipt(&response, &key);
    assert_eq!(body.format, "locara.receipt/1");
    assert_eq!(body.tool, "text.chunk@0.1.0");
    // The input hash does not depend on key order or spacing.
    let reordered: Value =
        serde_json::from_str(r#"{ "max_chars": 6, "text": "One. Two. Three." }"#).unwrap();
    assert_eq!(body.input_sha256, receipt_digest(&reordered));
    assert_eq!(
        body.output_sha256,
        Some(receipt_digest(response.output.as_ref().unwrap()))
    );
    let manifest = std::fs::read(
        home()
            .registry_dir()
            .join("tools/text.chunk/0.1.0/manifest.json"),
    )
    .unwrap();
    assert_eq!(body.manifest_sha256, Digest::of(&manifest).to_hex());
    assert_eq!(
        body.artifact_sha256,
        locara.describe("text.chunk").unwrap().artifact_sha256
    );
    assert_eq!(body.publisher_key_id, home().key.key_id().to_string());
    assert_eq!(body.limits, response.stats.limits);
    assert!(body.ok && body.error_code.is_none() && body.approval.is_none());

    // Any change to what the receipt says breaks its signature.
    let trust = TrustStore::new().with_key(key.public_key().clone());
    let mut forged: SignedReceipt = response.receipt.clone().unwrap();
    forged.receipt["output_sha256"] = json!(receipt_digest(&json!({"chunks": []})));
    assert!(forged.verify(&trust).is_err());

    // A failed call has a receipt too, with its error code and no output.
    let failed = locara
        .run(RunRequest::new("test.reader", json!({"op": "exit", "code": 3})).with_receipt())
        .await
        .unwrap();
    assert!(!failed.ok);
    let body = receipt(&failed, &key);
    assert_eq!(body.error_code.as_deref(), Some("tool_error"));
    assert_eq!(body.output_sha256, None);

    // Without a receipt key, asking for a receipt is refused before the call runs.
    let keyless = Locara::new(&config(BackendKind::Wasmtime)).unwrap();
    let error = keyless
        .run(RunRequest::new("text.chunk", arguments).with_receipt())
        .await
        .unwrap_err();
    assert_eq!(error.code(), "receipt_unavailable");
}
