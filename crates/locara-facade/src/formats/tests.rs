//! Tests of the tool-calling formats: export, parsing, name resolution, result messages, and
//! `text.chunk` run end to end from an OpenAI and an Anthropic message.

use locara_test_artifacts::TestHome;
use serde_json::{Value, json};

use super::{Names, ToolCallRequest, ToolFormat, export, parse};
use crate::{
    Error, Grants, Locara, LocaraConfig, RunResponse, ToolDescription, ToolSummary, tool_call_name,
    tool_result_message, tool_results_reply,
};

fn description(id: &str, tier: &str, schema: Value) -> ToolDescription {
    ToolDescription {
        summary: ToolSummary {
            tool: format!("{id}@0.1.0"),
            id: id.to_owned(),
            version: "0.1.0".to_owned(),
            display_name: id.to_owned(),
            description: "Does things.".to_owned(),
            safety_tier: tier.to_owned(),
            score: None,
        },
        license: "MIT".to_owned(),
        input_schema: schema,
        output_schema: json!({"type": "object"}),
        capabilities: json!({}),
        limits: json!({}),
        artifact_sha256: "0".repeat(64),
        backend: "wasm".to_owned(),
    }
}

/// The calls in `message`, resolved against a catalog of `ids`.
fn calls(ids: &[&str], message: &Value) -> Result<Vec<ToolCallRequest>, Error> {
    let names = Names::new(ids.iter().map(|id| (*id).to_owned()));
    Ok(parse(message)?
        .into_iter()
        .map(|c| names.resolve(c))
        .collect())
}

const IDS: &[&str] = &["bash.read-only", "ocr", "pdf.split", "text.chunk"];

/// `(call id, format, tool, arguments)` of each call, panicking on a call that cannot run.
fn summary(calls: &[ToolCallRequest]) -> Vec<(String, ToolFormat, String, Value)> {
    calls
        .iter()
        .map(|c| {
            let request = c.request.as_ref().unwrap_or_else(|e| panic!("{e:?}"));
            (
                c.call_id.clone(),
                c.format,
                request.tool.clone(),
                request.arguments.clone(),
            )
        })
        .collect()
}

/// The error of the single call in `message`.
fn call_error(message: &Value) -> Error {
    let calls = calls(IDS, message).unwrap();
    assert_eq!(calls.len(), 1, "{calls:?}");
    calls[0].request.clone().unwrap_err()
}

#[test]
fn formats_have_stable_names() {
    for format in ToolFormat::ALL {
        assert_eq!(format.name().parse::<ToolFormat>().unwrap(), format);
        assert_eq!(json!(format), json!(format.name()));
        assert_eq!(format.to_string(), format.name());
    }
    assert_eq!(
        "OpenAI".parse::<ToolFormat>().unwrap(),
        ToolFormat::OpenAi,
        "case is ignored"
    );
    let error = "gemini".parse::<ToolFormat>().unwrap_err();
    assert_eq!(error.code(), "invalid_format");
    assert_eq!(
        error.to_string(),
        "unknown tool format `gemini`; expected one of: openai, anthropic"
    );
}

#[test]
fn names_replace_dots_with_underscores() {
    assert_eq!(tool_call_name("text.chunk"), "text_chunk");
    assert_eq!(tool_call_name("bash.read-only"), "bash_read-only");
    assert_eq!(tool_call_name("ocr"), "ocr");
    let pattern = |n: &str| {
        (1..=64).contains(&n.len())
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    let longest = format!("{}.{}", "a".repeat(31), "b".repeat(32));
    for id in [
        "text.chunk",
        "bash.read-only",
        "code-exec.lua",
        longest.as_str(),
    ] {
        assert!(pattern(&tool_call_name(id)), "{id}");
    }
}

#[test]
fn export_in_both_formats() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"source": {"type": "object", "x-locara-blob": true}},
        "required": ["source"],
    });
    let expected_schema = json!({
        "type": "object",
        "properties": {"source": {"type": "object", "x-locara-blob": true}},
        "required": ["source"],
    });
    let tools = [
        description("pdf.split", "read_only", schema),
        description("pdf.split", "read_only", json!({"type": "object"})),
        description("bash.read-only", "privileged", json!({"type": "object"})),
    ];
    let openai = export(&tools, ToolFormat::OpenAi).unwrap();
    assert_eq!(openai.len(), 2, "one definition per id: {openai:#?}");
    assert_eq!(
        openai[0],
        json!({
            "type": "function",
            "function": {
                "name": "pdf_split",
                "description": "Does things. Safety tier: read_only.",
                "parameters": expected_schema,
            },
        })
    );
    assert_eq!(openai[1]["function"]["name"], "bash_read-only");
    assert_eq!(
        openai[1]["function"]["description"],
        "Does things. Safety tier: privileged."
    );
    let anthropic = export(&tools, ToolFormat::Anthropic).unwrap();
    assert_eq!(
        anthropic[0],
        json!({
            "name": "pdf_split",
            "description": "Does things. Safety tier: read_only.",
            "input_schema": expected_schema,
        })
    );
}

#[test]
fn export_refuses_ids_that_share_a_name() {
    let tools = [
        description("a.b", "read_only", json!({"type": "object"})),
        description("a_b", "read_only", json!({"type": "object"})),
    ];
    let error = export(&tools, ToolFormat::Anthropic).unwrap_err();
    assert_eq!(error.code(), "name_collision");
    assert_eq!(
        error.to_string(),
        "tools `a.b` and `a_b` would both be called `a_b` in anthropic"
    );
    // Resolving refuses the shared name but takes either id.
    let names = Names::new(["a.b".to_owned(), "a_b".to_owned(), "x.y".to_owned()]);
    let message = json!([
        {"type": "tool_use", "id": "t1", "name": "x_y", "input": {}},
        {"type": "tool_use", "id": "t2", "name": "a.b", "input": {}},
    ]);
    let resolved: Vec<_> = parse(&message)
        .unwrap()
        .into_iter()
        .map(|c| names.resolve(c).request.unwrap().tool)
        .collect();
    assert_eq!(resolved, ["x.y", "a.b"]);
    let names = Names::new(["a.b".to_owned(), "a.b_c".to_owned(), "a_b.c".to_owned()]);
    let shared = json!({"type": "tool_use", "id": "t3", "name": "a_b_c", "input": {}});
    let error = names
        .resolve(parse(&shared).unwrap().remove(0))
        .request
        .unwrap_err();
    assert_eq!(error.code(), "not_found");
    assert_eq!(
        error.to_string(),
        "tool call `t3`: the name `a_b_c` stands for more than one tool"
    );
}

#[test]
fn openai_messages_calls_and_items() {
    let call = |id: &str, name: &str, arguments: &str| json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}});
    let chunk = call("call_1", "text_chunk", r#"{"text": "a b", "max_chars": 2}"#);
    let split = call("call_2", "pdf_split", "");
    let expected = vec![
        (
            "call_1".to_owned(),
            ToolFormat::OpenAi,
            "text.chunk".to_owned(),
            json!({"text": "a b", "max_chars": 2}),
        ),
        (
            "call_2".to_owned(),
            ToolFormat::OpenAi,
            "pdf.split".to_owned(),
            json!({}),
        ),
    ];
    let message = json!({"role": "assistant", "content": null, "tool_calls": [chunk, split]});
    assert_eq!(summary(&calls(IDS, &message).unwrap()), expected);
    assert_eq!(
        summary(&calls(IDS, &message["tool_calls"]).unwrap()),
        expected
    );
    assert_eq!(summary(&calls(IDS, &chunk).unwrap()), expected[..1]);
    let completion =
        json!({"object": "chat.completion", "choices": [{"index": 0, "message": message}]});
    assert_eq!(summary(&calls(IDS, &completion).unwrap()), expected);
    let parsed = calls(IDS, &message).unwrap();
    assert!(parsed.iter().all(|c| !c.responses_api));
    assert_eq!(parsed[0].name, "text_chunk");
}

#[test]
fn responses_api_function_call_items() {
    let item = json!({
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_9",
        "name": "ocr",
        "arguments": "{\"image\": {\"path\": \"a.png\"}}",
        "status": "completed",
    });
    let parsed = calls(IDS, &item).unwrap();
    assert_eq!(
        summary(&parsed),
        [(
            "call_9".to_owned(),
            ToolFormat::OpenAi,
            "ocr".to_owned(),
            json!({"image": {"path": "a.png"}})
        )]
    );
    assert!(parsed[0].responses_api);
    // A response's output items: reasoning and message items are skipped.
    let output = json!([
        {"type": "reasoning", "id": "rs_1", "summary": []},
        item,
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
    ]);
    assert_eq!(summary(&calls(IDS, &output).unwrap()), summary(&parsed));
    let error = calls(
        IDS,
        &json!({"type": "function_call", "name": "ocr", "arguments": "{}"}),
    )
    .unwrap_err();
    assert_eq!(error.code(), "invalid_tool_call");
    assert_eq!(
        error.to_string(),
        "a `function_call` item has no `call_id` string"
    );
}

#[test]
fn anthropic_messages_blocks_and_content() {
    let block =
        json!({"type": "tool_use", "id": "toolu_1", "name": "text_chunk", "input": {"text": "x"}});
    let message = json!({
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "…", "signature": "s"},
            {"type": "text", "text": "Let me chunk that."},
            block,
            {"type": "tool_use", "id": "toolu_2", "name": "bash.read-only", "input": {"command": "ls"}},
        ],
    });
    let expected = vec![
        (
            "toolu_1".to_owned(),
            ToolFormat::Anthropic,
            "text.chunk".to_owned(),
            json!({"text": "x"}),
        ),
        (
            "toolu_2".to_owned(),
            ToolFormat::Anthropic,
            "bash.read-only".to_owned(),
            json!({"command": "ls"}),
        ),
    ];
    assert_eq!(summary(&calls(IDS, &message).unwrap()), expected);
    assert_eq!(summary(&calls(IDS, &message["content"]).unwrap()), expected);
    assert_eq!(summary(&calls(IDS, &block).unwrap()), expected[..1]);
    // A whole Messages response is an assistant message too.
    let mut response = message.clone();
    response["type"] = json!("message");
    response["stop_reason"] = json!("tool_use");
    assert_eq!(summary(&calls(IDS, &response).unwrap()), expected);
}

#[test]
fn bad_calls_say_which_and_what_to_do() {
    let openai = |arguments: Value| json!({"id": "call_7", "type": "function", "function": {"name": "text_chunk", "arguments": arguments}});
    let cases = [
        (
            openai(json!("{\"text\": ")),
            "tool call `call_7` (text_chunk): `arguments` is not valid JSON: EOF while parsing a value at line 1 column 9",
        ),
        (
            openai(json!(
                "{\"text\": \"a\", \"max_chars\": 5, \"text\": \"b\"}"
            )),
            "tool call `call_7` (text_chunk): `arguments` repeats the key \"text\" at /text (line 1, column 36); give each key once",
        ),
        (
            openai(json!(
                "{\"text\": \"a\", \"options\": [{\"x\": 1, \"x\": 1}]}"
            )),
            "tool call `call_7` (text_chunk): `arguments` repeats the key \"x\" at /options/0/x (line 1, column 38); give each key once",
        ),
        (
            openai(json!("[1, 2]")),
            "tool call `call_7` (text_chunk): `arguments` is an array, not a JSON object",
        ),
        (
            openai(json!(5)),
            "tool call `call_7` (text_chunk): `arguments` is a number, not a JSON object in a string",
        ),
        (
            json!({"type": "tool_use", "id": "toolu_7", "name": "text_chunk", "input": "text"}),
            "tool call `toolu_7` (text_chunk): `input` is a string, not an object",
        ),
    ];
    for (message, expected) in cases {
        let error = call_error(&message);
        assert_eq!(error.code(), "invalid_tool_call");
        assert_eq!(error.to_string(), expected);
        assert!(error.hint().contains("JSON object"), "{}", error.hint());
    }
    // An object given as is is taken.
    let calls = calls(IDS, &openai(json!({"text": "t"}))).unwrap();
    assert_eq!(
        calls[0].request.as_ref().unwrap().arguments,
        json!({"text": "t"})
    );
}

#[test]
fn unknown_names_list_close_ones() {
    let error = call_error(
        &json!({"type": "tool_use", "id": "toolu_3", "name": "text_chunker", "input": {}}),
    );
    assert_eq!(error.code(), "not_found");
    assert_eq!(
        error.to_string(),
        "tool call `toolu_3`: no tool named `text_chunker`"
    );
    assert_eq!(
        error.hint(),
        "did you mean `text_chunk`? the tools offered are: bash_read-only, ocr, pdf_split, text_chunk"
    );
    let far =
        call_error(&json!({"type": "tool_use", "id": "toolu_4", "name": "weather", "input": {}}));
    assert_eq!(
        far.hint(),
        "call one of the tools offered: bash_read-only, ocr, pdf_split, text_chunk"
    );
    // The id, with its dots, is a name too.
    let by_id = calls(
        IDS,
        &json!({"type": "tool_use", "id": "t", "name": "pdf.split", "input": {}}),
    );
    assert_eq!(
        by_id.unwrap()[0].request.as_ref().unwrap().tool,
        "pdf.split"
    );
}

#[test]
fn messages_without_calls_are_refused() {
    let cases = [
        (
            json!({"role": "assistant", "content": "Hello"}),
            "the message holds no tool call",
        ),
        (
            json!({"role": "assistant", "content": [{"type": "text", "text": "Hi"}]}),
            "the message holds no tool call",
        ),
        (
            json!({"role": "assistant", "tool_calls": []}),
            "the message holds no tool call",
        ),
        (json!([]), "the message holds no tool call"),
        (
            json!({"role": "user", "content": "run it"}),
            "the message's role is `user`; tool calls come from the `assistant`",
        ),
        (
            json!({"role": "assistant", "tool_calls": {"id": "x"}}),
            "`tool_calls` is an object, not an array",
        ),
        (json!(42), "expected a tool-call message, found a number"),
        (
            json!({"name": "text_chunk", "input": {}}),
            "an object with keys [input, name] is not a tool call",
        ),
        (json!([1]), "the array[0] is a number, not an object"),
        (
            json!({"choices": []}),
            "the response has no `choices[0].message`",
        ),
        (
            json!([
                {"type": "tool_use", "id": "toolu_1", "name": "ocr", "input": {}},
                {"id": "call_1", "type": "function", "function": {"name": "ocr", "arguments": "{}"}},
            ]),
            "the message mixes anthropic and openai tool calls (`call_1` is openai)",
        ),
        (
            json!({"type": "tool_use", "name": "ocr", "input": {}}),
            "a `tool_use` block has no `id` string",
        ),
        (
            json!({"type": "tool_use", "id": "toolu_1", "input": {}}),
            "tool call `toolu_1` has no `name` string",
        ),
        (
            json!({"type": "function", "function": {"name": "ocr", "arguments": "{}"}}),
            "a tool call has no `id` string",
        ),
    ];
    for (message, expected) in cases {
        let error = calls(IDS, &message).unwrap_err();
        assert_eq!(
            (error.code(), error.to_string().as_str()),
            ("invalid_tool_call", expected),
            "{message}"
        );
        assert!(!error.hint().is_empty());
    }
}

fn response(value: Value) -> RunResponse {
    let mut base = json!({
        "tool": "text.chunk@0.1.0",
        "ok": true,
        "stats": {
            "engine": "wasmtime",
            "elapsed_ms": 1.0,
            "fuel_consumed": 1,
            "limits": {
                "memory_bytes": 1, "wall_time_ms": 1, "fuel": 1, "output_bytes": 1,
                "max_fds": 1, "temp_bytes": 1,
            },
        },
    });
    for (key, value) in value.as_object().unwrap() {
        base[key] = value.clone();
    }
    serde_json::from_value(base).unwrap()
}

#[test]
fn result_messages_in_each_format() {
    let ok = response(json!({"output": {"count": 1}}));
    assert_eq!(
        tool_result_message(ToolFormat::OpenAi, "call_1", Ok(&ok)),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "{\"count\":1}"})
    );
    assert_eq!(
        tool_result_message(ToolFormat::Anthropic, "toolu_1", Ok(&ok)),
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"count\":1}", "is_error": false})
    );

    let failed = response(json!({
        "ok": false,
        "error": {"code": "tool_error", "message": "boom", "hint": "fix it", "exit_code": 1},
        "stderr": "boom\n",
    }));
    let message = tool_result_message(ToolFormat::Anthropic, "toolu_2", Ok(&failed));
    assert_eq!(message["is_error"], json!(true));
    let content: Value = serde_json::from_str(message["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        content,
        json!({
            "ok": false,
            "tool": "text.chunk@0.1.0",
            "error": {"code": "tool_error", "message": "boom", "hint": "fix it", "exit_code": 1},
            "stderr": "boom\n",
        })
    );

    let error = Error::new("not_found", "no tool `x`", "search the catalog");
    let message = tool_result_message(ToolFormat::OpenAi, "call_3", Err(&error));
    let content: Value = serde_json::from_str(message["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        content,
        json!({"ok": false, "error": {"code": "not_found", "message": "no tool `x`", "hint": "search the catalog"}})
    );

    let with_files = response(json!({
        "output": {"pages": 1},
        "files": [{"name": "a.pdf", "size_bytes": 3, "sha256": "ab", "base64": "YWJj"}],
    }));
    let message = tool_result_message(ToolFormat::OpenAi, "c", Ok(&with_files));
    let content: Value = serde_json::from_str(message["content"].as_str().unwrap()).unwrap();
    assert_eq!(content["output"], json!({"pages": 1}));
    assert_eq!(content["files"][0]["name"], "a.pdf");

    // A Responses API call is answered with a `function_call_output` item.
    let item =
        json!({"type": "function_call", "call_id": "call_9", "name": "ocr", "arguments": "{}"});
    let call = calls(IDS, &item).unwrap().remove(0);
    assert_eq!(
        call.result_message(Ok(&ok)),
        json!({"type": "function_call_output", "call_id": "call_9", "output": "{\"count\":1}"})
    );

    let results = vec![json!({"type": "tool_result"})];
    assert_eq!(
        tool_results_reply(ToolFormat::Anthropic, results.clone()),
        json!({"role": "user", "content": results})
    );
    assert_eq!(
        tool_results_reply(ToolFormat::OpenAi, results.clone()),
        Value::Array(results)
    );
}

/// The definition named `name` in an export.
fn definition<'a>(tools: &'a [Value], format: ToolFormat, name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| match format {
            ToolFormat::OpenAi => t["function"]["name"] == name,
            ToolFormat::Anthropic => t["name"] == name,
        })
        .unwrap_or_else(|| panic!("{name} not exported in {format}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_chunk_runs_from_both_formats() {
    let home = TestHome::new();
    let locara = Locara::new(&LocaraConfig::new(home.path()).with_grants(Grants::new()))
        .expect("locara starts");

    // Every exported name resolves back to its tool, in both formats.
    for format in ToolFormat::ALL {
        let tools = locara.export_tools(format).unwrap();
        let ids: Vec<String> = {
            let mut ids: Vec<String> = locara.list().into_iter().map(|t| t.id).collect();
            ids.dedup();
            ids
        };
        assert_eq!(tools.len(), ids.len(), "one definition per tool id");
        for (tool, id) in tools.iter().zip(&ids) {
            let (name, schema) = match format {
                ToolFormat::OpenAi => (&tool["function"]["name"], &tool["function"]["parameters"]),
                ToolFormat::Anthropic => (&tool["name"], &tool["input_schema"]),
            };
            let name = name.as_str().unwrap();
            assert_eq!(schema["type"], "object", "{name}");
            assert!(schema.get("$schema").is_none(), "{name}");
            let call = match format {
                ToolFormat::OpenAi => {
                    json!({"id": "c", "type": "function", "function": {"name": name, "arguments": "{}"}})
                }
                ToolFormat::Anthropic => {
                    json!({"type": "tool_use", "id": "c", "name": name, "input": {}})
                }
            };
            let request = locara.requests_from_tool_calls(&call).unwrap().remove(0);
            assert_eq!(&request.request.unwrap().tool, id, "{format} {name}");
        }
    }

    let openai = locara.export_tools(ToolFormat::OpenAi).unwrap();
    let chunk = definition(&openai, ToolFormat::OpenAi, "text_chunk");
    assert_eq!(chunk["function"]["parameters"]["required"], json!(["text"]));
    assert!(
        chunk["function"]["description"]
            .as_str()
            .unwrap()
            .ends_with("Safety tier: read_only."),
        "{chunk}"
    );
    let message = json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "text_chunk", "arguments": "{\"text\": \"One. Two. Three.\", \"max_chars\": 6}"}},
            {"id": "call_b", "type": "function", "function": {"name": "text_chunk", "arguments": "{\"text\": 5}"}},
        ],
    });
    let mut results = Vec::new();
    for call in locara.requests_from_tool_calls(&message).unwrap() {
        let outcome = match call.request.clone() {
            Ok(request) => locara.run(request).await,
            Err(error) => Err(error),
        };
        results.push(call.result_message(outcome.as_ref()));
    }
    let reply = tool_results_reply(ToolFormat::OpenAi, results);
    assert_eq!(reply[0]["role"], "tool");
    assert_eq!(reply[0]["tool_call_id"], "call_a");
    let output: Value = serde_json::from_str(reply[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(output["count"], json!(3), "{output}");
    assert_eq!(output["chunks"][0]["text"], "One. ");
    assert_eq!(reply[1]["tool_call_id"], "call_b");
    let refused: Value = serde_json::from_str(reply[1]["content"].as_str().unwrap()).unwrap();
    assert_eq!(refused["error"]["code"], "invalid_input", "{refused}");
    assert_eq!(refused["error"]["violations"][0]["pointer"], "/text");

    let anthropic = locara.export_tools(ToolFormat::Anthropic).unwrap();
    let chunk = definition(&anthropic, ToolFormat::Anthropic, "text_chunk");
    assert_eq!(chunk["input_schema"]["required"], json!(["text"]));
    let message = json!({
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Chunking."},
            {"type": "tool_use", "id": "toolu_a", "name": "text_chunk", "input": {"text": "Alpha beta", "max_chars": 5}},
        ],
    });
    let calls = locara.requests_from_tool_calls(&message).unwrap();
    assert_eq!(calls.len(), 1);
    let response = locara.run(calls[0].request.clone().unwrap()).await.unwrap();
    let reply = tool_results_reply(
        ToolFormat::Anthropic,
        vec![calls[0].result_message(Ok(&response))],
    );
    assert_eq!(reply["role"], "user");
    let block = &reply["content"][0];
    assert_eq!(block["type"], "tool_result");
    assert_eq!(block["tool_use_id"], "toolu_a");
    assert_eq!(block["is_error"], json!(false));
    let output: Value = serde_json::from_str(block["content"].as_str().unwrap()).unwrap();
    let texts: Vec<&str> = output["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts.concat(),
        "Alpha beta",
        "overlap 0 chunks rebuild the text"
    );
    assert!(texts.iter().all(|t| t.chars().count() <= 5), "{texts:?}");
    assert_eq!(output["count"], json!(texts.len()));
}
