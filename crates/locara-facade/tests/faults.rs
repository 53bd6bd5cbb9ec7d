//! Faults under a running host (issue 5): the registry changing on disk, a call cancelled
//! through the facade, arguments nested too deep for any recursive code.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use locara_facade::{
    BackendKind, ChainRequest, FsGrant, Grants, Locara, LocaraConfig, RunRequest, SafetyTier,
};
use locara_test_artifacts::TestHome;
use serde_json::{Value, json};

fn grants(dir: &Path) -> Grants {
    Grants::new()
        .with_max_safety_tier(SafetyTier::SideEffecting)
        .with_fs(FsGrant::new(dir))
}

fn locara(home: &TestHome, engine: BackendKind, dir: &Path) -> Locara {
    Locara::new(
        &LocaraConfig::new(home.path())
            .with_engine(engine)
            .with_grants(grants(dir)),
    )
    .expect("locara starts")
}

fn echo(dir: &Path) -> RunRequest {
    RunRequest::new("test.probe", json!({"op": "echo", "n": "1"})).with_workspace(dir)
}

fn probe_artifact(home: &TestHome) -> std::path::PathBuf {
    home.registry_dir()
        .join("tools/test.probe/0.1.0/test.probe-0.1.0.wasm")
}

/// The text.chunk artifact: a real, different module to swap in for the probe.
fn other_wasm() -> Vec<u8> {
    let (_, wasm, _) = locara_test_artifacts::TOOLS
        .iter()
        .find(|(id, _, _)| *id == "text.chunk")
        .expect("text.chunk is built");
    std::fs::read(wasm).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_artifact_replaced_on_disk_never_runs_under_the_signed_hash() {
    let home = TestHome::new();
    let dir = tempfile::tempdir().unwrap();
    let running = locara(&home, BackendKind::Wasmtime, dir.path());
    let first = running.run(echo(dir.path())).await.unwrap();
    assert!(first.ok, "{:?}", first.error);

    // Someone swaps the registry's copy for other bytes, without re-signing.
    std::fs::write(probe_artifact(&home), other_wasm()).unwrap();
    // The running host keeps the bytes it verified (and compiled): still the probe.
    let again = running.run(echo(dir.path())).await.unwrap();
    assert_eq!(again.output, first.output);
    // A new host verifies again; the content-addressed cache still has the signed bytes, so it
    // runs those, never the swapped file.
    let restarted = locara(&home, BackendKind::Wasmtime, dir.path());
    let after = restarted.run(echo(dir.path())).await.unwrap();
    assert_eq!(after.output, first.output);
    // With the cached copy gone too, nothing with the signed hash is left: a clear refusal.
    for entry in std::fs::read_dir(home.path().join("cache/sha256")).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    let refused = locara(&home, BackendKind::Wasmtime, dir.path())
        .run(echo(dir.path()))
        .await
        .unwrap_err();
    let report = refused.report();
    assert_eq!(report.code, "artifact_tampered", "{report:?}");
    assert!(report.hint.contains("do not run it"), "{}", report.hint);
    assert!(report.message.contains("test.probe"), "{}", report.message);

    // The publisher re-signs the new bytes under the same version. The host's lockfile pinned
    // the old build, so a new host refuses it until the change is re-locked deliberately.
    let template = Path::new(locara_test_artifacts::PROBE_MANIFEST);
    let (_, chunk_wasm, _) = locara_test_artifacts::TOOLS
        .iter()
        .find(|(id, _, _)| *id == "text.chunk")
        .unwrap();
    home.publish(&home.registry(), Path::new(chunk_wasm), template)
        .unwrap();
    let refused = locara(&home, BackendKind::Wasmtime, dir.path())
        .run(echo(dir.path()))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), "lock_mismatch", "{refused}");
    let trust = locara_registry::TrustStore::new().with_key(home.key.public_key().clone());
    locara_registry::Registry::new(
        locara_registry::RegistryConfig::new(home.registry_dir())
            .with_cache_dir(home.path().join("cache"))
            .with_trust(trust)
            .with_lockfile(home.path().join("locara.lock")),
    )
    .unwrap()
    .lock_forced(&"test.probe".parse().unwrap(), &"0.1.0".parse().unwrap())
    .unwrap();
    // Now a new host runs the new module, not the code it compiled and cached on disk for the
    // old hash.
    let new_host = locara(&home, BackendKind::Wasmtime, dir.path());
    let republished = new_host.run(echo(dir.path())).await.unwrap();
    assert!(!republished.ok);
    assert_eq!(
        republished.error.as_ref().map(|e| e.code.as_str()),
        Some("tool_error"),
        "{republished:?}"
    );
    assert_ne!(
        new_host.describe("test.probe").unwrap().artifact_sha256,
        running.describe("test.probe").unwrap().artifact_sha256
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_run_leaves_nothing_behind() {
    let home = TestHome::new();
    let dir = tempfile::tempdir().unwrap();
    for engine in BackendKind::ALL {
        let temp_root = tempfile::tempdir().unwrap();
        let locara = Locara::new(
            &LocaraConfig::new(home.path())
                .with_engine(engine)
                .with_grants(grants(dir.path()))
                .with_temp_root(temp_root.path()),
        )
        .unwrap();
        assert!(locara.run(echo(dir.path())).await.unwrap().ok);
        let count = || std::fs::read_dir(temp_root.path()).unwrap().count();
        // Holds two open files in its temp dir and sleeps past its 2 s deadline; `disk` has
        // the temp dir made on disk (else it stays in memory), to be seen removed.
        let holder = RunRequest::new(
            "test.probe",
            json!({"op": "hold_fds", "count": 2, "ms": 60_000, "disk": true}),
        )
        .with_workspace(dir.path());
        let mut running = Box::pin(locara.run(holder));
        let started = Instant::now();
        while count() == 0 {
            tokio::select! {
                result = &mut running => panic!("the call finished: {result:?}"),
                () = tokio::time::sleep(Duration::from_millis(5)) => {}
            }
            assert!(started.elapsed() < Duration::from_millis(1500));
        }
        assert!(locara_test_artifacts::open_fds_under(temp_root.path()) > 0);
        // The host gives up on the call: its future is dropped. (It is `Send`, so a host may
        // equally `tokio::spawn` it and abort the task.)
        fn assert_send<T: Send>(_: &T) {}
        assert_send(&running);
        drop(running);
        let dropped = Instant::now();
        while count() > 0 || locara_test_artifacts::open_fds_under(temp_root.path()) > 0 {
            assert!(
                dropped.elapsed() < Duration::from_secs(1),
                "{engine:?}: the cancelled call left its temp dir or descriptors"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(locara.run(echo(dir.path())).await.unwrap().ok);
    }
}

/// `depth` levels of `[[…]]`, built without the recursion `json!` would use.
fn nested(depth: usize) -> Value {
    let mut value = json!(0);
    for _ in 0..depth {
        value = Value::Array(vec![value]);
    }
    value
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_nested_a_million_deep_are_refused_in_runs_and_chains() {
    let home = TestHome::new();
    let dir = tempfile::tempdir().unwrap();
    let locara = locara(&home, BackendKind::Wasmtime, dir.path());
    let deep = || {
        let mut arguments = json!({"op": "echo"});
        arguments["deep"] = nested(1_000_000);
        RunRequest::new("test.probe", arguments).with_workspace(dir.path())
    };
    let error = locara.run(deep()).await.unwrap_err();
    assert_eq!(error.code(), "invalid_input");
    assert_eq!(error.report().violations[0].constraint, "max_depth");

    let chain = locara
        .run_chain(ChainRequest::new(vec![echo(dir.path()), deep()]))
        .await;
    assert!(!chain.ok);
    assert_eq!(chain.failed_step, Some(1));
    let report = chain.error.expect("an error report");
    assert_eq!(report.code, "invalid_input");
    assert_eq!(report.violations[0].constraint, "max_depth");
    assert!(report.violations[0].pointer.starts_with("/deep/0/0"));
    // The host is fine: the next call works.
    assert!(locara.run(echo(dir.path())).await.unwrap().ok);
}
