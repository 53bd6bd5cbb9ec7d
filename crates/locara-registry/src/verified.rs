//! [`VerifiedArtifact`]: a tool whose signature, hashes and lock pin have all been checked.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use locara_manifest::{ToolManifest, ToolRef};

use crate::cache::Recorded;
use crate::{Digest, Error, KeyId};

/// A tool's manifest and wasm module after every check passed: trusted signature over the
/// manifest, artifact size and SHA-256 equal to the signed pins, and (for registry tools) the
/// lockfile pin honored.
///
/// Only this crate can build one, so holding a `VerifiedArtifact` is proof that the checks ran.
/// The module's bytes may not have been read yet: when the cache entry holding them is the very
/// version of the file that hashed correctly before, they are read only if asked for
/// ([`VerifiedArtifact::wasm`]), which a host whose compiled module is cached under
/// [`VerifiedArtifact::artifact_digest`] never does. Cloning is one reference count (the
/// pipeline clones a call's artifact at several layers). `Debug` shows identity and digests,
/// never the bytes.
#[derive(Clone)]
pub struct VerifiedArtifact {
    inner: Arc<Verified>,
}

struct Verified {
    manifest: Arc<ToolManifest>,
    wasm: Wasm,
    artifact_digest: Digest,
    manifest_digest: Digest,
    key_id: KeyId,
}

impl VerifiedArtifact {
    pub(crate) fn new(
        manifest: Arc<ToolManifest>,
        wasm: Wasm,
        manifest_digest: Digest,
        key_id: KeyId,
    ) -> VerifiedArtifact {
        let artifact_digest = Digest::from(&manifest.artifact.sha256);
        VerifiedArtifact {
            inner: Arc::new(Verified {
                manifest,
                wasm,
                artifact_digest,
                manifest_digest,
                key_id,
            }),
        }
    }

    /// The signed manifest.
    #[must_use]
    pub fn manifest(&self) -> &ToolManifest {
        &self.inner.manifest
    }

    /// The signed manifest, shared.
    #[must_use]
    pub fn manifest_arc(&self) -> Arc<ToolManifest> {
        Arc::clone(&self.inner.manifest)
    }

    /// The wasm module's bytes; their SHA-256 is [`VerifiedArtifact::artifact_digest`].
    ///
    /// Bytes not read at verification are read now from the cache entry, and used only if the
    /// entry is still the version that hashed correctly or hashes correctly again; else they
    /// are read from where the tool was verified and checked against the signed manifest. They
    /// are not kept: each call reads them again.
    ///
    /// # Errors
    ///
    /// Only for bytes not read at verification: [`Error::Io`], [`Error::NotARegularFile`],
    /// [`Error::SizeMismatch`] or [`Error::HashMismatch`] when neither the cache entry nor the
    /// tool's own file holds the verified bytes any more.
    pub fn wasm(&self) -> Result<Arc<[u8]>, Error> {
        match &self.inner.wasm {
            Wasm::Bytes(bytes) => Ok(Arc::clone(bytes)),
            Wasm::Cached { entry, source } => match entry.read() {
                Some(bytes) => Ok(bytes.into()),
                None => Ok(crate::registry::read_artifact(&self.inner.manifest, source)?.into()),
            },
        }
    }

    /// The size of the wasm module in bytes (pinned by the manifest, and checked).
    #[must_use]
    pub fn wasm_len(&self) -> u64 {
        self.inner.manifest.artifact.size_bytes
    }

    /// SHA-256 of the wasm bytes (equal to the manifest's `artifact.sha256`).
    #[must_use]
    pub fn artifact_digest(&self) -> &Digest {
        &self.inner.artifact_digest
    }

    /// SHA-256 of the exact signed `manifest.json` bytes.
    #[must_use]
    pub fn manifest_digest(&self) -> &Digest {
        &self.inner.manifest_digest
    }

    /// The trusted key that signed the manifest.
    #[must_use]
    pub fn key_id(&self) -> &KeyId {
        &self.inner.key_id
    }

    /// `id@version` of the tool.
    #[must_use]
    pub fn tool_ref(&self) -> ToolRef {
        self.inner.manifest.tool_ref()
    }
}

impl fmt::Debug for VerifiedArtifact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerifiedArtifact")
            .field("tool", &format_args!("{}", self.inner.manifest.tool_ref()))
            .field("wasm_len", &self.wasm_len())
            .field("artifact_digest", &self.inner.artifact_digest)
            .field("manifest_digest", &self.inner.manifest_digest)
            .field("key_id", &self.inner.key_id)
            .finish()
    }
}

/// A verified module's bytes: read, or in a cache entry whose version hashed correctly before.
#[derive(Clone)]
pub(crate) enum Wasm {
    /// Read and checked.
    Bytes(Arc<[u8]>),
    /// Not read yet: the cache entry, and the tool's own file (`source`) to read should the
    /// entry be gone or changed.
    Cached {
        entry: Arc<Recorded>,
        source: PathBuf,
    },
}
