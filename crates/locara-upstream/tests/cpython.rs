//! `code-exec.python` end to end on the real CPython module: built from source, pre-initialized
//! with the driver, then run through `locara_sandbox` on Wasmtime (and once on wasmi).
//!
//! The module is built from the sources the tool's manifest pins (Debian's CPython and zlib,
//! SQLite from crates.io), once per machine, into the user's blob cache: the first run takes
//! about 4 minutes.
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
use locara_upstream::{cpython, fetch::BlobCache};
use serde_json::{Value, json};

const DRIVER: &str = include_str!("../../locara-tools-builtin/drivers/python.py");
const MANIFEST: &str = include_str!("../../locara-tools-builtin/manifests/code-exec.python.json");

fn built() -> &'static cpython::Built {
    static BUILT: OnceLock<cpython::Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let manifest: Value = serde_json::from_str(MANIFEST).expect("the manifest is JSON");
        let sources = cpython::sources(&manifest["interpreter"]["upstream"])
            .unwrap_or_else(|e| panic!("the manifest's sources: {e}"));
        cpython::build(&BlobCache::user_default(), &sources)
            .unwrap_or_else(|e| panic!("building CPython: {e}"))
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
        let snapshot = cpython::preinitialize(wasmtime(), built(), DRIVER)
            .unwrap_or_else(|e| panic!("pre-initialization failed: {e}"));
        eprintln!(
            "pre-initialized in {:.2?}: {} bytes (module {}, standard library {})",
            started.elapsed(),
            snapshot.len(),
            built().module.len(),
            built().stdlib.len()
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
    let error = cpython::preinitialize(wasmtime(), built(), "raise ValueError('boom')")
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
    let built = cpython::Built {
        module,
        stdlib: Vec::new(),
    };
    let error = cpython::preinitialize(wasmtime(), &built, DRIVER).expect_err("not CPython");
    assert!(
        matches!(error, cpython::PreinitError::UnknownModule { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("locara.preinit"), "{error}");
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
fn the_c_stack_is_8_mib_first_in_memory() {
    // The init returned, so the snapshot's stack pointer is back at the stack's top; below it
    // there is only the stack, and below the stack nothing: an overflow traps.
    assert_eq!(stack_pointer(snapshot()), 8 << 20);
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

/// Recursion through C ends with CPython's RecursionError at the default recursion limit (the
/// sandbox gives Wasmtime's wasm code 4 MiB of native stack, about twice what 1000 levels
/// take); with the limit raised out of the way, it runs out of the engine's stack (the `stack`
/// limit) or of the C stack in linear memory, a trap (the C stack is first in memory: an
/// overflow reads or writes below address 0, never the heap), unless it recurses through
/// Python functions only. Either way the next call works, on a fresh instance.
#[test]
fn c_recursion_ends_with_recursion_error_or_a_trap() {
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
    let limits = Limits {
        fuel: 20_000_000_000,
        ..limits()
    };
    for case in cases {
        let code = format!(
            "try:\n    exec({case:?}, {{}})\n    outcome = 'returned'\nexcept RecursionError as error:\n    outcome = type(error).__name__\noutcome"
        );
        let outcome = run_with(
            compiled(),
            &json!({ "code": code }),
            &limits,
            &Capabilities::new(),
        );
        assert_eq!(result(&outcome)["result"], "'RecursionError'", "{case}");
        let code = format!("import sys\nsys.setrecursionlimit(1000000)\nexec({case:?}, {{}})");
        let outcome = run_with(
            compiled(),
            &json!({ "code": code }),
            &limits,
            &Capabilities::new(),
        );
        eprintln!("{case:?} with no recursion limit: {:?}", outcome.status);
        assert!(
            // `copy.deepcopy` recurses through Python functions only, whose frames CPython 3.11
            // keeps off the C stack: with no limit it simply finishes.
            matches!(
                outcome.status,
                RunStatus::Trapped(_) | RunStatus::LimitExceeded(LimitKind::Stack)
            ) || (case.starts_with("import copy") && outcome.status == RunStatus::Exited(0)),
            "{case}: {:?} {}",
            outcome.status,
            stderr(&outcome)
        );
        assert_eq!(result(&run(json!({"code": "print(1+1)"})))["stdout"], "2\n");
    }
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
    // Recursion through C, 60 levels deep.
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

/// Latency of `print(1+1)` through `Compiled::run` with pooling (the default), on Wasmtime and
/// on wasmi. Run with `--release --ignored --nocapture`.
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
}
