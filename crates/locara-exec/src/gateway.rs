//! The tool gateway: how a running tool (a code-exec program) asks its host to search, describe
//! and call other tools ([`TOOLS`]).
//!
//! Exec only carries the requests: a call whose [`CallContext`](crate::CallContext) holds a
//! [`ToolGateway`], and whose tool declares `tools` in an app that grants it, has its `tools`
//! requests sent, as JSON, to whoever holds the gateway's [`GatewayRequests`] (the facade,
//! which runs each inner call through the whole pipeline, with the app's grants, and bounds
//! them: calls, nesting depth, output). The requesting guest waits on its own thread, racing
//! the answer against its deadline and cancel token like any host service; when the outer call
//! ends, its host drops the inner calls still running, which cancels them.

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// The host service that searches, describes and calls tools.
pub const TOOLS: &str = "tools";

/// One `tools` request of a running tool, and where its answer goes.
#[derive(Debug)]
#[non_exhaustive]
pub struct GatewayRequest {
    /// The request, as the tool sent it (`{"op": "call", …}`).
    pub request: Value,
    /// Where the answer goes: the JSON answer, or a message saying why there is none.
    pub reply: oneshot::Sender<Result<Value, String>>,
}

/// The requests of a call's [`ToolGateway`], in the order they were made.
pub type GatewayRequests = mpsc::UnboundedReceiver<GatewayRequest>;

/// The sending end of a call's tool gateway, put in its [`CallContext`](crate::CallContext).
#[derive(Debug, Clone)]
pub struct ToolGateway {
    requests: mpsc::UnboundedSender<GatewayRequest>,
}

impl ToolGateway {
    /// A gateway, and the requests made through it.
    pub fn channel() -> (ToolGateway, GatewayRequests) {
        let (requests, receiver) = mpsc::unbounded_channel();
        (ToolGateway { requests }, receiver)
    }

    /// Sends `request` and waits for its answer.
    pub(crate) async fn ask(&self, request: Value) -> Result<Value, String> {
        let (reply, answer) = oneshot::channel();
        self.requests
            .send(GatewayRequest { request, reply })
            .map_err(|_| "the call's host no longer answers tool requests".to_owned())?;
        answer
            .await
            .map_err(|_| "the call's host dropped the tool request unanswered".to_owned())?
    }
}
