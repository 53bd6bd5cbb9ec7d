//! The user's directory: `/workspace` in the guest, and the paths a caller passes into it.
//!
//! A tool whose manifest declares `wasi_imports.fs.user_dir` sees the directory the user
//! selected at [`WORKSPACE`]. Callers pass paths relative to it (`src/main.rs`), or absolute
//! under it; [`resolve_path`] maps them, and [`io_error`] turns an I/O error into a message
//! that says what to do. It deliberately does not resolve `..`: jailing is the host's job.

use std::io;
use std::path::{Path, PathBuf};

use crate::ToolError;

#[cfg(test)]
mod tests;

/// Where the user-selected directory is mounted inside the guest.
pub const WORKSPACE: &str = "/workspace";

/// The workspace's directory, [`tool_root`], for a `#[tool]` function that works on it.
///
/// # Errors
/// If the workspace is not mounted (the user selected no directory, or the app did not grant
/// one), an error saying so instead of a confusing "not found" later.
pub fn root() -> Result<PathBuf, ToolError> {
    let root = tool_root();
    if root.is_dir() {
        Ok(root)
    } else {
        Err(ToolError::failed(format!(
            "no workspace directory is available at {}: the user has not selected one for this tool, or the app has not granted it; ask the user to select a directory",
            root.display()
        )))
    }
}

/// The directory that user paths are relative to: `/workspace`.
///
/// Natively built binaries (not wasm) honour `LOCARA_TOOL_ROOT` so they can be smoke-tested.
pub fn tool_root() -> PathBuf {
    #[cfg(not(target_os = "wasi"))]
    if let Some(root) = std::env::var_os("LOCARA_TOOL_ROOT") {
        return PathBuf::from(root);
    }
    PathBuf::from(WORKSPACE)
}

/// A user path resolved against the tool root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspacePath {
    /// The path to open, under the tool root.
    pub full: PathBuf,
    /// The path relative to the workspace, as reported back to the caller (`.` for the root).
    pub display: String,
}

impl WorkspacePath {
    /// The display path of a child entry named `name`.
    pub fn child_display(&self, name: &str) -> String {
        join_display(&self.display, name)
    }

    /// Whether this is the workspace root itself.
    pub fn is_root(&self) -> bool {
        self.display == "."
    }
}

/// Joins a display path and a relative suffix, treating `.` as empty.
pub(crate) fn join_display(base: &str, name: &str) -> String {
    if base == "." {
        name.to_owned()
    } else {
        format!("{base}/{name}")
    }
}

/// Maps a user path onto the tool root.
///
/// Accepts a path relative to the workspace (`src/main.rs`, `./src`, `.`) or an absolute
/// path under `/workspace`. `..` is passed through untouched: the host jails the guest.
///
/// # Errors
/// Returns a bad-arguments error for an empty path or an absolute path outside `/workspace`.
pub fn resolve_path(root: &Path, user: &str) -> Result<WorkspacePath, ToolError> {
    if user.trim().is_empty() {
        return Err(ToolError::bad_args(
            "the path is empty; pass a path relative to the workspace, e.g. \"src/main.rs\", or \".\" for the workspace itself",
        ));
    }
    if user.contains('\0') {
        return Err(ToolError::bad_args("the path contains a NUL character"));
    }
    let relative = if let Some(rest) = user.strip_prefix(WORKSPACE) {
        if !(rest.is_empty() || rest.starts_with('/')) {
            return Err(outside_workspace(user));
        }
        rest
    } else if user.starts_with('/') {
        return Err(outside_workspace(user));
    } else {
        user
    };
    let display = normalize_display(relative);
    let full = if display == "." {
        root.to_path_buf()
    } else {
        root.join(&display)
    };
    Ok(WorkspacePath { full, display })
}

fn outside_workspace(user: &str) -> ToolError {
    ToolError::bad_args(format!(
        "the path \"{user}\" is outside the workspace; pass a path relative to the workspace (e.g. \"src/main.rs\") or an absolute path starting with {WORKSPACE}/"
    ))
}

/// Drops empty and `.` components; keeps `..` (the host jails).
fn normalize_display(relative: &str) -> String {
    let parts: Vec<&str> = relative
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    }
}

/// WASI's `ENOTCAPABLE`, as `io::Error::raw_os_error` reports it in the guest: the sandbox
/// refused a path because a symbolic link or `..` in it leads out of the preopened directory
/// (std calls it "Capabilities insufficient"). Natively, 76 is Linux's `ENOTUNIQ`, a network
/// error no file operation returns, so the tests can make one with `from_raw_os_error`.
pub const ENOTCAPABLE: i32 = 76;

/// Where a path the sandbox refused leads, in the words every tool uses for it.
pub const LEADS_OUT: &str = "outside the workspace (a link or `..` leads out)";

/// Whether `err` is the sandbox refusing a path that leads out of the workspace.
pub fn leads_out(err: &io::Error) -> bool {
    err.raw_os_error() == Some(ENOTCAPABLE)
}

/// The error for `display` (the path as the caller gave it) when `err` is the sandbox refusing
/// it because a link or `..` leads out of the workspace; `None` for any other error.
///
/// The host jails every path (see the module doc); this only says so instead of "Capabilities
/// insufficient (os error 76)". It is a bad-arguments error: another path works.
pub fn jail_refusal(err: &io::Error, display: &str) -> Option<ToolError> {
    leads_out(err).then(|| {
        ToolError::bad_args(format!(
            "\"{display}\" is {LEADS_OUT}; the tool can only reach files inside the workspace, so pass a path that stays in it"
        ))
    })
}

/// Turns an I/O error into an actionable tool error.
///
/// `action` is a verb phrase such as "read" and `display` the path as the caller knows it.
/// Errors the caller can fix by changing the arguments (not found, wrong kind of file, a path
/// that leads out of the workspace, see [`jail_refusal`]) are [`crate::ErrorKind::BadArgs`];
/// everything else is [`crate::ErrorKind::Failed`].
pub fn io_error(err: &io::Error, action: &str, display: &str) -> ToolError {
    if let Some(refused) = jail_refusal(err, display) {
        return refused;
    }
    match err.kind() {
        io::ErrorKind::NotFound => ToolError::bad_args(format!(
            "cannot {action} \"{display}\": no such file or directory; use filesystem.list or filesystem.search to find the right path"
        )),
        io::ErrorKind::PermissionDenied => {
            ToolError::failed(format!("cannot {action} \"{display}\": permission denied"))
        }
        io::ErrorKind::ReadOnlyFilesystem => ToolError::failed(format!(
            "cannot {action} \"{display}\": the workspace is mounted read-only for this tool"
        )),
        io::ErrorKind::IsADirectory => {
            ToolError::bad_args(format!("cannot {action} \"{display}\": it is a directory"))
        }
        io::ErrorKind::NotADirectory => ToolError::bad_args(format!(
            "cannot {action} \"{display}\": a component of the path is a file, not a directory"
        )),
        io::ErrorKind::AlreadyExists => {
            ToolError::bad_args(format!("cannot {action} \"{display}\": it already exists"))
        }
        _ => ToolError::failed(format!("cannot {action} \"{display}\": {err}")),
    }
}
