//! The crate's one error type.

use std::{io, path::PathBuf};

/// Why the sandbox could not compile or start a module.
///
/// A module that *ran* and failed (trapped, exceeded a limit, exited non-zero) is not an
/// error: it is a [`RunOutcome`](crate::RunOutcome) with a [`RunStatus`](crate::RunStatus).
/// `Error` is reserved for "could not run".
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration named a backend this build does not know.
    #[error("unknown engine `{name}`: expected `wasmtime` or `wasmi`")]
    UnknownBackend {
        /// The name that was given.
        name: String,
    },
    /// The backend was compiled out of this build.
    #[error(
        "the {backend} engine is not compiled into this build (enable the `{backend}` feature of locara-sandbox)"
    )]
    BackendUnavailable {
        /// The backend's name.
        backend: &'static str,
    },
    /// The engine could not be created with this configuration.
    #[error("could not start the {backend} engine: {message}")]
    Engine {
        /// The backend's name.
        backend: &'static str,
        /// What the engine said.
        message: String,
    },
    /// The bytes are not a valid WebAssembly module.
    #[error("invalid wasm module: {message}")]
    InvalidModule {
        /// What the validator said.
        message: String,
    },
    /// The module imports something the sandbox does not provide.
    #[error(
        "the module imports `{module}::{name}`, which this sandbox does not provide \
         (tools may import only WASI preview 1 functions)"
    )]
    UnsupportedImport {
        /// The import's module name.
        module: String,
        /// The import's field name.
        name: String,
    },
    /// The module is not a WASI command (it has no `_start` export or no exported memory).
    #[error("the module is not a WASI command: {message}")]
    NotACommand {
        /// What is missing.
        message: String,
    },
    /// A limit is outside what the sandbox supports.
    #[error("invalid limit {limit}: {message}")]
    InvalidLimit {
        /// The limit's name.
        limit: &'static str,
        /// Why it is invalid.
        message: String,
    },
    /// A directory to preopen could not be opened.
    #[error("cannot preopen {path}: {source}")]
    Preopen {
        /// The host path.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The per-call temp dir could not be created.
    #[error("cannot create the call's temp dir under {path}: {source}")]
    TempDir {
        /// The temp root.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The instance could not be created (for example, the pooling allocator is full).
    #[error("could not instantiate the module: {message}")]
    Instantiate {
        /// What the engine said.
        message: String,
    },
}
