//! Unit tests: each layer on its own, with `tower_test` mocks.

use std::sync::{Arc, Mutex};

use serde_json::json;
use tower::{Layer, ServiceExt, service_fn};

use crate::{
    ExecError, ParsedCall, ToolCall, ValidateIdLayer,
    cap_output::{cap_value, size, surely_fits},
};

/// An inner service that records what reaches it and answers with a marker error.
fn recorder() -> (
    Arc<Mutex<Vec<ParsedCall>>>,
    impl tower::Service<
        ParsedCall,
        Response = crate::ToolResult,
        Error = ExecError,
        Future = crate::CallFuture,
    > + Clone
    + Send
    + 'static,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let service = service_fn(move |call: ParsedCall| {
        log.lock().unwrap().push(call);
        // A pipeline layer's inner service returns the pipeline's boxed future.
        let future: crate::CallFuture = Box::pin(async {
            Err::<crate::ToolResult, _>(ExecError::Cancelled(
                "reached the inner service".to_owned(),
            ))
        });
        future
    });
    (seen, service)
}

#[tokio::test]
async fn validate_id_parses_and_forwards() {
    let (seen, inner) = recorder();
    let error = ValidateIdLayer::new()
        .layer(inner)
        .oneshot(ToolCall::new(" text.chunk@0.1.0 ", json!({"text": "x"})))
        .await;
    assert!(matches!(error, Err(ExecError::Cancelled(_))), "{error:?}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].tool.to_string(), "text.chunk@0.1.0");
    assert_eq!(seen[0].arguments, json!({"text": "x"}));
}

#[tokio::test]
async fn validate_id_refuses_without_calling_inner() {
    let (seen, inner) = recorder();
    let error = ValidateIdLayer::new()
        .layer(inner)
        .oneshot(ToolCall::new("Text Chunk", json!({})))
        .await
        .unwrap_err();
    assert!(matches!(error, ExecError::InvalidToolRef { .. }), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("invalid tool reference `Text Chunk`: "),
        "{error}"
    );
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn small_output_is_untouched() {
    let mut value = json!({"a": "short", "n": [1, 2, 3]});
    assert_eq!(cap_value(&mut value, 1000), None);
    assert_eq!(value, json!({"a": "short", "n": [1, 2, 3]}));
}

/// The cap's shortcut never lets through an output it should have cut: its bound is at
/// least the compact JSON's length, for the values whose JSON is longest for their size
/// (control characters escaped as `\u00XX`, the longest numbers, literals, empty containers).
#[test]
fn the_cap_bound_is_never_below_the_size() {
    let control: String = (0u8..0x20).map(char::from).collect();
    let values = [
        json!(null),
        json!(false),
        json!(-1.234_567_890_123_456_7e-308),
        json!(i64::MIN),
        json!(u64::MAX),
        json!(control),
        json!({ control.clone(): [control.clone(), -0.0, 1e300, null, true] }),
        json!([[], {}, [[]], {"": {}}]),
        json!({"chunks": [{"index": 0, "text": "A \"quoted\" line\n", "start": 0, "end": 18}], "count": 1}),
    ];
    for value in values {
        let exact = size(&value);
        assert!(!surely_fits(&value, exact - 1), "{value}: {exact} bytes");
        let mut capped = value.clone();
        assert_eq!(cap_value(&mut capped, exact), None, "{value}");
        assert_eq!(capped, value);
    }
    assert!(surely_fits(&json!({"a": "short", "n": [1, 2, 3]}), 1000));
}

#[test]
fn long_strings_are_cut_and_short_ones_kept() {
    let mut value =
        json!({"id": "keep-me", "body": "é".repeat(10_000), "list": ["x".repeat(5_000), "tiny"]});
    let truncation = cap_value(&mut value, 2_000).expect("cut");
    assert!(truncation.returned_bytes <= 2_000, "{truncation:?}");
    assert_eq!(truncation.original_bytes, serde_json::to_vec(&json!({"id": "keep-me", "body": "é".repeat(10_000), "list": ["x".repeat(5_000), "tiny"]})).unwrap().len());
    assert_eq!(value["id"], "keep-me");
    assert_eq!(value["list"][1], "tiny");
    let body = value["body"].as_str().unwrap();
    assert!(
        body.starts_with("éé") && body.contains("…[truncated by locara: kept "),
        "{body}"
    );
}

#[test]
fn output_without_long_strings_is_replaced_by_a_prefix() {
    let mut value = json!((0..2_000).collect::<Vec<_>>());
    let truncation = cap_value(&mut value, 500).expect("cut");
    assert_eq!(value["truncated"], true);
    assert!(value["json_prefix"].as_str().unwrap().starts_with("[0,1,2"));
    assert!(truncation.returned_bytes <= 500);
}
