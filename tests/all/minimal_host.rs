//! A host built from manifest + registry + sandbox alone: resolve, check nothing else, run.

use locara_manifest::ToolRef;
use locara_sandbox::{BackendKind, Capabilities, Limits, RunStatus, Sandbox, SandboxConfig};
use locara_test_artifacts::TestHome;

#[test]
fn resolve_and_run_without_the_pipeline() {
    let home = TestHome::new();
    let artifact = home
        .registry()
        .resolve(&"text.chunk@0.1.0".parse::<ToolRef>().unwrap())
        .unwrap();
    for kind in BackendKind::ALL {
        let sandbox = Sandbox::new(&SandboxConfig::new(kind)).unwrap();
        let compiled = sandbox
            .compile(
                &artifact.wasm().unwrap(),
                Some(&artifact.artifact_digest().to_string()),
            )
            .unwrap();
        let limits = artifact.manifest().limits();
        let limits = Limits {
            memory_bytes: limits.memory_bytes,
            wall_time: limits.wall_time,
            fuel: limits.fuel,
            output_bytes: limits.output_bytes,
            max_fds: limits.max_fds,
            temp_bytes: limits.temp_bytes,
        };
        let outcome = compiled
            .run(
                br#"{"text": "Hello there. General Kenobi.", "max_chars": 16}"#,
                &limits,
                &Capabilities::new(),
            )
            .unwrap();
        assert_eq!(
            outcome.status,
            RunStatus::Exited(0),
            "{}",
            String::from_utf8_lossy(&outcome.stderr)
        );
        let output: serde_json::Value = serde_json::from_slice(&outcome.stdout).unwrap();
        assert_eq!(output["chunks"][0]["text"], "Hello there. ");
        assert_eq!(output["chunks"][1]["text"], "General Kenobi.");
    }
}
