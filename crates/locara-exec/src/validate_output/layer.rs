//! The [`Layer`] for [`ValidateOutput`].

use tower::Layer;

use super::ValidateOutput;

/// Applies [`ValidateOutput`] to a service.
#[derive(Debug, Clone, Default)]
pub struct ValidateOutputLayer {
    _private: (),
}

impl ValidateOutputLayer {
    /// The layer.
    pub fn new() -> ValidateOutputLayer {
        ValidateOutputLayer { _private: () }
    }
}

impl<S> Layer<S> for ValidateOutputLayer {
    type Service = ValidateOutput<S>;

    fn layer(&self, inner: S) -> ValidateOutput<S> {
        ValidateOutput::new(inner)
    }
}
