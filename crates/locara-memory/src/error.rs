//! The one error type of this crate.

use std::path::PathBuf;

/// A boxed error from a library this crate uses (SQLite, the model files), kept out of
/// the public API as a concrete type.
pub type BoxedSource = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can stop a memory operation.
///
/// Messages are lower-case and say what to do; a wrapped error is the
/// [`source`](std::error::Error::source), not repeated in the message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// The call names no user: memory is per user, and only the host says whose it is.
    #[error(
        "memory tools need a user: the host sets it (`--user` on the CLI, `CallContext::user` for a program embedding Locara), never a tool's arguments"
    )]
    NoUser,

    /// The user has no note with this id (it never existed, was deleted, or is another user's:
    /// the three look the same).
    #[error("no note `{note_id}`")]
    NoNote {
        /// The id asked for.
        note_id: String,
    },

    /// An argument is out of range (the tools' input schemas refuse these before a call).
    #[error("invalid {what}: {reason}")]
    InvalidArgument {
        /// Which argument, e.g. `top_k`.
        what: &'static str,
        /// Why.
        reason: String,
    },

    /// The embedding model is not installed in the model store, or is not what it pins; the
    /// registry's message names `locara models fetch`.
    #[error(transparent)]
    Model(#[from] locara_registry::Error),

    /// The model's files were installed and verified but could not be loaded.
    #[error("cannot load the embedding model `{}`", path.display())]
    ModelLoad {
        /// The file that failed.
        path: PathBuf,
        /// Why.
        #[source]
        source: BoxedSource,
    },

    /// Embedding a text failed.
    #[error("cannot embed the text")]
    Embed(#[source] BoxedSource),

    /// The database could not be opened, read or written.
    #[error("cannot {action} the memory database `{}`", path.display())]
    Database {
        /// What was being done, e.g. `open`.
        action: &'static str,
        /// The database file.
        path: PathBuf,
        /// Why.
        #[source]
        source: BoxedSource,
    },

    /// The database was written by a newer version of this crate.
    #[error(
        "the memory database `{}` has schema version {found}, newer than this Locara's {supported}; upgrade Locara",
        path.display()
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// The schema version it has.
        found: i64,
        /// The newest this crate knows.
        supported: i64,
    },

    /// The database is damaged (`PRAGMA integrity_check`, or the full-text index's own check).
    #[error("the memory database `{}` is damaged: {report}", path.display())]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What the check said.
        report: String,
    },
}

impl MemoryError {
    /// What the caller can do about it, for a tool's error hint.
    pub fn hint(&self) -> &'static str {
        match self {
            MemoryError::NoUser => "ask the host to name the user the call is for",
            MemoryError::NoNote { .. } => {
                "search memory (memory.search) for the note's current id; a deleted note is gone"
            }
            MemoryError::InvalidArgument { .. } => "fix the argument and call again",
            MemoryError::Model(_) | MemoryError::ModelLoad { .. } => {
                "the host's embedding model is missing or broken: run `locara models fetch memory.search`"
            }
            MemoryError::Embed(_) => "try a shorter or plainer text",
            MemoryError::Database { .. } => {
                "the memory database is busy or unreadable; try again, and tell the host if it persists"
            }
            MemoryError::NewerSchema { .. } | MemoryError::Corrupt { .. } => {
                "tell the host: the memory database needs attention"
            }
        }
    }
}
