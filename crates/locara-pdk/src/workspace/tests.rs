//! Tests for the workspace helpers: path mapping and error shaping.

use std::io;
use std::path::Path;

use super::*;
use crate::ErrorKind;

fn resolve(user: &str) -> Result<(String, String), ToolError> {
    resolve_path(Path::new("/root/ws"), user).map(|p| (p.full.display().to_string(), p.display))
}

#[test]
fn relative_paths_land_under_the_root() {
    assert_eq!(
        resolve("src/main.rs").unwrap(),
        ("/root/ws/src/main.rs".into(), "src/main.rs".into())
    );
    assert_eq!(
        resolve("./src//lib.rs/").unwrap(),
        ("/root/ws/src/lib.rs".into(), "src/lib.rs".into())
    );
    assert_eq!(resolve(".").unwrap(), ("/root/ws".into(), ".".into()));
    assert_eq!(resolve("./").unwrap(), ("/root/ws".into(), ".".into()));
}

#[test]
fn absolute_workspace_paths_are_accepted() {
    assert_eq!(
        resolve("/workspace").unwrap(),
        ("/root/ws".into(), ".".into())
    );
    assert_eq!(
        resolve("/workspace/").unwrap(),
        ("/root/ws".into(), ".".into())
    );
    assert_eq!(
        resolve("/workspace/a/b.txt").unwrap(),
        ("/root/ws/a/b.txt".into(), "a/b.txt".into())
    );
}

#[test]
fn dotdot_is_left_for_the_host_to_jail() {
    assert_eq!(
        resolve("../x").unwrap(),
        ("/root/ws/../x".into(), "../x".into())
    );
}

#[test]
fn other_absolute_paths_are_rejected() {
    for path in ["/etc/passwd", "/workspacefoo/x", "/tmp", "/"] {
        let err = resolve(path).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadArgs);
        assert!(err.message().contains("outside the workspace"), "{err}");
        assert!(err.message().contains(path), "{err}");
    }
}

#[test]
fn empty_and_nul_paths_are_rejected() {
    assert!(
        resolve("")
            .unwrap_err()
            .message()
            .starts_with("the path is empty")
    );
    assert!(
        resolve("  ")
            .unwrap_err()
            .message()
            .starts_with("the path is empty")
    );
    assert!(resolve("a\0b").unwrap_err().message().contains("NUL"));
}

#[test]
fn child_display_skips_the_dot() {
    let root = resolve_path(Path::new("/r"), ".").unwrap();
    assert_eq!(root.child_display("a/b"), "a/b");
    assert!(root.is_root());
    let sub = resolve_path(Path::new("/r"), "src").unwrap();
    assert_eq!(sub.child_display("a"), "src/a");
    assert!(!sub.is_root());
}

#[test]
fn io_errors_map_to_kinds_and_hints() {
    let err = io_error(&io::Error::from(io::ErrorKind::NotFound), "read", "a.txt");
    assert_eq!(err.kind(), ErrorKind::BadArgs);
    assert!(
        err.message()
            .starts_with("cannot read \"a.txt\": no such file or directory; use filesystem.list")
    );

    let err = io_error(
        &io::Error::from(io::ErrorKind::PermissionDenied),
        "write",
        "a.txt",
    );
    assert_eq!(err.kind(), ErrorKind::Failed);
    assert_eq!(err.message(), "cannot write \"a.txt\": permission denied");

    let err = io_error(
        &io::Error::from(io::ErrorKind::ReadOnlyFilesystem),
        "write",
        "a",
    );
    assert!(err.message().contains("read-only"), "{err}");

    let err = io_error(&io::Error::other("disk on fire"), "read", "a");
    assert_eq!(err.kind(), ErrorKind::Failed);
    assert_eq!(err.message(), "cannot read \"a\": disk on fire");
}

#[test]
fn a_path_the_sandbox_refuses_is_said_to_lead_out_of_the_workspace() {
    let refused = io::Error::from_raw_os_error(ENOTCAPABLE);
    let err = io_error(&refused, "read", "notes/secret");
    assert_eq!(err.kind(), ErrorKind::BadArgs);
    assert_eq!(
        err.message(),
        "\"notes/secret\" is outside the workspace (a link or `..` leads out); the tool can only reach files inside the workspace, so pass a path that stays in it"
    );
    assert!(leads_out(&refused));
    // Other errors are not taken for it.
    assert!(jail_refusal(&io::Error::from(io::ErrorKind::PermissionDenied), "a").is_none());
    assert!(jail_refusal(&io::Error::from_raw_os_error(2), "a").is_none());
}
