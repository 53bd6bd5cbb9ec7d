//! The tool gateway: how a running tool (a code-exec program) asks its host to search, describe
//! and call other tools ([`TOOLS`]).
//!
//! Exec only carries the requests: a call whose [`CallContext`](crate::CallContext) holds a
//! [`ToolGateway`], and whose tool declares `tools` in an app that grants it, has its `tools`
//! requests answered by the gateway's function (the facade's, which runs each inner call through
//! the whole pipeline, with the app's grants, and bounds them: calls, nesting depth, output).
//! The answer's future runs on the requesting guest's own thread, where the guest waits anyway,
//! raced against the call's deadline and cancel token like any host service: an inner call
//! costs no hop to another thread and back, and it is dropped (so cancelled in its sandbox) as
//! soon as the outer call ends.

use std::{fmt, future::Future, pin::Pin, sync::Arc};

use serde_json::Value;

/// The host service that searches, describes and calls tools.
pub const TOOLS: &str = "tools";

/// The answer to one `tools` request: its JSON text, or a message saying why there is none.
pub type GatewayAnswer = Pin<Box<dyn Future<Output = Result<Vec<u8>, String>> + Send>>;

type Answerer = dyn Fn(Value) -> GatewayAnswer + Send + Sync;

/// What answers the `tools` requests of a call, put in its [`CallContext`](crate::CallContext).
#[derive(Clone)]
pub struct ToolGateway {
    answer: Arc<Answerer>,
}

impl ToolGateway {
    /// A gateway that answers each request (`{"op": "call", …}`) with `answer`'s future.
    pub fn new(answer: impl Fn(Value) -> GatewayAnswer + Send + Sync + 'static) -> ToolGateway {
        ToolGateway {
            answer: Arc::new(answer),
        }
    }

    /// The answer to `request`, as a future of its own (it borrows nothing).
    pub(crate) fn ask(&self, request: Value) -> GatewayAnswer {
        (self.answer)(request)
    }
}

impl fmt::Debug for ToolGateway {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolGateway").finish_non_exhaustive()
    }
}
