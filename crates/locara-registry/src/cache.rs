//! The content-addressed artifact cache: `<cache>/sha256/<hex>`.
//!
//! Entries are written atomically and re-hashed on every load of a new version of the file: once
//! an entry hashed correctly, its [`Stamp`] (device, inode, size, `mtime`, `ctime`) is recorded
//! beside it (`<hex>.verified`), and a load that finds the same stamp on the opened file before
//! and after reading it skips the hash (see [`crate::stamp`]). A corrupt entry (changed bytes,
//! another size than the manifest pins, or not a regular file at all: a FIFO or a symlink to a
//! device) is logged, removed and treated as missing, so the caller re-installs it from the
//! registry's verified copy. Entries are read as every home file is: bounded by the pinned
//! size, after the opened handle was checked to be a regular file.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use crate::error::io;
use crate::fs::{self, ReadLimit};
use crate::stamp::{self, Stamp};
use crate::{Digest, Error};

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

    /// Where the stamp of the entry last hashed correctly is recorded.
    pub(crate) fn record_of(&self, digest: &Digest) -> PathBuf {
        self.dir
            .join("sha256")
            .join(format!("{}.verified", digest.to_hex()))
    }

    /// The cached bytes with this digest and size, re-hashed unless this very version of the
    /// file was hashed before; `None` if absent or corrupt (then removed). An entry that is not
    /// a regular file of exactly `size` bytes is corrupt too, and is never read past `size` + 1
    /// bytes.
    pub(crate) fn load(&self, digest: &Digest, size: u64) -> Result<Option<Arc<[u8]>>, Error> {
        let path = self.path_of(digest);
        let limit = ReadLimit::ARTIFACT.at_most(size);
        let opened = SystemTime::now();
        let read = fs::open_regular(&path).and_then(|(file, meta)| {
            if meta.len() == size {
                let bytes = fs::read_from(
                    file.try_clone().map_err(io("read", &path))?,
                    &meta,
                    &path,
                    limit,
                )?;
                // The stamp before and after the read: the same unless the file changed.
                let after = file.metadata().map_err(io("read", &path))?;
                let stamp = Some(Stamp::of(&meta)).filter(|s| *s == Stamp::of(&after));
                Ok((bytes, stamp))
            } else {
                Err(Error::SizeMismatch {
                    what: "cache entry",
                    subject: path.display().to_string(),
                    found: meta.len(),
                    expected: size,
                })
            }
        });
        let (bytes, stamp) = match read {
            Ok(read) => read,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Ok(None);
            }
            Err(
                error @ (Error::NotARegularFile { .. }
                | Error::FileTooLarge { .. }
                | Error::SizeMismatch { .. }),
            ) => {
                tracing::warn!(
                    path = %path.display(),
                    %error,
                    "cache entry is corrupt; removing it and re-installing from the registry"
                );
                remove_corrupt(&path)?;
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let stamp = stamp.filter(|s| s.settled_before(opened));
        let record = self.record_of(digest);
        if let Some(stamp) = &stamp
            && stamp::recorded(&record, digest, stamp)
        {
            tracing::debug!(path = %path.display(), "cache hit, this version already hashed");
            return Ok(Some(bytes.into()));
        }
        let found = Digest::of(&bytes);
        if found != *digest {
            tracing::warn!(
                path = %path.display(),
                %found,
                expected = %digest,
                "cache entry is corrupt; removing it and re-installing from the registry"
            );
            remove_corrupt(&path)?;
            return Ok(None);
        }
        if let Some(stamp) = &stamp {
            stamp::record(&record, digest, stamp);
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

/// Removes a corrupt entry (a file, a symlink, a FIFO; not a directory, which is an error to
/// report). One already gone is fine.
fn remove_corrupt(path: &Path) -> Result<(), Error> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io("remove corrupt cache entry", path)(e)),
    }
}
