//! `filesystem.search`: finds files by name or lines by content under a workspace directory.
//!
//! The query is a literal string unless `regex` is set. Files whose first 8 KiB contain a NUL
//! byte are treated as binary and skipped. Version-control and dependency directories
//! (`.git`, `.hg`, `.svn`, `node_modules`) are not descended into. Symlinks are not followed.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use locara_pdk::{JsonSchema, tool};

use crate::abi::{self, ToolError, WorkspacePath};
use crate::glob::Glob;
use crate::walk::{self, Entry, Flow, Kind};

#[cfg(test)]
mod tests;

/// The largest `max_results` accepted.
pub(crate) const MAX_RESULTS: usize = 10_000;
/// How deep the search descends.
const MAX_WALK_DEPTH: usize = 64;
/// Matching lines are cut to this many characters.
const MAX_TEXT_CHARS: usize = 300;
/// How many chars before the match a cut line keeps.
const MATCH_CONTEXT_CHARS: usize = 60;
/// Directories skipped below the search root.
const SKIPPED_DIRS: [&str; 4] = [".git", ".hg", ".svn", "node_modules"];

/// What a search matches: names, or lines inside files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Name,
    #[default]
    Content,
}

/// `filesystem.search`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The text to look for (a regular expression if regex is true).
    #[schemars(length(min = 1))]
    query: String,
    /// "content": search inside files line by line; "name": match file and directory names. Default "content".
    #[serde(default)]
    mode: Mode,
    /// The directory (or single file) to search. Path relative to the workspace root (e.g. "src/main.rs"), or an absolute path starting with /workspace/. Default ".".
    #[serde(default = "default_path")]
    #[schemars(length(min = 1))]
    path: String,
    /// Only search files matching this glob. Without "/" it matches the file name ("*.py"); with "/" the path relative to path ("src/**/*.rs"). Supports *, **, ?, [abc] and {a,b}.
    // The schema is a string's, not null: the field may be left out but not be null. The
    // `skip_serializing_if` (this type is never serialized) keeps the schema from advertising
    // `"default": null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(min = 1))]
    glob: Option<String>,
    /// Match case exactly. Default false.
    #[serde(default)]
    case_sensitive: bool,
    /// Treat query as a regular expression (Rust regex syntax). Default false (literal text).
    #[serde(default)]
    regex: bool,
    /// Stop after this many matches and set truncated. Default 100.
    #[serde(default = "default_max_results")]
    #[schemars(range(min = 1, max = MAX_RESULTS))]
    max_results: usize,
}

fn default_path() -> String {
    ".".to_owned()
}

fn default_max_results() -> usize {
    100
}

/// One match: a file or directory (name mode), or a line of a file (content mode).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// The matching file or directory, relative to the workspace.
    path: String,
    /// Content mode only: the 1-based line number.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64", range(min = 1))]
    line: Option<u64>,
    /// Content mode only: the matching line, trimmed, cut to 300 characters around the match (cuts marked with …).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(max = MAX_TEXT_CHARS))]
    text: Option<String>,
}

/// `filesystem.search`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// The matches, in path order and then line order.
    matches: Vec<Match>,
    /// How many files (content mode) or entries (name mode) were examined.
    files_scanned: u64,
    /// True if max_results was reached and more matches may exist.
    truncated: bool,
}

/// Searches the user's workspace. mode "content" (default) returns every line containing
/// query, with its path and 1-based line number; mode "name" returns files and directories
/// whose name contains query (or whose relative path does, if query contains "/"). query is
/// literal text unless regex is true (Rust regex syntax), and matching ignores case unless
/// case_sensitive is true. glob restricts which files are searched (e.g. "*.rs",
/// "src/**/*.ts"). Binary files and .git, .hg, .svn and node_modules directories are skipped.
/// Read-only.
#[tool(id = "filesystem.search")]
pub fn filesystem_search(args: Args) -> Result<Output, ToolError> {
    search(&abi::root()?, &args)
}

/// Runs `filesystem.search` against the workspace at `root`.
///
/// # Errors
/// Fails if the arguments are invalid (including a bad regex or glob) or the path is missing.
pub fn run(root: &Path, input: Value) -> Result<Value, ToolError> {
    let args: Args = abi::parse_args(input)?;
    abi::to_output(&search(root, &args)?)
}

struct Search<'a> {
    args: &'a Args,
    matcher: Regex,
    glob: Option<Glob>,
    out: Output,
}

fn search(root: &Path, args: &Args) -> Result<Output, ToolError> {
    if args.query.is_empty() {
        return Err(ToolError::bad_args(
            "query is empty; pass the text or pattern to look for",
        ));
    }
    if !(1..=MAX_RESULTS).contains(&args.max_results) {
        return Err(ToolError::bad_args(format!(
            "max_results must be between 1 and {MAX_RESULTS}, got {}",
            args.max_results
        )));
    }
    let source = if args.regex {
        args.query.clone()
    } else {
        regex::escape(&args.query)
    };
    let matcher = RegexBuilder::new(&source)
        .case_insensitive(!args.case_sensitive)
        .build()
        .map_err(|e| {
            ToolError::bad_args(format!(
                "invalid regex \"{}\": {}; fix the pattern or set regex to false for a literal search",
                args.query,
                crate::regex_error(&e)
            ))
        })?;
    let glob = match &args.glob {
        Some(g) if !g.is_empty() => Some(Glob::new(g, false).map_err(ToolError::bad_args)?),
        _ => None,
    };
    let base = abi::resolve_path(root, &args.path)?;
    let meta = fs::metadata(&base.full).map_err(|e| abi::io_error(&e, "search", &base.display))?;

    let mut state = Search {
        args,
        matcher,
        glob,
        out: Output {
            matches: Vec::new(),
            files_scanned: 0,
            truncated: false,
        },
    };
    if meta.is_dir() {
        walk::walk(&base.full, MAX_WALK_DEPTH, &mut |entry| {
            state.visit(&base, entry)
        })
        .map_err(|e| abi::io_error(&e, "search", &base.display))?;
    } else {
        // A single file: search it directly, ignoring the glob.
        let name = base
            .display
            .rsplit('/')
            .next()
            .unwrap_or(&base.display)
            .to_owned();
        let entry = Entry {
            rel: String::new(),
            name,
            full: base.full.clone(),
            kind: Kind::File,
            depth: 0,
        };
        let display = base.display.clone();
        let _ = state.visit_file(&entry, display);
    }
    Ok(state.out)
}

impl Search<'_> {
    fn visit(&mut self, base: &WorkspacePath, entry: &Entry) -> Flow {
        if entry.kind == Kind::Dir && SKIPPED_DIRS.contains(&entry.name.as_str()) {
            return Flow::Skip;
        }
        let display = base.child_display(&entry.rel);
        let glob_ok = self
            .glob
            .as_ref()
            .is_none_or(|g| g.matches_path(&entry.rel));
        match self.args.mode {
            Mode::Name => {
                if !glob_ok {
                    return Flow::Continue;
                }
                self.out.files_scanned += 1;
                let haystack = if self.args.query.contains('/') {
                    &entry.rel
                } else {
                    &entry.name
                };
                if self.matcher.is_match(haystack) {
                    return self.push(Match {
                        path: display,
                        line: None,
                        text: None,
                    });
                }
                Flow::Continue
            }
            Mode::Content => {
                if entry.kind != Kind::File || !glob_ok {
                    return Flow::Continue;
                }
                self.visit_file(entry, display)
            }
        }
    }

    /// Searches one file's lines; unreadable and binary files are skipped.
    fn visit_file(&mut self, entry: &Entry, display: String) -> Flow {
        if self.args.mode == Mode::Name {
            self.out.files_scanned += 1;
            if self.matcher.is_match(&entry.name) {
                return self.push(Match {
                    path: display,
                    line: None,
                    text: None,
                });
            }
            return Flow::Continue;
        }
        let Ok(file) = File::open(&entry.full) else {
            return Flow::Continue;
        };
        let mut reader = BufReader::with_capacity(64 * 1024, file);
        let Ok(head) = reader.fill_buf() else {
            return Flow::Continue;
        };
        if walk::is_binary(head) {
            return Flow::Continue;
        }
        self.out.files_scanned += 1;
        let mut line = Vec::new();
        let mut number = 0u64;
        loop {
            line.clear();
            match reader
                .by_ref()
                .take(16 * 1024 * 1024)
                .read_until(b'\n', &mut line)
            {
                Ok(0) | Err(_) => return Flow::Continue,
                Ok(_) => {}
            }
            number += 1;
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            if let Some(m) = self.matcher.find(text) {
                let snippet = snippet(text, m.start());
                let flow = self.push(Match {
                    path: display.clone(),
                    line: Some(number),
                    text: Some(snippet),
                });
                if flow == Flow::Stop {
                    return Flow::Stop;
                }
            }
        }
    }

    fn push(&mut self, m: Match) -> Flow {
        if self.out.matches.len() == self.args.max_results {
            self.out.truncated = true;
            return Flow::Stop;
        }
        self.out.matches.push(m);
        Flow::Continue
    }
}

/// The matching line, trimmed, cut to [`MAX_TEXT_CHARS`] chars that keep the match in view.
///
/// A cut is marked with `…` at that end (counted in the limit).
fn snippet(line: &str, match_start: usize) -> String {
    let leading = line.len() - line.trim_start().len();
    let trimmed = line.trim();
    let chars: Vec<char> = trimmed.chars().collect();
    let total = chars.len();
    if total <= MAX_TEXT_CHARS {
        return trimmed.to_owned();
    }
    let match_byte = match_start.saturating_sub(leading).min(trimmed.len());
    let match_char = trimmed
        .char_indices()
        .take_while(|(i, _)| *i < match_byte)
        .count();
    // Show some context before the match, but never leave the window part-empty.
    let start = match_char
        .saturating_sub(MATCH_CONTEXT_CHARS)
        .min(total - (MAX_TEXT_CHARS - 1));
    let lead = start > 0;
    let mut room = MAX_TEXT_CHARS - usize::from(lead);
    let tail = start + room < total;
    if tail {
        room -= 1;
    }
    let mut out = String::new();
    if lead {
        out.push('…');
    }
    out.extend(&chars[start..start + room]);
    if tail {
        out.push('…');
    }
    out
}
