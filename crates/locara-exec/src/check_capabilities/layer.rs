//! The [`Layer`] for [`CheckCapabilities`].

use std::sync::Arc;

use locara_manifest::Grants;
use tower::Layer;

use super::CheckCapabilities;

/// Applies [`CheckCapabilities`] to a service.
#[derive(Debug, Clone)]
pub struct CheckCapabilitiesLayer {
    grants: Arc<Grants>,
}

impl CheckCapabilitiesLayer {
    /// A layer that checks against `grants`.
    pub fn new(grants: Grants) -> CheckCapabilitiesLayer {
        CheckCapabilitiesLayer {
            grants: Arc::new(grants),
        }
    }
}

impl<S> Layer<S> for CheckCapabilitiesLayer {
    type Service = CheckCapabilities<S>;

    fn layer(&self, inner: S) -> CheckCapabilities<S> {
        CheckCapabilities::new(inner, Arc::clone(&self.grants))
    }
}
