//! TEMPORARY: times the stages of one call separately, for profiling.

#![allow(clippy::print_stdout, missing_docs, reason = "profiling")]

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use locara_bench::{Row, Summary, render};
use locara_facade::{BackendKind, Grants, Locara, LocaraConfig, RunRequest, SafetyTier};
use locara_sandbox::{Capabilities, Limits, Sandbox, SandboxConfig};
use locara_test_artifacts::{MANIFESTS_DIR, TOOLS, TestHome};
use serde_json::{Value, json};
use tower::ServiceExt;

const TEXT: &str = "Locara runs each tool call in a fresh WebAssembly instance. \
The instance sees only its stdin, its stdout and a temp dir, and it stops at its limits.\n\n\
Chunking this text is cheap, so what the benchmark measures is the cost around the call: \
resolving the tool, checking its schemas, creating the instance and reading the output.";

fn time(n: usize, mut f: impl FnMut()) -> Vec<Duration> {
    for _ in 0..n / 10 {
        f();
    }
    (0..n)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect()
}

fn main() {
    let focus = std::env::var("FOCUS").ok();
    let n: usize = std::env::var("N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let want = |name: &str| focus.as_deref().is_none_or(|f| f == name);
    let args = json!({"text": TEXT, "max_chars": 80});
    let input = serde_json::to_vec(&args).unwrap();
    let home = TestHome::new();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (_, wasm_path, _) = TOOLS.iter().find(|t| t.0 == "text.chunk").unwrap();
    let wasm = std::fs::read(wasm_path).unwrap();
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{MANIFESTS_DIR}/text.chunk.json")).unwrap(),
    )
    .unwrap();
    let limits = Limits {
        memory_bytes: 128 << 20,
        wall_time: Duration::from_secs(10),
        fuel: 5_000_000_000,
        output_bytes: 32 << 20,
        max_fds: 8,
    };
    let mut rows = Vec::new();
    let mut push = |name: &str, s: Vec<Duration>| {
        rows.push(Row {
            name: name.to_owned(),
            summary: Summary::of(&s),
        })
    };

    if want("facade") {
        let locara = Locara::new(&LocaraConfig::new(home.path())).unwrap();
        let s = rt.block_on(async {
            let mut out = Vec::new();
            for i in 0..n + 50 {
                let req = RunRequest::new("text.chunk", args.clone());
                let t = Instant::now();
                let r = locara.run(req).await.unwrap();
                let d = t.elapsed();
                assert!(r.ok);
                if i >= 50 {
                    out.push(d);
                }
            }
            out
        });
        push("facade Locara::run", s);
    }
    if want("exec") {
        let mut sc = SandboxConfig::new(BackendKind::Wasmtime);
        sc.cache_dir(home.path().join("cache/compiled"));
        let sandbox = Sandbox::new(&sc).unwrap();
        let cfg = locara_exec::ExecConfig::new(
            Arc::new(home.registry()),
            sandbox,
            Grants::new().with_max_safety_tier(SafetyTier::SideEffecting),
        );
        let p = locara_exec::pipeline(&cfg);
        let s = rt.block_on(async {
            let mut out = Vec::new();
            for i in 0..n + 50 {
                let call = locara_exec::ToolCall::new("text.chunk", args.clone());
                let t = Instant::now();
                let r = p.clone().oneshot(call).await.unwrap();
                let d = t.elapsed();
                assert!(r.failure.is_none());
                if i >= 50 {
                    out.push(d);
                }
            }
            out
        });
        push("exec pipeline oneshot", s);
    }
    for (name, pooling, temp) in [
        ("sandbox", true, true),
        ("sandbox-notemp", true, false),
        ("sandbox-nopool", false, true),
    ] {
        if !want(name) {
            continue;
        }
        let mut sc = SandboxConfig::new(BackendKind::Wasmtime);
        sc.pooling(pooling);
        let compiled = Sandbox::new(&sc).unwrap().compile(&wasm, None).unwrap();
        let caps = Capabilities::new()
            .program_name("text.chunk")
            .with_temp_dir(temp);
        push(
            &format!("{name} Compiled::run"),
            time(n, || {
                let o = compiled.run(&input, &limits, &caps).unwrap();
                assert!(!o.stdout.is_empty());
            }),
        );
    }
    if want("sandbox-wasmi") {
        let compiled = Sandbox::new(&SandboxConfig::new(BackendKind::Wasmi))
            .unwrap()
            .compile(&wasm, None)
            .unwrap();
        let caps = Capabilities::new().program_name("text.chunk");
        push(
            "sandbox wasmi Compiled::run",
            time(n / 4, || {
                compiled.run(&input, &limits, &caps).unwrap();
            }),
        );
    }
    if want("spawn_blocking") {
        let s = rt.block_on(async {
            let mut out = Vec::new();
            for _ in 0..n {
                let t = Instant::now();
                tokio::task::spawn_blocking(|| ()).await.unwrap();
                out.push(t.elapsed());
            }
            out
        });
        push("tokio spawn_blocking hop", s);
        let s = rt.block_on(async {
            let mut out = Vec::new();
            for _ in 0..n {
                let t = Instant::now();
                tokio::task::spawn(async {}).await.unwrap();
                out.push(t.elapsed());
            }
            out
        });
        push("tokio spawn hop", s);
    }
    if want("tempdir") {
        let root = std::env::temp_dir();
        push(
            "tempdir create+open+remove",
            time(n, || {
                let t = tempfile::Builder::new()
                    .prefix("locara-call-")
                    .tempdir_in(&root)
                    .unwrap();
                let d = cap_std::fs::Dir::open_ambient_dir(t.path(), cap_std::ambient_authority())
                    .unwrap();
                drop(d);
                t.close().unwrap();
            }),
        );
    }
    let out_bytes = {
        let mut sc = SandboxConfig::new(BackendKind::Wasmtime);
        sc.pooling(true);
        Sandbox::new(&sc)
            .unwrap()
            .compile(&wasm, None)
            .unwrap()
            .run(&input, &limits, &Capabilities::new())
            .unwrap()
            .stdout
    };
    let output: Value = serde_json::from_slice(&out_bytes).unwrap();
    if want("schema") {
        let vin = jsonschema::validator_for(&manifest["input_schema"]).unwrap();
        let vout = jsonschema::validator_for(&manifest["output_schema"]).unwrap();
        push(
            "schema: validate input",
            time(n, || {
                assert_eq!(vin.iter_errors(&args).take(8).count(), 0);
            }),
        );
        push(
            "schema: validate output",
            time(n, || {
                assert_eq!(vout.iter_errors(&output).take(8).count(), 0);
            }),
        );
        push(
            "schema: compile output schema",
            time(n / 10, || {
                jsonschema::validator_for(&manifest["output_schema"]).unwrap();
            }),
        );
    }
    if want("json") {
        push(
            "json: args to_vec",
            time(n, || {
                serde_json::to_vec(&args).unwrap();
            }),
        );
        push(
            "json: output from_slice",
            time(n, || {
                serde_json::from_slice::<Value>(&out_bytes).unwrap();
            }),
        );
        push(
            "json: output to_vec (cap size)",
            time(n, || {
                serde_json::to_vec(&output).unwrap();
            }),
        );
        push(
            "json: output_schema clone",
            time(n, || {
                std::hint::black_box(manifest["output_schema"].clone());
            }),
        );
    }
    print!("{}", render(&rows, &[]));
}
