//! The [`Layer`] for [`ValidateId`].

use tower::Layer;

use super::ValidateId;

/// Applies [`ValidateId`] to a service.
#[derive(Debug, Clone, Default)]
pub struct ValidateIdLayer {
    _private: (),
}

impl ValidateIdLayer {
    /// The layer.
    pub fn new() -> ValidateIdLayer {
        ValidateIdLayer { _private: () }
    }
}

impl<S> Layer<S> for ValidateIdLayer {
    type Service = ValidateId<S>;

    fn layer(&self, inner: S) -> ValidateId<S> {
        ValidateId::new(inner)
    }
}
