//! Unit tests: how manifests become MCP tools and how call outcomes become tool results, over
//! a `TestHome` with every built-in tool.

use std::sync::Arc;

use expect_test::expect;
use locara_facade::{Locara, LocaraConfig};
use locara_test_artifacts::TestHome;
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{Value, json};

use crate::LocaraMcp;

fn server() -> (TestHome, LocaraMcp) {
    let home = TestHome::new();
    let locara = Locara::new(&LocaraConfig::new(home.path())).expect("locara starts");
    (home, LocaraMcp::new(Arc::new(locara)))
}

fn arguments(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => panic!("arguments are an object"),
    }
}

/// The result as the client receives it.
fn wire(result: &CallToolResult) -> Value {
    serde_json::to_value(result).unwrap()
}

/// The JSON in the result's first text block.
fn first_text_json(result: &CallToolResult) -> Value {
    let text = &result.content[0].as_text().expect("a text block").text;
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn every_tool_is_listed_once_by_id_with_tier_hints() {
    let (_home, server) = server();
    let listing: Vec<String> = server
        .tools()
        .iter()
        .map(|t| {
            let a = t.annotations.as_ref().unwrap();
            format!(
                "{} read_only={:?} destructive={:?} output_schema={}",
                t.name,
                a.read_only_hint,
                a.destructive_hint,
                t.output_schema.is_some()
            )
        })
        .collect();
    expect![[r#"
        audio.detect-silence read_only=Some(true) destructive=Some(false) output_schema=true
        audio.transcribe read_only=Some(true) destructive=Some(false) output_schema=true
        bash.read-only read_only=Some(true) destructive=Some(false) output_schema=true
        code-exec.lua read_only=Some(true) destructive=Some(false) output_schema=true
        file.edit read_only=Some(false) destructive=None output_schema=true
        filesystem.list read_only=Some(true) destructive=Some(false) output_schema=true
        filesystem.read read_only=Some(true) destructive=Some(false) output_schema=true
        filesystem.search read_only=Some(true) destructive=Some(false) output_schema=true
        filesystem.write read_only=Some(false) destructive=None output_schema=true
        image.format-convert read_only=Some(true) destructive=Some(false) output_schema=true
        image.resize read_only=Some(true) destructive=Some(false) output_schema=true
        ocr read_only=Some(true) destructive=Some(false) output_schema=true
        pdf.extract-text read_only=Some(true) destructive=Some(false) output_schema=true
        pdf.split read_only=Some(true) destructive=Some(false) output_schema=true
        test.probe read_only=Some(true) destructive=Some(false) output_schema=true
        text.chunk read_only=Some(true) destructive=Some(false) output_schema=true
        text.classify read_only=Some(true) destructive=Some(false) output_schema=true
        text.summarize read_only=Some(true) destructive=Some(false) output_schema=true
        text.translate read_only=Some(true) destructive=Some(false) output_schema=true
        web.fetch read_only=Some(true) destructive=Some(false) output_schema=true"#]]
    .assert_eq(&listing.join("\n"));
}

#[test]
fn a_tool_carries_its_manifest_schemas_and_description() {
    let (home, server) = server();
    let locara = Locara::new(&LocaraConfig::new(home.path())).unwrap();
    let description = locara.describe("text.chunk").unwrap();
    let tool = server
        .tools()
        .iter()
        .find(|t| t.name == "text.chunk")
        .unwrap();
    let wire = serde_json::to_value(tool).unwrap();
    assert_eq!(wire["inputSchema"], description.input_schema);
    assert_eq!(wire["outputSchema"], description.output_schema);
    assert_eq!(wire["description"], json!(description.summary.description));
    assert_eq!(wire["title"], json!(description.summary.display_name));
}

#[tokio::test]
async fn a_successful_call_returns_its_output_as_text_and_structured_content() {
    let (_home, server) = server();
    let result = server
        .call(
            "text.chunk",
            arguments(json!({"text": "One. Two. Three.", "max_chars": 9})),
        )
        .await
        .unwrap();
    let wire = wire(&result);
    assert_eq!(wire["isError"], json!(false), "{wire:#}");
    let output = first_text_json(&result);
    assert!(output["count"].as_u64().unwrap() >= 2, "{output:#}");
    assert_eq!(wire["structuredContent"], output);
}

#[tokio::test]
async fn invalid_arguments_are_an_error_result_with_the_pointer() {
    let (_home, server) = server();
    let result = server
        .call(
            "text.chunk",
            arguments(json!({"text": "One.", "max_chars": "x"})),
        )
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(result.structured_content.is_none());
    let report = first_text_json(&result);
    assert_eq!(report["code"], json!("invalid_input"), "{report:#}");
    assert!(
        report["violations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["pointer"] == json!("/max_chars")),
        "{report:#}"
    );
}

#[tokio::test]
async fn a_tool_that_exceeds_a_limit_is_an_error_result_naming_it() {
    let (_home, server) = server();
    let result = server
        .call(
            "code-exec.lua",
            arguments(json!({"code": "while true do end"})),
        )
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true), "{:#}", wire(&result));
    let report = first_text_json(&result);
    locara_test_artifacts::assert_an_endless_loop_names_its_limit(&report);
}

#[tokio::test]
async fn a_call_that_could_not_run_is_an_error_result_too() {
    let (_home, server) = server();
    // The probe asks for a workspace, and a host without grants gives none.
    let result = server
        .call("test.probe", arguments(json!({"op": "spin"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true), "{:#}", wire(&result));
    assert_eq!(first_text_json(&result)["code"], json!("capability_denied"));
}

#[tokio::test]
async fn only_an_unknown_tool_name_is_a_protocol_error() {
    let (_home, server) = server();
    let error = server
        .call("text.chunker", JsonObject::new())
        .await
        .unwrap_err();
    assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    // The closest name first; a catalog of more than ten is not listed whole.
    assert!(
        error
            .message
            .starts_with("unknown tool `text.chunker`; available: text.chunk, "),
        "{}",
        error.message
    );
    assert!(error.message.ends_with(" more"), "{}", error.message);
}

#[test]
fn produced_files_become_blob_resources() {
    let response: locara_facade::RunResponse = serde_json::from_value(json!({
        "tool": "pdf.split@0.1.0",
        "ok": true,
        "output": {"parts": ["part-001.pdf"]},
        "files": [{"name": "part-001.pdf", "size_bytes": 4, "sha256": "00", "base64": "JVBERg=="}],
        "stats": {"engine": "wasmtime", "elapsed_ms": 1.0, "fuel_consumed": 1, "limits": {
            "memory_bytes": 1, "wall_time_ms": 1, "fuel": 1, "output_bytes": 1, "max_fds": 1,
            "temp_bytes": 1}}
    }))
    .unwrap();
    let wire = wire(&crate::handler::call_result(Ok(response)));
    expect![[r#"
        {
          "content": [
            {
              "text": "{\"parts\":[\"part-001.pdf\"]}",
              "type": "text"
            },
            {
              "resource": {
                "blob": "JVBERg==",
                "mimeType": "application/pdf",
                "uri": "locara://files/part-001.pdf"
              },
              "type": "resource"
            }
          ],
          "isError": false,
          "resultType": "complete",
          "structuredContent": {
            "parts": [
              "part-001.pdf"
            ]
          }
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&wire).unwrap());
}

#[tokio::test]
async fn a_workspace_is_given_to_every_call() {
    let home = TestHome::new();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), "beavers").unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let config = LocaraConfig::new(home.path())
        .with_grants(locara_facade::Grants::new().with_fs(locara_facade::FsGrant::new(&root)));
    let locara = Arc::new(Locara::new(&config).unwrap());
    let list = json!({"path": "."});

    let without = LocaraMcp::new(locara.clone())
        .call("filesystem.list", arguments(list.clone()))
        .await
        .unwrap();
    assert_eq!(
        first_text_json(&without)["code"],
        json!("capability_denied")
    );

    let with = LocaraMcp::new(locara)
        .with_workspace(&root)
        .call("filesystem.list", arguments(list))
        .await
        .unwrap();
    assert_eq!(with.is_error, Some(false), "{:#}", wire(&with));
    let output = first_text_json(&with);
    assert_eq!(
        output["entries"][0]["path"],
        json!("notes.md"),
        "{output:#}"
    );
}

#[tokio::test]
async fn a_privileged_tool_without_approval_is_an_error_result() {
    let home = TestHome::new();
    home.publish_probe_as("test.admin", "privileged");
    let grants =
        locara_facade::Grants::new().with_max_safety_tier(locara_facade::SafetyTier::Privileged);
    let locara = Locara::new(&LocaraConfig::new(home.path()).with_grants(grants)).unwrap();
    let server = LocaraMcp::new(Arc::new(locara));
    let listed = server
        .tools()
        .iter()
        .find(|t| t.name == "test.admin")
        .unwrap();
    assert_eq!(
        listed.annotations.as_ref().unwrap().destructive_hint,
        Some(true)
    );
    let result = server
        .call("test.admin", arguments(json!({"op": "echo", "text": "x"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true), "{:#}", wire(&result));
    let report = first_text_json(&result);
    assert_eq!(report["code"], json!("approval_denied"), "{report:#}");
}
