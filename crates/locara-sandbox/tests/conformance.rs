//! The sandbox conformance suite: every case runs once per engine, against the adversarial
//! probe guest (`crates/locara-test-guests`), built from source by `locara-test-artifacts`.

use std::{
    path::Path,
    sync::OnceLock,
    time::{Duration, Instant},
};

use locara_sandbox::{
    BackendKind, Capabilities, Compiled, DirPerms, Enforcement, Error, LimitKind, Limits,
    RunOutcome, RunStatus, Sandbox, SandboxConfig,
};
use serde_json::{Value, json};

/// Runs `$body` once per engine, as `<name>::wasmtime` and `<name>::wasmi`.
macro_rules! backend_test {
    ($name:ident, |$kind:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports, reason = "not every body uses every import")]
            use super::*;

            fn case($kind: BackendKind) $body

            #[test]
            fn wasmtime() {
                case(BackendKind::Wasmtime)
            }

            #[test]
            fn wasmi() {
                case(BackendKind::Wasmi)
            }
        }
    };
}

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
    let limits = Limits {
        fuel: u64::MAX / 2,
        wall_time: Duration::from_millis(300),
        ..Limits::default()
    };
    let started = Instant::now();
    let outcome = run_with(kind, json!({"op": "spin"}), &limits, &Capabilities::new());
    assert_eq!(
        outcome.status,
        RunStatus::LimitExceeded(LimitKind::WallTime)
    );
    // Generous: the point is that it stops, not how precisely on a loaded 2-core machine.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    let expected = if kind == BackendKind::Wasmtime {
        Enforcement::Exact
    } else {
        Enforcement::Periodic
    };
    assert_eq!(outcome.enforced.wall_time, expected);
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
    let write = json!({"op": "write", "path": "/tmp/left-behind.txt", "content": "x"});
    let outcome = module
        .run(
            write.to_string().as_bytes(),
            &Limits::default(),
            &Capabilities::new(),
        )
        .unwrap();
    assert_eq!(stdout_json(&outcome), json!({"ok": true}));
    assert_eq!(
        std::fs::read_dir(root.path()).unwrap().count(),
        0,
        "the call's temp dir was left behind"
    );
    // The next call does not see the previous call's file.
    let read = json!({"op": "read", "path": "/tmp/left-behind.txt"});
    let outcome = module
        .run(
            read.to_string().as_bytes(),
            &Limits::default(),
            &Capabilities::new(),
        )
        .unwrap();
    assert_eq!(stdout_json(&outcome)["ok"], json!(false));
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
});

backend_test!(temp_dir_is_removed_after_a_limit_too, |kind| {
    let root = tempfile::tempdir().unwrap();
    let module = isolated(kind, root.path());
    let limits = Limits {
        max_fds: 8,
        ..Limits::default()
    };
    let outcome = module
        .run(br#"{"op": "fds"}"#, &limits, &Capabilities::new())
        .unwrap();
    assert_eq!(outcome.status, RunStatus::LimitExceeded(LimitKind::Fds));
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
});

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
    };
    for op in ["spin", "membomb", "flood", "fds", "panic"] {
        let bad = run_with(kind, json!({"op": op}), &small, &Capabilities::new());
        assert!(!bad.status.is_success(), "{op} succeeded");
        let good = run(kind, json!({"op": "echo"}));
        assert_eq!(good.status, RunStatus::Exited(0), "after {op}");
    }
});

#[test]
fn compiled_modules_are_cached_on_disk() {
    let cache = tempfile::tempdir().unwrap();
    let mut config = SandboxConfig::new(BackendKind::Wasmtime);
    config.cache_dir(cache.path());
    let sandbox = Sandbox::new(&config).unwrap();
    let wasm = std::fs::read(locara_test_artifacts::PROBE).unwrap();
    sandbox.compile(&wasm, Some("probe-key")).unwrap();
    let entries: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(entries.len(), 1);
    assert!(entries[0].to_str().unwrap().starts_with("probe-key-"));
    // A second sandbox loads it instead of compiling, and it runs.
    let again = Sandbox::new(&config)
        .unwrap()
        .compile(&wasm, Some("probe-key"))
        .unwrap();
    let outcome = again
        .run(
            br#"{"op":"echo"}"#,
            &Limits::default(),
            &Capabilities::new(),
        )
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Exited(0));
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
