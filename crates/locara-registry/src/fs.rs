//! Filesystem and JSON helpers: reads that name the path, and atomic writes.

use std::io::Write as _;
use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Error;
use crate::error::io;

/// Reads a whole file.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(io("read", path))
}

/// Reads a whole UTF-8 file.
pub(crate) fn read_to_string(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(io("read", path))
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
