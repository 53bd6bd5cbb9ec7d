//! Tools the host implements in-process: a Rust async fn behind the same pipeline as wasm.
//!
//! A [`HostTool`] is a manifest (id, version, description, safety tier, input and output
//! schemas, wall-time and output limits) plus a [`ToolHandler`]. Every layer applies to it as to
//! a signed wasm tool: the reference, the composition rule (its tier, host services and
//! network hosts against the app's grants), the input schema, approval, the output cap and the
//! output schema. [`Execute`](crate::Execute) runs the handler on the runtime, under the
//! manifest's wall-time limit, and counts its output against the output limit.
//!
//! What the sandbox gives a wasm tool does not apply: a handler runs with the host's own
//! privileges, so registering one is the host vouching for it. It is never signed, gets no
//! workspace, temp dir or models, and consumes no fuel.

use std::{fmt, sync::Arc, time::Instant};

use locara_manifest::{Artifact, EffectiveLimits, ToolManifest, ToolName, Version};
use locara_registry::{Digest, canonical_json};
use locara_sandbox::EnforcedLimits;
use serde_json::Value;

use crate::{CallContext, ExecError, FailureKind, Provenance, RunStats, ToolFailure, ToolResult};

/// Why a handler failed: what happened, and what the caller can do about it. It becomes a
/// `tool_error` result, like a wasm tool's non-zero exit.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandlerError {
    /// What happened, in a sentence.
    pub message: String,
    /// What the caller can do about it.
    pub hint: String,
}

impl HandlerError {
    /// A failure with `message` and `hint`.
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> HandlerError {
        HandlerError {
            message: message.into(),
            hint: hint.into(),
        }
    }
}

/// The code of an in-process tool.
#[async_trait::async_trait]
pub trait ToolHandler: Send + Sync + fmt::Debug + 'static {
    /// Runs the tool on `arguments`, already valid against its input schema, for the call
    /// described by `context` (its user, seed and progress sink, set by the host). The output
    /// is checked against the output schema and capped afterwards.
    async fn call(&self, arguments: Value, context: &CallContext) -> Result<Value, HandlerError>;
}

/// An in-process tool: its manifest and its handler.
#[derive(Debug, Clone)]
pub struct HostTool {
    manifest: Arc<ToolManifest>,
    digest: Digest,
    handler: Arc<dyn ToolHandler>,
}

/// The `artifact.url` of every in-process tool's manifest.
pub const HOST_TOOL_URL: &str = "host:in-process";

impl HostTool {
    /// A tool described by `manifest` and implemented by `handler`.
    ///
    /// The manifest's `artifact` is replaced: it names no module but pins the manifest itself
    /// (`url` [`HOST_TOOL_URL`], `sha256` of the canonical JSON of the rest of the manifest,
    /// size 0), so receipts and schema caches can tell versions apart. Only its wall-time and
    /// output limits apply.
    ///
    /// # Errors
    /// [`ExecError::InvalidSchema`] when the manifest does not validate (schemas that are not
    /// objects, limits above the maxima, …).
    pub fn new(
        manifest: ToolManifest,
        handler: Arc<dyn ToolHandler>,
    ) -> Result<HostTool, ExecError> {
        let mut manifest = manifest;
        let tool = manifest_ref(&manifest);
        let invalid = |e: locara_manifest::Error| ExecError::InvalidSchema {
            tool: tool.clone(),
            which: "manifest",
            message: e.to_string(),
        };
        let mut body = serde_json::to_value(&manifest).map_err(|e| ExecError::InvalidSchema {
            tool: tool.clone(),
            which: "manifest",
            message: e.to_string(),
        })?;
        if let Some(fields) = body.as_object_mut() {
            fields.remove("artifact");
        }
        let digest = Digest::of(&canonical_json(&body));
        manifest.artifact = Artifact::new(HOST_TOOL_URL, digest.to_sha256_hex(), 0);
        manifest.validate().map_err(invalid)?;
        Ok(HostTool {
            manifest: Arc::new(manifest),
            digest,
            handler,
        })
    }

    /// A manifest for an in-process tool `id@version`, to fill in with `ToolManifest`'s `with_*`
    /// methods (description, tier, limits, schemas); its `artifact` is a placeholder that
    /// [`HostTool::new`] replaces.
    pub fn manifest_template(id: ToolName, version: Version) -> ToolManifest {
        ToolManifest::new(
            id,
            version,
            Artifact::new(HOST_TOOL_URL, Digest::of(b"").to_sha256_hex(), 0),
        )
    }

    /// Its manifest.
    pub fn manifest(&self) -> &ToolManifest {
        &self.manifest
    }

    /// SHA-256 of its manifest's canonical JSON (without the artifact).
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// Its handler.
    pub fn handler(&self) -> &Arc<dyn ToolHandler> {
        &self.handler
    }
}

fn manifest_ref(manifest: &ToolManifest) -> String {
    manifest.tool_ref().to_string()
}

/// The name results give the engine of an in-process tool.
pub const HOST_ENGINE: &str = "in-process";

/// Aborts the handler's task when the call's future is dropped, as dropping a wasm call's
/// future stops it in the sandbox.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs `tool`'s handler under `limits` (wall time and output size).
pub(crate) async fn run(
    tool: HostTool,
    arguments: Value,
    context: CallContext,
    limits: EffectiveLimits,
) -> Result<ToolResult, ExecError> {
    let started = Instant::now();
    let name = tool.manifest().tool_ref();
    let handler = Arc::clone(tool.handler());
    // A task of its own: a panic in the handler is caught as a `JoinError`, not unwound
    // through the pipeline.
    let task = tokio::spawn(async move { handler.call(arguments, &context).await });
    let _abort = AbortOnDrop(task.abort_handle());
    let failure = |kind, message: String, hint: &str| ToolFailure {
        kind,
        message,
        hint: hint.to_owned(),
        violations: Vec::new(),
    };
    let (output, failure) = match tokio::time::timeout(limits.wall_time, task).await {
        Err(_) => (
            None,
            Some(failure(
                FailureKind::LimitExceeded { limit: "wall_time" },
                format!(
                    "{name} exceeded its wall_time limit ({} ms) and was stopped",
                    limits.wall_time.as_millis()
                ),
                "the input is probably too large for one call: split it into smaller calls",
            )),
        ),
        Ok(Err(join)) => (
            None,
            Some(failure(
                FailureKind::Crashed,
                format!("{name} crashed: {join}"),
                "this is a bug in the host's tool; try other arguments or report it",
            )),
        ),
        Ok(Ok(Err(error))) => (
            None,
            Some(ToolFailure {
                kind: FailureKind::ToolError { exit_code: 1 },
                message: error.message,
                hint: error.hint,
                violations: Vec::new(),
            }),
        ),
        Ok(Ok(Ok(value))) => {
            let size = serde_json::to_vec(&value).map_or(usize::MAX, |v| v.len());
            if u64::try_from(size).unwrap_or(u64::MAX) > limits.output_bytes {
                (
                    None,
                    Some(failure(
                        FailureKind::LimitExceeded {
                            limit: "output_bytes",
                        },
                        format!(
                            "{name} exceeded its output_bytes limit ({} bytes): it returned {size} bytes",
                            limits.output_bytes
                        ),
                        "ask for less at once: narrow the request or split it into smaller calls",
                    )),
                )
            } else {
                (Some(value), None)
            }
        }
    };
    Ok(ToolResult {
        tool: name,
        output,
        failure,
        stderr: String::new(),
        files: Vec::new(),
        truncation: None,
        stats: RunStats {
            engine: HOST_ENGINE.to_owned(),
            elapsed: started.elapsed(),
            fuel_consumed: 0,
            limits,
            enforced: EnforcedLimits::EXACT,
        },
        approval: None,
        provenance: Provenance {
            manifest_sha256: tool.digest().to_hex(),
            artifact_sha256: String::new(),
            key_id: String::new(),
        },
    })
}
