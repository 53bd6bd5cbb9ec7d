//! The Locara wire formats: the tool manifest (`manifest.json`), the app manifest and the
//! lockfile, plus the small value types they are made of.
//!
//! This crate sits at the bottom of the stack: `locara-registry` reads and signs manifests,
//! `locara-exec` enforces them, and `locara-facade` re-exports the types agents need.
//! It is pure data. It does no IO, never hashes (a [`Sha256Hex`] is only checked for its form),
//! and knows nothing about wasm, signatures or sandboxes.
//!
//! Every type rejects unknown JSON fields. Parsing reports the line, column and parser message;
//! after parsing, `validate` checks what the types alone cannot (schema version, limit ranges,
//! schema objects). With the `json-schema` feature (on by default) every wire type derives
//! `schemars::JsonSchema`; the generated schemas are committed under `schema/`.
//!
//! ```
//! use locara_manifest::{ToolRef, Version};
//!
//! let reference: ToolRef = "text.chunk@0.1.0".parse()?;
//! assert_eq!(reference.version, Some(Version::new(0, 1, 0)));
//! # Ok::<(), locara_manifest::Error>(())
//! ```

#![forbid(unsafe_code)]

mod app;
mod error;
mod hash;
mod host;
pub mod json;
mod limits;
mod lock;
mod name;
mod time;
mod tool;
mod version;

#[cfg(test)]
mod fuzz_regressions;
#[cfg(test)]
mod tests;

pub use crate::{
    app::{AppManifest, AppTool, FsGrant, Grants},
    error::Error,
    hash::Sha256Hex,
    limits::{EffectiveLimits, LimitsSpec},
    lock::{LockedTool, Lockfile},
    name::{AVAILABLE_LISTED, ToolName, ToolRef, available_list},
    time::rfc3339_utc,
    tool::{
        Artifact, Derivation, FsAccess, Interpreter, ModelDependency, NetAccess, PackageFile,
        SafetyTier, Stdio, ToolManifest, Upstream, UpstreamRegistry, UserDirAccess, WasiImports,
    },
    version::Version,
};
