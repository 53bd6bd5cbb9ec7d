//! `filesystem.list`: lists a workspace directory, optionally recursively.
//!
//! Returns both a structured entry list and a compact indented tree for reading. Order is
//! deterministic: depth-first, each directory's children sorted by name. Symlinks are shown
//! but not followed.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use locara_pdk::{JsonSchema, tool};

use crate::abi::{self, ToolError};
use crate::walk::{self, Flow, Kind};

#[cfg(test)]
mod tests;

/// The deepest `max_depth` accepted.
pub(crate) const MAX_DEPTH: usize = 64;
/// The largest `max_entries` accepted.
pub(crate) const MAX_ENTRIES: usize = 10_000;

/// `filesystem.list`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The directory to list. Path relative to the workspace root (e.g. "src/main.rs"), or an absolute path starting with /workspace/. Default "." (the workspace root).
    #[serde(default = "default_path")]
    #[schemars(length(min = 1))]
    path: String,
    /// Also list the contents of subdirectories, up to max_depth levels. Default false (direct children only).
    #[serde(default)]
    recursive: bool,
    /// With recursive, how many levels to descend (1 = direct children only). Default 3.
    #[serde(default = "default_max_depth")]
    #[schemars(range(min = 1, max = MAX_DEPTH))]
    max_depth: usize,
    /// Stop after this many entries and set truncated. Default 1000.
    #[serde(default = "default_max_entries")]
    #[schemars(range(min = 1, max = MAX_ENTRIES))]
    max_entries: usize,
    /// Include entries whose names start with "." (and their contents). Default false.
    #[serde(default)]
    include_hidden: bool,
}

fn default_path() -> String {
    ".".to_owned()
}

fn default_max_depth() -> usize {
    3
}

fn default_max_entries() -> usize {
    1000
}

/// One entry of the listing.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntryOut {
    /// The entry's path relative to the workspace.
    path: String,
    /// What the entry is; symlinks are not followed.
    kind: Kind,
    /// Size in bytes for files; 0 for directories and symlinks.
    size: u64,
}

/// `filesystem.list`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// The entries found, depth-first, each directory's children sorted by name.
    entries: Vec<EntryOut>,
    /// The same listing as an indented text tree (directories end with "/", files show their size).
    tree: String,
    /// True if max_entries was reached before the listing was complete.
    truncated: bool,
}

/// Lists a directory of the user's workspace. Returns entries (path relative to the workspace,
/// kind file/dir/symlink, size in bytes) in a deterministic depth-first order sorted by name,
/// plus tree, an indented text view that is easiest to read. Set recursive to true to descend
/// up to max_depth levels. Hidden entries (names starting with ".") are skipped unless
/// include_hidden is true; symlinks are shown but not followed. Read-only.
#[tool(id = "filesystem.list")]
pub fn filesystem_list(args: Args) -> Result<Output, ToolError> {
    list(&abi::root()?, &args)
}

/// Runs `filesystem.list` against the workspace at `root`.
///
/// # Errors
/// Fails if the arguments are invalid or the directory is missing, a file or unreadable.
pub fn run(root: &Path, input: Value) -> Result<Value, ToolError> {
    let args: Args = abi::parse_args(input)?;
    abi::to_output(&list(root, &args)?)
}

fn list(root: &Path, args: &Args) -> Result<Output, ToolError> {
    if !(1..=MAX_DEPTH).contains(&args.max_depth) {
        return Err(ToolError::bad_args(format!(
            "max_depth must be between 1 and {MAX_DEPTH}, got {}",
            args.max_depth
        )));
    }
    if !(1..=MAX_ENTRIES).contains(&args.max_entries) {
        return Err(ToolError::bad_args(format!(
            "max_entries must be between 1 and {MAX_ENTRIES}, got {}",
            args.max_entries
        )));
    }
    let dir = abi::resolve_path(root, &args.path)?;
    let meta = fs::metadata(&dir.full).map_err(|e| abi::io_error(&e, "list", &dir.display))?;
    if !meta.is_dir() {
        return Err(ToolError::bad_args(format!(
            "\"{}\" is a file, not a directory; use filesystem.read to read it, or list its parent directory",
            dir.display
        )));
    }

    let depth = if args.recursive { args.max_depth } else { 1 };
    let mut entries = Vec::new();
    let mut tree = format!("{}/\n", dir.display);
    let mut truncated = false;
    walk::walk(&dir.full, depth, &mut |entry| {
        if entry.is_hidden() && !args.include_hidden {
            return Flow::Skip;
        }
        if entries.len() == args.max_entries {
            truncated = true;
            return Flow::Stop;
        }
        let size = entry.size();
        let indent = "  ".repeat(entry.depth);
        let _ = match entry.kind {
            Kind::Dir => writeln!(tree, "{indent}{}/", entry.name),
            Kind::File => writeln!(tree, "{indent}{} ({})", entry.name, human_size(size)),
            Kind::Symlink => match fs::read_link(&entry.full) {
                Ok(target) => writeln!(tree, "{indent}{} -> {}", entry.name, target.display()),
                Err(_) => writeln!(tree, "{indent}{}@", entry.name),
            },
        };
        entries.push(EntryOut {
            path: dir.child_display(&entry.rel),
            kind: entry.kind,
            size,
        });
        Flow::Continue
    })
    .map_err(|e| abi::io_error(&e, "list", &dir.display))?;
    if truncated {
        let _ = writeln!(
            tree,
            "... truncated after {} entries; list a subdirectory or raise max_entries",
            args.max_entries
        );
    } else if entries.is_empty() {
        tree.push_str("  (empty)\n");
    }
    Ok(Output {
        entries,
        tree,
        truncated,
    })
}

/// Formats a byte count for people: `512 B`, `1.5 KiB`, `3.0 MiB`.
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}
