//! The document, image and audio tools in the sandbox next to the same Rust code run natively,
//! on the same input, from one process: the ratio is what the sandbox costs.
//!
//! - native: the tool's library function (`locara_tools_builtin::*`), built by cargo's bench
//!   profile for this machine, reading its input from a file.
//! - sandbox: the same call through Locara's whole pipeline on Wasmtime (verification, schemas,
//!   the file staged from base64, limits, output files collected), warm: the module is compiled
//!   and cached before measuring.
//! - sandbox, fuel not metered: the same, on a host built `with_fuel_metering(false)` (each
//!   call bounded by its deadline only), which shows what metering fuel costs each tool. It is
//!   reported beside the target, not against it: the default host meters.
//! - sandbox, file from the workspace: the default host, the input named by its path in the
//!   call's workspace (read through the sandbox's `/workspace`, as the native side reads it
//!   from its root) instead of sent as base64: what the sandbox costs without the transport
//!   (decoding the base64 and staging the bytes in the call's temp dir). Also reported beside
//!   the target, not against it: a client of `locara serve` sends files as base64.
//!
//! - sandbox, models in the guest (the tools that declare `models.run`): the default host
//!   for an app that does not grant it. `ocr` then runs its models in the sandbox, and
//!   `audio.transcribe` computes its encoder's large matrix products there (with it, the host
//!   computes them, natively, on one thread here). Reported beside the target.
//! - the whole page once more, in a second process where rten keeps its thread pool: `ocr`'s
//!   models run on every core, in the host (`models.run`) and natively, as `locara run ocr`
//!   runs them. The other rows run every model on one thread, natively too.
//!
//! The target is at most 1.5× per tool, and a whole dense page read by `ocr` in the sandbox in
//! at most 5 s. Inputs are real files: Debian's libtasn1 manual (libtasn1-doc), one of its
//! pages rendered whole by poppler's `pdftoppm -r 150` (poppler-utils), matplotlib's sample
//! photograph (PyPI, pinned by sha256), a minute of generated tone and silence, and a sentence
//! spoken by espeak-ng. The model tools (`ocr`, `audio.transcribe`) use the models their
//! manifests pin, installed in the benchmark's home; natively they read the same files. Run
//! with `cargo bench -p locara-bench --bench media`; under `cargo test` (no `--bench`
//! argument) it makes one call of each but the model tools, as a smoke test.

#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{Result, ensure, format_err};
use base64::Engine as _;
use locara_bench::{Ratio, Row, Summary, Target, render};
use locara_facade::{
    BackendKind, FsGrant, Grants, Locara, LocaraConfig, MODELS_RUN, RunRequest, SafetyTier,
};
use locara_test_artifacts::{SHARED_COMPILED_CACHE, TestHome};
use locara_tools_builtin::blob::OutDir;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

/// A tool's native entry point: `(arguments, workspace root, output dir)`.
type Native =
    Box<dyn Fn(Value, &Path, &OutDir) -> Result<Value, locara_tools_builtin::abi::ToolError>>;

/// One measured case: a tool, its input file and the rest of its arguments.
struct Case {
    /// The row's name; the tool's id unless one tool has several rows.
    name: &'static str,
    tool: &'static str,
    file: &'static str,
    arguments: Value,
    native: Native,
    /// What of the output must agree between the sandbox and native runs: all of it, or for
    /// the model tools the text (their confidences and timings are floats computed with
    /// different vector instructions natively and in wasm, equal to a few decimals only).
    compared: fn(&Value) -> Value,
    /// A call of seconds: fewer samples.
    slow: bool,
    /// The tool declares `models.run`: it is also measured from an app that does not grant
    /// it, its models run inside the sandbox.
    host_models: bool,
}

fn everything(output: &Value) -> Value {
    output.clone()
}

fn text(output: &Value) -> Value {
    output["text"].clone()
}

fn main() -> Result<()> {
    // `MEDIA=ocr,audio.transcribe` keeps only those tools' rows.
    let only: Option<Vec<String>> = std::env::var("MEDIA")
        .ok()
        .map(|v| v.split(',').map(str::to_owned).collect());
    let bench = std::env::args().any(|a| a == "--bench");
    // A guest has one thread; rten and candle natively use a pool as wide as the machine.
    // The native side runs on one thread too (their `RTEN_NUM_THREADS` and
    // `RAYON_NUM_THREADS`), so the ratio is the sandbox's cost, not the missing threads: this
    // process is run again with both set. Under `--bench` the whole page is then read once
    // more in a process that leaves rten its pool, as `locara run ocr` does: the host runs
    // `ocr`'s models (`models.run`) on every core, natively too.
    let Ok(mode) = std::env::var(MODE) else {
        let run = |mode: &str| -> Result<()> {
            let mut child = Command::new(std::env::current_exe()?);
            child.args(std::env::args_os().skip(1)).env(MODE, mode);
            if mode == SINGLE_THREADED {
                child
                    .env("RTEN_NUM_THREADS", "1")
                    .env("RAYON_NUM_THREADS", "1");
            } else {
                child.env("MEDIA", "ocr");
            }
            let status = child.status()?;
            ensure!(status.success(), "the {mode} run failed: {status}");
            Ok(())
        };
        run(SINGLE_THREADED)?;
        // The whole page again as `locara run ocr` reads it: the models on rten's pool, as
        // wide as the machine (the guest's own work stays on its one thread).
        if bench && only.as_ref().is_none_or(|o| o.iter().any(|t| t == "ocr")) {
            run(POOLED)?;
        }
        return Ok(());
    };
    let pooled = mode == POOLED;
    let inputs = tempfile::tempdir()?;
    // Where the native calls write their files: one directory for the run, each call
    // overwriting the files of the one before. A directory made and removed per call would
    // charge the native side a cost the sandbox no longer has (its temp dir stays in memory),
    // and one that grows with the disk's churn (ext4 skipping recently deleted inodes).
    let native_out = tempfile::tempdir()?;
    let manual = Path::new("/usr/share/doc/libtasn1-doc/libtasn1.pdf");
    std::fs::copy(manual, inputs.path().join("manual.pdf")).map_err(|e| {
        format_err!("the libtasn1 manual (Debian's libtasn1-doc, `.ci/test-deps`): {e}")
    })?;
    std::fs::write(inputs.path().join("photo.jpg"), photo()?)?;
    std::fs::write(inputs.path().join("minute.wav"), minute_of_tones())?;
    std::fs::write(inputs.path().join("page.png"), whole_page(manual, PAGE)?)?;
    std::fs::write(inputs.path().join("speech.wav"), speech(SENTENCE)?)?;

    let home = TestHome::new();
    home.install_models("ocr");
    home.install_models("audio.transcribe");
    let ocr_models = models_of(&home, "ocr")?;
    let whisper_models = models_of(&home, "audio.transcribe")?;

    let mut cases = [
        Case {
            name: "pdf.extract-text",
            tool: "pdf.extract-text",
            file: "manual.pdf",
            arguments: json!({"pages": "1-8"}),
            native: Box::new(locara_tools_builtin::pdf_extract_text),
            compared: everything,
            slow: false,
            host_models: false,
        },
        Case {
            name: "pdf.split",
            tool: "pdf.split",
            file: "manual.pdf",
            arguments: json!({"every": 9}),
            native: Box::new(locara_tools_builtin::pdf_split),
            compared: everything,
            slow: false,
            host_models: false,
        },
        Case {
            name: "image.resize",
            tool: "image.resize",
            file: "photo.jpg",
            arguments: json!({"width": 256, "height": 256, "format": "png"}),
            native: Box::new(locara_tools_builtin::image_resize),
            compared: everything,
            slow: false,
            host_models: false,
        },
        Case {
            name: "image.format-convert",
            tool: "image.format-convert",
            file: "photo.jpg",
            arguments: json!({"format": "webp"}),
            native: Box::new(locara_tools_builtin::image_format_convert),
            compared: everything,
            slow: false,
            host_models: false,
        },
        Case {
            name: "audio.detect-silence",
            tool: "audio.detect-silence",
            file: "minute.wav",
            arguments: json!({"min_silence_ms": 300}),
            native: Box::new(locara_tools_builtin::audio_detect_silence),
            compared: everything,
            slow: false,
            host_models: false,
        },
        Case {
            name: "ocr whole page",
            tool: "ocr",
            file: "page.png",
            arguments: json!({}),
            native: Box::new(move |arguments, root, _| {
                locara_tools_builtin::ocr(arguments, root, &ocr_models)
            }),
            compared: text,
            slow: true,
            host_models: true,
        },
        Case {
            name: "audio.transcribe",
            tool: "audio.transcribe",
            file: "speech.wav",
            arguments: json!({}),
            native: Box::new(move |arguments, root, _| {
                locara_tools_builtin::audio_transcribe::run(arguments, root, &whisper_models)
            }),
            compared: text,
            slow: true,
            host_models: true,
        },
    ];

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // The app grants `models.run`, as the CLI's does: `ocr` has the host run its models.
    // It also grants the inputs' directory, read-only: the rows that read the input from the
    // call's workspace.
    let grants = Grants::new()
        .with_max_safety_tier(SafetyTier::SideEffecting)
        .with_service(MODELS_RUN)
        .with_fs(FsGrant::new(inputs.path()));
    let locara = Locara::new(
        &LocaraConfig::new(home.path())
            .with_engine(BackendKind::Wasmtime)
            .with_compiled_cache(SHARED_COMPILED_CACHE)
            .with_grants(grants.clone()),
    )?;
    // The same host without fuel metering (`with_fuel_metering(false)`): what the meter costs.
    let unmetered = Locara::new(
        &LocaraConfig::new(home.path())
            .with_engine(BackendKind::Wasmtime)
            .with_compiled_cache(SHARED_COMPILED_CACHE)
            .with_fuel_metering(false)
            .with_grants(grants),
    )?;
    // An app that does not grant `models.run`: `ocr` runs its models inside the sandbox.
    let models_in_guest = Locara::new(
        &LocaraConfig::new(home.path())
            .with_engine(BackendKind::Wasmtime)
            .with_compiled_cache(SHARED_COMPILED_CACHE),
    )?;
    let mut rows = Vec::new();
    let mut ratios = Vec::new();
    let mut page_p50 = None;
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    for case in cases
        .iter_mut()
        .filter(|c| only.as_ref().is_none_or(|o| o.iter().any(|t| t == c.tool)))
    {
        if pooled && case.tool == "ocr" {
            // The models in the guest run on its one thread whatever the host has.
            case.host_models = false;
            case.name = "ocr whole page, models on rten's pool";
        }
        let (warmup, samples) = match (bench, case.slow) {
            (false, false) => (0, 1),
            (false, true) => {
                // A debug build runs the models natively for minutes; the tests cover them.
                println!(
                    "{}: skipped under `cargo test` (run `cargo bench`)",
                    case.name
                );
                continue;
            }
            // Calls of milliseconds: 61 samples a row, interleaved, so that a p50 is not moved
            // by a few calls that met a busy moment (with 15, the same build's ratios moved by
            // ±0.1 between runs here).
            (true, false) => (5, 61),
            // Calls of seconds: 5 samples (with 3, one slow call moved audio.transcribe's
            // ratio from 1.35× to 1.50× between two runs of one build).
            (true, true) => (0, 5),
        };
        let bytes = std::fs::read(inputs.path().join(case.file))?;
        let mut sandboxed = case.arguments.clone();
        sandboxed["source"] =
            json!({"base64": base64::engine::general_purpose::STANDARD.encode(&bytes)});
        let mut native_args = case.arguments.clone();
        native_args["source"] = json!({"path": case.file});
        let by_path = Some(inputs.path());

        // Compile (or load from the cache) before measuring, and check both agree.
        let in_sandbox = sandbox_call(&rt, &locara, case.tool, &sandboxed, None)?;
        let natively = native_call(case, &native_args, inputs.path(), native_out.path())?;
        let not_metered = sandbox_call(&rt, &unmetered, case.tool, &sandboxed, None)?;
        let from_workspace = sandbox_call(&rt, &locara, case.tool, &native_args, by_path)?;
        let guest_models = case
            .host_models
            .then(|| sandbox_call(&rt, &models_in_guest, case.tool, &sandboxed, None))
            .transpose()?;
        for (side, output) in [
            ("sandbox", &in_sandbox),
            ("unmetered sandbox", &not_metered),
            ("workspace-file sandbox", &from_workspace),
        ]
        .into_iter()
        .chain(
            guest_models
                .as_ref()
                .map(|o| ("models-in-guest sandbox", o)),
        ) {
            ensure!(
                (case.compared)(output) == (case.compared)(&natively),
                "{}: the {side} and native outputs differ:\n{output}\n{natively}",
                case.name
            );
        }
        for _ in 0..warmup {
            sandbox_call(&rt, &locara, case.tool, &sandboxed, None)?;
            sandbox_call(&rt, &unmetered, case.tool, &sandboxed, None)?;
            sandbox_call(&rt, &locara, case.tool, &native_args, by_path)?;
            native_call(case, &native_args, inputs.path(), native_out.path())?;
        }
        let (mut sandbox_times, mut unmetered_times, mut native_times) =
            (Vec::new(), Vec::new(), Vec::new());
        let (mut guest_times, mut workspace_times) = (Vec::new(), Vec::new());
        // Each request (and the native call's arguments) is built before its clock starts, as
        // a caller builds its request once: a staged file's base64 text is megabytes, and
        // copying it is the benchmark's work, not the call's.
        for _ in 0..samples {
            let measured = request(case.tool, &sandboxed, None);
            let started = Instant::now();
            run(&rt, &locara, measured)?;
            sandbox_times.push(started.elapsed());
            let measured = request(case.tool, &sandboxed, None);
            let started = Instant::now();
            run(&rt, &unmetered, measured)?;
            unmetered_times.push(started.elapsed());
            let measured = request(case.tool, &native_args, by_path);
            let started = Instant::now();
            run(&rt, &locara, measured)?;
            workspace_times.push(started.elapsed());
            if case.host_models {
                let measured = request(case.tool, &sandboxed, None);
                let started = Instant::now();
                run(&rt, &models_in_guest, measured)?;
                guest_times.push(started.elapsed());
            }
            let arguments = native_args.clone();
            let started = Instant::now();
            native_run(case, arguments, inputs.path(), native_out.path())?;
            native_times.push(started.elapsed());
        }
        let sandbox = row(format!("{} sandbox (wasmtime)", case.name), &sandbox_times);
        let unmetered = row(
            format!("{} sandbox (wasmtime, fuel not metered)", case.name),
            &unmetered_times,
        );
        let workspace = row(
            format!("{} sandbox (wasmtime, file from the workspace)", case.name),
            &workspace_times,
        );
        let native = row(format!("{} native", case.name), &native_times);
        if case.tool == "ocr" {
            page_p50 = Some(sandbox.summary.p50);
        }
        ratios.push(Ratio::of(&sandbox, &native, Some(Target::AtMost(1.5))));
        ratios.push(Ratio::of(&unmetered, &native, None));
        ratios.push(Ratio::of(&workspace, &native, None));
        rows.push(sandbox);
        rows.push(unmetered);
        rows.push(workspace);
        if case.host_models {
            let in_guest = row(
                format!("{} sandbox (wasmtime, models in the guest)", case.name),
                &guest_times,
            );
            ratios.push(Ratio::of(&in_guest, &native, None));
            rows.push(in_guest);
        }
        rows.push(native);
    }
    print!("{}", render(&rows, &ratios));
    if let Some(p50) = page_p50 {
        let met = p50 <= Duration::from_secs(5);
        let models = if pooled {
            format!("the models on rten's pool of {threads} threads, as `locara run`")
        } else {
            "every model on one thread".to_owned()
        };
        println!(
            "ocr whole page (libtasn1 manual p. {PAGE}, 150 dpi; {models}) sandbox (wasmtime) p50 = {:.2} s  target ≤ 5 s: {}",
            p50.as_secs_f64(),
            if met { "met" } else { "NOT met" }
        );
    }
    Ok(())
}

/// Set in the re-run processes that measure (see `main`), to one of the two modes below.
const MODE: &str = "LOCARA_MEDIA_BENCH_MODE";
/// Every row, rten and candle on one thread (natively too).
const SINGLE_THREADED: &str = "single-threaded";
/// The whole page only, its models run by the host on rten's pool (`RTEN_NUM_THREADS` unset).
const POOLED: &str = "pooled";

/// The manual's page read whole by `ocr`: a dense page of running text (an appendix).
const PAGE: u32 = 28;

/// What espeak-ng says for `audio.transcribe`.
const SENTENCE: &str = "The quick brown fox jumps over the lazy dog, and the sandbox measures how long it takes to hear it.";

/// Page `page` of `pdf` rendered whole at 150 dpi by poppler's `pdftoppm`, as PNG.
fn whole_page(pdf: &Path, page: u32) -> Result<Vec<u8>> {
    let dir = tempfile::tempdir()?;
    let status = Command::new("pdftoppm")
        .args(["-png", "-singlefile", "-r", "150"])
        .args(["-f", &page.to_string(), "-l", &page.to_string()])
        .arg(pdf)
        .arg(dir.path().join("page"))
        .status()
        .map_err(|e| format_err!("pdftoppm (Debian's poppler-utils, `.ci/test-deps`): {e}"))?;
    ensure!(status.success(), "pdftoppm failed: {status}");
    Ok(std::fs::read(dir.path().join("page.png"))?)
}

/// `sentence` spoken by espeak-ng, as a WAV file.
fn speech(sentence: &str) -> Result<Vec<u8>> {
    let dir = tempfile::tempdir()?;
    let wav = dir.path().join("speech.wav");
    let status = Command::new("espeak-ng")
        .arg("-w")
        .arg(&wav)
        .arg(sentence)
        .status()
        .map_err(|e| format_err!("espeak-ng (Debian's espeak-ng, `.ci/test-deps`): {e}"))?;
    ensure!(status.success(), "espeak-ng failed: {status}");
    Ok(std::fs::read(wav)?)
}

/// The directory of `tool`'s verified models in `home`, as the sandbox's `/models` sees them.
fn models_of(home: &TestHome, tool: &str) -> Result<PathBuf> {
    let registry = home.registry();
    let listing = registry.list()?;
    let manifest = &listing
        .tools
        .iter()
        .find(|t| t.id.as_str() == tool)
        .ok_or_else(|| format_err!("{tool} is not published"))?
        .manifest;
    registry
        .models()
        .view(manifest)?
        .ok_or_else(|| format_err!("{tool} has no models"))
}

fn row(name: String, samples: &[Duration]) -> Row {
    Row {
        name,
        summary: Summary::of(samples),
    }
}

/// One call through Locara, with `workspace` as its `/workspace` if given; its output, which
/// must be a success.
fn sandbox_call(
    rt: &Runtime,
    locara: &Locara,
    tool: &str,
    arguments: &Value,
    workspace: Option<&Path>,
) -> Result<Value> {
    run(rt, locara, request(tool, arguments, workspace))
}

/// A request to call `tool` with `arguments`, in `workspace` if given.
fn request(tool: &str, arguments: &Value, workspace: Option<&Path>) -> RunRequest {
    let request = RunRequest::new(tool, arguments.clone());
    match workspace {
        Some(dir) => request.with_workspace(dir),
        None => request,
    }
}

/// One call through `Locara::run`: its output, or an error if the tool failed.
fn run(rt: &Runtime, locara: &Locara, request: RunRequest) -> Result<Value> {
    let tool = request.tool.clone();
    let response = rt.block_on(locara.run(request))?;
    response
        .output
        .ok_or_else(|| format_err!("{tool} failed in the sandbox: {:?}", response.error))
}

/// One native call, writing its files into `out` (overwriting those of the call before).
fn native_call(case: &Case, arguments: &Value, root: &Path, out: &Path) -> Result<Value> {
    native_run(case, arguments.clone(), root, out)
}

/// [`native_call`] with arguments of its own.
fn native_run(case: &Case, arguments: Value, root: &Path, out: &Path) -> Result<Value> {
    (case.native)(arguments, root, &OutDir::at(out))
        .map_err(|e| format_err!("{} failed natively: {e}", case.tool))
}

/// Matplotlib's sample photograph (512×600 JPEG), from its PyPI wheel, pinned by sha256.
fn photo() -> Result<Vec<u8>> {
    Ok(locara_upstream::fetch::BlobCache::user_default().fetch(
        &locara_upstream::fetch::PinnedFile {
            package: "matplotlib".to_owned(),
            version: "3.9.2".to_owned(),
            path: "matplotlib/mpl-data/sample_data/grace_hopper.jpg".to_owned(),
            sha256: "a8ca6d734765703b09728ab47fe59f473d93ae3967fc24c7c0288c3c7adb7130".to_owned(),
        },
    )?)
}

/// 60 s of 44.1 kHz mono 16-bit PCM: a second of 440 Hz tone, then a second of silence.
fn minute_of_tones() -> Vec<u8> {
    const RATE: u32 = 44_100;
    let samples: Vec<i16> = (0..RATE * 60)
        .map(|i| {
            if (i / RATE).is_multiple_of(2) {
                let t = f64::from(i) / f64::from(RATE);
                (0.5 * (2.0 * std::f64::consts::PI * 440.0 * t).sin() * 32767.0) as i16
            } else {
                0
            }
        })
        .collect();
    let data_len = (samples.len() * 2) as u32;
    let mut wav = Vec::with_capacity(44 + data_len as usize);
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + data_len).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&RATE.to_le_bytes());
    wav.extend_from_slice(&(RATE * 2).to_le_bytes());
    wav.extend_from_slice(&2u16.to_le_bytes());
    wav.extend_from_slice(&16u16.to_le_bytes());
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&data_len.to_le_bytes());
    for sample in samples {
        wav.extend_from_slice(&sample.to_le_bytes());
    }
    wav
}
