//! Cold and warm latency of the code-execution tools on a one-line program, through Locara's
//! whole pipeline on Wasmtime, next to the same one-liner spawned natively (`python3 -c`,
//! `node -e`, `lua -e`, where installed), all measured in this one process.
//!
//! - cold: the first call of a freshly built `Locara` (a new host process would do the same):
//!   it verifies the tool, loads the compiled module from the on-disk cache and runs it.
//!   The caches are filled before measuring, and left to age 3 s as a host's files would
//!   have (a cache trusts a version of a file it hashed once only when it is that old), so no
//!   row includes compiling.
//! - warm: later calls of the same `Locara`.
//!
//! Then the cold call's stages, each timed alone on fresh objects (so a row is what a new
//! process pays for it): `Locara::new`; verifying the tool (`Registry::resolve`: the signature,
//! then the artifact's cache entry, whose bytes are read and hashed only if this version of the
//! file was not hashed before); loading its compiled module from the on-disk cache
//! (`Sandbox::compile_unless_cached` on a new sandbox: the entry's checksum, mapping it,
//! linking); the first
//! run of that module (creating its memory image) and a second one (warm, the sandbox alone).
//! Where the system temp dir is on a disk and `/dev/shm` is a tmpfs, Python's warm calls are
//! also timed with each call's temp dir there (`LocaraConfig::with_temp_root`, the CLI's
//! `--temp-dir`): a Python call makes three directories, which a journaling disk file system
//! charges for (their removal is the facade's cleaner thread's, off the call's path).
//! Last, the targets, from this run: Python cold ≤ 20 ms and warm ≤ 1 ms, JavaScript
//! and Lua cold ≤ 10 ms, judged on wall time, each with the p50 of the process's CPU time over
//! the same calls (`/proc/self/task/*/schedstat`): on a machine shared with other work, wall
//! time includes the wait for a core, CPU time is the call's own work.
//!
//! Run with `cargo bench -p locara-bench --bench code_exec`. Under `cargo test` (no `--bench`
//! argument) it makes a few calls of each, as a smoke test.

#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::{
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, ensure, format_err};
use locara_bench::{Ratio, Row, Summary, cpu_time, render};
use locara_facade::{BackendKind, Locara, LocaraConfig, RunRequest, ToolRef};
use locara_sandbox::{Capabilities, Limits, RunStatus, Sandbox, SandboxConfig};
use locara_test_artifacts::{SHARED_COMPILED_CACHE, TestHome};
use serde_json::json;
use tokio::runtime::Runtime;

/// A language: its tool, the one-liner, the native command that runs the same one-liner, and
/// the bound on its cold call.
struct Language {
    tool: &'static str,
    upstream: bool,
    code: &'static str,
    native: &'static [&'static str],
    cold_target: Duration,
}

const LANGUAGES: [Language; 3] = [
    Language {
        tool: "code-exec.python",
        upstream: true,
        code: "print(1+1)",
        native: &["python3", "-c", "print(1+1)"],
        cold_target: Duration::from_millis(20),
    },
    Language {
        tool: "code-exec.js",
        upstream: true,
        code: "console.log(1+1)",
        native: &["node", "-e", "console.log(1+1)"],
        cold_target: Duration::from_millis(10),
    },
    Language {
        tool: "code-exec.lua",
        upstream: false,
        code: "print(1+1)",
        native: &["lua", "-e", "print(1+1)"],
        cold_target: Duration::from_millis(10),
    },
];

/// The `print(1+1)` target of the issue, for Python on Wasmtime in a process that already ran it.
const PYTHON_WARM_TARGET: Duration = Duration::from_millis(1);

#[derive(Debug, Clone, Copy)]
struct Plan {
    cold: usize,
    warmup: usize,
    warm: usize,
    native: usize,
}

/// Longer than the age at which the caches trust a version of a file they hashed.
const SETTLED: Duration = Duration::from_millis(3100);

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
    let mut stages = Vec::new();
    let mut ratios = Vec::new();
    let mut limits = Vec::new();
    // `LANGUAGES=python` (or `js,lua`, …) keeps only those, for `perf record`.
    let only = std::env::var("LANGUAGES").ok();
    let wanted = |language: &&Language| {
        only.as_deref().is_none_or(|only| {
            only.split(',')
                .any(|name| language.tool.strip_prefix("code-exec.") == Some(name))
        })
    };
    let languages: Vec<&Language> = LANGUAGES.iter().filter(wanted).collect();
    for language in &languages {
        // Fill the caches (the first compile is not what is measured).
        let started = Instant::now();
        call(&rt, &Locara::new(&config)?, language)?;
        println!(
            "{}: first call in this process (may compile): {:.0} ms",
            language.tool,
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    // A host's files are as old as its install: the caches trust a file version they hashed
    // once only when it is 3 s old (locara-registry's `stamp`), so let the ones this run just
    // wrote age as a host's would have.
    std::thread::sleep(SETTLED);
    for language in languages {
        let (mut cold, mut cold_cpu) = (Vec::new(), Vec::new());
        for _ in 0..plan.cold {
            // The CPU time is read outside the wall-clock interval: reading it opens a file per
            // thread of the process, tens of microseconds.
            let cpu = cpu_time()?;
            let started = Instant::now();
            let locara = Locara::new(&config)?;
            call(&rt, &locara, language)?;
            cold.push(started.elapsed());
            cold_cpu.push(cpu_time()?.saturating_sub(cpu));
        }
        let (warm, warm_cpu) = warm_calls(&rt, &config, language, &plan)?;
        let warm = Row {
            name: format!("{} warm", language.tool),
            summary: Summary::of(&warm),
        };
        // The same warm calls with each call's temp dir on a tmpfs, where the system temp dir
        // is on a disk: a Python call makes and removes three directories (`--temp-dir`).
        let mut on_tmpfs = None;
        if language.tool == "code-exec.python"
            && let Some(tmpfs) = tmpfs_temp_root()
        {
            let on = config.clone().with_temp_root(&tmpfs);
            let (samples, cpu_samples) = warm_calls(&rt, &on, language, &plan)?;
            let row = Row {
                name: format!(
                    "{} warm, temp dirs on tmpfs {}",
                    language.tool,
                    tmpfs.display()
                ),
                summary: Summary::of(&samples),
            };
            let cpu = Summary::of(&cpu_samples).p50;
            on_tmpfs = Some((row, cpu));
        }
        let cold = Row {
            name: format!("{} cold", language.tool),
            summary: Summary::of(&cold),
        };
        let cold_cpu = Summary::of(&cold_cpu).p50;
        limits.push((
            cold.name.clone(),
            cold.summary.p50,
            cold_cpu,
            language.cold_target,
        ));
        if language.tool == "code-exec.python" {
            let warm_cpu = Summary::of(&warm_cpu).p50;
            limits.push((
                warm.name.clone(),
                warm.summary.p50,
                warm_cpu,
                PYTHON_WARM_TARGET,
            ));
        }
        stages.extend(cold_stages(&home, &config, language, plan.cold)?);
        match native(language, plan.native)? {
            Some(native) => {
                ratios.push(Ratio::of(&cold, &native, None));
                ratios.push(Ratio::of(&warm, &native, None));
                rows.extend([cold, warm, native]);
            }
            None => {
                println!("{}: not installed, no native row", language.native[0]);
                rows.extend([cold, warm]);
            }
        }
        if let Some((row, cpu)) = on_tmpfs {
            limits.push((row.name.clone(), row.summary.p50, cpu, PYTHON_WARM_TARGET));
            rows.push(row);
        }
    }
    print!("{}", render(&rows, &ratios));
    println!("\nthe cold call's stages, each timed alone on fresh objects:");
    print!("{}", render(&stages, &[]));
    println!();
    // On a loaded machine wall time is the work plus the wait for a core; the process's CPU
    // time over the same calls is the work alone, what the call takes on an idle machine.
    for (name, p50, cpu_p50, target) in limits {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "{name} p50 = {:.2} ms  target ≤ {} ms: {}  (CPU time p50 = {:.2} ms: {})",
            ms(p50),
            target.as_millis(),
            if p50 <= target { "met" } else { "NOT met" },
            ms(cpu_p50),
            if cpu_p50 <= target { "within" } else { "over" }
        );
    }
    Ok(())
}

/// What a new process pays, stage by stage, for its first call of `language`: each stage timed
/// `samples` times on fresh objects (a new `Locara`, a new registry, a new sandbox over the same
/// compiled-module cache), the module's later runs for comparison.
fn cold_stages(
    home: &TestHome,
    config: &LocaraConfig,
    language: &Language,
    samples: usize,
) -> Result<Vec<Row>> {
    let tool: ToolRef = language.tool.parse()?;
    let mut sandbox_config = SandboxConfig::new(BackendKind::Wasmtime);
    sandbox_config.cache_dir(SHARED_COMPILED_CACHE);
    let mut times: [Vec<Duration>; 5] = Default::default();
    for _ in 0..samples {
        let started = Instant::now();
        drop(Locara::new(config)?);
        times[0].push(started.elapsed());

        let registry = home.registry();
        let started = Instant::now();
        let artifact = registry.resolve(&tool)?;
        times[1].push(started.elapsed());

        let sandbox = Sandbox::new(&sandbox_config)?;
        let key = artifact.artifact_digest().to_hex();
        let started = Instant::now();
        // As `Execute` does: the bytes are read only if no compiled module is cached.
        let compiled =
            sandbox.compile_unless_cached(&key, || artifact.wasm().map_err(anyhow::Error::from))?;
        times[2].push(started.elapsed());

        // The call as `Execute` makes it: the manifest's argv and limits, JSON on stdin.
        let manifest = artifact.manifest();
        let mut argv = manifest.argv().into_iter();
        let caps = Capabilities::new()
            .program_name(argv.next().unwrap_or_default())
            .with_args(argv)
            .collecting("out");
        let l = manifest.limits();
        let limits = Limits {
            memory_bytes: l.memory_bytes,
            wall_time: l.wall_time,
            fuel: l.fuel,
            output_bytes: l.output_bytes,
            max_fds: l.max_fds,
            temp_bytes: l.temp_bytes,
        };
        let input = serde_json::to_vec(&json!({"code": language.code}))?;
        for run in &mut times[3..] {
            let started = Instant::now();
            let outcome = compiled.run(&input, &limits, &caps)?;
            run.push(started.elapsed());
            ensure!(
                outcome.status == RunStatus::Exited(0),
                "{} ended {:?}: {}",
                language.tool,
                outcome.status,
                String::from_utf8_lossy(&outcome.stderr)
            );
            let output: serde_json::Value = serde_json::from_slice(&outcome.stdout)?;
            ensure!(
                output["stdout"] == "2\n",
                "{} printed {:?}",
                language.tool,
                output["stdout"]
            );
        }
    }
    let names = [
        "Locara::new",
        "verify (Registry::resolve)",
        "load compiled module (Sandbox::compile_unless_cached)",
        "first run (sandbox)",
        "second run (sandbox)",
    ];
    Ok(names
        .iter()
        .zip(&times)
        .map(|(name, samples)| Row {
            name: format!("{} cold: {name}", language.tool),
            summary: Summary::of(samples),
        })
        .collect())
}

/// The wall and CPU times of `plan.warm` calls of `language` on one `Locara` built from
/// `config`, after `plan.warmup` calls.
fn warm_calls(
    rt: &Runtime,
    config: &LocaraConfig,
    language: &Language,
    plan: &Plan,
) -> Result<(Vec<Duration>, Vec<Duration>)> {
    let locara = Locara::new(config)?;
    for _ in 0..plan.warmup {
        call(rt, &locara, language)?;
    }
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..plan.warm {
        let cpu_before = cpu_time()?;
        let started = Instant::now();
        call(rt, &locara, language)?;
        wall.push(started.elapsed());
        cpu.push(cpu_time()?.saturating_sub(cpu_before));
    }
    Ok((wall, cpu))
}

/// `/dev/shm` when it is a tmpfs and the system temp dir is not one (where it is, as Debian
/// 13's `/tmp`, the default rows already use a tmpfs).
fn tmpfs_temp_root() -> Option<std::path::PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let tmpfs = |dir: &std::path::Path| {
        mounts.lines().any(|line| {
            let mut fields = line.split_whitespace().skip(1);
            fields.next() == dir.to_str() && fields.next() == Some("tmpfs")
        })
    };
    let shm = std::path::PathBuf::from("/dev/shm");
    (!tmpfs(&std::env::temp_dir()) && tmpfs(&shm)).then_some(shm)
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
