//! The trust store: the public keys whose signatures the registry accepts, and the keys it
//! revoked.
//!
//! On disk it is a directory (`<home>/trust`) of `*.pub.json` key files plus an optional
//! revocation list, `revoked.json`:
//!
//! ```json
//! {
//!   "revoked": [
//!     {
//!       "key_id": "ed25519:3f2a9c0d11e8b7a4",
//!       "publisher": "acme",
//!       "public_key": "<64 hex>",
//!       "reason": "laptop stolen",
//!       "revoked_at": "2025-01-02T03:04:05Z"
//!     }
//!   ]
//! }
//! ```
//!
//! Only `key_id` is required; `public_key`, when given, must be the key `key_id` names. A revoked
//! key is never trusted, even while its `.pub.json` stays in the directory: a signature by it is
//! [`Error::RevokedKey`], naming the key and the revocation's date and reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::io;
use crate::fs::{self, ReadLimit};
use crate::{Error, KeyId, PublicKey};

/// The revocation list's file name in a trust directory.
pub const REVOCATION_FILE: &str = "revoked.json";

/// A revoked key: its id, and what the revocation list says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Revocation {
    /// The revoked key.
    pub key_id: KeyId,
    /// Its publisher, for people reading the list.
    pub publisher: Option<String>,
    /// The key itself, when it was known at revocation (its id is checked against `key_id`).
    pub public_key: Option<PublicKey>,
    /// Why it was revoked.
    pub reason: Option<String>,
    /// When, as written (the CLI writes RFC 3339 UTC, e.g. `2025-01-02T03:04:05Z`).
    pub revoked_at: Option<String>,
}

impl Revocation {
    /// A revocation of `key_id` with nothing else said.
    #[must_use]
    pub fn new(key_id: KeyId) -> Revocation {
        Revocation {
            key_id,
            publisher: None,
            public_key: None,
            reason: None,
            revoked_at: None,
        }
    }

    /// A revocation of `key`, recording its publisher and public key.
    #[must_use]
    pub fn of_key(key: &PublicKey) -> Revocation {
        Revocation {
            publisher: Some(key.publisher().to_owned()),
            public_key: Some(key.clone()),
            ..Revocation::new(key.key_id().clone())
        }
    }

    /// Sets `reason`.
    #[must_use]
    pub fn with_reason(mut self, reason: impl Into<String>) -> Revocation {
        self.reason = Some(reason.into());
        self
    }

    /// Sets `revoked_at`.
    #[must_use]
    pub fn with_revoked_at(mut self, revoked_at: impl Into<String>) -> Revocation {
        self.revoked_at = Some(revoked_at.into());
        self
    }

    /// The error for a signature by this key on `subject`.
    pub(crate) fn error(&self, subject: &str) -> Error {
        Error::RevokedKey {
            subject: subject.to_owned(),
            key_id: self.key_id.clone(),
            reason: self.reason.clone(),
            revoked_at: self.revoked_at.clone(),
        }
    }
}

/// A set of trusted public keys, by [`KeyId`], and the keys revoked.
///
/// Built in code with [`TrustStore::with_key`] and [`TrustStore::with_revocation`], or loaded
/// from a trust directory with [`TrustStore::load_dir`]. An empty store trusts nothing, so every
/// resolve fails with [`Error::UnknownKey`]. A revoked key is not trusted whether or not it was
/// added: [`TrustStore::get`] does not return it, and a signature by it is
/// [`Error::RevokedKey`].
#[derive(Debug, Clone, Default)]
pub struct TrustStore {
    keys: BTreeMap<KeyId, PublicKey>,
    revoked: BTreeMap<KeyId, Revocation>,
}

impl TrustStore {
    /// An empty store (trusts nothing).
    #[must_use]
    pub fn new() -> TrustStore {
        TrustStore::default()
    }

    /// Adds a key.
    #[must_use]
    pub fn with_key(mut self, key: PublicKey) -> TrustStore {
        self.insert(key);
        self
    }

    /// Adds a key, returning the key previously stored under the same id. A revoked key stays
    /// untrusted.
    pub fn insert(&mut self, key: PublicKey) -> Option<PublicKey> {
        self.keys.insert(key.key_id().clone(), key)
    }

    /// Revokes a key.
    #[must_use]
    pub fn with_revocation(mut self, revocation: Revocation) -> TrustStore {
        self.revoke(revocation);
        self
    }

    /// Revokes a key, returning the earlier revocation of the same key (which is replaced).
    pub fn revoke(&mut self, revocation: Revocation) -> Option<Revocation> {
        self.revoked.insert(revocation.key_id.clone(), revocation)
    }

    /// The trusted key with this id: `None` for a key that is not in the store, or revoked.
    #[must_use]
    pub fn get(&self, key_id: &KeyId) -> Option<&PublicKey> {
        if self.revoked.contains_key(key_id) {
            return None;
        }
        self.keys.get(key_id)
    }

    /// The revocation of this key, if it is revoked.
    #[must_use]
    pub fn revocation(&self, key_id: &KeyId) -> Option<&Revocation> {
        self.revoked.get(key_id)
    }

    /// The revocations, sorted by key id.
    pub fn revocations(&self) -> impl Iterator<Item = &Revocation> {
        self.revoked.values()
    }

    /// The trusted keys (added and not revoked), sorted by id.
    pub fn iter(&self) -> impl Iterator<Item = &PublicKey> {
        self.keys
            .values()
            .filter(|key| !self.revoked.contains_key(key.key_id()))
    }

    /// Every key added, revoked or not, sorted by id (for listing the trust directory).
    pub fn listed_keys(&self) -> impl Iterator<Item = &PublicKey> {
        self.keys.values()
    }

    /// The number of trusted keys (added and not revoked).
    #[must_use]
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Whether the store trusts no key at all.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checks that `key_id` may sign `subject`: not revoked, and trusted.
    ///
    /// # Errors
    ///
    /// [`Error::RevokedKey`] for a revoked key (whether or not it was added), else
    /// [`Error::UnknownKey`] for a key that is not in the store.
    pub(crate) fn trusted(&self, key_id: &KeyId, subject: &str) -> Result<&PublicKey, Error> {
        if let Some(revocation) = self.revoked.get(key_id) {
            return Err(revocation.error(subject));
        }
        self.keys.get(key_id).ok_or_else(|| Error::UnknownKey {
            subject: subject.to_owned(),
            key_id: key_id.clone(),
        })
    }

    /// Loads every `*.pub.json` file directly inside `dir` (not recursively), and the revocation
    /// list `dir/revoked.json` when there is one; other files are ignored.
    ///
    /// # Errors
    ///
    /// Returns [`Error::Io`] if the directory or a file in it cannot be read (the files are
    /// read as the registry reads every home file: regular files only, bounded), the errors of
    /// [`PublicKey::read_file`] for a malformed key file, and [`Error::Malformed`] or
    /// [`Error::KeyIdMismatch`] for a malformed revocation list: one bad file fails the whole
    /// load rather than silently trusting more.
    pub fn load_dir(dir: &Path) -> Result<TrustStore, Error> {
        let mut paths = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io("read directory", dir))? {
            let path = entry.map_err(io("read directory", dir))?.path();
            let is_key = path
                .file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.ends_with(".pub.json"));
            if is_key {
                paths.push(path);
            }
        }
        paths.sort();
        let mut store = TrustStore::new();
        for path in paths {
            store.insert(PublicKey::read_file(&path)?);
        }
        for revocation in read_revocations(dir)? {
            store
                .revoked
                .entry(revocation.key_id.clone())
                .or_insert(revocation);
        }
        tracing::debug!(
            dir = %dir.display(),
            keys = store.keys.len(),
            revoked = store.revoked.len(),
            "loaded trust store"
        );
        Ok(store)
    }

    /// Writes this store's revocations to `dir/revoked.json` (atomically, replacing the file),
    /// and returns its path. The keys are not written: they are the directory's `*.pub.json`
    /// files.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if the file cannot be written.
    pub fn write_revocations(&self, dir: &Path) -> Result<PathBuf, Error> {
        let file = RevocationFile {
            revoked: self
                .revoked
                .values()
                .map(|r| RevocationEntry {
                    key_id: r.key_id.to_string(),
                    publisher: r.publisher.clone(),
                    public_key: r.public_key.as_ref().map(|k| hex::encode(k.to_bytes())),
                    reason: r.reason.clone(),
                    revoked_at: r.revoked_at.clone(),
                })
                .collect(),
        };
        let path = dir.join(REVOCATION_FILE);
        fs::write_atomic(&path, fs::to_pretty_json(&file).as_bytes())?;
        Ok(path)
    }
}

/// The revocations in `dir/revoked.json`, or none when the file does not exist.
fn read_revocations(dir: &Path) -> Result<Vec<Revocation>, Error> {
    let path = dir.join(REVOCATION_FILE);
    let text = match fs::read_to_string(&path, ReadLimit::REVOCATION_LIST) {
        Ok(text) => text,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Vec::new());
        }
        Err(e) => return Err(e),
    };
    let subject = format!("revocation list `{}`", path.display());
    let malformed = |message: String| Error::Malformed {
        subject: subject.clone(),
        message,
    };
    let file: RevocationFile = fs::parse_json(&subject, &text)?;
    let mut revocations = Vec::with_capacity(file.revoked.len());
    for entry in file.revoked {
        let key_id: KeyId = entry
            .key_id
            .parse()
            .map_err(|e: Error| malformed(e.to_string()))?;
        let public_key = match &entry.public_key {
            None => None,
            Some(hex) => {
                let mut bytes = [0; 32];
                hex::decode_to_slice(hex, &mut bytes).map_err(|e| {
                    malformed(format!(
                        "`public_key` of {key_id} must be 64 hex characters: {e}"
                    ))
                })?;
                let publisher = entry.publisher.as_deref().unwrap_or("unknown");
                let key = PublicKey::from_bytes(publisher, &bytes)
                    .map_err(|e| malformed(format!("`public_key` of {key_id}: {e}")))?;
                if *key.key_id() != key_id {
                    return Err(Error::KeyIdMismatch {
                        subject: subject.clone(),
                        found: key_id.to_string(),
                        expected: key.key_id().clone(),
                    });
                }
                Some(key)
            }
        };
        revocations.push(Revocation {
            key_id,
            publisher: entry.publisher,
            public_key,
            reason: entry.reason,
            revoked_at: entry.revoked_at,
        });
    }
    Ok(revocations)
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RevocationFile {
    revoked: Vec<RevocationEntry>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RevocationEntry {
    key_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    publisher: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    public_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    revoked_at: Option<String>,
}
