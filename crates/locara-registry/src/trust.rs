//! The trust store: the public keys whose signatures the registry accepts.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::io;
use crate::{Error, KeyId, PublicKey};

/// A set of trusted public keys, by [`KeyId`].
///
/// Built in code with [`TrustStore::with_key`] or loaded from a directory of `*.pub.json` files
/// with [`TrustStore::load_dir`]. An empty store trusts nothing, so every resolve fails with
/// [`Error::UnknownKey`].
#[derive(Debug, Clone, Default)]
pub struct TrustStore {
    keys: BTreeMap<KeyId, PublicKey>,
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

    /// Adds a key, returning the key previously stored under the same id.
    pub fn insert(&mut self, key: PublicKey) -> Option<PublicKey> {
        self.keys.insert(key.key_id().clone(), key)
    }

    /// The trusted key with this id.
    #[must_use]
    pub fn get(&self, key_id: &KeyId) -> Option<&PublicKey> {
        self.keys.get(key_id)
    }

    /// The trusted keys, sorted by id.
    pub fn iter(&self) -> impl Iterator<Item = &PublicKey> {
        self.keys.values()
    }

    /// The number of trusted keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the store trusts no key at all.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Loads every `*.pub.json` file directly inside `dir` (not recursively); other files are
    /// ignored.
    ///
    /// # Errors
    ///
    /// Returns [`Error::Io`] if the directory or a key file cannot be read, and the errors of
    /// [`PublicKey::read_file`] for a malformed key file: one bad file fails the whole load
    /// rather than silently trusting less.
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
        tracing::debug!(dir = %dir.display(), keys = store.len(), "loaded trust store");
        Ok(store)
    }
}
