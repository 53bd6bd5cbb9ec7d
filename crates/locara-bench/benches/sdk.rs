//! The language packages' per-call cost (docs/sdk.md), every figure from this one run: text.chunk
//! through `Locara::run` from Rust, from Python (`locara`, the PyO3 wheel) and from Node
//! (`@locara/sdk`, the napi-rs addon), each a blocking or awaited call of the same arguments on
//! the same home. Targets: Python and Node ≤ 1.3× the Rust facade.
//!
//! Every row opens the home with the same options (`locara_sdk::Sdk::open`, what both packages
//! call), so the same grants and services. The Python and Node rows are timed inside their own processes (`sdk/bench.py`,
//! `sdk/bench.mjs`), which print their samples; the Rust row is timed before and after them, so
//! the machine's state is shared. `cargo xtask sdk bench` builds and installs the release
//! packages, then runs this with `LOCARA_SDK_PYTHON` (an interpreter with `locara` installed) and
//! `LOCARA_SDK_NODE_PROJECT` (a directory with `@locara/sdk` in its node_modules); a row whose
//! package is not installed is skipped, saying so.
//!
//! Under `cargo test` (no `--bench` argument) it makes a few calls of each, as a smoke test.

#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, ensure};
use locara_bench::{Ratio, Row, Summary, Target, render};
use locara_facade::{Locara, RunRequest};
use locara_sdk::Sdk;
use locara_test_artifacts::TestHome;
use serde_json::json;

/// The call every row makes.
const TEXT: &str = "Locara runs tools. Each one is signed. Chunks rejoin exactly.";
const MAX_CHARS: u64 = 20;

/// The bound on a language package's per-call cost over the Rust facade's.
const TARGET: f64 = 1.3;

struct Plan {
    warmup: usize,
    samples: usize,
}

/// Node compiles hot JavaScript in tiers on a background thread, which on two cores competes
/// with the calls for a while: every row warms up long enough (a few tens of milliseconds of
/// calls) for that to be over, so each measures its steady per-call cost.
const BENCH: Plan = Plan {
    warmup: 3000,
    samples: 4000,
};
const SMOKE: Plan = Plan {
    warmup: 2,
    samples: 5,
};

/// `samples` timed calls from Rust through the facade, after `warmup`.
fn rust_samples(
    locara: &Locara,
    rt: &tokio::runtime::Runtime,
    plan: &Plan,
) -> Result<Vec<Duration>> {
    let request = RunRequest::new("text.chunk", json!({"text": TEXT, "max_chars": MAX_CHARS}));
    for _ in 0..plan.warmup {
        let response = rt.block_on(locara.run(request.clone()))?;
        ensure!(response.ok, "{:?}", response.error);
    }
    let mut samples = Vec::with_capacity(plan.samples);
    for _ in 0..plan.samples {
        let request = request.clone();
        let started = Instant::now();
        let response = rt.block_on(locara.run(request))?;
        samples.push(started.elapsed());
        ensure!(response.ok, "{:?}", response.error);
    }
    Ok(samples)
}

/// The same through `locara-sdk` (JSON values in and out), what both packages call.
fn sdk_samples(sdk: &Sdk, rt: &tokio::runtime::Runtime, plan: &Plan) -> Result<Vec<Duration>> {
    let request =
        json!({"tool": "text.chunk", "arguments": {"text": TEXT, "max_chars": MAX_CHARS}});
    let mut samples = Vec::with_capacity(plan.samples);
    for i in 0..plan.warmup + plan.samples {
        let request = request.clone();
        let started = Instant::now();
        let response = rt.block_on(sdk.run(request));
        let elapsed = started.elapsed();
        ensure!(
            matches!(&response, Ok(r) if r["ok"] == true),
            "{response:?}"
        );
        if i >= plan.warmup {
            samples.push(elapsed);
        }
    }
    Ok(samples)
}

/// Runs a language's half and reads its samples.
fn language_samples(mut command: Command, home: &Path, plan: &Plan) -> Result<Vec<Duration>> {
    let output = command
        .arg(home)
        .arg(plan.warmup.to_string())
        .arg(plan.samples.to_string())
        .arg(TEXT)
        .arg(MAX_CHARS.to_string())
        .output()
        .with_context(|| format!("running {command:?}"))?;
    ensure!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let nanos: Vec<u64> = serde_json::from_slice(&output.stdout)
        .with_context(|| format!("reading the samples {command:?} printed"))?;
    Ok(nanos.into_iter().map(Duration::from_nanos).collect())
}

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sdk")
}

/// The Python half, when an interpreter with `locara` is at hand.
fn python() -> Option<Command> {
    let python = std::env::var_os("LOCARA_SDK_PYTHON").map(PathBuf::from)?;
    let installed = Command::new(&python)
        .args(["-c", "import locara"])
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        println!(
            "(Python row skipped: {} cannot import locara)",
            python.display()
        );
        return None;
    }
    let mut command = Command::new(python);
    command.arg(scripts().join("bench.py"));
    Some(command)
}

/// The Node half, when a project with `@locara/sdk` installed is at hand.
fn node() -> Option<Command> {
    let project = std::env::var_os("LOCARA_SDK_NODE_PROJECT").map(PathBuf::from)?;
    if !project
        .join("node_modules/@locara/sdk/locara.node")
        .is_file()
    {
        println!(
            "(Node row skipped: no @locara/sdk in {})",
            project.display()
        );
        return None;
    }
    // The script must live in the project for `import '@locara/sdk'` to resolve there.
    let script = project.join("bench.mjs");
    std::fs::copy(scripts().join("bench.mjs"), &script).ok()?;
    let mut command = Command::new("node");
    command.arg(script).current_dir(project);
    Some(command)
}

fn main() -> Result<()> {
    let bench = std::env::args().any(|a| a == "--bench");
    let plan = if bench { BENCH } else { SMOKE };
    let home = TestHome::new();
    // Opened as both packages open it: the same options, so the same grants and services.
    let sdk = Sdk::open(json!({"home": home.path()}), None)
        .map_err(|report| anyhow::format_err!("{report}"))?;
    let locara = sdk.locara();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;

    let mut rust = rust_samples(locara, &rt, &plan)?;
    let mut json = sdk_samples(&sdk, &rt, &plan)?;
    let mut languages = Vec::new();
    if let Some(command) = python() {
        languages.push((
            "Python locara: Locara.run",
            language_samples(command, home.path(), &plan)?,
        ));
    }
    if let Some(command) = node() {
        languages.push((
            "Node @locara/sdk: loc.run",
            language_samples(command, home.path(), &plan)?,
        ));
    }
    rust.extend(rust_samples(locara, &rt, &plan)?);
    json.extend(sdk_samples(&sdk, &rt, &plan)?);

    let facade = Row {
        name: "Rust Locara::run".to_owned(),
        summary: Summary::of(&rust),
    };
    let values = Row {
        name: "Rust locara_sdk::Sdk::run (JSON values)".to_owned(),
        summary: Summary::of(&json),
    };
    let mut ratios = vec![Ratio::of(&values, &facade, None)];
    let mut rows = vec![facade.clone(), values];
    for (name, samples) in languages {
        let row = Row {
            name: name.to_owned(),
            summary: Summary::of(&samples),
        };
        ratios.push(Ratio::of(&row, &facade, Some(Target::AtMost(TARGET))));
        rows.push(row);
    }
    println!("text.chunk from each language, same home, same arguments, this run:\n");
    print!("{}", render(&rows, &ratios));
    Ok(())
}
