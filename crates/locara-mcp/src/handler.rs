//! [`LocaraMcp`]: the MCP server handler, and how tools, results and errors map to MCP.
//!
//! - A tool is named by its id (`text.chunk`): MCP tool names may hold `A-Z a-z 0-9 _ - .`,
//!   which covers every valid Locara id. Only the newest version of each id is listed.
//! - `inputSchema` is the manifest's input schema; `outputSchema` is its output schema when
//!   that describes an object (MCP allows no other), and then a successful call's output is
//!   also its `structuredContent`.
//! - Annotations come from the safety tier: `read_only` is `readOnlyHint: true,
//!   destructiveHint: false`; `side_effecting` is `readOnlyHint: false` (MCP's default for
//!   `destructiveHint` applies); `privileged` is `readOnlyHint: false, destructiveHint: true`.
//! - A successful call's first content block is its output as compact JSON. The files it
//!   produced follow as embedded blob resources (`locara://files/<name>`, base64), and a note
//!   when the output was cut to fit the output cap.
//! - A call that could not run (invalid arguments, capability denied, …) and a tool that ran
//!   and failed (tool error, exceeded limit, invalid output) are both results with
//!   `isError: true` whose first content block is the facade's `ErrorReport` as JSON (code,
//!   message, hint, violations with JSON pointers, limit); a failed tool's stderr follows
//!   when it says more than the report. Only a name that is not a listed tool is a JSON-RPC
//!   error (`-32602`, as the MCP specification has it for unknown tools).
//! - A call whose request carries `_meta.progressToken` runs with
//!   [`Locara::run_with_progress`], and each progress report of the tool becomes a
//!   `notifications/progress` with that token, all sent before the result (see
//!   [`progress`] for how `progress` and `total` are counted). Only tools that
//!   declare `progress`, run by an app that grants it, report; without a token nothing changes.

use std::{borrow::Cow, future::Future, path::PathBuf, sync::Arc, time::Instant};

use locara_facade::{
    ErrorReport, FileReport, Locara, RunRequest, RunResponse, ToolDescription, ToolSummary,
};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        JsonObject, ListToolsResult, PaginatedRequestParams, ResourceContents, ServerCapabilities,
        ServerConfig, Tool, ToolAnnotations,
    },
    service::RequestContext,
};
use serde_json::Value;

use crate::metrics::Metrics;

use crate::progress::{self, Notice};

/// What the server tells a client about itself at initialization.
const INSTRUCTIONS: &str = "Locara runs each tool as a signed WebAssembly module in a sandbox \
(or, for the host's own tools, through the same checks), under the limits its manifest sets. When a call fails, the result has isError set and its text \
is a JSON error report: `code`, `message`, `hint`, and for invalid arguments `violations`, each \
with the JSON `pointer` of the offending argument; fix the arguments and call again.";

/// An MCP server handler over one [`Locara`]: cheap to clone (one per HTTP session).
#[derive(Debug, Clone)]
pub struct LocaraMcp {
    locara: Arc<Locara>,
    tools: Arc<[Tool]>,
    workspace: Option<PathBuf>,
    /// Whether the server lists [`SEARCH_TOOLS`] and [`RUN_PROGRAM`] instead of the tools.
    code_mode: bool,
    /// Where calls are counted, if anywhere.
    metrics: Option<Arc<Metrics>>,
}

/// In code mode: the tool that searches the catalog of tools a program may call.
pub const SEARCH_TOOLS: &str = "search_tools";
/// In code mode: the tool that runs a Python or JavaScript program that may call tools.
pub const RUN_PROGRAM: &str = "run_program";

impl From<Arc<Locara>> for LocaraMcp {
    fn from(locara: Arc<Locara>) -> LocaraMcp {
        LocaraMcp::new(locara)
    }
}

impl LocaraMcp {
    /// A handler serving every callable tool of `locara`.
    pub fn new(locara: Arc<Locara>) -> LocaraMcp {
        let tools = newest(locara.list())
            .into_iter()
            .filter_map(|summary| match locara.describe(&summary.tool) {
                Ok(description) => Some(tool(&description)),
                Err(error) => {
                    tracing::warn!(tool = %summary.tool, %error, "tool left out of the listing");
                    None
                }
            })
            .collect();
        LocaraMcp {
            locara,
            tools,
            workspace: None,
            code_mode: false,
            metrics: None,
        }
    }

    /// Counts every call in `metrics` (by tool and outcome, with its latency), which several
    /// handlers may share.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> LocaraMcp {
        self.metrics = Some(metrics);
        self
    }

    /// Runs `request` with `run`, counted in the metrics when there are any (without them,
    /// a call pays nothing for counting, not even a copy of the tool's name).
    async fn measured<R, F>(
        &self,
        request: RunRequest,
        run: R,
    ) -> Result<RunResponse, locara_facade::Error>
    where
        R: FnOnce(RunRequest) -> F,
        F: Future<Output = Result<RunResponse, locara_facade::Error>>,
    {
        // One `info` event a call (target `locara::call`) when a logger wants it.
        let logged = tracing::enabled!(target: "locara::call", tracing::Level::INFO);
        if self.metrics.is_none() && !logged {
            return run(request).await;
        }
        let tool = request.tool.clone();
        let _in_flight = self.metrics.as_deref().map(Metrics::start);
        let started = Instant::now();
        // The call's span (exported as an OpenTelemetry span when the server traces).
        let span = logged.then(|| {
            tracing::info_span!(
                target: "locara::call",
                "call",
                tool = %tool,
                outcome = tracing::field::Empty,
            )
        });
        let result = match &span {
            Some(span) => tracing::Instrument::instrument(run(request), span.clone()).await,
            None => run(request).await,
        };
        let elapsed = started.elapsed();
        if let Some(metrics) = &self.metrics {
            metrics.record(&tool, elapsed, &result);
        }
        if logged {
            let report = match &result {
                Ok(response) => response.error.as_ref(),
                Err(error) => Some(error.report()),
            };
            let outcome = report.map_or("ok", |r| r.code.as_str());
            if let Some(span) = &span {
                span.record("outcome", outcome);
            }
            tracing::info!(
                target: "locara::call",
                tool = %tool,
                outcome,
                limit = report.and_then(|r| r.limit.as_deref()),
                ms = elapsed.as_secs_f64() * 1000.0,
                "call"
            );
        }
        result
    }

    /// Serves code mode (docs/code-mode.md) instead of one MCP tool per Locara tool: two tools,
    /// [`SEARCH_TOOLS`] (the catalog, with each tool's name in the programs' `locara.tools`
    /// and its input schema) and [`RUN_PROGRAM`] (a Python or JavaScript program, run by
    /// `code-exec.python` or `code-exec.js`, that calls tools through the gateway). A program
    /// can call tools only when the app grants `tools`.
    pub fn code_mode(mut self) -> LocaraMcp {
        self.tools = code_mode_tools().into();
        self.code_mode = true;
        self
    }

    /// Gives every call `dir` as its workspace (`/workspace`), for the tools that declare one.
    /// Whether they may use it, and how, is still the grants' decision. By default no call
    /// has a workspace.
    pub fn with_workspace(mut self, dir: impl Into<PathBuf>) -> LocaraMcp {
        self.workspace = Some(dir.into());
        self
    }

    /// The tools this handler lists, as MCP sees them.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// Runs a `tools/call`.
    ///
    /// # Errors
    /// Only when `name` is not a listed tool; every other failure is a result with
    /// `isError: true`.
    pub async fn call(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        match self.request(name, arguments)? {
            Prepared::Run(request) => {
                let result = self.measured(request, |r| self.locara.run(r)).await;
                Ok(call_result(result))
            }
            Prepared::Answered(result) => Ok(result),
        }
    }

    /// Runs a `tools/call` like [`call`](LocaraMcp::call), with `send` awaited for each
    /// progress report the tool makes, in order, every one before this returns.
    pub(crate) async fn call_with_progress<S, F>(
        &self,
        name: &str,
        arguments: JsonObject,
        send: S,
    ) -> Result<CallToolResult, ErrorData>
    where
        S: FnMut(Notice) -> F,
        F: Future<Output = ()>,
    {
        let request = match self.request(name, arguments)? {
            Prepared::Run(request) => request,
            Prepared::Answered(result) => return Ok(result),
        };
        let locara = &self.locara;
        let run =
            |request| progress::forwarding(|sink| locara.run_with_progress(request, sink), send);
        let result = self.measured(request, run).await;
        Ok(call_result(result))
    }

    /// The facade's request for a call of `name` (or, for [`SEARCH_TOOLS`], its answer); an
    /// error when no listed tool has that name.
    fn request(&self, name: &str, arguments: JsonObject) -> Result<Prepared, ErrorData> {
        if !self.tools.iter().any(|t| t.name == name) {
            let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_ref()).collect();
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{name}`; {}",
                    locara_manifest::available_list(name, &names)
                ),
                None,
            ));
        }
        let (tool, arguments) = if self.code_mode {
            match code_mode_request(&self.locara, name, arguments) {
                CodeMode::Program(tool, arguments) => (tool.to_owned(), arguments),
                CodeMode::Answered(answer) => return Ok(Prepared::Answered(answer)),
            }
        } else {
            (name.to_owned(), Value::Object(arguments))
        };
        let mut request = RunRequest::new(tool, arguments);
        if let Some(dir) = &self.workspace {
            request = request.with_workspace(dir);
        }
        Ok(Prepared::Run(request))
    }
}

/// What a `tools/call` becomes.
enum Prepared {
    /// A call of a Locara tool.
    Run(RunRequest),
    /// Answered already: a search, or a request refused before any tool ran.
    Answered(CallToolResult),
}

/// The two tools of code mode.
fn code_mode_tools() -> Vec<Tool> {
    let schema = |value: Value| match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    };
    let search = Tool::new(
        SEARCH_TOOLS,
        "Search the tools a program can call (run_program). Each result has the tool's `id`, \
what it does, its name in a program (`python`: locara.tools.NAME(**arguments), `javascript`: \
await locara.tools.NAME({...})) and its `input_schema`.",
        schema(serde_json::json!({
            "type": "object",
            "required": ["query"],
            "properties": {
                "query": {"type": "string", "description": "What the tool should do, e.g. \"split a PDF\"."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
            },
            "additionalProperties": false,
        })),
    )
    .with_annotations(ToolAnnotations::with_title("Search tools").read_only(true).destructive(false));
    let run = Tool::new(
        RUN_PROGRAM,
        "Run a short Python or JavaScript program that calls tools, instead of calling them one \
at a time. Python: `import locara`, then `r = locara.tools.pdf_split(source=...)` or \
`locara.call(\"pdf.split\", {...})`; `r.output` is the tool's JSON output, `r.files` the files \
it made (pass one on as another call's file argument). JavaScript: `const r = await \
locara.tools.pdfSplit({...})` or `await locara.call(\"pdf.split\", {...})`. A failed call raises \
locara.LocaraError with `code`, `message`, `hint`. Find tools with search_tools. The result has \
the program's stdout, stderr, exit_code, the value of its last expression, and the files it \
left in out/.",
        schema(serde_json::json!({
            "type": "object",
            "required": ["language", "code"],
            "properties": {
                "language": {"type": "string", "enum": ["python", "javascript"]},
                "code": {"type": "string", "description": "The program."},
                "stdin": {"type": "string", "description": "What the program reads on standard input."},
                "files": {
                    "type": "array",
                    "description": "Files placed in the working directory first: {\"path\", \"content\", \"encoding\": \"utf8\" | \"base64\"}.",
                    "items": {"type": "object"},
                },
            },
            "additionalProperties": false,
        })),
    )
    .with_annotations(ToolAnnotations::with_title("Run a program").read_only(false));
    vec![run, search]
}

/// What a code-mode call is.
enum CodeMode {
    /// A [`RUN_PROGRAM`] call: the code-exec tool to run, and its arguments.
    Program(&'static str, Value),
    /// The answer to a [`SEARCH_TOOLS`] call, or to a request that cannot run.
    Answered(CallToolResult),
}

fn code_mode_request(locara: &Locara, name: &str, mut arguments: JsonObject) -> CodeMode {
    let invalid = |message: String, pointer: &str| {
        let report = serde_json::json!({
            "code": "invalid_input",
            "message": message,
            "hint": "see the tool's input schema",
            "violations": [{"pointer": pointer, "constraint": "type", "message": "invalid"}],
        });
        CallToolResult::error(vec![ContentBlock::text(report.to_string())])
    };
    if name == SEARCH_TOOLS {
        let Some(query) = arguments.get("query").and_then(Value::as_str) else {
            return CodeMode::Answered(invalid("`query` must be a string".to_owned(), "/query"));
        };
        let limit = arguments
            .get("limit")
            .and_then(Value::as_u64)
            .unwrap_or(10)
            .clamp(1, 50);
        let hits: Vec<Value> = locara
            .search_tools(query, usize::try_from(limit).unwrap_or(10))
            .into_iter()
            .map(|hit| {
                let input_schema = locara
                    .describe(&hit.tool)
                    .map(|d| d.input_schema)
                    .unwrap_or(Value::Null);
                serde_json::json!({
                    "id": hit.id,
                    "tool": hit.tool,
                    "description": hit.description,
                    "safety_tier": hit.safety_tier,
                    "python": format!("locara.tools.{}", locara_facade::python_name(&hit.id)),
                    "javascript": format!("locara.tools.{}", locara_facade::javascript_name(&hit.id)),
                    "input_schema": input_schema,
                })
            })
            .collect();
        let tools = Value::Array(hits);
        let mut result = CallToolResult::success(vec![ContentBlock::text(tools.to_string())]);
        result.structured_content = Some(serde_json::json!({ "tools": tools }));
        return CodeMode::Answered(result);
    }
    let tool = match arguments
        .remove("language")
        .as_ref()
        .and_then(Value::as_str)
    {
        Some("python") => "code-exec.python",
        Some("javascript") => "code-exec.js",
        other => {
            return CodeMode::Answered(invalid(
                format!(
                    "`language` must be \"python\" or \"javascript\", not {}",
                    other.map_or_else(|| "missing".to_owned(), |l| format!("{l:?}"))
                ),
                "/language",
            ));
        }
    };
    CodeMode::Program(tool, Value::Object(arguments))
}

impl ServerHandler for LocaraMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("locara", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let Some(token) = context.meta.get_progress_token() else {
            return self.call(&request.name, arguments).await.map(Into::into);
        };
        // Sent from this task (not a spawned one): rmcp ties a notification to the request
        // being handled through a task-local, and the HTTP transport routes it by the token.
        let peer = &context.peer;
        let send = |notice: Notice| {
            let param = notice.into_param(token.clone());
            async move {
                if let Err(error) = peer.notify_progress(param).await {
                    tracing::debug!(%error, "progress notification not sent");
                }
            }
        };
        self.call_with_progress(&request.name, arguments, send)
            .await
            .map(Into::into)
    }
}

/// The newest version of each id: `list` sorts by id, then version.
fn newest(tools: Vec<ToolSummary>) -> Vec<ToolSummary> {
    let mut out: Vec<ToolSummary> = Vec::with_capacity(tools.len());
    for summary in tools {
        match out.last_mut() {
            Some(last) if last.id == summary.id => *last = summary,
            _ => out.push(summary),
        }
    }
    out
}

/// A tool as MCP lists it.
pub(crate) fn tool(description: &ToolDescription) -> Tool {
    let summary = &description.summary;
    let input_schema = match &description.input_schema {
        Value::Object(schema) => schema.clone(),
        _ => JsonObject::from_iter([("type".to_owned(), Value::from("object"))]),
    };
    let mut tool = Tool::new(
        summary.id.clone(),
        summary.description.clone(),
        Arc::new(input_schema),
    )
    .with_title(summary.display_name.clone())
    .with_annotations(annotations(summary));
    if let Value::Object(schema) = &description.output_schema
        && schema.get("type") == Some(&Value::from("object"))
    {
        tool = tool.with_raw_output_schema(Arc::new(schema.clone()));
    }
    tool
}

/// The hints a safety tier gives.
fn annotations(summary: &ToolSummary) -> ToolAnnotations {
    let annotations = ToolAnnotations::with_title(summary.display_name.clone());
    match summary.safety_tier.as_str() {
        "read_only" => annotations.read_only(true).destructive(false),
        "privileged" => annotations.read_only(false).destructive(true),
        _ => annotations.read_only(false),
    }
}

/// A call's outcome as an MCP tool result.
pub(crate) fn call_result(result: Result<RunResponse, locara_facade::Error>) -> CallToolResult {
    let response = match result {
        Ok(response) => response,
        Err(error) => return CallToolResult::error(vec![report_block(error.report())]),
    };
    if !response.ok {
        let mut content = Vec::new();
        if let Some(report) = &response.error {
            content.push(report_block(report));
        }
        if let Some(stderr) = response.stderr_beyond_error() {
            content.push(ContentBlock::text(format!("tool stderr:\n{stderr}")));
        }
        return CallToolResult::error(content);
    }
    let output = response.output.unwrap_or(Value::Null);
    let mut content = vec![ContentBlock::text(output.to_string())];
    content.extend(response.files.iter().filter_map(file_block));
    if let Some(t) = &response.truncated {
        content.push(ContentBlock::text(format!(
            "note: the output was cut from {} to {} bytes to fit the output cap",
            t.original_bytes, t.returned_bytes
        )));
    }
    let mut result = CallToolResult::success(content);
    if output.is_object() {
        result.structured_content = Some(output);
    }
    result
}

/// An error report as a text block of JSON.
fn report_block(report: &ErrorReport) -> ContentBlock {
    let text = serde_json::to_string(report)
        .unwrap_or_else(|e| format!("{{\"code\":\"internal\",\"message\":\"{e}\"}}"));
    ContentBlock::text(text)
}

/// A produced file as an embedded blob resource (none when it was written to disk).
fn file_block(file: &FileReport) -> Option<ContentBlock> {
    let blob = file.base64.clone()?;
    Some(ContentBlock::resource(
        ResourceContents::BlobResourceContents {
            uri: format!("locara://files/{}", file.name),
            mime_type: Some(mime_type(&file.name).to_owned()),
            blob,
            meta: None,
        },
    ))
}

/// The media type of a produced file, from its extension.
fn mime_type(name: &str) -> &'static str {
    let extension = name
        .rsplit_once('.')
        .map(|(_, e)| Cow::Owned(e.to_ascii_lowercase()))
        .unwrap_or(Cow::Borrowed(""));
    match extension.as_ref() {
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        "gif" => "image/gif",
        "bmp" => "image/bmp",
        "tif" | "tiff" => "image/tiff",
        "wav" => "audio/wav",
        "json" => "application/json",
        "txt" | "md" => "text/plain",
        _ => "application/octet-stream",
    }
}
