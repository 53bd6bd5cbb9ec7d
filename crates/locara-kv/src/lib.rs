//! The key-value store behind the `kv` host service: JSON values under string keys, one
//! namespace per app, in one SQLite database under the home (`<home>/state/kv.sqlite`).
//!
//! It knows how to keep pairs durably and within bounds: every write is its own transaction in
//! WAL mode (a process killed after `set` returned loses nothing, and readers in other
//! processes never see half a write), several processes may share the file (writers wait for
//! each other up to [`BUSY_TIMEOUT`]), and an app holds at most [`KvLimits`] keys and bytes, a
//! write that would pass them refused whole. It deliberately knows nothing of tools, grants
//! or the request format: `locara-exec` decides who may call `kv` and checks each request's
//! key and value sizes; this crate only stores what it is handed, for the app it was opened
//! for.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde_json::Value;

/// How long a write waits for another process's write to finish.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// What one app may keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct KvLimits {
    /// The most keys.
    pub max_keys: u64,
    /// The most bytes of keys and values together.
    pub max_bytes: u64,
}

impl Default for KvLimits {
    /// 10,000 keys and 16 MiB per app.
    fn default() -> KvLimits {
        KvLimits {
            max_keys: 10_000,
            max_bytes: 16 << 20,
        }
    }
}

impl KvLimits {
    /// At most `max_keys` keys and `max_bytes` bytes.
    pub fn new(max_keys: u64, max_bytes: u64) -> KvLimits {
        KvLimits {
            max_keys,
            max_bytes,
        }
    }
}

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The database could not be opened, read or written.
    #[error("the key-value store at {path} failed: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// The directory of the database could not be created.
    #[error("cannot create {path}: {source}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A write would take the app past its limits; nothing was changed.
    #[error(
        "the app `{app}` would hold {keys} keys and {bytes} bytes, above its limits of {max_keys} keys and {max_bytes} bytes: delete keys it no longer needs"
    )]
    Quota {
        /// The app.
        app: String,
        /// Keys after the write.
        keys: u64,
        /// Bytes after the write.
        bytes: u64,
        /// The key limit.
        max_keys: u64,
        /// The byte limit.
        max_bytes: u64,
    },
    /// A stored value is not JSON (the file was edited by something else).
    #[error("the value of `{key}` in {path} is not JSON: {source}")]
    Corrupt {
        /// The key.
        key: String,
        /// The database file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
}

/// One app's pairs in a database file. Cheap to clone; safe to share between threads.
#[derive(Debug, Clone)]
pub struct KvStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    app: String,
    limits: KvLimits,
    connection: Mutex<Connection>,
}

impl KvStore {
    /// Opens (creating when missing) the database at `path` and the namespace of `app`.
    ///
    /// # Errors
    /// [`Error::Dir`] or [`Error::Sqlite`] when the file cannot be created or opened.
    pub fn open(path: impl AsRef<Path>, app: &str, limits: KvLimits) -> Result<KvStore, Error> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| Error::Dir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let sqlite = |source| Error::Sqlite {
            path: path.clone(),
            source,
        };
        let connection = Connection::open(&path).map_err(sqlite)?;
        connection.busy_timeout(BUSY_TIMEOUT).map_err(sqlite)?;
        // WAL: readers never block the writer; `synchronous = FULL` makes a commit durable
        // once `set` returns, not only at the next checkpoint.
        connection
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(sqlite)?;
        connection
            .pragma_update(None, "synchronous", "FULL")
            .map_err(sqlite)?;
        connection
            .execute_batch(
                "CREATE TABLE IF NOT EXISTS kv (
                    app TEXT NOT NULL,
                    key TEXT NOT NULL,
                    value TEXT NOT NULL,
                    PRIMARY KEY (app, key)
                ) WITHOUT ROWID;",
            )
            .map_err(sqlite)?;
        Ok(KvStore {
            inner: Arc::new(Inner {
                path,
                app: app.to_owned(),
                limits,
                connection: Mutex::new(connection),
            }),
        })
    }

    /// The app whose pairs these are.
    pub fn app(&self) -> &str {
        &self.inner.app
    }

    fn sqlite(&self, source: rusqlite::Error) -> Error {
        Error::Sqlite {
            path: self.inner.path.clone(),
            source,
        }
    }

    fn connection(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.inner
            .connection
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The value of `key`, if set.
    ///
    /// # Errors
    /// [`Error::Sqlite`], or [`Error::Corrupt`] for a stored value that is not JSON.
    pub fn get(&self, key: &str) -> Result<Option<Value>, Error> {
        let text: Option<String> = self
            .connection()
            .query_row(
                "SELECT value FROM kv WHERE app = ?1 AND key = ?2",
                params![self.inner.app, key],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| self.sqlite(e))?;
        text.map(|text| {
            serde_json::from_str(&text).map_err(|source| Error::Corrupt {
                key: key.to_owned(),
                path: self.inner.path.clone(),
                source,
            })
        })
        .transpose()
    }

    /// Sets `key` to `value` (JSON text), within the app's limits, durably.
    ///
    /// # Errors
    /// [`Error::Quota`] when the app would pass its limits (nothing changes), [`Error::Sqlite`].
    pub fn set(&self, key: &str, value: &str) -> Result<(), Error> {
        let mut connection = self.connection();
        let app = &self.inner.app;
        let tx = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.sqlite(e))?;
        let (keys, bytes): (i64, i64) = tx
            .query_row(
                "SELECT COUNT(*), COALESCE(SUM(LENGTH(CAST(key AS BLOB)) + LENGTH(CAST(value AS BLOB))), 0)
                 FROM kv WHERE app = ?1",
                params![app],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .map_err(|e| self.sqlite(e))?;
        let old: Option<i64> = tx
            .query_row(
                "SELECT LENGTH(CAST(key AS BLOB)) + LENGTH(CAST(value AS BLOB)) FROM kv WHERE app = ?1 AND key = ?2",
                params![app, key],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| self.sqlite(e))?;
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        let new = (key.len() + value.len()) as u64;
        let keys = count(keys) + u64::from(old.is_none());
        let bytes = count(bytes) - count(old.unwrap_or(0)) + new;
        let limits = self.inner.limits;
        if keys > limits.max_keys || bytes > limits.max_bytes {
            return Err(Error::Quota {
                app: app.clone(),
                keys,
                bytes,
                max_keys: limits.max_keys,
                max_bytes: limits.max_bytes,
            });
        }
        tx.execute(
            "INSERT INTO kv (app, key, value) VALUES (?1, ?2, ?3)
             ON CONFLICT (app, key) DO UPDATE SET value = excluded.value",
            params![app, key, value],
        )
        .map_err(|e| self.sqlite(e))?;
        tx.commit().map_err(|e| self.sqlite(e))
    }

    /// Removes `key`; whether it was set.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn delete(&self, key: &str) -> Result<bool, Error> {
        let removed = self
            .connection()
            .execute(
                "DELETE FROM kv WHERE app = ?1 AND key = ?2",
                params![self.inner.app, key],
            )
            .map_err(|e| self.sqlite(e))?;
        Ok(removed > 0)
    }

    /// The keys starting with `prefix`, in byte order, at most `limit`.
    ///
    /// # Errors
    /// [`Error::Sqlite`].
    pub fn list(&self, prefix: &str, limit: usize) -> Result<Vec<String>, Error> {
        let connection = self.connection();
        // `substr` compares the prefix exactly: `LIKE` would read `%` and `_` in it as patterns
        // and ignore case.
        let mut statement = connection
            .prepare(
                "SELECT key FROM kv WHERE app = ?1 AND substr(key, 1, length(?2)) = ?2
                 ORDER BY CAST(key AS BLOB) LIMIT ?3",
            )
            .map_err(|e| self.sqlite(e))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let keys = statement
            .query_map(params![self.inner.app, prefix, limit], |row| row.get(0))
            .map_err(|e| self.sqlite(e))?
            .collect::<Result<Vec<String>, _>>()
            .map_err(|e| self.sqlite(e))?;
        Ok(keys)
    }
}

impl locara_exec::KvStore for KvStore {
    fn get(&self, key: &str) -> Result<Option<Value>, String> {
        KvStore::get(self, key).map_err(|e| e.to_string())
    }

    fn set(&self, key: &str, value: &str) -> Result<(), String> {
        KvStore::set(self, key, value).map_err(|e| e.to_string())
    }

    fn delete(&self, key: &str) -> Result<bool, String> {
        KvStore::delete(self, key).map_err(|e| e.to_string())
    }

    fn list(&self, prefix: &str, limit: usize) -> Result<Vec<String>, String> {
        KvStore::list(self, prefix, limit).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests;
