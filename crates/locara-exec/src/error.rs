//! The pipeline's one error type.

use std::fmt;

/// One way a JSON value broke its schema, written for an agent to correct itself.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchemaViolation {
    /// Where in the value, as a JSON pointer (`""` is the whole value, `/pages/0` the first
    /// item of `pages`).
    pub pointer: String,
    /// The schema keyword that failed (`required`, `type`, `maximum`, …) and where it is in the
    /// schema, e.g. `maximum at /properties/max_chars/maximum`.
    pub constraint: String,
    /// The validator's message, e.g. `2000000 is greater than the maximum of 1000000`.
    pub message: String,
}

impl fmt::Display for SchemaViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(f, "at {at}: {} ({})", self.message, self.constraint)
    }
}

fn list(violations: &[SchemaViolation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Why a call could not run.
///
/// Each variant's message says what is wrong; [`ExecError::hint`] says what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// The tool reference does not parse.
    #[error("invalid tool reference `{input}`: {reason}")]
    InvalidToolRef {
        /// What was given.
        input: String,
        /// Why it is invalid.
        reason: String,
    },
    /// The registry refused the tool: not found, not trusted, tampered with, or rolled back.
    #[error(transparent)]
    Registry(#[from] locara_registry::Error),
    /// The tool needs a capability the app did not grant.
    #[error("{tool} needs {capability}, which {reason}")]
    CapabilityDenied {
        /// The tool, `id@version`.
        tool: String,
        /// The capability, e.g. `a workspace directory`.
        capability: String,
        /// Why it is denied.
        reason: String,
    },
    /// The arguments broke the tool's input schema.
    #[error("invalid arguments for {tool}: {}", list(violations))]
    InvalidInput {
        /// The tool, `id@version`.
        tool: String,
        /// Every violation found.
        violations: Vec<SchemaViolation>,
    },
    /// The manifest's own schema is not a valid JSON Schema.
    #[error("the {which} of {tool} is not a valid JSON Schema: {message}")]
    InvalidSchema {
        /// The tool, `id@version`.
        tool: String,
        /// `input_schema`, `output_schema`, or `manifest` for an in-process tool's manifest.
        which: &'static str,
        /// What the schema compiler (or manifest validation) said.
        message: String,
    },
    /// A privileged call was not approved.
    #[error("{tool} is privileged and was not approved by {by}: {reason}")]
    ApprovalDenied {
        /// The tool, `id@version`.
        tool: String,
        /// Who decided (see [`ApprovalDecision::by`](crate::ApprovalDecision::by)).
        by: String,
        /// Why.
        reason: String,
    },
    /// The sandbox could not compile or start the module.
    #[error(transparent)]
    Sandbox(#[from] locara_sandbox::Error),
    /// The call was cancelled (its future was dropped), or the blocking task that ran it could
    /// not complete (the runtime is shutting down).
    #[error("the call was cancelled: {0}")]
    Cancelled(String),
}

impl ExecError {
    /// A stable snake_case name for the kind of error.
    pub fn code(&self) -> &'static str {
        match self {
            ExecError::InvalidToolRef { .. } => "invalid_tool_ref",
            ExecError::Registry(error) => registry_code(error),
            ExecError::CapabilityDenied { .. } => "capability_denied",
            ExecError::InvalidInput { .. } => "invalid_input",
            ExecError::InvalidSchema { .. } => "invalid_schema",
            ExecError::ApprovalDenied { .. } => "approval_denied",
            ExecError::Sandbox(_) => "sandbox",
            ExecError::Cancelled(_) => "cancelled",
        }
    }

    /// One sentence on what the caller can do next.
    pub fn hint(&self) -> String {
        match self {
            ExecError::InvalidToolRef { .. } => {
                "name a tool as `id` or `id@version`, e.g. `text.chunk@0.1.0`; search the catalog for ids".to_owned()
            }
            ExecError::Registry(error) => registry_hint(error).to_owned(),
            ExecError::CapabilityDenied { .. } => {
                "grant the capability in the app manifest (locara.json), or call a tool that does not need it"
                    .to_owned()
            }
            ExecError::InvalidInput { violations, .. } => match violations.first() {
                Some(v) => format!(
                    "fix the argument at {} ({}) and call again; describe the tool to see its input schema",
                    if v.pointer.is_empty() { "the top level" } else { &v.pointer },
                    v.constraint
                ),
                None => "describe the tool to see its input schema".to_owned(),
            },
            ExecError::InvalidSchema { .. } => "the tool's manifest is broken; report it to its publisher".to_owned(),
            ExecError::ApprovalDenied { .. } => "the call did not run; ask the user to approve it, or do the task with a tool of a lower safety tier".to_owned(),
            ExecError::Sandbox(_) => "the tool's module could not be started; try the other engine or rebuild it".to_owned(),
            ExecError::Cancelled(_) => "call again".to_owned(),
        }
    }
}

/// The code of a registry refusal: what an agent or a host branches on.
fn registry_code(error: &locara_registry::Error) -> &'static str {
    use locara_registry::Error as E;
    match error {
        E::ToolNotFound { .. } => "not_found",
        E::HashMismatch { .. } | E::SizeMismatch { .. } => "artifact_tampered",
        E::Unsigned { .. }
        | E::UnknownKey { .. }
        | E::BadSignature { .. }
        | E::KeyIdMismatch { .. }
        | E::IdentityMismatch { .. } => "untrusted",
        E::RevokedKey { .. } => "revoked",
        E::NotARegularFile { .. } | E::FileTooLarge { .. } => "home_file_refused",
        E::Rollback { .. } | E::LockMismatch { .. } => "lock_mismatch",
        E::ModelMissing { .. } => "model_missing",
        E::ModelMismatch { .. } => "model_tampered",
        _ => "registry",
    }
}

fn registry_hint(error: &locara_registry::Error) -> &'static str {
    match registry_code(error) {
        "not_found" => "search the catalog for the tool's id, or list the tools",
        "artifact_tampered" => {
            "the tool's files changed after they were signed: do not run it; rebuild it (`cargo xtask build-tools`) or reinstall it from its publisher"
        }
        "untrusted" => {
            "the tool is not signed by a trusted key: add its publisher's key to the trust store only if you trust them, or reinstall it"
        }
        "revoked" => {
            "the tool's publisher key was revoked (`locara trust list`): do not run it; install a build signed by the publisher's new key (docs/keys.md)"
        }
        "home_file_refused" => {
            "a file in the Locara home is not a regular file or is larger than it can be: replace it with the real file (`cargo xtask build-tools` or `locara publish` rewrites the tool's files)"
        }
        "lock_mismatch" => {
            "the lockfile pins another version or build: install that one, or update the lockfile deliberately (`locara publish` re-pins)"
        }
        "model_missing" => {
            "the tool's model files are not installed: run the `locara models fetch` command in the message, then call again"
        }
        "model_tampered" => {
            "a model file does not match the hash its tool pins: remove it and fetch it again with `locara models fetch`"
        }
        _ => "check the registry directory and the tool's files",
    }
}
