//! Writing results: stdout through a locked handle (a closed pipe is not an error), JSON, and
//! error reports on stderr.

use std::io::Write as _;

use anyhow::Context as _;
use locara_facade::ErrorReport;
use serde::Serialize;

/// Writes `text` to stdout. A reader that went away (`locara list | head`) is not an error.
pub(crate) fn stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write to stdout"),
    }
}

/// Writes `value` to stdout as pretty JSON with a trailing newline.
pub(crate) fn json(value: &impl Serialize) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(value).context("cannot serialize the output")?;
    text.push('\n');
    stdout(&text)
}

/// An error report as a person reads it: code and message, then the details, then the hint.
pub(crate) fn report_text(report: &ErrorReport) -> String {
    let mut text = format!("error[{}]: {}\n", report.code, report.message);
    if let Some(limit) = &report.limit {
        text.push_str(&format!("  limit: {limit}\n"));
    }
    if let Some(code) = report.exit_code {
        text.push_str(&format!("  exit code: {code}\n"));
    }
    for v in &report.violations {
        let at = if v.pointer.is_empty() {
            "/"
        } else {
            &v.pointer
        };
        text.push_str(&format!("  at {at}: {} ({})\n", v.message, v.constraint));
    }
    if !report.hint.is_empty() {
        text.push_str(&format!("hint: {}\n", report.hint));
    }
    text
}

/// Reports a call that could not run: the report on stderr and, with `--json`, as
/// `{"ok": false, "error": …}` on stdout.
pub(crate) fn could_not_run(report: &ErrorReport, json: bool) -> anyhow::Result<()> {
    eprint!("{}", report_text(report));
    if json {
        self::json(&serde_json::json!({ "ok": false, "error": report }))?;
    }
    Ok(())
}

/// Every message in an error's source chain, joined with `: `.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

/// The first sentence of `text`, cut to at most `max` characters.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let first_line = text.lines().next().unwrap_or("");
    // A sentence ends at `. ` before a capital letter, so "e.g. this" does not end one.
    let end = first_line
        .match_indices(". ")
        .find(|&(i, _)| first_line[i + 2..].starts_with(char::is_uppercase))
        .map(|(i, _)| i);
    let sentence = match end {
        Some(end) => &first_line[..=end],
        None => first_line,
    };
    if sentence.chars().count() <= max {
        return sentence.to_owned();
    }
    let cut: String = sentence.chars().take(max.saturating_sub(1)).collect();
    // Cut at a word boundary when there is one.
    let mut cut = match cut.rfind(' ') {
        Some(space) if space > 0 => cut[..space].trim_end_matches([',', ';', ':']).to_owned(),
        _ => cut,
    };
    cut.push('…');
    cut
}
