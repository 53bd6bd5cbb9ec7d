//! The stdio transport: newline-delimited JSON-RPC on a byte stream pair, with every line
//! that is not a message answered instead of dropped.
//!
//! rmcp's own stdio transport ignores a line that is not JSON and drops a line over its length
//! limit without a word, so a client that sent one waits for an answer that never comes. Here
//! a reader task reads the lines itself and hands rmcp only the messages it could parse (through
//! rmcp's `Transport` trait, so a good message is parsed once); a bad line gets a JSON-RPC error
//! response, and the session goes on:
//!
//! - a line that is not UTF-8, not JSON, or nested deeper than [`MAX_JSON_DEPTH`] arrays and
//!   objects: `-32700` Parse error;
//! - a line longer than [`MAX_MESSAGE_BYTES`] (its newline aside): `-32600` Invalid Request,
//!   sent as soon as the line crosses the limit; the rest of the line is skipped unread;
//! - JSON that is not a JSON-RPC message (a number, a batch array, an object without
//!   `"jsonrpc": "2.0"`, an `id` that is neither a string nor a number, …): `-32600`;
//! - a well-formed request whose `params` do not fit its method: `-32602` Invalid params.
//!
//! The response carries the request's `id` when one can be read (from the object, or from the
//! start of a line that does not parse as a whole), else `"id": null`. A notification (no
//! `id`) that does not parse is ignored, as JSON-RPC wants notifications never answered, and
//! so are blank lines. A UTF-8 byte order mark and a `\r` before the newline are accepted.
//!
//! One writer task owns the output: rmcp's messages and these error responses go through one
//! channel and are written whole, a line at a time, so they never interleave.

use std::io;

use rmcp::{
    ErrorData, RoleServer, ServiceExt as _,
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};
use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value, json};
use tokio::{
    io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader},
    sync::mpsc,
};

use crate::{Error, LocaraMcp};

/// The longest line (one JSON-RPC message, without its newline) the stdio transport reads:
/// 4 MiB, the request body limit of the streamable HTTP transport. Larger inputs belong in
/// files the tool reads from its workspace.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// How deeply arrays and objects may nest in a message (the envelope counts: tool arguments
/// start at the third level).
pub const MAX_JSON_DEPTH: usize = 64;

/// How many messages may wait between the reader, rmcp and the writer.
const QUEUE: usize = 32;

/// Serves `server` over `input` and `output` (stdin and stdout for [`crate::serve_stdio`])
/// until `input` ends or the session fails.
pub(crate) async fn serve_lines<R, W>(server: LocaraMcp, input: R, output: W) -> Result<(), Error>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_server, incoming) = mpsc::channel(QUEUE);
    let (outgoing, lines) = mpsc::channel(QUEUE);
    let writer = tokio::spawn(write_lines(output, lines));
    let reader = tokio::spawn(read_messages(input, to_server, outgoing.clone()));
    let transport = LineTransport { incoming, outgoing };
    let served = match server.serve(transport).await {
        Ok(running) => running
            .waiting()
            .await
            .map(drop)
            .map_err(|e| Error::Protocol(e.to_string())),
        Err(e) => Err(Error::Protocol(e.to_string())),
    };
    // The session is over. A reader still waiting for input holds a sender of the writer's
    // queue: stop it, then let the writer drain what is queued (answers to the last lines).
    reader.abort();
    let _ = writer.await;
    served
}

/// rmcp's view of the stream: the messages the reader parsed, and the writer's queue.
struct LineTransport {
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
    outgoing: mpsc::Sender<Vec<u8>>,
}

impl Transport<RoleServer> for LineTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        let outgoing = self.outgoing.clone();
        async move {
            outgoing
                .send(line.map_err(io::Error::other)?)
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the output is closed"))
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        self.incoming.close();
        Ok(())
    }
}

/// Writes each queued line whole, until every sender is gone or the output fails.
async fn write_lines<W: AsyncWrite + Unpin>(mut output: W, mut lines: mpsc::Receiver<Vec<u8>>) {
    while let Some(line) = lines.recv().await {
        if let Err(error) = async {
            output.write_all(&line).await?;
            output.flush().await
        }
        .await
        {
            tracing::warn!(%error, "cannot write to the MCP client; closing the session");
            return;
        }
    }
}

/// Reads lines until `input` ends: messages go to rmcp, answers to bad lines to the writer.
async fn read_messages<R: AsyncRead + Unpin>(
    input: R,
    to_server: mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    outgoing: mpsc::Sender<Vec<u8>>,
) {
    let mut lines = LineReader::new(input, MAX_MESSAGE_BYTES);
    loop {
        let line = match lines.next().await {
            Ok(Some(line)) => line,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(%error, "cannot read from the MCP client; closing the session");
                return;
            }
        };
        let incoming = match line {
            Line::Complete(line) => classify(&line),
            Line::TooLong(prefix) => Incoming::Reject(too_large(&prefix)),
        };
        let sent = match incoming {
            Incoming::Message(message) => to_server.send(*message).await.is_ok(),
            Incoming::Reject(response) => outgoing.send(response).await.is_ok(),
            Incoming::Ignore => true,
        };
        if !sent {
            return;
        }
    }
}

/// One line read by a [`LineReader`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// A whole line, without its newline (the last line may lack one).
    Complete(Vec<u8>),
    /// A line over the limit: its first `max` bytes; the rest is skipped.
    TooLong(Vec<u8>),
}

/// Reads newline-delimited lines without ever holding more than `max` bytes of one.
pub(crate) struct LineReader<R> {
    input: BufReader<R>,
    line: Vec<u8>,
    max: usize,
    /// Skipping the rest of a line already reported as too long.
    skipping: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// Lines of `input`, at most `max` bytes each.
    pub(crate) fn new(input: R, max: usize) -> LineReader<R> {
        LineReader {
            input: BufReader::new(input),
            line: Vec::new(),
            max,
            skipping: false,
        }
    }

    /// The next line, or `None` at the end of the input.
    pub(crate) async fn next(&mut self) -> io::Result<Option<Line>> {
        loop {
            let available = self.input.fill_buf().await?;
            if available.is_empty() {
                self.skipping = false;
                if self.line.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(Line::Complete(std::mem::take(&mut self.line))));
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let content = newline.unwrap_or(available.len());
            let used = newline.map_or(available.len(), |i| i + 1);
            if self.skipping {
                self.skipping = newline.is_none();
                self.input.consume(used);
                continue;
            }
            if self.line.len() + content > self.max {
                let mut prefix = std::mem::take(&mut self.line);
                prefix.extend_from_slice(&available[..self.max - prefix.len()]);
                self.skipping = newline.is_none();
                self.input.consume(used);
                return Ok(Some(Line::TooLong(prefix)));
            }
            self.line.extend_from_slice(&available[..content]);
            self.input.consume(used);
            if newline.is_some() {
                return Ok(Some(Line::Complete(std::mem::take(&mut self.line))));
            }
        }
    }
}

/// What becomes of a line.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A message for rmcp.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// An error response to write back, newline included.
    Reject(Vec<u8>),
    /// Nothing to do: a blank line, or a notification that does not parse.
    Ignore,
}

/// Parses one line (without its newline).
pub(crate) fn classify(line: &[u8]) -> Incoming {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Incoming::Ignore;
    }
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => {
            return Incoming::Reject(response(
                id_from_prefix(line),
                ErrorData::parse_error(
                    format!(
                        "Parse error: the message is not UTF-8 (invalid byte at offset {})",
                        e.valid_up_to()
                    ),
                    None,
                ),
            ));
        }
    };
    if nested_deeper_than(line, MAX_JSON_DEPTH) {
        return Incoming::Reject(response(
            id_from_prefix(line),
            ErrorData::parse_error(
                format!(
                    "Parse error: the message nests arrays and objects deeper than {MAX_JSON_DEPTH} levels"
                ),
                Some(json!({"max_depth": MAX_JSON_DEPTH})),
            ),
        ));
    }
    // Parsed as rmcp parses it, so whatever rmcp accepts passes.
    let error = match serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(text) {
        Ok(message) => return Incoming::Message(Box::new(message)),
        Err(error) => error,
    };
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => {
            return Incoming::Reject(response(
                id_from_prefix(line),
                ErrorData::parse_error(format!("Parse error: not valid JSON ({e})"), None),
            ));
        }
    };
    let Value::Object(object) = &value else {
        let message = if value.is_array() {
            "Invalid Request: batches (JSON arrays) are not supported; send one message per line"
        } else {
            "Invalid Request: a message is a JSON object: {\"jsonrpc\": \"2.0\", \"id\": …, \"method\": \"…\", \"params\": {…}}"
        };
        return Incoming::Reject(response(
            Value::Null,
            ErrorData::invalid_request(message, None),
        ));
    };
    let method = object.get("method").and_then(Value::as_str);
    if method.is_some() && !object.contains_key("id") {
        tracing::debug!(%error, method, "ignoring a notification that does not parse");
        return Incoming::Ignore;
    }
    let id = match object.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    let error = match (envelope_problem(object), method) {
        (Some(problem), _) => {
            ErrorData::invalid_request(format!("Invalid Request: {problem}"), None)
        }
        (None, Some(method)) => {
            let problem = match object.get("params") {
                Some(params) if !params.is_object() => "\"params\" must be an object".to_owned(),
                _ => error.to_string(),
            };
            ErrorData::invalid_params(format!("Invalid params for `{method}`: {problem}"), None)
        }
        (None, None) => ErrorData::invalid_request(format!("Invalid Request: {error}"), None),
    };
    Incoming::Reject(response(id, error))
}

/// What is wrong with a message's envelope (`jsonrpc`, `id`, `method`), if anything.
fn envelope_problem(object: &Map<String, Value>) -> Option<&'static str> {
    if object.get("jsonrpc") != Some(&Value::from("2.0")) {
        return Some("a message must have \"jsonrpc\": \"2.0\"");
    }
    if object
        .get("id")
        .is_some_and(|id| !(id.is_string() || id.is_i64() || id.is_u64()))
    {
        return Some("\"id\" must be a string or an integer");
    }
    match object.get("method") {
        Some(method) if !method.is_string() => Some("\"method\" must be a string"),
        None if !object.contains_key("result") && !object.contains_key("error") => Some(
            "a request needs a \"method\": {\"jsonrpc\": \"2.0\", \"id\": …, \"method\": \"…\", \"params\": {…}}",
        ),
        _ => None,
    }
}

/// The answer to a line too long to read, with the id found in its first bytes, if any.
fn too_large(prefix: &[u8]) -> Vec<u8> {
    response(
        id_from_prefix(prefix),
        ErrorData::invalid_request(
            format!(
                "Invalid Request: the message is longer than {MAX_MESSAGE_BYTES} bytes (4 MiB), the most one line may hold; pass large inputs as files in the tool's workspace"
            ),
            Some(json!({"max_bytes": MAX_MESSAGE_BYTES})),
        ),
    )
}

/// A JSON-RPC error response line.
fn response(id: Value, error: ErrorData) -> Vec<u8> {
    let mut line = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "error": error}))
        .unwrap_or_else(|_| {
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}"#
                .to_vec()
        });
    line.push(b'\n');
    line
}

/// Whether arrays and objects nest deeper than `max` anywhere in `json` (strings aside). A
/// linear scan, so that no parser recurses that deep.
pub(crate) fn nested_deeper_than(json: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &byte in json {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// The `id` of a message that does not parse as a whole (not JSON past some point, cut
/// short, too deep): read from the object's members up to the first problem. `null` when it
/// comes after the problem, or is not a string or a number.
pub(crate) fn id_from_prefix(bytes: &[u8]) -> Value {
    /// Visits a JSON object's members until `id`.
    struct IdSeeker<'a>(&'a mut Option<Value>);

    impl<'de> Visitor<'de> for IdSeeker<'_> {
        type Value = ();

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON-RPC message")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                if key == "id" {
                    *self.0 = Some(map.next_value()?);
                    return Ok(());
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }

    let mut id = None;
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    // An error past the id is what is expected here: the id is kept either way.
    let _ = serde_json::Deserializer::from_slice(bytes).deserialize_map(IdSeeker(&mut id));
    match id {
        Some(id @ (Value::String(_) | Value::Number(_))) => id,
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests;
