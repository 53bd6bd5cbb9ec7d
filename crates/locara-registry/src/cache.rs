//! The content-addressed artifact cache: `<cache>/sha256/<hex>`.
//!
//! Entries are written atomically and re-hashed on every load of a new version of the file: once
//! an entry hashed correctly, its [`Stamp`] (device, inode, size, `mtime`, `ctime`) is recorded
//! beside it (`<hex>.verified`), and a load that finds the same stamp on the opened file skips
//! the hash, and does not read the entry either ([`Recorded`]: its bytes are read if and when
//! they are needed, and checked again then; see [`crate::stamp`]). A corrupt entry (changed bytes,
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

    /// The cached entry with this digest and size: [`Loaded::Recorded`], not read, if this
    /// very version of the file hashed correctly before, else its bytes, hashed; `None` if
    /// absent or corrupt (then removed). An entry that is not a regular file of exactly `size`
    /// bytes is corrupt too, and is never read past `size` + 1 bytes.
    pub(crate) fn load(&self, digest: &Digest, size: u64) -> Result<Option<Loaded>, Error> {
        let path = self.path_of(digest);
        let record = self.record_of(digest);
        let opened = SystemTime::now();
        let found = fs::open_regular(&path).and_then(|(file, meta)| {
            check_entry_size(&path, &meta, size)?;
            let stamp = Stamp::of(&meta);
            if stamp.settled_before(opened) && stamp::recorded(&record, digest, &stamp) {
                return Ok(Found::Recorded(stamp));
            }
            let bytes = read_entry(&path, &file, &meta, size)?;
            // The stamp before and after the read: the same unless the file changed.
            let after = file.metadata().map_err(io("read", &path))?;
            let stamp = Some(stamp).filter(|s| *s == Stamp::of(&after));
            Ok(Found::Read(bytes, stamp))
        });
        let (bytes, stamp) = match found {
            Ok(Found::Recorded(stamp)) => {
                tracing::debug!(path = %path.display(), "cache hit, this version already hashed");
                return Ok(Some(Loaded::Recorded(Recorded {
                    path,
                    digest: *digest,
                    size,
                    stamp,
                })));
            }
            Ok(Found::Read(bytes, stamp)) => (bytes, stamp),
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
        Ok(Some(Loaded::Bytes(bytes.into())))
    }

    /// Stores verified bytes under their digest.
    pub(crate) fn install(&self, digest: &Digest, bytes: &[u8]) -> Result<(), Error> {
        let path = self.path_of(digest);
        fs::write_atomic(&path, bytes)?;
        tracing::debug!(path = %path.display(), "installed into cache");
        Ok(())
    }
}

/// A cache entry found by [`Cache::load`].
#[derive(Debug)]
pub(crate) enum Loaded {
    /// Its bytes, read and hashed.
    Bytes(Arc<[u8]>),
    /// Not read: this very version of the file hashed correctly before.
    Recorded(Recorded),
}

/// What the entry's opened handle showed: a version already hashed, or its bytes (and their
/// stamp if the file did not change while read).
enum Found {
    Recorded(Stamp),
    Read(Vec<u8>, Option<Stamp>),
}

/// A cache entry whose version (its [`Stamp`]) hashed correctly before, not read yet: most
/// loads never need its bytes (a compiled module cached under its digest is used instead).
#[derive(Debug)]
pub(crate) struct Recorded {
    path: PathBuf,
    digest: Digest,
    size: u64,
    stamp: Stamp,
}

impl Recorded {
    /// The entry's bytes: those of the version that hashed correctly, or, should the file have
    /// changed since, bytes that hash to the digest anyway; `None` (logged) if neither, or if
    /// the entry cannot be read.
    pub(crate) fn read(&self) -> Option<Vec<u8>> {
        let path = &self.path;
        let read = fs::open_regular(path).and_then(|(file, meta)| {
            check_entry_size(path, &meta, self.size)?;
            let bytes = read_entry(path, &file, &meta, self.size)?;
            let after = file.metadata().map_err(io("read", path))?;
            let unchanged = Stamp::of(&meta) == self.stamp && Stamp::of(&after) == self.stamp;
            Ok((bytes, unchanged))
        });
        match read {
            Ok((bytes, true)) => Some(bytes),
            Ok((bytes, false)) if Digest::of(&bytes) == self.digest => Some(bytes),
            Ok(_) => {
                tracing::warn!(path = %path.display(), "cache entry changed since it was verified");
                None
            }
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "cache entry unreadable since it was verified");
                None
            }
        }
    }
}

fn check_entry_size(path: &Path, meta: &std::fs::Metadata, size: u64) -> Result<(), Error> {
    if meta.len() == size {
        return Ok(());
    }
    Err(Error::SizeMismatch {
        what: "cache entry",
        subject: path.display().to_string(),
        found: meta.len(),
        expected: size,
    })
}

/// Reads an opened entry of `size` bytes (at most one byte more, should it grow).
fn read_entry(
    path: &Path,
    file: &std::fs::File,
    meta: &std::fs::Metadata,
    size: u64,
) -> Result<Vec<u8>, Error> {
    let file = file.try_clone().map_err(io("read", path))?;
    fs::read_from(file, meta, path, ReadLimit::ARTIFACT.at_most(size))
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
