//! The call's temp dir while it is still held in the host's memory.
//!
//! Until a call does something this form does not model, its `/tmp` is a tree in memory:
//! the staged input files, and the directories and regular files the guest creates with the
//! common operations (open, create, truncate, read, write, seek, stat, make, open and list a
//! directory). Anything else (removing, renaming, linking, a path with `..`, an empty
//! component or a `.` inside it, writing to a staged input) first writes the
//! tree to a real temp dir ([`super::WasiCtx::make_temp`]) and goes on there, with every open
//! descriptor turned into a file at the same position, so the guest sees one file system
//! either way. The collected output files of a call that never left memory are taken from
//! the tree; no host path is made, written, read back or removed for them.
//!
//! What the guest writes is held in memory up to [`MEM_TEMP_BYTES`] per call, counted as the
//! bytes it grew files by (not given back by a truncation, so what is held is at most that);
//! a write past it moves the tree to disk first. Staged inputs are not counted: the request
//! holds them already, and a staged file is never copied in memory (writing to one moves the
//! tree to disk).

use std::collections::{BTreeMap, BTreeSet};

use super::Errno;
use crate::made::FileBytes;

/// How many bytes a call's guest may write into its in-memory temp dir before it is moved to
/// disk.
pub const MEM_TEMP_BYTES: u64 = 8 << 20;

/// The in-memory temp dir: every directory and file below `/tmp`, by path relative to it.
#[derive(Debug, Default)]
pub(super) struct MemTemp {
    /// Every directory below the root (the root itself is not listed).
    pub(super) dirs: BTreeSet<String>,
    pub(super) files: BTreeMap<String, MemFile>,
    /// Bytes the guest has grown files by, in memory (see [`MEM_TEMP_BYTES`]).
    pub(super) written: u64,
    next_ino: u64,
}

#[derive(Debug)]
pub(super) struct MemFile {
    pub(super) bytes: FileBytes,
    /// A staged input: shared with the request (or made while the call runs), so never
    /// written in memory.
    pub(super) staged: bool,
    /// Last modification, in nanoseconds since the epoch.
    pub(super) mtime: u64,
    pub(super) ino: u64,
}

/// What a plain path names in the tree.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Lookup {
    File,
    Dir,
    /// Nothing, but its parent is a directory: it may be created.
    Missing,
    /// A parent component does not exist.
    NoParent,
    /// A parent component is a file.
    ParentNotDir,
}

/// A descriptor open on a file of the tree.
#[derive(Debug)]
pub(super) struct MemDesc {
    pub(super) path: String,
    pub(super) pos: u64,
    pub(super) readable: bool,
    pub(super) writable: bool,
    pub(super) append: bool,
}

/// `path` if the tree can resolve it by itself: relative, its components neither empty nor
/// `.` nor `..`. Anything else is resolved on disk, but for `.` alone, which callers take as
/// the directory they resolve from.
pub(super) fn plain(path: &str) -> Option<&str> {
    let ok = !path.is_empty()
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..");
    ok.then_some(path)
}

/// The directories above `path`, outermost first: `a` and `a/b` for `a/b/c`.
pub(super) fn parents(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/').map(|(slash, _)| &path[..slash])
}

impl MemTemp {
    pub(super) fn lookup(&self, path: &str) -> Lookup {
        if path.is_empty() {
            return Lookup::Dir;
        }
        if self.files.contains_key(path) {
            return Lookup::File;
        }
        if self.dirs.contains(path) {
            return Lookup::Dir;
        }
        for parent in parents(path) {
            if self.files.contains_key(parent) {
                return Lookup::ParentNotDir;
            }
            if !self.dirs.contains(parent) {
                return Lookup::NoParent;
            }
        }
        Lookup::Missing
    }

    /// Adds a file (and its parent directories, for a staged one).
    pub(super) fn insert_file(&mut self, path: String, bytes: FileBytes, staged: bool, now: u64) {
        for parent in parents(&path) {
            self.dirs.insert(parent.to_owned());
        }
        self.next_ino += 1;
        self.files.insert(
            path,
            MemFile {
                bytes,
                staged,
                mtime: now,
                ino: self.next_ino,
            },
        );
    }

    /// The entries of the directory `base` (`""` for the root) as `fd_readdir` lists them:
    /// `.` and `..`, then every child by name.
    pub(super) fn list(&self, base: &str) -> Vec<(String, u8, u64)> {
        let prefix = if base.is_empty() {
            String::new()
        } else {
            format!("{base}/")
        };
        let child = |path: &str| {
            path.strip_prefix(prefix.as_str())
                .filter(|name| !name.is_empty() && !name.contains('/'))
                .map(str::to_owned)
        };
        let mut entries: Vec<(String, u8, u64)> = self
            .dirs
            .iter()
            .filter_map(|path| Some((child(path)?, super::FILETYPE_DIRECTORY, dir_ino(path))))
            .chain(self.files.iter().filter_map(|(path, file)| {
                Some((child(path)?, super::FILETYPE_REGULAR_FILE, file.ino))
            }))
            .collect();
        entries.sort();
        // Every entry has an inode number: wasi-libc's `readdir` asks for one with `fstatat`
        // when an entry comes without.
        let parent = base.rsplit_once('/').map_or("", |(parent, _)| parent);
        let mut listed = vec![
            (".".to_owned(), super::FILETYPE_DIRECTORY, dir_ino(base)),
            ("..".to_owned(), super::FILETYPE_DIRECTORY, dir_ino(parent)),
        ];
        listed.extend(entries);
        listed
    }

    /// Whether the tree holds anything.
    pub(super) fn is_empty(&self) -> bool {
        self.dirs.is_empty() && self.files.is_empty()
    }

    /// The file `path`, which a descriptor is open on.
    pub(super) fn file(&self, path: &str) -> Result<&MemFile, Errno> {
        self.files.get(path).ok_or(Errno::BADF)
    }

    pub(super) fn file_mut(&mut self, path: &str) -> Result<&mut MemFile, Errno> {
        self.files.get_mut(path).ok_or(Errno::BADF)
    }
}

impl MemFile {
    /// Copies from `at` into `buf`, as much as fits; 0 at or past the end; an error (`EIO` for
    /// the guest) when a staged file's bytes made while the call runs cannot be made.
    pub(super) fn read_at(&self, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
        self.bytes.read_at(buf, at).ok_or_else(|| {
            std::io::Error::other("the staged file's bytes could not be made from their source")
        })
    }

    /// Writes `data` at `at`, zero-filling any gap. The caller has checked that the file may
    /// grow to `at + data.len()`.
    pub(super) fn write_at(&mut self, data: &[u8], at: usize, now: u64) {
        let bytes = self.bytes.held_mut();
        let end = at + data.len();
        if bytes.len() < end {
            bytes.resize(end, 0);
        }
        bytes[at..end].copy_from_slice(data);
        self.mtime = now;
    }

    pub(super) fn set_len(&mut self, len: usize, now: u64) {
        self.bytes.held_mut().resize(len, 0);
        self.mtime = now;
    }

    /// The file's `filestat`: a regular file with one link.
    pub(super) fn filestat(&self) -> [u8; 64] {
        let mut buf = [0u8; 64];
        buf[8..16].copy_from_slice(&self.ino.to_le_bytes());
        buf[16] = super::FILETYPE_REGULAR_FILE;
        buf[24..32].copy_from_slice(&1u64.to_le_bytes());
        buf[32..40].copy_from_slice(&(self.bytes.len() as u64).to_le_bytes());
        for time in [40, 48, 56] {
            buf[time..time + 8].copy_from_slice(&self.mtime.to_le_bytes());
        }
        buf
    }
}

/// The inode number of the tree's directory `path` (`""` for the root): a hash of the path
/// with the top bit set, so it is never 0 and never a file's (counted from 1).
pub(super) fn dir_ino(path: &str) -> u64 {
    // FNV-1a.
    let hash = path.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    hash | 1 << 63
}

/// The `filestat` of the tree's directory `path`, its times `now`.
pub(super) fn dir_filestat(path: &str, now: u64) -> [u8; 64] {
    let mut buf = [0u8; 64];
    buf[8..16].copy_from_slice(&dir_ino(path).to_le_bytes());
    buf[16] = super::FILETYPE_DIRECTORY;
    buf[24..32].copy_from_slice(&1u64.to_le_bytes());
    for time in [40, 48, 56] {
        buf[time..time + 8].copy_from_slice(&now.to_le_bytes());
    }
    buf
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn only_plain_relative_paths_are_resolved_in_memory() {
        for path in ["out", "out/part-001.pdf", "a/b/c"] {
            assert_eq!(plain(path), Some(path));
        }
        for path in [
            "", ".", "..", "out/", "/out", "out//x", "./out", "out/../x", "out/.",
        ] {
            assert_eq!(plain(path), None, "{path:?}");
        }
    }

    #[test]
    fn parents_are_every_directory_above_a_path() {
        assert_eq!(parents("a/b/c").collect::<Vec<_>>(), ["a", "a/b"]);
        assert_eq!(parents("a").count(), 0);
    }

    #[test]
    fn lookup_tells_files_dirs_and_missing_parents_apart() {
        let mut tree = MemTemp::default();
        tree.insert_file(
            "in/a.pdf".to_owned(),
            FileBytes::Held(Arc::new(b"pdf".to_vec())),
            true,
            1,
        );
        assert_eq!(tree.lookup("in"), Lookup::Dir);
        assert_eq!(tree.lookup("in/a.pdf"), Lookup::File);
        assert_eq!(tree.lookup("in/b.pdf"), Lookup::Missing);
        assert_eq!(tree.lookup("out"), Lookup::Missing);
        assert_eq!(tree.lookup("out/x"), Lookup::NoParent);
        assert_eq!(tree.lookup("in/a.pdf/x"), Lookup::ParentNotDir);
    }

    #[test]
    fn writes_past_the_end_fill_the_gap_with_zeros() {
        let mut file = MemFile {
            bytes: FileBytes::Held(Arc::new(b"ab".to_vec())),
            staged: false,
            mtime: 0,
            ino: 1,
        };
        file.write_at(b"z", 4, 7);
        assert_eq!(file.bytes.held_mut().as_slice(), b"ab\0\0z");
        let mut buf = [0u8; 8];
        assert_eq!(file.read_at(&mut buf, 1).unwrap(), 4);
        assert_eq!(&buf[..4], b"b\0\0z");
        assert_eq!(file.read_at(&mut buf, 9).unwrap(), 0);
        file.set_len(1, 8);
        assert_eq!(file.bytes.held_mut().as_slice(), b"a");
        assert_eq!(file.mtime, 8);
    }
}
