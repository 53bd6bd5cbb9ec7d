//! `run` and `chain`: calling tools and reporting what happened.
//!
//! A tool that ran and failed exits 1 with its error report on stderr; a call that could not
//! run exits 2 with the facade's message, hint and violations.

use std::process::ExitCode;

use anyhow::Context as _;
use locara_facade::{
    BatchRequest, ChainRequest, ErrorReport, Locara, RunRequest, RunResponse, ToolFormat,
    tool_results_reply,
};

use crate::{
    arguments::{self, Stdin},
    cli::{BatchArgs, ChainArgs, RunArgs},
    context::{self, Context},
    output, progress, receipts,
};

/// Exit code: the tool ran and failed.
const TOOL_FAILED: u8 = 1;
/// Exit code: the call could not run.
const COULD_NOT_RUN: u8 = 2;

/// `locara run`.
pub(crate) fn run(
    ctx: &Context,
    args: &RunArgs,
    stdin: &mut Stdin<'_>,
) -> anyhow::Result<ExitCode> {
    let dir = args.dir.as_deref().map(context::existing_dir).transpose()?;
    let out = context::created_dir(args.out.as_deref(), "output")?;
    let receipt_key = match &args.receipt {
        Some(_) => Some(receipts::host_key(ctx)?),
        None => None,
    };
    let locara = ctx.locara_with_output(
        dir.as_deref(),
        args.allow_write,
        out.as_deref(),
        receipt_key,
    )?;
    if let Some(source) = &args.tool_call {
        return tool_calls(&locara, source, dir.as_deref(), out.as_deref(), stdin);
    }
    let Some(tool) = &args.tool else {
        // Clap requires TOOL without --tool-call.
        return Err(anyhow::format_err!(
            "name the tool to run, or pass --tool-call FILE"
        ));
    };
    let files = arguments::FileArgs {
        keys: file_argument_keys(&locara, tool),
        workspace: dir.as_deref(),
    };
    let arguments = arguments::build(
        args.arguments.as_deref(),
        args.input.as_deref(),
        &args.args,
        &files,
        stdin,
    )?;
    let mut request = RunRequest::new(tool, arguments.value);
    if let Some(dir) = &dir {
        request = request.with_workspace(dir);
    }
    if let Some(out) = &out {
        request = request.with_output_dir(out);
    }
    if args.receipt.is_some() {
        request = request.with_receipt();
    }
    if let Some(seed) = args.seed {
        request = request.with_seed(seed);
    }
    let line = progress::Line::on_stderr();
    let outcome = match &line {
        Some(line) => runtime()?.block_on(locara.run_with_progress(request, line.sink())),
        None => runtime()?.block_on(locara.run(request)),
    };
    if let Some(line) = line {
        line.clear();
    }
    let response = match outcome {
        Ok(response) => response,
        Err(error) => {
            let mut report = error.report().clone();
            if ctx.app_file.is_none()
                && let Some(hint) = terminal_hint(&locara, tool, &report, args)
            {
                report.hint = hint;
            }
            if let Some(hint) = quoting_hint(&report, &arguments.parsed) {
                report.hint = format!("{hint}; {}", report.hint);
            }
            output::could_not_run(&report, ctx.json)?;
            return Ok(ExitCode::from(COULD_NOT_RUN));
        }
    };
    if let (Some(path), Some(receipt)) = (&args.receipt, &response.receipt) {
        std::fs::write(path, receipt.to_json_pretty())
            .with_context(|| format!("cannot write the receipt {}", path.display()))?;
        if !ctx.json {
            eprintln!("wrote the receipt {}", path.display());
        }
    }
    if ctx.json {
        output::json(&response)?;
    } else if response.ok {
        output::json(response.output.as_ref().unwrap_or(&serde_json::Value::Null))?;
    }
    if !ctx.json {
        for file in &response.files {
            if let Some(path) = &file.path {
                eprintln!("wrote {} ({} bytes)", path.display(), file.size_bytes);
            }
        }
        if response.files.iter().any(|f| f.path.is_none()) {
            eprintln!(
                "note: the tool produced {} file(s); pass --out DIR to write them, or --json to get them base64-encoded",
                response.files.len()
            );
        }
    }
    if let Some(t) = &response.truncated {
        eprintln!(
            "note: the output was cut from {} to {} bytes to fit the output cap",
            t.original_bytes, t.returned_bytes
        );
    }
    if response.ok {
        return Ok(ExitCode::SUCCESS);
    }
    eprint!("{}", failure_text(&response));
    Ok(ExitCode::from(TOOL_FAILED))
}

/// `locara run --tool-call`: runs every call of an LLM message, in order, and prints the reply
/// in the message's format. Exit code 1 when any call failed or could not run.
fn tool_calls(
    locara: &Locara,
    source: &str,
    dir: Option<&std::path::Path>,
    out: Option<&std::path::Path>,
    stdin: &mut Stdin<'_>,
) -> anyhow::Result<ExitCode> {
    let text = arguments::read_source(source, stdin, "the tool call")?;
    let message = locara_manifest::json::parse_value("tool-call message", &text)
        .with_context(|| format!("cannot read {source} as a tool-call message"))?;
    let calls = locara.requests_from_tool_calls(&message)?;
    let format = calls.first().map_or(ToolFormat::OpenAi, |c| c.format);
    let runtime = runtime()?;
    let mut all_ok = true;
    let mut results = Vec::new();
    for call in &calls {
        let outcome = match call.request.clone() {
            Ok(mut request) => {
                if let Some(dir) = dir {
                    request = request.with_workspace(dir);
                }
                if let Some(out) = out {
                    request = request.with_output_dir(out);
                }
                runtime.block_on(locara.run(request))
            }
            Err(error) => Err(error),
        };
        match &outcome {
            Ok(response) if response.ok => {}
            Ok(response) => {
                all_ok = false;
                eprint!("call {}: {}", call.call_id, failure_text(response));
            }
            Err(error) => {
                all_ok = false;
                eprint!(
                    "call {} could not run\n{}",
                    call.call_id,
                    output::report_text(error.report())
                );
            }
        }
        results.push(call.result_message(outcome.as_ref()));
    }
    output::json(&tool_results_reply(format, results))?;
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(TOOL_FAILED)
    })
}

/// `locara chain`.
pub(crate) fn chain(
    ctx: &Context,
    args: &ChainArgs,
    stdin: &mut Stdin<'_>,
) -> anyhow::Result<ExitCode> {
    let (request, dir) = read_calls(
        &args.file,
        args.dir.as_deref(),
        "chain",
        stdin,
        |r: &mut ChainRequest, dir| {
            for step in &mut r.steps {
                step.workspace.get_or_insert_with(|| dir.to_path_buf());
            }
        },
    )?;
    let locara = ctx.locara(dir.as_deref(), args.allow_write)?;
    let response = runtime()?.block_on(locara.run_chain(request));
    output::json(&response)?;
    if response.ok {
        return Ok(ExitCode::SUCCESS);
    }
    let failed = response
        .failed_step
        .map_or_else(|| "a step".to_owned(), |i| format!("step {i}"));
    match (
        &response.error,
        // The failed step's last call (a for_each step has one per item, and stops at the
        // first that fails).
        response
            .failed_step
            .and_then(|i| response.trace.iter().find(|t| t.step == i))
            .and_then(|t| t.calls.iter().rev().find(|&&c| !response.steps[c].ok))
            .map(|&c| &response.steps[c]),
    ) {
        (Some(report), _) => eprint!(
            "chain stopped: {failed} could not run\n{}",
            output::report_text(report)
        ),
        (None, Some(step)) => eprint!("chain stopped: {failed} failed\n{}", failure_text(step)),
        (None, None) => eprintln!("chain stopped at {failed}"),
    }
    Ok(ExitCode::from(TOOL_FAILED))
}

/// `locara batch`.
pub(crate) fn batch(
    ctx: &Context,
    args: &BatchArgs,
    stdin: &mut Stdin<'_>,
) -> anyhow::Result<ExitCode> {
    let (request, dir) = read_calls(
        &args.file,
        args.dir.as_deref(),
        "batch",
        stdin,
        |r: &mut BatchRequest, dir| {
            for call in &mut r.calls {
                call.workspace.get_or_insert_with(|| dir.to_path_buf());
            }
        },
    )?;
    let locara = ctx.locara(dir.as_deref(), args.allow_write)?;
    // A multi-threaded runtime: the read-only calls of the batch run at the same time.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let response = runtime.block_on(locara.run_batch(request));
    output::json(&response)?;
    if response.ok {
        return Ok(ExitCode::SUCCESS);
    }
    for (index, result) in response.results.iter().enumerate() {
        match (&result.error, &result.response) {
            (Some(report), _) => eprint!(
                "call {index} ({}) could not run\n{}",
                result.tool,
                output::report_text(report)
            ),
            (None, Some(r)) if !r.ok => eprint!("call {index}: {}", failure_text(r)),
            _ => {}
        }
    }
    Ok(ExitCode::from(TOOL_FAILED))
}

/// Reads a chain or batch request (`what`) from `file` (`-`: stdin), and gives `dir` (checked
/// to be a directory) to each of its calls that names no workspace.
fn read_calls<T: serde::de::DeserializeOwned>(
    file: &str,
    dir: Option<&std::path::Path>,
    what: &str,
    stdin: &mut Stdin<'_>,
    set_workspace: impl FnOnce(&mut T, &std::path::Path),
) -> anyhow::Result<(T, Option<std::path::PathBuf>)> {
    let text = arguments::read_source(file, stdin, what)?;
    let mut request: T = locara_manifest::json::from_str("request", &text)
        .with_context(|| format!("{file} is not a valid {what} request"))?;
    let dir = dir.map(context::existing_dir).transpose()?;
    if let Some(dir) = &dir {
        set_workspace(&mut request, dir);
    }
    Ok((request, dir))
}

/// The tool's file arguments: top-level input properties marked `"x-locara-blob": true`.
fn file_argument_keys(locara: &Locara, tool: &str) -> Vec<String> {
    let Ok(description) = locara.describe(tool) else {
        return Vec::new();
    };
    description.input_schema["properties"]
        .as_object()
        .map(|properties| {
            properties
                .iter()
                .filter(|(_, schema)| schema["x-locara-blob"] == serde_json::Value::Bool(true))
                .map(|(key, _)| key.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// A current-thread runtime: one call at a time, run to completion.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// A failed run as a person reads it: the tool, its error report and its stderr.
fn failure_text(response: &RunResponse) -> String {
    let mut text = format!("{} failed\n", response.tool);
    if let Some(report) = &response.error {
        text.push_str(&output::report_text(report));
    }
    if let Some(stderr) = response.stderr_beyond_error() {
        text.push_str("tool stderr:\n");
        for line in stderr.lines() {
            text.push_str(&format!("  {line}\n"));
        }
    }
    text
}

/// A hint in command-line terms for a network host or a workspace the terminal did not grant,
/// when the tool asks for one.
fn terminal_hint(
    locara: &Locara,
    tool: &str,
    report: &ErrorReport,
    args: &RunArgs,
) -> Option<String> {
    if report.code != "capability_denied" {
        return None;
    }
    // "TOOL needs network access to HOST, which is not among the app's allowed hosts".
    if let Some((_, rest)) = report.message.split_once("network access to ")
        && let Some((host, _)) = rest.split_once(", which is not among")
    {
        return Some(format!(
            "let the tool reach {host} with `--allow-host {host}`"
        ));
    }
    if report.message.contains("the app allows no network hosts") {
        return Some("name each host the tool may reach with `--allow-host HOST`".to_owned());
    }
    let description = locara.describe(tool).ok()?;
    let user_dir = description.capabilities["wasi_imports"]["fs"]["user_dir"]
        .as_str()?
        .to_owned();
    match (user_dir.as_str(), &args.dir, args.allow_write) {
        ("read" | "read_write", None, _) => {
            Some("choose the directory the tool sees at /workspace with `--dir DIR`".to_owned())
        }
        ("read_write", Some(dir), false) => Some(format!(
            "the tool writes in its workspace: add `--allow-write` to let it write in {}",
            dir.display()
        )),
        _ => None,
    }
}

/// When a `--arg` VALUE was read as JSON but the schema wanted another type there (usually a
/// string), says how to quote it.
fn quoting_hint(report: &ErrorReport, parsed: &[(String, String)]) -> Option<String> {
    let (key, typed) = parsed.iter().find(|(key, _)| {
        let pointer = format!("/{}", key.replace('~', "~0").replace('/', "~1"));
        report
            .violations
            .iter()
            .any(|v| v.pointer == pointer && v.constraint.starts_with("type"))
    })?;
    let quoted = serde_json::Value::String(typed.clone());
    Some(format!(
        "`--arg {key}={typed}` was read as JSON; to pass it as a string, quote it: --arg '{key}={quoted}'"
    ))
}
