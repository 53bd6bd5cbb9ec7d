//! The [`Layer`] for [`CapOutput`].

use tower::Layer;

use super::CapOutput;

/// Applies [`CapOutput`] to a service.
#[derive(Debug, Clone)]
pub struct CapOutputLayer {
    cap_bytes: usize,
}

impl CapOutputLayer {
    /// A layer that caps outputs at `cap_bytes` of compact JSON.
    pub fn new(cap_bytes: usize) -> CapOutputLayer {
        CapOutputLayer { cap_bytes }
    }
}

impl<S> Layer<S> for CapOutputLayer {
    type Service = CapOutput<S>;

    fn layer(&self, inner: S) -> CapOutput<S> {
        CapOutput::new(inner, self.cap_bytes)
    }
}
