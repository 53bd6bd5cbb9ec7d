//! The content-addressed artifact cache: `<cache>/sha256/<hex>`.
//!
//! Entries are written atomically and re-hashed on every load. A corrupt entry is logged, removed
//! and treated as missing, so the caller re-installs it from the registry's verified copy.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::io;
use crate::{Digest, Error, fs};

#[derive(Debug)]
pub(crate) struct Cache {
    dir: PathBuf,
}

impl Cache {
    pub(crate) fn new(dir: PathBuf) -> Cache {
        Cache { dir }
    }

    pub(crate) fn path_of(&self, digest: &Digest) -> PathBuf {
        self.dir.join("sha256").join(digest.to_hex())
    }

    /// The cached bytes with this digest, re-hashed; `None` if absent or corrupt (then removed).
    pub(crate) fn load(&self, digest: &Digest) -> Result<Option<Arc<[u8]>>, Error> {
        let path = self.path_of(digest);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io("read", path)(e)),
        };
        let found = Digest::of(&bytes);
        if found != *digest {
            tracing::warn!(
                path = %path.display(),
                %found,
                expected = %digest,
                "cache entry is corrupt; removing it and re-installing from the registry"
            );
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("remove corrupt cache entry", path)(e)),
            }
            return Ok(None);
        }
        tracing::debug!(path = %path.display(), "cache hit");
        Ok(Some(bytes.into()))
    }

    /// Stores verified bytes under their digest.
    pub(crate) fn install(&self, digest: &Digest, bytes: &[u8]) -> Result<(), Error> {
        let path = self.path_of(digest);
        fs::write_atomic(&path, bytes)?;
        tracing::debug!(path = %path.display(), "installed into cache");
        Ok(())
    }
}
