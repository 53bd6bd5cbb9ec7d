//! Filesystem and JSON helpers: bounded reads of regular files only, atomic writes, and the
//! owner-only directory and file modes of secret keys.
//!
//! Every file the registry reads from a Locara home (manifests, signatures, artifacts, models,
//! keys, trust files, the lockfile, cache entries) goes through [`open_regular`]: the file is
//! opened with `O_NONBLOCK` (so a FIFO put in its place does not block the open), the opened
//! handle is `fstat`ed, and anything but a regular file (a FIFO, a device such as a symlink to
//! `/dev/zero`, a directory, a socket) is refused with [`Error::NotARegularFile`]. Reads then
//! stop at the kind's [`ReadLimit`] plus one byte, so a file larger than its limit is refused
//! with [`Error::FileTooLarge`] without being read whole.

use std::io::{Read as _, Write as _};
use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::io;
use crate::{Digest, Error};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

/// The most bytes Locara reads of one kind of file, and the kind's name for error messages.
///
/// | kind | limit |
/// | --- | --- |
/// | key file (`*.pub.json`, `*.secret.json`) | 64 KiB |
/// | signature file (`manifest.sig.json`) | 64 KiB |
/// | manifest (`manifest.json`) | 1 MiB |
/// | lockfile (`locara.lock`) | 1 MiB |
/// | revocation list (`trust/revoked.json`) | 1 MiB |
/// | artifact (a wasm module) | its pinned `size_bytes`, and never more than 1 GiB |
/// | model | its pinned `size_bytes`, and never more than 64 GiB (hashed as a stream) |
///
/// The small limits are far above what Locara writes (a key file is about 200 bytes, a manifest
/// with an inlined interpreter driver about 30 KiB); they only stop a home file that was
/// replaced by something endless or huge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimit {
    what: &'static str,
    max_bytes: u64,
}

impl ReadLimit {
    /// A public or secret key file: 64 KiB.
    pub const KEY_FILE: ReadLimit = ReadLimit::new("key file", 64 * KIB);
    /// A manifest signature file: 64 KiB.
    pub const SIGNATURE_FILE: ReadLimit = ReadLimit::new("signature file", 64 * KIB);
    /// A tool manifest: 1 MiB.
    pub const MANIFEST: ReadLimit = ReadLimit::new("manifest", MIB);
    /// The lockfile: 1 MiB.
    pub const LOCKFILE: ReadLimit = ReadLimit::new("lockfile", MIB);
    /// The trust store's revocation list: 1 MiB.
    pub const REVOCATION_LIST: ReadLimit = ReadLimit::new("revocation list", MIB);
    /// A tool's wasm module: 1 GiB at most; a read is further bounded by the size its manifest
    /// pins.
    pub const ARTIFACT: ReadLimit = ReadLimit::new("artifact", GIB);
    /// A model file: 64 GiB at most (models are hashed as a stream, never held in memory); a
    /// read is further bounded by the size its manifest pins.
    pub const MODEL: ReadLimit = ReadLimit::new("model", 64 * GIB);

    /// A limit of `max_bytes` for files described as `what` (e.g. `"receipt"`).
    #[must_use]
    pub const fn new(what: &'static str, max_bytes: u64) -> ReadLimit {
        ReadLimit { what, max_bytes }
    }

    /// What the limit is for, e.g. `manifest`.
    #[must_use]
    pub fn what(&self) -> &'static str {
        self.what
    }

    /// The most bytes read.
    #[must_use]
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// This limit, lowered to `bytes` when that is smaller (a size a manifest pins).
    #[must_use]
    pub(crate) fn at_most(self, bytes: u64) -> ReadLimit {
        ReadLimit {
            max_bytes: self.max_bytes.min(bytes),
            ..self
        }
    }
}

/// Opens `path` for reading if it is a regular file (following symlinks), and returns the
/// handle with its metadata, taken from the handle (not the path) so they describe the same
/// file.
///
/// # Errors
///
/// [`Error::Io`] (action `read`) if it cannot be opened, keeping the OS error's kind (so a
/// missing file is `NotFound`), and [`Error::NotARegularFile`] for anything but a regular file.
pub(crate) fn open_regular(path: &Path) -> Result<(std::fs::File, std::fs::Metadata), Error> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    // `O_NONBLOCK`: an open of a FIFO returns at once instead of waiting for a writer, so the
    // `fstat` of the handle can refuse it. It changes nothing for a regular file.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    // Elsewhere, look before opening; the `fstat` below still refuses whatever was opened.
    #[cfg(not(unix))]
    check_regular(path, &std::fs::metadata(path).map_err(io("read", path))?)?;
    let file = options.open(path).map_err(io("read", path))?;
    let meta = file.metadata().map_err(io("read", path))?;
    check_regular(path, &meta)?;
    Ok((file, meta))
}

fn check_regular(path: &Path, meta: &std::fs::Metadata) -> Result<(), Error> {
    if meta.is_file() {
        return Ok(());
    }
    Err(Error::NotARegularFile {
        path: path.to_owned(),
        kind: file_kind(&meta.file_type()),
    })
}

/// A person's name for a file type that is not a regular file.
fn file_kind(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if file_type.is_fifo() {
            return "FIFO (named pipe)";
        }
        if file_type.is_char_device() {
            return "character device";
        }
        if file_type.is_block_device() {
            return "block device";
        }
        if file_type.is_socket() {
            return "socket";
        }
    }
    if file_type.is_dir() {
        "directory"
    } else {
        "special file"
    }
}

/// Reads a whole regular file of at most `limit` bytes.
///
/// # Errors
///
/// The errors of [`open_regular`], [`Error::FileTooLarge`] for a file over the limit (told by
/// its size before reading, or by reading one byte past the limit, should it grow), and
/// [`Error::Io`] if reading fails.
pub(crate) fn read(path: &Path, limit: ReadLimit) -> Result<Vec<u8>, Error> {
    read_with_metadata(path, limit).map(|(bytes, _)| bytes)
}

/// [`read`], also returning the metadata of the file read.
pub(crate) fn read_with_metadata(
    path: &Path,
    limit: ReadLimit,
) -> Result<(Vec<u8>, std::fs::Metadata), Error> {
    let (file, meta) = open_regular(path)?;
    let bytes = read_from(file, &meta, path, limit)?;
    Ok((bytes, meta))
}

/// Reads a file opened by [`open_regular`], at most `limit` bytes.
pub(crate) fn read_from(
    file: std::fs::File,
    meta: &std::fs::Metadata,
    path: &Path,
    limit: ReadLimit,
) -> Result<Vec<u8>, Error> {
    check_size(path, meta.len(), limit)?;
    // The size is at most the limit here; a file that grows is cut one byte past it.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit.max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io("read", path))?;
    check_size(path, bytes.len() as u64, limit)?;
    Ok(bytes)
}

fn check_size(path: &Path, size: u64, limit: ReadLimit) -> Result<(), Error> {
    if size > limit.max_bytes {
        return Err(Error::FileTooLarge {
            path: path.to_owned(),
            what: limit.what,
            limit: limit.max_bytes,
        });
    }
    Ok(())
}

/// Reads a whole regular UTF-8 file of at most `limit` bytes.
///
/// # Errors
///
/// As [`read`], and [`Error::Io`] (kind `InvalidData`) if the bytes are not UTF-8.
pub(crate) fn read_to_string(path: &Path, limit: ReadLimit) -> Result<String, Error> {
    let bytes = read(path, limit)?;
    String::from_utf8(bytes).map_err(|e| {
        io("read", path)(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the file is not UTF-8: {e}"),
        ))
    })
}

/// SHA-256 and length of a file opened by [`open_regular`], of at most `limit` bytes, read as
/// a stream (the file is never held in memory).
pub(crate) fn hash_from(
    file: std::fs::File,
    meta: &std::fs::Metadata,
    path: &Path,
    limit: ReadLimit,
) -> Result<(Digest, u64), Error> {
    check_size(path, meta.len(), limit)?;
    let mut hasher = Digest::hasher();
    let mut reader = file.take(limit.max_bytes.saturating_add(1));
    let mut buffer = vec![0; 64 * 1024];
    let mut length = 0u64;
    loop {
        let n = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io("read", path)(e)),
        };
        hasher.update(&buffer[..n]);
        length += n as u64;
    }
    check_size(path, length, limit)?;
    Ok((hasher.finish(), length))
}

/// Reads a file from a home, as the registry does: only a regular file, at most `limit`
/// bytes. For the files around the registry that its callers read themselves (the CLI's
/// lockfile note, for one).
///
/// # Errors
///
/// [`Error::Io`] if the file cannot be opened or read (a missing file keeps the kind
/// `NotFound`), [`Error::NotARegularFile`] for a FIFO, device, directory or socket, and
/// [`Error::FileTooLarge`] for a file over the limit.
pub fn read_bounded(path: &Path, limit: ReadLimit) -> Result<Vec<u8>, Error> {
    read(path, limit)
}

/// [`read_bounded`] for a UTF-8 file.
///
/// # Errors
///
/// As [`read_bounded`], and [`Error::Io`] (kind `InvalidData`) if the bytes are not UTF-8.
pub fn read_bounded_to_string(path: &Path, limit: ReadLimit) -> Result<String, Error> {
    read_to_string(path, limit)
}

/// Creates `dir` readable only by its owner (mode 0700 on unix) if it does not exist, creating
/// its parents as usual. An existing directory is left as it is: it may be the current
/// directory of `locara keygen --out .`, which is not this crate's to change.
pub(crate) fn create_private_dir(dir: &Path) -> Result<(), Error> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io("create directory", parent))?;
    }
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    match builder.create(dir) {
        Ok(()) => Ok(()),
        // Made by someone else in between: as with an existing directory, leave it.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(io("create directory", dir)(e)),
    }
}

/// Creates `path` readable and writable only by its owner (mode 0600 on unix, set by the
/// `open` that creates it, never widened in between), writes `bytes` and syncs them. Refuses an
/// existing file. A write that fails removes the partial file.
pub(crate) fn write_private_new(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(io("create", path))?;
    if let Err(e) = file.write_all(bytes).and_then(|()| file.sync_all()) {
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(io("write", path)(e));
    }
    Ok(())
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, flushed to disk,
/// then renamed over `path`. Readers see the old file or the new one, never a partial one.
/// Creates the parent directory if needed. The file is made readable by all (0644) on unix.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(io("create directory", dir))?;
    let mut temp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempfile_in(dir)
        .map_err(io("create a temporary file in", dir))?;
    temp.write_all(bytes)
        .and_then(|()| set_shared_permissions(temp.as_file()))
        .and_then(|()| temp.as_file().sync_all())
        .map_err(io("write", temp.path()))?;
    temp.persist(path)
        .map_err(|e| io("rename a temporary file to", path)(e.error))?;
    Ok(())
}

#[cfg(unix)]
fn set_shared_permissions(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    file.set_permissions(std::fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn set_shared_permissions(_: &std::fs::File) -> std::io::Result<()> {
    Ok(())
}

/// Serializes a private file struct as pretty JSON with a trailing newline.
pub(crate) fn to_pretty_json<T: Serialize>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value)
        .unwrap_or_else(|e| unreachable!("serializing a key or signature file failed: {e}"));
    text.push('\n');
    text
}

/// Parses a private file struct, turning errors into [`Error::Malformed`].
pub(crate) fn parse_json<T: DeserializeOwned>(subject: &str, text: &str) -> Result<T, Error> {
    serde_json::from_str(text).map_err(|e| Error::Malformed {
        subject: subject.to_owned(),
        message: e.to_string(),
    })
}
