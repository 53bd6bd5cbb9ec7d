//! `file.edit`: exact search-and-replace edits on one text file, all or nothing.
//!
//! Edits apply in order to the result of the previous ones. Each `old` text must occur exactly
//! once unless `replace_all` is set. The file is written only if every edit succeeds, so a
//! failed call leaves the file untouched.

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use locara_pdk::{JsonSchema, tool};

use crate::abi::{self, ToolError};

#[cfg(test)]
mod tests;

/// How many line numbers an ambiguity error lists.
const MAX_LINES_LISTED: usize = 5;

/// One replacement.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    /// The exact text to find (copy it from the file, including whitespace).
    #[schemars(length(min = 1))]
    old: String,
    /// The text to put in its place (may be empty to delete old).
    new: String,
    /// Replace every occurrence of old instead of requiring exactly one. Default false.
    #[serde(default)]
    replace_all: bool,
}

/// `file.edit`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file to edit. Path relative to the workspace root (e.g. "src/main.rs"), or an absolute path starting with /workspace/.
    #[schemars(length(min = 1))]
    path: String,
    /// The replacements to make, applied in order.
    #[schemars(length(min = 1, max = 100))]
    edits: Vec<Edit>,
}

/// `file.edit`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// The path that was edited, relative to the workspace.
    path: String,
    /// The total number of replacements made by all edits.
    #[schemars(range(min = 1))]
    replacements: u64,
    /// The size of the file after the edits, in bytes.
    bytes_written: u64,
}

/// Edits a text file in the user's workspace by exact search and replace. Each edit replaces
/// old with new; edits apply in order, each to the result of the previous ones. old must match
/// the file exactly, including whitespace and indentation, and must occur exactly once unless
/// replace_all is true: include enough surrounding lines to make it unique. All or nothing: if
/// any edit fails, the file is left unchanged and the error names the failing edit. To create a
/// file or replace all of it, use filesystem.write. Changes the user's files.
#[tool(id = "file.edit")]
pub fn file_edit(args: Args) -> Result<Output, ToolError> {
    edit(&abi::root()?, &args)
}

/// Runs `file.edit` against the workspace at `root`.
///
/// # Errors
/// Fails if the arguments are invalid, the file is missing or not UTF-8 text, or any edit
/// matches zero times (or several times without `replace_all`); the file is then unchanged.
pub fn run(root: &Path, input: Value) -> Result<Value, ToolError> {
    let args: Args = abi::parse_args(input)?;
    abi::to_output(&edit(root, &args)?)
}

fn edit(root: &Path, args: &Args) -> Result<Output, ToolError> {
    if args.edits.is_empty() {
        return Err(ToolError::bad_args(
            "edits is empty; pass at least one {\"old\": ..., \"new\": ...} edit",
        ));
    }
    let path = abi::resolve_path(root, &args.path)?;
    let meta = fs::metadata(&path.full).map_err(|e| abi::io_error(&e, "edit", &path.display))?;
    if meta.is_dir() {
        return Err(ToolError::bad_args(format!(
            "\"{}\" is a directory; pass the path of a file",
            path.display
        )));
    }
    let bytes = fs::read(&path.full).map_err(|e| abi::io_error(&e, "read", &path.display))?;
    let mut text = String::from_utf8(bytes).map_err(|_| {
        ToolError::bad_args(format!(
            "\"{}\" is not valid UTF-8 text; file.edit only edits text files",
            path.display
        ))
    })?;

    let total = args.edits.len();
    let mut replacements = 0u64;
    for (index, edit) in args.edits.iter().enumerate() {
        replacements += apply(&mut text, edit, index, total, &path.display)?;
    }
    fs::write(&path.full, text.as_bytes())
        .map_err(|e| abi::io_error(&e, "write", &path.display))?;
    Ok(Output {
        path: path.display,
        replacements,
        bytes_written: text.len() as u64,
    })
}

/// Applies one edit to `text` and returns how many replacements it made.
fn apply(
    text: &mut String,
    edit: &Edit,
    index: usize,
    total: usize,
    display: &str,
) -> Result<u64, ToolError> {
    let which = if total == 1 {
        "edits[0]".to_owned()
    } else {
        format!("edits[{index}] (of {total})")
    };
    let earlier = if index > 0 {
        " (matched against the text as changed by the earlier edits in this call)"
    } else {
        ""
    };
    if edit.old.is_empty() {
        return Err(ToolError::bad_args(format!(
            "{which}: old is empty; copy the exact text to replace from the file; to create or rewrite a whole file use filesystem.write; nothing was written"
        )));
    }
    let positions: Vec<usize> = text
        .match_indices(edit.old.as_str())
        .map(|(i, _)| i)
        .collect();
    match positions.len() {
        0 => Err(ToolError::bad_args(format!(
            "{which}: old text not found in \"{display}\"{earlier}; {}; nothing was written",
            not_found_hint(text, &edit.old)
        ))),
        1 => {
            let start = positions[0];
            text.replace_range(start..start + edit.old.len(), &edit.new);
            Ok(1)
        }
        n if edit.replace_all => {
            *text = text.replace(edit.old.as_str(), &edit.new);
            Ok(n as u64)
        }
        n => {
            let lines = line_numbers(text, &positions);
            Err(ToolError::bad_args(format!(
                "{which}: old text matches {n} times in \"{display}\" (at lines {lines}){earlier}; include more surrounding lines in old to make it unique, or set replace_all to true to replace every occurrence; nothing was written"
            )))
        }
    }
}

/// Explains the most likely reason an `old` text did not match.
fn not_found_hint(text: &str, old: &str) -> String {
    if text.contains("\r\n") && old.contains('\n') && !old.contains("\r\n") {
        let crlf = old.replace('\n', "\r\n");
        if text.contains(&crlf) {
            return "the file uses CRLF (\\r\\n) line endings; write the line breaks in old as \\r\\n".to_owned();
        }
    }
    let trimmed = old.trim();
    if !trimmed.is_empty() && trimmed != old && text.contains(trimmed) {
        return "it does match once leading/trailing whitespace is removed; check the indentation and line breaks at the ends of old".to_owned();
    }
    if text.to_lowercase().contains(&old.to_lowercase()) {
        return "it matches if case is ignored; copy the exact capitalisation from the file"
            .to_owned();
    }
    let squeezed_old = squeeze_whitespace(old);
    if !squeezed_old.is_empty() && squeeze_whitespace(text).contains(&squeezed_old) {
        return "it matches if whitespace is ignored; copy the exact indentation and spacing from the file (read it again with filesystem.read)".to_owned();
    }
    "old must match the file exactly, including whitespace and indentation; read the file again with filesystem.read and copy the text from it".to_owned()
}

fn squeeze_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The 1-based line numbers of the first few byte positions, e.g. `3, 8, 12 and 2 more`.
fn line_numbers(text: &str, positions: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut line = 1;
    let mut cursor = 0;
    for &pos in positions.iter().take(MAX_LINES_LISTED) {
        line += text.as_bytes()[cursor..pos]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        cursor = pos;
        out.push(line.to_string());
    }
    let mut listed = out.join(", ");
    if positions.len() > MAX_LINES_LISTED {
        listed.push_str(&format!(" and {} more", positions.len() - MAX_LINES_LISTED));
    }
    listed
}
