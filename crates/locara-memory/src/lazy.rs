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
        LazyMemory::with(database.into(), models.into(), HybridWeights::default())
    }

    /// Searches with `weights` instead of the default.
    ///
    /// # Errors
    /// [`MemoryError::InvalidArgument`] for weights that are negative, not finite, or both 0.
    pub fn with_weights(self, weights: HybridWeights) -> Result<LazyMemory, MemoryError> {
        weights.check()?;
        let inner = &self.inner;
        Ok(LazyMemory::with(
            inner.database.clone(),
            inner.models.root().to_owned(),
            weights,
        ))
    }

    fn with(database: PathBuf, models: PathBuf, weights: HybridWeights) -> LazyMemory {
        LazyMemory {
            inner: Arc::new(Inner {
                database,
                models: ModelStore::new(models),
                weights,
                embedder: Mutex::default(),
                memory: Mutex::default(),
            }),
        }
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
        load_once(&self.inner.embedder, || Embedder::load(&self.inner.models))
    }

    /// The memory, its database opened and its model loaded on the first call that succeeds.
    ///
    /// # Errors
    /// As [`MemoryStore::open`] and [`Embedder::load`]; a later call tries again.
    pub fn memory(&self) -> Result<Memory, MemoryError> {
        load_once(&self.inner.memory, || {
            let store = MemoryStore::open(&self.inner.database)?;
            Memory::new(store, self.embedder()?).with_weights(self.inner.weights)
        })
    }

    /// The four memory tools, to register with the host; the first call loads the memory.
    pub fn tools(&self) -> Vec<HostTool> {
        tools::tools_over(&tools::Source::Lazy(self.clone()))
    }
}

/// What `slot` holds, or what `load` makes, kept in `slot` when it succeeds. The lock is held
/// while loading, so concurrent first calls load once; a failure leaves the slot empty.
fn load_once<T: Clone>(
    slot: &Mutex<Option<T>>,
    load: impl FnOnce() -> Result<T, MemoryError>,
) -> Result<T, MemoryError> {
    let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(value) = &*slot {
        return Ok(value.clone());
    }
    let value = load()?;
    *slot = Some(value.clone());
    Ok(value)
}
