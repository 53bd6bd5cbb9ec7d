//! Per-call latency of `text.chunk` on a small input: through Locara's whole pipeline on each
//! engine, next to the raw Wasmtime instantiate-and-call floor for the same module, a peer
//! runtime (Extism running the same chunking as a plugin, fresh per call and reused) and the cost
//! of spawning `/bin/true`, all measured in this one process.
//!
//! Run with `cargo bench -p locara-bench --features floor,extism --bench pipeline` (without a
//! feature, its rows are skipped). Under `cargo test` (no `--bench` argument) it makes a
//! few calls of each, as a smoke test. The measurements are interleaved in rounds, after a
//! warm-up, so that a change in the machine's load (other builds on a shared machine) hits every
//! row alike.

#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::{
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, ensure, format_err};
use locara_bench::{MAX_CHARS, Ratio, Row, Summary, TEXT, TOOL, Target, check_chunks, render};
use locara_facade::{BackendKind, Locara, LocaraConfig, RunRequest};
use locara_test_artifacts::TestHome;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

/// How many calls of each, in how many interleaved rounds.
#[derive(Debug, Clone, Copy)]
struct Plan {
    rounds: usize,
    warmup: usize,
    wasmtime: usize,
    wasmi: usize,
    floor: usize,
    extism: usize,
    spawn: usize,
}

const BENCH: Plan = Plan {
    rounds: 10,
    warmup: 50,
    wasmtime: 2000,
    wasmi: 300,
    floor: 2000,
    extism: 2000,
    spawn: 300,
};
const SMOKE: Plan = Plan {
    rounds: 1,
    warmup: 1,
    wasmtime: 3,
    wasmi: 2,
    floor: 3,
    extism: 3,
    spawn: 2,
};

fn main() -> Result<()> {
    let bench = std::env::args().any(|a| a == "--bench");
    let plan = if bench { BENCH } else { SMOKE };
    let arguments = json!({"text": TEXT, "max_chars": MAX_CHARS});
    let stdin = serde_json::to_vec(&arguments)?;

    let home = TestHome::new();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let config = LocaraConfig::new(home.path());
    let on_wasmtime = Locara::new(&config.clone().with_engine(BackendKind::Wasmtime))?;
    let on_wasmi = Locara::new(&config.with_engine(BackendKind::Wasmi))?;

    let mut pipeline_wasmtime = Vec::new();
    let mut pipeline_wasmi = Vec::new();
    let mut spawn = Vec::new();
    let floors = floor::Floors::new()?;
    let mut floor_samples = vec![Vec::new(); floors.len()];
    let mut peer = peer::Extism::new()?;
    let mut peer_samples = vec![Vec::new(); peer::Extism::ROWS.len()];

    // Warm up: the first call compiles (and caches) the module, the schemas and the tool's
    // verification; the rest warm the allocators and the caches.
    pipeline(&rt, &on_wasmtime, &arguments, plan.warmup, &mut Vec::new())?;
    pipeline(
        &rt,
        &on_wasmi,
        &arguments,
        plan.warmup.div_ceil(10),
        &mut Vec::new(),
    )?;
    floors.run(&stdin, plan.warmup, &mut vec![Vec::new(); floors.len()])?;
    peer.run(
        &stdin,
        plan.warmup,
        &mut vec![Vec::new(); peer_samples.len()],
    )?;
    spawn_true(plan.warmup.div_ceil(10), &mut Vec::new())?;

    for _ in 0..plan.rounds {
        pipeline(
            &rt,
            &on_wasmtime,
            &arguments,
            plan.wasmtime / plan.rounds,
            &mut pipeline_wasmtime,
        )?;
        floors.run(&stdin, plan.floor / plan.rounds, &mut floor_samples)?;
        peer.run(&stdin, plan.extism / plan.rounds, &mut peer_samples)?;
        pipeline(
            &rt,
            &on_wasmi,
            &arguments,
            plan.wasmi / plan.rounds,
            &mut pipeline_wasmi,
        )?;
        spawn_true(plan.spawn / plan.rounds, &mut spawn)?;
    }

    let row = |name: &str, samples: &[Duration]| Row {
        name: name.to_owned(),
        summary: Summary::of(samples),
    };
    let wasmtime_row = row("locara pipeline, wasmtime", &pipeline_wasmtime);
    let wasmi_row = row("locara pipeline, wasmi", &pipeline_wasmi);
    let spawn_row = row("spawn /bin/true", &spawn);
    let floor_rows: Vec<Row> = floors
        .names()
        .iter()
        .zip(&floor_samples)
        .map(|(name, samples)| row(name, samples))
        .collect();
    let peer_rows: Vec<Row> = peer::Extism::ROWS
        .iter()
        .zip(&peer_samples)
        .map(|(name, samples)| row(name, samples))
        .collect();

    let mut ratios = Vec::new();
    // The first target, against each floor (the pooling one is like for like: the
    // pipeline uses the pooling allocator too).
    for floor in floor_rows.iter().filter(|r| !r.name.contains("fuel")) {
        ratios.push(Ratio::of(&wasmtime_row, floor, Some(Target::AtMost(3.0))));
    }
    ratios.push(Ratio::of(
        &spawn_row,
        &wasmtime_row,
        Some(Target::AtLeast(50.0)),
    ));
    // For information: what Locara's engine settings cost alone, and the interpreter's cost.
    for floor in floor_rows.iter().filter(|r| r.name.contains("fuel")) {
        ratios.push(Ratio::of(&wasmtime_row, floor, None));
    }
    ratios.push(Ratio::of(&wasmi_row, &wasmtime_row, None));
    // Side by side with a peer, for information: Locara's call against Extism's, fresh and reused.
    for extism in &peer_rows {
        ratios.push(Ratio::of(&wasmtime_row, extism, None));
    }

    let mut rows = vec![wasmtime_row, wasmi_row];
    rows.extend(floor_rows);
    rows.extend(peer_rows);
    rows.push(spawn_row);

    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    println!();
    if bench {
        println!(
            "text.chunk, {} chars of input, max_chars {MAX_CHARS}; {cores} cores; {} interleaved rounds",
            TEXT.chars().count(),
            plan.rounds
        );
    } else {
        println!(
            "smoke test (run `cargo bench -p locara-bench --features floor,extism --bench pipeline` to measure)"
        );
    }
    println!("{}", floors.note());
    println!("{}", peer.note());
    println!();
    // A few calls say nothing about the targets.
    let ratios = if bench { ratios } else { Vec::new() };
    print!("{}", render(&rows, &ratios));
    Ok(())
}

/// Runs `n` calls through `locara`, timing each `run(..).await` from a tokio runtime, as an
/// async host would; every output is checked.
fn pipeline(
    rt: &Runtime,
    locara: &Locara,
    arguments: &Value,
    n: usize,
    samples: &mut Vec<Duration>,
) -> Result<()> {
    rt.block_on(async {
        for _ in 0..n {
            let request = RunRequest::new(TOOL, arguments.clone());
            let started = Instant::now();
            let response = locara.run(request).await;
            let elapsed = started.elapsed();
            let response =
                response.with_context(|| format!("{} could not run {TOOL}", locara.engine()))?;
            ensure!(
                response.ok,
                "{TOOL} failed on {}: {:?}",
                locara.engine(),
                response.error
            );
            let output = response.output.context("no output")?;
            check_chunks(&output, TEXT, MAX_CHARS)
                .map_err(|e| format_err!("{}: {e}", locara.engine()))?;
            samples.push(elapsed);
        }
        Ok(())
    })
}

/// Spawns and waits for `/bin/true` `n` times.
fn spawn_true(n: usize, samples: &mut Vec<Duration>) -> Result<()> {
    for _ in 0..n {
        let started = Instant::now();
        let status = Command::new("/bin/true").status();
        let elapsed = started.elapsed();
        ensure!(
            status.context("spawning /bin/true")?.success(),
            "/bin/true failed"
        );
        samples.push(elapsed);
    }
    Ok(())
}

#[cfg(feature = "floor")]
mod floor {
    //! The raw Wasmtime floors: the same `text.chunk` module under a hand-rolled embedder.

    use std::{path::Path, time::Instant};

    use anyhow::{Context as _, Result, format_err};
    use locara_bench::{FloorConfig, RawFloor, check_chunks};
    use locara_test_artifacts::TOOLS;

    use super::{Duration, MAX_CHARS, TEXT, TOOL};

    /// Wasmtime's defaults (`Config::new()`), then with the pooling allocator, then also
    /// keeping memory resident as the sandbox does (like for like with the sandbox), then also
    /// with fuel (the sandbox's engine settings).
    fn configs() -> [FloorConfig; 4] {
        let pooling = FloorConfig {
            pooling: true,
            ..FloorConfig::default()
        };
        let resident = FloorConfig {
            keep_resident: 16 << 20,
            ..pooling
        };
        [
            FloorConfig::default(),
            pooling,
            resident,
            FloorConfig {
                fuel: true,
                ..resident
            },
        ]
    }

    pub(super) struct Floors {
        floors: Vec<RawFloor>,
        names: Vec<String>,
    }

    impl Floors {
        /// Compiles the very bytes the test home published as `text.chunk`.
        pub(super) fn new() -> Result<Floors> {
            let (_, path, _) = TOOLS
                .iter()
                .find(|(id, _, _)| *id == TOOL)
                .context("no text.chunk in TOOLS")?;
            let wasm = std::fs::read(Path::new(path)).with_context(|| format!("reading {path}"))?;
            let mut floors = Vec::new();
            for config in configs() {
                floors
                    .push(RawFloor::new(&wasm, config).map_err(|e| format_err!("raw floor: {e}"))?);
            }
            let names = configs()
                .iter()
                .map(|c| format!("raw wasmtime floor, {}", c.describe()))
                .collect();
            Ok(Floors { floors, names })
        }

        pub(super) fn len(&self) -> usize {
            self.floors.len()
        }

        pub(super) fn names(&self) -> &[String] {
            &self.names
        }

        pub(super) fn note(&self) -> &'static str {
            "raw floor: wasmtime 48.0.8 + wasmtime-wasi p1 (add_to_linker_sync), module compiled and \
             InstancePre built once; per call a new Store + WasiP1Ctx (memory stdin/stdout), \
             instantiate, _start, read stdout. Pooling rows: 32 slots of up to 1 GiB, as the sandbox."
        }

        /// Makes `n` calls on each floor, one floor after the other.
        pub(super) fn run(
            &self,
            stdin: &[u8],
            n: usize,
            samples: &mut [Vec<Duration>],
        ) -> Result<()> {
            for ((floor, name), samples) in self.floors.iter().zip(&self.names).zip(samples) {
                for _ in 0..n {
                    let started = Instant::now();
                    let stdout = floor.call(stdin);
                    let elapsed = started.elapsed();
                    let stdout = stdout.map_err(|e| format_err!("{name}: {e}"))?;
                    let output = serde_json::from_slice(&stdout)
                        .with_context(|| format!("{name}: stdout is not JSON"))?;
                    check_chunks(&output, TEXT, MAX_CHARS)
                        .map_err(|e| format_err!("{name}: {e}"))?;
                    samples.push(elapsed);
                }
            }
            Ok(())
        }
    }
}

#[cfg(not(feature = "floor"))]
mod floor {
    //! Without the `floor` feature there is no floor to measure.

    use anyhow::Result;

    use super::Duration;

    pub(super) struct Floors;

    impl Floors {
        pub(super) fn new() -> Result<Floors> {
            Ok(Floors)
        }

        pub(super) fn len(&self) -> usize {
            0
        }

        pub(super) fn names(&self) -> &[String] {
            &[]
        }

        pub(super) fn note(&self) -> &'static str {
            "raw floor: NOT measured (built without `--features floor`)"
        }

        pub(super) fn run(
            &self,
            _stdin: &[u8],
            _n: usize,
            _samples: &mut [Vec<Duration>],
        ) -> Result<()> {
            Ok(())
        }
    }
}

#[cfg(feature = "extism")]
mod peer {
    //! The peer: Extism (the `extism` host SDK, on its own Wasmtime) running `text.chunk`'s
    //! chunking as a plugin, on the same input, with the same output check.

    use std::time::Instant;

    use anyhow::{Context as _, Result, format_err};
    use locara_bench::{EXTISM_PLUGIN, ExtismChunker, check_chunks};

    use super::{Duration, MAX_CHARS, TEXT};

    pub(super) struct Extism {
        chunker: ExtismChunker,
    }

    impl Extism {
        /// The rows, in the order [`Extism::run`] fills the samples.
        pub(super) const ROWS: [&'static str; 2] = [
            "extism 1.30, fresh plugin per call",
            "extism 1.30, one plugin reused",
        ];

        /// Compiles the plugin the build script built.
        pub(super) fn new() -> Result<Extism> {
            let wasm =
                std::fs::read(EXTISM_PLUGIN).with_context(|| format!("reading {EXTISM_PLUGIN}"))?;
            let chunker =
                ExtismChunker::new(&wasm).map_err(|e| format_err!("extism plugin: {e}"))?;
            Ok(Extism { chunker })
        }

        pub(super) fn note(&self) -> &'static str {
            "extism: the `extism` 1.30.0 crate (its own wasmtime 43) hosting a plugin built with \
             extism-pdk for wasm32-wasip1 from text.chunk's own source, WASI on, compiled once; \
             fresh: Plugin::new_from_compiled + call(\"chunk\", arguments' JSON) + drop per call; \
             reused: call on one plugin (its instance and memory kept between calls)."
        }

        /// Makes `n` calls on a fresh plugin each, then `n` on the reused one; every output is
        /// checked.
        pub(super) fn run(
            &mut self,
            stdin: &[u8],
            n: usize,
            samples: &mut [Vec<Duration>],
        ) -> Result<()> {
            let [fresh, reused] = samples else {
                unreachable!("one sample list per row")
            };
            for _ in 0..n {
                let started = Instant::now();
                let output = self.chunker.call_fresh(stdin);
                fresh.push(checked(started, output, Self::ROWS[0])?);
            }
            for _ in 0..n {
                let started = Instant::now();
                let output = self.chunker.call_reused(stdin);
                reused.push(checked(started, output, Self::ROWS[1])?);
            }
            Ok(())
        }
    }

    /// The time since `started`, once `output` is known to be the right chunks.
    fn checked(started: Instant, output: Result<Vec<u8>, String>, name: &str) -> Result<Duration> {
        let elapsed = started.elapsed();
        let output = output.map_err(|e| format_err!("{name}: {e}"))?;
        let output = serde_json::from_slice(&output)
            .with_context(|| format!("{name}: the output is not JSON"))?;
        check_chunks(&output, TEXT, MAX_CHARS).map_err(|e| format_err!("{name}: {e}"))?;
        Ok(elapsed)
    }
}

#[cfg(not(feature = "extism"))]
mod peer {
    //! Without the `extism` feature there is no peer to measure.

    use anyhow::Result;

    use super::Duration;

    pub(super) struct Extism;

    impl Extism {
        /// No rows.
        pub(super) const ROWS: [&'static str; 0] = [];

        pub(super) fn new() -> Result<Extism> {
            Ok(Extism)
        }

        pub(super) fn note(&self) -> &'static str {
            "extism: NOT measured (built without `--features extism`)"
        }

        pub(super) fn run(
            &mut self,
            _stdin: &[u8],
            _n: usize,
            _samples: &mut [Vec<Duration>],
        ) -> Result<()> {
            Ok(())
        }
    }
}
