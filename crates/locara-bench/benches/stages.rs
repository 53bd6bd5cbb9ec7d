//! Where a call's time goes: the `text.chunk` call of `benches/pipeline.rs` measured at each
//! depth of the stack (facade, exec pipeline, sandbox on a blocking thread, sandbox called
//! directly), the pieces around it (tokio's blocking hop, a temp dir, schema validation, JSON),
//! and, with the `floor` feature, raw-Wasmtime variants that show what engine settings cost.
//!
//! Run with `cargo bench -p locara-bench --features floor --bench stages`. `STAGES=a,b` keeps
//! only the named stages (the names are in the table's first column, before the colon), for
//! profiling one of them under `perf record`; `CALLS=n` sets the calls per row (default
//! 10,000). Under `cargo test` (no `--bench` argument) it makes a few calls of each, as a smoke
//! test.
//!
//! Differences between rows are the cost of a stage: `exec` − `sandbox-future` is what the
//! tower layers add, `sandbox-hop` − `sandbox` the blocking-thread hop, and so on. The stack's
//! stages take their calls in interleaved rounds, and the table ends with each one's ratio to
//! the sandbox call on the calling thread, `Locara::run`'s against issue 16's 1.25×.

#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, ensure, format_err};
use locara_bench::{MAX_CHARS, Ratio, Row, Summary, TEXT, TOOL, Target, check_chunks, render};
use locara_facade::{BackendKind, Grants, Locara, LocaraConfig, RunRequest, SafetyTier};
use locara_sandbox::{
    CancelToken, Capabilities, Compiled, Limits, RunArgs, Sandbox, SandboxConfig,
};
use locara_test_artifacts::{MANIFESTS_DIR, TOOLS, TestHome};
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use tower::ServiceExt;

/// Everything the stages share.
struct Bench {
    calls: usize,
    only: Option<Vec<String>>,
    rt: Runtime,
    arguments: Value,
    input: Vec<u8>,
    wasm: Vec<u8>,
    manifest: Value,
    limits: Limits,
    rows: Vec<Row>,
    ratios: Vec<Ratio>,
}

impl Bench {
    fn wants(&self, stage: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|s| s == stage))
    }

    fn push(&mut self, stage: &str, what: &str, samples: &[Duration]) {
        self.rows.push(Row {
            name: format!("{stage}: {what}"),
            summary: Summary::of(samples),
        });
    }

    /// Times `f` `n` times after `n / 10` (at least one) warm-up calls.
    /// What `f` returns is dropped inside the timing, and kept from being optimized away.
    fn time<T>(n: usize, mut f: impl FnMut() -> Result<T>) -> Result<Vec<Duration>> {
        for _ in 0..(n / 10).max(1) {
            f()?;
        }
        Self::time_only(n, f)
    }

    /// Times `f` `n` times, with no warm-up.
    fn time_only<T>(n: usize, mut f: impl FnMut() -> Result<T>) -> Result<Vec<Duration>> {
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            let started = Instant::now();
            drop(std::hint::black_box(f()?));
            samples.push(started.elapsed());
        }
        Ok(samples)
    }

    /// Times `f().await` `n` times from inside the runtime, as an async host would call (the
    /// stack's stages warm up before their rounds).
    fn time_async<F, Fut>(&self, n: usize, mut f: F) -> Result<Vec<Duration>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<()>>,
    {
        self.rt.block_on(async {
            let mut samples = Vec::with_capacity(n);
            for _ in 0..n {
                let started = Instant::now();
                f().await?;
                samples.push(started.elapsed());
            }
            Ok(samples)
        })
    }

    fn compiled(&self, config: &SandboxConfig) -> Result<Compiled> {
        Ok(Sandbox::new(config)?.compile(&self.wasm, None)?)
    }
}

fn check_stdout(stdout: &[u8]) -> Result<()> {
    let output = serde_json::from_slice(stdout).context("stdout is not JSON")?;
    check_chunks(&output, TEXT, MAX_CHARS).map_err(|e| format_err!("{e}"))
}

fn main() -> Result<()> {
    let bench = std::env::args().any(|a| a == "--bench");
    let calls = match std::env::var("CALLS") {
        Ok(n) => n.parse().context("CALLS must be a number")?,
        Err(_) if bench => 10_000,
        Err(_) => 3,
    };
    let only = std::env::var("STAGES")
        .ok()
        .map(|s| s.split(',').map(str::to_owned).collect());
    let arguments = json!({"text": TEXT, "max_chars": MAX_CHARS});
    let (_, wasm_path, _) = TOOLS
        .iter()
        .find(|(id, _, _)| *id == TOOL)
        .context("no text.chunk")?;
    let manifest_path = format!("{MANIFESTS_DIR}/{TOOL}.json");
    let mut b = Bench {
        calls,
        only,
        rt: tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?,
        input: serde_json::to_vec(&arguments)?,
        arguments,
        wasm: std::fs::read(wasm_path).with_context(|| format!("reading {wasm_path}"))?,
        manifest: serde_json::from_str(&std::fs::read_to_string(&manifest_path)?)?,
        // The manifest's limits, as the pipeline applies them.
        limits: Limits {
            memory_bytes: 128 << 20,
            wall_time: Duration::from_secs(10),
            fuel: 5_000_000_000,
            output_bytes: 32 << 20,
            max_fds: 8,
            temp_bytes: 64 << 20,
        },
        rows: Vec::new(),
        ratios: Vec::new(),
    };
    let home = TestHome::new();

    stack(&mut b, &home)?;
    pieces(&mut b)?;
    floor::rows(&mut b)?;

    println!();
    if !bench {
        println!("smoke test (run `cargo bench -p locara-bench --features floor --bench stages`)");
    }
    print!("{}", render(&b.rows, &b.ratios));
    Ok(())
}

/// How many rounds the stack's stages take their calls in, one stage after another in each
/// round, so that a machine that drifts during the run (a noisy neighbour, a CPU slowing down)
/// moves every stage's samples alike rather than whichever stage ran at the time: the ratios
/// between stages are what the rows are for.
const ROUNDS: usize = 10;

/// The bound on `Locara::run` over the sandbox call on the calling thread.
const FACADE_TARGET: f64 = 1.25;

/// One stage of the stack: its row's name and what takes its calls, `n` at a time.
struct Stage<'a> {
    stage: &'static str,
    what: &'static str,
    sample: Box<dyn FnMut(usize) -> Result<Vec<Duration>> + 'a>,
    samples: Vec<Duration>,
}

/// Adds a stage whose calls `sample` takes.
fn add<'a>(
    stages: &mut Vec<Stage<'a>>,
    stage: &'static str,
    what: &'static str,
    sample: Box<dyn FnMut(usize) -> Result<Vec<Duration>> + 'a>,
) {
    stages.push(Stage {
        stage,
        what,
        sample,
        samples: Vec::new(),
    });
}

/// The same call at each depth of the stack, on Wasmtime, the stages' calls interleaved in
/// [`ROUNDS`] rounds after a warm-up of each; with the ratios to the sandbox call on the
/// calling thread (for `Locara::run`, issue 16's target).
fn stack(b: &mut Bench, home: &TestHome) -> Result<()> {
    let n = b.calls;
    let caps = Capabilities::new().program_name(TOOL);
    let mut stages: Vec<Stage<'_>> = Vec::new();
    let bench = &*b;
    if bench.wants("facade") {
        let locara = Locara::new(&LocaraConfig::new(home.path()))?;
        add(
            &mut stages,
            "facade",
            "Locara::run",
            Box::new(move |k| {
                bench.time_async(k, || async {
                    let response = locara
                        .run(RunRequest::new(TOOL, bench.arguments.clone()))
                        .await?;
                    ensure!(response.ok, "{:?}", response.error);
                    check_chunks(&response.output.context("no output")?, TEXT, MAX_CHARS)
                        .map_err(|e| format_err!("{e}"))
                })
            }),
        );
    }
    if bench.wants("exec") {
        let mut config = SandboxConfig::new(BackendKind::Wasmtime);
        config.cache_dir(home.path().join("cache").join("compiled"));
        let grants = Grants::new().with_max_safety_tier(SafetyTier::SideEffecting);
        let exec =
            locara_exec::ExecConfig::new(Arc::new(home.registry()), Sandbox::new(&config)?, grants);
        let pipeline = locara_exec::pipeline(&exec);
        add(
            &mut stages,
            "exec",
            "locara_exec::pipeline oneshot (no facade)",
            Box::new(move |k| {
                bench.time_async(k, || async {
                    let call = locara_exec::ToolCall::new(TOOL, bench.arguments.clone());
                    let result = pipeline.clone().oneshot(call).await?;
                    ensure!(result.failure.is_none(), "{:?}", result.failure);
                    check_chunks(&result.output.context("no output")?, TEXT, MAX_CHARS)
                        .map_err(|e| format_err!("{e}"))
                })
            }),
        );
    }
    if bench.wants("sandbox-future") {
        let compiled = bench.compiled(&SandboxConfig::new(BackendKind::Wasmtime))?;
        let caps = caps.clone().collecting("out");
        add(
            &mut stages,
            "sandbox-future",
            "Compiled::start awaited on the runtime thread (no layers)",
            Box::new(move |k| {
                bench.time_async(k, || {
                    let call = RunArgs {
                        input: bench.input.clone(),
                        limits: bench.limits.clone(),
                        caps: caps.clone(),
                        cancel: CancelToken::new(),
                    };
                    let future = compiled
                        .start(call)
                        .map_err(|_| format_err!("Wasmtime starts calls as futures"));
                    async move { check_stdout(&future?.await?.stdout) }
                })
            }),
        );
    }
    if bench.wants("sandbox-hop") {
        let compiled = bench.compiled(&SandboxConfig::new(BackendKind::Wasmtime))?;
        let caps = caps.clone();
        add(
            &mut stages,
            "sandbox-hop",
            "spawn_blocking(Compiled::run) (no layers)",
            Box::new(move |k| {
                bench.time_async(k, || {
                    let (compiled, input, limits, caps) = (
                        compiled.clone(),
                        bench.input.clone(),
                        bench.limits.clone(),
                        caps.clone(),
                    );
                    async move {
                        let outcome = tokio::task::spawn_blocking(move || {
                            compiled.run(&input, &limits, &caps)
                        })
                        .await??;
                        check_stdout(&outcome.stdout)
                    }
                })
            }),
        );
    }
    if bench.wants("sandbox-worker") {
        let compiled = bench.compiled(&SandboxConfig::new(BackendKind::Wasmtime))?;
        for (what, inline) in [
            ("spawn_blocking(Compiled::run) from a worker task", false),
            ("block_in_place(Compiled::run) from a worker task", true),
        ] {
            let (compiled, caps) = (compiled.clone(), caps.clone());
            add(
                &mut stages,
                "sandbox-worker",
                what,
                Box::new(move |k| {
                    let (compiled, input, limits, caps) = (
                        compiled.clone(),
                        bench.input.clone(),
                        bench.limits.clone(),
                        caps.clone(),
                    );
                    let task = bench.rt.spawn(async move {
                        let mut samples = Vec::with_capacity(k);
                        for _ in 0..k {
                            let (compiled, input, limits, caps) = (
                                compiled.clone(),
                                input.clone(),
                                limits.clone(),
                                caps.clone(),
                            );
                            let started = Instant::now();
                            let run = move || compiled.run(&input, &limits, &caps);
                            let outcome = if inline {
                                tokio::task::block_in_place(run)?
                            } else {
                                tokio::task::spawn_blocking(run).await??
                            };
                            check_stdout(&outcome.stdout)?;
                            samples.push(started.elapsed());
                        }
                        anyhow::Ok(samples)
                    });
                    bench.rt.block_on(task)?
                }),
            );
        }
    }
    for (stage, what, pooling, temp_dir) in [
        ("sandbox", "Compiled::run on the calling thread", true, true),
        (
            "sandbox-notemp",
            "Compiled::run without the temp dir",
            true,
            false,
        ),
        (
            "sandbox-ondemand",
            "Compiled::run, on-demand allocator",
            false,
            true,
        ),
        ("sandbox-wasmi", "Compiled::run on wasmi", true, true),
    ] {
        if !bench.wants(stage) {
            continue;
        }
        let engine = if stage == "sandbox-wasmi" {
            BackendKind::Wasmi
        } else {
            BackendKind::Wasmtime
        };
        let mut config = SandboxConfig::new(engine);
        config.pooling(pooling);
        let compiled = bench.compiled(&config)?;
        let caps = caps.clone().with_temp_dir(temp_dir);
        // wasmi takes a quarter of the calls: each is several times slower.
        let share = if engine == BackendKind::Wasmi { 4 } else { 1 };
        add(
            &mut stages,
            stage,
            what,
            Box::new(move |k| {
                Bench::time_only(k.div_ceil(share), || {
                    check_stdout(&compiled.run(&bench.input, &bench.limits, &caps)?.stdout)
                })
            }),
        );
    }
    // A warm-up of a tenth of the calls (at least one) for each stage, not counted; then the
    // rounds, each stage taking its share of the calls in turn.
    for stage in &mut stages {
        (stage.sample)((n / 10).max(1))?;
    }
    for round in 0..ROUNDS {
        let k = n / ROUNDS + usize::from(round < n % ROUNDS);
        if k == 0 {
            continue;
        }
        for stage in &mut stages {
            let samples = (stage.sample)(k)?;
            stage.samples.extend(samples);
        }
    }
    let rows: Vec<(&str, Row)> = stages
        .into_iter()
        .map(|stage| {
            (
                stage.stage,
                Row {
                    name: format!("{}: {}", stage.stage, stage.what),
                    summary: Summary::of(&stage.samples),
                },
            )
        })
        .collect();
    if let Some((_, sandbox)) = rows.iter().find(|(stage, _)| *stage == "sandbox") {
        for (stage, row) in &rows {
            let target = match *stage {
                "facade" => Some(Target::AtMost(FACADE_TARGET)),
                "exec" | "sandbox-future" | "sandbox-hop" => None,
                _ => continue,
            };
            b.ratios.push(Ratio::of(row, sandbox, target));
        }
    }
    b.rows.extend(rows.into_iter().map(|(_, row)| row));
    Ok(())
}

/// The pieces around the wasm run, each alone.
fn pieces(b: &mut Bench) -> Result<()> {
    let n = b.calls;
    if b.wants("hop") {
        let hop = || async { Ok(tokio::task::spawn_blocking(|| ()).await?) };
        b.time_async((n / 10).max(1), hop)?;
        let samples = b.time_async(n, hop)?;
        b.push("hop", "tokio spawn_blocking of nothing", &samples);
    }
    if b.wants("tempdir") {
        let root = std::env::temp_dir();
        let samples = Bench::time(n, || {
            let temp = tempfile::Builder::new()
                .prefix("locara-call-")
                .tempdir_in(&root)?;
            drop(cap_std::fs::Dir::open_ambient_dir(
                temp.path(),
                cap_std::ambient_authority(),
            )?);
            Ok(temp.close()?)
        })?;
        b.push("tempdir", "create, open and remove a temp dir", &samples);
    }
    let stdout = b
        .compiled(&SandboxConfig::new(BackendKind::Wasmtime))?
        .run(&b.input, &b.limits, &Capabilities::new())?
        .stdout;
    let output: Value = serde_json::from_slice(&stdout)?;
    if b.wants("schema") {
        let input_schema = jsonschema::validator_for(&b.manifest["input_schema"])?;
        let output_schema = jsonschema::validator_for(&b.manifest["output_schema"])?;
        let valid = |validator: &jsonschema::Validator, value: &Value| {
            ensure!(validator.iter_errors(value).next().is_none(), "invalid");
            Ok(())
        };
        let samples = Bench::time(n, || valid(&input_schema, &b.arguments))?;
        b.push("schema", "validate the arguments", &samples);
        let samples = Bench::time(n, || valid(&output_schema, &output))?;
        b.push("schema", "validate the output", &samples);
        let samples = Bench::time(n.div_ceil(10), || {
            Ok(jsonschema::validator_for(&b.manifest["output_schema"])?)
        })?;
        b.push("schema", "compile the output schema", &samples);
    }
    if b.wants("json") {
        let samples = Bench::time(n, || Ok(serde_json::to_vec(&b.arguments)?))?;
        b.push("json", "serialize the arguments", &samples);
        let samples = Bench::time(n, || Ok(serde_json::from_slice::<Value>(&stdout)?))?;
        b.push("json", "parse the output", &samples);
        let samples = Bench::time(n, || Ok(serde_json::to_vec(&output)?))?;
        b.push(
            "json",
            "serialize the output (the output cap's size check)",
            &samples,
        );
    }
    Ok(())
}

#[cfg(feature = "floor")]
mod floor {
    //! Raw Wasmtime with the settings that matter for a short call, one change at a time.

    use anyhow::{Result, format_err};
    use locara_bench::{FloorConfig, RawFloor};

    use super::{Bench, check_stdout};

    pub(super) fn rows(b: &mut Bench) -> Result<()> {
        if !b.wants("floor") {
            return Ok(());
        }
        let pooling = FloorConfig {
            pooling: true,
            ..FloorConfig::default()
        };
        let configs = [
            FloorConfig::default(),
            pooling,
            FloorConfig {
                no_wasm_backtraces: true,
                ..pooling
            },
            FloorConfig {
                keep_resident: 16 << 20,
                ..pooling
            },
            FloorConfig {
                fuel: true,
                ..pooling
            },
            FloorConfig {
                fuel: true,
                no_wasm_backtraces: true,
                ..pooling
            },
        ];
        for config in configs {
            let floor =
                RawFloor::new(&b.wasm, config).map_err(|e| format_err!("raw floor: {e}"))?;
            let samples = Bench::time(b.calls, || {
                check_stdout(&floor.call(&b.input).map_err(|e| format_err!("{e}"))?)
            })?;
            b.push(
                "floor",
                &format!("raw wasmtime, {}", config.describe()),
                &samples,
            );
        }
        Ok(())
    }
}

#[cfg(not(feature = "floor"))]
mod floor {
    //! Without the `floor` feature there is no raw Wasmtime to measure.

    use anyhow::Result;

    use super::Bench;

    pub(super) fn rows(_: &mut Bench) -> Result<()> {
        Ok(())
    }
}
