//! A small, deterministic directory walker shared by the listing and searching tools.
//!
//! Entries are visited depth-first, each directory's children sorted by name (bytewise),
//! so output never depends on the order the filesystem returns. Symlinks are reported but
//! never followed, which keeps cycles impossible. Runs on one thread (wasip1 has none).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use locara_pdk::JsonSchema;
use serde::Serialize;

#[cfg(test)]
mod tests;

/// The kind of a directory entry, as reported to callers.
// The variants carry plain comments, not doc comments: documented variants would make its JSON
// Schema a `oneOf` of described constants instead of the plain `enum` of names that the tools'
// output schemas give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    // A regular file (or anything that is neither a directory nor a symlink).
    File,
    // A directory.
    Dir,
    // A symbolic link (not followed).
    Symlink,
}

impl Kind {
    pub(crate) fn of(file_type: fs::FileType) -> Kind {
        if file_type.is_symlink() {
            Kind::Symlink
        } else if file_type.is_dir() {
            Kind::Dir
        } else {
            Kind::File
        }
    }
}

/// One entry found by [`walk`].
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The path relative to the walk root, `/`-separated.
    pub(crate) rel: String,
    /// The file name.
    pub(crate) name: String,
    /// The path to open.
    pub(crate) full: PathBuf,
    /// What the entry is.
    pub(crate) kind: Kind,
    /// 1 for the root's children, 2 for their children, and so on.
    pub(crate) depth: usize,
}

impl Entry {
    /// Whether the name starts with a dot.
    pub(crate) fn is_hidden(&self) -> bool {
        self.name.starts_with('.')
    }

    /// The size in bytes of a regular file, 0 otherwise (or when it cannot be read).
    pub(crate) fn size(&self) -> u64 {
        if self.kind != Kind::File {
            return 0;
        }
        fs::symlink_metadata(&self.full)
            .map(|m| m.len())
            .unwrap_or(0)
    }
}

/// What the walker does after visiting an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Keep going, descending into the entry if it is a directory.
    Continue,
    /// Keep going, but do not descend into this directory.
    Skip,
    /// Stop the whole walk.
    Stop,
}

/// Visits everything under `root` up to `max_depth` levels (1 = direct children only).
///
/// Unreadable subdirectories are skipped silently.
///
/// # Errors
/// Returns the error from reading `root` itself.
pub(crate) fn walk(
    root: &Path,
    max_depth: usize,
    visit: &mut dyn FnMut(&Entry) -> Flow,
) -> io::Result<()> {
    let children = read_sorted(root, "", 1)?;
    walk_children(children, max_depth, visit);
    Ok(())
}

/// Returns `false` if the walk was stopped.
fn walk_children(
    children: Vec<Entry>,
    max_depth: usize,
    visit: &mut dyn FnMut(&Entry) -> Flow,
) -> bool {
    for entry in children {
        match visit(&entry) {
            Flow::Stop => return false,
            Flow::Skip => {}
            Flow::Continue => {
                if entry.kind == Kind::Dir && entry.depth < max_depth {
                    let Ok(grandchildren) = read_sorted(&entry.full, &entry.rel, entry.depth + 1)
                    else {
                        continue;
                    };
                    if !walk_children(grandchildren, max_depth, visit) {
                        return false;
                    }
                }
            }
        }
    }
    true
}

/// Reads one directory and sorts it by name.
pub(crate) fn read_sorted(dir: &Path, rel_base: &str, depth: usize) -> io::Result<Vec<Entry>> {
    let mut entries = Vec::new();
    for item in fs::read_dir(dir)? {
        let Ok(item) = item else { continue };
        let name = item.file_name().to_string_lossy().into_owned();
        let kind = match item.file_type() {
            Ok(t) => Kind::of(t),
            Err(_) => continue,
        };
        let rel = if rel_base.is_empty() {
            name.clone()
        } else {
            format!("{rel_base}/{name}")
        };
        entries.push(Entry {
            rel,
            full: item.path(),
            name,
            kind,
            depth,
        });
    }
    entries.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    Ok(entries)
}

/// The number of leading bytes inspected by [`is_binary`].
pub(crate) const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// A file is treated as binary if its first 8 KiB contain a NUL byte.
pub(crate) fn is_binary(head: &[u8]) -> bool {
    head[..head.len().min(BINARY_SNIFF_BYTES)].contains(&0)
}
