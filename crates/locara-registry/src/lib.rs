//! Locara's tool registry: the only crate that hashes artifacts or signs and verifies manifests.
//!
//! It sits between `locara-manifest` (the wire formats, pure data) and `locara-exec` (which runs
//! what this crate hands out). Everything it returns to run is a [`VerifiedArtifact`], which only
//! this crate can construct, after checking: a trusted Ed25519 signature over the exact
//! `manifest.json` bytes, the artifact's size and SHA-256 against the signed manifest, and the
//! lockfile pin. It knows nothing about wasm execution, sandboxes or schemas of tool arguments.
//!
//! - Keys: [`generate_keypair`], [`SigningKey`], [`PublicKey`], [`KeyId`] and their JSON files
//!   (secret ones created mode 0600 in a 0700 directory, and refused when others can read them);
//!   [`TrustStore`] holds the keys to accept and the [`Revocation`]s of keys never to accept
//!   again (`trust/revoked.json`).
//! - Home files are read through one helper ([`read_bounded`]): regular files only (a FIFO or
//!   a device in a file's place is refused, not read), at most a [`ReadLimit`] per kind.
//! - Signatures: [`sign_manifest`], [`verify_manifest`] and [`ManifestSignature`]
//!   (`manifest.sig.json`).
//! - The local directory registry: [`Registry`] (publish, list, resolve, verify custom tools,
//!   lock) configured by [`RegistryConfig`]; [`prepare_manifest`] fills a template's artifact pin.
//!   `cargo xtask build-tools` uses these same functions, so there is one hashing and signing path.
//!
//! ```
//! use locara_registry::{Registry, RegistryConfig, SigningKey, TrustStore, prepare_manifest};
//!
//! let dir = tempfile::tempdir()?;
//! let key = SigningKey::from_seed("example", &[7; 32])?;
//! let registry = Registry::new(
//!     RegistryConfig::new(dir.path())
//!         .with_trust(TrustStore::new().with_key(key.public_key().clone())),
//! )?;
//!
//! let template = r#"{
//!   "schema_version": 1, "id": "text.echo", "version": "0.1.0",
//!   "display_name": "Echo", "description": "Echoes its input.", "license": "Apache-2.0",
//!   "safety_tier": "read_only",
//!   "input_schema": { "type": "object" }, "output_schema": { "type": "object" }
//! }"#;
//! let wasm = b"\0asm\x01\0\0\0";
//! let manifest = prepare_manifest(template, wasm)?;
//! registry.publish(&manifest, wasm, &key)?;
//!
//! let artifact = registry.resolve(&"text.echo".parse()?)?;
//! assert_eq!(*artifact.wasm()?, *wasm);
//! assert_eq!(artifact.key_id(), key.key_id());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

mod cache;
mod digest;
mod error;
mod fs;
mod keys;
mod models;
mod receipt;
mod registry;
mod signature;
mod stamp;
mod trust;
mod verified;

#[cfg(test)]
mod fuzz_regressions;
#[cfg(test)]
mod tests;

pub use locara_manifest::rfc3339_utc;

pub use crate::{
    digest::Digest,
    error::Error,
    fs::{ReadLimit, read_bounded, read_bounded_to_string},
    keys::{KeyId, PublicKey, SigningKey, generate_keypair},
    models::ModelStore,
    receipt::{SignedReceipt, canonical_json},
    registry::{
        PublishedTool, Registry, RegistryConfig, RegistryListing, RejectedEntry, ToolFiles,
        ToolListing, prepare_manifest,
    },
    signature::{ManifestSignature, sign_manifest, verify_manifest},
    trust::{REVOCATION_FILE, Revocation, TrustStore},
    verified::VerifiedArtifact,
};
