//! The facade's request and response types: plain data that serializes to the JSON agents see.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RunRequest {
    /// `id` or `id@version`.
    pub tool: String,
    /// The tool's arguments (a JSON object).
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// The directory the tool sees at `/workspace`, when it declares one and the app granted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<PathBuf>,
    /// Where to write the files the tool produces; it must be inside a directory the app
    /// granted read-write. Without one, the files come back in the response as base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_dir: Option<PathBuf>,
    /// Ask for a signed receipt of the call in [`RunResponse::receipt`]; the host must have a
    /// receipt key ([`LocaraConfig::with_receipt_key`](crate::LocaraConfig::with_receipt_key)).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub receipt: bool,
    /// The user the call is made for, which per-user tools (memory) are scoped by; without
    /// one, the host's ([`LocaraConfig::with_user`](crate::LocaraConfig::with_user)). Set by
    /// the host, never taken from a model's tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Seeds the tool's random numbers so the call can be repeated exactly (on either
    /// engine); without one they are cryptographically random.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

impl RunRequest {
    /// A call of `tool` with `arguments`.
    pub fn new(tool: impl Into<String>, arguments: Value) -> RunRequest {
        RunRequest {
            tool: tool.into(),
            arguments,
            workspace: None,
            output_dir: None,
            receipt: false,
            user: None,
            seed: None,
        }
    }

    /// Makes the call for `user`.
    pub fn with_user(mut self, user: impl Into<String>) -> RunRequest {
        self.user = Some(user.into());
        self
    }

    /// Seeds the tool's random numbers.
    pub fn with_seed(mut self, seed: u64) -> RunRequest {
        self.seed = Some(seed);
        self
    }

    /// Asks for a signed receipt of the call.
    pub fn with_receipt(mut self) -> RunRequest {
        self.receipt = true;
        self
    }

    /// Writes the files the tool produces into `dir` instead of returning their bytes.
    pub fn with_output_dir(mut self, dir: impl Into<PathBuf>) -> RunRequest {
        self.output_dir = Some(dir.into());
        self
    }

    /// Selects the directory the tool sees at `/workspace`.
    pub fn with_workspace(mut self, dir: impl Into<PathBuf>) -> RunRequest {
        self.workspace = Some(dir.into());
        self
    }
}

/// What a call produced. A tool that ran and failed is a response with `ok: false` and an
/// `error`; only a call that could not run at all is an [`Error`](crate::Error).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunResponse {
    /// The tool that ran, `id@version`.
    pub tool: String,
    /// Whether the tool succeeded.
    pub ok: bool,
    /// The tool's output, when it succeeded (and sometimes when its output broke its schema).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Why the tool failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorReport>,
    /// What the tool wrote to stderr.
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub stderr: String,
    /// The files the tool produced, by the names its output gives them.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub files: Vec<FileReport>,
    /// Set when the output was cut to fit the output cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<TruncationReport>,
    /// How the call ran.
    pub stats: StatsReport,
    /// For a privileged call: who approved it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub approval: Option<ApprovalReport>,
    /// The signed receipt, when the request asked for one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub receipt: Option<locara_registry::SignedReceipt>,
    /// The tool calls the tool made through the gateway (a code-exec program calling tools),
    /// in the order they ended; each one ran through the whole pipeline.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub calls: Vec<InnerCallReport>,
}

impl RunResponse {
    /// What the tool wrote to stderr, when it says more than the error report: a tool's
    /// one-line error is usually the report's message already.
    pub fn stderr_beyond_error(&self) -> Option<&str> {
        let stderr = self.stderr.trim_end();
        let repeated = self
            .error
            .as_ref()
            .is_some_and(|r| r.message.trim_end() == stderr);
        (!stderr.is_empty() && !repeated).then_some(stderr)
    }
}

/// An approver's decision on a privileged call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ApprovalReport {
    /// Whether the call was allowed to run.
    pub approved: bool,
    /// Who decided: `terminal`, `--yes`, `policy FILE`, or the host's own name.
    pub by: String,
    /// Why.
    pub reason: String,
}

/// What a signed receipt attests to: which signed tool ran on which input, what came out,
/// under which limits, who approved it, and when. The hashes are SHA-256 of the canonical
/// JSON (compact, keys sorted) of the arguments and of the output as returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Receipt {
    /// `locara.receipt/1`.
    pub format: String,
    /// The tool, `id@version`.
    pub tool: String,
    /// SHA-256 of the tool's signed `manifest.json` bytes.
    pub manifest_sha256: String,
    /// SHA-256 of its wasm module.
    pub artifact_sha256: String,
    /// The publisher key whose signature the registry checked.
    pub publisher_key_id: String,
    /// SHA-256 of the canonical JSON of the arguments, as the caller gave them.
    pub input_sha256: String,
    /// SHA-256 of the canonical JSON of the output returned, when there was one.
    pub output_sha256: Option<String>,
    /// The files the tool produced.
    pub files: Vec<ReceiptFile>,
    /// Whether the tool succeeded.
    pub ok: bool,
    /// The error code when it did not (`tool_error`, `limit_exceeded`, …).
    pub error_code: Option<String>,
    /// The limits the call ran under.
    pub limits: LimitsReport,
    /// The approval of a privileged call.
    pub approval: Option<ApprovalReport>,
    /// The engine.
    pub engine: String,
    /// When the host received the call, in milliseconds since the Unix epoch.
    pub started_at_unix_ms: u64,
    /// How long the whole call took in the host, in milliseconds.
    pub duration_ms: f64,
    /// How long the tool ran in the sandbox, in milliseconds.
    pub sandbox_ms: f64,
    /// Fuel consumed.
    pub fuel_consumed: u64,
}

/// A file in a [`Receipt`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ReceiptFile {
    /// Its name.
    pub name: String,
    /// Its size in bytes.
    pub size_bytes: u64,
    /// Its SHA-256.
    pub sha256: String,
}

/// Calls to run as one batch: the read-only ones concurrently, the others one at a time, in
/// order (see [`Locara::run_batch`](crate::Locara::run_batch)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct BatchRequest {
    /// The calls.
    pub calls: Vec<RunRequest>,
}

impl BatchRequest {
    /// A batch of `calls`.
    pub fn new(calls: Vec<RunRequest>) -> BatchRequest {
        BatchRequest { calls }
    }
}

/// What a batch produced: one result per call, in the order of the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BatchResponse {
    /// Whether every call ran and succeeded.
    pub ok: bool,
    /// One per call, in order.
    pub results: Vec<BatchResult>,
}

/// One call of a batch: its response, or why it could not run (e.g. `approval_denied`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BatchResult {
    /// The tool as requested.
    pub tool: String,
    /// `read_only` calls ran concurrently with their read-only neighbours; the others alone.
    pub safety_tier: Option<String>,
    /// The response, when the call ran.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub response: Option<RunResponse>,
    /// Why the call could not run.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<ErrorReport>,
}

/// A file a tool produced: written to the request's output directory, or returned inline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FileReport {
    /// The file's name, as the tool's output names it.
    pub name: String,
    /// Its size in bytes.
    pub size_bytes: u64,
    /// Its SHA-256, 64 lowercase hex characters.
    pub sha256: String,
    /// Where it was written, when the request named an output directory. An existing file is
    /// never overwritten: the name gets a `-1`, `-2`, … suffix before its extension instead.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub path: Option<PathBuf>,
    /// Its bytes in standard base64, when the request named no output directory.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub base64: Option<String>,
}

/// A tool call a tool made through the gateway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct InnerCallReport {
    /// The tool called: `id@version` when it ran, as the program named it when it did not.
    pub tool: String,
    /// Whether it ran and succeeded.
    pub ok: bool,
    /// When it did not: the error's code (`limit_exceeded`, `capability_denied`, …).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
    /// Its signed receipt, when the outer call asked for one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub receipt: Option<locara_registry::SignedReceipt>,
    /// The host's time on it, in milliseconds: from the gateway taking the program's request
    /// to the answer's JSON written (the tool's run and the whole pipeline around it, or the
    /// refusal). The program's own work (encoding the request, reading the answer) is not in
    /// it, which is what an inner call costs beyond this.
    #[serde(default)]
    pub elapsed_ms: f64,
}

/// An error, as an agent sees it: what failed, where, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ErrorReport {
    /// A stable snake_case code, e.g. `invalid_input`, `limit_exceeded`, `tool_error`.
    pub code: String,
    /// What happened.
    pub message: String,
    /// What to do next.
    pub hint: String,
    /// For schema errors: each violation with its JSON pointer and constraint.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub violations: Vec<ViolationReport>,
    /// For `limit_exceeded`: the limit's name (`fuel`, `memory`, `wall_time`, `output_bytes`, `max_fds`, `temp_bytes`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub limit: Option<String>,
    /// For `tool_error`: the tool's exit code.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub exit_code: Option<i32>,
}

/// One schema violation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ViolationReport {
    /// A JSON pointer into the value (`""` is the whole value).
    pub pointer: String,
    /// The keyword that failed and where it is in the schema.
    pub constraint: String,
    /// The validator's message.
    pub message: String,
}

/// How much output was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TruncationReport {
    /// The output's size as produced, in bytes of compact JSON.
    pub original_bytes: usize,
    /// The size returned.
    pub returned_bytes: usize,
}

/// How a call ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StatsReport {
    /// `wasmtime` or `wasmi`.
    pub engine: String,
    /// Time in the sandbox, in milliseconds.
    pub elapsed_ms: f64,
    /// Fuel consumed.
    pub fuel_consumed: u64,
    /// The limits applied, and how each was enforced on this engine.
    pub limits: LimitsReport,
}

/// The limits a call ran under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LimitsReport {
    /// Memory, in bytes.
    pub memory_bytes: u64,
    /// Wall-clock time, in milliseconds.
    pub wall_time_ms: u64,
    /// Fuel.
    pub fuel: u64,
    /// Output, in bytes.
    pub output_bytes: u64,
    /// Open file descriptors.
    pub max_fds: u32,
    /// What the temp dir may hold, in bytes.
    pub temp_bytes: u64,
    /// Limits enforced only periodically: `wall_time` when fuel is metered (both engines
    /// check it between fuel slices, about a millisecond of work, and at host calls). Empty
    /// when every limit is exact (Wasmtime without fuel metering, whose epochs stop the guest
    /// wherever it is).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub periodic: Vec<String>,
    /// Limits not enforced on this call: `fuel` when the host runs Wasmtime without metering
    /// it ([`LocaraConfig::meter_fuel`](crate::LocaraConfig::meter_fuel)), where `wall_time`
    /// bounds the call instead. Empty when every limit is enforced.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub not_enforced: Vec<String>,
}

/// A chain of calls: a small orchestration language (docs/chains.md). Each step's arguments
/// may bind earlier results (`{"$ref": "steps.N.output.field"}`, or `{"$ref":
/// "ID.output.field"}` for a step with an `id`); a step may run only `when` a condition holds,
/// and `for_each` item of an array.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ChainRequest {
    /// The steps, run in order.
    pub steps: Vec<ChainStep>,
    /// The most tool calls the chain may make (every `for_each` item counts); by default 64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_calls: Option<u32>,
    /// How long the whole chain may take, in milliseconds; by default 600,000 (10 minutes). A
    /// call still running then is cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_time_ms: Option<u64>,
}

impl ChainRequest {
    /// A chain of `steps` (calls, or [`ChainStep`]s), with the default limits.
    pub fn new<S: Into<ChainStep>>(steps: impl IntoIterator<Item = S>) -> ChainRequest {
        ChainRequest {
            steps: steps.into_iter().map(Into::into).collect(),
            max_calls: None,
            wall_time_ms: None,
        }
    }

    /// Sets the most tool calls the chain may make.
    pub fn with_max_calls(mut self, calls: u32) -> ChainRequest {
        self.max_calls = Some(calls);
        self
    }

    /// Sets how long the whole chain may take.
    pub fn with_wall_time_ms(mut self, ms: u64) -> ChainRequest {
        self.wall_time_ms = Some(ms);
        self
    }
}

/// One step of a chain: a call, with what decides whether and how often it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ChainStep {
    /// A name later steps refer to it by (`{"$ref": "ID.output…"}`): letters, digits and `_`,
    /// starting with a letter, unique in the chain, not `steps` nor the `as` of any step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `id` or `id@version`.
    pub tool: String,
    /// The tool's arguments; any `{"$ref": …}` in them is bound before the step runs.
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// The directory the tool sees at `/workspace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<PathBuf>,
    /// Ask for a signed receipt of each call of the step.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub receipt: bool,
    /// The step runs only when this condition holds: `true`/`false`, `{"$ref"}` (a bound
    /// value that is not `null`, `false`, `0`, `""`, `[]` or `{}`), `{"exists": REF}`,
    /// `{"eq"|"ne"|"lt"|"le"|"gt"|"ge": [A, B]}` (each side a value or a `{"$ref"}`),
    /// `{"and": [...]}`, `{"or": [...]}`, `{"not": C}`. A skipped step's output is `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<Value>,
    /// The step runs once per item of this array (a `{"$ref"}` or a literal), the item bound
    /// as `{"$ref": AS…}`. Its output is the array of the items' outputs. The items of a
    /// read-only tool run concurrently; any other tool's, one after another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_each: Option<Value>,
    /// The name the `for_each` item is bound to; by default `item`.
    #[serde(default, rename = "as", skip_serializing_if = "Option::is_none")]
    pub item_name: Option<String>,
}

impl ChainStep {
    /// A step that calls `tool` with `arguments`.
    pub fn new(tool: impl Into<String>, arguments: Value) -> ChainStep {
        ChainStep::from(RunRequest::new(tool, arguments))
    }

    /// Names the step.
    pub fn with_id(mut self, id: impl Into<String>) -> ChainStep {
        self.id = Some(id.into());
        self
    }

    /// Runs the step only when `condition` holds.
    pub fn when(mut self, condition: Value) -> ChainStep {
        self.when = Some(condition);
        self
    }

    /// Runs the step once per item of `items`, bound as `name`.
    pub fn for_each(mut self, items: Value, name: impl Into<String>) -> ChainStep {
        self.for_each = Some(items);
        self.item_name = Some(name.into());
        self
    }

    /// Selects the directory the tool sees at `/workspace`.
    pub fn with_workspace(mut self, dir: impl Into<PathBuf>) -> ChainStep {
        self.workspace = Some(dir.into());
        self
    }
}

impl From<RunRequest> for ChainStep {
    fn from(request: RunRequest) -> ChainStep {
        ChainStep {
            id: None,
            tool: request.tool,
            arguments: request.arguments,
            workspace: request.workspace,
            receipt: request.receipt,
            when: None,
            for_each: None,
            item_name: None,
        }
    }
}

/// What a chain produced: every call it made, in order. The chain stops at the first step
/// that fails; `failed_step` says which.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChainResponse {
    /// Whether every step succeeded.
    pub ok: bool,
    /// The calls that ran, in order (a `for_each` step's items in item order).
    pub steps: Vec<RunResponse>,
    /// The index of the step that failed or could not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_step: Option<usize>,
    /// Why a step could not run at all (bad binding, unknown tool, invalid arguments, a
    /// chain limit…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorReport>,
    /// Each step the chain reached, in order: whether it ran or was skipped, and which of
    /// `steps` are its calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trace: Vec<StepTrace>,
}

/// What became of one step of a chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StepTrace {
    /// The step's index.
    pub step: usize,
    /// Its `id`, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Whether its `when` was false, so it did not run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
    /// The indices in [`ChainResponse::steps`] of its calls.
    #[serde(default)]
    pub calls: Vec<usize>,
}

/// A tool in a listing or a search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolSummary {
    /// `id@version`.
    pub tool: String,
    /// The tool's id.
    pub id: String,
    /// Its version.
    pub version: String,
    /// A human name.
    pub display_name: String,
    /// What it does.
    pub description: String,
    /// `read_only`, `side_effecting` or `privileged`.
    pub safety_tier: String,
    /// The search score, in search results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

/// Everything an agent needs to call a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolDescription {
    /// The summary.
    #[serde(flatten)]
    pub summary: ToolSummary,
    /// The license of the tool.
    pub license: String,
    /// The JSON Schema of the arguments.
    pub input_schema: Value,
    /// The JSON Schema of the output.
    pub output_schema: Value,
    /// What the tool may touch: its `wasi_imports` and capability requirements.
    pub capabilities: Value,
    /// The limits it asks for.
    pub limits: Value,
    /// The sha256 of its wasm (empty for an in-process tool).
    pub artifact_sha256: String,
    /// What runs it: `wasm` (a signed module in the sandbox) or `in_process` (the host's own
    /// code).
    pub backend: String,
}
