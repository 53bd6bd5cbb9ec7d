//! `filesystem.write`: creates, overwrites or appends to a text file in the workspace.
//!
//! The default mode, `create`, refuses to touch an existing file, so an agent cannot destroy
//! data by accident: it has to ask for `overwrite` or `append` explicitly.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use locara_pdk::{JsonSchema, tool};

use crate::abi::{self, ToolError};

#[cfg(test)]
mod tests;

/// How a write treats an existing file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Mode {
    #[default]
    Create,
    Overwrite,
    Append,
}

/// `filesystem.write`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file to write. Path relative to the workspace root (e.g. "src/main.rs"), or an absolute path starting with /workspace/.
    #[schemars(length(min = 1))]
    path: String,
    /// The text to write, exactly as it should appear in the file (UTF-8).
    content: String,
    /// "create": new file only, fails if it exists; "overwrite": replace the whole file; "append": add to the end. Default "create".
    #[serde(default)]
    mode: Mode,
    /// Create missing parent directories. Default false (a missing parent is an error).
    #[serde(default)]
    create_dirs: bool,
}

/// `filesystem.write`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// The path that was written, relative to the workspace.
    path: String,
    /// How many bytes were written.
    bytes_written: u64,
    /// True if the file did not exist before this call.
    created: bool,
}

/// Writes text to a file in the user's workspace. mode "create" (the default) makes a new file
/// and fails if the file already exists; "overwrite" replaces the whole file; "append" adds to
/// its end (creating it if missing). Set create_dirs to true to create missing parent
/// directories. For small changes to an existing file, prefer file.edit. Changes the user's
/// files.
#[tool(id = "filesystem.write")]
pub fn filesystem_write(args: Args) -> Result<Output, ToolError> {
    write(&abi::root()?, &args)
}

/// Runs `filesystem.write` against the workspace at `root`.
///
/// # Errors
/// Fails if the arguments are invalid, the file exists in `create` mode, the parent directory
/// is missing (and `create_dirs` is false), or the write fails.
pub fn run(root: &Path, input: Value) -> Result<Value, ToolError> {
    let args: Args = abi::parse_args(input)?;
    abi::to_output(&write(root, &args)?)
}

fn write(root: &Path, args: &Args) -> Result<Output, ToolError> {
    let path = abi::resolve_path(root, &args.path)?;
    if path.is_root() {
        return Err(ToolError::bad_args(
            "the path names the workspace directory itself; pass a file path such as \"notes/todo.md\"",
        ));
    }
    let existing = match fs::symlink_metadata(&path.full) {
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(abi::io_error(&e, "inspect", &path.display)),
    };
    if let Some(meta) = &existing {
        // Follow a symlink so that "is it a directory" is answered for its target.
        let is_dir = meta.is_dir() || fs::metadata(&path.full).is_ok_and(|m| m.is_dir());
        if is_dir {
            return Err(ToolError::bad_args(format!(
                "\"{}\" is a directory; pass the path of a file inside it",
                path.display
            )));
        }
        if args.mode == Mode::Create {
            return Err(ToolError::bad_args(format!(
                "\"{}\" already exists and mode is \"create\"; set mode to \"overwrite\" to replace it or \"append\" to add to its end",
                path.display
            )));
        }
    }

    if let Some(parent) = path.full.parent()
        && let Err(e) = fs::metadata(parent)
    {
        if let Some(refused) = abi::jail_refusal(&e, &path.display) {
            return Err(refused);
        }
        if args.create_dirs {
            fs::create_dir_all(parent).map_err(|e| {
                abi::io_error(&e, "create the parent directories of", &path.display)
            })?;
        } else {
            let parent_display = match path.display.rsplit_once('/') {
                Some((dir, _)) => dir,
                None => ".",
            };
            return Err(ToolError::bad_args(format!(
                "the directory \"{parent_display}\" does not exist; set create_dirs to true to create it, or check the path with filesystem.list"
            )));
        }
    }

    let mut options = OpenOptions::new();
    match args.mode {
        Mode::Create => options.write(true).create_new(true),
        Mode::Overwrite => options.write(true).create(true).truncate(true),
        Mode::Append => options.append(true).create(true),
    };
    let mut file = options.open(&path.full).map_err(|e| match e.kind() {
        io::ErrorKind::AlreadyExists => ToolError::bad_args(format!(
            "\"{}\" already exists and mode is \"create\"; set mode to \"overwrite\" to replace it or \"append\" to add to its end",
            path.display
        )),
        _ => abi::io_error(&e, "open for writing", &path.display),
    })?;
    file.write_all(args.content.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|e| abi::io_error(&e, "write", &path.display))?;
    Ok(Output {
        path: path.display,
        bytes_written: args.content.len() as u64,
        created: existing.is_none(),
    })
}
