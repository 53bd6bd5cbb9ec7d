//! OpenAI Chat Completions: `tools` in the request, `tool_calls` in the answer (streamed as
//! `choices[0].delta` pieces), a `role: tool` message per result.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{
    ChatModel,
    sse::Event,
    wire::{self, Call, Failure, Params, Turn},
};
use crate::{
    ToolFormat,
    formats::{RawCall, arguments},
};

/// The request body: the conversation (after the system prompt), the tools, streamed with
/// usage.
pub(crate) fn body(params: &Params<'_>) -> Value {
    let mut messages = Vec::with_capacity(params.messages.len() + 1);
    if let Some(system) = params.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    messages.extend(params.messages.iter().cloned());
    let mut body = json!({
        "model": params.model.model,
        "messages": messages,
        "max_tokens": params.max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !params.tools.is_empty() {
        body["tools"] = Value::Array(params.tools.to_vec());
        body["parallel_tool_calls"] = Value::Bool(true);
    }
    if let Some(temperature) = params.temperature {
        body["temperature"] = json!(temperature);
    }
    if let Some(seed) = params.seed {
        body["seed"] = json!(seed);
    }
    body
}

/// `Authorization: Bearer <key>`, when there is a key.
pub(crate) fn headers(model: &ChatModel) -> Vec<(String, String)> {
    model
        .api_key
        .iter()
        .map(|key| ("authorization".to_owned(), format!("Bearer {key}")))
        .collect()
}

/// A tool call being streamed.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// A streamed answer: `data: {chunk}` events, then `data: [DONE]`.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    text: String,
    /// By the `index` each piece names.
    calls: BTreeMap<u64, PartialCall>,
    finish_reason: Option<String>,
    usage: Option<super::TokenUsage>,
    error: Option<Failure>,
    chunks: usize,
}

impl Stream {
    fn chunk(&mut self, chunk: &Value, on_text: &mut dyn FnMut(&str)) {
        self.chunks += 1;
        if let Some(error) = chunk.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_owned);
            self.error = Some(Failure::Server(message));
            return;
        }
        if let Some(usage) = chunk
            .get("usage")
            .and_then(|u| wire::usage(u, "prompt_tokens", "completion_tokens", &[]))
        {
            self.usage = Some(usage);
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return;
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
        // A chunk carries a `delta`; a whole answer (some servers send one as a chunk), a
        // `message`.
        let Some(delta) = choice.get("delta").or_else(|| choice.get("message")) else {
            return;
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            self.text.push_str(text);
            on_text(text);
        }
        for (position, piece) in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let index = piece
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(position as u64);
            let call = self.calls.entry(index).or_default();
            if let Some(id) = piece.get("id").and_then(Value::as_str)
                && !id.is_empty()
            {
                id.clone_into(&mut call.id);
            }
            let function = piece.get("function");
            // A name comes whole in one piece; a server that repeats it does no harm.
            if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str)
                && call.name != name
            {
                call.name.push_str(name);
            }
            match function.and_then(|f| f.get("arguments")) {
                Some(Value::String(piece)) => call.arguments.push_str(piece),
                // A whole object, as some servers send it.
                Some(object @ Value::Object(_)) => call.arguments = object.to_string(),
                _ => {}
            }
        }
    }
}

impl wire::Stream for Stream {
    fn event(&mut self, event: &Event, on_text: &mut dyn FnMut(&str)) {
        let data = event.data.trim();
        if data == "[DONE]" || data.is_empty() {
            return;
        }
        match serde_json::from_str::<Value>(data) {
            Ok(chunk) => self.chunk(&chunk, on_text),
            Err(e) => {
                self.error = Some(Failure::Unreadable(format!(
                    "an event's data is not JSON ({e}): {}",
                    data.chars().take(200).collect::<String>()
                )));
            }
        }
    }

    fn finish(self: Box<Self>) -> Result<Turn, Failure> {
        if let Some(error) = self.error {
            return Err(error);
        }
        if self.chunks == 0 {
            return Err(Failure::Unreadable(
                "the answer holds no `data:` event".to_owned(),
            ));
        }
        let calls = self
            .calls
            .into_values()
            .enumerate()
            .map(|(n, c)| {
                let id = if c.id.is_empty() {
                    format!("call_{n}")
                } else {
                    c.id
                };
                (id, c.name, c.arguments)
            })
            .collect();
        Ok(turn(self.text, calls, self.usage, self.finish_reason))
    }
}

/// The turn of a non-streamed answer: `choices[0].message`.
pub(crate) fn from_json(value: &Value) -> Result<Turn, Failure> {
    let mut stream = Stream::default();
    if value.get("error").is_none()
        && value
            .get("choices")
            .and_then(|c| c.get(0))
            .and_then(|c| c.get("message"))
            .is_none()
    {
        return Err(Failure::Unreadable(
            "it has no `choices[0].message`".to_owned(),
        ));
    }
    stream.chunk(value, &mut |_| {});
    wire::Stream::finish(Box::new(stream))
}

/// The turn of `text` and `calls` (id, name, arguments text).
fn turn(
    text: String,
    calls: Vec<(String, String, String)>,
    usage: Option<super::TokenUsage>,
    finish_reason: Option<String>,
) -> Turn {
    let mut message = Map::new();
    message.insert("role".to_owned(), json!("assistant"));
    message.insert(
        "content".to_owned(),
        if text.is_empty() && !calls.is_empty() {
            Value::Null
        } else {
            json!(text)
        },
    );
    if !calls.is_empty() {
        let tool_calls: Vec<Value> = calls
            .iter()
            .map(|(id, name, arguments)| {
                json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
            })
            .collect();
        message.insert("tool_calls".to_owned(), Value::Array(tool_calls));
    }
    let calls = calls
        .into_iter()
        .map(|(call_id, name, text)| {
            let parsed = arguments(Some(&Value::String(text.clone())));
            Call {
                arguments: parsed.clone().unwrap_or(Value::String(text)),
                raw: RawCall {
                    call_id,
                    format: ToolFormat::OpenAi,
                    responses_api: false,
                    name,
                    arguments: parsed,
                },
            }
        })
        .collect();
    Turn {
        text,
        calls,
        message: Value::Object(message),
        usage,
        finish_reason,
    }
}
