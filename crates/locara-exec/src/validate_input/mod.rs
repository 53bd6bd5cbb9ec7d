//! Checks a call's arguments against the tool's `input_schema` before the tool runs.

mod layer;

use std::task::{Context, Poll};

use tower::Service;

pub use self::layer::ValidateInputLayer;
use crate::{
    CallFuture, ExecError, ResolvedCall, ToolResult,
    depth::{drop_deep, refuse_too_deep},
    schema::SchemaCache,
};

/// Refuses a [`ResolvedCall`] whose arguments break the tool's input schema, with
/// [`ExecError::InvalidInput`] listing every violation's JSON pointer and constraint.
///
/// Arguments nested deeper than [`MAX_JSON_DEPTH`](crate::depth::MAX_JSON_DEPTH) are refused first,
/// without recursing into them, so that no later step (validation, serialization) can overflow
/// the stack.
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
    S: Service<ResolvedCall, Response = ToolResult, Error = ExecError, Future = CallFuture>
        + Send
        + 'static,
{
    type Response = ToolResult;
    type Error = ExecError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ExecError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut call: ResolvedCall) -> CallFuture {
        // The tool's name is only written out when the arguments are refused.
        let tool = ToolName(call.tool.manifest());
        if let Some(error) = refuse_too_deep(&tool, &call.arguments) {
            drop_deep(std::mem::take(&mut call.arguments));
            return Box::pin(async move { Err(error) });
        }
        let checked = self
            .schemas
            .get(&call.tool, "input_schema")
            .and_then(|validator| crate::schema::check_input(&tool, &validator, &call.arguments));
        match checked {
            Ok(()) => self.inner.call(call),
            Err(error) => Box::pin(async move { Err(error) }),
        }
    }
}

/// Writes a manifest's `id@version`, built only when it is written.
struct ToolName<'a>(&'a locara_manifest::ToolManifest);

impl std::fmt::Display for ToolName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.tool_ref().fmt(f)
    }
}
