//! `filesystem.read`: reads (part of) a file in the workspace as text.
//!
//! Reads at most `max_bytes` starting at byte `offset`. Invalid UTF-8 is replaced with U+FFFD;
//! when the read is cut short, a multi-byte character split by the cut is left for the next
//! read, so `offset + bytes_read` is always a clean place to continue.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use locara_pdk::{JsonSchema, tool};

use crate::abi::{self, ToolError};

#[cfg(test)]
mod tests;

/// The default for `max_bytes`: 1 MiB.
pub(crate) const DEFAULT_MAX_BYTES: u64 = 1024 * 1024;
/// The largest accepted `max_bytes`: 10 MiB.
pub(crate) const MAX_MAX_BYTES: u64 = 10 * 1024 * 1024;

/// `filesystem.read`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file to read. Path relative to the workspace root (e.g. "src/main.rs"), or an absolute path starting with /workspace/.
    #[schemars(length(min = 1))]
    path: String,
    /// The most bytes to return (1 to 10485760). Default 1048576 (1 MiB).
    #[serde(default = "default_max_bytes")]
    #[schemars(range(min = 1, max = MAX_MAX_BYTES))]
    max_bytes: u64,
    /// Byte offset to start reading at; must not exceed the file size. Default 0.
    #[serde(default)]
    offset: u64,
}

fn default_max_bytes() -> u64 {
    DEFAULT_MAX_BYTES
}

/// `filesystem.read`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// The path that was read, relative to the workspace.
    path: String,
    /// The bytes read, decoded as UTF-8 (invalid sequences replaced by U+FFFD).
    content: String,
    /// How many bytes of the file content covers.
    bytes_read: u64,
    /// The size of the whole file in bytes.
    total_bytes: u64,
    /// True if the file continues after offset + bytes_read.
    truncated: bool,
}

/// Reads a text file from the user's workspace and returns its content as UTF-8 (invalid bytes
/// become U+FFFD). Reads at most max_bytes (default 1 MiB) starting at byte offset; if truncated
/// is true, call again with offset = offset + bytes_read to get the next piece (a cut never
/// splits a UTF-8 character). Use filesystem.list or filesystem.search first if you are unsure
/// of the path. Read-only.
#[tool(id = "filesystem.read")]
pub fn filesystem_read(args: Args) -> Result<Output, ToolError> {
    read(&abi::root()?, &args)
}

/// Runs `filesystem.read` against the workspace at `root`.
///
/// # Errors
/// Fails if the arguments are invalid, the file is missing, is a directory or cannot be read.
pub fn run(root: &Path, input: Value) -> Result<Value, ToolError> {
    let args: Args = abi::parse_args(input)?;
    abi::to_output(&read(root, &args)?)
}

fn read(root: &Path, args: &Args) -> Result<Output, ToolError> {
    if args.max_bytes == 0 || args.max_bytes > MAX_MAX_BYTES {
        return Err(ToolError::bad_args(format!(
            "max_bytes must be between 1 and {MAX_MAX_BYTES} (10 MiB), got {}; read large files in pieces using offset",
            args.max_bytes
        )));
    }
    let path = abi::resolve_path(root, &args.path)?;
    let meta =
        std::fs::metadata(&path.full).map_err(|e| abi::io_error(&e, "read", &path.display))?;
    if meta.is_dir() {
        return Err(ToolError::bad_args(format!(
            "\"{}\" is a directory, not a file; use filesystem.list to see what it contains",
            path.display
        )));
    }
    let total_bytes = meta.len();
    if args.offset > total_bytes {
        return Err(ToolError::bad_args(format!(
            "offset {} is past the end of \"{}\", which has {total_bytes} bytes; use an offset between 0 and {total_bytes}",
            args.offset, path.display
        )));
    }

    let mut file = File::open(&path.full).map_err(|e| abi::io_error(&e, "read", &path.display))?;
    if args.offset > 0 {
        file.seek(SeekFrom::Start(args.offset))
            .map_err(|e| abi::io_error(&e, "seek in", &path.display))?;
    }
    let mut buf = Vec::new();
    // Read one byte more than asked for, to tell "exactly max_bytes left" from "more left".
    file.take(args.max_bytes + 1)
        .read_to_end(&mut buf)
        .map_err(|e| abi::io_error(&e, "read", &path.display))?;
    let mut truncated = buf.len() as u64 > args.max_bytes;
    if truncated {
        buf.truncate(args.max_bytes as usize);
        cut_at_char_boundary(&mut buf);
    }
    // The file may have changed size since the metadata call; trust what was read.
    let end = args.offset + buf.len() as u64;
    let total_bytes = total_bytes.max(end);
    truncated |= end < total_bytes;
    let bytes_read = buf.len() as u64;
    let content = match String::from_utf8(buf) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok(Output {
        path: path.display,
        content,
        bytes_read,
        total_bytes,
        truncated,
    })
}

/// Drops a multi-byte UTF-8 sequence that the cut at the end of `buf` split in two.
///
/// Never empties the buffer, so a caller paging with a tiny `max_bytes` still makes progress.
fn cut_at_char_boundary(buf: &mut Vec<u8>) {
    let len = buf.len();
    for back in 1..=len.min(3) {
        let byte = buf[len - back];
        if byte & 0xC0 == 0x80 {
            continue; // A continuation byte: keep looking for the lead byte.
        }
        let needed = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        if needed > back && len > back {
            buf.truncate(len - back);
        }
        return;
    }
}
