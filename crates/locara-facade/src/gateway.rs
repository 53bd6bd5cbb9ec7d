//! The tool gateway: a running program (code-exec) searches, describes and calls tools, each
//! inner call going through the whole pipeline with the app's grants.
//!
//! A call is served a gateway when the app grants `tools` (otherwise nothing here runs, and the
//! call costs what it always did). The gateway holds a clone of the `Locara` handle and answers
//! each request on the program's own thread ([`Locara::gateway`]); the program waits on it raced
//! against the outer call's deadline and cancel token, so an inner call ends when the outer call
//! does (its deadline, a cancel, a dropped future), which cancels it in the sandbox. What a program
//! may do is bounded per outer call, across every level of nesting ([`GatewayLimits`]): how many
//! tool calls, how deep (a program calling a program), and how many bytes of answers.

use std::{
    path::PathBuf,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU32, AtomicU64, Ordering},
    },
    time::Instant,
};

use locara_exec::{ProgressSink, ToolGateway};
use serde::{Serialize, Serializer, ser::SerializeMap};
use serde_json::{Value, json};

use crate::{
    Error, ErrorReport, InnerCallReport, Locara, RunRequest, RunResponse, StatsReport,
    locara::millis,
};

/// What the programs of one outer call may do through the gateway, counted across every level
/// of nesting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct GatewayLimits {
    /// The most tool calls, in all (default 32).
    pub max_calls: u32,
    /// The deepest nesting: the outer call is depth 0, a tool it calls depth 1, a tool that one
    /// calls depth 2 (default 2: a program may call a program, which may call tools).
    pub max_depth: u32,
    /// The most bytes of answers (compact JSON, files included as base64), in all (default
    /// 64 MiB).
    pub output_bytes: u64,
}

impl Default for GatewayLimits {
    fn default() -> GatewayLimits {
        GatewayLimits {
            max_calls: 32,
            max_depth: 2,
            output_bytes: 64 << 20,
        }
    }
}

impl GatewayLimits {
    /// The default limits.
    pub fn new() -> GatewayLimits {
        GatewayLimits::default()
    }

    /// Sets the most tool calls.
    pub fn with_max_calls(mut self, calls: u32) -> GatewayLimits {
        self.max_calls = calls;
        self
    }

    /// Sets the deepest nesting.
    pub fn with_max_depth(mut self, depth: u32) -> GatewayLimits {
        self.max_depth = depth;
        self
    }

    /// Sets the most bytes of answers.
    pub fn with_output_bytes(mut self, bytes: u64) -> GatewayLimits {
        self.output_bytes = bytes;
        self
    }
}

/// What the outer call's programs have used, shared by every level.
#[derive(Debug, Default)]
struct Used {
    calls: AtomicU32,
    output_bytes: AtomicU64,
}

/// The room an inner call's answer is written into at first: most answers (a small output and
/// the call's stats, ~0.5 KiB) fit, so it is written without growing, and it stays under the
/// 1 KiB from which every glibc allocation first consolidates the allocator's free lists.
const ANSWER_CAPACITY: usize = 1000;

/// One call's place in a tree of gateway calls, and what its inner calls inherit.
#[derive(Clone)]
pub(crate) struct Frame {
    depth: u32,
    used: Arc<Used>,
    workspace: Option<PathBuf>,
    user: Option<String>,
    seed: Option<u64>,
    receipt: bool,
    progress: Option<ProgressSink>,
    /// The inner calls this call made, in the order they ended.
    calls: Arc<Mutex<Vec<InnerCallReport>>>,
    /// The stats of the inner calls whose program asked for them later (`"stats": false`),
    /// by the number its answer gave (`"call"`).
    kept_stats: Arc<Mutex<Vec<StatsReport>>>,
}

impl Frame {
    /// The frame of an outer call (depth 0), or of an inner call of `parent`.
    pub(crate) fn new(
        parent: Option<&Frame>,
        request: &RunRequest,
        user: Option<String>,
        progress: Option<ProgressSink>,
    ) -> Frame {
        Frame {
            depth: parent.map_or(0, |p| p.depth + 1),
            used: parent.map_or_else(Arc::default, |p| Arc::clone(&p.used)),
            workspace: request.workspace.clone(),
            user,
            seed: request.seed,
            receipt: request.receipt,
            progress,
            calls: Arc::default(),
            kept_stats: Arc::default(),
        }
    }

    fn record(&self, call: InnerCallReport) {
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(call);
    }

    /// The inner calls made so far.
    pub(crate) fn take_calls(&self) -> Vec<InnerCallReport> {
        std::mem::take(&mut self.calls.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Locara {
    /// The gateway of a call whose frame is `frame`: it answers each request of the call's
    /// program on the program's own thread (exec runs the answer's future there, raced against
    /// the call's deadline and cancel token), with a clone of this handle, so an inner call
    /// costs no hop between threads; the outer call's end drops it, which cancels it.
    pub(crate) fn gateway(&self, frame: &Frame) -> ToolGateway {
        let (locara, frame) = (self.clone(), frame.clone());
        ToolGateway::new(move |request| {
            let (locara, frame) = (locara.clone(), frame.clone());
            Box::pin(async move { locara.gateway_answer(request, &frame).await })
        })
    }

    /// The answer to one request (`docs/code-mode.md` § The gateway's requests), as JSON text.
    async fn gateway_answer(&self, mut request: Value, frame: &Frame) -> Result<Vec<u8>, String> {
        let text = |answer: Value| answer.to_string().into_bytes();
        let op = request["op"].as_str().unwrap_or_default();
        match op {
            "list" => Ok(text(json!({"ok": true, "tools": self.list()}))),
            "search" => {
                let query = request["query"]
                    .as_str()
                    .ok_or("a `search` request needs a string `query`")?;
                let limit = request["limit"].as_u64().unwrap_or(10).clamp(1, 50);
                let limit = usize::try_from(limit).unwrap_or(10);
                Ok(text(
                    json!({"ok": true, "tools": self.search_tools(query, limit)}),
                ))
            }
            "describe" => {
                let tool = request["tool"]
                    .as_str()
                    .ok_or("a `describe` request needs a string `tool`")?;
                Ok(text(match self.describe(tool) {
                    Ok(description) => json!({"ok": true, "description": description}),
                    Err(error) => json!({"ok": false, "error": error.report()}),
                }))
            }
            "call" => {
                let arguments = match request.get_mut("arguments").map(Value::take) {
                    None | Some(Value::Null) => json!({}),
                    Some(arguments) => arguments,
                };
                let tool = request["tool"]
                    .as_str()
                    .ok_or("a `call` request needs a string `tool`")?;
                let stats = match &request["stats"] {
                    Value::Null => true,
                    Value::Bool(stats) => *stats,
                    _ => return Err("a `call` request's `stats` must be true or false".into()),
                };
                Ok(self.inner_call(tool, arguments, stats, frame).await)
            }
            "stats" => {
                let call = request["call"].as_u64().ok_or(
                    "a `stats` request needs the whole number `call` its call's answer gave",
                )?;
                let kept = frame.kept_stats.lock().unwrap_or_else(|e| e.into_inner());
                let stats = usize::try_from(call).ok().and_then(|call| kept.get(call));
                let stats = stats.ok_or_else(|| {
                    format!(
                        "no call {call} kept its stats: a `call` request with `\"stats\": false` answers with the number to ask for"
                    )
                })?;
                Ok(text(json!({"ok": true, "stats": stats})))
            }
            _ => Err(format!(
                "unknown `tools` request {:?}: the ops are `list`, `search`, `describe`, `call` and `stats`",
                request.get("op").unwrap_or(&Value::Null)
            )),
        }
    }

    /// One inner call, within the outer call's limits; the answer the program gets, as JSON
    /// text, with the call's `stats` or (`stats` false) the number that asks for them later.
    async fn inner_call(
        &self,
        tool: &str,
        arguments: Value,
        stats: bool,
        frame: &Frame,
    ) -> Vec<u8> {
        let started = Instant::now();
        let limits = &self.shared.gateway_limits;
        let refused = |limit: &str, message: String, hint: &str| {
            let mut report = Error::new("limit_exceeded", message, hint).report().clone();
            report.limit = Some(limit.to_owned());
            report
        };
        let refusal = |tool: &str, error: &ErrorReport| InnerCallReport {
            tool: tool.to_owned(),
            ok: false,
            error: Some(error.code.clone()),
            receipt: None,
            elapsed_ms: millis(started.elapsed()),
        };
        let answer_error = |report: ErrorReport| {
            json!({"ok": false, "tool": tool, "error": report})
                .to_string()
                .into_bytes()
        };
        if frame.depth + 1 > limits.max_depth {
            let error = refused(
                "depth",
                format!(
                    "{tool} was called at nesting depth {}, deeper than the {} this host allows",
                    frame.depth + 1,
                    limits.max_depth
                ),
                "call the tool from the outer program instead of from a program it runs",
            );
            frame.record(refusal(tool, &error));
            return answer_error(error);
        }
        let made = frame.used.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if made > limits.max_calls {
            let error = refused(
                "tool_calls",
                format!(
                    "{tool} would be tool call {made}; a call's programs may make {} in all",
                    limits.max_calls
                ),
                "make fewer calls: batch the work into one call of each tool where its arguments allow",
            );
            frame.record(refusal(tool, &error));
            return answer_error(error);
        }
        let mut request = RunRequest::new(tool, arguments);
        request.workspace = frame.workspace.clone();
        request.user = frame.user.clone();
        request.seed = frame.seed;
        request.receipt = frame.receipt;
        let (answer, mut record) = match self
            .run_framed(request, frame.progress.clone(), Some(frame))
            .await
        {
            Ok(response) => {
                let mut answer = Vec::with_capacity(ANSWER_CAPACITY);
                let written = if stats {
                    serde_json::to_writer(&mut answer, &response)
                } else {
                    // The stats are kept under the number the answer gives, moved once it is
                    // written.
                    let mut kept = frame.kept_stats.lock().unwrap_or_else(|e| e.into_inner());
                    let written =
                        serde_json::to_writer(&mut answer, &WithoutStats(&response, kept.len()));
                    kept.push(response.stats);
                    written
                };
                let written = written.map(|()| answer);
                let answer = written.unwrap_or_else(|e| {
                    answer_error(
                        Error::new("internal", format!("cannot encode the answer: {e}"), "")
                            .report()
                            .clone(),
                    )
                });
                let record = InnerCallReport {
                    tool: response.tool,
                    ok: response.ok,
                    error: response.error.map(|e| e.code),
                    receipt: response.receipt,
                    elapsed_ms: millis(started.elapsed()),
                };
                (answer, record)
            }
            Err(error) => {
                frame.record(refusal(tool, error.report()));
                return answer_error(error.report().clone());
            }
        };
        let size = answer.len() as u64;
        let used = frame.used.output_bytes.fetch_add(size, Ordering::Relaxed) + size;
        if used > limits.output_bytes {
            let error = refused(
                "gateway_output_bytes",
                format!(
                    "{tool}'s answer ({size} bytes) takes the answers of this call's tool calls to {used} bytes, above the {} allowed",
                    limits.output_bytes
                ),
                "ask the tools for less (a smaller range, fewer pages, a lower limit)",
            );
            // It ran (its receipt stays), but the program never sees its answer.
            record.ok = false;
            record.error = Some(error.code.clone());
            frame.record(record);
            return answer_error(error);
        }
        frame.record(record);
        answer
    }
}

/// An inner call's answer without its `stats`, which the program asks for only if it reads
/// them (`{"op": "stats", "call"}`): most programs never do, and reading them into the
/// language's values was a third of an answer's values. Every other field is written as
/// [`RunResponse`]'s own `Serialize` writes it, and `call` is the number that names the stats.
struct WithoutStats<'a>(&'a RunResponse, usize);

impl Serialize for WithoutStats<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Taken apart field by field, so that a field added to `RunResponse` does not compile
        // here until it is written too.
        let RunResponse {
            tool,
            ok,
            output,
            error,
            stderr,
            files,
            truncated,
            stats: _,
            approval,
            receipt,
            calls,
        } = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("tool", tool)?;
        map.serialize_entry("ok", ok)?;
        if let Some(output) = output {
            map.serialize_entry("output", output)?;
        }
        if let Some(error) = error {
            map.serialize_entry("error", error)?;
        }
        if !stderr.is_empty() {
            map.serialize_entry("stderr", stderr)?;
        }
        if !files.is_empty() {
            map.serialize_entry("files", files)?;
        }
        if let Some(truncated) = truncated {
            map.serialize_entry("truncated", truncated)?;
        }
        if let Some(approval) = approval {
            map.serialize_entry("approval", approval)?;
        }
        if let Some(receipt) = receipt {
            map.serialize_entry("receipt", receipt)?;
        }
        if !calls.is_empty() {
            map.serialize_entry("calls", calls)?;
        }
        map.serialize_entry("call", &self.1)?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::WithoutStats;
    use crate::RunResponse;

    /// What `WithoutStats` must write: the response's own JSON without `stats`, with `call`.
    fn expected(response: &RunResponse, call: usize) -> Value {
        let mut value = serde_json::to_value(response).unwrap();
        let object = value.as_object_mut().unwrap();
        assert!(object.remove("stats").is_some());
        object.insert("call".into(), json!(call));
        value
    }

    #[test]
    fn an_answer_without_stats_is_the_response_without_them() {
        let stats = json!({
            "engine": "wasmtime", "elapsed_ms": 0.5, "fuel_consumed": 7,
            "limits": {"memory_bytes": 1, "wall_time_ms": 2, "fuel": 3, "output_bytes": 4,
                       "max_fds": 5, "temp_bytes": 6, "periodic": ["wall_time"]},
        });
        // Every field that may be left out, left out; then every one present.
        let bare = json!({"tool": "text.chunk@0.1.0", "ok": true, "stats": stats});
        let full = json!({
            "tool": "pdf.split@0.1.0", "ok": false, "output": {"parts": [1, "two"]},
            "error": {"code": "tool_error", "message": "m", "hint": "h", "violations": [
                {"pointer": "/a", "constraint": "type", "message": "not a string"}],
                "exit_code": 2},
            "stderr": "warning", "stats": stats,
            "files": [{"name": "a.pdf", "size_bytes": 3, "sha256": "00", "base64": "AAAA"}],
            "truncated": {"original_bytes": 9, "returned_bytes": 3},
            "approval": {"approved": true, "by": "policy p", "reason": "r"},
            "receipt": {"receipt": {"k": 1}, "key_id": "key", "algorithm": "ed25519",
                        "signature": "ff"},
            "calls": [{"tool": "text.chunk@0.1.0", "ok": true, "elapsed_ms": 0.25}],
        });
        for (response, call) in [(bare, 0), (full, 31)] {
            let response: RunResponse = serde_json::from_value(response).unwrap();
            let written = serde_json::to_value(WithoutStats(&response, call)).unwrap();
            assert_eq!(written, expected(&response, call));
        }
    }
}
