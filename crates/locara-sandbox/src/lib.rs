//! Runs a wasm32-wasip1 command module under limits, with only the capabilities it is given.
//!
//! This crate sits at the bottom of Locara's stack: `locara-exec` hands it the bytes of a module
//! that the registry already verified, the limits and capabilities the manifest and the app
//! agreed on, and the JSON arguments; it returns a [`RunOutcome`].
//!
//! It deliberately knows nothing about manifests, JSON schemas, registries, signatures or
//! hashes: it turns bytes plus limits plus capabilities into an outcome.
//! It is the only crate that names an engine (`wasmtime`, `wasmi`); neither appears in its
//! public API.
//!
//! Both engines share one WASI preview 1 host implementation ([`Capabilities`] documents what
//! a guest can see), so a conformance test that passes on one engine tests the same semantics
//! on the other. The same holds for the host services a call may be given
//! ([`HostServices`]), the one way out of the sandbox besides its preopened directories.
//!
//! A call's `/tmp` is held in memory (up to [`MEM_TEMP_BYTES`] of the guest's writes) until
//! the guest does something only a real directory can do; then it is made on disk, under the
//! temp root, and the call goes on there. Most tools never leave memory, so their output
//! files are collected without a host path being made, written, read back or removed.
//!
//! ```no_run
//! # fn main() -> Result<(), locara_sandbox::Error> {
//! use locara_sandbox::{BackendKind, Capabilities, Limits, Sandbox, SandboxConfig};
//!
//! let sandbox = Sandbox::new(&SandboxConfig::new(BackendKind::Wasmtime))?;
//! let wasm = std::fs::read("tool.wasm").expect("a wasm32-wasip1 command module");
//! let compiled = sandbox.compile(&wasm, None)?;
//! let outcome = compiled.run(br#"{"text": "hello"}"#, &Limits::default(), &Capabilities::new())?;
//! println!("{:?}: {}", outcome.status, String::from_utf8_lossy(&outcome.stdout));
//! # Ok(())
//! # }
//! ```

// Built with no engine (the fuzz targets, which only need the types), the WASI host has no
// caller; every real build enables at least one engine and gets the full lint.
#![cfg_attr(
    not(any(feature = "wasmtime", feature = "wasmi")),
    allow(
        dead_code,
        unused_imports,
        unused_variables,
        unreachable_code,
        reason = "no engine links the WASI host"
    )
)]

mod backend;
mod beneath;
mod cancel;
mod caps;
#[cfg(feature = "wasmtime")]
mod compiled_cache;
mod config;
mod error;
mod limits;
mod made;
mod outcome;
#[cfg(feature = "preinit")]
mod preinit;
mod run;
mod services;
#[cfg(feature = "wasmi")]
mod start_export;
mod temp;
mod wasi;
#[cfg(feature = "wasmi")]
mod wasmi_backend;
#[cfg(feature = "wasmtime")]
mod wasmtime_backend;

pub use crate::{
    backend::{
        Backend, Compiled, CompiledModule, IN_PLACE, RunArgs, RunFuture, SLICE_FUEL, Sandbox,
        block_on,
    },
    beneath::open_dir_beneath,
    cancel::CancelToken,
    caps::{Capabilities, DirPerms, Preopen, TEMP_GUEST_PATH},
    config::{BackendKind, SandboxConfig},
    error::Error,
    limits::{EnforcedLimits, Enforcement, LimitKind, Limits},
    made::MadeBytes,
    outcome::{OutputFile, RunOutcome, RunStatus},
    services::{
        HOST_CHANNEL_PATH, HOST_SERVICES_MODULE, HostServices, Now, PendingAnswer, ServiceCall,
        ServiceError,
    },
    wasi::MEM_TEMP_BYTES,
};
