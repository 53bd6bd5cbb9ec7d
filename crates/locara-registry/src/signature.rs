//! Manifest signatures (`manifest.sig.json`): Ed25519 over the exact bytes of `manifest.json`.
//!
//! There is no canonicalization: the bytes signed are the bytes stored. The manifest pins the
//! artifact's SHA-256 and size, so one signature covers both files.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{Error, KeyId, SigningKey, TrustStore, fs};

/// A signature over a manifest's bytes, as stored in `manifest.sig.json`:
/// `{"key_id", "algorithm": "ed25519", "signature": <128 hex>}`.
#[derive(Clone, PartialEq, Eq)]
pub struct ManifestSignature {
    key_id: KeyId,
    signature: ed25519_dalek::Signature,
}

impl ManifestSignature {
    /// The only signature algorithm.
    pub const ALGORITHM: &'static str = "ed25519";

    /// The id of the key that made the signature.
    #[must_use]
    pub fn key_id(&self) -> &KeyId {
        &self.key_id
    }

    /// The signature file's JSON, pretty-printed with a trailing newline.
    #[must_use]
    pub fn to_json_pretty(&self) -> String {
        fs::to_pretty_json(&SignatureFile {
            key_id: self.key_id.to_string(),
            algorithm: Self::ALGORITHM.to_owned(),
            signature: hex::encode(self.signature.to_bytes()),
        })
    }

    /// Parses a signature file's JSON.
    ///
    /// # Errors
    ///
    /// Returns [`Error::Malformed`] if the JSON is malformed, the algorithm is not `ed25519`, or
    /// the key id or signature is not well-formed hex of the right length.
    pub fn from_json(text: &str) -> Result<ManifestSignature, Error> {
        ManifestSignature::parse("signature file", text)
    }

    pub(crate) fn parse(subject: &str, text: &str) -> Result<ManifestSignature, Error> {
        let malformed = |message: String| Error::Malformed {
            subject: subject.to_owned(),
            message,
        };
        let file: SignatureFile = fs::parse_json(subject, text)?;
        if file.algorithm != Self::ALGORITHM {
            return Err(malformed(format!(
                "unsupported algorithm `{}`, expected `{}`",
                file.algorithm,
                Self::ALGORITHM
            )));
        }
        let key_id = file
            .key_id
            .parse()
            .map_err(|e: Error| malformed(e.to_string()))?;
        let mut bytes = [0; 64];
        hex::decode_to_slice(&file.signature, &mut bytes)
            .map_err(|e| malformed(format!("`signature` must be 128 hex characters: {e}")))?;
        Ok(ManifestSignature {
            key_id,
            signature: ed25519_dalek::Signature::from_bytes(&bytes),
        })
    }
}

impl fmt::Debug for ManifestSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManifestSignature")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// Signs the exact bytes of a `manifest.json`.
#[must_use]
pub fn sign_manifest(manifest_bytes: &[u8], key: &SigningKey) -> ManifestSignature {
    ManifestSignature {
        key_id: key.key_id().clone(),
        signature: key.sign(manifest_bytes),
    }
}

/// Checks that `signature` is a valid signature over `manifest_bytes` by a trusted key, and
/// returns that key's id.
///
/// # Errors
///
/// Returns [`Error::RevokedKey`] if `trust` revoked the signing key, [`Error::UnknownKey`] if it
/// is not in `trust`, and [`Error::BadSignature`] if the signature does not match the bytes.
pub fn verify_manifest(
    manifest_bytes: &[u8],
    signature: &ManifestSignature,
    trust: &TrustStore,
) -> Result<KeyId, Error> {
    verify(manifest_bytes, signature, trust, "manifest")
}

/// [`verify_manifest`], naming `subject` in errors.
pub(crate) fn verify(
    manifest_bytes: &[u8],
    signature: &ManifestSignature,
    trust: &TrustStore,
    subject: &str,
) -> Result<KeyId, Error> {
    let key = trust.trusted(&signature.key_id, subject)?;
    key.verifying_key()
        .verify_strict(manifest_bytes, &signature.signature)
        .map_err(|_| Error::BadSignature {
            subject: subject.to_owned(),
            key_id: signature.key_id.clone(),
        })?;
    Ok(signature.key_id.clone())
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SignatureFile {
    key_id: String,
    algorithm: String,
    signature: String,
}
