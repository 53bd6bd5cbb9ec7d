//! The sandbox escape of issue 14, as an attacker tried it, through the facade on both engines:
//! a Python program replaces `/tmp/out` by a relative link that climbs to `/` and down into the
//! Locara home's `keys/`, so that a host following it would return the secret keys as the
//! tool's output files. The call must fail with no files, and no byte of the key may appear in
//! anything the call returns. The same program writing through a link below an output
//! directory (`--out`) must not write outside it.

use locara_facade::{BackendKind, Locara, LocaraConfig, RunRequest};
use locara_manifest::{FsGrant, Grants};
use locara_test_artifacts::{SHARED_COMPILED_CACHE, TestHome, UPSTREAM_TOOLS};
use serde_json::json;
use std::path::Path;

const TOOL: &str = "code-exec.python";

/// Writes a secret key file into `<home>/keys/`, and returns its text.
pub(crate) fn plant_home_key(home: &Path) -> String {
    let keys = home.join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let secret = format!(
        "{{\"secret_key\": \"PLANTED-HOME-KEY-{}-{}\"}}",
        std::process::id(),
        keys.display().to_string().len()
    );
    std::fs::write(keys.join("locara-dev.secret.json"), &secret).unwrap();
    secret
}

/// Fails if `text` holds the key, as it is or base64-encoded.
pub(crate) fn assert_no_key(text: &str, secret: &str) {
    use base64::Engine as _;
    let marker = &secret[secret.find("PLANTED").unwrap()..secret.len() - 2];
    let encoded = base64::engine::general_purpose::STANDARD.encode(secret);
    assert!(
        !text.contains(marker) && !text.contains(&encoded),
        "the home key leaked: {text}"
    );
}

/// The Python program of the issue: `/tmp/out` replaced by a relative link to `<home>/keys`.
pub(crate) fn link_out_to_keys(home: &Path) -> String {
    format!(
        "import os\nos.symlink({:?}, '/tmp/out')\n",
        climb_to(&home.join("keys"))
    )
}

/// A home with code-exec.python and a secret key file in `<home>/keys/`.
fn home_with_key() -> (TestHome, String) {
    let home = TestHome::new();
    assert!(UPSTREAM_TOOLS.iter().any(|(id, _)| *id == TOOL));
    home.publish_upstream_tool(TOOL);
    let secret = plant_home_key(home.path());
    (home, secret)
}

fn hosts(home: &TestHome, grants: Option<Grants>) -> Vec<Locara> {
    BackendKind::ALL
        .into_iter()
        .map(|engine| {
            let mut config = LocaraConfig::new(home.path())
                .with_engine(engine)
                .with_compiled_cache(SHARED_COMPILED_CACHE);
            if let Some(grants) = &grants {
                config = config.with_grants(grants.clone());
            }
            Locara::new(&config).expect("locara starts")
        })
        .collect()
}

/// `..` up to `/`, then `path` without its leading `/`: a relative link to any host path.
fn climb_to(path: &std::path::Path) -> String {
    format!(
        "{}{}",
        "../".repeat(32),
        path.display().to_string().trim_start_matches('/')
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlinked_out_never_returns_a_home_key() {
    let (home, secret) = home_with_key();
    let target = climb_to(&home.path().join("keys"));
    // As in the issue: the link at /tmp/out, and the same link one level down.
    let programs = [
        (
            true,
            format!("import os\nos.symlink({target:?}, '/tmp/out')\n"),
        ),
        (
            false,
            format!(
                "import os\nos.makedirs('/tmp/out')\nos.symlink({target:?}, '/tmp/out/keys')\n"
            ),
        ),
    ];
    for locara in hosts(&home, None) {
        for (at_out, code) in &programs {
            let response = locara
                .run(RunRequest::new(TOOL, json!({ "code": code })))
                .await
                .expect("the call runs");
            let everything = serde_json::to_string(&response).unwrap();
            assert_no_key(&everything, &secret);
            assert!(
                response.files.is_empty(),
                "{}: {:?}",
                locara.engine().name(),
                response.files
            );
            if *at_out {
                let error = response
                    .error
                    .unwrap_or_else(|| panic!("a link at /tmp/out fails the call: {everything}"));
                assert_eq!(error.code, "invalid_output", "{error:?}");
                assert!(
                    error.message.contains("/tmp/out as a symbolic link"),
                    "{error:?}"
                );
            } else {
                assert!(response.ok, "a link inside out/ is skipped: {response:?}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_files_are_never_written_through_a_link_in_the_output_dir() {
    let (home, _) = home_with_key();
    let scratch = tempfile::tempdir().unwrap();
    let granted = scratch.path().join("granted");
    let outside = scratch.path().join("outside");
    std::fs::create_dir_all(granted.join("out")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    // Left by an earlier call or another program: `out/sub` leads out of the grant.
    std::os::unix::fs::symlink(&outside, granted.join("out/sub")).unwrap();
    let mut grants = Grants::default();
    grants.fs = vec![FsGrant::new(&granted).with_write(true)];
    // `/tmp/out` is the directory the host collects (the driver's own `out/` is returned
    // inside the output instead).
    let code = "import os\nos.makedirs('/tmp/out/sub')\nopen('/tmp/out/sub/x.txt', 'w').write('escaped')\nopen('/tmp/out/fine.txt', 'w').write('fine')\n";
    for locara in hosts(&home, Some(grants.clone())) {
        let result = locara
            .run(
                RunRequest::new(TOOL, json!({ "code": code })).with_output_dir(granted.join("out")),
            )
            .await;
        let error = result.expect_err("a link where a file goes is an error");
        assert_eq!(error.code(), "output_dir", "{error:?}");
        assert!(error.to_string().contains("is a symbolic link"), "{error}");
        assert_eq!(
            std::fs::read_dir(&outside).unwrap().count(),
            0,
            "{} wrote outside the grant",
            locara.engine().name()
        );
    }
}

/// The reproduction from the command line, `locara run code-exec.python --arg code=@esc.py
/// --json` as in the issue, on both engines: exit 1, an `invalid_output` report, and no byte
/// of the key anywhere.
#[test]
fn the_cli_returns_no_home_key() {
    let (home, secret) = home_with_key();
    let script = home.path().join("esc.py");
    std::fs::write(&script, link_out_to_keys(home.path())).unwrap();
    for engine in ["wasmtime", "wasmi"] {
        let output = std::process::Command::new(crate::mcp_server::locara())
            .args(["--home", home.path().to_str().unwrap(), "--engine", engine])
            .args(["run", TOOL, "--arg"])
            .arg(format!("code=@{}", script.display()))
            .arg("--json")
            .current_dir(home.path())
            .output()
            .expect("run locara");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{engine}: {stdout}\n{stderr}"
        );
        assert!(
            format!("{stdout}{stderr}").contains("/tmp/out as a symbolic link"),
            "{engine}: {stdout}\n{stderr}"
        );
        assert_no_key(&format!("{stdout}{stderr}"), &secret);
    }
}
