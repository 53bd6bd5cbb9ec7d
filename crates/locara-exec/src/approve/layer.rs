//! The [`Layer`] for [`RequireApproval`].

use std::sync::Arc;

use tower::Layer;

use super::{Approver, RequireApproval};

/// Applies [`RequireApproval`] to a service.
#[derive(Debug, Clone, Default)]
pub struct RequireApprovalLayer {
    approver: Option<Arc<dyn Approver>>,
}

impl RequireApprovalLayer {
    /// A layer that asks `approver`; with `None`, every privileged call is denied.
    pub fn new(approver: Option<Arc<dyn Approver>>) -> RequireApprovalLayer {
        RequireApprovalLayer { approver }
    }
}

impl<S> Layer<S> for RequireApprovalLayer {
    type Service = RequireApproval<S>;

    fn layer(&self, inner: S) -> RequireApproval<S> {
        RequireApproval::new(inner, self.approver.clone())
    }
}
