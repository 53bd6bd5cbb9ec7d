//! [`VerifiedArtifact`]: a tool whose signature, hashes and lock pin have all been checked.

use std::fmt;
use std::sync::Arc;

use locara_manifest::{ToolManifest, ToolRef};

use crate::{Digest, KeyId};

/// A tool's manifest and wasm bytes after every check passed: trusted signature over the
/// manifest, artifact size and SHA-256 equal to the signed pins, and (for registry tools) the
/// lockfile pin honored.
///
/// Only this crate can build one, so holding a `VerifiedArtifact` is proof that the checks ran.
/// Cloning is cheap (the manifest and bytes are shared). `Debug` shows identity and digests,
/// never the bytes.
#[derive(Clone)]
pub struct VerifiedArtifact {
    manifest: Arc<ToolManifest>,
    wasm: Arc<[u8]>,
    artifact_digest: Digest,
    manifest_digest: Digest,
    key_id: KeyId,
}

impl VerifiedArtifact {
    pub(crate) fn new(
        manifest: Arc<ToolManifest>,
        wasm: Arc<[u8]>,
        manifest_digest: Digest,
        key_id: KeyId,
    ) -> VerifiedArtifact {
        let artifact_digest = Digest::from(&manifest.artifact.sha256);
        VerifiedArtifact {
            manifest,
            wasm,
            artifact_digest,
            manifest_digest,
            key_id,
        }
    }

    /// The signed manifest.
    #[must_use]
    pub fn manifest(&self) -> &ToolManifest {
        &self.manifest
    }

    /// The signed manifest, shared.
    #[must_use]
    pub fn manifest_arc(&self) -> Arc<ToolManifest> {
        Arc::clone(&self.manifest)
    }

    /// The wasm module's bytes; their SHA-256 is [`VerifiedArtifact::artifact_digest`].
    #[must_use]
    pub fn wasm(&self) -> &[u8] {
        &self.wasm
    }

    /// SHA-256 of the wasm bytes (equal to the manifest's `artifact.sha256`).
    #[must_use]
    pub fn artifact_digest(&self) -> &Digest {
        &self.artifact_digest
    }

    /// SHA-256 of the exact signed `manifest.json` bytes.
    #[must_use]
    pub fn manifest_digest(&self) -> &Digest {
        &self.manifest_digest
    }

    /// The trusted key that signed the manifest.
    #[must_use]
    pub fn key_id(&self) -> &KeyId {
        &self.key_id
    }

    /// `id@version` of the tool.
    #[must_use]
    pub fn tool_ref(&self) -> ToolRef {
        self.manifest.tool_ref()
    }
}

impl fmt::Debug for VerifiedArtifact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerifiedArtifact")
            .field("tool", &format_args!("{}", self.manifest.tool_ref()))
            .field("wasm_len", &self.wasm.len())
            .field("artifact_digest", &self.artifact_digest)
            .field("manifest_digest", &self.manifest_digest)
            .field("key_id", &self.key_id)
            .finish()
    }
}
