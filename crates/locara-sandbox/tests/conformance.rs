//! The sandbox conformance suite: every case runs once per engine, against the adversarial
//! probe guest (`crates/locara-test-guests`), built from source by `locara-test-artifacts`.

mod common;

use common::{backend_test, files_of};

use std::{
    path::Path,
    sync::{Arc, OnceLock},
    time::{Duration, Instant},
};

use locara_sandbox::{
    BackendKind, CancelToken, Capabilities, Compiled, DirPerms, Enforcement, Error, LimitKind,
    Limits, MadeBytes, RunOutcome, RunStatus, Sandbox, SandboxConfig,
};
use serde_json::{Value, json};

fn sandbox(kind: BackendKind) -> &'static Sandbox {
    static WASMTIME: OnceLock<Sandbox> = OnceLock::new();
    static WASMI: OnceLock<Sandbox> = OnceLock::new();
    let cell = match kind {
        BackendKind::Wasmtime => &WASMTIME,
        _ => &WASMI,
    };
    cell.get_or_init(|| Sandbox::new(&SandboxConfig::new(kind)).expect("engine starts"))
}

fn probe(kind: BackendKind) -> &'static Compiled {
    static WASMTIME: OnceLock<Compiled> = OnceLock::new();
    static WASMI: OnceLock<Compiled> = OnceLock::new();
    let cell = match kind {
        BackendKind::Wasmtime => &WASMTIME,
        _ => &WASMI,
    };
    cell.get_or_init(|| {
        let wasm = std::fs::read(locara_test_artifacts::PROBE).expect("the probe guest was built");
        sandbox(kind)
            .compile(&wasm, None)
            .expect("the probe compiles")
    })
}

fn run_with(kind: BackendKind, input: Value, limits: &Limits, caps: &Capabilities) -> RunOutcome {
    probe(kind)
        .run(input.to_string().as_bytes(), limits, caps)
        .expect("the call starts")
}

fn run(kind: BackendKind, input: Value) -> RunOutcome {
    run_with(kind, input, &Limits::default(), &Capabilities::new())
}

fn stdout_json(outcome: &RunOutcome) -> Value {
    serde_json::from_slice(&outcome.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {:?}; stderr: {}",
            outcome.status,
            String::from_utf8_lossy(&outcome.stderr)
        )
    })
}

/// One call of `module` with `input`, the default limits and no capabilities.
fn run_on(module: &Compiled, input: Value) -> RunOutcome {
    module
        .run(
            input.to_string().as_bytes(),
            &Limits::default(),
            &Capabilities::new(),
        )
        .expect("the call starts")
}

/// Whether a call of `module` (the probe) can read the file at `path`.
fn reads(module: &Compiled, path: &str) -> bool {
    let outcome = run_on(module, json!({"op": "read", "path": path}));
    stdout_json(&outcome)["ok"] == json!(true)
}

/// A temp root whose emptiness proves each call removed its temp dir.
fn isolated(kind: BackendKind, temp_root: &Path) -> Compiled {
    let mut config = SandboxConfig::new(kind);
    config.temp_root(temp_root);
    let sandbox = Sandbox::new(&config).expect("engine starts");
    sandbox
        .compile(&std::fs::read(locara_test_artifacts::PROBE).unwrap(), None)
        .unwrap()
}

backend_test!(normal_call_echoes_its_input, |kind| {
    let outcome = run(kind, json!({"op": "echo", "n": [1, 2, 3], "s": "héllo"}));
    assert_eq!(outcome.status, RunStatus::Exited(0));
    assert_eq!(
        stdout_json(&outcome),
        json!({"echo": {"op": "echo", "n": [1, 2, 3], "s": "héllo"}})
    );
    assert!(outcome.fuel_consumed > 0);
});

backend_test!(infinite_loop_is_stopped_by_fuel, |kind| {
    let limits = Limits {
        fuel: 20_000_000,
        wall_time: Duration::from_secs(60),
        ..Limits::default()
    };
    let outcome = run_with(kind, json!({"op": "spin"}), &limits, &Capabilities::new());
    assert_eq!(outcome.status, RunStatus::LimitExceeded(LimitKind::Fuel));
});

backend_test!(infinite_loop_is_stopped_by_the_deadline, |kind| {
    let outcome = stopped_by_the_deadline(|limits| {
        run_with(kind, json!({"op": "spin"}), limits, &Capabilities::new())
    });
    // Metering fuel, both engines check it between fuel slices and in host calls.
    assert_eq!(outcome.enforced.wall_time, Enforcement::Periodic);
});

/// What `run` (a call that never ends) returns with unbounded fuel and a 300 ms deadline,
/// having checked that the deadline stopped it, in well under 10 s.
fn stopped_by_the_deadline(run: impl FnOnce(&Limits) -> RunOutcome) -> RunOutcome {
    let outcome = ended_soon_after_the_deadline(run);
    assert_eq!(
        outcome.status,
        RunStatus::LimitExceeded(LimitKind::WallTime)
    );
    outcome
}

/// What `run` returns with unbounded fuel and a 300 ms deadline, having checked that it
/// returned in well under 10 s.
fn ended_soon_after_the_deadline<T>(run: impl FnOnce(&Limits) -> T) -> T {
    let limits = Limits {
        fuel: u64::MAX / 2,
        wall_time: Duration::from_millis(300),
        ..Limits::default()
    };
    let started = Instant::now();
    let ended = run(&limits);
    // Generous: the point is that it stops, not how precisely on a loaded 2-core machine.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    ended
}

/// A module whose `_start` fills 16 MiB of memory over and over: a few instructions a turn,
/// each turn milliseconds of work.
fn fill_loop_module(kind: BackendKind) -> Compiled {
    compile_wat(
        kind,
        r#"(module
            (memory (export "memory") 256)
            (func (export "_start")
                (loop $l
                    (memory.fill (i32.const 0) (i32.const 7) (i32.const 16777216))
                    (br $l))))"#,
    )
}

/// The module `text` (WebAssembly text), compiled for `kind`.
fn compile_wat(kind: BackendKind, text: &str) -> Compiled {
    let wasm = wat::parse_str(text).unwrap();
    sandbox(kind).compile(&wasm, None).unwrap()
}

// A guest's slices are fuel, so a slice must not be cheap in fuel and long in time: bulk
// memory operations are charged by the byte (and split, on Wasmtime), so a loop of long fills
// meets its deadline and its fuel limit like any loop.
backend_test!(
    a_loop_of_long_memory_fills_is_stopped_by_the_deadline,
    |kind| {
        // 20 fills of 16 MiB are more than 300M fuel.
        assert_runs_on_to_its_limits(&fill_loop_module(kind), 300_000_000);
    }
);

/// `module`, which never ends, is stopped by a 300 ms deadline (in well under 10 s) when its
/// fuel is unbounded, and by its fuel when that is `fuel`.
fn assert_runs_on_to_its_limits(module: &Compiled, fuel: u64) {
    stopped_by_the_deadline(|limits| module.run(b"", limits, &Capabilities::new()).unwrap());
    let limits = Limits {
        fuel,
        ..Limits::default()
    };
    let outcome = module.run(b"", &limits, &Capabilities::new()).unwrap();
    assert_eq!(outcome.status, RunStatus::LimitExceeded(LimitKind::Fuel));
}

// With fuel metering off (`SandboxConfig::meter_fuel(false)`), Wasmtime runs guests without
// counting fuel: a call's results are the same, its fuel limit is reported as not enforced,
// and its deadline is what stops a guest that runs on. wasmi meters whatever the option says.
backend_test!(without_fuel_metering_the_deadline_bounds_a_call, |kind| {
    let mut config = SandboxConfig::new(kind);
    config.meter_fuel(false);
    let unmetered = Sandbox::new(&config)
        .expect("engine starts")
        .compile(&std::fs::read(locara_test_artifacts::PROBE).unwrap(), None)
        .expect("the probe compiles");
    let wasmtime = kind == BackendKind::Wasmtime;

    let input = json!({"op": "echo", "n": [1, 2, 3], "s": "héllo"});
    let outcome = run_on(&unmetered, input.clone());
    assert_eq!(outcome.status, RunStatus::Exited(0));
    assert_eq!(stdout_json(&outcome), stdout_json(&run(kind, input)));
    if wasmtime {
        assert_eq!(outcome.enforced.fuel, Enforcement::NotEnforced);
        assert_eq!(outcome.fuel_consumed, 0);
    } else {
        assert_eq!(outcome.enforced.fuel, Enforcement::Exact);
        assert!(outcome.fuel_consumed > 0);
    }
    // Without fuel slices, Wasmtime's epochs stop the guest wherever it is.
    let wall_time = if wasmtime {
        Enforcement::Exact
    } else {
        Enforcement::Periodic
    };
    assert_eq!(outcome.enforced.wall_time, wall_time);

    // 20M fuel stops a spin within milliseconds when it is metered; unmetered, the spin runs
    // on to its 300 ms deadline.
    let limits = Limits {
        fuel: 20_000_000,
        wall_time: Duration::from_millis(300),
        ..Limits::default()
    };
    let started = Instant::now();
    let outcome = unmetered
        .run(
            json!({"op": "spin"}).to_string().as_bytes(),
            &limits,
            &Capabilities::new(),
        )
        .expect("the call starts");
    let stopped_by = if wasmtime {
        LimitKind::WallTime
    } else {
        LimitKind::Fuel
    };
    assert_eq!(outcome.status, RunStatus::LimitExceeded(stopped_by));
    if wasmtime {
        assert!(started.elapsed() >= Duration::from_millis(300));
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );

    // Driven as a future, an unmetered call still yields (at each epoch tick) instead of
    // holding the thread that polls it until it ends.
    if wasmtime {
        use std::task::{Context, Waker};
        let mut call = unmetered
            .start(locara_sandbox::RunArgs {
                input: json!({"op": "spin"}).to_string().into_bytes(),
                limits: Limits {
                    wall_time: Duration::from_secs(30),
                    ..Limits::default()
                },
                caps: Capabilities::new(),
                cancel: CancelToken::new(),
            })
            .unwrap_or_else(|_| panic!("Wasmtime drives calls as futures"));
        let started = Instant::now();
        for _ in 0..3 {
            let poll = call.as_mut().poll(&mut Context::from_waker(Waker::noop()));
            assert!(poll.is_pending(), "a spinning call pends after a slice");
        }
        // Three slices of at most a tick (10 ms) each, on a loaded machine.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "three polls took {:?}",
            started.elapsed()
        );
        drop(call);
    }
});

backend_test!(memory_bomb_is_stopped_at_the_limit, |kind| {
    let limits = Limits {
        memory_bytes: 32 << 20,
        ..Limits::default()
    };
    let outcome = run_with(
        kind,
        json!({"op": "membomb"}),
        &limits,
        &Capabilities::new(),
    );
    assert_eq!(outcome.status, RunStatus::LimitExceeded(LimitKind::Memory));
});

backend_test!(output_flood_is_capped, |kind| {
    let limits = Limits {
        output_bytes: 1 << 20,
        ..Limits::default()
    };
    let outcome = run_with(kind, json!({"op": "flood"}), &limits, &Capabilities::new());
    assert_eq!(outcome.status, RunStatus::LimitExceeded(LimitKind::Output));
    assert!(outcome.stdout.len() <= 1 << 20);
});

backend_test!(stderr_flood_counts_towards_the_output_limit, |kind| {
    let limits = Limits {
        output_bytes: 1 << 20,
        ..Limits::default()
    };
    let outcome = run_with(
        kind,
        json!({"op": "stderr_flood"}),
        &limits,
        &Capabilities::new(),
    );
    assert_eq!(outcome.status, RunStatus::LimitExceeded(LimitKind::Output));
    assert!(outcome.stderr_truncated);
    assert_eq!(outcome.stderr.len(), 64 << 10);
});

backend_test!(fd_exhaustion_is_stopped, |kind| {
    let limits = Limits {
        max_fds: 16,
        ..Limits::default()
    };
    let outcome = run_with(
        kind,
        json!({"op": "fds", "count": 1000}),
        &limits,
        &Capabilities::new(),
    );
    assert_eq!(outcome.status, RunStatus::LimitExceeded(LimitKind::Fds));
});

backend_test!(fds_within_the_limit_are_fine, |kind| {
    let outcome = run(kind, json!({"op": "fds", "count": 20}));
    assert_eq!(outcome.status, RunStatus::Exited(0));
    assert_eq!(stdout_json(&outcome)["opened"], json!(20));
});

backend_test!(escapes_are_denied, |kind| {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("inside.txt"), "inside").unwrap();
    let caps =
        Capabilities::new().preopened_dir(workspace.path(), "/workspace", DirPerms::ReadWrite);
    let outcome = run_with(kind, json!({"op": "escape"}), &Limits::default(), &caps);
    assert_eq!(outcome.status, RunStatus::Exited(0));
    let results = stdout_json(&outcome)["results"]
        .as_object()
        .expect("results")
        .clone();
    assert!(results.len() >= 7, "{results:?}");
    for (name, result) in &results {
        let result = result.as_str().unwrap();
        assert!(
            result.starts_with("err"),
            "escape `{name}` was not denied: {result}"
        );
        assert!(
            !result.contains("root:"),
            "escape `{name}` leaked /etc/passwd: {result}"
        );
    }
});

backend_test!(environment_is_empty, |kind| {
    let caps = Capabilities::new().program_name("text.chunk");
    let outcome = run_with(kind, json!({"op": "env"}), &Limits::default(), &caps);
    let value = stdout_json(&outcome);
    assert_eq!(value["env"], json!([]));
    assert_eq!(value["args"], json!(["text.chunk"]));
});

backend_test!(temp_dir_is_fresh_and_gone_after_the_call, |kind| {
    let root = tempfile::tempdir().unwrap();
    let module = isolated(kind, root.path());
    // In memory, and on disk (`disk` makes the probe list `/tmp` first).
    for disk in [false, true] {
        let write =
            json!({"op": "write", "path": "/tmp/left-behind.txt", "content": "x", "disk": disk});
        let outcome = run_on(&module, write);
        assert_eq!(stdout_json(&outcome), json!({"ok": true}));
        assert_eq!(
            std::fs::read_dir(root.path()).unwrap().count(),
            0,
            "the call's temp dir was left behind"
        );
        assert!(
            !reads(&module, "/tmp/left-behind.txt"),
            "the next call saw the previous call's file"
        );
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    }
});

backend_test!(temp_dir_is_removed_after_a_limit_too, |kind| {
    let root = tempfile::tempdir().unwrap();
    let module = isolated(kind, root.path());
    let limits = Limits {
        max_fds: 8,
        ..Limits::default()
    };
    for disk in [false, true] {
        let fds = json!({"op": "fds", "disk": disk});
        let outcome = module
            .run(fds.to_string().as_bytes(), &limits, &Capabilities::new())
            .unwrap();
        assert_eq!(outcome.status, RunStatus::LimitExceeded(LimitKind::Fds));
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    }
});

backend_test!(
    background_removal_collects_first_and_removes_every_temp_dir,
    |kind| {
        let root = tempfile::tempdir().unwrap();
        let mut config = SandboxConfig::new(kind);
        config
            .temp_root(root.path())
            .remove_temp_dirs_in_background(true);
        let sandbox = Sandbox::new(&config).expect("engine starts");
        let module = sandbox
            .compile(&std::fs::read(locara_test_artifacts::PROBE).unwrap(), None)
            .unwrap();
        drop(sandbox);
        let caps = Capabilities::new()
            .with_temp_file("out/seed.txt", b"seed".to_vec())
            .collecting("out");
        // More calls than the cleaner's queue holds, so some find it full.
        for n in 0..40 {
            let write =
                json!({"op": "write", "path": "/tmp/out/made.txt", "content": format!("call {n}")});
            let outcome = module
                .run(write.to_string().as_bytes(), &Limits::default(), &caps)
                .unwrap();
            assert_eq!(outcome.status, RunStatus::Exited(0));
            let files = files_of(&outcome);
            let made = format!("call {n}");
            assert_eq!(
                files,
                [
                    ("made.txt", made.as_bytes()),
                    ("seed.txt", b"seed".as_slice())
                ]
            );
        }
        assert!(
            !reads(&module, "/tmp/out/made.txt"),
            "a later call starts from a fresh temp dir, whatever is still queued for removal"
        );
        // Dropping the last handle waits for the cleaner.
        drop(module);
        let left: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "temp dirs left behind: {left:?}");
    }
);

backend_test!(write_outside_the_declared_scope_is_denied, |kind| {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("doc.txt"), "hello").unwrap();
    let caps =
        Capabilities::new().preopened_dir(workspace.path(), "/workspace", DirPerms::ReadOnly);
    let read = run_with(
        kind,
        json!({"op": "read", "path": "/workspace/doc.txt"}),
        &Limits::default(),
        &caps,
    );
    assert_eq!(stdout_json(&read), json!({"ok": true, "content": "hello"}));
    for path in [
        "/workspace/new.txt",
        "/workspace/doc.txt",
        "/etc/evil.txt",
        "/evil.txt",
    ] {
        let write = run_with(
            kind,
            json!({"op": "write", "path": path, "content": "pwned"}),
            &Limits::default(),
            &caps,
        );
        assert_eq!(
            stdout_json(&write)["ok"],
            json!(false),
            "write to {path} was allowed"
        );
    }
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("doc.txt")).unwrap(),
        "hello"
    );
    assert!(!workspace.path().join("new.txt").exists());
});

backend_test!(hard_link_cannot_make_a_read_only_file_writable, |kind| {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("doc.txt"), "hello").unwrap();
    let caps =
        Capabilities::new().preopened_dir(workspace.path(), "/workspace", DirPerms::ReadOnly);
    let op = json!({"op": "hardlink", "path": "/workspace/doc.txt", "content": "/tmp/doc.txt"});
    let outcome = run_with(kind, op, &Limits::default(), &caps);
    let result = stdout_json(&outcome);
    assert!(
        result["link"].as_str().unwrap().starts_with("err"),
        "{result}"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("doc.txt")).unwrap(),
        "hello"
    );
});

backend_test!(read_write_dir_can_be_written, |kind| {
    let workspace = tempfile::tempdir().unwrap();
    let caps =
        Capabilities::new().preopened_dir(workspace.path(), "/workspace", DirPerms::ReadWrite);
    let write = json!({"op": "write", "path": "/workspace/out.txt", "content": "written"});
    let outcome = run_with(kind, write, &Limits::default(), &caps);
    assert_eq!(stdout_json(&outcome), json!({"ok": true}));
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("out.txt")).unwrap(),
        "written"
    );
    let list = run_with(
        kind,
        json!({"op": "list", "path": "/workspace"}),
        &Limits::default(),
        &caps,
    );
    assert_eq!(stdout_json(&list)["entries"], json!(["out.txt"]));
});

backend_test!(panic_is_a_trap_with_its_message, |kind| {
    let outcome = run(kind, json!({"op": "panic"}));
    assert!(
        matches!(outcome.status, RunStatus::Trapped(_)),
        "{:?}",
        outcome.status
    );
    assert!(
        String::from_utf8_lossy(&outcome.stderr).contains("panicked"),
        "{}",
        String::from_utf8_lossy(&outcome.stderr)
    );
});

backend_test!(exit_code_and_stderr_are_reported, |kind| {
    let outcome = run(
        kind,
        json!({"op": "exit", "code": 3, "stderr": "bad input: x"}),
    );
    assert_eq!(outcome.status, RunStatus::Exited(3));
    assert_eq!(String::from_utf8_lossy(&outcome.stderr), "bad input: x");
});

backend_test!(sleeping_past_the_deadline_is_stopped, |kind| {
    let ok = run(kind, json!({"op": "sleep", "ms": 20}));
    assert_eq!(ok.status, RunStatus::Exited(0));
    let limits = Limits {
        wall_time: Duration::from_millis(200),
        ..Limits::default()
    };
    let outcome = run_with(
        kind,
        json!({"op": "sleep", "ms": 60_000}),
        &limits,
        &Capabilities::new(),
    );
    assert_eq!(
        outcome.status,
        RunStatus::LimitExceeded(LimitKind::WallTime)
    );
    assert!(outcome.elapsed < Duration::from_secs(5));
});

backend_test!(clocks_and_random_work, |kind| {
    let a = stdout_json(&run(kind, json!({"op": "time_random"})));
    let b = stdout_json(&run(kind, json!({"op": "time_random"})));
    assert!(a["time_ms"].as_u64().unwrap() > 1_700_000_000_000, "{a}");
    assert_ne!(a["random"], b["random"]);
});

backend_test!(undeclared_import_is_refused_before_running, |kind| {
    // (module (import "env" "foo" (func)))
    let wasm = [
        0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // header
        0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type section: () -> ()
        0x02, 0x0b, 0x01, 0x03, b'e', b'n', b'v', 0x03, b'f', b'o', b'o', 0x00,
        0x00, // import
    ];
    match sandbox(kind).compile(&wasm, None) {
        Err(Error::UnsupportedImport { module, name }) => {
            assert_eq!((module.as_str(), name.as_str()), ("env", "foo"))
        }
        other => panic!("expected UnsupportedImport, got {other:?}"),
    }
});

backend_test!(malformed_wasm_is_an_error, |kind| {
    let wasm = std::fs::read(locara_test_artifacts::PROBE).unwrap();
    for bad in [&b"not wasm"[..], &wasm[..wasm.len() / 2]] {
        assert!(matches!(
            sandbox(kind).compile(bad, None),
            Err(Error::InvalidModule { .. })
        ));
    }
});

backend_test!(the_next_call_works_after_every_limit, |kind| {
    let small = Limits {
        memory_bytes: 32 << 20,
        fuel: 20_000_000,
        wall_time: Duration::from_millis(500),
        output_bytes: 1 << 20,
        max_fds: 8,
        temp_bytes: 1 << 20,
    };
    for op in [
        "spin", "membomb", "flood", "fds", "panic", "recurse", "hostloop", "files",
    ] {
        let bad = run_with(kind, json!({"op": op}), &small, &Capabilities::new());
        assert!(!bad.status.is_success(), "{op} succeeded");
        let good = run(kind, json!({"op": "echo"}));
        assert_eq!(good.status, RunStatus::Exited(0), "after {op}");
    }
});

// Hostile tools: each ends in a structured outcome, the host stays healthy, and the next call on
// the same compiled module works.

fn assert_next_call_works(module: &Compiled) {
    let outcome = run_on(module, json!({"op": "echo"}));
    assert_eq!(outcome.status, RunStatus::Exited(0));
}

backend_test!(stack_overflow_ends_structured, |kind| {
    // Which stack runs out first depends on the engine and the frame size. On wasmi the
    // engine's call stack does, and its stack-overflow trap is reported as the stack limit. On
    // Wasmtime the probe's shadow stack (1 MiB in linear memory, placed first by Rust's linker
    // so that it grows towards address 0) does first: an out-of-bounds access, a plain trap.
    let outcome = run(kind, json!({"op": "recurse"}));
    match kind {
        BackendKind::Wasmi => assert_eq!(
            outcome.status,
            RunStatus::LimitExceeded(LimitKind::Stack),
            "{outcome:?}"
        ),
        _ => match &outcome.status {
            RunStatus::Trapped(message) => {
                assert!(message.contains("out of bounds"), "{message}");
            }
            RunStatus::LimitExceeded(LimitKind::Stack) => {}
            other => panic!("expected a trap or the stack limit, got {other:?}"),
        },
    }
    assert_eq!(LimitKind::Stack.name(), "stack");
    assert_next_call_works(probe(kind));
});

backend_test!(
    a_fresh_modules_first_call_costs_the_same_fuel_as_the_next,
    |kind| {
        // Lazy compilation charged the first call of each function on wasmi, and an out-of-fuel
        // during it could not be resumed: first calls could fail far below their fuel limit.
        let wasm = std::fs::read(locara_test_artifacts::PROBE).unwrap();
        let module = sandbox(kind).compile(&wasm, None).unwrap();
        let input = json!({"op": "paths", "paths": ["/tmp/a", "/workspace/b", "../c"]});
        let fuel: Vec<u64> = (0..2)
            .map(|_| {
                let outcome = run_on(&module, input.clone());
                assert_eq!(outcome.status, RunStatus::Exited(0));
                outcome.fuel_consumed
            })
            .collect();
        assert_eq!(fuel[0], fuel[1]);
    }
);

backend_test!(
    huge_single_line_output_up_to_the_limit_is_kept_whole,
    |kind| {
        let bytes = 9 << 20;
        let outcome = run(kind, json!({"op": "output", "bytes": bytes}));
        assert_eq!(outcome.status, RunStatus::Exited(0));
        assert_eq!(outcome.stdout.len(), bytes + 12);
        assert!(!outcome.stdout[..outcome.stdout.len() - 1].contains(&b'\n'));
        let over = run(kind, json!({"op": "output", "bytes": 11 << 20}));
        assert_eq!(over.status, RunStatus::LimitExceeded(LimitKind::Output));
        assert!(over.stdout.len() <= Limits::DEFAULT_OUTPUT_BYTES as usize);
    }
);

backend_test!(output_that_is_not_utf8_is_passed_through_as_bytes, |kind| {
    let outcome = run(kind, json!({"op": "bytes", "hex": "ff00fe7b22c3"}));
    assert_eq!(outcome.status, RunStatus::Exited(0));
    assert_eq!(outcome.stdout, [0xff, 0x00, 0xfe, 0x7b, 0x22, 0xc3]);
});

backend_test!(ten_thousand_files_in_the_temp_dir_are_all_removed, |kind| {
    let root = tempfile::tempdir().unwrap();
    let module = isolated(kind, root.path());
    for disk in [false, true] {
        let files = json!({"op": "files", "count": 10000, "bytes": 16, "disk": disk});
        let outcome = run_on(&module, files);
        assert_eq!(outcome.status, RunStatus::Exited(0), "{outcome:?}");
        assert_eq!(stdout_json(&outcome), json!({"created": 10000}));
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    }
    assert_next_call_works(&module);
});

backend_test!(the_temp_dir_is_bounded_by_its_limit, |kind| {
    let root = tempfile::tempdir().unwrap();
    let module = isolated(kind, root.path());
    let limits = Limits {
        temp_bytes: 1 << 20,
        ..Limits::default()
    };
    let run = |input: Value| {
        module
            .run(input.to_string().as_bytes(), &limits, &Capabilities::new())
            .unwrap()
    };
    // One big file, and a flood of empty ones (each entry counts 4 KiB): both stopped, in
    // memory and on disk.
    for input in [false, true].into_iter().flat_map(|disk| {
        [
            json!({"op": "files", "count": 1, "bytes": 2 << 20, "disk": disk}),
            json!({"op": "files", "count": 100_000, "bytes": 0, "disk": disk}),
        ]
    }) {
        let outcome = run(input.clone());
        assert_eq!(
            outcome.status,
            RunStatus::LimitExceeded(LimitKind::TempBytes),
            "{input}"
        );
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    }
    // Space given back (a file truncated, a file removed) can be used again: 64 MiB written in
    // all, never more than 64 KiB at once.
    let outcome = run(json!({"op": "churn", "count": 1000, "bytes": 64 << 10}));
    assert_eq!(
        stdout_json(&outcome),
        json!({"written": 1000}),
        "{outcome:?}"
    );
    // Within the limit, the same files are fine.
    let outcome = run(json!({"op": "files", "count": 100, "bytes": 4096}));
    assert_eq!(stdout_json(&outcome), json!({"created": 100}));
});

backend_test!(fds_held_open_are_closed_when_the_call_is_stopped, |kind| {
    let root = tempfile::tempdir().unwrap();
    let module = isolated(kind, root.path());
    let limits = Limits {
        wall_time: Duration::from_millis(300),
        ..Limits::default()
    };
    for disk in [false, true] {
        let hold = json!({"op": "hold_fds", "count": 20, "ms": 60000, "disk": disk});
        let outcome = module
            .run(hold.to_string().as_bytes(), &limits, &Capabilities::new())
            .unwrap();
        assert_eq!(
            outcome.status,
            RunStatus::LimitExceeded(LimitKind::WallTime)
        );
        assert_eq!(
            locara_test_artifacts::open_fds_under(root.path()),
            0,
            "descriptors left open"
        );
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    }
    assert_next_call_works(&module);
});

backend_test!(busy_loops_in_host_calls_are_stopped, |kind| {
    for call in ["clock", "yield", "random", "stat", "write"] {
        let limits = Limits {
            fuel: u64::MAX / 2,
            wall_time: Duration::from_millis(200),
            ..Limits::default()
        };
        let started = Instant::now();
        let outcome = run_with(
            kind,
            json!({"op": "hostloop", "call": call}),
            &limits,
            &Capabilities::new(),
        );
        assert_eq!(
            outcome.status,
            RunStatus::LimitExceeded(LimitKind::WallTime),
            "{call}"
        );
        assert!(started.elapsed() < Duration::from_secs(10), "{call}");
        // With the default limits, fuel runs out long before the 30 s deadline.
        let outcome = run_with(
            kind,
            json!({"op": "hostloop", "call": call}),
            &Limits {
                fuel: 5_000_000,
                ..Limits::default()
            },
            &Capabilities::new(),
        );
        assert_eq!(
            outcome.status,
            RunStatus::LimitExceeded(LimitKind::Fuel),
            "{call}"
        );
    }
});

backend_test!(random_abuse_is_bounded_by_memory, |kind| {
    let ok = stdout_json(&run(kind, json!({"op": "random_big", "bytes": 4 << 20})));
    assert_eq!(ok["len"], json!(4 << 20));
    // Random bytes are zero 1 time in 256; far fewer than 99% non-zero would mean no random.
    assert!(
        ok["nonzero"].as_u64().unwrap() > (4 << 20) * 99 / 100,
        "{ok}"
    );
    let limits = Limits {
        memory_bytes: 16 << 20,
        ..Limits::default()
    };
    let outcome = run_with(
        kind,
        json!({"op": "random_big", "bytes": 64 << 20}),
        &limits,
        &Capabilities::new(),
    );
    assert_eq!(outcome.status, RunStatus::LimitExceeded(LimitKind::Memory));
});

backend_test!(bad_pointers_ids_and_counts_are_errnos, |kind| {
    let outcome = run(kind, json!({"op": "abi_abuse"}));
    assert_eq!(outcome.status, RunStatus::Exited(0), "{outcome:?}");
    let errno = stdout_json(&outcome)["errno"].clone();
    const FAULT: u64 = 21;
    const INVAL: u64 = 28;
    const BADF: u64 = 8;
    const NOTSOCK: u64 = 57;
    let expected = [
        ("clock_time_get bad id", INVAL),
        ("clock_time_get max id", INVAL),
        ("clock_time_get wild out", FAULT),
        ("clock_res_get bad id", INVAL),
        ("clock_res_get wild out", FAULT),
        ("random_get wild buf", FAULT),
        ("random_get huge len", FAULT),
        ("poll_oneoff zero", INVAL),
        ("poll_oneoff bad tag", INVAL),
        ("poll_oneoff huge n", INVAL),
        ("poll_oneoff wild subs", FAULT),
        ("fd_write huge iovs", INVAL),
        ("fd_write wild iovs", FAULT),
        ("fd_read wild iovs", FAULT),
        ("fd_write bad fd", BADF),
        ("path_open wild path", FAULT),
        ("path_open huge path", FAULT),
        ("fd_close bad fd", BADF),
        ("args_get wild", FAULT),
        // Sockets load (CPython imports them) but no descriptor is ever one.
        ("sock_accept stdout", NOTSOCK),
        ("sock_accept bad fd", BADF),
        ("sock_recv stdin", NOTSOCK),
        ("sock_send wild", NOTSOCK),
        ("sock_shutdown preopen", NOTSOCK),
    ];
    for (name, want) in expected {
        assert_eq!(errno[name], json!(want), "{name}: {errno}");
    }
    assert_next_call_works(probe(kind));
});

/// A tmpfs of `bytes` mounted on a fresh dir, unmounted on drop: a disk that fills up.
/// `None` where this process may not mount (not root): the test then says it was skipped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(bytes: u64) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "locara-test"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?;
        status.success().then_some(SmallDisk { dir })
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

backend_test!(a_full_disk_for_the_temp_dir_is_a_clear_error, |kind| {
    let Some(disk) = SmallDisk::mount(256 << 10) else {
        eprintln!("skipped: mounting a tmpfs needs root (CI runs this as root)");
        return;
    };
    let module = isolated(kind, disk.dir.path());
    let fill = br#"{"op": "files", "count": 10000, "bytes": 4096}"#;
    let outcome = module
        .run(fill, &Limits::default(), &Capabilities::new())
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Exited(1), "{outcome:?}");
    let message = String::from_utf8_lossy(&outcome.stderr);
    assert!(
        message.starts_with("cannot write /tmp/many/f") && message.contains("No space left"),
        "{message}"
    );
    // The call's files went with it: the disk is empty again and the next call can use it.
    assert_eq!(std::fs::read_dir(disk.dir.path()).unwrap().count(), 0);
    let outcome = run_on(&module, json!({"op": "files", "count": 10, "bytes": 4096}));
    assert_eq!(stdout_json(&outcome), json!({"created": 10}));
});

/// A module whose start function never returns: it runs during instantiation, before `_start`.
fn start_loop_module(kind: BackendKind) -> Compiled {
    compile_wat(
        kind,
        r#"(module
            (memory (export "memory") 1)
            (func $forever (loop $l (br $l)))
            (start $forever)
            (func (export "_start")))"#,
    )
}

backend_test!(
    start_function_that_loops_is_stopped_by_the_deadline,
    |kind| {
        assert_runs_on_to_its_limits(&start_loop_module(kind), 10_000_000);
        assert_next_call_works(probe(kind));
    }
);

backend_test!(a_start_function_runs_before_start, |kind| {
    // The start function stores 7 at address 0; `_start` exits with what it finds there.
    let module = compile_wat(
        kind,
        r#"(module
            (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
            (memory (export "memory") 1)
            (func $init (i32.store (i32.const 0) (i32.const 7)))
            (start $init)
            (func (export "_start") (call $exit (i32.load (i32.const 0)))))"#,
    );
    let outcome = module
        .run(b"", &Limits::default(), &Capabilities::new())
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Exited(7));
});

backend_test!(simd_instructions_run_alike_on_both_engines, |kind| {
    // The guests are built with `simd128`: both engines must accept and run v128 code. The
    // exit code is computed with integer and float lanes, a shuffle and a lane extraction:
    // (1,2,3,4) + (10,20,30,40) = (11,22,33,44); reversed by the shuffle, lane 0 is 44;
    // f32x4 (1.5 × 2) lane 3 is 3, truncated and added: 47.
    let module = compile_wat(
        kind,
        r#"(module
            (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
            (memory (export "memory") 1)
            (func (export "_start")
                (local $v v128)
                (local.set $v (i32x4.add (v128.const i32x4 1 2 3 4) (v128.const i32x4 10 20 30 40)))
                (local.set $v (i8x16.shuffle 12 13 14 15 8 9 10 11 4 5 6 7 0 1 2 3
                    (local.get $v) (local.get $v)))
                (v128.store (i32.const 16) (local.get $v))
                (call $exit (i32.add
                    (i32x4.extract_lane 0 (v128.load (i32.const 16)))
                    (i32.trunc_f32_s (f32x4.extract_lane 3
                        (f32x4.mul (f32x4.splat (f32.const 1.5)) (f32x4.splat (f32.const 2)))))))))"#,
    );
    let outcome = module
        .run(b"", &Limits::default(), &Capabilities::new())
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Exited(47));
});

/// A loop that keeps more values live than a call preserves (fourteen integers, two `f64`,
/// three vectors), for 64 million turns: long enough for Wasmtime's interrupt checks to call
/// out of the guest many times mid-loop (every fuel slice when fuel is metered, every epoch
/// tick when not). Those calls go through `PreserveAll` trampolines
/// (`vendor/wasmtime-internal-cranelift`), which the loop trusts to leave every register as
/// it was; each accumulator is then checked against its closed form. Exit code 0, or a bit per
/// kind of value that came out wrong (1 integers, 2 floats, 4 vectors).
const LIVE_ACROSS_INTERRUPTS: &str = r#"(module
    (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
    (memory (export "memory") 1)
    (func (export "_start")
        (local $i i64) (local $n i64) (local $s i64) (local $bad i32)
        (local $a i64) (local $b i64) (local $c i64) (local $d i64) (local $e i64)
        (local $f i64) (local $g i64) (local $h i64) (local $j i64) (local $k i64)
        (local $l i64) (local $m i64)
        (local $x f64) (local $y f64)
        (local $v v128) (local $w v128) (local $u v128)
        (local.set $n (i64.const 64000000))
        (loop $turn
            (local.set $a (i64.add (local.get $a) (local.get $i)))
            (local.set $b (i64.add (local.get $b) (i64.mul (local.get $i) (i64.const 2))))
            (local.set $c (i64.add (local.get $c) (i64.mul (local.get $i) (i64.const 3))))
            (local.set $d (i64.add (local.get $d) (i64.mul (local.get $i) (i64.const 4))))
            (local.set $e (i64.add (local.get $e) (i64.mul (local.get $i) (i64.const 5))))
            (local.set $f (i64.add (local.get $f) (i64.mul (local.get $i) (i64.const 6))))
            (local.set $g (i64.add (local.get $g) (i64.mul (local.get $i) (i64.const 7))))
            (local.set $h (i64.add (local.get $h) (i64.mul (local.get $i) (i64.const 8))))
            (local.set $j (i64.add (local.get $j) (i64.mul (local.get $i) (i64.const 9))))
            (local.set $k (i64.add (local.get $k) (i64.mul (local.get $i) (i64.const 10))))
            (local.set $l (i64.add (local.get $l) (i64.mul (local.get $i) (i64.const 11))))
            (local.set $m (i64.add (local.get $m) (i64.mul (local.get $i) (i64.const 12))))
            (local.set $x (f64.add (local.get $x) (f64.const 1)))
            (local.set $y (f64.add (local.get $y) (f64.const 0.5)))
            (local.set $v (i32x4.add (local.get $v) (i32x4.splat (i32.wrap_i64 (local.get $i)))))
            (local.set $w (i32x4.add (local.get $w) (v128.const i32x4 1 2 3 4)))
            (local.set $u (f64x2.add (local.get $u) (f64x2.splat (f64.const 1))))
            (local.set $i (i64.add (local.get $i) (i64.const 1)))
            (br_if $turn (i64.lt_u (local.get $i) (local.get $n))))
        ;; s = 0 + 1 + ... + (n - 1)
        (local.set $s (i64.div_u (i64.mul (local.get $n) (i64.sub (local.get $n) (i64.const 1))) (i64.const 2)))
        (if (i32.eqz (i32.and
                (i32.and (i32.and (i64.eq (local.get $a) (local.get $s))
                                  (i64.eq (local.get $b) (i64.mul (local.get $s) (i64.const 2))))
                         (i32.and (i64.eq (local.get $c) (i64.mul (local.get $s) (i64.const 3)))
                                  (i64.eq (local.get $d) (i64.mul (local.get $s) (i64.const 4)))))
                (i32.and (i32.and (i32.and (i64.eq (local.get $e) (i64.mul (local.get $s) (i64.const 5)))
                                           (i64.eq (local.get $f) (i64.mul (local.get $s) (i64.const 6))))
                                  (i32.and (i64.eq (local.get $g) (i64.mul (local.get $s) (i64.const 7)))
                                           (i64.eq (local.get $h) (i64.mul (local.get $s) (i64.const 8)))))
                         (i32.and (i32.and (i64.eq (local.get $j) (i64.mul (local.get $s) (i64.const 9)))
                                           (i64.eq (local.get $k) (i64.mul (local.get $s) (i64.const 10))))
                                  (i32.and (i64.eq (local.get $l) (i64.mul (local.get $s) (i64.const 11)))
                                           (i64.eq (local.get $m) (i64.mul (local.get $s) (i64.const 12))))))))
            (then (local.set $bad (i32.or (local.get $bad) (i32.const 1)))))
        (if (i32.eqz (i32.and
                (f64.eq (local.get $x) (f64.convert_i64_u (local.get $n)))
                (f64.eq (local.get $y) (f64.div (f64.convert_i64_u (local.get $n)) (f64.const 2)))))
            (then (local.set $bad (i32.or (local.get $bad) (i32.const 2)))))
        (if (i32.eqz (i32.and
                (i32.and (i32x4.all_true (i32x4.eq (local.get $v) (i32x4.splat (i32.wrap_i64 (local.get $s)))))
                         (i32x4.all_true (i32x4.eq (local.get $w)
                             (i32x4.mul (v128.const i32x4 1 2 3 4) (i32x4.splat (i32.wrap_i64 (local.get $n)))))))
                (i64x2.all_true (f64x2.eq (local.get $u) (f64x2.splat (f64.convert_i64_u (local.get $n)))))))
            (then (local.set $bad (i32.or (local.get $bad) (i32.const 4)))))
        (call $exit (local.get $bad))))"#;

#[test]
fn values_live_across_interrupt_checks_survive_them() {
    let wasm = wat::parse_str(LIVE_ACROSS_INTERRUPTS).unwrap();
    // About 0.1 s each; a clobbered loop counter runs on to the wall-time limit.
    let limits = Limits {
        fuel: u64::MAX / 2,
        wall_time: Duration::from_secs(30),
        ..Limits::default()
    };
    for meter_fuel in [true, false] {
        let mut config = SandboxConfig::new(BackendKind::Wasmtime);
        config.meter_fuel(meter_fuel);
        let sandbox = Sandbox::new(&config).unwrap();
        let outcome = sandbox
            .compile(&wasm, None)
            .unwrap()
            .run(b"", &limits, &Capabilities::new())
            .unwrap();
        assert_eq!(
            outcome.status,
            RunStatus::Exited(0),
            "fuel metered: {meter_fuel}"
        );
        if meter_fuel {
            // Each fuel slice ended in a call out of the loop.
            let slices = outcome.fuel_consumed / locara_sandbox::SLICE_FUEL;
            assert!(slices >= 100, "{slices} slices");
        }
    }
}

backend_test!(cancelling_a_call_stops_it_and_cleans_up, |kind| {
    let root = tempfile::tempdir().unwrap();
    let module = isolated(kind, root.path());
    let limits = Limits {
        fuel: u64::MAX / 2,
        wall_time: Duration::from_secs(120),
        ..Limits::default()
    };
    for op in [false, true].into_iter().flat_map(|disk| {
        [
            json!({"op": "spin", "path": "/tmp/spinning.txt", "disk": disk}),
            json!({"op": "hold_fds", "count": 5, "ms": 120_000, "disk": disk}),
        ]
    }) {
        let cancel = CancelToken::new();
        let canceller = {
            let cancel = cancel.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                cancel.cancel();
            })
        };
        let started = Instant::now();
        let outcome = module
            .run_cancellable(
                op.to_string().as_bytes(),
                &limits,
                &Capabilities::new(),
                &cancel,
            )
            .unwrap();
        canceller.join().unwrap();
        assert_eq!(outcome.status, RunStatus::Cancelled, "{op}");
        assert!(started.elapsed() < Duration::from_secs(20), "{op}");
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0, "{op}");
        assert_eq!(
            locara_test_artifacts::open_fds_under(root.path()),
            0,
            "{op}"
        );
    }
    assert_next_call_works(&module);
});

#[test]
fn compiled_modules_are_cached_on_disk() {
    let cache = tempfile::tempdir().unwrap();
    let mut config = SandboxConfig::new(BackendKind::Wasmtime);
    config.cache_dir(cache.path());
    let sandbox = Sandbox::new(&config).unwrap();
    let wasm = std::fs::read(locara_test_artifacts::PROBE).unwrap();
    assert!(
        sandbox.cached("probe-key").unwrap().is_none(),
        "nothing yet"
    );
    sandbox.compile(&wasm, Some("probe-key")).unwrap();
    let entries: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(entries.len(), 1);
    assert!(entries[0].to_str().unwrap().starts_with("probe-key-"));
    // A second sandbox loads it instead of compiling, with or without the bytes, and it runs.
    let again = Sandbox::new(&config).unwrap();
    let echo = |compiled: locara_sandbox::Compiled| run_on(&compiled, json!({"op": "echo"})).status;
    let compiled = again.compile(&wasm, Some("probe-key")).unwrap();
    assert_eq!(echo(compiled), RunStatus::Exited(0));
    let cached = again.cached("probe-key").unwrap().expect("cached");
    assert_eq!(echo(cached), RunStatus::Exited(0));
    assert!(again.cached("other-key").unwrap().is_none(), "another key");
    assert!(again.cached("../probe-key").unwrap().is_none(), "not a key");

    // A corrupt entry is no cached module; nor has an engine without a disk cache any.
    let entry = cache_file(cache.path(), "probe-key");
    let mut bytes = std::fs::read(&entry).unwrap();
    let last = bytes.len() - 100;
    bytes[last] ^= 0xff;
    std::fs::write(&entry, &bytes).unwrap();
    assert!(
        Sandbox::new(&config)
            .unwrap()
            .cached("probe-key")
            .unwrap()
            .is_none()
    );
    for kind in BackendKind::ALL {
        let mut uncached = SandboxConfig::new(kind);
        if kind == BackendKind::Wasmtime {
            uncached.cache_dir(cache.path());
        }
        let sandbox = Sandbox::new(&uncached).unwrap();
        sandbox.compile(&wasm, Some("probe-key")).unwrap();
        assert_eq!(
            sandbox.cached("probe-key").unwrap().is_some(),
            kind == BackendKind::Wasmtime,
            "{kind:?}"
        );
    }
}

/// The one cache file whose name starts with `key`.
fn cache_file(dir: &Path, key: &str) -> std::path::PathBuf {
    let mut found: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(key))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found.pop().unwrap()
}

#[test]
fn a_corrupt_or_swapped_cache_entry_is_never_loaded() {
    let cache = tempfile::tempdir().unwrap();
    let mut config = SandboxConfig::new(BackendKind::Wasmtime);
    config.cache_dir(cache.path());
    let probe = std::fs::read(locara_test_artifacts::PROBE).unwrap();
    let other = wat::parse_str(
        r#"(module
            (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
            (memory (export "memory") 1)
            (func (export "_start") (call $exit (i32.const 42))))"#,
    )
    .unwrap();
    let sandbox = Sandbox::new(&config).unwrap();
    sandbox.compile(&probe, Some("probe-key")).unwrap();
    sandbox.compile(&other, Some("other-key")).unwrap();
    let probe_entry = cache_file(cache.path(), "probe-key");
    let echo = |sandbox: &Sandbox| {
        sandbox
            .compile(&probe, Some("probe-key"))
            .unwrap()
            .run(
                br#"{"op":"echo"}"#,
                &Limits::default(),
                &Capabilities::new(),
            )
            .unwrap()
            .status
    };

    // Another module's compiled code under the probe's name: refused, the probe is recompiled.
    std::fs::copy(cache_file(cache.path(), "other-key"), &probe_entry).unwrap();
    assert_eq!(echo(&Sandbox::new(&config).unwrap()), RunStatus::Exited(0));

    // A flipped byte in the code, and a truncated entry: refused and rewritten.
    let mut bytes = std::fs::read(&probe_entry).unwrap();
    let last = bytes.len() - 100;
    bytes[last] ^= 0xff;
    std::fs::write(&probe_entry, &bytes).unwrap();
    assert_eq!(echo(&Sandbox::new(&config).unwrap()), RunStatus::Exited(0));
    let len = std::fs::metadata(&probe_entry).unwrap().len();
    std::fs::write(
        &probe_entry,
        &std::fs::read(&probe_entry).unwrap()[..(len / 2) as usize],
    )
    .unwrap();
    assert_eq!(echo(&Sandbox::new(&config).unwrap()), RunStatus::Exited(0));
    // After the rewrite the entry is whole again and used as is.
    assert_eq!(std::fs::metadata(&probe_entry).unwrap().len(), len);

    // A FIFO, or a link to `/dev/zero`, in place of the entry: ignored at once (no read that
    // blocks or never ends) and replaced by a real entry.
    for plant in ["fifo", "zero"] {
        std::fs::remove_file(&probe_entry).unwrap();
        if plant == "fifo" {
            let made = std::process::Command::new("mkfifo")
                .arg(&probe_entry)
                .status()
                .unwrap();
            assert!(made.success());
        } else {
            std::os::unix::fs::symlink("/dev/zero", &probe_entry).unwrap();
        }
        assert_eq!(echo(&Sandbox::new(&config).unwrap()), RunStatus::Exited(0));
        let meta = std::fs::symlink_metadata(&probe_entry).unwrap();
        assert!(meta.is_file() && meta.len() == len, "{plant}: {meta:?}");
    }
}

#[test]
fn invalid_limits_are_refused() {
    let limits = Limits {
        memory_bytes: 2 << 30,
        ..Limits::default()
    };
    let result = probe(BackendKind::Wasmtime).run(b"{}", &limits, &Capabilities::new());
    assert!(
        matches!(
            result,
            Err(Error::InvalidLimit {
                limit: "memory",
                ..
            })
        ),
        "{result:?}"
    );
}

backend_test!(staged_files_are_read_and_output_files_collected, |kind| {
    let caps = Capabilities::new()
        .with_temp_file("in/data", b"staged bytes".to_vec())
        .with_temp_file("out/seed.txt", b"seed".to_vec())
        .collecting("out");
    let read = run_with(
        kind,
        json!({"op": "read", "path": "/tmp/in/data"}),
        &Limits::default(),
        &caps,
    );
    assert_eq!(read.status, RunStatus::Exited(0));
    assert_eq!(
        stdout_json(&read),
        json!({"ok": true, "content": "staged bytes"})
    );
    let written = run_with(
        kind,
        json!({"op": "write", "path": "/tmp/out/made.txt", "content": "made by the guest"}),
        &Limits::default(),
        &caps,
    );
    assert_eq!(written.status, RunStatus::Exited(0));
    let files = files_of(&written);
    assert_eq!(
        files,
        [
            ("made.txt", b"made by the guest".as_slice()),
            ("seed.txt", b"seed".as_slice())
        ]
    );
    // Nothing is collected unless asked for, nor from a call that failed.
    let not_asked = run_with(
        kind,
        json!({"op": "write", "path": "/tmp/out/made.txt", "content": "x"}),
        &Limits::default(),
        &Capabilities::new().with_temp_file("out/seed.txt", b"seed".to_vec()),
    );
    assert!(not_asked.files.is_empty());
    let failed = run_with(
        kind,
        json!({"op": "exit", "code": 1, "stderr": "no"}),
        &Limits::default(),
        &caps,
    );
    assert_eq!(failed.status, RunStatus::Exited(1));
    assert!(failed.files.is_empty());
});

/// What the probe's `staged` op reports for a staged file holding `content` (ASCII, at least
/// five bytes), with `extra`'s fields added.
fn staged_report(content: &str, extra: Value) -> Value {
    let len = content.len() as u64;
    let mut report = json!({
        "len": len,
        "path_len": len,
        "head": &content[..4],
        "after_head": 4,
        "rest": &content[4..],
        "tail_at": len - 3,
        "tail": &content[content.len() - 3..],
        "past_end": len + 10,
        "past_end_read": 0,
        "before_start_refused": true,
        "pread": &content[2..5],
        "position_kept": len + 10,
    });
    report
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    json!({"ok": true, "report": report})
}

backend_test!(
    staged_files_are_read_from_memory_until_the_temp_dir_is_used,
    |kind| {
        let content = "staged bytes, read every way";
        let caps = Capabilities::new()
            .with_temp_file("in/data", content.as_bytes().to_vec())
            .collecting("out");
        let expected = |extra: Value| staged_report(content, extra);

        // Under a temp root that cannot be made, a call that needs its temp dir on disk
        // fails; one that only reads its staged files works, so it never needed the disk.
        let root = tempfile::tempdir().unwrap();
        let module = isolated(kind, &root.path().join("missing"));
        let only_read = module
            .run(
                json!({"op": "staged", "path": "/tmp/in/data"})
                    .to_string()
                    .as_bytes(),
                &Limits::default(),
                &caps,
            )
            .unwrap();
        assert_eq!(only_read.status, RunStatus::Exited(0));
        assert_eq!(stdout_json(&only_read), expected(json!({})));
        let remove = json!({"op": "churn", "count": 2, "bytes": 1});
        let removed = module
            .run(remove.to_string().as_bytes(), &Limits::default(), &caps)
            .unwrap();
        assert_eq!(removed.status, RunStatus::Exited(1), "{removed:?}");

        // Using the temp dir midway writes the staged file there: the open file reads on
        // from the same position, refuses writes like a read-only file, and is listed.
        let touched = run_with(
            kind,
            json!({"op": "staged", "path": "/tmp/in/data", "touch": true}),
            &Limits::default(),
            &caps,
        );
        assert_eq!(touched.status, RunStatus::Exited(0));
        assert_eq!(
            stdout_json(&touched),
            expected(json!({"write_refused": true, "listed": ["data"]}))
        );
        assert_eq!(files_of(&touched), [("touched", b"t".as_slice())]);
    }
);

backend_test!(
    made_staged_files_read_like_held_ones_and_a_chunk_that_cannot_be_made_fails_its_reads,
    |kind| {
        let content: &'static str = "staged bytes, made while the guest reads them";
        // Made in chunks of 5 bytes, so every read below crosses chunks; chunk `bad` cannot
        // be made.
        let made = |bad: Option<usize>| {
            Arc::new(MadeBytes::new(content.len(), 5, move |i, out| {
                let len = out.len();
                let out = out.write_copy_of_slice(&content.as_bytes()[i * 5..][..len]);
                (Some(i) != bad).then_some(out)
            }))
        };
        let expected = |extra: Value| staged_report(content, extra);
        let bytes = made(None);
        let caps = Capabilities::new()
            .with_made_temp_file("in/data", Arc::clone(&bytes))
            .collecting("out");
        let read = run_with(
            kind,
            json!({"op": "staged", "path": "/tmp/in/data"}),
            &Limits::default(),
            &caps,
        );
        assert_eq!(read.status, RunStatus::Exited(0));
        assert_eq!(stdout_json(&read), expected(json!({})));
        // Moved to disk midway, the file is made whole and written there.
        let touched = run_with(
            kind,
            json!({"op": "staged", "path": "/tmp/in/data", "touch": true}),
            &Limits::default(),
            &caps,
        );
        assert_eq!(touched.status, RunStatus::Exited(0));
        assert_eq!(
            stdout_json(&touched),
            expected(json!({"write_refused": true, "listed": ["data"]}))
        );
        assert!(bytes.finish() && !bytes.failed());

        // A chunk that cannot be made: reading the whole file fails, and the host sees it.
        let damaged = made(Some(4));
        let read = run_with(
            kind,
            json!({"op": "read", "path": "/tmp/in/data"}),
            &Limits::default(),
            &Capabilities::new().with_made_temp_file("in/data", Arc::clone(&damaged)),
        );
        assert_eq!(read.status, RunStatus::Exited(0));
        assert_eq!(stdout_json(&read)["ok"], false, "{read:?}");
        assert!(damaged.failed());
        // Its start still reads: only the reads that need the damaged chunk fail.
        let damaged = made(Some(4));
        let head = run_with(
            kind,
            json!({"op": "staged", "path": "/tmp/in/data"}),
            &Limits::default(),
            &Capabilities::new().with_made_temp_file("in/data", Arc::clone(&damaged)),
        );
        assert_eq!(stdout_json(&head)["ok"], false, "{head:?}");
        assert!(damaged.failed());
    }
);

/// Asserts that the probe's `grow` op read back intact the `count` chunks of `chunk` bytes it
/// wrote to `/tmp/out/big` (chunk `i` all `i % 251`), and that the host collected them, byte
/// for byte, from `out`.
fn assert_grown(outcome: &RunOutcome, chunk: usize, count: usize) {
    assert_eq!(
        stdout_json(outcome),
        json!({"ok": true, "report": {"len": chunk * count, "intact": true}}),
        "{outcome:?}"
    );
    let written: Vec<u8> = (0..count)
        .flat_map(|i| vec![(i % 251) as u8; chunk])
        .collect();
    assert_eq!(files_of(outcome), [("big", written.as_slice())]);
}

backend_test!(
    the_temp_dir_stays_in_memory_until_the_guest_needs_the_disk,
    |kind| {
        // Under a temp root that cannot be made, only a call that never needs its temp dir on
        // disk can work.
        let root = tempfile::tempdir().unwrap();
        let module = isolated(kind, &root.path().join("missing"));
        let run = |input: Value, caps: &Capabilities| {
            module
                .run(input.to_string().as_bytes(), &Limits::default(), caps)
                .unwrap()
        };
        // What a tool does: make a directory, write files in it, which the host collects.
        let outcome = run(
            json!({"op": "files", "count": 3, "bytes": 1000}),
            &Capabilities::new().collecting("many"),
        );
        assert_eq!(stdout_json(&outcome), json!({"created": 3}), "{outcome:?}");
        let thousand = vec![b'f'; 1000];
        assert_eq!(
            files_of(&outcome),
            [
                ("f0", thousand.as_slice()),
                ("f1", thousand.as_slice()),
                ("f2", thousand.as_slice())
            ]
        );
        // Written in pieces, read back, collected: the guest's writes up to the bound.
        let chunk = 64 << 10;
        let count = usize::try_from(locara_sandbox::MEM_TEMP_BYTES).unwrap() / chunk;
        let outcome = run(
            json!({"op": "grow", "path": "/tmp/out/big", "chunk": chunk, "count": count}),
            &Capabilities::new().collecting("out"),
        );
        assert_grown(&outcome, chunk, count);
        // One chunk more passes the bound: the temp dir must go to disk, which fails here.
        let outcome = run(
            json!({"op": "grow", "path": "/tmp/out/big", "chunk": chunk, "count": count + 1}),
            &Capabilities::new().collecting("out"),
        );
        assert_eq!(stdout_json(&outcome)["ok"], json!(false), "{outcome:?}");
        // So must a removal.
        let outcome = run(
            json!({"op": "churn", "count": 2, "bytes": 1}),
            &Capabilities::new(),
        );
        assert_eq!(outcome.status, RunStatus::Exited(1), "{outcome:?}");
        // Directories are listed from memory, the temp dir's own and those below it, with
        // the staged files among what the guest made.
        let staged = Capabilities::new()
            .with_temp_file("in/data", b"staged".to_vec())
            .collecting("out");
        let steps = json!([
            {"mkdir": "/tmp/out/sub"},
            {"write": ["/tmp/out/a.txt", "a"]},
            {"write": ["/tmp/out/sub/b.txt", "b"]},
            {"list": "/tmp"},
            {"list": "/tmp/out"},
            {"list": "/tmp/out/sub"},
            {"list": "/tmp/in"},
        ]);
        let outcome = run(json!({"op": "plant", "steps": steps}), &staged);
        assert_eq!(
            stdout_json(&outcome),
            json!({"results": ["ok", "ok", "ok", "ok: in,out", "ok: a.txt,sub", "ok: b.txt", "ok: data"]}),
            "{outcome:?}"
        );
        assert_eq!(
            files_of(&outcome),
            [("a.txt", b"a".as_slice()), ("sub/b.txt", b"b".as_slice())]
        );
        for (path, entries) in [("/tmp", json!(["in"])), ("/tmp/in", json!(["data"]))] {
            let outcome = run(json!({"op": "list", "path": path}), &staged);
            assert_eq!(
                stdout_json(&outcome),
                json!({"ok": true, "entries": entries}),
                "{path}"
            );
        }
        let outcome = run(json!({"op": "list", "path": "/tmp/in/data"}), &staged);
        assert_eq!(stdout_json(&outcome)["ok"], json!(false), "{outcome:?}");
        let outcome = run(json!({"op": "list", "path": "/tmp/missing"}), &staged);
        assert_eq!(stdout_json(&outcome)["ok"], json!(false), "{outcome:?}");
        // A collected directory that the guest made a file is refused, as on disk.
        let outcome = run(
            json!({"op": "write", "path": "/tmp/out", "content": "not a dir"}),
            &Capabilities::new().collecting("out/sub"),
        );
        assert_eq!(
            outcome.status,
            RunStatus::OutputRefused(
                "the tool left /tmp/out as not a directory: the host collects output files only from a real directory inside the call's temp dir and follows no links".to_owned()
            )
        );
    }
);

backend_test!(
    a_temp_dir_moved_to_disk_midway_keeps_every_byte_and_position,
    |kind| {
        let root = tempfile::tempdir().unwrap();
        let module = isolated(kind, root.path());
        // An odd chunk size, so that the move happens inside a write, and the file's position
        // is not a multiple of anything.
        let chunk = (1 << 20) + 3;
        let count = 10;
        let caps = Capabilities::new().collecting("out");
        let outcome = module
            .run(
                json!({"op": "grow", "path": "/tmp/out/big", "chunk": chunk, "count": count})
                    .to_string()
                    .as_bytes(),
                &Limits {
                    output_bytes: 64 << 20,
                    ..Limits::default()
                },
                &caps,
            )
            .unwrap();
        assert_eq!(outcome.status, RunStatus::Exited(0));
        assert_grown(&outcome, chunk, count);
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    }
);

backend_test!(collected_files_count_towards_the_output_limit, |kind| {
    let limits = Limits {
        output_bytes: 1000,
        ..Limits::default()
    };
    let caps = Capabilities::new()
        .with_temp_file("out/big.bin", vec![7u8; 990])
        .collecting("out");
    let outcome = run_with(kind, json!({"op": "echo"}), &limits, &caps);
    assert_eq!(
        outcome.status,
        RunStatus::LimitExceeded(LimitKind::Output),
        "stdout plus 990 bytes of files exceed 1000"
    );
    assert!(outcome.files.is_empty());
});

backend_test!(staging_is_bounded_and_jailed, |kind| {
    let limits = Limits {
        temp_bytes: 64 * 1024,
        ..Limits::default()
    };
    let too_big = Capabilities::new().with_temp_file("in/data", vec![0u8; 64 * 1024]);
    let err = probe(kind)
        .run(br#"{"op":"echo"}"#, &limits, &too_big)
        .unwrap_err();
    assert!(
        err.to_string().contains("more than the temp dir's limit"),
        "{err}"
    );
    let no_temp_dir = Capabilities::new()
        .with_temp_dir(false)
        .with_temp_file("in/data", b"x".to_vec());
    let err = probe(kind)
        .run(br#"{"op":"echo"}"#, &Limits::default(), &no_temp_dir)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("only be staged for a call that has a temp dir"),
        "{err}"
    );
    for path in ["../escape", "/abs", "in/../../x", ""] {
        let caps = Capabilities::new().with_temp_file(path, b"x".to_vec());
        let err = probe(kind)
            .run(br#"{"op":"echo"}"#, &Limits::default(), &caps)
            .unwrap_err();
        assert!(
            err.to_string().contains("must be relative"),
            "{path}: {err}"
        );
    }
});

/// A host service for the tests: `echo` answers its request reversed, `deny` and `fail` refuse
/// with a message, `slow` waits for the deadline or the cancel token.
struct TestServices;

impl locara_sandbox::HostServices for TestServices {
    fn call(
        &self,
        service: &str,
        request: &[u8],
        call: &locara_sandbox::ServiceCall,
    ) -> Result<Vec<u8>, locara_sandbox::ServiceError> {
        use locara_sandbox::ServiceError;
        match service {
            "echo" => Ok(request.iter().rev().copied().collect()),
            "fail" => Err(ServiceError::Failed("the server is down".to_owned())),
            "slow" => loop {
                if call.cancel.is_cancelled() {
                    return Err(ServiceError::Cancelled);
                }
                if Instant::now() >= call.deadline {
                    return Err(ServiceError::DeadlineExceeded);
                }
                std::thread::sleep(Duration::from_millis(5));
            },
            other => Err(ServiceError::Denied(format!("no service `{other}`"))),
        }
    }
}

fn with_services() -> Capabilities {
    Capabilities::new().with_services(std::sync::Arc::new(TestServices))
}

backend_test!(host_services_answer_refuse_and_fail, |kind| {
    let ask = |service: &str, caps: &Capabilities| {
        let input = json!({"op": "service", "service": service, "request": "héllo"});
        let outcome = run_with(kind, input, &Limits::default(), caps);
        assert_eq!(outcome.status, RunStatus::Exited(0), "{service}");
        stdout_json(&outcome)
    };
    let echo = ask("echo", &with_services());
    assert_eq!(echo["errno"], 0);
    assert_eq!(echo["response_errno"], 0);
    assert_eq!(echo["len"], 6);
    assert_eq!(
        echo["answer"],
        String::from_utf8_lossy(&"héllo".bytes().rev().collect::<Vec<_>>()).as_ref()
    );
    // Refused (ENOTCAPABLE) and failed (EIO) calls still leave a message to read.
    let denied = ask("shell", &with_services());
    assert_eq!(
        (denied["errno"].clone(), denied["answer"].clone()),
        (json!(76), json!("no service `shell`"))
    );
    let failed = ask("fail", &with_services());
    assert_eq!(
        (failed["errno"].clone(), failed["answer"].clone()),
        (json!(29), json!("the server is down"))
    );
    // A call given no services gets none, whatever it asks for.
    let none = ask("echo", &Capabilities::new());
    assert_eq!(none["errno"], 76);
    assert!(
        none["answer"]
            .as_str()
            .unwrap()
            .contains("no host services"),
        "{none}"
    );
});

backend_test!(host_service_answer_needs_a_big_enough_buffer, |kind| {
    let input = json!({"op": "service", "service": "echo", "request": "abcdef", "buf": 3});
    let outcome = run_with(kind, input, &Limits::default(), &with_services());
    let answer = stdout_json(&outcome);
    assert_eq!(answer["errno"], 0);
    assert_eq!(answer["len"], 6);
    // ERANGE, and nothing was written.
    assert_eq!(answer["response_errno"], 68);
    assert_eq!(answer["answer"], "\0\0\0");
});

backend_test!(a_slow_host_service_is_stopped_by_the_deadline, |kind| {
    let limits = Limits {
        wall_time: Duration::from_millis(300),
        ..Limits::default()
    };
    let started = Instant::now();
    let input = json!({"op": "service", "service": "slow", "request": ""});
    let outcome = run_with(kind, input, &limits, &with_services());
    assert_eq!(
        outcome.status,
        RunStatus::LimitExceeded(LimitKind::WallTime)
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
});

backend_test!(a_slow_host_service_is_stopped_by_cancelling, |kind| {
    let cancel = CancelToken::new();
    let canceller = {
        let cancel = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            cancel.cancel();
        })
    };
    let input = json!({"op": "service", "service": "slow", "request": ""});
    let outcome = probe(kind)
        .run_cancellable(
            input.to_string().as_bytes(),
            &Limits::default(),
            &with_services(),
            &cancel,
        )
        .expect("the call starts");
    canceller.join().unwrap();
    assert_eq!(outcome.status, RunStatus::Cancelled);
});

/// Services that say what they can do without blocking (see `HostServices::call_now`): `now`
/// answers at once, `later` starts an answer its guest then waits for, anything else needs a
/// thread that may block and is answered by `call`. Counts each path.
#[derive(Default)]
struct InPlace {
    answered_now: std::sync::atomic::AtomicUsize,
    started: std::sync::atomic::AtomicUsize,
    called: std::sync::atomic::AtomicUsize,
}

impl locara_sandbox::HostServices for InPlace {
    fn call(
        &self,
        service: &str,
        request: &[u8],
        _: &locara_sandbox::ServiceCall,
    ) -> Result<Vec<u8>, locara_sandbox::ServiceError> {
        self.called
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(format!("{service} by call: {}", String::from_utf8_lossy(request)).into_bytes())
    }

    fn call_now(
        &self,
        service: &str,
        request: &[u8],
        _: &locara_sandbox::ServiceCall,
    ) -> locara_sandbox::Now {
        use std::sync::atomic::Ordering::SeqCst;
        let answer = format!("{service} now: {}", String::from_utf8_lossy(request)).into_bytes();
        match service {
            "now" => {
                self.answered_now.fetch_add(1, SeqCst);
                locara_sandbox::Now::Answered(Ok(answer))
            }
            "later" => {
                self.started.fetch_add(1, SeqCst);
                locara_sandbox::Now::Started(locara_sandbox::PendingAnswer(Box::pin(async move {
                    Ok(answer)
                })))
            }
            _ => locara_sandbox::Now::NeedsThread,
        }
    }
}

/// A call started on a thread that must not block (here: polled once outside `block_on`, as
/// an async runtime's thread polls it) has its service requests answered in place when the
/// service can; a request the service starts or declines pends the call, which then finishes
/// where it may block, each request made exactly once.
#[test]
fn service_requests_are_answered_in_place_when_the_service_can() {
    use std::sync::atomic::Ordering::SeqCst;
    use std::task::{Context, Poll, Waker};
    let services = std::sync::Arc::new(InPlace::default());
    let caps = Capabilities::new().with_services(services.clone());
    let start = |input: Value| {
        probe(BackendKind::Wasmtime)
            .start(locara_sandbox::RunArgs {
                input: input.to_string().into_bytes(),
                limits: Limits::default(),
                caps: caps.clone(),
                cancel: CancelToken::new(),
            })
            .unwrap_or_else(|_| panic!("Wasmtime drives calls as futures"))
    };
    let poll_once = |call: &mut locara_sandbox::RunFuture| {
        call.as_mut().poll(&mut Context::from_waker(Waker::noop()))
    };
    let service =
        |name: &str, request: &str| json!({"op": "service", "service": name, "request": request});

    // Answered in place: the whole call ends in its first poll.
    let mut call = start(service("now", "a"));
    let Poll::Ready(outcome) = poll_once(&mut call) else {
        panic!("a call whose one request is answered in place ends in its first poll");
    };
    let outcome = outcome.unwrap();
    assert_eq!(stdout_json(&outcome)["answer"], "now now: a");

    // Started in place: the call pends, then its guest gets that very answer.
    let mut call = start(service("later", "b"));
    assert!(poll_once(&mut call).is_pending());
    let outcome = locara_sandbox::block_on(call).unwrap();
    assert_eq!(stdout_json(&outcome)["answer"], "later now: b");
    assert_eq!(services.started.load(SeqCst), 1);

    // Declined in place: asked again where blocking is allowed.
    let mut call = start(service("blocking", "c"));
    assert!(poll_once(&mut call).is_pending());
    let outcome = locara_sandbox::block_on(call).unwrap();
    assert_eq!(stdout_json(&outcome)["answer"], "blocking by call: c");
    assert_eq!(services.called.load(SeqCst), 1);

    // The channel: three requests in one write, the second declined. The first is not asked
    // again when the write runs again, nor is the write's data taken twice, and the answers
    // come in order.
    let lines = [
        r#"{"service": "now", "request": "x"}"#,
        r#"{"service": "blocking", "request": "y"}"#,
        r#"{"service": "now", "request": "z"}"#,
    ];
    let mut call = start(json!({"op": "channel", "lines": lines}));
    assert!(poll_once(&mut call).is_pending());
    let outcome = locara_sandbox::block_on(call).unwrap();
    assert_eq!(outcome.status, RunStatus::Exited(0), "{outcome:?}");
    let answers: Vec<Value> = stdout_json(&outcome)["answers"]
        .as_str()
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        answers,
        [
            json!({"ok": "now now: \"x\""}),
            json!({"ok": "blocking by call: \"y\""}),
            json!({"ok": "now by call: \"z\""}),
        ]
    );
    // Once moved, the call stays where it may block: z was asked with `call` too.
    assert_eq!(services.called.load(SeqCst), 3, "c, y and z, by call");
    assert_eq!(services.answered_now.load(SeqCst), 2, "a and x, in place");

    // Under `block_on`, every request is made with `call`, as on wasmi.
    let outcome = locara_sandbox::block_on(start(service("now", "d"))).unwrap();
    assert_eq!(stdout_json(&outcome)["answer"], "now by call: d");
}

/// The pre-initializer runs a module's init export on Wasmtime with epochs (whatever the
/// sandbox's engine): an init that never returns is stopped by the wall-time limit.
#[cfg(feature = "preinit")]
#[test]
fn an_endless_init_is_stopped_by_the_deadline_of_the_preinitializer() {
    let wasm = wat::parse_str(
        r#"(module
            (memory (export "memory") 1)
            (func (export "_start"))
            (func (export "init") (loop br 0)))"#,
    )
    .unwrap();
    let error = ended_soon_after_the_deadline(|limits| {
        sandbox(BackendKind::Wasmtime).preinitialize(&wasm, "init", &Capabilities::new(), limits)
    })
    .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("pre-initialization with `init` failed") && message.contains("wall_time"),
        "{message}"
    );
}
