//! Anthropic Messages: `tools` and a top-level `system` in the request, `tool_use` content
//! blocks in the answer (streamed as `content_block_*` events), `tool_result` blocks in the
//! next user message.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{
    ChatModel, TokenUsage,
    sse::Event,
    wire::{self, Call, Failure, Params, Turn},
};
use crate::{
    ToolFormat,
    formats::{RawCall, arguments},
};

/// The API version sent as `anthropic-version`.
const API_VERSION: &str = "2023-06-01";

/// Input token counts besides `input_tokens` (the prompt read from or written to the cache).
const CACHE_INPUTS: [&str; 2] = ["cache_creation_input_tokens", "cache_read_input_tokens"];

/// The request body.
pub(crate) fn body(params: &Params<'_>) -> Value {
    let mut body = json!({
        "model": params.model.model,
        "max_tokens": params.max_tokens,
        "messages": params.messages,
        "stream": true,
    });
    if let Some(system) = params.system {
        body["system"] = json!(system);
    }
    if !params.tools.is_empty() {
        body["tools"] = Value::Array(params.tools.to_vec());
    }
    if let Some(temperature) = params.temperature {
        body["temperature"] = json!(temperature);
    }
    body
}

/// `anthropic-version`, and `x-api-key` when there is a key.
pub(crate) fn headers(model: &ChatModel) -> Vec<(String, String)> {
    let mut headers = vec![("anthropic-version".to_owned(), API_VERSION.to_owned())];
    if let Some(key) = &model.api_key {
        headers.push(("x-api-key".to_owned(), key.clone()));
    }
    headers
}

/// A content block being streamed: how it started, and the pieces since.
#[derive(Debug, Default)]
struct Block {
    start: Value,
    text: String,
    json: String,
    thinking: String,
    signature: String,
}

/// A streamed answer: `message_start`, then `content_block_start`/`_delta`/`_stop` per block,
/// `message_delta` (the stop reason and output tokens) and `message_stop`.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    blocks: BTreeMap<u64, Block>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    stop_reason: Option<String>,
    error: Option<Failure>,
    started: bool,
}

impl Stream {
    fn usage(&mut self, usage: &Value) {
        if let Some(u) = wire::usage(usage, "input_tokens", "output_tokens", &CACHE_INPUTS) {
            if usage.get("input_tokens").is_some() {
                self.input_tokens = Some(u.input_tokens);
            }
            if usage.get("output_tokens").is_some() {
                // Cumulative: the last count is the turn's.
                self.output_tokens = Some(u.output_tokens);
            }
        }
    }
}

impl wire::Stream for Stream {
    fn event(&mut self, event: &Event, on_text: &mut dyn FnMut(&str)) {
        let Ok(data) = serde_json::from_str::<Value>(&event.data) else {
            self.error = Some(Failure::Unreadable(format!(
                "an event's data is not JSON: {}",
                event.data.chars().take(200).collect::<String>()
            )));
            return;
        };
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(&event.name);
        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                self.started = true;
                if let Some(usage) = data.get("message").and_then(|m| m.get("usage")) {
                    self.usage(usage);
                }
            }
            "content_block_start" => {
                let block = self.blocks.entry(index).or_default();
                block.start = data.get("content_block").cloned().unwrap_or(Value::Null);
                if let Some(text) = block.start.get("text").and_then(Value::as_str)
                    && !text.is_empty()
                {
                    on_text(text);
                }
            }
            "content_block_delta" => {
                let block = self.blocks.entry(index).or_default();
                let delta = data.get("delta").unwrap_or(&Value::Null);
                let piece = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or("");
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        block.text.push_str(piece("text"));
                        if !piece("text").is_empty() {
                            on_text(piece("text"));
                        }
                    }
                    Some("input_json_delta") => block.json.push_str(piece("partial_json")),
                    Some("thinking_delta") => block.thinking.push_str(piece("thinking")),
                    Some("signature_delta") => block.signature.push_str(piece("signature")),
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = data
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(usage) = data.get("usage") {
                    self.usage(usage);
                }
            }
            "error" => {
                let message = data
                    .get("error")
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                    .map_or_else(|| data.to_string(), str::to_owned);
                self.error = Some(Failure::Server(message));
            }
            // `content_block_stop`, `message_stop`, `ping`, and whatever comes later.
            _ => {}
        }
    }

    fn finish(self: Box<Self>) -> Result<Turn, Failure> {
        if let Some(error) = self.error {
            return Err(error);
        }
        if !self.started {
            return Err(Failure::Unreadable(
                "the answer holds no `message_start` event".to_owned(),
            ));
        }
        let usage =
            (self.input_tokens.is_some() || self.output_tokens.is_some()).then(|| TokenUsage {
                input_tokens: self.input_tokens.unwrap_or(0),
                output_tokens: self.output_tokens.unwrap_or(0),
            });
        let blocks = self
            .blocks
            .into_values()
            .map(|b| {
                let mut value = b.start;
                match value.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let text = value["text"].as_str().unwrap_or("").to_owned() + &b.text;
                        value["text"] = json!(text);
                    }
                    Some("tool_use") if !b.json.is_empty() => value["input"] = json!(b.json),
                    Some("thinking") => {
                        let thinking =
                            value["thinking"].as_str().unwrap_or("").to_owned() + &b.thinking;
                        let signature =
                            value["signature"].as_str().unwrap_or("").to_owned() + &b.signature;
                        value["thinking"] = json!(thinking);
                        value["signature"] = json!(signature);
                    }
                    _ => {}
                }
                value
            })
            .collect();
        Ok(turn(blocks, usage, self.stop_reason))
    }
}

/// The turn of a non-streamed answer: its `content` blocks.
pub(crate) fn from_json(value: &Value) -> Result<Turn, Failure> {
    if let Some(error) = value.get("error") {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| error.to_string(), str::to_owned);
        return Err(Failure::Server(message));
    }
    let Some(blocks) = value.get("content").and_then(Value::as_array) else {
        return Err(Failure::Unreadable("it has no `content` array".to_owned()));
    };
    let usage = value
        .get("usage")
        .and_then(|u| wire::usage(u, "input_tokens", "output_tokens", &CACHE_INPUTS));
    let stop_reason = value
        .get("stop_reason")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok(turn(blocks.clone(), usage, stop_reason))
}

/// The turn of `blocks`, where a `tool_use` block's `input` may still be the JSON text it was
/// streamed as.
fn turn(blocks: Vec<Value>, usage: Option<TokenUsage>, finish_reason: Option<String>) -> Turn {
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut content = Vec::new();
    for mut block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let piece = block["text"].as_str().unwrap_or("");
                // The API refuses empty text blocks in a conversation.
                if piece.is_empty() {
                    continue;
                }
                text.push_str(piece);
            }
            Some("tool_use") => {
                let call_id = block["id"].as_str().unwrap_or("").to_owned();
                let call_id = if call_id.is_empty() {
                    format!("toolu_{}", calls.len())
                } else {
                    call_id
                };
                let name = block["name"].as_str().unwrap_or("").to_owned();
                let given = block.get("input").cloned().unwrap_or(json!({}));
                let parsed = match &given {
                    Value::String(_) => arguments(Some(&given)),
                    Value::Object(_) => Ok(given.clone()),
                    other => Err(format!(
                        "`input` is {}, not an object",
                        crate::chain::kind(other)
                    )),
                };
                // The conversation needs an object here; what the model wrote is in the
                // transcript's call, and the error it gets says what was wrong.
                block["id"] = json!(call_id);
                block["input"] = parsed.clone().unwrap_or_else(|_| json!({}));
                calls.push(Call {
                    arguments: parsed.clone().unwrap_or(given),
                    raw: RawCall {
                        call_id,
                        format: ToolFormat::Anthropic,
                        responses_api: false,
                        name,
                        arguments: parsed,
                    },
                });
            }
            _ => {}
        }
        content.push(block);
    }
    Turn {
        text,
        calls,
        message: json!({"role": "assistant", "content": content}),
        usage,
        finish_reason,
    }
}
