//! What the host says about a call beyond its tool and arguments: who it is for, how its
//! randomness is seeded, where its progress goes, and who answers its tool calls.
//!
//! The context is set by the host (the facade from `RunRequest` and `LocaraConfig`, the CLI
//! from `--user` and `--seed`, the MCP server from its session), never by a tool's arguments:
//! a model can choose arguments, but not whose memory it reads.

use std::{fmt, sync::Arc};

use crate::ToolGateway;

/// The host's side of a call.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CallContext {
    /// The user the call is made for: what per-user state (memory) is scoped by. `None` when
    /// the host named nobody; a tool that needs a user then refuses the call.
    pub user: Option<String>,
    /// The seed of the call's random numbers (WASI `random_get`), so a run can be repeated
    /// exactly; `None` keeps them cryptographic.
    pub seed: Option<u64>,
    /// Where the tool's progress reports go, if anyone is listening.
    pub progress: Option<ProgressSink>,
    /// Where the tool's `tools` requests go (a code-exec program calling tools), when the host
    /// serves them; see [`ToolGateway`].
    pub gateway: Option<ToolGateway>,
}

impl CallContext {
    /// No user, no seed, nobody listening.
    pub fn new() -> CallContext {
        CallContext::default()
    }

    /// Sets the user the call is for.
    pub fn with_user(mut self, user: impl Into<String>) -> CallContext {
        self.user = Some(user.into());
        self
    }

    /// Seeds the call's random numbers.
    pub fn with_seed(mut self, seed: u64) -> CallContext {
        self.seed = Some(seed);
        self
    }

    /// Sends the tool's progress reports to `sink`.
    pub fn with_progress(mut self, sink: ProgressSink) -> CallContext {
        self.progress = Some(sink);
        self
    }

    /// Sends the tool's `tools` requests through `gateway`.
    pub fn with_gateway(mut self, gateway: ToolGateway) -> CallContext {
        self.gateway = Some(gateway);
        self
    }
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext")
            .field("user", &self.user)
            .field("seed", &self.seed)
            .field("progress", &self.progress.is_some())
            .field("gateway", &self.gateway.is_some())
            .finish()
    }
}

/// Receives a call's progress reports, on the thread that runs the tool: it should return
/// quickly (hand the report to a channel, render a line), since the tool waits for it.
pub type ProgressSink = Arc<dyn Fn(&Progress) + Send + Sync>;

/// One progress report of a running tool.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// The tool reporting, `id@version`.
    pub tool: String,
    /// The task, numbered from 1 in the order the tool started them.
    pub task: u32,
    /// What the task does, as the tool named it when it started it.
    pub title: String,
    /// What happened.
    pub event: ProgressEvent,
}

impl Progress {
    /// A report of `tool`'s task number `task`, titled `title`.
    pub fn new(
        tool: impl Into<String>,
        task: u32,
        title: impl Into<String>,
        event: ProgressEvent,
    ) -> Progress {
        Progress {
            tool: tool.into(),
            task,
            title: title.into(),
            event,
        }
    }
}

/// What a [`Progress`] report says.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ProgressEvent {
    /// The task started; `total` is how many steps it will take, when the tool knows.
    Started {
        /// The number of steps, if known.
        total: Option<u64>,
    },
    /// The task advanced: `done` steps of `total` so far.
    Step {
        /// Steps done so far (never decreasing).
        done: u64,
        /// The number of steps, if known.
        total: Option<u64>,
        /// What the step was, if the tool said.
        message: Option<String>,
    },
    /// The task ended.
    Done {
        /// Steps done.
        done: u64,
        /// What the task did, if the tool said.
        summary: Option<String>,
    },
}
