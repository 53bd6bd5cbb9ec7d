//! Cancelling a call from outside it.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

/// Stops a running call from another thread.
///
/// Pass a token to [`Compiled::run_cancellable`](crate::Compiled::run_cancellable) and call
/// [`cancel`](CancelToken::cancel) from anywhere: the call ends with
/// [`RunStatus::Cancelled`](crate::RunStatus::Cancelled) at the end of the guest's fuel slice
/// (about a millisecond; the next 10 ms epoch tick on Wasmtime without fuel metering), or at
/// once if the guest is in a host call (a guest
/// sleeping in `poll_oneoff` wakes up). Its temp dir is removed and its descriptors closed as
/// after any other end. Clones share the flag; cancelling is permanent.
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    cancelled: Arc<AtomicBool>,
}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Cancels every call this token (or a clone of it) was given.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// Whether [`cancel`](CancelToken::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }
}
