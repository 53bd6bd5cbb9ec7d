//! The [`Layer`] for [`ValidateInput`].

use tower::Layer;

use super::ValidateInput;

/// Applies [`ValidateInput`] to a service.
#[derive(Debug, Clone, Default)]
pub struct ValidateInputLayer {
    _private: (),
}

impl ValidateInputLayer {
    /// The layer.
    pub fn new() -> ValidateInputLayer {
        ValidateInputLayer { _private: () }
    }
}

impl<S> Layer<S> for ValidateInputLayer {
    type Service = ValidateInput<S>;

    fn layer(&self, inner: S) -> ValidateInput<S> {
        ValidateInput::new(inner)
    }
}
