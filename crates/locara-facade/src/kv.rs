//! The app's `kv` store, opened on first use: most calls never touch it, and opening SQLite
//! would add to every `Locara::new`. A failed open is not remembered: the next call tries
//! again, so a host outlives a home that was briefly unwritable.

use std::{path::PathBuf, sync::OnceLock};

use locara_kv::{KvLimits, KvStore};
use serde_json::Value;

/// The store at `path` for app `app`, opened by the first call that uses it.
#[derive(Debug)]
pub(crate) struct LazyKv {
    path: PathBuf,
    app: String,
    store: OnceLock<KvStore>,
}

impl LazyKv {
    pub(crate) fn new(path: PathBuf, app: &str) -> LazyKv {
        LazyKv {
            path,
            app: app.to_owned(),
            store: OnceLock::new(),
        }
    }

    fn store(&self) -> Result<&KvStore, String> {
        if let Some(store) = self.store.get() {
            return Ok(store);
        }
        // Two first calls may both open it; one store is kept, and SQLite lets the other go.
        let store =
            KvStore::open(&self.path, &self.app, KvLimits::default()).map_err(|e| e.to_string())?;
        Ok(self.store.get_or_init(|| store))
    }
}

impl locara_exec::KvStore for LazyKv {
    fn get(&self, key: &str) -> Result<Option<Value>, String> {
        self.store()?.get(key).map_err(|e| e.to_string())
    }

    fn set(&self, key: &str, value: &str) -> Result<(), String> {
        self.store()?.set(key, value).map_err(|e| e.to_string())
    }

    fn delete(&self, key: &str) -> Result<bool, String> {
        self.store()?.delete(key).map_err(|e| e.to_string())
    }

    fn list(&self, prefix: &str, limit: usize) -> Result<Vec<String>, String> {
        self.store()?.list(prefix, limit).map_err(|e| e.to_string())
    }
}
