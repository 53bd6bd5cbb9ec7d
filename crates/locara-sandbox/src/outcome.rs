//! What a call produced.

use std::time::Duration;

use crate::{EnforcedLimits, LimitKind};

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunStatus {
    /// The guest exited (returned from `_start`, which is exit code 0, or called `proc_exit`).
    Exited(i32),
    /// The call exceeded a limit and was stopped.
    LimitExceeded(LimitKind),
    /// The guest trapped (a panic in a Rust tool, `unreachable`, an out-of-bounds access, a
    /// stack overflow). The message is the engine's, without engine types.
    Trapped(String),
    /// The call was cancelled through its [`CancelToken`](crate::CancelToken).
    Cancelled,
    /// The guest exited with code 0, but the host refused what it left to collect: the
    /// collected directory (see [`Capabilities::collecting`](crate::Capabilities::collecting))
    /// or one of its parents is a symbolic link or not a directory. The host follows no link
    /// out of the temp dir, so the call returns no files. The message says what was found.
    OutputRefused(String),
}

impl RunStatus {
    /// Whether the call exited with code 0.
    pub fn is_success(&self) -> bool {
        matches!(self, RunStatus::Exited(0))
    }
}

/// Everything a call produced.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunOutcome {
    /// How the call ended.
    pub status: RunStatus,
    /// What the guest wrote to stdout (never more than [`Limits::output_bytes`](crate::Limits::output_bytes)).
    pub stdout: Vec<u8>,
    /// The first 64 KiB the guest wrote to stderr.
    pub stderr: Vec<u8>,
    /// Whether stderr was cut to 64 KiB.
    pub stderr_truncated: bool,
    /// Fuel consumed by the call.
    pub fuel_consumed: u64,
    /// Wall-clock time of the call, instantiation included.
    pub elapsed: Duration,
    /// How each limit was enforced on this engine.
    pub enforced: EnforcedLimits,
    /// The files collected from the temp dir (see
    /// [`Capabilities::collecting`](crate::Capabilities::collecting)), sorted by path.
    pub files: Vec<OutputFile>,
}

/// A file a call left in the directory its host collects.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutputFile {
    /// Its path relative to the collected directory, `/`-separated.
    pub path: String,
    /// Its contents.
    pub bytes: Vec<u8>,
}
