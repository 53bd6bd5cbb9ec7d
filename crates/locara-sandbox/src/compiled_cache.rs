//! The Wasmtime backend's on-disk cache of compiled modules.
//!
//! An entry is Wasmtime's own output (`Engine::precompile_module`, an ELF file) followed by a
//! trailer that names the key it was written for and carries a BLAKE3 hash of the code:
//!
//! `code | key | key length (1) | blake3(code) (32) | magic (8)`
//!
//! The trailer comes last so that the code starts at offset 0 and can be mapped in place
//! (`Module::deserialize_open_file`): Wasmtime then uses the file's pages directly, for the
//! code and for the memory image of the module's data (copy-on-write), instead of copying tens
//! of megabytes into memory of its own. Wasmtime parses the ELF by its headers' offsets and
//! ignores the trailer.
//!
//! An entry is used only if it is a regular file of a sane size whose trailer names the key
//! asked for and whose code hashes to the trailer's checksum, all read through one open
//! handle, which is then the one mapped; anything else (another module's code under this name,
//! a flipped byte, a truncated file, a FIFO) is a miss, and the module is compiled again and
//! the entry rewritten. Entries are only ever written whole, to a temporary file renamed into
//! place, never modified in place, so the file a handle maps stays the file that was checked.
//!
//! The checksum is computed once per version of an entry's file, not once per process: after
//! an entry's code matched its checksum, its [`Stamp`] (device, inode, size, `mtime`, `ctime`)
//! is recorded beside it (`<entry>.verified`, with the checksum), and a later open that finds
//! the same stamp and checksum skips the hash. What a version is and when it may be trusted
//! ([`locara_stamp::SETTLE`]: the kernel moves `ctime` on every change and nothing sets it
//! back) is `locara-stamp`'s rule, which the registry's artifact cache shares.

use std::{
    fs::File,
    io::{Read as _, Write as _},
    os::unix::fs::FileExt as _,
    path::{Path, PathBuf},
    time::SystemTime,
};

use locara_stamp::Stamp;

const MAGIC: &[u8; 8] = b"LCWASM02";
const CHECKSUM_BYTES: usize = 32;
/// The longest a key may be (`is_valid_cache_key`).
const MAX_KEY_BYTES: usize = 128;
/// The most bytes an entry may hold (CPython's is about 45 MiB).
const MAX_ENTRY_BYTES: u64 = 2 << 30;
/// How much of the code is hashed at a time.
const CHUNK_BYTES: usize = 1 << 20;

/// The path of `key`'s entry in `dir`, for an engine whose compatibility hash is `engine`.
pub(crate) fn path_of(dir: &Path, key: &str, engine: u64) -> PathBuf {
    dir.join(format!("{key}-{engine:016x}.cwasm"))
}

/// The entry for `code`, compiled from the module `key` names.
pub(crate) fn seal(key: &str, code: &[u8]) -> Vec<u8> {
    let mut entry = Vec::with_capacity(code.len() + key.len() + 1 + CHECKSUM_BYTES + MAGIC.len());
    entry.extend_from_slice(code);
    entry.extend_from_slice(key.as_bytes());
    // Keys are at most 128 bytes (`is_valid_cache_key`).
    entry.push(u8::try_from(key.len()).unwrap_or(u8::MAX));
    entry.extend_from_slice(blake3::hash(code).as_bytes());
    entry.extend_from_slice(MAGIC);
    entry
}

/// Why an entry was not used.
#[derive(Debug)]
pub(crate) enum Miss {
    /// There is no entry.
    Absent,
    /// There is something, and it is not an intact entry for this key.
    Refused(String),
}

impl From<std::io::Error> for Miss {
    fn from(error: std::io::Error) -> Miss {
        if error.kind() == std::io::ErrorKind::NotFound {
            Miss::Absent
        } else {
            Miss::Refused(error.to_string())
        }
    }
}

/// Opens `path` and checks that it is an intact entry written for `key`: a regular file of at
/// most [`MAX_ENTRY_BYTES`], with a trailer naming `key`, whose code hashes to the trailer's
/// checksum. Returns the open handle (the one that was checked) to be mapped.
pub(crate) fn open(path: &Path, key: &str) -> Result<File, Miss> {
    let opened = SystemTime::now();
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    // `O_NONBLOCK`: a FIFO in the entry's place opens at once and is refused below, instead of
    // blocking the open until a writer comes.
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(Miss::Refused("not a regular file".to_owned()));
    }
    if meta.len() > MAX_ENTRY_BYTES {
        return Err(Miss::Refused("larger than any compiled module".to_owned()));
    }
    let len = usize::try_from(meta.len()).map_err(|e| Miss::Refused(e.to_string()))?;
    let refused = |why: &str| Miss::Refused(why.to_owned());

    // The trailer: at most the longest key, its length, the checksum and the magic.
    let fixed = 1 + CHECKSUM_BYTES + MAGIC.len();
    let tail_len = len.min(MAX_KEY_BYTES + fixed);
    if tail_len < fixed {
        return Err(refused("truncated (no trailer)"));
    }
    let mut tail = vec![0; tail_len];
    file.read_exact_at(&mut tail, (len - tail_len) as u64)?;
    let (rest, magic) = tail.split_at(tail_len - MAGIC.len());
    if magic != MAGIC {
        return Err(refused("not a Locara cache entry (bad magic)"));
    }
    let (rest, checksum) = rest.split_at(rest.len() - CHECKSUM_BYTES);
    let (rest, &[key_len]) = rest.split_at(rest.len() - 1) else {
        return Err(refused("truncated trailer"));
    };
    let written_for = rest
        .len()
        .checked_sub(usize::from(key_len))
        .map(|start| &rest[start..])
        .ok_or_else(|| refused("truncated trailer"))?;
    if written_for != key.as_bytes() {
        return Err(Miss::Refused(format!(
            "written for `{}`, not `{key}`",
            String::from_utf8_lossy(written_for)
        )));
    }
    let code_len = len - fixed - usize::from(key_len);

    // This version of the file was hashed before: the record of its stamp says so.
    let stamp = Stamp::of(&meta);
    let record = record_of(path);
    if stamp.settled_before(opened) && recorded(&record) == Some(record_line(&stamp, checksum)) {
        return Ok(file);
    }

    // The code, hashed a chunk at a time through the same handle.
    let mut hasher = blake3::Hasher::new();
    let mut chunk = vec![0; CHUNK_BYTES.min(code_len)];
    let mut offset = 0;
    while offset < code_len {
        let n = chunk.len().min(code_len - offset);
        file.read_exact_at(&mut chunk[..n], offset as u64)?;
        hasher.update(&chunk[..n]);
        offset += n;
    }
    if hasher.finalize().as_bytes() != checksum {
        return Err(refused(
            "checksum mismatch: the entry is corrupt or truncated",
        ));
    }
    // Recorded only if the file did not change while it was hashed, and long enough ago.
    if stamp.settled_before(opened)
        && file.metadata().is_ok_and(|m| Stamp::of(&m) == stamp)
        && let Err(error) = write(
            dir_of(path),
            &record,
            record_line(&stamp, checksum).as_bytes(),
        )
    {
        tracing::warn!(path = %record.display(), %error, "could not record a verification");
    }
    Ok(file)
}

/// The record of the entry stamped `stamp` whose code hashed to `checksum`.
fn record_line(stamp: &Stamp, checksum: &[u8]) -> String {
    let checksum: String = checksum.iter().map(|b| format!("{b:02x}")).collect();
    stamp.record(&format!("blake3:{checksum}"))
}

/// Where the stamp of the entry at `path` is recorded once its code matched its checksum.
fn record_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".verified");
    PathBuf::from(name)
}

fn dir_of(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

/// The record at `path`, if it is a regular file of at most 1 KiB of UTF-8.
fn recorded(path: &Path) -> Option<String> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(1024).read_to_string(&mut text).ok()?;
    Some(text)
}

/// Writes `entry` to `path` atomically: to a temporary file in `dir`, renamed into place.
pub(crate) fn write(dir: &Path, path: &Path, entry: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(entry)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_opens_only_for_its_key_and_only_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry");
        let code = vec![7u8; 3 * CHUNK_BYTES + 5];
        write(dir.path(), &path, &seal("key-a", &code)).unwrap();
        assert!(open(&path, "key-a").is_ok());
        assert!(matches!(open(&path, "key-b"), Err(Miss::Refused(why)) if why.contains("key-a")));

        let mut bytes = std::fs::read(&path).unwrap();
        bytes[2 * CHUNK_BYTES] ^= 1;
        write(dir.path(), &path, &bytes).unwrap();
        assert!(
            matches!(open(&path, "key-a"), Err(Miss::Refused(why)) if why.contains("checksum"))
        );

        for cut in [1, 10, 60, bytes.len() - 1] {
            write(
                dir.path(),
                &path,
                &seal("key-a", &code)[..bytes.len() - cut],
            )
            .unwrap();
            assert!(
                matches!(open(&path, "key-a"), Err(Miss::Refused(_))),
                "cut {cut}"
            );
        }
        assert!(matches!(
            open(&dir.path().join("absent"), "key-a"),
            Err(Miss::Absent)
        ));
    }

    #[test]
    fn an_entry_changed_after_its_version_was_recorded_is_hashed_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry");
        let code = vec![7u8; 2 * CHUNK_BYTES];
        write(dir.path(), &path, &seal("key-a", &code)).unwrap();
        assert!(open(&path, "key-a").is_ok());
        assert!(
            !record_of(&path).exists(),
            "a version changed less than SETTLE ago is never recorded"
        );
        std::thread::sleep(locara_stamp::SETTLE + std::time::Duration::from_millis(100));
        assert!(open(&path, "key-a").is_ok());
        assert!(record_of(&path).exists(), "the settled version is recorded");
        assert!(open(&path, "key-a").is_ok());

        // Changed in place, same size, its mtime put back: the ctime moved, so the record no
        // longer applies, the code is hashed again and the entry refused.
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.write_all_at(&[8], CHUNK_BYTES as u64).unwrap();
        file.set_modified(mtime).unwrap();
        drop(file);
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
        assert!(
            matches!(open(&path, "key-a"), Err(Miss::Refused(why)) if why.contains("checksum"))
        );
    }
}
