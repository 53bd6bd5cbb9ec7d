//! Checks a call's arguments against the tool's `input_schema` before the tool runs.

mod layer;

use std::task::{Context, Poll};

use tower::Service;

pub use self::layer::ValidateInputLayer;
use crate::{CallFuture, ExecError, ResolvedCall, ToolResult, schema::SchemaCache};

/// Refuses a [`ResolvedCall`] whose arguments break the tool's input schema, with
/// [`ExecError::InvalidInput`] listing every violation's JSON pointer and constraint.
#[derive(Debug, Clone)]
pub struct ValidateInput<S> {
    inner: S,
    schemas: SchemaCache,
}

impl<S> ValidateInput<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> ValidateInput<S> {
        ValidateInput {
            inner,
            schemas: SchemaCache::default(),
        }
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

impl<S> Service<ResolvedCall> for ValidateInput<S>
where
    S: Service<ResolvedCall, Response = ToolResult, Error = ExecError> + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = ToolResult;
    type Error = ExecError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ExecError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: ResolvedCall) -> CallFuture {
        let checked = self
            .schemas
            .get(&call.artifact, "input_schema")
            .and_then(|validator| {
                let violations = crate::schema::violations(&validator, &call.arguments);
                if violations.is_empty() {
                    Ok(())
                } else {
                    let tool = call.artifact.manifest().tool_ref().to_string();
                    Err(ExecError::InvalidInput { tool, violations })
                }
            });
        match checked {
            Ok(()) => Box::pin(self.inner.call(call)),
            Err(error) => Box::pin(async move { Err(error) }),
        }
    }
}
