//! The options, requests and errors the language packages pass through, on a real home.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use locara_test_artifacts::TestHome;
use serde_json::{Value, json};

use crate::Sdk;

fn open(home: &TestHome, options: Value) -> Result<Sdk, Value> {
    let mut options = options;
    options["home"] = home.path().to_str().expect("utf-8 path").into();
    Sdk::open(options, None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_runs_through_the_facade_and_defaults_to_the_apps_workspace() {
    let home = TestHome::new();
    let workspace = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        workspace.path().join("notes.md"),
        "beaver dams\nand otters\n",
    )
    .expect("file");
    let sdk = open(&home, json!({"workspace": workspace.path()})).expect("opens");
    let list = sdk.list();
    let ids: Vec<&str> = list
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert!(ids.contains(&"text.chunk"), "{ids:?}");
    let response = sdk
        .run(json!({"tool": "text.chunk", "arguments": {"text": "One. Two. Three.", "max_chars": 6}}))
        .await
        .expect("runs");
    assert_eq!(response["ok"], true, "{response}");
    assert_eq!(response["output"]["count"], 3, "{response}");
    let found = sdk
        .run(json!({"tool": "filesystem.search", "arguments": {"query": "otters"}}))
        .await
        .expect("runs");
    assert_eq!(found["ok"], true, "{found}");
    assert!(found["output"].to_string().contains("notes.md"), "{found}");
}

#[test]
fn bad_options_are_reports_that_say_what_to_do() {
    let home = TestHome::new();
    let cases = [
        (
            json!({"engine": "v8"}),
            "invalid_request",
            "unknown engine `v8`",
        ),
        (
            json!({"homedir": "/x"}),
            "invalid_request",
            "unknown field `homedir`",
        ),
        (
            json!({"workspace": "/no/such/dir"}),
            "invalid_request",
            "is not a directory",
        ),
        (
            json!({"app": "/no/such/locara.json"}),
            "invalid_app",
            "cannot read",
        ),
    ];
    for (options, code, message) in cases {
        let report = open(&home, options.clone()).expect_err("refused");
        assert_eq!(report["code"], code, "{options}: {report}");
        assert!(
            report["message"].as_str().unwrap_or("").contains(message),
            "{options}: {report}"
        );
        assert!(
            !report["hint"].as_str().unwrap_or("").is_empty(),
            "{report}"
        );
    }
    let empty = tempfile::tempdir().expect("temp dir");
    let report = Sdk::open(json!({"home": empty.path()}), None).expect_err("no tools");
    assert_eq!(report["code"], "no_tools", "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_keep_the_facades_report_and_a_bad_request_is_named() {
    let home = TestHome::new();
    let sdk = open(&home, json!({})).expect("opens");
    let report = sdk
        .run(json!({"tool": "text.chunk", "arguments": {"text": 7}}))
        .await
        .expect_err("invalid input");
    assert_eq!(report["code"], "invalid_input", "{report}");
    assert_eq!(report["violations"][0]["pointer"], "/text", "{report}");
    let report = sdk
        .run(json!({"tool": "text.chunk", "args": {}}))
        .await
        .expect_err("bad");
    assert_eq!(report["code"], "invalid_request", "{report}");
    assert!(
        report["message"].as_str().unwrap_or("").contains("args"),
        "{report}"
    );
    let report = sdk.describe("no.such-tool").expect_err("unknown");
    assert_eq!(report["code"], "not_found", "{report}");
    let report = crate::chat_request(json!({"prompt": "hi", "messages": []})).expect_err("both");
    assert_eq!(report["code"], "invalid_request", "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bindings_approver_decides_privileged_calls() {
    let home = TestHome::new();
    home.publish_probe_as("test.admin", "privileged");
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    let sdk = Sdk::open(
        json!({"home": home.path()}),
        Some(Arc::new(move |question: Value| {
            counter.fetch_add(1, Ordering::SeqCst);
            question["arguments"]["text"] == "yes please"
        })),
    )
    .expect("opens");
    let call =
        |echo: &str| json!({"tool": "test.admin", "arguments": {"op": "echo", "text": echo}});
    let response = sdk.run(call("yes please")).await.expect("approved");
    assert_eq!(response["ok"], true, "{response}");
    assert_eq!(response["approval"]["by"], "the app", "{response}");
    let report = sdk.run(call("no")).await.expect_err("denied");
    assert_eq!(report["code"], "approval_denied", "{report}");
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    // Without an approver, privileged calls are refused; with approve_all they run.
    let report = open(&home, json!({}))
        .expect("opens")
        .run(call("x"))
        .await
        .expect_err("no");
    assert_eq!(report["code"], "approval_denied", "{report}");
    let sdk = open(&home, json!({"approve_all": true})).expect("opens");
    assert_eq!(sdk.run(call("x")).await.expect("runs")["ok"], true);
}
