//! Cold and warm latency of the code-execution tools on a one-line program, through Locara's
//! whole pipeline on Wasmtime, next to the same one-liner spawned natively (`python3 -c`,
//! `node -e`, `lua -e`, where installed), all measured in this one process.
//!
//! - cold: the first call of a freshly built `Locara` (a new host process would do the same):
//!   it verifies the tool, loads the compiled module from the on-disk cache and runs it.
//!   The cache is filled before measuring, so no row includes compiling.
//! - warm: later calls of the same `Locara`.
//!
//! Run with `cargo bench -p locara-bench --bench code_exec`. Under `cargo test` (no `--bench`
//! argument) it makes a few calls of each, as a smoke test.

#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::{
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, ensure, format_err};
use locara_bench::{Ratio, Row, Summary, render};
use locara_facade::{BackendKind, Locara, LocaraConfig, RunRequest};
use locara_test_artifacts::{SHARED_COMPILED_CACHE, TestHome};
use serde_json::json;
use tokio::runtime::Runtime;

/// A language: its tool, the one-liner, and the native command that runs the same one-liner.
struct Language {
    tool: &'static str,
    upstream: bool,
    code: &'static str,
    native: &'static [&'static str],
}

const LANGUAGES: [Language; 3] = [
    Language {
        tool: "code-exec.python",
        upstream: true,
        code: "print(1+1)",
        native: &["python3", "-c", "print(1+1)"],
    },
    Language {
        tool: "code-exec.js",
        upstream: true,
        code: "console.log(1+1)",
        native: &["node", "-e", "console.log(1+1)"],
    },
    Language {
        tool: "code-exec.lua",
        upstream: false,
        code: "print(1+1)",
        native: &["lua", "-e", "print(1+1)"],
    },
];

/// The `print(1+1)` target of the issue, for Python on Wasmtime after the first compile.
const PYTHON_WARM_TARGET: Duration = Duration::from_millis(10);

#[derive(Debug, Clone, Copy)]
struct Plan {
    cold: usize,
    warmup: usize,
    warm: usize,
    native: usize,
}

const BENCH: Plan = Plan {
    cold: 7,
    warmup: 20,
    warm: 300,
    native: 30,
};
const SMOKE: Plan = Plan {
    cold: 1,
    warmup: 1,
    warm: 2,
    native: 1,
};

fn main() -> Result<()> {
    let bench = std::env::args().any(|a| a == "--bench");
    let plan = if bench { BENCH } else { SMOKE };
    let home = TestHome::new();
    for language in &LANGUAGES {
        if language.upstream {
            home.publish_upstream_tool(language.tool);
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let config = LocaraConfig::new(home.path())
        .with_engine(BackendKind::Wasmtime)
        .with_compiled_cache(SHARED_COMPILED_CACHE);

    let mut rows = Vec::new();
    let mut ratios = Vec::new();
    let mut python_warm = None;
    for language in &LANGUAGES {
        // Fill the compiled-module cache (the first compile is not what is measured).
        let started = Instant::now();
        call(&rt, &Locara::new(&config)?, language)?;
        println!(
            "{}: first call in this process (may compile): {:.0} ms",
            language.tool,
            started.elapsed().as_secs_f64() * 1e3
        );

        let mut cold = Vec::new();
        for _ in 0..plan.cold {
            let started = Instant::now();
            let locara = Locara::new(&config)?;
            call(&rt, &locara, language)?;
            cold.push(started.elapsed());
        }
        let locara = Locara::new(&config)?;
        for _ in 0..plan.warmup {
            call(&rt, &locara, language)?;
        }
        let mut warm = Vec::new();
        for _ in 0..plan.warm {
            let started = Instant::now();
            call(&rt, &locara, language)?;
            warm.push(started.elapsed());
        }
        let warm = Row {
            name: format!("{} warm", language.tool),
            summary: Summary::of(&warm),
        };
        rows.push(Row {
            name: format!("{} cold", language.tool),
            summary: Summary::of(&cold),
        });
        if language.tool == "code-exec.python" {
            python_warm = Some(warm.summary.p50);
        }
        match native(language, plan.native)? {
            Some(native) => {
                ratios.push(Ratio::of(&warm, &native, None));
                rows.push(warm);
                rows.push(native);
            }
            None => {
                println!("{}: not installed, no native row", language.native[0]);
                rows.push(warm);
            }
        }
    }
    print!("{}", render(&rows, &ratios));
    if let Some(p50) = python_warm {
        println!(
            "code-exec.python warm p50 = {:.2} ms  target ≤ {} ms: {}",
            p50.as_secs_f64() * 1e3,
            PYTHON_WARM_TARGET.as_millis(),
            if p50 <= PYTHON_WARM_TARGET {
                "met"
            } else {
                "NOT met"
            }
        );
    }
    Ok(())
}

/// One call of `language`'s one-liner; checks that it printed `2`.
fn call(rt: &Runtime, locara: &Locara, language: &Language) -> Result<()> {
    let request = RunRequest::new(language.tool, json!({"code": language.code}));
    let response = rt.block_on(locara.run(request))?;
    let output = response
        .output
        .ok_or_else(|| format_err!("{} failed: {:?}", language.tool, response.error))?;
    ensure!(
        output["stdout"] == "2\n",
        "{} printed {:?}",
        language.tool,
        output["stdout"]
    );
    Ok(())
}

/// Spawns the native one-liner `calls` times, or `None` when it is not installed.
fn native(language: &Language, calls: usize) -> Result<Option<Row>> {
    let [program, args @ ..] = language.native else {
        unreachable!("a command has a program")
    };
    let mut samples = Vec::new();
    for _ in 0..calls {
        let started = Instant::now();
        let output = match Command::new(program).args(args).output() {
            Ok(output) => output,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error).with_context(|| format!("spawning {program}")),
        };
        samples.push(started.elapsed());
        ensure!(
            output.stdout == b"2\n",
            "{program} printed {:?}",
            String::from_utf8_lossy(&output.stdout)
        );
    }
    Ok(Some(Row {
        name: format!("{} spawned", language.native.join(" ")),
        summary: Summary::of(&samples),
    }))
}
