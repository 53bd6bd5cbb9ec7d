//! A tool written in C (`crates/locara-test-guests/c/wordcount.c`), built with Debian's clang
//! and wasi-libc (`.ci/test-deps`), published and called on both engines like any other: the
//! tool ABI is the process's stdin, stdout, stderr and exit code, not a Rust API.

use std::path::Path;
use std::process::Command;

use locara_facade::{BackendKind, RunRequest};
use locara_test_artifacts::TestHome;
use serde_json::json;

use crate::media_support::host;

const SOURCE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../crates/locara-test-guests/c/wordcount.c"
);
const MANIFEST: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../crates/locara-test-guests/manifests/test.c-wordcount.json"
);

/// Compiles the C tool for wasm32-wasi into `dir`.
fn build(dir: &Path) -> std::path::PathBuf {
    let wasm = dir.join("wordcount.wasm");
    let output = Command::new("clang")
        .args(["--target=wasm32-wasi", "-O2", "-Wall", "-Wextra", "-Werror"])
        .args(["-Wl,--strip-all", "-o"])
        .arg(&wasm)
        .arg(SOURCE)
        .output()
        .expect("clang for wasm32-wasi: install clang, lld, wasi-libc and libclang-rt-14-dev-wasm32 (.ci/test-deps)");
    assert!(
        output.status.success(),
        "clang failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    wasm
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_written_in_c_runs_through_the_pipeline_on_both_engines() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = build(dir.path());
    let home = TestHome::new();
    home.publish(&home.registry(), &wasm, Path::new(MANIFEST))
        .unwrap();
    for engine in BackendKind::ALL {
        let locara = host(&home, engine, None);
        let text = "two words\nand \"three\" more\u{e9}\n";
        let response = locara
            .run(RunRequest::new("test.c-wordcount", json!({ "text": text })))
            .await
            .unwrap();
        let last_line = locara
            .run(RunRequest::new(
                "test.c-wordcount",
                json!({"text": "one\ntwo"}),
            ))
            .await
            .unwrap();
        assert_eq!(
            last_line.output,
            Some(json!({"words": 2, "lines": 2})),
            "{engine:?}"
        );
        assert!(response.ok, "{engine:?}: {:?}", response.error);
        assert_eq!(
            response.output.unwrap(),
            json!({"words": 5, "lines": 2}),
            "{engine:?}"
        );

        // The host's schema check refuses what the manifest does not admit, before the tool runs.
        let error = locara
            .run(RunRequest::new("test.c-wordcount", json!({"text": 3})))
            .await
            .unwrap_err();
        assert_eq!(error.code(), "invalid_input", "{engine:?}: {error}");
    }
}
