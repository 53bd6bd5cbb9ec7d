//! Agent memory: a user's notes, saved by the agent and found again by meaning and by
//! wording, behind four in-process tools (`memory.save`, `memory.search`, `memory.update`,
//! `memory.delete`).
//!
//! What it knows: one SQLite database per home ([`MemoryStore`], `<home>/memory/notes.sqlite3`,
//! WAL mode, safe for several processes at once and for a crash at any moment), with FTS5 for
//! full text and an all-MiniLM-L6-v2 embedding per note, computed natively on rten's matrix
//! kernels from the text's WordPiece tokens ([`Embedder`], loaded from the home's model store
//! only after it verified the pinned files); a search ranks the user's notes by a weighted
//! mean of the cosine similarity and of BM25 normalised per query ([`HybridWeights`]). Every
//! note belongs to one user, and every operation is scoped by the user of the call's
//! [`CallContext`](locara_exec::CallContext).
//!
//! What it deliberately does not: take the user from a tool's arguments (a model chooses
//! arguments, the host chooses whose memory it is), download anything (the model is
//! installed by `locara models fetch`, from the package its manifests name), index vectors
//! (a search compares the query with each of the user's notes, which is fast for thousands
//! of notes), decide what is worth remembering or when to forget (the agent does), or
//! encrypt notes (the database is private to the home's owner, mode 0600 in a 0700
//! directory). The [`Embedder`] is public so that other parts of the host can compare texts
//! by meaning too.

mod bert;
mod embed;
mod error;
mod lazy;
mod store;
mod tools;
mod wordpiece;

pub use crate::{
    embed::{
        EMBEDDING_DIMENSIONS, EMBEDDING_MODEL, Embedder, MAX_TOKENS, TOKENIZER_FILE, WEIGHTS_FILE,
        model_dependencies,
    },
    error::{BoxedSource, MemoryError},
    lazy::LazyMemory,
    store::{HybridWeights, MemoryStore, Note, Query, SearchHit},
    tools::{
        DEFAULT_TOP_K, MAX_QUERY_CHARS, MAX_SOURCE_CHARS, MAX_TEXT_CHARS, MAX_TOP_K, MEMORY_DELETE,
        MEMORY_SAVE, MEMORY_SEARCH, MEMORY_UPDATE, Memory, manifests, memory_tools,
    },
};
