//! `bash.read-only`: a tiny, read-only shell over the workspace, implemented inside the tool.
//!
//! No host shell and no processes are involved: the command line is parsed here
//! ([`parse`]) and each command is a Rust function ([`commands`]) that reads the workspace
//! (the working directory, `/workspace`). Commands can be joined with `|`; each stage's
//! stdout is the next stage's stdin, and the exit code is the last stage's (as in bash
//! without `pipefail`). Anything that would write, run programs or need a real shell is
//! refused with a message listing what is supported.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use locara_pdk::{JsonSchema, tool};

use crate::abi::{self, ToolError};

mod commands;
mod parse;
#[cfg(test)]
mod tests;

/// The help text appended to every "unsupported" error.
const SUPPORTED: &str = "Supported commands: ls [-l] [-a] [-F] [path...]; cat [-n] [path...]; \
head [-n N] [-c N] [path...]; tail [-n N|+N] [-c N] [path...]; wc [-l] [-w] [-c] [-m] [path...]; \
grep [-i] [-n] [-r] [-l] [-c] [-v] [-w] [-o] [-q] [-h] [-H] [-E] [-F] [-m N] [-e PATTERN] \
[--include=GLOB] [--exclude=GLOB] [--exclude-dir=GLOB] PATTERN [path...]; \
find [path...] [-name GLOB] [-iname GLOB] [-path GLOB] [-type f|d|l] [-maxdepth N] [-mindepth N]; \
sort [-r] [-n] [-u] [-f] [path...]; uniq [-c] [-d] [-u] [-i] [path]; pwd; echo [-n] [-e] [text...]. \
Join commands with | and quote with '...' or \"...\"; unquoted *, ? and [...] expand to matching paths. \
Paths are relative to /workspace (the working directory); nothing can be written";

/// Output beyond this many bytes is cut, with a note at the end.
const MAX_STDOUT_BYTES: usize = 1024 * 1024;
/// The largest amount of data one pipeline stage may produce.
const MAX_STAGE_BYTES: usize = 64 * 1024 * 1024;

/// `bash.read-only`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The command line, e.g. "grep -rn 'fn main' src | head -n 20".
    #[schemars(length(min = 1, max = 10_000))]
    command: String,
}

/// `bash.read-only`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// What the last command of the pipeline printed (invalid UTF-8 replaced by U+FFFD).
    stdout: String,
    /// The last command's exit status: 0 on success, 1 when grep selected no line.
    #[schemars(range(min = 0, max = 255))]
    exit_code: i32,
}

/// Runs a read-only shell command line over the user's workspace (the working directory,
/// /workspace). It is not a real shell: it runs no programs and supports only these built-in
/// commands: ls [-l] [-a] [-F]; cat [-n]; head [-n N] [-c N]; tail [-n N|+N] [-c N]; wc [-l]
/// [-w] [-c] [-m]; grep [-i] [-n] [-r] [-l] [-c] [-v] [-w] [-o] [-q] [-h] [-H] [-E] [-F] [-m N]
/// [-e PATTERN] [--include=GLOB] [--exclude=GLOB] [--exclude-dir=GLOB] PATTERN [path...]; find
/// [path...] [-name GLOB] [-iname GLOB] [-path GLOB] [-type f|d|l] [-maxdepth N] [-mindepth N];
/// sort [-r] [-n] [-u] [-f]; uniq [-c] [-d] [-u] [-i]; pwd; echo [-n] [-e]. Commands can be
/// joined with | and arguments quoted with '...' or "..."; unquoted *, ? and [...] expand to
/// matching paths. Redirections, ;, &&, ||, $(...), backticks and variables are rejected. grep
/// patterns are POSIX basic regular expressions as in grep (-E extended, -F literal text; no
/// backreferences). Directory listings are sorted by name. Output beyond 1 MiB is cut.
/// Read-only.
#[tool(id = "bash.read-only")]
pub fn bash_read_only(args: Args) -> Result<Output, ToolError> {
    execute(&abi::root()?, &args.command)
}

/// Runs `bash.read-only` against the workspace at `root`.
///
/// # Errors
/// Fails on unsupported syntax or commands, bad options, and missing or unreadable paths.
pub fn run(root: &Path, input: Value) -> Result<Value, ToolError> {
    let args: Args = abi::parse_args(input)?;
    abi::to_output(&execute(root, &args.command)?)
}

fn execute(root: &Path, command: &str) -> Result<Output, ToolError> {
    let stages = parse::parse(command)?;
    let ctx = commands::Ctx { root };
    let mut stdin: Option<Vec<u8>> = None;
    let mut exit_code = 0;
    for stage in &stages {
        let argv = ctx.expand(stage);
        let Some((name, rest)) = argv.split_first() else {
            return Err(ToolError::bad_args("a pipeline stage is empty"));
        };
        let out = ctx.run(name, rest, stdin.take())?;
        if out.stdout.len() > MAX_STAGE_BYTES {
            return Err(ToolError::bad_args(format!(
                "{name}: produced more than {} MiB of output; narrow the command (e.g. add | head)",
                MAX_STAGE_BYTES / (1024 * 1024)
            )));
        }
        exit_code = out.code;
        stdin = Some(out.stdout);
    }
    let bytes = stdin.unwrap_or_default();
    let stdout = if bytes.len() > MAX_STDOUT_BYTES {
        let shown = String::from_utf8_lossy(&bytes[..MAX_STDOUT_BYTES]);
        let shown = shown.trim_end_matches('\u{FFFD}');
        format!(
            "{shown}\n[output truncated: showing the first {MAX_STDOUT_BYTES} of {} bytes; pipe through head or narrow the command]\n",
            bytes.len()
        )
    } else {
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Ok(Output { stdout, exit_code })
}
