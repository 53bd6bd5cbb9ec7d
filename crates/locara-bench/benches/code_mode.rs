//! Code mode's cost (docs/code-mode.md), on Wasmtime, every figure from this one run:
//!
//! - an inner call (a program's `locara.call("text.chunk", …)` through the gateway) against the
//!   same call made by the host with `Locara::run`. An inner call's cost is taken from pairs of
//!   runs of the same program: one making 10 calls, one making none, each pair's difference over
//!   10, so the program's own start-up is not counted. Target ≤ 1.5×. Beside it, the host's
//!   side of those same inner calls, as the outer response's `calls` report it (from the
//!   gateway taking the request to the answer's JSON written): what the pipeline and the
//!   gateway cost, the rest of an inner call being the language's own work (encoding the
//!   request, reading the answer into its values).
//! - the gateway's round trip alone: a Lua program asking it to describe a tool that does not
//!   exist, 10 times, against none (no inner call runs; the answer is a short error report).
//! - a program making 10 calls (Lua, Python and JavaScript) against the host making the same 10 calls one
//!   after another with `Locara::run`: what an agent saves or pays by writing one program
//!   instead of 10 tool calls, before counting the model round trips code mode saves.
//!
//! Each language's programs are timed in turn with the host's own calls (a sample is: the
//! program making none, the one making 10, then an untimed `Locara::run` and 10 timed ones),
//! and each ratio is taken against the host rows measured beside it, so that a change in the
//! machine's speed between rows does not show as a ratio.
//!
//! Run with `cargo bench -p locara-bench --bench code_mode` (`CODE_MODE=lua`, `=python` or
//! `=javascript` keeps only that language's program rows, e.g. under `perf record`). Under `cargo test` (no `--bench`
//! argument) it makes a few calls of each, as a smoke test.

#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::time::{Duration, Instant};

use anyhow::{Result, ensure, format_err};
use locara_bench::{Ratio, Row, Summary, Target, render};
use locara_facade::{AppManifest, BackendKind, Locara, LocaraConfig, RunRequest};
use locara_test_artifacts::{SHARED_COMPILED_CACHE, TestHome};
use serde_json::json;
use tokio::runtime::Runtime;

/// The call every row makes, from the host or from a program.
const TEXT: &str = "Locara runs tools. Each one is signed. Chunks rejoin exactly.";
const MAX_CHARS: u64 = 20;

/// The round-trip rows' pseudo-language: code-exec.lua asking without an inner call.
const ROUND_TRIP: &str = "round trip";

/// The bound on an inner call's cost over the same call through `Locara::run`.
const INNER_TARGET: f64 = 1.5;

struct Plan {
    warmup: usize,
    samples: usize,
}

const BENCH: Plan = Plan {
    warmup: 10,
    samples: 200,
};
const SMOKE: Plan = Plan {
    warmup: 1,
    samples: 2,
};

/// A program of `language` that calls text.chunk `calls` times and prints how many chunks it
/// got in all; for `ROUND_TRIP`, a Lua program that asks the gateway `calls` times to describe
/// a tool that does not exist, and prints 0.
fn program(language: &str, calls: usize) -> String {
    match language {
        ROUND_TRIP => format!(
            "for i = 1, {calls} do\n  assert(not pcall(locara.describe, \"no.such-tool\"))\nend\nprint(0)"
        ),
        "code-exec.js" => format!(
            "let n = 0;\nfor (let i = 0; i < {calls}; i++) {{\n  n += (await locara.call(\"text.chunk\", {{ text: {TEXT:?}, max_chars: {MAX_CHARS} }})).output.chunks.length;\n}}\nprint(n);"
        ),
        "code-exec.lua" => format!(
            "local n = 0\nfor i = 1, {calls} do\n  n = n + #locara.call(\"text.chunk\", {{text = {TEXT:?}, max_chars = {MAX_CHARS}}}).output.chunks\nend\nprint(n)"
        ),
        _ => format!(
            "import locara\nn = 0\nfor i in range({calls}):\n    n += len(locara.call(\"text.chunk\", {{\"text\": {TEXT:?}, \"max_chars\": {MAX_CHARS}}}).output[\"chunks\"])\nprint(n)"
        ),
    }
}

fn main() -> Result<()> {
    let bench = std::env::args().any(|a| a == "--bench");
    let plan = if bench { BENCH } else { SMOKE };
    let home = TestHome::new();
    home.publish_upstream_tool("code-exec.python");
    home.publish_upstream_tool("code-exec.js");
    let everything = Locara::new(&LocaraConfig::new(home.path()))?;
    let tools: Vec<String> = everything.list().into_iter().map(|t| t.tool).collect();
    let app = AppManifest::from_json(
        &json!({
            "schema_version": 1,
            "name": "code-mode-bench",
            "tools": tools,
            "grants": {"services": ["tools"]},
        })
        .to_string(),
    )?;
    let config = LocaraConfig::new(home.path())
        .with_app(app, home.path())
        .with_engine(BackendKind::Wasmtime)
        .with_compiled_cache(SHARED_COMPILED_CACHE);
    let locara = Locara::new(&config)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;

    let chunks_per_call = chunk(&rt, &locara)?;
    for language in [
        ROUND_TRIP,
        "code-exec.lua",
        "code-exec.python",
        "code-exec.js",
    ] {
        for calls in [0, 10] {
            run_program(&rt, &locara, language, calls, chunks_per_call)?;
        }
    }
    for _ in 0..plan.warmup {
        chunk(&rt, &locara)?;
    }

    let time = |f: &mut dyn FnMut() -> Result<()>| -> Result<Duration> {
        let started = Instant::now();
        f()?;
        Ok(started.elapsed())
    };
    let mut rows = Vec::new();
    let mut ratios = Vec::new();
    let only = std::env::var("CODE_MODE").ok();
    for (language, name) in [
        (ROUND_TRIP, "Lua"),
        ("code-exec.lua", "Lua"),
        ("code-exec.python", "Python"),
        ("code-exec.js", "JavaScript"),
    ] {
        if only
            .as_deref()
            .is_some_and(|only| !name.eq_ignore_ascii_case(only))
        {
            continue;
        }
        for _ in 0..plan.warmup {
            run_program(&rt, &locara, language, 10, chunks_per_call)?;
        }
        // Each sample times the programs and the host's own calls one after the other, so
        // that every ratio compares figures taken within the same millisecond or so: this
        // machine moves between a faster and a slower phase within minutes, which made
        // ratios of rows measured a few seconds apart swing by a third.
        let mut direct = Vec::new();
        let mut ten_direct = Vec::new();
        let (mut inner, mut programs, mut host_side) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..plan.samples {
            let empty =
                time(&mut || run_program(&rt, &locara, language, 0, chunks_per_call).map(drop))?;
            let ten = time(&mut || {
                host_side.extend(run_program(&rt, &locara, language, 10, chunks_per_call)?);
                Ok(())
            })?;
            inner.push(ten.saturating_sub(empty) / 10);
            programs.push(ten);
            // The first host call after a program finds the caches full of the program's
            // (after a Python program, ~110 µs against ~25); it is not timed, so that the
            // host's calls are compared warm, as they were when they ran in a loop of their
            // own, and as the program's own inner calls run.
            chunk(&rt, &locara)?;
            let mut ten = Duration::ZERO;
            for _ in 0..10 {
                let one = time(&mut || chunk(&rt, &locara).map(drop))?;
                direct.push(one);
                ten += one;
            }
            ten_direct.push(ten);
        }
        let what = match language {
            ROUND_TRIP => format!("{name}'s round trips"),
            _ => format!("{name}'s programs"),
        };
        let direct = Row {
            name: format!("text.chunk, Locara::run, between {what}"),
            summary: Summary::of(&direct),
        };
        if language == ROUND_TRIP {
            let round_trip = Row {
                name: format!("gateway round trip from {name}, no inner call"),
                summary: Summary::of(&inner),
            };
            ratios.push(Ratio::of(&round_trip, &direct, None));
            rows.extend([direct, round_trip]);
            continue;
        }
        let ten_direct = Row {
            name: format!("10 × text.chunk, Locara::run each, between {what}"),
            summary: Summary::of(&ten_direct),
        };
        let inner = Row {
            name: format!("text.chunk, inner call from {name}"),
            summary: Summary::of(&inner),
        };
        let host_side = Row {
            name: format!("  its host side (request to answer) from {name}"),
            summary: Summary::of(&host_side),
        };
        let program = Row {
            name: format!("{name} program making 10 text.chunk calls"),
            summary: Summary::of(&programs),
        };
        ratios.push(Ratio::of(
            &inner,
            &direct,
            Some(Target::AtMost(INNER_TARGET)),
        ));
        ratios.push(Ratio::of(&host_side, &direct, None));
        ratios.push(Ratio::of(&program, &ten_direct, None));
        rows.extend([direct, inner, host_side, ten_direct, program]);
    }
    print!("{}", render(&rows, &ratios));
    Ok(())
}

/// One text.chunk call from the host; how many chunks it made.
fn chunk(rt: &Runtime, locara: &Locara) -> Result<usize> {
    let request = RunRequest::new("text.chunk", json!({"text": TEXT, "max_chars": MAX_CHARS}));
    let response = rt.block_on(locara.run(request))?;
    let output = response
        .output
        .ok_or_else(|| format_err!("text.chunk failed: {:?}", response.error))?;
    output["chunks"]
        .as_array()
        .map(Vec::len)
        .ok_or_else(|| format_err!("text.chunk gave {output}"))
}

/// Runs the program of `language` that makes `calls` calls, checking what it printed; the
/// host's time on each inner call, as the response's `calls` report it.
fn run_program(
    rt: &Runtime,
    locara: &Locara,
    language: &str,
    calls: usize,
    chunks_per_call: usize,
) -> Result<Vec<Duration>> {
    let (tool, expected, inner_calls) = match language {
        ROUND_TRIP => ("code-exec.lua", 0, 0),
        _ => (language, calls * chunks_per_call, calls),
    };
    let request = RunRequest::new(tool, json!({"code": program(language, calls)}));
    let response = rt.block_on(locara.run(request))?;
    let output = response
        .output
        .ok_or_else(|| format_err!("{language} failed: {:?}", response.error))?;
    let printed = output["stdout"]
        .as_str()
        .unwrap_or_default()
        .trim()
        .to_owned();
    ensure!(
        printed == expected.to_string(),
        "{language} printed {printed:?}: {}",
        output["stderr"]
    );
    ensure!(
        response.calls.len() == inner_calls,
        "{} inner calls",
        response.calls.len()
    );
    Ok(response
        .calls
        .iter()
        .map(|call| Duration::from_secs_f64(call.elapsed_ms / 1e3))
        .collect())
}
