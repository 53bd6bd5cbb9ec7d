//! The load and soak driver: 100,000 calls of a mix of tools through one shared `Locara` on
//! Wasmtime, two at a time, watching the process for leaks.
//!
//! Run with `cargo bench -p locara-bench --bench load`; `LOCARA_LOAD_CALLS=n` changes the
//! number of calls, and `LOCARA_LOAD_ONLY=echo,chunk` keeps only those cases of the mix (to
//! find which one a leak comes from; the names are in `Case::key`). Under `cargo test` (no
//! `--bench` argument) it makes 60 calls, as a smoke test. This is a driver, not a timed test:
//! it reports what it measured and fails only on correctness.
//!
//! The mix cycles through 20 calls: `text.chunk` (a short text and the sample field notes),
//! `filesystem.read`, `filesystem.list` and `filesystem.search` over a workspace of three
//! Markdown files, `bash.read-only`, the probe's `echo` (each call echoes its own number, so a
//! response delivered to the wrong caller is caught), and calls that fail on purpose: the
//! probe writing into its temp dir (whose output its schema rejects), arguments that break
//! `text.chunk`'s input schema, a probe panic and a probe exit with code 3. Every result is
//! checked against what that call should return; any mismatch fails the run.
//!
//! The calls run in phases: a warm-up (5% of the calls, at least one cycle of the mix), then
//! each tenth of the run. Between phases no call is in flight, so the open fds and the temp
//! dirs present are exact, and the table of samples shows whether memory, fds or temp dirs
//! grow after the warm-up. Fd growth and temp dirs left behind fail the run; RSS growth is
//! reported against a 10% target, and fails the run only beyond 50%. The latencies are stored
//! in slots allocated before the first call, so the driver's own memory does not grow.
//!
//! RSS after the warm-up moves in small steps that coincide with the `threads` column: tokio's
//! blocking pool starts a thread whenever a call arrives and no thread is idle (more often on a
//! loaded machine), and a thread only exits after 10 s without work, which under steady load
//! never comes. Each new thread added about 100 KiB of RSS in our runs. With the pool capped at
//! 4 threads (`max_blocking_threads`), RSS stayed within 0.1 MiB over 200,000 calls.
//!
//! The two callers are two threads sharing one `Locara` (it is `Send + Sync`), each driving its
//! calls with `block_on` on a shared 2-worker tokio runtime; a call that ends within its first
//! slice runs on its caller's thread, a longer one on tokio's blocking pool, so two calls
//! execute wasm at once either way.
//!
//! `LOCARA_LOAD_MODE=chunk` is the throughput mode: every call is the pipeline bench's short
//! `text.chunk`, and with `--features floor` raw Wasmtime floors then make as many calls on two
//! threads, their calls/s printed beside the facade's.

#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::{
    ops::Range,
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, AtomicUsize, Ordering},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, bail};
use locara_bench::{
    MAX_CHARS, ProcessSample, Row, Summary, TEXT, check_chunks, percent, render_latencies,
    render_samples,
};
use locara_facade::{
    BackendKind, Error, ErrorReport, FsGrant, Grants, Locara, LocaraConfig, RunRequest,
    RunResponse, SafetyTier,
};
use locara_test_artifacts::TestHome;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

/// Calls in a `--bench` run.
const BENCH_CALLS: usize = 100_000;
/// Calls in a smoke run (three cycles of the mix).
const SMOKE_CALLS: usize = 60;
/// The RSS growth after warm-up that the issue asks for, in percent.
const RSS_TARGET: f64 = 10.0;
/// The RSS growth after warm-up beyond which the run fails, in percent.
const RSS_FAIL: f64 = 50.0;
/// How many mismatches are shown in full.
const SHOWN_MISMATCHES: usize = 5;

/// The workspace's files: their names there, and where they come from in the repository.
const FILES: [(&str, &str); 3] = [
    ("ARCHITECTURE.md", "ARCHITECTURE.md"),
    ("README.md", "README.md"),
    ("field-notes.md", "examples/sample/field-notes.md"),
];
/// What `filesystem.search` looks for (case-insensitively, in every file).
const SEARCH: &str = "wasmtime";
/// What `bash.read-only` counts (`grep -c -i`) in `ARCHITECTURE.md`.
const GREP: &str = "sandbox";
/// What the probe's `exit` op writes to stderr.
const EXIT_STDERR: &str = "load driver: exit 3";

/// One kind of call in the mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Chunk,
    /// `text.chunk` of the pipeline bench's short text: the throughput mode's only call.
    Short,
    Read,
    List,
    Search,
    Bash,
    Echo,
    ProbeWrite,
    InvalidInput,
    Panic,
    Exit,
}

impl Case {
    const ALL: [Case; 11] = [
        Case::Chunk,
        Case::Short,
        Case::Read,
        Case::List,
        Case::Search,
        Case::Bash,
        Case::Echo,
        Case::ProbeWrite,
        Case::InvalidInput,
        Case::Panic,
        Case::Exit,
    ];

    fn index(self) -> usize {
        Case::ALL.iter().position(|&c| c == self).unwrap_or(0)
    }

    /// The case's name in `LOCARA_LOAD_ONLY`.
    fn key(self) -> &'static str {
        match self {
            Case::Chunk => "chunk",
            Case::Short => "short",
            Case::Read => "read",
            Case::List => "list",
            Case::Search => "search",
            Case::Bash => "bash",
            Case::Echo => "echo",
            Case::ProbeWrite => "write",
            Case::InvalidInput => "invalid",
            Case::Panic => "panic",
            Case::Exit => "exit",
        }
    }

    /// The row's name in the latency table, with what the call should do.
    fn name(self) -> &'static str {
        match self {
            Case::Chunk => "text.chunk",
            Case::Short => "text.chunk (short text)",
            Case::Read => "filesystem.read",
            Case::List => "filesystem.list",
            Case::Search => "filesystem.search",
            Case::Bash => "bash.read-only",
            Case::Echo => "test.probe echo",
            Case::ProbeWrite => "test.probe write (invalid_output)",
            Case::InvalidInput => "text.chunk bad args (invalid_input)",
            Case::Panic => "test.probe panic (crashed)",
            Case::Exit => "test.probe exit 3 (tool_error)",
        }
    }
}

/// The mix, in order: 20 calls, 14 that succeed and 6 that fail on purpose.
const MIX: [Case; 20] = [
    Case::Chunk,
    Case::Read,
    Case::Echo,
    Case::List,
    Case::Search,
    Case::Chunk,
    Case::Bash,
    Case::ProbeWrite,
    Case::Read,
    Case::Echo,
    Case::Chunk,
    Case::InvalidInput,
    Case::List,
    Case::Panic,
    Case::Read,
    Case::Search,
    Case::Chunk,
    Case::Echo,
    Case::Bash,
    Case::Exit,
];

/// What the driver runs (`LOCARA_LOAD_MODE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The mix of tools, watching the process for leaks (`mix`, the default).
    Mix,
    /// Throughput: only `text.chunk` of the short text, then the raw floor on the same calls
    /// (`chunk`).
    Chunk,
}

impl Mode {
    fn from_env() -> Result<Mode> {
        match std::env::var("LOCARA_LOAD_MODE").as_deref() {
            Err(_) | Ok("mix") => Ok(Mode::Mix),
            Ok("chunk") => Ok(Mode::Chunk),
            Ok(other) => bail!("LOCARA_LOAD_MODE: no mode {other:?}; the modes are mix, chunk"),
        }
    }
}

/// The mix, less the cases `LOCARA_LOAD_ONLY` (`echo,chunk`, …) leaves out; in the throughput
/// mode, the short `text.chunk` call alone.
fn mix(mode: Mode) -> Result<Vec<Case>> {
    if mode == Mode::Chunk {
        return Ok(vec![Case::Short]);
    }
    let Ok(only) = std::env::var("LOCARA_LOAD_ONLY") else {
        return Ok(MIX.to_vec());
    };
    let keys: Vec<&str> = only.split(',').map(str::trim).collect();
    if let Some(unknown) = keys
        .iter()
        .find(|k| !Case::ALL.iter().any(|c| c.key() == **k))
    {
        let known: Vec<&str> = Case::ALL.iter().map(|c| c.key()).collect();
        bail!(
            "LOCARA_LOAD_ONLY: no case {unknown:?}; the cases are {}",
            known.join(", ")
        );
    }
    Ok(MIX
        .iter()
        .copied()
        .filter(|c| keys.contains(&c.key()))
        .collect())
}

/// The workspace and what the calls over it should return, computed natively.
struct Fixture {
    /// The calls, in the order they cycle through.
    mix: Vec<Case>,
    workspace: PathBuf,
    /// Each file's name and content.
    files: Vec<(&'static str, String)>,
    field_notes: String,
    /// Lines of all files containing [`SEARCH`], ignoring case.
    search_hits: usize,
    /// Lines of `ARCHITECTURE.md` containing [`GREP`], ignoring case.
    grep_count: usize,
}

impl Fixture {
    /// Copies [`FILES`] from the repository into `workspace`.
    fn new(mix: Vec<Case>, workspace: &Path) -> Result<Fixture> {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        for (name, source) in FILES {
            let content = std::fs::read_to_string(repo.join(source))
                .with_context(|| format!("reading {source}"))?;
            std::fs::write(workspace.join(name), &content)
                .with_context(|| format!("writing {name} into the workspace"))?;
            files.push((name, content));
        }
        let lines_with = |text: &str, needle: &str| {
            text.lines()
                .filter(|line| line.to_lowercase().contains(needle))
                .count()
        };
        let search_hits = files.iter().map(|(_, c)| lines_with(c, SEARCH)).sum();
        let grep_count = lines_with(&files[0].1, GREP);
        let field_notes = files[2].1.clone();
        Ok(Fixture {
            mix,
            workspace: workspace.to_owned(),
            files,
            field_notes,
            search_hits,
            grep_count,
        })
    }

    /// The `i`th call of the run.
    fn request(&self, case: Case, i: usize) -> RunRequest {
        let in_workspace = |tool: &str, arguments| {
            RunRequest::new(tool, arguments).with_workspace(&self.workspace)
        };
        match case {
            Case::Chunk => RunRequest::new("text.chunk", self.chunk_arguments(i)),
            Case::Short => {
                RunRequest::new("text.chunk", json!({"text": TEXT, "max_chars": MAX_CHARS}))
            }
            Case::Read => in_workspace(
                "filesystem.read",
                json!({"path": self.files[i % self.files.len()].0}),
            ),
            Case::List => in_workspace("filesystem.list", json!({})),
            Case::Search => in_workspace("filesystem.search", json!({"query": SEARCH})),
            Case::Bash => in_workspace(
                "bash.read-only",
                json!({"command": format!("grep -c -i {GREP} {}", FILES[0].0)}),
            ),
            // The probe declares a read-only workspace, so it needs one.
            Case::Echo => in_workspace("test.probe", json!({"op": "echo", "n": i.to_string()})),
            Case::ProbeWrite => in_workspace(
                "test.probe",
                json!({"op": "write", "path": "/tmp/x.txt", "content": format!("call {i}")}),
            ),
            Case::InvalidInput => RunRequest::new("text.chunk", json!({"text": 5})),
            Case::Panic => in_workspace("test.probe", json!({"op": "panic"})),
            Case::Exit => in_workspace(
                "test.probe",
                json!({"op": "exit", "code": 3, "stderr": EXIT_STDERR}),
            ),
        }
    }

    /// `text.chunk` alternates between the pipeline bench's short text and the field notes.
    fn chunk_arguments(&self, i: usize) -> Value {
        let (text, max_chars) = self.chunk_input(i);
        json!({"text": text, "max_chars": max_chars})
    }

    fn chunk_input(&self, i: usize) -> (&str, usize) {
        if (i / self.mix.len()).is_multiple_of(2) {
            (TEXT, MAX_CHARS)
        } else {
            (&self.field_notes, 400)
        }
    }

    /// Checks the `i`th call's result against what it should be.
    fn check(
        &self,
        case: Case,
        i: usize,
        result: Result<RunResponse, Error>,
    ) -> Result<(), String> {
        match case {
            Case::Chunk => {
                let (text, max_chars) = self.chunk_input(i);
                check_chunks(&succeeded(result)?, text, max_chars)
            }
            Case::Short => check_chunks(&succeeded(result)?, TEXT, MAX_CHARS),
            Case::Read => {
                let (name, content) = &self.files[i % self.files.len()];
                let expected = json!({
                    "path": name,
                    "content": content,
                    "bytes_read": content.len(),
                    "total_bytes": content.len(),
                    "truncated": false,
                });
                same(&succeeded(result)?, &expected)
            }
            Case::List => {
                let output = succeeded(result)?;
                let entries: Vec<Value> = self
                    .files
                    .iter()
                    .map(|(name, content)| json!({"path": name, "kind": "file", "size": content.len()}))
                    .collect();
                same(&output["entries"], &Value::Array(entries))?;
                same(&output["truncated"], &json!(false))
            }
            Case::Search => {
                let output = succeeded(result)?;
                let hits = output["matches"].as_array().map_or(0, Vec::len);
                if hits != self.search_hits {
                    return Err(format!("{hits} matches, expected {}", self.search_hits));
                }
                same(&output["files_scanned"], &json!(self.files.len()))?;
                same(&output["truncated"], &json!(false))
            }
            Case::Bash => same(
                &succeeded(result)?,
                &json!({"stdout": format!("{}\n", self.grep_count), "exit_code": 0}),
            ),
            Case::Echo => same(
                &succeeded(result)?,
                &json!({"echo": {"op": "echo", "n": i.to_string()}}),
            ),
            Case::ProbeWrite => {
                // The probe prints `{"ok": true}` after writing, or `{"ok": false, "error": …}`;
                // the schema rejects both, and says which properties it did not expect.
                let (report, _) = failed(result, "invalid_output")?;
                if !report
                    .violations
                    .iter()
                    .any(|v| v.message.contains("('ok' was unexpected)"))
                {
                    return Err(format!(
                        "the write failed, or was rejected otherwise: {report:?}"
                    ));
                }
                Ok(())
            }
            Case::InvalidInput => {
                let error = match result {
                    Ok(response) => return Err(format!("ran: {response:?}")),
                    Err(error) => error,
                };
                let report = error.report();
                if report.code != "invalid_input"
                    || report.violations.first().map(|v| v.pointer.as_str()) != Some("/text")
                {
                    return Err(format!(
                        "refused with {report:?}, expected invalid_input at /text"
                    ));
                }
                Ok(())
            }
            Case::Panic => {
                let (report, stderr) = failed(result, "crashed")?;
                if !stderr.contains("locara-probe: deliberate panic") {
                    return Err(format!(
                        "no panic message in stderr {stderr:?} ({report:?})"
                    ));
                }
                Ok(())
            }
            Case::Exit => {
                let (report, stderr) = failed(result, "tool_error")?;
                if report.exit_code != Some(3) || stderr != EXIT_STDERR {
                    return Err(format!(
                        "exit code {:?} and stderr {stderr:?}, expected 3 and {EXIT_STDERR:?}",
                        report.exit_code
                    ));
                }
                Ok(())
            }
        }
    }
}

/// The output of a call that should have succeeded.
fn succeeded(result: Result<RunResponse, Error>) -> Result<Value, String> {
    match result {
        Ok(response) if response.ok => response.output.ok_or_else(|| "no output".to_owned()),
        Ok(response) => Err(format!("failed: {:?}", response.error)),
        Err(error) => Err(format!("could not run: {error}")),
    }
}

/// The error report and stderr of a call that should have run and failed with `code`.
fn failed(result: Result<RunResponse, Error>, code: &str) -> Result<(ErrorReport, String), String> {
    match result {
        Ok(RunResponse {
            ok: false,
            error: Some(report),
            stderr,
            ..
        }) if report.code == code => Ok((report, stderr)),
        Ok(response) => Err(format!(
            "expected {code}, got ok {} with {:?}",
            response.ok, response.error
        )),
        Err(error) => Err(format!("expected {code}, could not run: {error}")),
    }
}

fn same(found: &Value, expected: &Value) -> Result<(), String> {
    if found == expected {
        Ok(())
    } else {
        Err(format!("got {found}, expected {expected}"))
    }
}

/// The wrong results the callers found.
#[derive(Default)]
struct Mismatches {
    count: usize,
    /// The first few, in full.
    shown: Vec<String>,
}

impl Mismatches {
    fn merge(&mut self, other: Mismatches) {
        self.count += other.count;
        self.shown.extend(other.shown);
        self.shown.truncate(SHOWN_MISMATCHES);
    }
}

/// Each call's latency in nanoseconds, by call number. It is allocated and written before the
/// first call, so that the driver's own memory does not grow during the run and pass for the
/// runtime's.
fn latency_slots(calls: usize) -> Vec<AtomicU64> {
    (0..calls).map(|_| AtomicU64::new(u64::MAX)).collect()
}

/// One caller: takes the next call number until `end`, makes the call, records its latency
/// and checks its result.
async fn caller(
    locara: &Locara,
    fixture: &Fixture,
    next: &AtomicUsize,
    end: usize,
    latencies: &[AtomicU64],
) -> Mismatches {
    let mut mismatches = Mismatches::default();
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= end {
            return mismatches;
        }
        let case = fixture.mix[i % fixture.mix.len()];
        let request = fixture.request(case, i);
        let started = Instant::now();
        let result = locara.run(request).await;
        let elapsed = started.elapsed();
        latencies[i].store(
            u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        if let Err(message) = fixture.check(case, i, result) {
            mismatches.count += 1;
            if mismatches.shown.len() < SHOWN_MISMATCHES {
                mismatches
                    .shown
                    .push(format!("call {i} ({}): {message}", case.name()));
            }
        }
    }
}

/// Makes calls `start..end` with two callers on two threads, and returns when both are done.
fn phase(
    rt: &Runtime,
    locara: &Locara,
    fixture: &Fixture,
    calls: Range<usize>,
    latencies: &[AtomicU64],
) -> Mismatches {
    let next = AtomicUsize::new(calls.start);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| rt.block_on(caller(locara, fixture, &next, calls.end, latencies)))
            })
            .collect();
        let mut all = Mismatches::default();
        for worker in workers {
            all.merge(worker.join().expect("a caller thread panicked"));
        }
        all
    })
}

/// `/proc/loadavg`'s first three fields, to note how busy the machine was.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "unknown".to_owned(),
        |s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    )
}

fn main() -> Result<()> {
    let bench = std::env::args().any(|a| a == "--bench");
    let calls = match std::env::var("LOCARA_LOAD_CALLS") {
        Ok(n) => n
            .parse::<usize>()
            .context("LOCARA_LOAD_CALLS is not a number")?,
        Err(_) if bench => BENCH_CALLS,
        Err(_) => SMOKE_CALLS,
    };
    // At least one cycle of the mix, so that every tool is compiled before the baseline.
    let warmup = (calls / 20).max(MIX.len()).min(calls);
    let mode = Mode::from_env()?;
    let mix = mix(mode)?;

    let home = TestHome::new();
    let dir = tempfile::tempdir()?;
    let workspace = dir.path().join("workspace");
    let temp_root = dir.path().join("tmp");
    std::fs::create_dir(&workspace)?;
    std::fs::create_dir(&temp_root)?;
    let fixture = Fixture::new(mix, &workspace)?;
    let grants = Grants::new()
        .with_fs(FsGrant::new(&workspace))
        .with_max_safety_tier(SafetyTier::ReadOnly);
    let config = LocaraConfig::new(home.path())
        .with_engine(BackendKind::Wasmtime)
        .with_grants(grants)
        .with_temp_root(&temp_root);
    let locara = Locara::new(&config)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;

    let latencies = latency_slots(calls);
    let load_before = load_average();
    let mut samples = vec![("start".to_owned(), ProcessSample::take(0, &temp_root)?)];
    let started = Instant::now();
    let mut mismatches = phase(&rt, &locara, &fixture, 0..warmup, &latencies);
    let warmup_time = started.elapsed();
    samples.push((
        "warm-up".to_owned(),
        ProcessSample::take(warmup, &temp_root)?,
    ));
    let mut done = warmup;
    for tenth in 1..=10 {
        let end = calls * tenth / 10;
        if end <= done {
            continue;
        }
        mismatches.merge(phase(&rt, &locara, &fixture, done..end, &latencies));
        done = end;
        samples.push((
            format!("{}%", tenth * 10),
            ProcessSample::take(done, &temp_root)?,
        ));
    }
    let total_time = started.elapsed();
    let measured_time = total_time - warmup_time;
    let load_after = load_average();

    // The report.
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let measured_calls = calls - warmup;
    println!();
    if bench {
        println!(
            "load driver: {calls} calls through one shared Locara on Wasmtime, 2 in flight \
             (2 caller threads, each driving its calls with block_on on a shared 2-worker tokio \
             runtime; a call that ends within its first slice runs on the caller's thread, a \
             longer one moves to tokio's blocking pool)"
        );
    } else {
        println!(
            "load driver smoke test: {calls} calls (run `cargo bench -p locara-bench --bench load` for 100,000)"
        );
    }
    println!(
        "mix per {} calls: {}",
        fixture.mix.len(),
        Case::ALL
            .iter()
            .filter_map(|&c| {
                let n = fixture.mix.iter().filter(|&&m| m == c).count();
                (n > 0).then(|| format!("{n}× {}", c.name()))
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "machine: {cores} cores; load average {load_before} before, {load_after} after (1, 5, 15 min)"
    );
    println!();
    println!(
        "calls: {calls} ({warmup} warm-up, {measured_calls} measured); wall time {:.2} s ({:.2} s warm-up, {:.2} s measured)",
        total_time.as_secs_f64(),
        warmup_time.as_secs_f64(),
        measured_time.as_secs_f64()
    );
    if measured_calls > 0 {
        println!(
            "throughput: {:.0} calls/s (measured calls)",
            measured_calls as f64 / measured_time.as_secs_f64()
        );
        println!();
        println!("latency of each measured call (submit to response, 2 in flight):");
        // The warm-up's latencies include compiling every module, and are left out.
        let mut by_case = vec![Vec::new(); Case::ALL.len()];
        for (i, latency) in latencies.iter().enumerate().skip(warmup) {
            let latency = Duration::from_nanos(latency.load(Ordering::Relaxed));
            by_case[fixture.mix[i % fixture.mix.len()].index()].push(latency);
        }
        let all: Vec<Duration> = by_case.iter().flatten().copied().collect();
        let mut rows = vec![Row {
            name: "all".to_owned(),
            summary: Summary::of(&all),
        }];
        for case in Case::ALL {
            let latencies = &by_case[case.index()];
            if !latencies.is_empty() {
                rows.push(Row {
                    name: case.name().to_owned(),
                    summary: Summary::of(latencies),
                });
            }
        }
        print!("{}", render_latencies(&rows));
        if mode == Mode::Chunk {
            let throughput = measured_calls as f64 / measured_time.as_secs_f64();
            println!();
            floor::compare(throughput, measured_calls, bench)?;
        }
    }
    println!();
    println!("the process between phases (no call in flight):");
    print!("{}", render_samples(&samples));

    let first = samples[0].1;
    let baseline = samples[1].1;
    let last = samples[samples.len() - 1].1;
    let after_warmup = &samples[1..];
    let max_fds = after_warmup.iter().map(|(_, s)| s.fds).max().unwrap_or(0);
    let max_rss = after_warmup
        .iter()
        .map(|(_, s)| s.rss_kib)
        .max()
        .unwrap_or(0);
    let fd_growth = max_fds as i64 - baseline.fds as i64;
    let rss_growth = percent(
        last.rss_kib as f64 - baseline.rss_kib as f64,
        baseline.rss_kib as f64,
    );
    let rss_max_growth = percent(
        max_rss as f64 - baseline.rss_kib as f64,
        baseline.rss_kib as f64,
    );
    println!();
    println!(
        "peak RSS (VmHWM): {:.1} MiB",
        last.peak_rss_kib as f64 / 1024.0
    );
    println!(
        "open fds: {} before, {} after warm-up, {} after the run",
        first.fds, baseline.fds, last.fds
    );
    println!(
        "temp dirs in the temp root: {} before, {} after the run",
        first.temp_dirs, last.temp_dirs
    );
    println!();
    let verdict = |met: bool| if met { "met" } else { "NOT met" };
    println!(
        "result mismatches: {} (target 0): {}",
        mismatches.count,
        verdict(mismatches.count == 0)
    );
    for line in &mismatches.shown {
        println!("  {line}");
    }
    println!(
        "fd growth after warm-up: {fd_growth} (target 0): {}",
        verdict(fd_growth <= 0)
    );
    println!(
        "temp dirs left: {} (target 0): {}",
        last.temp_dirs,
        verdict(last.temp_dirs == 0)
    );
    // A few calls say nothing about memory.
    if bench {
        println!(
            "RSS growth after warm-up: {rss_growth:+.1}% at the end, {rss_max_growth:+.1}% at most (target < {RSS_TARGET}%): {}",
            verdict(rss_growth < RSS_TARGET)
        );
    }

    let mut failures = Vec::new();
    if mismatches.count > 0 {
        failures.push(format!("{} results were wrong", mismatches.count));
    }
    if fd_growth > 0 {
        failures.push(format!("{fd_growth} fds leaked"));
    }
    if last.temp_dirs > 0 {
        failures.push(format!("{} temp dirs were left", last.temp_dirs));
    }
    if bench && rss_growth > RSS_FAIL {
        failures.push(format!("RSS grew by {rss_growth:.1}% after warm-up"));
    }
    if !failures.is_empty() {
        bail!("the load run failed: {}", failures.join("; "));
    }
    Ok(())
}

#[cfg(feature = "floor")]
mod floor {
    //! The throughput mode's comparison: the raw Wasmtime floor making the same calls.

    use std::{path::Path, sync::atomic::AtomicUsize, time::Instant};

    use anyhow::{Context as _, Result, bail, format_err};
    use locara_bench::{FloorConfig, MAX_CHARS, RawFloor, TEXT, TOOL, check_chunks};
    use locara_test_artifacts::TOOLS;

    use super::Ordering;

    /// The target for the facade, in calls per second on two cores.
    const TARGET: f64 = 25_000.0;

    /// Makes `calls` calls of the short `text.chunk` on raw floors, two threads at a time
    /// (as the load driver's two callers), and prints their throughput beside `facade`'s.
    pub(super) fn compare(facade: f64, calls: usize, bench: bool) -> Result<()> {
        let (_, path, _) = TOOLS
            .iter()
            .find(|(id, _, _)| *id == TOOL)
            .context("no text.chunk in TOOLS")?;
        let wasm = std::fs::read(Path::new(path)).with_context(|| format!("reading {path}"))?;
        let stdin = serde_json::to_vec(&serde_json::json!({"text": TEXT, "max_chars": MAX_CHARS}))?;
        let pooling = FloorConfig {
            pooling: true,
            ..FloorConfig::default()
        };
        let like_for_like = FloorConfig {
            keep_resident: 16 << 20,
            fuel: true,
            ..pooling
        };
        println!("throughput, {calls} calls of text.chunk (short text), 2 in flight:");
        println!(
            "  {:<75} {facade:>7.0} calls/s",
            "Locara::run (facade, Wasmtime)"
        );
        for config in [pooling, like_for_like] {
            let floor = RawFloor::new(&wasm, config).map_err(|e| format_err!("raw floor: {e}"))?;
            let throughput = run(&floor, &stdin, calls)?;
            println!(
                "  {:<75} {throughput:>7.0} calls/s (facade/floor {:.2}x)",
                format!("raw wasmtime floor, {}", config.describe()),
                facade / throughput
            );
        }
        if bench {
            let met = if facade >= TARGET { "met" } else { "NOT met" };
            println!("  target: facade >= {TARGET:.0} calls/s on 2 cores: {met}");
        }
        Ok(())
    }

    fn run(floor: &RawFloor, stdin: &[u8], calls: usize) -> Result<f64> {
        let next = AtomicUsize::new(0);
        let started = Instant::now();
        let failures: Vec<String> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..2)
                .map(|_| {
                    scope.spawn(|| {
                        let mut failures = Vec::new();
                        while next.fetch_add(1, Ordering::Relaxed) < calls {
                            let checked = floor.call(stdin).and_then(|stdout| {
                                let output = serde_json::from_slice(&stdout)
                                    .map_err(|e| format!("stdout is not JSON: {e}"))?;
                                check_chunks(&output, TEXT, MAX_CHARS)
                            });
                            if let Err(e) = checked {
                                failures.push(e);
                            }
                        }
                        failures
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| {
                    w.join()
                        .unwrap_or_else(|_| vec!["a floor thread panicked".to_owned()])
                })
                .collect()
        });
        let elapsed = started.elapsed();
        if let Some(first) = failures.first() {
            bail!("{} floor calls failed, the first: {first}", failures.len());
        }
        Ok(calls as f64 / elapsed.as_secs_f64())
    }
}

#[cfg(not(feature = "floor"))]
mod floor {
    //! Built without the `floor` feature, the throughput mode has no floor to compare with.

    use anyhow::Result;

    pub(super) fn compare(facade: f64, calls: usize, _bench: bool) -> Result<()> {
        println!(
            "throughput, {calls} calls of text.chunk (short text), 2 in flight: Locara::run {facade:.0} calls/s; \
             the raw floor is NOT measured (run with `--features floor`)"
        );
        Ok(())
    }
}
