//! `list`, `search`, `describe` and `tools export`: what tools there are and how to call them.

use std::process::ExitCode;

use locara_facade::{ToolDescription, ToolSummary};
use serde_json::Value;

use crate::{cli::Export, context::Context, output};

/// The longest description shown in a listing row.
const DESCRIPTION_WIDTH: usize = 100;

/// `locara list`.
pub(crate) fn list(ctx: &Context) -> anyhow::Result<ExitCode> {
    let locara = ctx.locara(None, false)?;
    let tools = locara.list();
    if ctx.json {
        output::json(&tools)?;
    } else {
        output::stdout(&rows(&tools))?;
    }
    if tools.is_empty() {
        eprintln!(
            "note: no callable tools in {}: run `cargo xtask build-tools` (in the Locara repo) or `locara publish`",
            ctx.registry_dir().display()
        );
    }
    note_rejected(ctx);
    Ok(ExitCode::SUCCESS)
}

/// `locara search`.
pub(crate) fn search(ctx: &Context, query: &[String], limit: usize) -> anyhow::Result<ExitCode> {
    let locara = ctx.locara(None, false)?;
    let query = query.join(" ");
    let hits = locara.search_tools(&query, limit);
    if ctx.json {
        output::json(&hits)?;
    } else {
        output::stdout(&rows(&hits))?;
    }
    if hits.is_empty() {
        eprintln!("no tool matches {query:?}; `locara list` shows every tool");
    }
    Ok(ExitCode::SUCCESS)
}

/// `locara describe`.
pub(crate) fn describe(ctx: &Context, tool: &str) -> anyhow::Result<ExitCode> {
    let locara = ctx.locara(None, false)?;
    let description = locara.describe(tool)?;
    if ctx.json {
        output::json(&description)?;
    } else {
        output::stdout(&describe_text(&description)?)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `locara tools export`: the tool definitions, JSON with or without `--json`; or the code-mode
/// API as source text.
pub(crate) fn export(ctx: &Context, export: Export) -> anyhow::Result<ExitCode> {
    let locara = ctx.locara(None, false)?;
    let format = match export {
        Export::Definitions(format) => format,
        Export::Api(language) => {
            output::stdout(&locara.export_api(language))?;
            return Ok(ExitCode::SUCCESS);
        }
    };
    let tools = locara.export_tools(format)?;
    output::json(&tools)?;
    if tools.is_empty() {
        eprintln!(
            "note: no callable tools in {}: run `cargo xtask build-tools` (in the Locara repo) or `locara publish`",
            ctx.registry_dir().display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One aligned row per tool: `[score]  id@version  tier  description`.
fn rows(tools: &[ToolSummary]) -> String {
    let width = tools.iter().map(|t| t.tool.len()).max().unwrap_or(0);
    let tier_width = tools.iter().map(|t| t.safety_tier.len()).max().unwrap_or(0);
    let mut text = String::new();
    for t in tools {
        if let Some(score) = t.score {
            text.push_str(&format!("{score:>7.3}  "));
        }
        let description = output::one_line(&t.description, DESCRIPTION_WIDTH);
        text.push_str(&format!(
            "{:width$}  {:tier_width$}  {description}\n",
            t.tool, t.safety_tier
        ));
    }
    text
}

/// Tells on stderr how many registry entries failed verification and are not listed.
fn note_rejected(ctx: &Context) {
    let Ok(scratch) = tempfile::tempdir() else {
        return;
    };
    let Ok(listing) = ctx.registry(scratch.path()).and_then(|r| Ok(r.list()?)) else {
        return;
    };
    match listing.rejected.len() {
        0 => {}
        n => eprintln!(
            "note: {n} registry {} failed verification and {} not listed; run `locara verify` to see why",
            if n == 1 { "entry" } else { "entries" },
            if n == 1 { "is" } else { "are" },
        ),
    }
}

/// A tool's description as a person reads it.
fn describe_text(d: &ToolDescription) -> anyhow::Result<String> {
    let s = &d.summary;
    let mut text = format!("{} ({})\n\n{}\n\n", s.tool, s.display_name, s.description);
    text.push_str(&format!("safety tier:   {}\n", s.safety_tier));
    text.push_str(&format!("license:       {}\n", d.license));
    text.push_str(&format!("artifact:      sha256 {}\n", d.artifact_sha256));
    text.push_str(&format!("limits:        {}\n", limits_text(&d.limits)));
    text.push_str("capabilities:\n");
    text.push_str(&capabilities_text(&d.capabilities));
    text.push_str(&format!(
        "\ninput schema:\n{}\n",
        serde_json::to_string_pretty(&d.input_schema)?
    ));
    text.push_str(&format!(
        "\noutput schema:\n{}\n",
        serde_json::to_string_pretty(&d.output_schema)?
    ));
    Ok(text)
}

/// `memory 128 MiB, wall time 10000 ms, …`, or the raw JSON when its shape is unexpected.
fn limits_text(limits: &Value) -> String {
    let field = |name: &str| limits.get(name).and_then(Value::as_u64);
    let (Some(memory), Some(wall), Some(fuel), Some(out), Some(fds)) = (
        field("memory_bytes"),
        field("wall_time_ms"),
        field("fuel"),
        field("output_bytes"),
        field("max_fds"),
    ) else {
        return limits.to_string();
    };
    let text = format!(
        "memory {}, wall time {wall} ms, fuel {fuel}, output {}, {fds} file descriptors",
        bytes(memory),
        bytes(out)
    );
    match field("temp_bytes") {
        Some(temp) => format!("{text}, temp dir {}", bytes(temp)),
        None => text,
    }
}

/// `N MiB` when exact, else `N bytes`.
fn bytes(n: u64) -> String {
    const MIB: u64 = 1 << 20;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else {
        format!("{n} bytes")
    }
}

/// The workspace, network and host services a tool asks for, one per line.
fn capabilities_text(capabilities: &Value) -> String {
    let imports = &capabilities["wasi_imports"];
    let workspace = match imports["fs"]["user_dir"].as_str() {
        Some("none") | None => "none".to_owned(),
        Some("read") => {
            "read (the directory chosen with --dir, read-only, at /workspace)".to_owned()
        }
        Some("read_write") => {
            "read_write (the directory chosen with --dir, at /workspace)".to_owned()
        }
        Some(other) => other.to_owned(),
    };
    let list = |value: &Value| -> String {
        let items: Vec<&str> = value
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if items.is_empty() {
            "none".to_owned()
        } else {
            items.join(", ")
        }
    };
    let hosts = &imports["net"]["allowed_hosts"];
    let network = if hosts
        .as_array()
        .is_some_and(|h| h.contains(&Value::from("*")))
    {
        "any host the app allows (--allow-host HOST), through web.fetch".to_owned()
    } else {
        list(hosts)
    };
    format!(
        "  workspace:     {workspace}\n  network:       {network}\n  host services: {}\n",
        list(&capabilities["capability_requirements"]),
    )
}
