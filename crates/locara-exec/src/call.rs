//! The request and response types that flow through the pipeline.

use std::{future::Future, path::PathBuf, pin::Pin, time::Duration};

use locara_manifest::{EffectiveLimits, ToolManifest, ToolRef};
use locara_registry::{Digest, VerifiedArtifact};
use locara_sandbox::{DirPerms, EnforcedLimits, OutputFile};
use serde_json::Value;

use crate::{CallContext, HostTool, SchemaViolation};

/// A call as a host or an agent makes it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolCall {
    /// `id` or `id@version`, as given; [`ValidateId`](crate::ValidateId) parses it.
    pub tool: String,
    /// The tool's arguments: a JSON object checked against its `input_schema`.
    pub arguments: Value,
    /// The directory the user selected for this call, if any.
    ///
    /// The tool sees it at `/workspace` only if its manifest declares a user directory and the
    /// app granted a directory that contains this one.
    pub workspace: Option<PathBuf>,
    /// Who the call is for, its random seed and where its progress goes: the host's.
    pub context: CallContext,
}

impl ToolCall {
    /// A call of `tool` with `arguments`, no workspace and an empty context.
    pub fn new(tool: impl Into<String>, arguments: Value) -> ToolCall {
        ToolCall {
            tool: tool.into(),
            arguments,
            workspace: None,
            context: CallContext::default(),
        }
    }

    /// Sets the call's context (user, seed, progress).
    pub fn with_context(mut self, context: CallContext) -> ToolCall {
        self.context = context;
        self
    }

    /// Selects the directory the tool sees at `/workspace`.
    pub fn with_workspace(mut self, dir: impl Into<PathBuf>) -> ToolCall {
        self.workspace = Some(dir.into());
        self
    }
}

/// A call whose tool reference parsed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ParsedCall {
    /// The tool, with or without a version.
    pub tool: ToolRef,
    /// The arguments, unchecked.
    pub arguments: Value,
    /// The directory the user selected, unchecked.
    pub workspace: Option<PathBuf>,
    /// The host's context of the call.
    pub context: CallContext,
}

/// The tool a call resolved to: a signed wasm tool the registry verified, or a tool the host
/// registered in-process.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ResolvedTool {
    /// A verified wasm tool: its signed manifest and its wasm.
    Signed(VerifiedArtifact),
    /// An in-process tool.
    Host(HostTool),
}

impl ResolvedTool {
    /// The tool's manifest.
    pub fn manifest(&self) -> &ToolManifest {
        match self {
            ResolvedTool::Signed(artifact) => artifact.manifest(),
            ResolvedTool::Host(tool) => tool.manifest(),
        }
    }

    /// The digest that names this manifest: of its signed bytes, or of an in-process tool's
    /// canonical manifest.
    pub fn manifest_digest(&self) -> &Digest {
        match self {
            ResolvedTool::Signed(artifact) => artifact.manifest_digest(),
            ResolvedTool::Host(tool) => tool.digest(),
        }
    }
}

impl From<VerifiedArtifact> for ResolvedTool {
    fn from(artifact: VerifiedArtifact) -> ResolvedTool {
        ResolvedTool::Signed(artifact)
    }
}

impl From<HostTool> for ResolvedTool {
    fn from(tool: HostTool) -> ResolvedTool {
        ResolvedTool::Host(tool)
    }
}

/// A call whose tool was found and verified.
///
/// Every layer below [`Resolve`](crate::Resolve) works on this type, so nothing downstream
/// can see an unverified tool.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ResolvedCall {
    /// The tool: verified wasm, or registered in-process by the host.
    pub tool: ResolvedTool,
    /// The arguments; checked once [`ValidateInput`](crate::ValidateInput) passed.
    pub arguments: Value,
    /// The directory the user selected, unchecked.
    pub workspace: Option<PathBuf>,
    /// What the composition rule granted. Starts empty; only
    /// [`CheckCapabilities`](crate::CheckCapabilities) fills it in.
    pub grant: Grant,
    /// The verified models the tool depends on, named as its manifest names them (see
    /// [`Resolver::models`](crate::Resolver::models)); the tool sees them at `/models`.
    pub models: Option<PathBuf>,
    /// The host's context of the call.
    pub context: CallContext,
}

impl ResolvedCall {
    /// A call of a verified (or in-process) tool, with nothing granted yet.
    pub fn new(
        tool: impl Into<ResolvedTool>,
        arguments: Value,
        workspace: Option<PathBuf>,
    ) -> ResolvedCall {
        ResolvedCall {
            tool: tool.into(),
            arguments,
            workspace,
            grant: Grant::default(),
            models: None,
            context: CallContext::default(),
        }
    }

    /// Sets the call's context.
    pub fn with_context(mut self, context: CallContext) -> ResolvedCall {
        self.context = context;
        self
    }
}

/// What a call may touch beyond the sandbox's defaults.
///
/// It can only be built inside this crate, by [`CheckCapabilities`](crate::CheckCapabilities),
/// so the default, nothing, is what a call gets when the check did not run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grant {
    /// The workspace (canonical), the canonical directory of the grant it lies in, and what the
    /// tool may do there.
    pub(crate) workspace: Option<(PathBuf, PathBuf, DirPerms)>,
    /// The hosts `web.fetch` may reach: the tool's, bounded by the app's.
    pub(crate) hosts: Vec<String>,
    /// The addresses and ranges the app's grants name (never `*` or a name): a resolved
    /// address that is not public is reached only when one of these holds it, whatever the
    /// tool asked for.
    pub(crate) addresses: Vec<String>,
    /// Whether the tool may use `llm.chat`.
    pub(crate) llm: bool,
    /// Whether the tool may report progress (it declared `progress`, and the app granted it).
    pub(crate) progress: bool,
    /// Whether the tool may use the app's key-value store (`kv`).
    pub(crate) kv: bool,
    /// Whether the tool may search, describe and call tools through the gateway (`tools`: it
    /// declared it, and the app granted it).
    pub(crate) tools: bool,
    /// Whether the tool may run its models on the host (`models.run`: it declared it, and the
    /// app granted it).
    pub(crate) models: bool,
}

impl Grant {
    /// The hosts the tool may fetch from (`web.fetch`): what it asked for, bounded by the app.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// Whether the tool may ask the app's language model (`llm.chat`).
    pub fn llm(&self) -> bool {
        self.llm
    }

    /// Whether the tool may report progress.
    pub fn progress(&self) -> bool {
        self.progress
    }

    /// Whether the tool may use the app's key-value store.
    pub fn kv(&self) -> bool {
        self.kv
    }

    /// Whether the tool may search, describe and call tools through the gateway.
    pub fn tools(&self) -> bool {
        self.tools
    }

    /// The directory the tool sees at `/workspace`, and whether it may write there.
    pub fn workspace(&self) -> Option<(&PathBuf, DirPerms)> {
        self.workspace.as_ref().map(|(p, _, perms)| (p, *perms))
    }

    /// The app's granted directory the workspace lies in (canonical): the sandbox opens it and
    /// walks down to the workspace without following links.
    pub fn workspace_root(&self) -> Option<&PathBuf> {
        self.workspace.as_ref().map(|(_, root, _)| root)
    }
}

/// The result of a call that ran.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolResult {
    /// The tool that ran, always with its version.
    pub tool: ToolRef,
    /// The tool's JSON output, when it produced valid JSON.
    pub output: Option<Value>,
    /// Why the call failed, if it did.
    pub failure: Option<ToolFailure>,
    /// What the tool wrote to stderr (at most 64 KiB, lossy UTF-8).
    pub stderr: String,
    /// The files the tool produced (what it left in `/tmp/out`), sorted by name; empty when
    /// the call failed.
    pub files: Vec<OutputFile>,
    /// Set when [`CapOutput`](crate::CapOutput) cut the output.
    pub truncation: Option<Truncation>,
    /// How the call ran.
    pub stats: RunStats,
    /// For a privileged call: who approved it, and why.
    pub approval: Option<crate::ApprovalDecision>,
    /// Which signed tool ran, as the registry verified it.
    pub provenance: Provenance,
}

/// Which signed tool a call ran: the digests the registry checked and the key that signed it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Provenance {
    /// SHA-256 of the exact signed `manifest.json` bytes, 64 hex characters.
    pub manifest_sha256: String,
    /// SHA-256 of the wasm module, 64 hex characters.
    pub artifact_sha256: String,
    /// The id of the publisher key whose signature was checked.
    pub key_id: String,
}

impl ToolResult {
    /// Whether the call failed.
    pub fn is_error(&self) -> bool {
        self.failure.is_some()
    }
}

/// Why a call that ran failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolFailure {
    /// What kind of failure.
    pub kind: FailureKind,
    /// What happened, in a sentence.
    pub message: String,
    /// What the caller can do about it, in a sentence.
    pub hint: String,
    /// For [`FailureKind::InvalidOutput`]: where the output broke its schema.
    pub violations: Vec<SchemaViolation>,
}

/// The kinds of [`ToolFailure`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureKind {
    /// The tool reported an error: it exited with this non-zero code.
    ToolError {
        /// The exit code.
        exit_code: i32,
    },
    /// The tool exceeded a limit and was stopped; the name is the limit's, e.g. `fuel`.
    LimitExceeded {
        /// The limit's name.
        limit: &'static str,
    },
    /// The tool crashed (a trap, such as a panic).
    Crashed,
    /// The tool's output was not JSON, or broke its `output_schema`.
    InvalidOutput,
}

impl FailureKind {
    /// A stable snake_case name.
    pub fn name(&self) -> &'static str {
        match self {
            FailureKind::ToolError { .. } => "tool_error",
            FailureKind::LimitExceeded { .. } => "limit_exceeded",
            FailureKind::Crashed => "crashed",
            FailureKind::InvalidOutput => "invalid_output",
        }
    }
}

/// How much of the output [`CapOutput`](crate::CapOutput) removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Truncation {
    /// The output's size as the tool produced it, in bytes of compact JSON.
    pub original_bytes: usize,
    /// The size returned.
    pub returned_bytes: usize,
}

/// How a call ran.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunStats {
    /// Which engine ran it.
    pub engine: String,
    /// Wall-clock time in the sandbox, instantiation included.
    pub elapsed: Duration,
    /// Fuel consumed.
    pub fuel_consumed: u64,
    /// The limits the call ran under.
    pub limits: EffectiveLimits,
    /// How each limit was enforced on this engine.
    pub enforced: EnforcedLimits,
}

/// The future every pipeline service returns, and so the one each layer's inner service
/// must return: a layer that only checks a call on its way in hands its inner service's
/// future on as it is, rather than boxing it again.
pub type CallFuture =
    Pin<Box<dyn Future<Output = Result<ToolResult, crate::ExecError>> + Send + 'static>>;
