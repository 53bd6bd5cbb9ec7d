//! Parses the tool reference of a [`ToolCall`] before anything else looks at it.

mod layer;

use std::task::{Context, Poll};

use locara_manifest::ToolRef;
use tower::Service;

pub use self::layer::ValidateIdLayer;
use crate::{CallFuture, ExecError, ParsedCall, ToolCall, ToolResult};

/// Turns a [`ToolCall`] into a [`ParsedCall`], or refuses it with
/// [`ExecError::InvalidToolRef`].
#[derive(Debug, Clone)]
pub struct ValidateId<S> {
    inner: S,
}

impl<S> ValidateId<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> ValidateId<S> {
        ValidateId { inner }
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Unwraps the service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S> Service<ToolCall> for ValidateId<S>
where
    S: Service<ParsedCall, Response = ToolResult, Error = ExecError, Future = CallFuture>
        + Send
        + 'static,
{
    type Response = ToolResult;
    type Error = ExecError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ExecError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: ToolCall) -> Self::Future {
        match call.tool.trim().parse::<ToolRef>() {
            Ok(tool) => {
                let parsed = ParsedCall {
                    tool,
                    arguments: call.arguments,
                    workspace: call.workspace,
                    context: call.context,
                };
                self.inner.call(parsed)
            }
            Err(error) => {
                let error = ExecError::InvalidToolRef {
                    input: call.tool,
                    reason: error.to_string(),
                };
                Box::pin(async move { Err(error) })
            }
        }
    }
}
