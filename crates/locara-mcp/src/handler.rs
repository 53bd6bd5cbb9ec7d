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

use std::{borrow::Cow, future::Future, path::PathBuf, sync::Arc};

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
}

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
        }
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
        let request = self.request(name, arguments)?;
        Ok(call_result(self.locara.run(request).await))
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
        let request = self.request(name, arguments)?;
        let locara = &self.locara;
        let result =
            progress::forwarding(|sink| locara.run_with_progress(request, sink), send).await;
        Ok(call_result(result))
    }

    /// The facade's request for a call of `name`; an error when no listed tool has that name.
    fn request(&self, name: &str, arguments: JsonObject) -> Result<RunRequest, ErrorData> {
        if !self.tools.iter().any(|t| t.name == name) {
            let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_ref()).collect();
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{name}`; available: {}", names.join(", ")),
                None,
            ));
        }
        let mut request = RunRequest::new(name, Value::Object(arguments));
        if let Some(dir) = &self.workspace {
            request = request.with_workspace(dir);
        }
        Ok(request)
    }
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
