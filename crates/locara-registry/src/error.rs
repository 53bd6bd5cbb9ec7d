//! The one error type of this crate.

use std::path::PathBuf;

use locara_manifest::{Sha256Hex, ToolName, Version};

use crate::{Digest, KeyId};

/// Everything that can stop the registry from handing out a verified artifact.
///
/// Messages are lower-case, name the tool or path involved and say what to do. Where an error
/// wraps another (`Io`, `Invalid`), the wrapped error is its [`source`](std::error::Error::source)
/// and is not repeated in the message: print the whole chain (e.g. `{:#}` with anyhow).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A model a tool depends on is not in the model store.
    #[error(
        "the model `{name}` (sha256 {sha256}) that {tool} needs is not installed at `{}`; run `locara models fetch {}` to fetch it",
        path.display(),
        tool_id(tool)
    )]
    ModelMissing {
        /// The tool, `id@version`.
        tool: String,
        /// The model's name in the manifest.
        name: String,
        /// The pinned hash.
        sha256: Sha256Hex,
        /// Where the model was looked for.
        path: PathBuf,
    },

    /// A model file does not match its pin.
    #[error(
        "the model file `{}` for `{name}` of {tool} has {found}, but the manifest pins {expected}; remove it and run `locara models fetch {}`",
        path.display(),
        tool_id(tool)
    )]
    ModelMismatch {
        /// The tool, `id@version`.
        tool: String,
        /// The model's name in the manifest.
        name: String,
        /// The file.
        path: PathBuf,
        /// What the manifest pins (size and sha256).
        expected: String,
        /// What the file has.
        found: String,
    },

    /// A filesystem operation failed.
    #[error("cannot {action} `{}`", path.display())]
    Io {
        /// What was being done, e.g. `read`.
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// A file in the home is not a regular file (a FIFO, a device, a directory, a socket), so
    /// reading it could block forever or never end.
    #[error(
        "refusing to read `{}`: it is a {kind}, not a regular file (Locara reads only regular files from its home; a FIFO could block it forever and a device such as /dev/zero never ends); replace it with the file that belongs there",
        path.display()
    )]
    NotARegularFile {
        /// The path as given (a symlink is followed, and what it points to is judged).
        path: PathBuf,
        /// What it is, e.g. `FIFO (named pipe)` or `character device`.
        kind: &'static str,
    },

    /// A file in the home is larger than any file of its kind may be.
    #[error(
        "refusing to read `{}`: it is larger than {limit} bytes, the most a {what} may be here; it is not a file Locara wrote: replace it with the file that belongs there",
        path.display()
    )]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// Its kind, e.g. `manifest`.
        what: &'static str,
        /// The most bytes read of such a file.
        limit: u64,
    },

    /// A secret key file can be read (or written) by other users than its owner.
    #[error(
        "refusing to use the secret key file `{path}`: its mode is {mode:04o}, so users other than its owner can reach it; run `chmod 600 {path}`, and if anyone else could have read it, treat the key as leaked: make a new key and revoke this one (see docs/keys.md)",
        path = path.display()
    )]
    SecretKeyExposed {
        /// The secret key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },

    /// A manifest, template or lockfile broke the wire format.
    #[error("invalid {subject}")]
    Invalid {
        /// What was being read, e.g. "manifest `/r/tools/text.chunk/0.1.0/manifest.json`".
        subject: String,
        /// What is wrong with it.
        #[source]
        source: locara_manifest::Error,
    },

    /// A key file, public key or signature file is malformed.
    #[error("malformed {subject}: {message}")]
    Malformed {
        /// What was being read, e.g. "signature file `/r/…/manifest.sig.json`".
        subject: String,
        /// What is wrong with it.
        message: String,
    },

    /// A key file's `key_id` does not belong to its key.
    #[error(
        "key id mismatch in {subject}: the file says {found}, but its key is {expected} (the file was edited by hand; regenerate or restore it)"
    )]
    KeyIdMismatch {
        /// The key file.
        subject: String,
        /// The `key_id` written in the file.
        found: String,
        /// The id computed from the key.
        expected: KeyId,
    },

    /// A publisher name is empty or contains control characters.
    #[error(
        "invalid publisher name {publisher:?}: it must be non-empty and contain no control characters"
    )]
    InvalidPublisher {
        /// The rejected name.
        publisher: String,
    },

    /// A key id is not `ed25519:` followed by 16 lowercase hex characters.
    #[error(
        "invalid key id `{input}`: expected `ed25519:` followed by 16 lowercase hex characters"
    )]
    InvalidKeyId {
        /// The rejected input.
        input: String,
    },

    /// A digest is not 64 lowercase hex characters.
    #[error("invalid sha256 digest `{input}`: expected 64 lowercase hex characters")]
    InvalidDigest {
        /// The rejected input.
        input: String,
    },

    /// The operating system's random source failed while generating a key.
    #[error("cannot generate a key: the operating system's random source failed: {message}")]
    Entropy {
        /// The random source's error.
        message: String,
    },

    /// The manifest has no signature file.
    #[error(
        "{subject} is unsigned: `{}` does not exist (publish it with `cargo xtask build-tools` or `Registry::publish`, which sign the manifest)",
        path.display()
    )]
    Unsigned {
        /// The tool, e.g. `text.chunk@0.1.0`.
        subject: String,
        /// The missing signature file.
        path: PathBuf,
    },

    /// The manifest is signed by a key that is not in the trust store.
    #[error(
        "{subject} is signed by {key_id}, which is not in the trust store; if you trust its publisher, add their `*.pub.json` file to the trust directory"
    )]
    UnknownKey {
        /// The tool, e.g. `text.chunk@0.1.0`.
        subject: String,
        /// The signing key's id.
        key_id: KeyId,
    },

    /// The manifest is signed by a key the trust store revoked.
    #[error(
        "{subject} is signed by {key_id}, which was revoked{}: a revoked key is never trusted, even while its `.pub.json` is still in the trust directory; ask the publisher for a copy signed by their new key, or, if the revocation was a mistake, remove it from `trust/revoked.json` (see docs/keys.md)",
        revocation_detail(revoked_at.as_deref(), reason.as_deref())
    )]
    RevokedKey {
        /// The tool, e.g. `text.chunk@0.1.0`.
        subject: String,
        /// The revoked key's id.
        key_id: KeyId,
        /// Why it was revoked, as the revocation list says.
        reason: Option<String>,
        /// When it was revoked, as the revocation list says.
        revoked_at: Option<String>,
    },

    /// A receipt is signed by a host key the trust store revoked.
    #[error(
        "the receipt is signed by key {key_id}, which was revoked{}: do not rely on anything it says (a revoked host key may have signed it after it leaked)",
        revocation_detail(revoked_at.as_deref(), reason.as_deref())
    )]
    RevokedReceiptKey {
        /// The revoked key's id.
        key_id: KeyId,
        /// Why it was revoked, as the revocation list says.
        reason: Option<String>,
        /// When it was revoked, as the revocation list says.
        revoked_at: Option<String>,
    },

    /// A receipt is signed by a key that is not among the host keys it is checked against.
    #[error(
        "the receipt is signed by key {key_id}, which is not the host key it was checked against; check it with the public key of the host that wrote it"
    )]
    UnknownReceiptKey {
        /// The key the receipt names.
        key_id: KeyId,
    },

    /// A receipt's signature does not match its content.
    #[error(
        "the receipt's signature by {key_id} does not verify: the receipt was changed after it was signed, or it was not signed by that key; do not rely on anything it says"
    )]
    BadReceiptSignature {
        /// The key the receipt names.
        key_id: KeyId,
    },

    /// The signature does not match the manifest bytes.
    #[error(
        "bad signature on {subject} by {key_id}: the manifest bytes do not match the signature (manifest.json was modified after signing); re-publish the tool or restore the original files"
    )]
    BadSignature {
        /// The tool, e.g. `text.chunk@0.1.0`.
        subject: String,
        /// The key the signature claims.
        key_id: KeyId,
    },

    /// A manifest sits in the directory of another tool or version.
    #[error(
        "`{}` holds the manifest of {found}, expected {expected} (the files were copied to the wrong place; re-publish the tool)",
        dir.display()
    )]
    IdentityMismatch {
        /// The registry directory.
        dir: PathBuf,
        /// `id@version` from the signed manifest.
        found: String,
        /// `id@version` from the directory names.
        expected: String,
    },

    /// A file's SHA-256 differs from the signed one.
    #[error(
        "{what} hash mismatch for {subject}: found {found}, expected {expected} (the {what} was modified after signing; rebuild with `cargo xtask build-tools` or reinstall)"
    )]
    HashMismatch {
        /// What was hashed, e.g. `artifact`.
        what: &'static str,
        /// The tool, e.g. `text.chunk@0.1.0`.
        subject: String,
        /// The digest of the bytes on disk.
        found: Digest,
        /// The digest the signed manifest pins.
        expected: Digest,
    },

    /// A file's size differs from the signed one.
    #[error(
        "{what} size mismatch for {subject}: found {found} bytes, expected {expected} (the {what} was modified after signing; rebuild with `cargo xtask build-tools` or reinstall)"
    )]
    SizeMismatch {
        /// What was measured, e.g. `artifact`.
        what: &'static str,
        /// The tool, e.g. `text.chunk@0.1.0`.
        subject: String,
        /// The size on disk.
        found: u64,
        /// The size the signed manifest pins.
        expected: u64,
    },

    /// A manifest given to `publish` does not pin the given wasm bytes.
    #[error(
        "cannot publish {subject}: the manifest's `artifact.{field}` is {expected}, but the wasm gives {found}; build the manifest with `prepare_manifest` so it pins these bytes"
    )]
    PublishMismatch {
        /// The tool, e.g. `text.chunk@0.1.0`.
        subject: String,
        /// `sha256`, `size_bytes` or `url`.
        field: &'static str,
        /// The value computed from the wasm.
        found: String,
        /// The value in the manifest.
        expected: String,
    },

    /// The lockfile pins this version with different bytes.
    #[error(
        "{what} of {subject} does not match the lockfile: found {found}, locked {expected} (the tool was re-published under the same version; if the change is expected, re-lock it with `Registry::lock_forced`)"
    )]
    LockMismatch {
        /// `manifest` or `artifact`.
        what: &'static str,
        /// The tool, e.g. `text.chunk@0.1.0`.
        subject: String,
        /// The hash of what the registry holds now.
        found: Sha256Hex,
        /// The hash the lockfile pins.
        expected: Sha256Hex,
    },

    /// The request would go back to a version older than the locked one.
    #[error(
        "refusing to roll {id} back to {requested}: the lockfile pins {locked}; ask for {id}@{locked} or newer, or use `Registry::lock_forced` if the downgrade is intended"
    )]
    Rollback {
        /// The tool.
        id: ToolName,
        /// The version asked for.
        requested: Version,
        /// The version the lockfile pins.
        locked: Version,
    },

    /// No such tool or version in the registry.
    #[error(
        "tool `{reference}` is not in the registry at `{}`; {}",
        registry.display(),
        list_available(reference, available)
    )]
    ToolNotFound {
        /// The reference as asked for, e.g. `text.chunk@0.3.0`.
        reference: String,
        /// The registry root.
        registry: PathBuf,
        /// What the registry holds (of this id if it has any version of it, else everything),
        /// as `id@version`, sorted (the message names the closest few,
        /// [`locara_manifest::available_list`]).
        available: Vec<String>,
    },

    /// `install` was given other files for a version the registry already holds.
    #[error(
        "{subject} is already installed in `{}` with another signed manifest; a version is never replaced by other contents: publish a new version, or remove that directory first if the installed one is wrong",
        dir.display()
    )]
    AlreadyInstalled {
        /// The tool, e.g. `text.chunk@0.1.0`.
        subject: String,
        /// The version's directory.
        dir: PathBuf,
    },

    /// `lock` was called on a registry without a lockfile.
    #[error(
        "no lockfile is configured; set one with `RegistryConfig::with_lockfile` before locking"
    )]
    NoLockfile,
}

fn list_available(reference: &str, available: &[String]) -> String {
    if available.is_empty() {
        "it holds no tools (publish them with `cargo xtask build-tools`)".to_owned()
    } else {
        locara_manifest::available_list(reference, available)
    }
}

/// `` on 2025-01-02T03:04:05Z (laptop stolen)`` from a revocation's date and reason, each
/// optional.
fn revocation_detail(revoked_at: Option<&str>, reason: Option<&str>) -> String {
    let mut detail = String::new();
    if let Some(at) = revoked_at {
        detail.push_str(&format!(" on {at}"));
    }
    if let Some(reason) = reason {
        detail.push_str(&format!(" ({reason})"));
    }
    detail
}

/// Returns a closure that wraps an [`std::io::Error`] with `action` and `path`.
pub(crate) fn io(
    action: &'static str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io {
        action,
        path,
        source,
    }
}

/// The id part of `id@version`.
fn tool_id(tool: &str) -> &str {
    tool.split('@').next().unwrap_or(tool)
}
