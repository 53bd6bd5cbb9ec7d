//! Privileged calls need a yes from a host-supplied [`Approver`] before they run.
//!
//! The layer sits after the composition rule and the input schema, so an approver is only ever
//! asked about a call that would otherwise run, with arguments that are valid. Calls of the
//! other tiers pass through untouched; a privileged call without an approver is denied.

mod layer;

use std::{
    fmt,
    sync::Arc,
    task::{Context, Poll},
};

use locara_manifest::{SafetyTier, ToolRef};
use serde_json::Value;
use tower::Service;

pub use self::layer::RequireApprovalLayer;
use crate::{CallFuture, ExecError, ResolvedCall, ToolResult};

/// What an [`Approver`] is asked.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The tool, `id@version`.
    pub tool: ToolRef,
    /// Its safety tier (today always [`SafetyTier::Privileged`]).
    pub safety_tier: SafetyTier,
    /// What the tool does, from its signed manifest.
    pub description: String,
    /// The arguments of this call, already valid against the tool's input schema.
    pub arguments: Value,
}

/// An approver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApprovalDecision {
    /// Whether the call may run.
    pub approved: bool,
    /// Who or what decided, e.g. `terminal`, `--yes`, `policy ./policy.json`.
    pub by: String,
    /// Why, in a few words (a policy rule, "the user said no").
    pub reason: String,
}

impl ApprovalDecision {
    /// The call may run.
    pub fn approve(by: impl Into<String>, reason: impl Into<String>) -> ApprovalDecision {
        ApprovalDecision {
            approved: true,
            by: by.into(),
            reason: reason.into(),
        }
    }

    /// The call may not run.
    pub fn deny(by: impl Into<String>, reason: impl Into<String>) -> ApprovalDecision {
        ApprovalDecision {
            approved: false,
            by: by.into(),
            reason: reason.into(),
        }
    }
}

/// Decides whether a privileged call may run: a person at a terminal, a policy file, a UI.
///
/// It is asked once per privileged call, after every other check passed. It may take as long
/// as it needs (a person reading); the call's limits start only once it answered.
#[async_trait::async_trait]
pub trait Approver: Send + Sync + fmt::Debug {
    /// Answers `request`.
    async fn approve(&self, request: &ApprovalRequest) -> ApprovalDecision;
}

/// Asks the [`Approver`] about each privileged call; refuses the call with
/// [`ExecError::ApprovalDenied`] unless it says yes, and records the decision in
/// [`ToolResult::approval`].
#[derive(Debug, Clone)]
pub struct RequireApproval<S> {
    inner: S,
    approver: Option<Arc<dyn Approver>>,
}

impl<S> RequireApproval<S> {
    /// Wraps `inner`, asking `approver` (denying every privileged call when there is none).
    pub fn new(inner: S, approver: Option<Arc<dyn Approver>>) -> RequireApproval<S> {
        RequireApproval { inner, approver }
    }
}

impl<S> Service<ResolvedCall> for RequireApproval<S>
where
    S: Service<ResolvedCall, Response = ToolResult, Error = ExecError, Future = CallFuture>
        + Clone
        + Send
        + 'static,
{
    type Response = ToolResult;
    type Error = ExecError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ExecError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: ResolvedCall) -> CallFuture {
        let manifest = call.tool.manifest();
        if manifest.safety_tier != SafetyTier::Privileged {
            return self.inner.call(call);
        }
        let request = ApprovalRequest {
            tool: manifest.tool_ref(),
            safety_tier: manifest.safety_tier,
            description: manifest.description.clone(),
            arguments: call.arguments.clone(),
        };
        // The inner service was made ready for this call; keep that one and leave a fresh
        // clone in `self` (tower's rule for services that await before calling inward).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let approver = self.approver.clone();
        Box::pin(async move {
            let decision = match approver {
                Some(approver) => approver.approve(&request).await,
                None => ApprovalDecision::deny(
                    "host",
                    "no approver is configured, so privileged calls cannot run",
                ),
            };
            if !decision.approved {
                return Err(ExecError::ApprovalDenied {
                    tool: request.tool.to_string(),
                    by: decision.by,
                    reason: decision.reason,
                });
            }
            let mut result = inner.call(call).await?;
            result.approval = Some(decision);
            Ok(result)
        })
    }
}
