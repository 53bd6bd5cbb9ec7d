//! Chains as a small orchestration language: named steps, `for_each` over a split PDF's parts,
//! `when` conditions, the `steps.N` form, concurrency of read-only items (measured), the chain's
//! limits, and every error naming its step, pointer and hint.

use std::time::{Duration, Instant};

use base64::Engine as _;
use locara_facade::{ChainRequest, Grants, Locara, LocaraConfig, SafetyTier};
use locara_test_artifacts::TestHome;
use serde_json::{Value, json};

use crate::media_support::libtasn1_pdf;

fn host(home: &TestHome) -> Locara {
    let config = LocaraConfig::new(home.path())
        .with_grants(Grants::new().with_max_safety_tier(SafetyTier::SideEffecting));
    Locara::new(&config).unwrap()
}

fn chain(value: Value) -> ChainRequest {
    serde_json::from_value(value).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_steps_split_a_pdf_extract_each_part_and_branch() {
    let home = TestHome::new();
    let locara = host(&home);
    let pdf =
        base64::engine::general_purpose::STANDARD.encode(std::fs::read(libtasn1_pdf()).unwrap());
    let response = locara
        .run_chain(chain(json!({"steps": [
            {"id": "pages", "tool": "pdf.split",
             "arguments": {"source": {"base64": pdf}, "ranges": ["1", "2", "3"]}},
            {"id": "texts", "tool": "pdf.extract-text", "for_each": {"$ref": "pages.files"}, "as": "part",
             "arguments": {"source": {"$ref": "part"}}},
            {"id": "long", "tool": "text.chunk",
             "when": {"gt": [{"$ref": "pages.output.page_count"}, 10]},
             "arguments": {"text": {"$ref": "texts.output.0.pages.0.text"}, "max_chars": 100}},
            {"tool": "text.chunk",
             "when": {"and": [{"exists": "long"}, {"ne": [{"$ref": "pages.output.page_count"}, 36]}]},
             "arguments": {"text": "never"}},
            {"tool": "text.chunk", "when": {"not": {"exists": "steps.3.output"}},
             "arguments": {"text": {"$ref": "steps.1.output.2.pages.0.text"}, "max_chars": 100}},
        ]})))
        .await;
    assert!(response.ok, "{:?}", response.error);
    let trace: Vec<(usize, bool, usize)> = response
        .trace
        .iter()
        .map(|t| (t.step, t.skipped, t.calls.len()))
        .collect();
    assert_eq!(
        trace,
        [
            (0, false, 1),
            (1, false, 3),
            (2, false, 1),
            (3, true, 0),
            (4, false, 1)
        ]
    );
    // Each part's text is what pdf.extract-text reads from the same page of the whole PDF.
    let whole = locara
        .run(locara_facade::RunRequest::new(
            "pdf.extract-text",
            json!({"source": {"base64": pdf}, "pages": "1-3"}),
        ))
        .await
        .unwrap();
    let pages = &whole.output.as_ref().unwrap()["pages"];
    for (item, call) in response.trace[1].calls.iter().enumerate() {
        let part = response.steps[*call].output.as_ref().unwrap();
        assert_eq!(part["page_count"], 1);
        assert_eq!(part["pages"][0]["text"], pages[item]["text"], "part {item}");
    }
    // The `steps.N` form reaches an item's output by index.
    let last = response.steps.last().unwrap().output.as_ref().unwrap();
    let rejoined: String = last["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["text"].as_str().unwrap())
        .collect();
    assert_eq!(rejoined, pages[2]["text"].as_str().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_items_run_concurrently_and_others_one_after_another() {
    let home = TestHome::new();
    home.publish_probe_as("test.nap", "read_only");
    home.publish_probe_as("test.busy", "side_effecting");
    let locara = host(&home);
    let naps = |tool: &str| {
        chain(json!({"steps": [{
            "tool": tool, "for_each": [1, 2, 3, 4],
            "arguments": {"op": "sleep", "ms": 400},
        }]}))
    };
    // Compile both once, outside the measurement.
    for tool in ["test.nap", "test.busy"] {
        let warm = locara
            .run_chain(chain(
                json!({"steps": [{"tool": tool, "arguments": {"op": "echo"}}]}),
            ))
            .await;
        assert!(warm.ok, "{:?}", warm.error);
    }
    let started = Instant::now();
    let concurrent = locara.run_chain(naps("test.nap")).await;
    let concurrent_time = started.elapsed();
    let started = Instant::now();
    let sequential = locara.run_chain(naps("test.busy")).await;
    let sequential_time = started.elapsed();
    assert!(concurrent.ok && sequential.ok);
    assert_eq!(concurrent.steps.len(), 4);
    eprintln!("4 × 400 ms: read-only {concurrent_time:?}, side-effecting {sequential_time:?}");
    assert!(
        sequential_time >= Duration::from_millis(1600),
        "{sequential_time:?}"
    );
    assert!(
        concurrent_time < Duration::from_millis(1200),
        "read-only items did not overlap: {concurrent_time:?}"
    );
}

/// The chain fails at `step` with `code`, a violation at `pointer` and a hint.
fn refused(
    response: &locara_facade::ChainResponse,
    step: usize,
    code: &str,
    pointer: &str,
) -> String {
    assert!(!response.ok);
    assert_eq!(response.failed_step, Some(step), "{response:?}");
    let error = response
        .error
        .as_ref()
        .unwrap_or_else(|| panic!("{response:?}"));
    assert_eq!(error.code, code, "{error:?}");
    assert!(!error.hint.is_empty(), "{error:?}");
    if !pointer.is_empty() {
        assert_eq!(error.violations[0].pointer, pointer, "{error:?}");
    }
    error.message.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_chain_error_names_its_step_pointer_and_hint() {
    let home = TestHome::new();
    home.publish_probe_as("test.nap", "read_only");
    let locara = host(&home);
    let first = json!({"id": "first", "tool": "text.chunk", "arguments": {"text": "One. Two.", "max_chars": 5}});
    let run = |steps: Value| locara.run_chain(chain(json!({ "steps": steps })));

    let message = refused(
        &run(json!([first, {"tool": "text.chunk", "arguments": {"text": {"$ref": "frist.output.chunks"}}}])).await,
        1, "invalid_binding", "/text",
    );
    assert!(
        message.contains("names no earlier step") && message.contains("`first`"),
        "{message}"
    );

    let message = refused(
        &run(json!([first, {"tool": "text.chunk", "for_each": {"$ref": "first.output.count"}, "arguments": {"text": "x"}}])).await,
        1, "invalid_binding", "/for_each",
    );
    assert!(
        message.contains("must be an array, not a number"),
        "{message}"
    );

    let message = refused(
        &run(json!([first, {"tool": "text.chunk", "when": {"lt": [{"$ref": "first.output.count"}, "x"]}, "arguments": {"text": "x"}}])).await,
        1, "invalid_condition", "/when/lt",
    );
    assert!(message.contains("two numbers or two strings"), "{message}");

    refused(
        &run(json!([first, {"tool": "text.chunk", "when": {"and": [true, {"maybe": 1}]}, "arguments": {"text": "x"}}])).await,
        1, "invalid_condition", "/when/and/1/maybe",
    );

    let message = refused(
        &run(json!([first, {"id": "first", "tool": "text.chunk", "arguments": {"text": "x"}}]))
            .await,
        1,
        "invalid_chain",
        "/id",
    );
    assert!(message.contains("already step 0's"), "{message}");

    refused(
        &run(json!([{"tool": "text.chunk", "for_each": ["a"], "as": "steps", "arguments": {"text": "x"}}])).await,
        0, "invalid_chain", "/as",
    );

    // An item that cannot run names itself; the items before it ran.
    let response = run(json!([{"tool": "text.chunk", "for_each": ["fine", 5], "arguments": {"text": {"$ref": "item"}}}])).await;
    let message = refused(&response, 0, "invalid_input", "/text");
    assert!(message.starts_with("item 1: "), "{message}");

    // The chain's limits: calls, and wall time (the running calls are cancelled).
    let response = locara
        .run_chain(chain(json!({"steps": [first, {"tool": "text.chunk", "for_each": [1, 2, 3], "arguments": {"text": "x"}}]})).with_max_calls(3))
        .await;
    refused(&response, 1, "limit_exceeded", "");
    assert_eq!(
        response.error.as_ref().unwrap().limit.as_deref(),
        Some("chain_calls")
    );
    assert_eq!(response.steps.len(), 1, "nothing of the refused step ran");

    let started = Instant::now();
    let response = locara
        .run_chain(
            chain(
                json!({"steps": [{"tool": "test.nap", "arguments": {"op": "sleep", "ms": 1500}}]}),
            )
            .with_wall_time_ms(300),
        )
        .await;
    refused(&response, 0, "limit_exceeded", "");
    assert_eq!(
        response.error.as_ref().unwrap().limit.as_deref(),
        Some("chain_wall_time")
    );
    assert!(
        started.elapsed() < Duration::from_millis(1400),
        "{:?}",
        started.elapsed()
    );
}
