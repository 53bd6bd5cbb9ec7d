//! The whole pipeline against real, signed, built-from-source tools on both engines.

use std::sync::{Arc, OnceLock};

use locara_exec::{
    ApprovalDecision, ApprovalRequest, Approver, ExecConfig, ExecError, FailureKind, Pipeline,
    ToolCall, ToolResult, pipeline,
};
use locara_manifest::{FsGrant, Grants, SafetyTier};
use locara_sandbox::{BackendKind, Sandbox, SandboxConfig};
use locara_test_artifacts::TestHome;
use serde_json::{Value, json};
use tower::ServiceExt;

fn home() -> &'static TestHome {
    static HOME: OnceLock<TestHome> = OnceLock::new();
    HOME.get_or_init(|| {
        let home = TestHome::new();
        home.publish_probe_as("test.privileged", "privileged");
        home.publish_probe_as("test.read-only", "read_only");
        home.publish_probe_with("test.long-spin", "read_only", |manifest| {
            manifest["limits"]["fuel"] = 50_000_000_000_u64.into();
            manifest["limits"]["wall_time_ms"] = 10_000.into();
        });
        home.publish_probe_with("test.calls-tools", "read_only", |manifest| {
            manifest["capability_requirements"] = json!(["tools"]);
        });
        home
    })
}

fn build(kind: BackendKind, grants: Grants, cap: usize) -> Pipeline {
    let sandbox = Sandbox::new(&SandboxConfig::new(kind)).unwrap();
    let config =
        ExecConfig::new(Arc::new(home().registry()), sandbox, grants).with_output_cap_bytes(cap);
    pipeline(&config)
}

fn grants() -> Grants {
    Grants::new().with_max_safety_tier(SafetyTier::SideEffecting)
}

async fn call(kind: BackendKind, grants: Grants, call: ToolCall) -> Result<ToolResult, ExecError> {
    build(kind, grants, 1 << 20).oneshot(call).await
}

/// Runs `$body` once per engine.
macro_rules! both {
    ($name:ident, |$kind:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports, reason = "not every body uses every import")]
            use super::*;

            async fn case($kind: BackendKind) $body

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn wasmtime() {
                case(BackendKind::Wasmtime).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn wasmi() {
                case(BackendKind::Wasmi).await
            }
        }
    };
}

both!(text_chunk_runs_end_to_end, |kind| {
    let text = "First paragraph. It has two sentences.\n\nSecond paragraph is here.";
    let result = call(
        kind,
        grants(),
        ToolCall::new("text.chunk", json!({"text": text, "max_chars": 30})),
    )
    .await
    .unwrap();
    assert!(result.failure.is_none(), "{:?}", result.failure);
    let output = result.output.unwrap();
    let chunks = output["chunks"].as_array().unwrap();
    assert!(chunks.len() >= 3, "{output}");
    let joined: String = chunks.iter().map(|c| c["text"].as_str().unwrap()).collect();
    assert_eq!(joined, text);
    assert!(
        chunks
            .iter()
            .all(|c| c["text"].as_str().unwrap().chars().count() <= 30)
    );
    assert_eq!(result.tool.to_string(), "text.chunk@0.1.0");
    assert_eq!(result.stats.engine, kind.name());
});

both!(bad_tool_reference_is_refused_before_resolving, |kind| {
    let error = call(kind, grants(), ToolCall::new("Text Chunk!", json!({})))
        .await
        .unwrap_err();
    assert!(matches!(error, ExecError::InvalidToolRef { .. }), "{error}");
    assert!(error.hint().contains("id@version"));
});

both!(unknown_tool_lists_what_exists, |kind| {
    let error = call(kind, grants(), ToolCall::new("text.chunker", json!({})))
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("text.chunker") && message.contains("text.chunk@0.1.0"),
        "{message}"
    );
});

both!(
    invalid_input_names_the_json_pointer_and_constraint,
    |kind| {
        let error = call(
            kind,
            grants(),
            ToolCall::new("text.chunk", json!({"text": "x", "max_chars": "ten"})),
        )
        .await
        .unwrap_err();
        let ExecError::InvalidInput { violations, .. } = &error else {
            panic!("{error}")
        };
        assert_eq!(violations[0].pointer, "/max_chars");
        assert!(
            violations[0].constraint.starts_with("type at "),
            "{:?}",
            violations[0]
        );
        assert!(error.hint().contains("/max_chars"), "{}", error.hint());

        let error = call(
            kind,
            grants(),
            ToolCall::new("text.chunk", json!({"max_chars": 0})),
        )
        .await
        .unwrap_err();
        let ExecError::InvalidInput { violations, .. } = &error else {
            panic!("{error}")
        };
        let pointers: Vec<&str> = violations.iter().map(|v| v.pointer.as_str()).collect();
        assert!(
            pointers.contains(&"") && pointers.contains(&"/max_chars"),
            "{violations:?}"
        );
        assert!(
            violations
                .iter()
                .any(|v| v.constraint.starts_with("required"))
        );
        assert!(
            violations
                .iter()
                .any(|v| v.constraint.starts_with("minimum"))
        );
    }
);

/// The probe declares a read-only workspace; these give it one.
fn probe_call(op: Value, dir: &std::path::Path) -> ToolCall {
    ToolCall::new("test.probe", op).with_workspace(dir)
}

fn granted(dir: &std::path::Path) -> Grants {
    grants().with_fs(FsGrant::new(dir))
}

both!(output_breaking_its_schema_is_a_tool_failure, |kind| {
    let dir = tempfile::tempdir().unwrap();
    let result = call(
        kind,
        granted(dir.path()),
        probe_call(json!({"op": "output", "bytes": 3}), dir.path()),
    )
    .await
    .unwrap();
    let failure = result.failure.expect("invalid output");
    assert_eq!(failure.kind, FailureKind::InvalidOutput);
    let constraints: Vec<&str> = failure
        .violations
        .iter()
        .map(|v| v.constraint.as_str())
        .collect();
    assert!(
        constraints.iter().any(|c| c.starts_with("required")),
        "{constraints:?}"
    );
    assert_eq!(
        result.output,
        Some(json!({"data": "xxx"})),
        "the invalid output is kept for inspection"
    );
});

both!(invalid_output_names_the_nested_json_pointer, |kind| {
    let dir = tempfile::tempdir().unwrap();
    // The probe echoes its input; its output schema wants `/echo/n` to be a string.
    let call = probe_call(json!({"op": "echo", "n": 5}), dir.path());
    let result = crate::call(kind, granted(dir.path()), call).await.unwrap();
    let failure = result.failure.expect("invalid output");
    assert_eq!(failure.kind, FailureKind::InvalidOutput);
    assert_eq!(failure.violations.len(), 1, "{:?}", failure.violations);
    assert_eq!(failure.violations[0].pointer, "/echo/n");
    assert!(
        failure.violations[0].constraint.starts_with("type at "),
        "{:?}",
        failure.violations[0]
    );
    assert!(failure.message.contains("/echo/n"), "{}", failure.message);
});

both!(output_that_is_not_json_is_a_tool_failure, |kind| {
    let dir = tempfile::tempdir().unwrap();
    let result = call(
        kind,
        granted(dir.path()),
        probe_call(json!({"op": "raw", "text": "hello"}), dir.path()),
    )
    .await
    .unwrap();
    let failure = result.failure.expect("invalid output");
    assert_eq!(failure.kind, FailureKind::InvalidOutput);
    assert!(
        failure.message.contains("not JSON") && failure.message.contains("hello"),
        "{}",
        failure.message
    );
});

both!(exceeded_limit_is_a_structured_failure, |kind| {
    let dir = tempfile::tempdir().unwrap();
    let result = call(
        kind,
        granted(dir.path()),
        probe_call(json!({"op": "spin"}), dir.path()),
    )
    .await
    .unwrap();
    let failure = result.failure.expect("limit");
    assert_eq!(failure.kind, FailureKind::LimitExceeded { limit: "fuel" });
    assert!(
        failure.message.contains("fuel limit (50000000 units)"),
        "{}",
        failure.message
    );
    assert!(failure.hint.contains("smaller"));
});

both!(
    a_long_call_does_not_hold_up_a_short_one_polled_after_it,
    |kind| {
        // Both calls are driven by one task, the long one polled first. A short call ends within
        // its first poll, on the task's own thread; a long one gets one slice there and then
        // moves to a blocking thread, so the short call, polled next, ends first. Were a long call
        // run to its end inside its first poll, the short one would wait for it.
        let dir = tempfile::tempdir().unwrap();
        let pipeline = build(kind, granted(dir.path()), 1 << 20);
        let echo = || probe_call(json!({"op": "echo", "n": "x"}), dir.path());
        // The first call of each tool verifies and compiles; warm both so the calls below start
        // at once.
        for warm in [
            echo(),
            ToolCall::new("test.long-spin", json!({"op": "echo"})),
        ] {
            let result = pipeline.clone().oneshot(warm).await.unwrap();
            assert!(result.failure.is_none(), "{result:?}");
        }
        // The long call spins for up to 10 s (`test.long-spin`): the short one must end while it
        // is still running. (A spin that stopped at the probe's own 50M fuel, some 30 ms, could
        // end first on a loaded machine without anything being held up.)
        let spin = pipeline
            .clone()
            .oneshot(ToolCall::new("test.long-spin", json!({"op": "spin"})));
        let mut spin = Box::pin(spin);
        let short = pipeline.clone().oneshot(echo());
        tokio::select! {
            biased;
            ended = &mut spin => panic!("the long call ended before the short one: {ended:?}"),
            short = short => assert!(short.unwrap().failure.is_none()),
        }
        // Dropping the long call stops it in its sandbox.
        drop(spin);
    }
);

both!(tool_error_carries_its_message_and_exit_code, |kind| {
    let dir = tempfile::tempdir().unwrap();
    let op = json!({"op": "exit", "code": 3, "stderr": "cannot parse page 4"});
    let result = call(kind, granted(dir.path()), probe_call(op, dir.path()))
        .await
        .unwrap();
    let failure = result.failure.expect("tool error");
    assert_eq!(failure.kind, FailureKind::ToolError { exit_code: 3 });
    assert_eq!(failure.message, "cannot parse page 4");
});

both!(workspace_must_be_selected_and_granted, |kind| {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("note.txt"), "granted").unwrap();
    let read = json!({"op": "read", "path": "/workspace/note.txt"});

    let error = call(
        kind,
        granted(dir.path()),
        ToolCall::new("test.probe", read.clone()),
    )
    .await
    .unwrap_err();
    assert!(error.to_string().contains("workspace directory"), "{error}");

    let elsewhere = tempfile::tempdir().unwrap();
    let error = call(
        kind,
        granted(elsewhere.path()),
        probe_call(read.clone(), dir.path()),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(error, ExecError::CapabilityDenied { .. })
            && error.to_string().contains("not inside"),
        "{error}"
    );

    let result = call(kind, granted(dir.path()), probe_call(read, dir.path()))
        .await
        .unwrap();
    // The probe's output schema accepts only `echo`, so this is an invalid-output failure,
    // but the output shows the granted file was read.
    assert_eq!(
        result.output.unwrap(),
        json!({"ok": true, "content": "granted"})
    );
});

both!(a_subdirectory_of_a_grant_is_granted, |kind| {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/a.txt"), "a").unwrap();
    let result = call(
        kind,
        granted(dir.path()),
        probe_call(
            json!({"op": "list", "path": "/workspace"}),
            &dir.path().join("sub"),
        ),
    )
    .await
    .unwrap();
    assert_eq!(result.output.unwrap()["entries"], json!(["a.txt"]));
});

both!(write_tool_needs_a_writable_grant, |kind| {
    let dir = tempfile::tempdir().unwrap();
    let args = json!({"path": "out.txt", "content": "hello"});
    let error = call(
        kind,
        granted(dir.path()),
        ToolCall::new("filesystem.write", args.clone()).with_workspace(dir.path()),
    )
    .await
    .unwrap_err();
    assert!(error.to_string().contains("write access"), "{error}");
    assert!(!dir.path().join("out.txt").exists());

    let writable = grants().with_fs(FsGrant::new(dir.path()).with_write(true));
    let result = call(
        kind,
        writable,
        ToolCall::new("filesystem.write", args).with_workspace(dir.path()),
    )
    .await
    .unwrap();
    assert!(result.failure.is_none(), "{:?}", result.failure);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "hello"
    );
});

both!(safety_tier_above_the_apps_maximum_is_denied, |kind| {
    let dir = tempfile::tempdir().unwrap();
    let read_only_app = Grants::new().with_fs(FsGrant::new(dir.path()).with_write(true));
    let args = json!({"path": "out.txt", "content": "hello"});
    let error = call(
        kind,
        read_only_app,
        ToolCall::new("filesystem.write", args).with_workspace(dir.path()),
    )
    .await
    .unwrap_err();
    assert!(
        error.to_string().contains("side_effecting safety tier"),
        "{error}"
    );
});

both!(
    long_output_is_capped_with_a_marker_and_stays_valid,
    |kind| {
        let text = "word ".repeat(4000);
        let capped = build(kind, grants(), 2_000);
        let result = capped
            .oneshot(ToolCall::new(
                "text.chunk",
                json!({"text": text, "max_chars": 20_000}),
            ))
            .await
            .unwrap();
        let truncation = result.truncation.expect("cut");
        assert!(
            truncation.original_bytes > 20_000 && truncation.returned_bytes <= 2_000,
            "{truncation:?}"
        );
        assert!(
            result.failure.is_none(),
            "the capped output still matches its schema: {:?}",
            result.failure
        );
        let chunk = result.output.unwrap()["chunks"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            chunk.contains("[truncated by locara: kept "),
            "{}",
            &chunk[chunk.len() - 80..]
        );
    }
);

// Hostile tools and hostile callers (issue 5): each ends in a structured error and the next
// call on the same pipeline works.

/// `depth` levels of `[[…]]`, built without the recursion `json!` would use.
fn nested(depth: usize) -> Value {
    let mut value = json!(0);
    for _ in 0..depth {
        value = Value::Array(vec![value]);
    }
    value
}

both!(
    deeply_nested_arguments_are_refused_without_recursing,
    |kind| {
        let dir = tempfile::tempdir().unwrap();
        let pipeline = build(kind, granted(dir.path()), 1 << 20);
        let arguments = json!({"op": "echo", "deep": null});
        let mut arguments = arguments;
        // A million levels: serializing, validating or dropping it recursively would overflow.
        arguments["deep"] = nested(1_000_000);
        let error = pipeline
            .clone()
            .oneshot(probe_call(arguments, dir.path()))
            .await
            .unwrap_err();
        let ExecError::InvalidInput { violations, .. } = &error else {
            panic!("{error}")
        };
        assert_eq!(violations[0].constraint, "max_depth");
        assert!(
            violations[0].pointer.starts_with("/deep/0/0/"),
            "{violations:?}"
        );
        // 128 levels are fine.
        let ok = pipeline
            .oneshot(probe_call(
                json!({"op": "echo", "deep": nested(120)}),
                dir.path(),
            ))
            .await
            .unwrap();
        assert!(ok.output.is_some(), "{:?}", ok.failure);
    }
);

both!(output_that_is_not_utf8_is_a_tool_failure, |kind| {
    let dir = tempfile::tempdir().unwrap();
    let result = call(
        kind,
        granted(dir.path()),
        probe_call(
            json!({"op": "bytes", "hex": "7b226563686f223aff7d"}),
            dir.path(),
        ),
    )
    .await
    .unwrap();
    let failure = result.failure.expect("invalid output");
    assert_eq!(failure.kind, FailureKind::InvalidOutput);
    assert!(failure.message.contains("not JSON"), "{}", failure.message);
});

both!(output_nested_too_deep_is_a_tool_failure, |kind| {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let result = call(
        kind,
        granted(dir.path()),
        probe_call(json!({"op": "raw", "text": text}), dir.path()),
    )
    .await
    .unwrap();
    let failure = result.failure.expect("invalid output");
    assert_eq!(failure.kind, FailureKind::InvalidOutput);
    assert!(
        failure.message.contains("recursion limit"),
        "{}",
        failure.message
    );
});

both!(dropping_the_call_future_cancels_the_call, |kind| {
    let dir = tempfile::tempdir().unwrap();
    let temp_root = tempfile::tempdir().unwrap();
    let mut sandbox_config = SandboxConfig::new(kind);
    sandbox_config.temp_root(temp_root.path());
    let sandbox = Sandbox::new(&sandbox_config).unwrap();
    let config = ExecConfig::new(Arc::new(home().registry()), sandbox, granted(dir.path()));
    let pipeline = pipeline(&config);
    // Compile first, so that the timeout below only covers the run.
    let warm = pipeline
        .clone()
        .oneshot(probe_call(json!({"op": "echo"}), dir.path()))
        .await
        .unwrap();
    assert!(warm.output.is_some());
    // Opens two files in /tmp, then sleeps past the manifest's 2 s deadline; `disk` has the
    // temp dir made on disk (the host would otherwise keep it in memory), to be seen removed.
    let sleeper = probe_call(
        json!({"op": "hold_fds", "count": 2, "ms": 60_000, "disk": true}),
        dir.path(),
    );
    let count = || std::fs::read_dir(temp_root.path()).unwrap().count();
    let mut running = Box::pin(pipeline.clone().oneshot(sleeper));
    // Wait until the guest has made its temp dir, then drop the call's future.
    let started = std::time::Instant::now();
    while count() == 0 {
        tokio::select! {
            result = &mut running => panic!("the call finished: {result:?}"),
            () = tokio::time::sleep(std::time::Duration::from_millis(5)) => {}
        }
        assert!(started.elapsed() < std::time::Duration::from_millis(1500));
    }
    drop(running);
    // The call stops within a tick or a slice, long before its 2 s deadline; its temp dir goes
    // with it.
    let dropped = std::time::Instant::now();
    while count() > 0 {
        assert!(
            dropped.elapsed() < std::time::Duration::from_secs(1),
            "the cancelled call still runs"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let next = pipeline
        .oneshot(probe_call(json!({"op": "echo"}), dir.path()))
        .await
        .unwrap();
    assert!(next.output.is_some());
});

/// Answers every request with `approve`, and remembers what it was asked.
#[derive(Debug, Default)]
struct RecordingApprover {
    approve: bool,
    asked: std::sync::Mutex<Vec<(String, Value)>>,
}

#[async_trait::async_trait]
impl Approver for RecordingApprover {
    async fn approve(&self, request: &ApprovalRequest) -> ApprovalDecision {
        self.asked
            .lock()
            .unwrap()
            .push((request.tool.to_string(), request.arguments.clone()));
        if self.approve {
            ApprovalDecision::approve("test", "the test says yes")
        } else {
            ApprovalDecision::deny("test", "the test says no")
        }
    }
}

fn approving(approver: Option<Arc<RecordingApprover>>) -> Pipeline {
    let sandbox = Sandbox::new(&SandboxConfig::new(BackendKind::Wasmtime)).unwrap();
    let grants = Grants::new().with_max_safety_tier(SafetyTier::Privileged);
    let mut config = ExecConfig::new(Arc::new(home().registry()), sandbox, grants);
    if let Some(approver) = approver {
        config = config.with_approver(approver);
    }
    pipeline(&config)
}

fn echo(id: &str) -> ToolCall {
    ToolCall::new(id, json!({"op": "echo", "text": "hi"}))
}

#[tokio::test]
async fn privileged_call_without_an_approver_is_denied() {
    let error = approving(None)
        .oneshot(echo("test.privileged"))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "approval_denied");
    let message = error.to_string();
    assert!(message.contains("test.privileged@0.1.0"), "{message}");
    assert!(message.contains("no approver is configured"), "{message}");
}

#[tokio::test]
async fn privileged_call_runs_only_when_approved_and_records_the_decision() {
    let no = Arc::new(RecordingApprover::default());
    let error = approving(Some(no.clone()))
        .oneshot(echo("test.privileged"))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ExecError::ApprovalDenied { by, reason, .. } if by == "test" && reason == "the test says no"),
        "{error:?}"
    );
    assert_eq!(
        no.asked.lock().unwrap().as_slice(),
        [(
            "test.privileged@0.1.0".to_owned(),
            json!({"op": "echo", "text": "hi"})
        )]
    );

    let yes = Arc::new(RecordingApprover {
        approve: true,
        ..RecordingApprover::default()
    });
    let result = approving(Some(yes.clone()))
        .oneshot(echo("test.privileged"))
        .await
        .unwrap();
    assert!(result.failure.is_none(), "{:?}", result.failure);
    assert_eq!(
        result.approval,
        Some(ApprovalDecision::approve("test", "the test says yes"))
    );
    assert_eq!(yes.asked.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn approver_is_asked_only_about_valid_privileged_calls() {
    let approver = Arc::new(RecordingApprover {
        approve: true,
        ..RecordingApprover::default()
    });
    let pipeline = approving(Some(approver.clone()));
    // Another tier: never asked, no decision recorded.
    let result = pipeline
        .clone()
        .oneshot(echo("test.read-only"))
        .await
        .unwrap();
    assert!(result.failure.is_none(), "{:?}", result.failure);
    assert_eq!(result.approval, None);
    // Invalid arguments are refused before anyone is asked.
    let error = pipeline
        .oneshot(ToolCall::new("test.privileged", json!({"op": 7})))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "invalid_input");
    assert!(approver.asked.lock().unwrap().is_empty());
}

/// A tool that starts quickly and asks the gateway in its first slice, on the async runtime's
/// own thread, has its request answered right there, with no hop to a blocking thread and back:
/// through `locara_host` and through the host channel alike.
#[tokio::test]
async fn a_quick_tools_request_is_answered_on_the_runtime_thread() {
    // A current-thread runtime: the test's thread is its only one.
    let here = std::thread::current().id();
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    // Set when the answer to a request for `never` (which never comes) is dropped.
    let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    struct SetOnDrop(Arc<std::sync::atomic::AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
    let gateway = {
        let (asked, dropped) = (Arc::clone(&asked), Arc::clone(&dropped));
        locara_exec::ToolGateway::new(move |request| {
            asked
                .lock()
                .unwrap()
                .push((std::thread::current().id(), request["tool"].clone()));
            if request["tool"] == "never" {
                let guard = SetOnDrop(Arc::clone(&dropped));
                return Box::pin(async move {
                    let _guard = guard;
                    std::future::pending::<()>().await;
                    Err("unreachable".to_owned())
                });
            }
            Box::pin(async move {
                Ok(json!({"ok": true, "asked": request})
                    .to_string()
                    .into_bytes())
            })
        })
    };
    let pipeline = build(
        BackendKind::Wasmtime,
        grants().with_service(locara_exec::TOOLS),
        1 << 20,
    );
    let run = |op: Value| {
        let call = ToolCall::new("test.calls-tools", op)
            .with_context(locara_exec::CallContext::new().with_gateway(gateway.clone()));
        pipeline.clone().oneshot(call)
    };
    // The first call compiles the module, which is done on a blocking thread.
    let request = |tool: &str| json!({"op": "describe", "tool": tool}).to_string();
    run(json!({"op": "service", "service": "tools", "request": request("first")}))
        .await
        .unwrap();

    // Requests are answered in place only within `IN_PLACE` (2 ms) of a call's start; a test
    // binary running its tests side by side on two cores can be kept off the CPU longer than
    // that, and the call then rightly moves to a blocking thread. So a few tries, of which one
    // must see every request answered on this thread.
    let answered_here =
        |asked: &[(std::thread::ThreadId, Value)]| asked.iter().all(|(thread, _)| *thread == here);
    let mut tries = Vec::new();
    for _ in 0..5 {
        asked.lock().unwrap().clear();
        let result = run(json!({"op": "service", "service": "tools", "request": request("a")}))
            .await
            .unwrap();
        let output = result.output.clone().unwrap_or_default();
        let answer: Value = serde_json::from_str(output["answer"].as_str().unwrap()).unwrap();
        assert_eq!(answer["asked"]["tool"], "a", "{result:?}");
        let lines = [
            json!({"service": "tools", "request": {"op": "describe", "tool": "b"}}).to_string(),
            json!({"service": "tools", "request": {"op": "describe", "tool": "c"}}).to_string(),
        ];
        let result = run(json!({"op": "channel", "lines": lines})).await.unwrap();
        let output = result.output.unwrap_or_default();
        let answers = output["answers"].as_str().unwrap();
        assert_eq!(answers.lines().count(), 2, "{answers}");
        assert!(answers.contains(r#""tool":"c""#), "{answers}");
        let asked = asked.lock().unwrap().clone();
        let tools: Vec<Value> = asked.iter().map(|(_, tool)| tool.clone()).collect();
        assert_eq!(tools, [json!("a"), json!("b"), json!("c")]);
        let in_place = answered_here(&asked);
        tries.push(asked);
        if in_place {
            break;
        }
    }
    assert!(
        answered_here(tries.last().unwrap()),
        "no try had every request answered on the runtime's thread {here:?}: {tries:?}"
    );

    // An answer that is not ready at once is started here (within `IN_PLACE`), then waited
    // for where blocking is allowed, within the call's deadline (the probe's 2 s): the
    // deadline stops the guest and drops the answer, which cancels it.
    let started = std::time::Instant::now();
    let result = run(json!({"op": "service", "service": "tools", "request": request("never")}))
        .await
        .unwrap();
    let failure = result.failure.expect("stopped by the deadline");
    assert_eq!(
        failure.kind,
        FailureKind::LimitExceeded { limit: "wall_time" },
        "{failure:?}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    // Started on this thread when the call got there within `IN_PLACE`, else on the blocking
    // one (see the tries above): either way asked once, and its answer dropped.
    assert_eq!(asked.lock().unwrap()[3].1, json!("never"));
    assert_eq!(asked.lock().unwrap().len(), 4);
    assert!(dropped.load(std::sync::atomic::Ordering::SeqCst));
}

/// A host may call the pipeline where no runtime is current and poll the future later, inside
/// one: `Execute` then prepares the call when first polled rather than in `call` (where it
/// needs the runtime), on both engines.
#[test]
fn a_call_made_outside_a_runtime_runs_when_polled_in_one() {
    use tower::Service;

    let text = "One sentence. Another sentence.";
    let arguments = json!({"text": text, "max_chars": 16});
    for kind in [BackendKind::Wasmtime, BackendKind::Wasmi] {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let pipeline = build(kind, grants(), 1 << 20);
        // The first call compiles and verifies; the second is the one under test, whose module
        // is compiled and whose tool is verified already.
        let first = rt
            .block_on(
                pipeline
                    .clone()
                    .oneshot(ToolCall::new("text.chunk", arguments.clone())),
            )
            .unwrap();
        assert!(first.failure.is_none(), "{kind:?}: {:?}", first.failure);
        assert!(tokio::runtime::Handle::try_current().is_err());
        let mut service = pipeline.clone();
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(service.poll_ready(&mut cx).is_ready(), "{kind:?}");
        let future = service.call(ToolCall::new("text.chunk", arguments.clone()));
        let result = rt.block_on(future).unwrap();
        assert!(result.failure.is_none(), "{kind:?}: {:?}", result.failure);
        assert_eq!(result.output, first.output, "{kind:?}");
    }
}
