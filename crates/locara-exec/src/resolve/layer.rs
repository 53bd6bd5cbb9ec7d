//! The [`Layer`] for [`Resolve`].

use std::sync::Arc;

use tower::Layer;

use super::{Resolve, Resolver};

/// Applies [`Resolve`] to a service.
#[derive(Debug, Clone)]
pub struct ResolveLayer {
    resolver: Arc<dyn Resolver>,
}

impl ResolveLayer {
    /// A layer that resolves with `resolver`.
    pub fn new(resolver: Arc<dyn Resolver>) -> ResolveLayer {
        ResolveLayer { resolver }
    }
}

impl<S> Layer<S> for ResolveLayer {
    type Service = Resolve<S>;

    fn layer(&self, inner: S) -> Resolve<S> {
        Resolve::new(inner, Arc::clone(&self.resolver))
    }
}
