//! The notes database: one SQLite file, shared by every process of a home.
//!
//! Each connection runs in WAL mode with `synchronous = FULL` (a write that returned survives
//! a crash of the process or of the machine) and a busy timeout, and every write is an
//! `IMMEDIATE` transaction, so writers from several processes queue instead of failing on a
//! lock upgrade. Full text is an FTS5 table over the notes (external content, kept in step by
//! triggers in the same transaction); vectors are little-endian `f32` blobs compared by brute
//! force over the user's own notes.
//!
//! Every statement names the user: a note is found, changed or deleted only by its owner,
//! and another user's note id reads exactly like one that does not exist.

use std::{
    collections::{HashMap, HashSet},
    fs,
    io::ErrorKind,
    os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior, params};

use crate::{Embedder, MemoryError};

/// The schema version this crate writes (`PRAGMA user_version`).
const SCHEMA_VERSION: i64 = 1;

/// How long a statement waits for another connection's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Idle connections kept for reuse.
const POOL: usize = 4;

/// How many words of a query the full-text search uses.
const MAX_QUERY_TERMS: usize = 32;

/// The longest user id accepted, in bytes.
const MAX_USER_BYTES: usize = 256;

const SCHEMA: &str = "
CREATE TABLE notes (
    id INTEGER PRIMARY KEY,
    note_id TEXT NOT NULL UNIQUE,
    user TEXT NOT NULL,
    text TEXT NOT NULL,
    source TEXT,
    model TEXT NOT NULL,
    embedding BLOB NOT NULL,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL
);
CREATE INDEX notes_by_user ON notes (user, updated_ms);
CREATE VIRTUAL TABLE notes_fts USING fts5 (
    text,
    content = 'notes',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER notes_fts_insert AFTER INSERT ON notes BEGIN
    INSERT INTO notes_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER notes_fts_update AFTER UPDATE OF text ON notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO notes_fts (rowid, text) VALUES (new.id, new.text);
END;
";

/// Words left out of a full-text query (when it has others): they say little about what a
/// note is about, and match almost every note. The usual English list of search engines.
const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "get",
    "got",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "might",
    "more",
    "most",
    "must",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "shall",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "us",
    "use",
    "used",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// How a search weighs meaning against wording. Each part of a note's score is in 0..=1: the
/// cosine similarity of its embedding to the query's (negative similarity counts as 0), and
/// its BM25 full-text score normalised per query: divided by the query's ideal score, the sum
/// of its words' IDF (what a note of average length holding each query word once gets), and
/// capped at 1. So a note holding every word of the query scores about 1, one holding only a
/// common word of a long query little, and a note without any query word 0, however many
/// other notes match. The score is their weighted mean,
/// `(vector * cosine + text * bm25) / (vector + text)`, so only the weights' ratio matters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HybridWeights {
    /// Weight of the embedding similarity.
    pub vector: f32,
    /// Weight of the normalised BM25 score.
    pub text: f32,
}

impl HybridWeights {
    /// Full text only: what a search gives without embeddings.
    pub const TEXT_ONLY: HybridWeights = HybridWeights {
        vector: 0.0,
        text: 1.0,
    };

    /// Embeddings only.
    pub const VECTOR_ONLY: HybridWeights = HybridWeights {
        vector: 1.0,
        text: 0.0,
    };

    /// The hybrid score of a note with these parts: their weighted mean, in 0..=1.
    pub fn score(self, vector_score: f32, text_score: f32) -> f32 {
        let total = self.vector + self.text;
        if total <= 0.0 {
            return 0.0;
        }
        ((self.vector * vector_score + self.text * text_score) / total).clamp(0.0, 1.0)
    }

    pub(crate) fn check(self) -> Result<(), MemoryError> {
        let valid = |w: f32| w.is_finite() && w >= 0.0;
        if !valid(self.vector) || !valid(self.text) || self.vector + self.text <= 0.0 {
            return Err(MemoryError::InvalidArgument {
                what: "weights",
                reason: format!(
                    "vector {} and text {} must be finite, not negative, and not both 0",
                    self.vector, self.text
                ),
            });
        }
        Ok(())
    }
}

impl Default for HybridWeights {
    /// 0.7 for meaning, 0.3 for wording.
    fn default() -> HybridWeights {
        HybridWeights {
            vector: 0.7,
            text: 0.3,
        }
    }
}

/// A note as stored.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Note {
    /// Its id, `note-{uuid}`.
    pub note_id: String,
    /// Its text.
    pub text: String,
    /// Where it came from, if the saver said.
    pub source: Option<String>,
    /// The model that made its embedding (see [`Embedder::model_id`]).
    pub model: String,
    /// Its embedding.
    pub embedding: Vec<f32>,
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SearchHit {
    /// The note's id.
    pub note_id: String,
    /// The note's text.
    pub text: String,
    /// Where it came from, if the saver said.
    pub source: Option<String>,
    /// The hybrid score, in 0..=1 ([`HybridWeights::score`]).
    pub score: f32,
    /// Cosine similarity to the query, clamped to 0..=1 (0 when not compared).
    pub vector_score: f32,
    /// BM25 normalised by the query's ideal score, 0..=1 (0 when no query word is in the
    /// note); see [`HybridWeights`].
    pub text_score: f32,
}

/// What a search looks for.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// The query's text, for the full-text part.
    pub text: &'a str,
    /// The query's embedding and the model that made it (see [`Embedder::model_id`]), for the
    /// vector part; notes embedded by another model get no vector score.
    pub embedding: Option<(&'a str, &'a [f32])>,
    /// How many results at most.
    pub top_k: usize,
    /// How the two parts are weighed.
    pub weights: HybridWeights,
}

/// The notes database of a home. Cheap to clone and safe to share between threads; several
/// processes may open the same file at once.
///
/// Every method blocks on SQLite (and may wait up to 10 s for another writer's lock): call it
/// from a blocking thread, not from an async task.
#[derive(Debug, Clone)]
pub struct MemoryStore {
    inner: Arc<StoreInner>,
}

#[derive(Debug)]
struct StoreInner {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

impl MemoryStore {
    /// Where a home keeps its notes: `<home>/memory/notes.sqlite3`.
    pub fn path_in_home(home: &Path) -> PathBuf {
        home.join("memory").join("notes.sqlite3")
    }

    /// Opens the notes database of the home at `home` ([`MemoryStore::path_in_home`]).
    ///
    /// # Errors
    /// As [`MemoryStore::open`].
    pub fn open_in_home(home: &Path) -> Result<MemoryStore, MemoryError> {
        MemoryStore::open(MemoryStore::path_in_home(home))
    }

    /// Opens the database at `path`, creating it (and its directory, private to the user) and
    /// its tables when missing.
    ///
    /// # Errors
    /// [`MemoryError::Database`] when it cannot be created or opened (or is not a notes
    /// database); [`MemoryError::NewerSchema`] when a newer Locara wrote it.
    pub fn open(path: impl Into<PathBuf>) -> Result<MemoryStore, MemoryError> {
        let path = path.into();
        let db_error = |action, e: std::io::Error| MemoryError::Database {
            action,
            path: path.clone(),
            source: e.into(),
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| db_error("create the directory of", e))?;
        }
        // Created 0600 before SQLite sees it: its journal files copy the file's mode.
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(db_error("create", e)),
        }
        let store = MemoryStore {
            inner: Arc::new(StoreInner {
                path,
                idle: Mutex::new(Vec::new()),
            }),
        };
        let mut conn = store.connect()?;
        store.migrate(&mut conn)?;
        store.give_back(conn);
        Ok(store)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    fn error(&self, action: &'static str) -> impl Fn(rusqlite::Error) -> MemoryError + '_ {
        move |e| MemoryError::Database {
            action,
            path: self.inner.path.clone(),
            source: e.into(),
        }
    }

    fn connect(&self) -> Result<Connection, MemoryError> {
        let conn = Connection::open(&self.inner.path).map_err(self.error("open"))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(self.error("configure"))?;
        // WAL persists in the file; asking again is cheap and makes a new file WAL.
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(self.error("configure"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(MemoryError::Database {
                action: "configure",
                path: self.inner.path.clone(),
                source: format!("journal mode is `{mode}`, not `wal`").into(),
            });
        }
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA trusted_schema = OFF;")
            .map_err(self.error("configure"))?;
        Ok(conn)
    }

    fn migrate(&self, conn: &mut Connection) -> Result<(), MemoryError> {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(self.error("lock"))?;
        let version: i64 = tx
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(self.error("read"))?;
        match version {
            0 => {
                tx.execute_batch(SCHEMA)
                    .map_err(self.error("create the tables of"))?;
                tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
                    .map_err(self.error("write"))?;
            }
            SCHEMA_VERSION => {}
            found if found > SCHEMA_VERSION => {
                return Err(MemoryError::NewerSchema {
                    path: self.inner.path.clone(),
                    found,
                    supported: SCHEMA_VERSION,
                });
            }
            found => {
                return Err(MemoryError::Database {
                    action: "read",
                    path: self.inner.path.clone(),
                    source: format!("unknown schema version {found}").into(),
                });
            }
        }
        tx.commit().map_err(self.error("write"))
    }

    fn give_back(&self, conn: Connection) {
        let mut idle = self.inner.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < POOL {
            idle.push(conn);
        }
    }

    /// Runs `f` on a pooled connection. A connection is put back only after `f` succeeded,
    /// so one left in an odd state by an error is dropped.
    fn with_conn<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, MemoryError>,
    ) -> Result<T, MemoryError> {
        let pooled = self
            .inner
            .idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop();
        let mut conn = match pooled {
            Some(conn) => conn,
            None => self.connect()?,
        };
        let result = f(&mut conn)?;
        self.give_back(conn);
        Ok(result)
    }

    /// Saves a new note for `user` and returns its id, `note-{uuid}`. When this returns, the
    /// note is on disk.
    ///
    /// # Errors
    /// [`MemoryError::NoUser`] for an empty user; [`MemoryError::Database`].
    pub fn insert(
        &self,
        user: &str,
        text: &str,
        source: Option<&str>,
        model: &str,
        embedding: &[f32],
    ) -> Result<String, MemoryError> {
        check_user(user)?;
        let note_id = format!("note-{}", uuid::Uuid::new_v4());
        let now = now_ms();
        self.with_conn(|conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(self.error("lock"))?;
            tx.execute(
                "INSERT INTO notes (note_id, user, text, source, model, embedding, created_ms, updated_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
                params![note_id, user, text, source, model, to_blob(embedding), now],
            )
            .map_err(self.error("write"))?;
            tx.commit().map_err(self.error("write"))
        })?;
        Ok(note_id)
    }

    /// Replaces the text and embedding of `user`'s note `note_id`, and its source when
    /// `source` is given (else it keeps the one it had).
    ///
    /// # Errors
    /// [`MemoryError::NoNote`] when `user` has no such note (another user's note included);
    /// [`MemoryError::NoUser`]; [`MemoryError::Database`].
    pub fn update(
        &self,
        user: &str,
        note_id: &str,
        text: &str,
        source: Option<&str>,
        model: &str,
        embedding: &[f32],
    ) -> Result<(), MemoryError> {
        check_user(user)?;
        let changed = self.with_conn(|conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(self.error("lock"))?;
            let changed = tx
                .execute(
                    "UPDATE notes SET text = ?3, source = coalesce(?4, source), model = ?5,
                         embedding = ?6, updated_ms = ?7
                     WHERE note_id = ?1 AND user = ?2",
                    params![
                        note_id,
                        user,
                        text,
                        source,
                        model,
                        to_blob(embedding),
                        now_ms()
                    ],
                )
                .map_err(self.error("write"))?;
            tx.commit().map_err(self.error("write"))?;
            Ok(changed)
        })?;
        if changed == 0 {
            return Err(no_note(note_id));
        }
        Ok(())
    }

    /// Deletes `user`'s note `note_id`.
    ///
    /// # Errors
    /// [`MemoryError::NoNote`] when `user` has no such note (another user's note included);
    /// [`MemoryError::NoUser`]; [`MemoryError::Database`].
    pub fn delete(&self, user: &str, note_id: &str) -> Result<(), MemoryError> {
        check_user(user)?;
        let changed = self.with_conn(|conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(self.error("lock"))?;
            let changed = tx
                .execute(
                    "DELETE FROM notes WHERE note_id = ?1 AND user = ?2",
                    params![note_id, user],
                )
                .map_err(self.error("write"))?;
            tx.commit().map_err(self.error("write"))?;
            Ok(changed)
        })?;
        if changed == 0 {
            return Err(no_note(note_id));
        }
        Ok(())
    }

    /// `user`'s note `note_id`.
    ///
    /// # Errors
    /// [`MemoryError::NoNote`] when `user` has no such note (another user's note included);
    /// [`MemoryError::NoUser`]; [`MemoryError::Database`].
    pub fn get(&self, user: &str, note_id: &str) -> Result<Note, MemoryError> {
        check_user(user)?;
        let note = self.with_conn(|conn| {
            conn.query_row(
                "SELECT note_id, text, source, model, embedding FROM notes
                 WHERE note_id = ?1 AND user = ?2",
                params![note_id, user],
                |row| {
                    Ok(Note {
                        note_id: row.get(0)?,
                        text: row.get(1)?,
                        source: row.get(2)?,
                        model: row.get(3)?,
                        embedding: from_blob(&row.get::<_, Vec<u8>>(4)?),
                    })
                },
            )
            .optional()
            .map_err(self.error("read"))
        })?;
        note.ok_or_else(|| no_note(note_id))
    }

    /// How many notes `user` has.
    ///
    /// # Errors
    /// [`MemoryError::NoUser`]; [`MemoryError::Database`].
    pub fn count(&self, user: &str) -> Result<usize, MemoryError> {
        check_user(user)?;
        self.with_conn(|conn| {
            conn.query_row(
                "SELECT count(*) FROM notes WHERE user = ?1",
                params![user],
                |row| row.get::<_, i64>(0),
            )
            .map(|n| usize::try_from(n).unwrap_or(0))
            .map_err(self.error("read"))
        })
    }

    /// `user`'s best notes for `query`, best first: at most `top_k`, each with a score above 0.
    ///
    /// Full text and vectors are read from one snapshot of the database. BM25's word
    /// statistics come from the whole full-text index (every user's notes), but only `user`'s
    /// notes are matched, scored or returned.
    ///
    /// # Errors
    /// [`MemoryError::InvalidArgument`] for weights that are negative or both 0;
    /// [`MemoryError::NoUser`]; [`MemoryError::Database`].
    pub fn search(&self, user: &str, query: &Query<'_>) -> Result<Vec<SearchHit>, MemoryError> {
        check_user(user)?;
        query.weights.check()?;
        if query.top_k == 0 {
            return Ok(Vec::new());
        }
        let terms = if query.weights.text > 0.0 {
            fts_terms(query.text)
        } else {
            Vec::new()
        };
        let query_vector = query.embedding.filter(|_| query.weights.vector > 0.0);
        self.with_conn(|conn| {
            let tx = conn.transaction().map_err(self.error("read"))?;
            // Each candidate's (vector score, text score).
            let mut scores: HashMap<i64, (f32, f32)> = HashMap::new();
            if !terms.is_empty() {
                // The statistics bm25() uses: rows in the index, rows holding each term.
                let rows: f64 = tx
                    .query_row("SELECT count(*) FROM notes", [], |row| row.get::<_, i64>(0))
                    .map_err(self.error("read"))? as f64;
                let mut ideal = 0.0f64;
                for term in &terms {
                    let holding: f64 = tx
                        .query_row(
                            "SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?1",
                            params![term],
                            |row| row.get::<_, i64>(0),
                        )
                        .map_err(self.error("read"))? as f64;
                    ideal += idf(rows, holding);
                }
                let mut statement = tx
                    .prepare(
                        "SELECT notes.id, bm25(notes_fts) FROM notes_fts
                         JOIN notes ON notes.id = notes_fts.rowid
                         WHERE notes_fts MATCH ?1 AND notes.user = ?2",
                    )
                    .map_err(self.error("read"))?;
                let matches = statement
                    .query_map(params![terms.join(" OR "), user], |row| {
                        Ok((row.get::<_, i64>(0)?, row.get::<_, f64>(1)?))
                    })
                    .map_err(self.error("read"))?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(self.error("read"))?;
                if ideal > 0.0 {
                    for (id, bm25) in matches {
                        // FTS5's bm25() is negative: the more relevant, the lower.
                        scores.entry(id).or_default().1 = ((-bm25) / ideal).clamp(0.0, 1.0) as f32;
                    }
                }
            }
            if let Some((model, query_vector)) = query_vector {
                let mut statement = tx
                    .prepare("SELECT id, embedding FROM notes WHERE user = ?1 AND model = ?2")
                    .map_err(self.error("read"))?;
                let mut rows = statement
                    .query(params![user, model])
                    .map_err(self.error("read"))?;
                while let Some(row) = rows.next().map_err(self.error("read"))? {
                    let id: i64 = row.get(0).map_err(self.error("read"))?;
                    let blob = row.get_ref(1).map_err(self.error("read"))?;
                    let vector = from_blob(blob.as_blob().unwrap_or_default());
                    let cosine = Embedder::similarity(query_vector, &vector).max(0.0);
                    scores.entry(id).or_default().0 = cosine;
                }
            }
            let weights = query.weights;
            let mut ranked: Vec<(i64, f32, f32, f32)> = scores
                .into_iter()
                .map(|(id, (v, t))| (id, weights.score(v, t), v, t))
                .filter(|(_, score, _, _)| *score > 0.0)
                .collect();
            // Best first; among equals, the newer note.
            ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
            ranked.truncate(query.top_k);
            let mut hits = Vec::with_capacity(ranked.len());
            let mut statement = tx
                .prepare("SELECT note_id, text, source FROM notes WHERE id = ?1")
                .map_err(self.error("read"))?;
            for (id, score, vector_score, text_score) in ranked {
                let (note_id, text, source) = statement
                    .query_row(params![id], |row| {
                        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                    })
                    .map_err(self.error("read"))?;
                hits.push(SearchHit {
                    note_id,
                    text,
                    source,
                    score,
                    vector_score,
                    text_score,
                });
            }
            drop(statement);
            tx.commit().map_err(self.error("read"))?;
            Ok(hits)
        })
    }

    /// Checks the database and its full-text index.
    ///
    /// # Errors
    /// [`MemoryError::Corrupt`] with SQLite's report; [`MemoryError::Database`].
    pub fn check_integrity(&self) -> Result<(), MemoryError> {
        self.with_conn(|conn| {
            let report: String = conn
                .query_row("PRAGMA integrity_check", [], |row| row.get(0))
                .map_err(self.error("check"))?;
            if report != "ok" {
                return Err(MemoryError::Corrupt {
                    path: self.inner.path.clone(),
                    report,
                });
            }
            conn.execute(
                "INSERT INTO notes_fts (notes_fts, rank) VALUES ('integrity-check', 1)",
                [],
            )
            .map_err(|e| MemoryError::Corrupt {
                path: self.inner.path.clone(),
                report: format!("full-text index: {e}"),
            })?;
            Ok(())
        })
    }

    /// Whether this SQLite has FTS5 and the notes' full-text table is an FTS5 table.
    ///
    /// # Errors
    /// [`MemoryError::Database`].
    pub fn has_fts5(&self) -> Result<bool, MemoryError> {
        self.with_conn(|conn| {
            let compiled: bool = conn
                .query_row(
                    "SELECT sqlite_compileoption_used('ENABLE_FTS5')",
                    [],
                    |row| row.get(0),
                )
                .map_err(self.error("read"))?;
            let table: Option<String> = conn
                .query_row(
                    "SELECT sql FROM sqlite_schema WHERE name = 'notes_fts'",
                    [],
                    |row| row.get(0),
                )
                .optional()
                .map_err(self.error("read"))?;
            Ok(compiled && table.is_some_and(|sql| sql.contains("USING fts5")))
        })
    }
}

fn check_user(user: &str) -> Result<(), MemoryError> {
    if user.trim().is_empty() {
        return Err(MemoryError::NoUser);
    }
    if user.len() > MAX_USER_BYTES || user.chars().any(char::is_control) {
        return Err(MemoryError::InvalidArgument {
            what: "user",
            reason: format!(
                "a user id is at most {MAX_USER_BYTES} bytes without control characters"
            ),
        });
    }
    Ok(())
}

fn no_note(note_id: &str) -> MemoryError {
    MemoryError::NoNote {
        note_id: note_id.to_owned(),
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_blob(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// FTS5's IDF of a term held by `holding` of `rows` rows (as its `bm25()` computes it).
fn idf(rows: f64, holding: f64) -> f64 {
    let idf = ((rows - holding + 0.5) / (holding + 0.5)).ln();
    if idf <= 0.0 { 1e-6 } else { idf }
}

/// The FTS5 phrases of free text: its words, each quoted (so nothing in them is FTS5 syntax),
/// to be joined with `OR`. Stopwords and one-letter words (the `s` of `car's`) are left out
/// unless nothing else is left; empty when the text has no word.
fn fts_terms(text: &str) -> Vec<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let content: Vec<&String> = words
        .iter()
        .filter(|w| w.chars().nth(1).is_some() && !STOPWORDS.contains(&w.as_str()))
        .collect();
    let chosen = if content.is_empty() {
        words.iter().collect()
    } else {
        content
    };
    let mut seen = HashSet::new();
    chosen
        .into_iter()
        .filter(|w| seen.insert(w.as_str()))
        .take(MAX_QUERY_TERMS)
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_becomes_quoted_words_without_stopwords() {
        assert_eq!(
            fts_terms("What is the car's NEAR(tyre) \"pressure\"?").join(" OR "),
            r#""car" OR "near" OR "tyre" OR "pressure""#
        );
        assert_eq!(fts_terms("the of a"), [r#""the""#, r#""of""#, r#""a""#]);
        assert!(fts_terms(" -- ** ").is_empty());
    }

    #[test]
    fn blobs_round_trip() {
        let v = vec![0.25f32, -1.5, f32::MIN_POSITIVE];
        assert_eq!(from_blob(&to_blob(&v)), v);
    }
}
