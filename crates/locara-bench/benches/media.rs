//! The document, image and audio tools in the sandbox next to the same Rust code run natively,
//! on the same input, from one process: the ratio is what the sandbox costs.
//!
//! - native: the tool's library function (`locara_tools_builtin::*`), built by cargo's bench
//!   profile for this machine, reading its input from a file.
//! - sandbox: the same call through Locara's whole pipeline on Wasmtime (verification, schemas,
//!   the file staged from base64, limits, output files collected), warm: the module is compiled
//!   and cached before measuring.
//!
//! The target is at most 2× per tool. Inputs are real files: Debian's libtasn1 manual
//! (libtasn1-doc), matplotlib's sample photograph (PyPI, pinned by sha256), and a minute of
//! generated tone and silence. Run with `cargo bench -p locara-bench --bench media`; under
//! `cargo test` (no `--bench` argument) it makes one call of each, as a smoke test.

#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::{
    path::Path,
    time::{Duration, Instant},
};

use anyhow::{Result, ensure, format_err};
use base64::Engine as _;
use locara_bench::{Ratio, Row, Summary, Target, render};
use locara_facade::{BackendKind, Locara, LocaraConfig, RunRequest};
use locara_test_artifacts::{SHARED_COMPILED_CACHE, TestHome};
use locara_tools_builtin::blob::OutDir;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

/// A tool's native entry point: `(arguments, workspace root, output dir)`.
type Native = fn(Value, &Path, &OutDir) -> Result<Value, locara_tools_builtin::abi::ToolError>;

/// One measured case: a tool, its input file and the rest of its arguments.
struct Case {
    tool: &'static str,
    file: &'static str,
    arguments: Value,
    native: Native,
}

fn main() -> Result<()> {
    let bench = std::env::args().any(|a| a == "--bench");
    let (warmup, samples) = if bench { (2, 15) } else { (0, 1) };
    let inputs = tempfile::tempdir()?;
    std::fs::copy(
        "/usr/share/doc/libtasn1-doc/libtasn1.pdf",
        inputs.path().join("manual.pdf"),
    )
    .map_err(|e| {
        format_err!("the libtasn1 manual (Debian's libtasn1-doc, `.ci/test-deps`): {e}")
    })?;
    std::fs::write(inputs.path().join("photo.jpg"), photo()?)?;
    std::fs::write(inputs.path().join("minute.wav"), minute_of_tones())?;

    let cases = [
        Case {
            tool: "pdf.extract-text",
            file: "manual.pdf",
            arguments: json!({"pages": "1-8"}),
            native: locara_tools_builtin::pdf_extract_text,
        },
        Case {
            tool: "pdf.split",
            file: "manual.pdf",
            arguments: json!({"every": 9}),
            native: locara_tools_builtin::pdf_split,
        },
        Case {
            tool: "image.resize",
            file: "photo.jpg",
            arguments: json!({"width": 256, "height": 256, "format": "png"}),
            native: locara_tools_builtin::image_resize,
        },
        Case {
            tool: "image.format-convert",
            file: "photo.jpg",
            arguments: json!({"format": "webp"}),
            native: locara_tools_builtin::image_format_convert,
        },
        Case {
            tool: "audio.detect-silence",
            file: "minute.wav",
            arguments: json!({"min_silence_ms": 300}),
            native: locara_tools_builtin::audio_detect_silence,
        },
    ];

    let home = TestHome::new();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let locara = Locara::new(
        &LocaraConfig::new(home.path())
            .with_engine(BackendKind::Wasmtime)
            .with_compiled_cache(SHARED_COMPILED_CACHE),
    )?;
    let mut rows = Vec::new();
    let mut ratios = Vec::new();
    for case in &cases {
        let bytes = std::fs::read(inputs.path().join(case.file))?;
        let mut sandboxed = case.arguments.clone();
        sandboxed["source"] =
            json!({"base64": base64::engine::general_purpose::STANDARD.encode(&bytes)});
        let mut native_args = case.arguments.clone();
        native_args["source"] = json!({"path": case.file});

        // Compile (or load from the cache) before measuring, and check both agree.
        let in_sandbox = sandbox_call(&rt, &locara, case.tool, &sandboxed)?;
        let natively = native_call(case, &native_args, inputs.path())?;
        ensure!(
            in_sandbox == natively,
            "{}: the sandbox and native outputs differ:\n{in_sandbox}\n{natively}",
            case.tool
        );
        for _ in 0..warmup {
            sandbox_call(&rt, &locara, case.tool, &sandboxed)?;
            native_call(case, &native_args, inputs.path())?;
        }
        let (mut sandbox_times, mut native_times) = (Vec::new(), Vec::new());
        for _ in 0..samples {
            let started = Instant::now();
            sandbox_call(&rt, &locara, case.tool, &sandboxed)?;
            sandbox_times.push(started.elapsed());
            let started = Instant::now();
            native_call(case, &native_args, inputs.path())?;
            native_times.push(started.elapsed());
        }
        let sandbox = row(format!("{} sandbox (wasmtime)", case.tool), &sandbox_times);
        let native = row(format!("{} native", case.tool), &native_times);
        ratios.push(Ratio::of(&sandbox, &native, Some(Target::AtMost(2.0))));
        rows.push(sandbox);
        rows.push(native);
    }
    print!("{}", render(&rows, &ratios));
    Ok(())
}

fn row(name: String, samples: &[Duration]) -> Row {
    Row {
        name,
        summary: Summary::of(samples),
    }
}

/// One call through Locara; its output, which must be a success.
fn sandbox_call(rt: &Runtime, locara: &Locara, tool: &str, arguments: &Value) -> Result<Value> {
    let response = rt.block_on(locara.run(RunRequest::new(tool, arguments.clone())))?;
    response
        .output
        .ok_or_else(|| format_err!("{tool} failed in the sandbox: {:?}", response.error))
}

/// One native call, writing its files into a fresh directory like the sandbox's `/tmp/out`.
fn native_call(case: &Case, arguments: &Value, root: &Path) -> Result<Value> {
    let out = tempfile::tempdir()?;
    (case.native)(arguments.clone(), root, &OutDir::at(out.path()))
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
