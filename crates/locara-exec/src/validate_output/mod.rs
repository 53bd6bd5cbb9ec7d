//! Checks a tool's output against its `output_schema` on the way back.

mod layer;

use std::task::{Context, Poll};

use tower::Service;

pub use self::layer::ValidateOutputLayer;
use crate::{
    CallFuture, ExecError, FailureKind, ResolvedCall, ToolFailure, ToolResult, schema::SchemaCache,
};

/// Turns a successful [`ToolResult`] whose output breaks the tool's output schema into a
/// failed one ([`FailureKind::InvalidOutput`]), keeping the output for inspection.
#[derive(Debug, Clone)]
pub struct ValidateOutput<S> {
    inner: S,
    schemas: SchemaCache,
}

impl<S> ValidateOutput<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> ValidateOutput<S> {
        ValidateOutput {
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

impl<S> Service<ResolvedCall> for ValidateOutput<S>
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
        // A clone of the tool is a few `Arc`s; the schema itself is not copied.
        let tool = call.tool.clone();
        let schemas = self.schemas.clone();
        let future = self.inner.call(call);
        Box::pin(async move {
            let mut result = future.await?;
            if result.failure.is_some() {
                return Ok(result);
            }
            let Some(output) = &result.output else {
                return Ok(result);
            };
            let validator = schemas.get(&tool, "output_schema")?;
            let violations = crate::schema::violations(&validator, output);
            if !violations.is_empty() {
                let tool = tool.manifest().tool_ref();
                result.failure = Some(ToolFailure {
                    kind: FailureKind::InvalidOutput,
                    message: format!(
                        "{tool} returned output that breaks its output schema: {}",
                        violations[0]
                    ),
                    hint: "this is a bug in the tool, not in the call; report it to its publisher"
                        .to_owned(),
                    violations,
                });
                // A failed call returns no files (docs/tool-abi.md).
                result.files.clear();
            }
            Ok(result)
        })
    }
}
