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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
}

#[derive(Debug, Serialize)]
struct Output {
    stdout: String,
    exit_code: i32,
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
