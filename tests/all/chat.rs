//! The LLM tool loop (`Locara::chat`) end to end, over real sockets through the app's HTTP
//! client: against a real language model, Qwen2.5-Coder-0.5B-Instruct served by llama.cpp's
//! server on loopback (`.ci/test-deps` installs both; the chat template that makes this small
//! model's tool calls readable is `tests/llm/qwen2.5-coder-tools.jinja`), in both API formats;
//! and, for read-only calls of one turn running at the same time, against a server on loopback
//! that replays the streamed shape of llama.cpp's answers, since the small model never makes
//! two calls in one turn.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use locara_facade::{
    ChatEvent, ChatModel, ChatRequest, ChatResponse, FsGrant, Grants, HandlerError, HostTool,
    Locara, LocaraConfig, SafetyTier, StopReason, ToolFormat, ToolHandler,
};
use locara_manifest::LimitsSpec;
use locara_test_artifacts::TestHome;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The real model, in `format`.
fn qwen(format: ToolFormat) -> ChatModel {
    ChatModel::new(
        format,
        locara_test_artifacts::llm::qwen_tools(),
        "qwen2.5-coder-0.5b-instruct",
    )
}

/// A question for the real model, at temperature 0 with a fixed seed.
fn ask(prompt: &str, format: ToolFormat) -> ChatRequest {
    ChatRequest::new(prompt)
        .with_model(qwen(format))
        .with_temperature(0.0)
        .with_seed(7)
        .with_max_output_tokens(200)
        .with_timeout(Duration::from_secs(300))
}

/// How the archive answers.
#[derive(Debug, Clone, Copy)]
enum Mode {
    /// Only by catalogue number: any other item is an error that names the number.
    Catalogue,
    /// Every call fails: the archive is busy.
    Busy,
    /// Every call answers, after a pause.
    Slow(Duration),
}

/// Counts the calls, and the calls in flight.
#[derive(Debug, Default)]
struct Counter {
    calls: AtomicUsize,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
}

/// `archive.lookup`, an in-process tool: where an item is shelved.
#[derive(Debug)]
struct Archive {
    counter: Arc<Counter>,
    mode: Mode,
}

#[async_trait::async_trait]
impl ToolHandler for Archive {
    async fn call(
        &self,
        arguments: Value,
        _context: &locara_facade::CallContext,
    ) -> Result<Value, HandlerError> {
        self.counter.calls.fetch_add(1, Ordering::SeqCst);
        let now = self.counter.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.counter.most_in_flight.fetch_max(now, Ordering::SeqCst);
        if let Mode::Slow(pause) = self.mode {
            tokio::time::sleep(pause).await;
        }
        self.counter.in_flight.fetch_sub(1, Ordering::SeqCst);
        let item = arguments["item"].as_str().unwrap_or_default();
        match self.mode {
            Mode::Busy => Err(HandlerError::new(
                "the archive is busy (error E-4711)",
                "call archive_lookup again with the same item",
            )),
            Mode::Catalogue if item != "BC-17" => Err(HandlerError::new(
                format!("the archive files items by catalogue number: {item:?} is BC-17"),
                "call archive_lookup again with item \"BC-17\"",
            )),
            _ => Ok(json!({"item": item, "shelf": format!("shelf {}", item.len())})),
        }
    }
}

fn archive(counter: &Arc<Counter>, mode: Mode) -> HostTool {
    let manifest = HostTool::manifest_template(
        "archive.lookup".parse().unwrap(),
        "1.0.0".parse().unwrap(),
    )
    .with_display_name("Archive lookup")
    .with_description(
        "Looks an item up in the archive by its catalogue number and says on which shelf it is.",
    )
    .with_safety_tier(SafetyTier::ReadOnly)
    .with_limits(
        serde_json::from_value::<LimitsSpec>(json!({"wall_time_ms": 10000, "output_bytes": 10000}))
            .unwrap(),
    )
    .with_input_schema(json!({
        "type": "object",
        "required": ["item"],
        "properties": {"item": {"type": "string", "description": "The item's catalogue number."}},
        "additionalProperties": false
    }))
    .with_output_schema(json!({"type": "object"}));
    HostTool::new(
        manifest,
        Arc::new(Archive {
            counter: Arc::clone(counter),
            mode,
        }),
    )
    .unwrap()
}

/// A workspace with a file that holds a fact the model cannot know.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gates.txt"),
        "The access code for the north gate is 7319-KESTREL. The south gate has no code.\n",
    )
    .unwrap();
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/sample/field-notes.md"
        ),
        dir.path().join("field-notes.md"),
    )
    .unwrap();
    dir
}

fn locara(home: &TestHome, workspace: Option<&std::path::Path>, tools: Vec<HostTool>) -> Locara {
    let mut grants = Grants::new();
    if let Some(dir) = workspace {
        grants = grants.with_fs(FsGrant::new(dir));
    }
    let mut config = LocaraConfig::new(home.path()).with_grants(grants);
    for tool in tools {
        config = config.with_host_tool(tool);
    }
    Locara::new(&config).unwrap()
}

/// A transcript, short, for failure messages.
fn show(response: &ChatResponse) -> String {
    serde_json::to_string_pretty(&json!({
        "stop_reason": response.stop_reason,
        "error": response.error,
        "steps": response.steps.iter().map(|s| json!({
            "text": s.text,
            "calls": s.calls.iter().map(|c| json!([c.name, c.arguments, c.result])).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_that_needs_a_tool_ends_with_an_answer_holding_its_result() {
    let home = TestHome::new();
    let dir = workspace();
    let locara = locara(&home, Some(dir.path()), Vec::new());
    for format in ToolFormat::ALL {
        let streamed = Mutex::new(String::new());
        let sink = |event: ChatEvent<'_>| {
            if let ChatEvent::Text { text, .. } = event {
                streamed.lock().unwrap().push_str(text);
            }
        };
        let response = locara
            .chat_with(
                ask(
                    "What is the access code for the north gate? Search the file contents for 'north gate'.",
                    format,
                )
                .with_tools(["filesystem.search"])
                .with_workspace(dir.path()),
                &sink,
            )
            .await
            .unwrap();
        let transcript = show(&response);
        assert_eq!(
            response.stop_reason,
            StopReason::FinalAnswer,
            "{format}: {transcript}"
        );
        // The tool found the code, and the answer (which streamed as it came) holds it.
        let call = &response.steps[0].calls[0];
        assert_eq!(
            call.tool.as_deref(),
            Some("filesystem.search"),
            "{transcript}"
        );
        assert!(
            call.ok && call.result.contains("7319-KESTREL"),
            "{transcript}"
        );
        let answer = response.answer.clone().unwrap();
        assert!(answer.contains("7319-KESTREL"), "{format}: {transcript}");
        assert!(streamed.lock().unwrap().contains(&answer), "{format}");
        assert!(response.usage.input_tokens > 0 && response.usage.output_tokens > 0);
        // The conversation is the model's own format: the result went back as it expects.
        let result_message = match format {
            ToolFormat::OpenAi => response.messages[2].clone(),
            _ => response.messages[2]["content"][0].clone(),
        };
        let sent = result_message
            .get("content")
            .and_then(Value::as_str)
            .unwrap();
        assert!(sent.contains("7319-KESTREL"), "{result_message}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_error_is_shown_to_the_model_and_the_chat_goes_on() {
    let home = TestHome::new();
    let counter: Arc<Counter> = Arc::default();
    let locara = locara(&home, None, vec![archive(&counter, Mode::Catalogue)]);
    let response = locara
        .chat(
            ask(
                "On which shelf is the item 'brass compass'? Look it up in the archive.",
                ToolFormat::OpenAi,
            )
            .with_tools(["archive.lookup"])
            .with_max_steps(4),
        )
        .await
        .unwrap();
    let transcript = show(&response);
    // The first call named the item, not its number: its error report went to the model as the
    // call's result…
    let first = &response.steps[0].calls[0];
    assert_eq!(
        first.tool.as_deref(),
        Some("archive.lookup"),
        "{transcript}"
    );
    assert!(!first.ok, "{transcript}");
    let report: Value = serde_json::from_str(&first.result).unwrap();
    assert_eq!(report["error"]["code"], "tool_error", "{transcript}");
    assert!(
        report["error"]["message"]
            .as_str()
            .unwrap()
            .contains("BC-17")
    );
    let tool_message = response
        .messages
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(tool_message["tool_call_id"], first.call_id.as_str());
    assert_eq!(tool_message["content"], first.result.as_str());
    // …and the chat went on: the model called again with the number only the error told it,
    // and answered from that call's result.
    let second = &response.steps[1].calls[0];
    assert_eq!(second.arguments, json!({"item": "BC-17"}), "{transcript}");
    assert!(second.ok, "{transcript}");
    assert_eq!(
        response.stop_reason,
        StopReason::FinalAnswer,
        "{transcript}"
    );
    assert!(response.answer.unwrap().contains("shelf 5"), "{transcript}");
    assert_eq!(counter.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_steps_stops_a_model_that_keeps_calling_tools() {
    let home = TestHome::new();
    let counter: Arc<Counter> = Arc::default();
    // Every lookup fails, and the model keeps calling.
    let locara = locara(&home, None, vec![archive(&counter, Mode::Busy)]);
    let response = locara
        .chat(
            ask(
                "On which shelf is the item 'brass compass'? Look it up in the archive.",
                ToolFormat::OpenAi,
            )
            .with_tools(["archive.lookup"])
            .with_max_steps(2),
        )
        .await
        .unwrap();
    let transcript = show(&response);
    assert_eq!(response.stop_reason, StopReason::MaxSteps, "{transcript}");
    assert_eq!(response.steps.len(), 2);
    assert!(
        response.steps.iter().all(|s| !s.calls.is_empty()),
        "{transcript}"
    );
    // The last turn's call was answered, not run: the model would not have read its result.
    let last = &response.steps[1].calls[0];
    assert_eq!(last.error.as_ref().unwrap().code, "not_run", "{transcript}");
    assert_eq!(counter.calls.load(Ordering::SeqCst), 1);
    let error = response.error.unwrap();
    assert_eq!(error.code, "max_steps");
    assert_eq!(
        error.message,
        "the model was asked 2 times (max_steps) and still called tools"
    );
}

/// A loopback server that answers each chat request with the next of `turns`, streamed as
/// llama.cpp's server streams (chunked transfer, `data:` chunk objects, a usage chunk,
/// `[DONE]`), and keeps each request's body.
struct Replay {
    port: u16,
    bodies: Arc<Mutex<Vec<Value>>>,
}

impl Replay {
    async fn start(turns: Vec<Vec<Value>>) -> Replay {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&bodies);
        tokio::spawn(async move {
            for turn in turns {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let mut request = Vec::new();
                let mut buffer = [0u8; 4096];
                let body = loop {
                    let n = stream.read(&mut buffer).await.unwrap();
                    assert!(n > 0, "the client closed before sending its request");
                    request.extend_from_slice(&buffer[..n]);
                    let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") else {
                        continue;
                    };
                    let head = String::from_utf8_lossy(&request[..end]).to_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse().unwrap());
                    if request.len() >= end + 4 + length {
                        break request[end + 4..end + 4 + length].to_vec();
                    }
                };
                seen.lock()
                    .unwrap()
                    .push(serde_json::from_slice(&body).unwrap());
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                            transfer-encoding: chunked\r\nconnection: close\r\n\r\n";
                stream.write_all(head.as_bytes()).await.unwrap();
                let events = turn
                    .iter()
                    .map(|chunk| format!("data: {chunk}\n\n"))
                    .chain(["data: [DONE]\n\n".to_owned()]);
                for event in events {
                    let chunk = format!("{:x}\r\n{event}\r\n", event.len());
                    stream.write_all(chunk.as_bytes()).await.unwrap();
                    stream.flush().await.unwrap();
                }
                stream.write_all(b"0\r\n\r\n").await.unwrap();
                let _ = stream.shutdown().await;
            }
        });
        Replay { port, bodies }
    }
}

/// A streamed chunk as llama.cpp's server writes it.
fn chunk(delta: Value, finish_reason: Value) -> Value {
    json!({
        "choices": [{"finish_reason": finish_reason, "index": 0, "delta": delta}],
        "created": 1_795_607_791,
        "id": "chatcmpl-replayed",
        "model": "qwen2.5-coder-0.5b-instruct",
        "system_fingerprint": "b0-unknown",
        "object": "chat.completion.chunk",
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_calls_of_one_turn_overlap_in_time() {
    // Two archive lookups and a text.chunk in one turn (the shape a model that makes parallel
    // calls streams, as llama.cpp writes it), then an answer.
    let call = |index: u64, id: &str, name: &str, arguments: &str| {
        let (head, tail) = arguments.split_at(arguments.len() / 2);
        vec![
            chunk(
                json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": head}}]}),
                Value::Null,
            ),
            chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": tail}}]}),
                Value::Null,
            ),
        ]
    };
    let mut first = vec![chunk(
        json!({"role": "assistant", "content": null}),
        Value::Null,
    )];
    first.extend(call(
        0,
        "call_a",
        "archive_lookup",
        r#"{"item": "brass compass"}"#,
    ));
    first.extend(call(
        1,
        "call_b",
        "archive_lookup",
        r#"{"item": "tide table"}"#,
    ));
    first.extend(call(
        2,
        "call_c",
        "text_chunk",
        r#"{"text": "One. Two.", "max_chars": 5}"#,
    ));
    first.push(chunk(json!({}), json!("tool_calls")));
    first.push(json!({"choices": [], "object": "chat.completion.chunk",
        "usage": {"completion_tokens": 48, "prompt_tokens": 310, "total_tokens": 358}}));
    let second = vec![
        chunk(json!({"role": "assistant", "content": null}), Value::Null),
        chunk(
            json!({"content": "Both are on shelf 12 and 10."}),
            Value::Null,
        ),
        chunk(json!({}), json!("stop")),
    ];
    let replay = Replay::start(vec![first, second]).await;

    let home = TestHome::new();
    let counter: Arc<Counter> = Arc::default();
    let locara = locara(
        &home,
        None,
        vec![archive(&counter, Mode::Slow(Duration::from_millis(600)))],
    );
    let model = ChatModel::new(
        ToolFormat::OpenAi,
        format!("http://127.0.0.1:{}/v1", replay.port),
        "qwen2.5-coder-0.5b-instruct",
    );
    let response = locara
        .chat(
            ChatRequest::new("Where are the brass compass and the tide table?")
                .with_model(model)
                .with_tools(["archive.lookup", "text.chunk"]),
        )
        .await
        .unwrap();
    let transcript = show(&response);
    assert_eq!(
        response.stop_reason,
        StopReason::FinalAnswer,
        "{transcript}"
    );
    let calls = &response.steps[0].calls;
    assert!(calls.iter().all(|c| c.ok), "{transcript}");
    assert!(
        calls
            .iter()
            .all(|c| c.safety_tier.as_deref() == Some("read_only"))
    );
    // The two lookups (600 ms each) ran at the same time: each started before the other ended.
    let end = |i: usize| calls[i].started_ms + calls[i].elapsed_ms;
    assert!(
        calls[1].started_ms < end(0) && calls[0].started_ms < end(1),
        "{:?}",
        calls
            .iter()
            .map(|c| (c.started_ms, c.elapsed_ms))
            .collect::<Vec<_>>()
    );
    assert_eq!(counter.most_in_flight.load(Ordering::SeqCst), 2);
    // The model got the three results, in the order of its calls.
    let bodies = replay.bodies.lock().unwrap().clone();
    let results: Vec<(&str, &str)> = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap(),
                m["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(results.len(), 3);
    assert_eq!(
        results[0],
        ("call_a", r#"{"item":"brass compass","shelf":"shelf 13"}"#)
    );
    assert_eq!(results[1].0, "call_b");
    assert!(results[2].1.contains("\"chunks\""), "{}", results[2].1);
    assert_eq!(bodies[0]["parallel_tool_calls"], true);
}
