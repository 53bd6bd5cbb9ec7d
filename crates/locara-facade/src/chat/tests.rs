//! Unit tests of the chat wire formats: server-sent events, OpenAI and Anthropic answers
//! (streamed and whole), request bodies, error statuses, and tool globs.

use serde_json::{Value, json};

use super::{
    ChatModel, TokenUsage, anthropic, glob, openai,
    sse::{Decoder, Event},
    wire::{self, Params, Turn},
};
use crate::ToolFormat;

/// The events of `pieces` fed one after another.
fn events(pieces: &[&str]) -> Vec<Event> {
    let mut decoder = Decoder::default();
    let mut out = Vec::new();
    for piece in pieces {
        decoder.feed(piece.as_bytes(), &mut |e| out.push(e));
    }
    decoder.finish(&mut |e| out.push(e));
    out
}

fn event(name: &str, data: &str) -> Event {
    Event {
        name: name.to_owned(),
        data: data.to_owned(),
    }
}

#[test]
fn events_are_read_across_pieces_and_line_endings() {
    assert_eq!(
        events(&[
            ": keep-alive\r\n\r\nevent: ping\r\ndata: {\"a\"",
            ": 1}\r\n\r\ndata: one\ndata: two\n\ndata:[DONE]\n\n",
            "data: no blank line at the end",
        ]),
        vec![
            event("ping", "{\"a\": 1}"),
            event("", "one\ntwo"),
            event("", "[DONE]"),
            event("", "no blank line at the end"),
        ]
    );
    // An event name with no data is no event; a name does not leak into the next event.
    assert_eq!(
        events(&["event: lonely\n\ndata: x\n\n"]),
        vec![event("", "x")]
    );
}

/// Reads a streamed answer of `format` made of `data` events (each with its `event:` name for
/// Anthropic), and the text handed over on the way.
fn stream(format: ToolFormat, datas: &[Value]) -> (Result<Turn, wire::Failure>, Vec<String>) {
    let mut stream: Box<dyn wire::Stream> = match format {
        ToolFormat::OpenAi => Box::<openai::Stream>::default(),
        ToolFormat::Anthropic => Box::<anthropic::Stream>::default(),
    };
    let mut texts = Vec::new();
    for data in datas {
        let name = data["type"].as_str().unwrap_or("").to_owned();
        stream.event(
            &Event {
                name,
                data: data.to_string(),
            },
            &mut |t| texts.push(t.to_owned()),
        );
    }
    if format == ToolFormat::OpenAi {
        stream.event(&event("", "[DONE]"), &mut |t| texts.push(t.to_owned()));
    }
    (stream.finish(), texts)
}

/// A turn as plain JSON, to compare at once: text, calls (id, name, arguments or the error),
/// message, usage, finish reason.
fn summary(turn: &Turn) -> Value {
    json!({
        "text": turn.text,
        "calls": turn.calls.iter().map(|c| json!({
            "id": c.raw.call_id,
            "name": c.raw.name,
            "arguments": c.arguments,
            "parsed": c.raw.arguments.as_ref().map_or_else(|e| json!({"error": e}), Clone::clone),
        })).collect::<Vec<_>>(),
        "message": turn.message,
        "usage": turn.usage.map(|u| json!([u.input_tokens, u.output_tokens])),
        "finish_reason": turn.finish_reason,
    })
}

#[test]
fn an_openai_stream_gives_text_calls_and_usage() {
    let chunk =
        |delta: Value| json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
    let (turn, texts) = stream(
        ToolFormat::OpenAi,
        &[
            chunk(json!({"role": "assistant", "content": null})),
            chunk(json!({"content": "Let me "})),
            chunk(json!({"content": "look."})),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "text_chunk", "arguments": ""}}]}),
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"text\": \"a b\","}}]}),
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": " \"max_chars\": 2}"}}]}),
            ),
            chunk(
                json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "nope", "arguments": "{not json"}}]}),
            ),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 31, "total_tokens": 151}}),
        ],
    );
    assert_eq!(texts, ["Let me ", "look."]);
    assert_eq!(
        summary(&turn.unwrap()),
        json!({
            "text": "Let me look.",
            "calls": [
                {"id": "call_a", "name": "text_chunk", "arguments": {"text": "a b", "max_chars": 2},
                 "parsed": {"text": "a b", "max_chars": 2}},
                {"id": "call_b", "name": "nope", "arguments": "{not json",
                 "parsed": {"error": "`arguments` is not valid JSON: key must be a string at line 1 column 2"}},
            ],
            "message": {
                "role": "assistant",
                "content": "Let me look.",
                "tool_calls": [
                    {"id": "call_a", "type": "function", "function": {"name": "text_chunk", "arguments": "{\"text\": \"a b\", \"max_chars\": 2}"}},
                    {"id": "call_b", "type": "function", "function": {"name": "nope", "arguments": "{not json"}},
                ],
            },
            "usage": [120, 31],
            "finish_reason": "tool_calls",
        })
    );
}

#[test]
fn an_openai_answer_without_calls_and_broken_streams() {
    let (turn, _) = stream(
        ToolFormat::OpenAi,
        &[
            json!({"choices": [{"index": 0, "delta": {"content": "Done."}, "finish_reason": "stop"}]}),
        ],
    );
    let turn = turn.unwrap();
    assert_eq!(
        (turn.message, turn.usage, turn.calls.len()),
        (json!({"role": "assistant", "content": "Done."}), None, 0)
    );
    // A call without an id gets one, so that its answer can name it.
    let (turn, _) = stream(
        ToolFormat::OpenAi,
        &[
            json!({"choices": [{"delta": {"tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}}]}),
        ],
    );
    assert_eq!(turn.unwrap().calls[0].raw.call_id, "call_0");
    let (error, _) = stream(
        ToolFormat::OpenAi,
        &[json!({"error": {"message": "context length exceeded"}})],
    );
    assert_eq!(
        error.unwrap_err().to_string(),
        "the server reported an error: context length exceeded"
    );
    let (empty, _) = stream(ToolFormat::OpenAi, &[]);
    assert_eq!(
        empty.unwrap_err().to_string(),
        "the answer holds no `data:` event"
    );
}

#[test]
fn an_anthropic_stream_gives_text_calls_and_usage() {
    let (turn, texts) = stream(
        ToolFormat::Anthropic,
        &[
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 200, "cache_read_input_tokens": 50, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Checking"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "."}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "text_chunk", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"text\": "}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"a\"}"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_2", "name": "filesystem_list", "input": {}}}),
            json!({"type": "content_block_stop", "index": 2}),
            json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "toolu_3", "name": "text_chunk", "input": {}}}),
            json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "[1]"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 42}}),
            json!({"type": "message_stop"}),
        ],
    );
    assert_eq!(texts, ["Checking", "."]);
    assert_eq!(
        summary(&turn.unwrap()),
        json!({
            "text": "Checking.",
            "calls": [
                {"id": "toolu_1", "name": "text_chunk", "arguments": {"text": "a"}, "parsed": {"text": "a"}},
                {"id": "toolu_2", "name": "filesystem_list", "arguments": {}, "parsed": {}},
                {"id": "toolu_3", "name": "text_chunk", "arguments": "[1]",
                 "parsed": {"error": "`arguments` is an array, not a JSON object"}},
            ],
            "message": {"role": "assistant", "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "text_chunk", "input": {"text": "a"}},
                {"type": "tool_use", "id": "toolu_2", "name": "filesystem_list", "input": {}},
                // The conversation needs an object; the call's error tells the model.
                {"type": "tool_use", "id": "toolu_3", "name": "text_chunk", "input": {}},
            ]},
            "usage": [250, 42],
            "finish_reason": "tool_use",
        })
    );
    let (error, _) = stream(
        ToolFormat::Anthropic,
        &[
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ],
    );
    assert_eq!(
        error.unwrap_err().to_string(),
        "the server reported an error: Overloaded"
    );
}

#[test]
fn whole_answers_are_read_too() {
    let openai = openai::from_json(&json!({
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
    }))
    .unwrap();
    assert_eq!(
        summary(&openai),
        json!({
            "text": "",
            "calls": [{"id": "c1", "name": "f", "arguments": {"x": 1}, "parsed": {"x": 1}}],
            "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
            "usage": [10, 5],
            "finish_reason": "tool_calls",
        })
    );
    let anthropic = anthropic::from_json(&json!({
        "type": "message", "role": "assistant", "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "Hi."}],
        "usage": {"input_tokens": 7, "output_tokens": 2},
    }))
    .unwrap();
    assert_eq!(
        (anthropic.text.as_str(), anthropic.usage),
        (
            "Hi.",
            Some(TokenUsage {
                input_tokens: 7,
                output_tokens: 2
            })
        )
    );
    assert_eq!(
        openai::from_json(&json!({"object": "list"}))
            .unwrap_err()
            .to_string(),
        "it has no `choices[0].message`"
    );
}

#[test]
fn request_bodies_follow_each_format() {
    let openai_model = ChatModel::new(ToolFormat::OpenAi, "http://h/v1", "m").with_api_key("k");
    let messages = [json!({"role": "user", "content": "hi"})];
    let tools = [json!({"type": "function", "function": {"name": "f"}})];
    let params = Params {
        model: &openai_model,
        system: Some("be brief"),
        messages: &messages,
        tools: &tools,
        max_tokens: 100,
        temperature: Some(0.0),
        seed: Some(7),
    };
    assert_eq!(
        openai::body(&params),
        json!({
            "model": "m",
            "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
            "max_tokens": 100,
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": tools,
            "parallel_tool_calls": true,
            "temperature": 0.0,
            "seed": 7,
        })
    );
    assert_eq!(
        openai::headers(&openai_model),
        [("authorization".to_owned(), "Bearer k".to_owned())]
    );
    let anthropic_model = ChatModel::new(
        ToolFormat::Anthropic,
        "https://api.anthropic.com/v1/",
        "claude",
    )
    .with_api_key("k");
    let params = Params {
        model: &anthropic_model,
        tools: &[],
        ..params
    };
    assert_eq!(
        anthropic::body(&params),
        json!({
            "model": "claude",
            "max_tokens": 100,
            "messages": messages,
            "stream": true,
            "system": "be brief",
            "temperature": 0.0,
        })
    );
    assert_eq!(
        anthropic::headers(&anthropic_model),
        [
            ("anthropic-version".to_owned(), "2023-06-01".to_owned()),
            ("x-api-key".to_owned(), "k".to_owned())
        ]
    );
    assert_eq!(
        wire::url(&anthropic_model).unwrap().as_str(),
        "https://api.anthropic.com/v1/messages"
    );
    assert_eq!(
        wire::url(&openai_model).unwrap().as_str(),
        "http://h/v1/chat/completions"
    );
    let ftp = ChatModel::new(ToolFormat::OpenAi, "ftp://h/v1", "m");
    assert_eq!(
        wire::url(&ftp).unwrap_err().to_string(),
        "the model URL `ftp://h/v1` is not an http or https URL"
    );
    // The key never shows in debug output.
    assert!(!format!("{openai_model:?}").contains("\"k\""));
}

#[test]
fn tool_globs() {
    for (pattern, id, matches) in [
        ("*", "text.chunk", true),
        ("text.*", "text.chunk", true),
        ("text.*", "textual.chunk", false),
        ("filesystem.*", "filesystem.read", true),
        ("text.chunk", "text.chunk", true),
        ("text.chunk", "text.chunker", false),
        ("*.read", "filesystem.read", true),
        ("f*s*.re?d", "filesystem.read", true),
        ("?", "ab", false),
        ("", "a", false),
    ] {
        assert_eq!(glob(pattern, id), matches, "{pattern} {id}");
    }
}
