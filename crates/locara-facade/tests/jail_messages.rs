//! What a built-in tool says when the sandbox refuses a path because a symbolic link or `..`
//! leads out of the workspace: the path and why, never WASI's "Capabilities insufficient (os
//! error 76)". Real tools on both engines, a workspace holding links that point out of it.

use std::path::Path;

use locara_facade::{BackendKind, FsGrant, Grants, Locara, LocaraConfig, RunRequest, SafetyTier};
use locara_test_artifacts::TestHome;
use serde_json::{Value, json};

/// `<tmp>/ws` (the workspace) with `secret` → `/etc/passwd`, `outside` → `<tmp>/outside.txt`
/// and `elsewhere/` → `<tmp>/other` (a directory), and `<tmp>/outside.txt` beside it.
fn workspace() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("inside.txt"), "inside\n").unwrap();
    std::fs::write(tmp.path().join("outside.txt"), "outside\n").unwrap();
    std::fs::create_dir(tmp.path().join("other")).unwrap();
    std::fs::write(tmp.path().join("other/file.txt"), "other\n").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", ws.join("secret")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("outside.txt"), ws.join("outside")).unwrap();
    std::os::unix::fs::symlink("../other", ws.join("elsewhere")).unwrap();
    tmp
}

/// The message of a call that the tool must refuse with exit code 2 (bad arguments).
async fn refusal(locara: &Locara, ws: &Path, tool: &str, arguments: Value) -> String {
    let request = RunRequest::new(tool, arguments.clone()).with_workspace(ws);
    let response = locara
        .run(request)
        .await
        .unwrap_or_else(|e| panic!("{tool} {arguments} could not run: {e}"));
    assert!(!response.ok, "{tool} {arguments} succeeded: {response:?}");
    let error = response.error.expect("a failed call has an error");
    assert_eq!(
        (error.code.as_str(), error.exit_code),
        ("tool_error", Some(2)),
        "{tool} {arguments} on {}: {error:?}",
        locara.engine().name()
    );
    assert!(
        !error.message.contains("os error") && !error.message.contains("Capabilities"),
        "{tool} {arguments}: {}",
        error.message
    );
    error.message
}

const LEADS_OUT: &str = "is outside the workspace (a link or `..` leads out); the tool can only reach files inside the workspace, so pass a path that stays in it";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_that_leads_out_of_the_workspace_is_named_and_explained() {
    let home = TestHome::new();
    let tmp = workspace();
    let ws = tmp.path().join("ws");
    let grants = Grants::new()
        .with_fs(FsGrant::new(&ws).with_write(true))
        .with_max_safety_tier(SafetyTier::SideEffecting);
    for engine in BackendKind::ALL {
        let locara = Locara::new(
            &LocaraConfig::new(home.path())
                .with_engine(engine)
                .with_grants(grants.clone()),
        )
        .expect("locara starts");
        let check = async |tool: &str, arguments: Value, path: &str| {
            let message = refusal(&locara, &ws, tool, arguments).await;
            assert_eq!(message, format!("\"{path}\" {LEADS_OUT}"), "{tool}");
        };
        check("filesystem.read", json!({"path": "secret"}), "secret").await;
        check("filesystem.read", json!({"path": "outside"}), "outside").await;
        check(
            "filesystem.read",
            json!({"path": "../outside.txt"}),
            "../outside.txt",
        )
        .await;
        check(
            "filesystem.read",
            json!({"path": "elsewhere/file.txt"}),
            "elsewhere/file.txt",
        )
        .await;
        check(
            "filesystem.search",
            json!({"path": "elsewhere", "query": "other"}),
            "elsewhere",
        )
        .await;
        check("filesystem.list", json!({"path": "elsewhere"}), "elsewhere").await;
        check("filesystem.list", json!({"path": ".."}), "..").await;
        check(
            "pdf.extract-text",
            json!({"source": {"path": "secret"}}),
            "secret",
        )
        .await;
        check(
            "filesystem.write",
            json!({"path": "outside", "content": "changed\n", "mode": "overwrite"}),
            "outside",
        )
        .await;
        check(
            "filesystem.write",
            json!({"path": "elsewhere/new.txt", "content": "x"}),
            "elsewhere/new.txt",
        )
        .await;
        let message = refusal(
            &locara,
            &ws,
            "bash.read-only",
            json!({"command": "cat inside.txt secret"}),
        )
        .await;
        assert_eq!(
            message,
            "cat: secret: outside the workspace (a link or `..` leads out)"
        );
        let message = refusal(
            &locara,
            &ws,
            "bash.read-only",
            json!({"command": "wc -l ../outside.txt"}),
        )
        .await;
        assert_eq!(
            message,
            "wc: ../outside.txt: outside the workspace (a link or `..` leads out)"
        );

        // Nothing outside was touched, and what is inside still reads.
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("outside.txt")).unwrap(),
            "outside\n"
        );
        assert!(!tmp.path().join("other/new.txt").exists());
        let inside = locara
            .run(
                RunRequest::new("filesystem.read", json!({"path": "inside.txt"}))
                    .with_workspace(&ws),
            )
            .await
            .unwrap();
        assert_eq!(inside.output.unwrap()["content"], "inside\n");
    }
}
