//! Memory a host registers at start and loads on first use.
//!
//! Opening the database is cheap, but loading the model reads and hashes 90 MB, which a host
//! that never calls a memory tool should not pay, and a host whose model is not installed
//! yet must still start (and list the tools). A failed load is not remembered: the next call
//! tries again, so `locara models fetch` fixes a running server without a restart.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex, PoisonError},
};

use locara_exec::HostTool;
use locara_registry::ModelStore;

use crate::{Embedder, HybridWeights, Memory, MemoryError, MemoryStore, tools};

/// The memory of a home, loaded when first needed. Cheap to clone; clones share what they
/// load.
#[derive(Debug, Clone)]
pub struct LazyMemory {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    database: PathBuf,
    models: ModelStore,
    weights: HybridWeights,
    embedder: Mutex<Option<Embedder>>,
    memory: Mutex<Option<Memory>>,
}

impl LazyMemory {
    /// The memory of the home `home` (`<home>/memory/notes.sqlite3`), with the embedding
    /// model taken from `models` (`<home>/models`). Touches no file.
    pub fn in_home(home: &Path, models: impl Into<PathBuf>) -> LazyMemory {
        LazyMemory::new(MemoryStore::path_in_home(home), models)
    }

    /// Memory in the database file `database`, with the model taken from `models`.
    pub fn new(database: impl Into<PathBuf>, models: impl Into<PathBuf>) -> LazyMemory {
        LazyMemory {
            inner: Arc::new(Inner {
                database: database.into(),
                models: ModelStore::new(models),
                weights: HybridWeights::default(),
                embedder: Mutex::default(),
                memory: Mutex::default(),
            }),
        }
    }

    /// Searches with `weights` instead of the default.
    ///
    /// # Errors
    /// [`MemoryError::InvalidArgument`] for weights that are negative, not finite, or both 0.
    pub fn with_weights(self, weights: HybridWeights) -> Result<LazyMemory, MemoryError> {
        weights.check()?;
        let inner = &self.inner;
        Ok(LazyMemory {
            inner: Arc::new(Inner {
                database: inner.database.clone(),
                models: ModelStore::new(inner.models.root()),
                weights,
                embedder: Mutex::default(),
                memory: Mutex::default(),
            }),
        })
    }

    /// Whether the model's files are in the store (by name: loading checks their bytes).
    /// A host uses it to decide whether to search by meaning without paying for a load that
    /// would fail.
    pub fn model_installed(&self) -> bool {
        tools::search_manifest()
            .model_dependencies
            .iter()
            .all(|model| self.inner.models.contains(model))
    }

    /// The embedder, loaded (and verified) on the first call that succeeds.
    ///
    /// # Errors
    /// As [`Embedder::load`]; a later call tries again.
    pub fn embedder(&self) -> Result<Embedder, MemoryError> {
        let mut slot = self
            .inner
            .embedder
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(embedder) = &*slot {
            return Ok(embedder.clone());
        }
        let embedder = Embedder::load(&self.inner.models)?;
        *slot = Some(embedder.clone());
        Ok(embedder)
    }

    /// The memory, its database opened and its model loaded on the first call that succeeds.
    ///
    /// # Errors
    /// As [`MemoryStore::open`] and [`Embedder::load`]; a later call tries again.
    pub fn memory(&self) -> Result<Memory, MemoryError> {
        let mut slot = self
            .inner
            .memory
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(memory) = &*slot {
            return Ok(memory.clone());
        }
        let store = MemoryStore::open(&self.inner.database)?;
        let memory = Memory::new(store, self.embedder()?).with_weights(self.inner.weights)?;
        *slot = Some(memory.clone());
        Ok(memory)
    }

    /// The four memory tools, to register with the host; the first call loads the memory.
    pub fn tools(&self) -> Vec<HostTool> {
        tools::tools_over(&tools::Source::Lazy(self.clone()))
    }
}
