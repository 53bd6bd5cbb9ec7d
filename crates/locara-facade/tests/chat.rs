//! The LLM tool loop (`Locara::chat`) against a scripted model: an `HttpClient` that answers
//! each request with the next answer of a script, streamed as server-sent events in small
//! pieces as a server would, and keeps every request. The tools are real: signed wasm tools
//! from a test home and in-process tools. (The loop against a real model served by llama.cpp,
//! and over real sockets, is in `tests/all/chat.rs`.)

use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use locara_facade::{
    ApprovalDecision, ApprovalRequest, Approver, ChatEvent, ChatModel, ChatRequest, ChatResponse,
    Grants, HandlerError, HostTool, HttpClient, HttpRequest, HttpResponse, Locara, LocaraConfig,
    SafetyTier, StopReason, ToolFormat, ToolHandler,
};
use locara_manifest::LimitsSpec;
use locara_test_artifacts::TestHome;
use serde_json::{Value, json};

/// One answer of the script.
#[derive(Debug, Clone)]
enum Answer {
    /// Server-sent events, each `data` a JSON object (Anthropic's named by their `type`).
    Events(Vec<Value>),
    /// An error status with a JSON body.
    Status(u16, Value),
    /// Another answer, after a pause.
    Late(Duration, Box<Answer>),
}

/// A request the model got: URL, headers and JSON body.
#[derive(Debug, Clone)]
struct Seen {
    url: String,
    headers: Vec<(String, String)>,
    body: Value,
}

/// The scripted model.
#[derive(Debug)]
struct Script {
    format: ToolFormat,
    answers: Mutex<VecDeque<Answer>>,
    seen: Mutex<Vec<Seen>>,
}

impl Script {
    fn new(format: ToolFormat, answers: Vec<Answer>) -> Arc<Script> {
        Arc::new(Script {
            format,
            answers: Mutex::new(answers.into()),
            seen: Mutex::default(),
        })
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl HttpClient for Script {
    async fn send(&self, request: HttpRequest, max_bytes: usize) -> Result<HttpResponse, String> {
        self.send_streaming(request, max_bytes, &mut |_| {}).await
    }

    async fn send_streaming(
        &self,
        request: HttpRequest,
        _max_bytes: usize,
        on_data: &mut (dyn for<'b> FnMut(&'b [u8]) + Send),
    ) -> Result<HttpResponse, String> {
        self.seen.lock().unwrap().push(Seen {
            url: request.url.to_string(),
            headers: request.headers.clone(),
            body: serde_json::from_slice(&request.body).unwrap(),
        });
        let mut answer = self
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .ok_or("the script has no more answers")?;
        while let Answer::Late(pause, next) = answer {
            tokio::time::sleep(pause).await;
            answer = *next;
        }
        match answer {
            Answer::Events(events) => {
                let mut stream = String::new();
                for data in events {
                    if self.format == ToolFormat::Anthropic {
                        stream.push_str(&format!("event: {}\n", data["type"].as_str().unwrap()));
                    }
                    stream.push_str(&format!("data: {data}\n\n"));
                }
                if self.format == ToolFormat::OpenAi {
                    stream.push_str("data: [DONE]\n\n");
                }
                // In small pieces, cutting lines and characters, as a network may.
                for piece in stream.as_bytes().chunks(7) {
                    on_data(piece);
                }
                let headers = vec![("content-type".to_owned(), "text/event-stream".to_owned())];
                Ok(HttpResponse::new(200, headers, stream.into_bytes(), false))
            }
            Answer::Status(status, body) => {
                let body = body.to_string().into_bytes();
                on_data(&body);
                let headers = vec![("content-type".to_owned(), "application/json".to_owned())];
                Ok(HttpResponse::new(status, headers, body, false))
            }
            Answer::Late(..) => unreachable!("unwrapped above"),
        }
    }
}

/// An OpenAI answer: `text`, then `calls` (id, name, arguments text), with `usage` (prompt,
/// completion).
fn openai(text: &str, calls: &[(&str, &str, &str)], usage: (u64, u64)) -> Answer {
    let chunk = |delta: Value, finish: Value| json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": null}),
        Value::Null,
    )];
    for word in text.split_inclusive(' ') {
        events.push(chunk(json!({"content": word}), Value::Null));
    }
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        events.push(chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        ));
        let (head, tail) = arguments.split_at(arguments.len() / 2);
        for piece in [head, tail] {
            events.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    events.push(chunk(json!({}), json!(finish)));
    events.push(json!({"object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": usage.0, "completion_tokens": usage.1}}));
    Answer::Events(events)
}

/// An Anthropic answer: `text`, then `calls` (id, name, input JSON text).
fn anthropic(text: &str, calls: &[(&str, &str, &str)], usage: (u64, u64)) -> Answer {
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": "msg", "type": "message",
        "role": "assistant", "content": [], "usage": {"input_tokens": usage.0, "output_tokens": 1}}}),
    ];
    let mut index = 0;
    if !text.is_empty() {
        events.push(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}));
        events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}));
        events.push(json!({"type": "content_block_stop", "index": 0}));
        index = 1;
    }
    for (id, name, input) in calls {
        events.push(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}));
        events.push(json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "input_json_delta", "partial_json": input}}));
        events.push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    let stop = if calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": usage.1}}));
    events.push(json!({"type": "message_stop"}));
    Answer::Events(events)
}

/// Counts the calls in flight; sleeps `ms` when asked; fails when asked.
#[derive(Debug, Default)]
struct Probe {
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    /// What was in flight when each side-effecting call started.
    log: Mutex<Vec<String>>,
}

#[derive(Debug)]
struct ProbeTool {
    probe: Arc<Probe>,
    name: &'static str,
}

#[async_trait::async_trait]
impl ToolHandler for ProbeTool {
    async fn call(
        &self,
        arguments: Value,
        _context: &locara_facade::CallContext,
    ) -> Result<Value, HandlerError> {
        let now = self.probe.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.probe.most_in_flight.fetch_max(now, Ordering::SeqCst);
        self.probe
            .log
            .lock()
            .unwrap()
            .push(format!("{} starts with {now} in flight", self.name));
        let ms = arguments["ms"].as_u64().unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        self.probe.in_flight.fetch_sub(1, Ordering::SeqCst);
        if arguments["fail"] == json!(true) {
            return Err(HandlerError::new(
                "the archive is offline (error E-4711)",
                "try again later",
            ));
        }
        Ok(json!({"slept_ms": ms}))
    }
}

fn probe_tool(id: &str, tier: SafetyTier, probe: &Arc<Probe>, name: &'static str) -> HostTool {
    let manifest = HostTool::manifest_template(id.parse().unwrap(), "1.0.0".parse().unwrap())
        .with_display_name(name)
        .with_description("Sleeps, then says how long (runs in the host process).")
        .with_safety_tier(tier)
        .with_limits(
            serde_json::from_value::<LimitsSpec>(
                json!({"wall_time_ms": 10000, "output_bytes": 10000}),
            )
            .unwrap(),
        )
        .with_input_schema(json!({
            "type": "object",
            "properties": {"ms": {"type": "integer", "minimum": 0}, "fail": {"type": "boolean"}},
            "additionalProperties": false
        }))
        .with_output_schema(json!({"type": "object"}));
    HostTool::new(
        manifest,
        Arc::new(ProbeTool {
            probe: Arc::clone(probe),
            name,
        }),
    )
    .unwrap()
}

/// Says no to every privileged call.
#[derive(Debug)]
struct No;

#[async_trait::async_trait]
impl Approver for No {
    async fn approve(&self, request: &ApprovalRequest) -> ApprovalDecision {
        ApprovalDecision::deny(
            "test",
            format!("{} is not allowed in this test", request.tool),
        )
    }
}

fn locara(home: &TestHome, script: &Arc<Script>, probe: &Arc<Probe>) -> Locara {
    Locara::new(
        &LocaraConfig::new(home.path())
            .with_http_client(script.clone())
            .with_grants(Grants::new().with_max_safety_tier(SafetyTier::Privileged))
            .with_host_tool(probe_tool(
                "probe.read",
                SafetyTier::ReadOnly,
                probe,
                "read",
            ))
            .with_host_tool(probe_tool(
                "probe.write",
                SafetyTier::SideEffecting,
                probe,
                "write",
            ))
            .with_host_tool(probe_tool(
                "probe.admin",
                SafetyTier::Privileged,
                probe,
                "admin",
            ))
            .with_approver(Arc::new(No)),
    )
    .unwrap()
}

fn model(format: ToolFormat) -> ChatModel {
    ChatModel::new(format, "http://model.test/v1", "scripted").with_api_key("sk-test")
}

/// The chat's events, as lines.
#[derive(Debug, Default)]
struct Events(Mutex<Vec<String>>);

impl Events {
    fn sink(&self) -> impl Fn(ChatEvent<'_>) + Send + Sync + '_ {
        move |event| {
            let line = match event {
                ChatEvent::Step { step } => format!("step {step}"),
                ChatEvent::Text { text, .. } => format!("text {text}"),
                ChatEvent::ToolCall { call, .. } => format!("call {} ok={}", call.name, call.ok),
                _ => "other".to_owned(),
            };
            self.0.lock().unwrap().push(line);
        }
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

fn codes(response: &ChatResponse, step: usize) -> Vec<String> {
    response.steps[step]
        .calls
        .iter()
        .map(|c| match (&c.response, &c.error) {
            (Some(r), _) if r.ok => "ok".to_owned(),
            (Some(r), _) => r.error.as_ref().unwrap().code.clone(),
            (None, Some(e)) => e.code.clone(),
            (None, None) => "?".to_owned(),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_failing_calls_are_answered_and_the_model_goes_on() {
    let home = TestHome::new();
    let probe = Arc::default();
    let script = Script::new(
        ToolFormat::OpenAi,
        vec![
            openai(
                "Let me split it.",
                &[
                    (
                        "c1",
                        "text_chunk",
                        r#"{"text": "One. Two.", "max_chars": 5}"#,
                    ),
                    ("c2", "text_chonk", r#"{"text": "x"}"#),
                    ("c3", "text_chunk", r#"{"text": "unterminated"#),
                    ("c4", "text_chunk", r#"{"text": 7}"#),
                    ("c5", "probe_read", r#"{"fail": true}"#),
                ],
                (300, 40),
            ),
            openai("Two chunks: One. and Two.", &[], (420, 9)),
        ],
    );
    let locara = locara(&home, &script, &probe);
    let events = Events::default();
    let response = locara
        .chat_with(
            ChatRequest::new("Split 'One. Two.' into chunks of 5 characters.")
                .with_model(model(ToolFormat::OpenAi))
                .with_tools(["text.chunk", "probe.r*"])
                .with_system("Use the tools."),
            &events.sink(),
        )
        .await
        .unwrap();
    assert_eq!(response.stop_reason, StopReason::FinalAnswer);
    assert_eq!(
        response.answer.as_deref(),
        Some("Two chunks: One. and Two.")
    );
    assert_eq!(
        codes(&response, 0),
        [
            "ok",
            "not_found",
            "invalid_tool_call",
            "invalid_input",
            "tool_error"
        ]
    );
    let calls = &response.steps[0].calls;
    assert_eq!(
        calls[0].response.as_ref().unwrap().output.as_ref().unwrap()["chunks"][0]["text"],
        "One. "
    );
    assert_eq!(calls[0].tool.as_deref(), Some("text.chunk"));
    assert_eq!(calls[0].safety_tier.as_deref(), Some("read_only"));
    let unknown = calls[1].error.as_ref().unwrap();
    assert_eq!(
        unknown.message,
        "tool call `c2`: no tool named `text_chonk`"
    );
    assert!(
        unknown.hint.contains("did you mean `text_chunk`?"),
        "{unknown:?}"
    );
    assert!(
        calls[2]
            .error
            .as_ref()
            .unwrap()
            .message
            .contains("`arguments` is not valid JSON"),
        "{:?}",
        calls[2].error
    );
    assert_eq!(calls[2].arguments, json!(r#"{"text": "unterminated"#));
    assert_eq!(
        calls[3].error.as_ref().unwrap().violations[0].pointer,
        "/text"
    );
    assert!(calls[4].result.contains("E-4711"), "{}", calls[4].result);

    // What the model was sent: the tools offered, then its own turn and an answer per call.
    let seen = script.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].url, "http://model.test/v1/chat/completions");
    assert!(
        seen[0]
            .headers
            .contains(&("authorization".to_owned(), "Bearer sk-test".to_owned()))
    );
    let offered: Vec<&str> = seen[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["probe_read", "text_chunk"]);
    assert_eq!(
        seen[0].body["messages"][0],
        json!({"role": "system", "content": "Use the tools."})
    );
    let second = seen[1].body["messages"].as_array().unwrap();
    assert_eq!(
        second.len(),
        1 + 1 + 1 + 5,
        "system, user, assistant, five results"
    );
    assert_eq!(second[2]["tool_calls"].as_array().unwrap().len(), 5);
    for (message, call) in second[3..].iter().zip(calls) {
        assert_eq!(message["role"], "tool");
        assert_eq!(message["tool_call_id"], call.call_id.as_str());
        assert_eq!(message["content"], call.result.as_str());
    }
    let report: Value = serde_json::from_str(second[4]["content"].as_str().unwrap()).unwrap();
    assert_eq!(report["error"]["code"], "not_found");
    // The transcript is the same conversation, without the system prompt.
    assert_eq!(response.messages.len(), second.len());
    assert_eq!(response.system.as_deref(), Some("Use the tools."));
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (720, 49)
    );

    // Text arrived in pieces, before the calls; each call was reported once.
    let lines = events.lines();
    assert_eq!(lines[0], "step 1");
    assert_eq!(&lines[1..4], ["text Let ", "text me ", "text split "]);
    assert_eq!(lines.iter().filter(|l| l.starts_with("call ")).count(), 5);
    assert_eq!(lines.iter().filter(|l| *l == "step 2").count(), 1);

    // The transcript serializes and reads back.
    let text = serde_json::to_string(&response).unwrap();
    let back: ChatResponse = serde_json::from_str(&text).unwrap();
    assert_eq!(back, response);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_calls_overlap_others_run_alone_and_privileged_ones_ask() {
    let home = TestHome::new();
    let probe: Arc<Probe> = Arc::default();
    let script = Script::new(
        ToolFormat::OpenAi,
        vec![
            openai(
                "",
                &[
                    ("a", "probe_read", r#"{"ms": 300}"#),
                    ("b", "probe_read", r#"{"ms": 300}"#),
                    ("c", "probe_write", r#"{"ms": 50}"#),
                    ("d", "probe_read", r#"{"ms": 10}"#),
                    ("e", "probe_admin", r#"{}"#),
                ],
                (10, 10),
            ),
            openai("Done.", &[], (10, 10)),
        ],
    );
    let locara = locara(&home, &script, &probe);
    let response = locara
        .chat(
            ChatRequest::new("go")
                .with_model(model(ToolFormat::OpenAi))
                .with_tools(["probe.*"]),
        )
        .await
        .unwrap();
    assert_eq!(response.stop_reason, StopReason::FinalAnswer);
    assert_eq!(
        codes(&response, 0),
        ["ok", "ok", "ok", "ok", "approval_denied"]
    );
    let calls = &response.steps[0].calls;
    // a and b overlapped; c started after both ended, and d after c.
    let end = |i: usize| calls[i].started_ms + calls[i].elapsed_ms;
    assert!(
        calls[1].started_ms < end(0) && calls[0].started_ms < end(1),
        "{calls:#?}"
    );
    assert!(
        calls[2].started_ms >= end(0).max(end(1)) - 1.0,
        "{calls:#?}"
    );
    assert!(calls[3].started_ms >= end(2) - 1.0, "{calls:#?}");
    assert_eq!(probe.most_in_flight.load(Ordering::SeqCst), 2);
    let log = probe.log.lock().unwrap().clone();
    assert!(
        log.contains(&"write starts with 1 in flight".to_owned()),
        "{log:?}"
    );
    let denied = calls[4].error.as_ref().unwrap();
    assert!(
        denied.message.contains("not allowed in this test"),
        "{denied:?}"
    );
    assert!(calls[4].result.contains("approval_denied"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budgets_stop_the_chat_and_say_which() {
    let home = TestHome::new();
    let probe: Arc<Probe> = Arc::default();
    let call = |id: &'static str| [(id, "probe_read", r#"{"ms": 1}"#)];

    // max_steps: the model keeps calling; its last calls are answered, not run.
    let script = Script::new(
        ToolFormat::OpenAi,
        vec![
            openai("", &call("s1"), (10, 5)),
            openai("", &call("s2"), (10, 5)),
            openai("", &call("s3"), (10, 5)),
        ],
    );
    let steps = locara(&home, &script, &probe)
        .chat(
            ChatRequest::new("go")
                .with_model(model(ToolFormat::OpenAi))
                .with_tools(["probe.read"])
                .with_max_steps(2),
        )
        .await
        .unwrap();
    assert_eq!(steps.stop_reason, StopReason::MaxSteps);
    assert_eq!(steps.steps.len(), 2);
    assert_eq!(codes(&steps, 0), ["ok"]);
    assert_eq!(codes(&steps, 1), ["not_run"]);
    assert_eq!(steps.error.as_ref().unwrap().code, "max_steps");
    assert_eq!(steps.messages.last().unwrap()["tool_call_id"], "s2");
    assert_eq!(script.seen().len(), 2);

    // Tokens: each answer is capped at what is left; a spent budget stops the chat.
    let script = Script::new(
        ToolFormat::OpenAi,
        vec![
            openai("", &call("t1"), (100, 30)),
            openai("", &call("t2"), (140, 20)),
        ],
    );
    let tokens = locara(&home, &script, &probe)
        .chat(
            ChatRequest::new("go")
                .with_model(model(ToolFormat::OpenAi))
                .with_tools(["probe.read"])
                .with_max_tokens(150),
        )
        .await
        .unwrap();
    assert_eq!(tokens.stop_reason, StopReason::TokenBudget);
    assert_eq!(codes(&tokens, 1), ["not_run"]);
    let seen = script.seen();
    assert_eq!(seen[0].body["max_tokens"], 150);
    assert_eq!(seen[1].body["max_tokens"], 20);
    assert_eq!(tokens.usage.total(), 290);

    // Time, while the model thinks: the request is dropped.
    let script = Script::new(
        ToolFormat::OpenAi,
        vec![Answer::Late(
            Duration::from_secs(5),
            Box::new(openai("late", &[], (1, 1))),
        )],
    );
    let started = Instant::now();
    let time = locara(&home, &script, &probe)
        .chat(
            ChatRequest::new("go")
                .with_model(model(ToolFormat::OpenAi))
                .with_timeout(Duration::from_millis(300)),
        )
        .await
        .unwrap();
    assert_eq!(time.stop_reason, StopReason::TimeBudget);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(time.steps.is_empty());

    // Time, while a tool runs: the call is cancelled and answered so.
    let script = Script::new(
        ToolFormat::OpenAi,
        vec![openai(
            "",
            &[("slow", "probe_read", r#"{"ms": 5000}"#)],
            (1, 1),
        )],
    );
    let started = Instant::now();
    let cut = locara(&home, &script, &probe)
        .chat(
            ChatRequest::new("go")
                .with_model(model(ToolFormat::OpenAi))
                .with_tools(["probe.read"])
                .with_timeout(Duration::from_millis(500)),
        )
        .await
        .unwrap();
    assert_eq!(cut.stop_reason, StopReason::TimeBudget);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(codes(&cut, 0), ["cancelled"]);
    assert_eq!(cut.messages.last().unwrap()["tool_call_id"], "slow");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_format_round_trips() {
    let home = TestHome::new();
    let probe: Arc<Probe> = Arc::default();
    let script = Script::new(
        ToolFormat::Anthropic,
        vec![
            anthropic(
                "Splitting.",
                &[
                    (
                        "toolu_1",
                        "text_chunk",
                        r#"{"text": "One. Two.", "max_chars": 5}"#,
                    ),
                    ("toolu_2", "text_chunk", r#"{"max_chars": 5}"#),
                ],
                (200, 30),
            ),
            anthropic("Two chunks.", &[], (300, 5)),
        ],
    );
    let response = locara(&home, &script, &probe)
        .chat(
            ChatRequest::new("Split it.")
                .with_model(model(ToolFormat::Anthropic))
                .with_tools(["text.chunk"])
                .with_system("Be brief.")
                .with_temperature(0.0),
        )
        .await
        .unwrap();
    assert_eq!(response.stop_reason, StopReason::FinalAnswer);
    assert_eq!(response.answer.as_deref(), Some("Two chunks."));
    assert_eq!(codes(&response, 0), ["ok", "invalid_input"]);
    let seen = script.seen();
    assert_eq!(seen[0].url, "http://model.test/v1/messages");
    for header in [
        ("x-api-key", "sk-test"),
        ("anthropic-version", "2023-06-01"),
    ] {
        assert!(
            seen[0]
                .headers
                .contains(&(header.0.to_owned(), header.1.to_owned())),
            "{:?}",
            seen[0].headers
        );
    }
    assert_eq!(seen[0].body["system"], "Be brief.");
    assert_eq!(seen[0].body["tools"][0]["name"], "text_chunk");
    assert!(seen[0].body["tools"][0]["input_schema"].is_object());
    let messages = seen[1].body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(
        messages[1]["content"][1]["input"],
        json!({"text": "One. Two.", "max_chars": 5})
    );
    let results = messages[2]["content"].as_array().unwrap();
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(
        results
            .iter()
            .map(|r| (
                r["tool_use_id"].as_str().unwrap(),
                r["is_error"].as_bool().unwrap()
            ))
            .collect::<Vec<_>>(),
        [("toolu_1", false), ("toolu_2", true)]
    );
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .contains("invalid_input")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_errors_end_the_chat_with_a_report_and_keep_the_transcript() {
    let home = TestHome::new();
    let probe: Arc<Probe> = Arc::default();
    let script = Script::new(
        ToolFormat::OpenAi,
        vec![Answer::Status(
            401,
            json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}),
        )],
    );
    let refused = locara(&home, &script, &probe)
        .chat(ChatRequest::new("hi").with_model(model(ToolFormat::OpenAi)))
        .await
        .unwrap();
    assert_eq!(refused.stop_reason, StopReason::ModelError);
    let error = refused.error.unwrap();
    assert_eq!(
        error.message,
        "the model at http://model.test/v1/chat/completions answered 401: Incorrect API key provided"
    );
    assert!(error.hint.contains("LOCARA_LLM_API_KEY"), "{error:?}");

    let script = Script::new(
        ToolFormat::OpenAi,
        vec![
            openai("", &[("c1", "probe_read", "{}")], (5, 5)),
            Answer::Status(500, json!({"error": "out of memory"})),
        ],
    );
    let broken = locara(&home, &script, &probe)
        .chat(
            ChatRequest::new("hi")
                .with_model(model(ToolFormat::OpenAi))
                .with_tools(["probe.read"]),
        )
        .await
        .unwrap();
    assert_eq!(broken.stop_reason, StopReason::ModelError);
    assert_eq!(broken.steps.len(), 1);
    assert_eq!(codes(&broken, 0), ["ok"]);
    assert!(
        broken
            .error
            .unwrap()
            .message
            .ends_with("answered 500: out of memory")
    );

    // A server that fails in the middle of its stream says so in an event.
    let script = Script::new(
        ToolFormat::OpenAi,
        vec![Answer::Events(vec![json!({"error": {"code": 500,
            "message": "The model produced output that does not match the expected peg-native format"}})])],
    );
    let failed = locara(&home, &script, &probe)
        .chat(ChatRequest::new("hi").with_model(model(ToolFormat::OpenAi)))
        .await
        .unwrap();
    assert_eq!(failed.stop_reason, StopReason::ModelError);
    let error = failed.error.unwrap();
    assert_eq!(
        error.message,
        "the model at http://model.test/v1/chat/completions failed while answering: The model \
         produced output that does not match the expected peg-native format"
    );
    assert!(error.hint.contains("offer fewer tools"), "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_that_cannot_start_says_why_before_sending_anything() {
    let home = TestHome::new();
    let probe: Arc<Probe> = Arc::default();
    let script = Script::new(ToolFormat::OpenAi, vec![]);
    let locara = locara(&home, &script, &probe);
    let no_model = locara.chat(ChatRequest::new("hi")).await.unwrap_err();
    assert_eq!(no_model.code(), "no_model");
    assert!(no_model.hint().contains("--llm URL"));
    let nothing = locara
        .chat(
            ChatRequest::new("hi")
                .with_model(model(ToolFormat::OpenAi))
                .with_tools(["nothing.*"]),
        )
        .await
        .unwrap_err();
    assert_eq!(nothing.code(), "not_found");
    assert!(
        nothing
            .to_string()
            .starts_with("no callable tool matches `nothing.*`; the callable tools are: ")
    );
    let zero = locara
        .chat(
            ChatRequest::new("hi")
                .with_model(model(ToolFormat::OpenAi))
                .with_max_steps(0),
        )
        .await
        .unwrap_err();
    assert_eq!(zero.code(), "invalid_request");
    let receipts = locara
        .chat(
            ChatRequest::new("hi")
                .with_model(model(ToolFormat::OpenAi))
                .with_receipts(),
        )
        .await
        .unwrap_err();
    assert_eq!(receipts.code(), "receipt_unavailable");
    assert!(script.seen().is_empty());
}
