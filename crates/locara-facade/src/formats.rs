//! The catalog as LLM tool definitions, and LLM tool calls as [`RunRequest`]s.
//!
//! Two vendor formats are spoken, [`ToolFormat::OpenAi`] (Chat Completions, and the Responses
//! API's `function_call` items on input) and [`ToolFormat::Anthropic`] (Messages):
//!
//! - [`Locara::export_tools`] turns every callable tool into a definition the vendor's API takes.
//! - [`Locara::requests_from_tool_calls`] turns the tool calls in an assistant message into one
//!   [`ToolCallRequest`] each: the call's id and a [`RunRequest`] (or why there cannot be one).
//! - [`tool_result_message`] and [`tool_results_reply`] turn what a call produced back into the
//!   message the vendor's API expects next.
//!
//! **Names.** Both APIs want function names matching `^[a-zA-Z0-9_-]{1,64}$`, and a tool id
//! may hold dots, so the name of a tool is its id with every `.` replaced by `_`
//! ([`tool_call_name`]: `text.chunk` is `text_chunk`, `bash.read-only` is `bash_read-only`).
//! Ids are at most 64 characters of `[a-z0-9_.-]`, so every name is valid. The mapping is not
//! injective (`a.b` and `a_b` are both `a_b`), so names are resolved back through the catalog,
//! never by string replacement, and a catalog where two ids share a name cannot be exported.
//! A call that names a tool by its id (`text.chunk`) is accepted too.
//!
//! **Schemas.** A tool's input schema is passed as it is, but for the top-level `$schema`
//! (metadata; both APIs read the schema as their own dialect). Locara's `x-locara-blob`
//! extension keyword is kept: vendors ignore unknown keywords in non-strict tools. Definitions
//! are not marked `strict`, whose subset of JSON Schema Locara's schemas do not keep to (it
//! rejects `default`, `minimum` and optional properties, for one).

use std::{collections::BTreeMap, fmt, str::FromStr};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::{Error, Locara, RunRequest, RunResponse, ToolDescription, chain::kind};

#[cfg(test)]
mod tests;

/// The error code of a malformed tool call or tool-call message.
const INVALID_TOOL_CALL: &str = "invalid_tool_call";

/// An LLM vendor's tool-calling format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolFormat {
    /// OpenAI: Chat Completions `tools` and `tool_calls` (and Responses API `function_call`
    /// items on input).
    OpenAi,
    /// Anthropic: Messages `tools` and `tool_use` blocks.
    Anthropic,
}

impl ToolFormat {
    /// Every format.
    pub const ALL: [ToolFormat; 2] = [ToolFormat::OpenAi, ToolFormat::Anthropic];

    /// The format's name: `openai` or `anthropic`.
    pub fn name(self) -> &'static str {
        match self {
            ToolFormat::OpenAi => "openai",
            ToolFormat::Anthropic => "anthropic",
        }
    }
}

impl fmt::Display for ToolFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ToolFormat {
    type Err = Error;

    /// Parses `openai` or `anthropic` (ignoring case).
    fn from_str(s: &str) -> Result<ToolFormat, Error> {
        ToolFormat::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                Error::new(
                    "invalid_format",
                    format!("unknown tool format `{s}`; expected one of: openai, anthropic"),
                    "name the format as `openai` or `anthropic`",
                )
            })
    }
}

/// One tool call found in an LLM message.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolCallRequest {
    /// The call's id (`tool_call_id`, `call_id` or `tool_use_id` in the reply).
    pub call_id: String,
    /// The format the call came in, and the one its result is to be sent back in.
    pub format: ToolFormat,
    /// Whether the call was an OpenAI Responses API `function_call` item (its result is then a
    /// `function_call_output` item).
    pub responses_api: bool,
    /// The function name the model used.
    pub name: String,
    /// The call of the tool `name` maps to, or why the call cannot run (unknown name, arguments
    /// that are not a JSON object). Send such an error back as the call's result
    /// ([`ToolCallRequest::result_message`]): the model can correct itself.
    pub request: Result<RunRequest, Error>,
}

impl ToolCallRequest {
    /// The message (or Responses API item) that answers this call with `result`.
    pub fn result_message(&self, result: Result<&RunResponse, &Error>) -> Value {
        self.answer(result_text(result), !result.is_ok_and(|r| r.ok))
    }

    /// The message (or Responses API item) that answers this call with `text`, a result
    /// already written out ([`result_text`]).
    pub(crate) fn answer(&self, text: String, is_error: bool) -> Value {
        if self.responses_api {
            json!({
                "type": "function_call_output",
                "call_id": self.call_id,
                "output": text,
            })
        } else {
            message(self.format, &self.call_id, text, is_error)
        }
    }
}

/// The function name of tool `id` in both formats: the id with every `.` replaced by `_`.
pub fn tool_call_name(id: &str) -> String {
    id.replace('.', "_")
}

/// The message that answers call `call_id` with `result`, in `format`:
///
/// - OpenAI: `{"role": "tool", "tool_call_id", "content": "<JSON text>"}`;
/// - Anthropic: a content block `{"type": "tool_result", "tool_use_id", "content": "<JSON
///   text>", "is_error"}`, to go in a user message ([`tool_results_reply`]).
///
/// The text is the tool's output as JSON when it succeeded (wrapped as `{"output", "files",
/// "truncated"}` when it produced files or its output was cut), else `{"ok": false, "error":
/// {"code", "message", "hint", …}}`.
pub fn tool_result_message(
    format: ToolFormat,
    call_id: &str,
    result: Result<&RunResponse, &Error>,
) -> Value {
    message(
        format,
        call_id,
        result_text(result),
        !result.is_ok_and(|r| r.ok),
    )
}

/// The message that answers call `call_id` with `text`.
fn message(format: ToolFormat, call_id: &str, text: String, is_error: bool) -> Value {
    match format {
        ToolFormat::OpenAi => json!({
            "role": "tool",
            "tool_call_id": call_id,
            "content": text,
        }),
        ToolFormat::Anthropic => json!({
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": text,
            "is_error": is_error,
        }),
    }
}

/// The reply that carries `results` ([`tool_result_message`]s) back: for OpenAI the array of
/// `role: tool` messages (or Responses API items) itself, for Anthropic one user message
/// `{"role": "user", "content": [tool_result…]}`.
pub fn tool_results_reply(format: ToolFormat, results: Vec<Value>) -> Value {
    match format {
        ToolFormat::OpenAi => Value::Array(results),
        ToolFormat::Anthropic => json!({"role": "user", "content": results}),
    }
}

/// What a call produced, as the text the model reads.
pub(crate) fn result_text(result: Result<&RunResponse, &Error>) -> String {
    let value = match result {
        Ok(response) if response.ok => {
            let output = response.output.clone().unwrap_or(Value::Null);
            if response.files.is_empty() && response.truncated.is_none() {
                output
            } else {
                let mut wrapped = json!({"output": output});
                if !response.files.is_empty() {
                    wrapped["files"] = json!(response.files);
                }
                if let Some(truncated) = &response.truncated {
                    wrapped["truncated"] = json!(truncated);
                }
                wrapped
            }
        }
        Ok(response) => {
            let mut failed = json!({"ok": false, "tool": response.tool, "error": response.error});
            if !response.stderr.is_empty() {
                failed["stderr"] = json!(response.stderr);
            }
            failed
        }
        Err(error) => json!({"ok": false, "error": error.report()}),
    };
    value.to_string()
}

impl Locara {
    /// Every callable tool (the newest version of each id) as a tool definition in `format`:
    ///
    /// - OpenAI: `{"type": "function", "function": {"name", "description", "parameters"}}`;
    /// - Anthropic: `{"name", "description", "input_schema"}`.
    ///
    /// The name is [`tool_call_name`]; the description is the manifest's, with the safety
    /// tier.
    ///
    /// # Errors
    /// `name_collision` when two tool ids map to the same name (`a.b` and `a_b`).
    pub fn export_tools(&self, format: ToolFormat) -> Result<Vec<Value>, Error> {
        let descriptions: Vec<ToolDescription> = self
            .callable_ids()
            .iter()
            .filter_map(|id| self.describe(id).ok())
            .collect();
        export(&descriptions, format)
    }

    /// The tool calls in `message`, in order, each mapped to a [`RunRequest`] for the tool its
    /// name stands for. `message` may be:
    ///
    /// - OpenAI: an assistant message with `tool_calls`, a bare `tool_calls` array, one tool
    ///   call `{"id", "type": "function", "function": {"name", "arguments"}}`, a Chat
    ///   Completions response (its first choice's message), or Responses API `function_call`
    ///   items (one, or an array of output items);
    /// - Anthropic: an assistant message, its `content` array, or one `tool_use` block.
    ///
    /// Text, thinking, reasoning and other non-call items in an array are skipped. A call
    /// whose name is unknown or whose arguments are not a JSON object is returned with that
    /// error in [`ToolCallRequest::request`], so that its id can still be answered.
    ///
    /// # Errors
    /// `invalid_tool_call` when `message` holds no tool call, is not of a shape above, mixes
    /// the two formats, or has a call without an id or a name.
    pub fn requests_from_tool_calls(&self, message: &Value) -> Result<Vec<ToolCallRequest>, Error> {
        let names = Names::new(self.callable_ids());
        Ok(parse(message)?
            .into_iter()
            .map(|call| names.resolve(call))
            .collect())
    }

    /// The ids of the callable tools, each once, sorted.
    pub(crate) fn callable_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.list().into_iter().map(|t| t.id).collect();
        ids.sort();
        ids.dedup();
        ids
    }
}

/// The tool definitions of `descriptions` in `format`.
pub(crate) fn export(
    descriptions: &[ToolDescription],
    format: ToolFormat,
) -> Result<Vec<Value>, Error> {
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    let mut tools = Vec::new();
    for d in descriptions {
        let id = d.summary.id.as_str();
        let name = tool_call_name(id);
        if let Some(other) = seen.insert(name.clone(), id) {
            if other == id {
                continue;
            }
            return Err(Error::new(
                "name_collision",
                format!("tools `{other}` and `{id}` would both be called `{name}` in {format}"),
                "tool names replace `.` with `_`; keep only one of the two tools callable (with an app manifest)",
            ));
        }
        let mut schema = d.input_schema.clone();
        if let Some(object) = schema.as_object_mut() {
            object.remove("$schema");
        }
        let description = format!(
            "{} Safety tier: {}.",
            d.summary.description.trim_end(),
            d.summary.safety_tier
        );
        tools.push(match format {
            ToolFormat::OpenAi => json!({
                "type": "function",
                "function": {
                    "name": name,
                    "description": description,
                    "parameters": schema,
                },
            }),
            ToolFormat::Anthropic => json!({
                "name": name,
                "description": description,
                "input_schema": schema,
            }),
        });
    }
    Ok(tools)
}

/// A tool call as found in a message, before its name is resolved.
#[derive(Debug)]
pub(crate) struct RawCall {
    pub(crate) call_id: String,
    pub(crate) format: ToolFormat,
    pub(crate) responses_api: bool,
    pub(crate) name: String,
    /// The arguments object, or what is wrong with them.
    pub(crate) arguments: Result<Value, String>,
}

/// The function names of the callable tools, resolved back to their ids.
#[derive(Debug)]
pub(crate) struct Names {
    /// Name (and id) to id; `None` for a name two ids share.
    by_name: BTreeMap<String, Option<String>>,
}

impl Names {
    pub(crate) fn new(ids: impl IntoIterator<Item = String>) -> Names {
        let mut by_name: BTreeMap<String, Option<String>> = BTreeMap::new();
        let ids: Vec<String> = ids.into_iter().collect();
        for id in &ids {
            let name = tool_call_name(id);
            by_name
                .entry(name)
                .and_modify(|known| {
                    if known.as_deref() != Some(id.as_str()) {
                        *known = None;
                    }
                })
                .or_insert_with(|| Some(id.clone()));
        }
        // An id is its own name too (a model may echo it); it wins over a shared name.
        for id in ids {
            by_name.insert(id.clone(), Some(id));
        }
        Names { by_name }
    }

    pub(crate) fn resolve(&self, call: RawCall) -> ToolCallRequest {
        let RawCall {
            call_id,
            format,
            responses_api,
            name,
            arguments,
        } = call;
        let request = self.id(&call_id, &name).and_then(|id| {
            let arguments = arguments.map_err(|problem| {
                Error::new(
                    INVALID_TOOL_CALL,
                    format!("tool call `{call_id}` ({name}): {problem}"),
                    "send the arguments as one JSON object matching the tool's parameters schema, e.g. {\"text\": \"…\"}",
                )
            })?;
            Ok(RunRequest::new(id, arguments))
        });
        ToolCallRequest {
            call_id,
            format,
            responses_api,
            name,
            request,
        }
    }

    /// The tool id `name` stands for, in call `call_id`.
    fn id(&self, call_id: &str, name: &str) -> Result<String, Error> {
        match self.by_name.get(name) {
            Some(Some(id)) => Ok(id.clone()),
            Some(None) => Err(Error::new(
                "not_found",
                format!("tool call `{call_id}`: the name `{name}` stands for more than one tool"),
                "call the tool by its id, with its dots",
            )),
            None => {
                let names: Vec<&str> = self
                    .by_name
                    .keys()
                    .map(String::as_str)
                    .filter(|n| !n.contains('.'))
                    .collect();
                let close = close_names(name, &names);
                let hint = if close.is_empty() {
                    format!("call one of the tools offered: {}", names.join(", "))
                } else {
                    format!(
                        "did you mean {}? the tools offered are: {}",
                        close
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(" or "),
                        names.join(", ")
                    )
                };
                Err(Error::new(
                    "not_found",
                    format!("tool call `{call_id}`: no tool named `{name}`"),
                    hint,
                ))
            }
        }
    }
}

/// The names in `names` within a few edits of `name` (or sharing its first segment), closest
/// first, at most three.
fn close_names<'a>(name: &str, names: &[&'a str]) -> Vec<&'a str> {
    let wanted = name.to_lowercase().replace('.', "_");
    let first = |n: &str| n.split(['_', '-']).next().unwrap_or("").to_owned();
    let mut scored: Vec<(usize, &str)> = names
        .iter()
        .filter_map(|&n| {
            let distance = edit_distance(&wanted, n);
            let near = distance <= (n.len() / 3).max(2);
            (near || first(n) == first(&wanted)).then_some((distance, n))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, n)| n).collect()
}

/// The Levenshtein distance between `a` and `b`, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

/// The tool calls in `message`, in order; see [`Locara::requests_from_tool_calls`].
pub(crate) fn parse(message: &Value) -> Result<Vec<RawCall>, Error> {
    let calls = match message {
        Value::Array(items) => parse_items(items, "the array")?,
        Value::Object(object) => {
            if let Some(choices) = object.get("choices").and_then(Value::as_array) {
                let first = choices.first().and_then(|c| c.get("message"));
                return match first {
                    Some(message) => parse(message),
                    None => Err(no_calls("the response has no `choices[0].message`")),
                };
            }
            match object.get("role").and_then(Value::as_str) {
                Some("assistant") => match (object.get("tool_calls"), object.get("content")) {
                    (Some(Value::Array(calls)), _) => parse_items(calls, "`tool_calls`")?,
                    (Some(Value::Null) | None, Some(Value::Array(blocks))) => {
                        parse_items(blocks, "`content`")?
                    }
                    (Some(other), _) => {
                        return Err(invalid(
                            format!("`tool_calls` is {}, not an array", kind(other)),
                            "send the tool calls as an array",
                        ));
                    }
                    _ => Vec::new(),
                },
                Some(role) => {
                    return Err(invalid(
                        format!(
                            "the message's role is `{role}`; tool calls come from the `assistant`"
                        ),
                        "pass the assistant message that holds the tool calls",
                    ));
                }
                None => match item(object)? {
                    Some(call) => vec![call],
                    None => {
                        return Err(not_a_call(object));
                    }
                },
            }
        }
        other => {
            return Err(invalid(
                format!("expected a tool-call message, found {}", kind(other)),
                "pass an assistant message, a tool-call array, or one tool call as JSON",
            ));
        }
    };
    if calls.is_empty() {
        return Err(no_calls("the message holds no tool call"));
    }
    if let Some(other) = calls.iter().find(|c| c.format != calls[0].format) {
        return Err(invalid(
            format!(
                "the message mixes {} and {} tool calls (`{}` is {})",
                calls[0].format, other.format, other.call_id, other.format
            ),
            "pass the tool calls of one message from one API",
        ));
    }
    Ok(calls)
}

/// The calls among `items`, skipping text, thinking and other non-call items.
fn parse_items(items: &[Value], what: &str) -> Result<Vec<RawCall>, Error> {
    let mut calls = Vec::new();
    for (index, value) in items.iter().enumerate() {
        let Value::Object(object) = value else {
            return Err(invalid(
                format!("{what}[{index}] is {}, not an object", kind(value)),
                "each tool call is a JSON object",
            ));
        };
        match item(object)? {
            Some(call) => calls.push(call),
            // A typed item that is no call (text, thinking, message, reasoning…).
            None if object.get("type").is_some_and(Value::is_string) => {}
            None => return Err(not_a_call(object)),
        }
    }
    Ok(calls)
}

/// The call `object` is, or `None` when it is none of the call shapes.
fn item(object: &Map<String, Value>) -> Result<Option<RawCall>, Error> {
    match object.get("type").and_then(Value::as_str) {
        Some("tool_use") => {
            let call_id = field(object, "id", "a `tool_use` block")?;
            let name = field(object, "name", &format!("tool call `{call_id}`"))?;
            let arguments = match object.get("input") {
                Some(Value::Object(input)) => Ok(Value::Object(input.clone())),
                Some(other) => Err(format!("`input` is {}, not an object", kind(other))),
                None => Err("it has no `input`".to_owned()),
            };
            Ok(Some(RawCall {
                call_id,
                format: ToolFormat::Anthropic,
                responses_api: false,
                name,
                arguments,
            }))
        }
        Some("function_call") => {
            let call_id = field(object, "call_id", "a `function_call` item")?;
            let name = field(object, "name", &format!("tool call `{call_id}`"))?;
            Ok(Some(RawCall {
                arguments: arguments(object.get("arguments")),
                call_id,
                format: ToolFormat::OpenAi,
                responses_api: true,
                name,
            }))
        }
        Some("function") | None if object.get("function").is_some() => {
            let call_id = field(object, "id", "a tool call")?;
            let Some(Value::Object(function)) = object.get("function") else {
                return Err(invalid(
                    format!("tool call `{call_id}`: `function` is not an object"),
                    "give the call as {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}",
                ));
            };
            let name = field(function, "name", &format!("tool call `{call_id}`"))?;
            Ok(Some(RawCall {
                arguments: arguments(function.get("arguments")),
                call_id,
                format: ToolFormat::OpenAi,
                responses_api: false,
                name,
            }))
        }
        _ => Ok(None),
    }
}

/// OpenAI's `arguments`: a JSON object encoded in a string (an empty string is no arguments).
/// An object given as is is taken too. The string is read strictly: an object in it that
/// repeats a key is refused, since readers disagree on which value it means.
pub(crate) fn arguments(value: Option<&Value>) -> Result<Value, String> {
    match value {
        None => Err("it has no `arguments`".to_owned()),
        Some(Value::Object(object)) => Ok(Value::Object(object.clone())),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(Value::Object(Map::new())),
        Some(Value::String(text)) => match locara_manifest::json::parse_value("arguments", text) {
            Ok(Value::Object(object)) => Ok(Value::Object(object)),
            Ok(other) => Err(format!(
                "`arguments` is {}, not a JSON object",
                kind(&other)
            )),
            Err(locara_manifest::Error::DuplicateKey {
                key,
                pointer,
                line,
                column,
                ..
            }) => Err(format!(
                "`arguments` repeats the key {key:?} at {pointer} (line {line}, column {column}); give each key once"
            )),
            Err(locara_manifest::Error::Json {
                line,
                column,
                message,
                ..
            }) => Err(format!(
                "`arguments` is not valid JSON: {message} at line {line} column {column}"
            )),
            Err(e) => Err(format!("`arguments` is not valid JSON: {e}")),
        },
        Some(other) => Err(format!(
            "`arguments` is {}, not a JSON object in a string",
            kind(other)
        )),
    }
}

/// The non-empty string field `key` of `object`, which is `whose` ("a tool call").
fn field(object: &Map<String, Value>, key: &str, whose: &str) -> Result<String, Error> {
    match object.get(key) {
        Some(Value::String(value)) if !value.is_empty() => Ok(value.clone()),
        _ => Err(invalid(
            format!("{whose} has no `{key}` string"),
            format!("every tool call needs its `{key}`, as the API returned it"),
        )),
    }
}

fn invalid(message: impl Into<String>, hint: impl Into<String>) -> Error {
    Error::new(INVALID_TOOL_CALL, message, hint)
}

fn no_calls(message: &str) -> Error {
    invalid(
        message,
        "pass the assistant message whose `tool_calls` (OpenAI) or `content` (Anthropic `tool_use` blocks) hold the calls",
    )
}

fn not_a_call(object: &Map<String, Value>) -> Error {
    let keys: Vec<&str> = object.keys().map(String::as_str).collect();
    invalid(
        format!(
            "an object with keys [{}] is not a tool call",
            keys.join(", ")
        ),
        "pass an OpenAI tool call ({\"id\", \"type\": \"function\", \"function\"}), a Responses `function_call` item or an Anthropic `tool_use` block",
    )
}
