//! Tests for `filesystem.read` on real temporary directories.

use std::fs;

use serde_json::{Value, json};

use crate::abi::ErrorKind;

fn read(root: &std::path::Path, input: Value) -> Value {
    super::run(root, input).unwrap()
}

fn read_err(root: &std::path::Path, input: Value) -> crate::abi::ToolError {
    super::run(root, input).unwrap_err()
}

#[test]
fn reads_a_whole_file() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("src")).unwrap();
    fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").unwrap();
    assert_eq!(
        read(dir.path(), json!({"path": "src/main.rs"})),
        json!({"path": "src/main.rs", "content": "fn main() {}\n", "bytes_read": 13, "total_bytes": 13, "truncated": false})
    );
    // The absolute /workspace form names the same file.
    let abs = read(dir.path(), json!({"path": "/workspace/src/main.rs"}));
    assert_eq!(abs["path"], "src/main.rs");
    assert_eq!(abs["content"], "fn main() {}\n");
}

#[test]
fn pages_with_offset_and_max_bytes() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.txt"), "0123456789").unwrap();
    let first = read(dir.path(), json!({"path": "a.txt", "max_bytes": 4}));
    assert_eq!(
        first,
        json!({"path": "a.txt", "content": "0123", "bytes_read": 4, "total_bytes": 10, "truncated": true})
    );
    let middle = read(
        dir.path(),
        json!({"path": "a.txt", "max_bytes": 4, "offset": 4}),
    );
    assert_eq!(middle["content"], "4567");
    assert_eq!(middle["truncated"], true);
    let last = read(
        dir.path(),
        json!({"path": "a.txt", "max_bytes": 4, "offset": 8}),
    );
    assert_eq!(
        last,
        json!({"path": "a.txt", "content": "89", "bytes_read": 2, "total_bytes": 10, "truncated": false})
    );
    let exact = read(dir.path(), json!({"path": "a.txt", "max_bytes": 10}));
    assert_eq!(exact["truncated"], false);
    let at_end = read(dir.path(), json!({"path": "a.txt", "offset": 10}));
    assert_eq!(at_end["content"], "");
    assert_eq!(at_end["bytes_read"], 0);
    assert_eq!(at_end["truncated"], false);
}

#[test]
fn truncation_never_splits_a_utf8_character() {
    let dir = tempfile::tempdir().unwrap();
    // "h" + "é" (2 bytes) + "€" (3 bytes) + "😀" (4 bytes).
    fs::write(dir.path().join("u.txt"), "hé€😀").unwrap();
    let cut = read(dir.path(), json!({"path": "u.txt", "max_bytes": 2}));
    assert_eq!(cut["content"], "h");
    assert_eq!(cut["bytes_read"], 1);
    let cut = read(dir.path(), json!({"path": "u.txt", "max_bytes": 8}));
    assert_eq!(cut["content"], "hé€");
    assert_eq!(cut["bytes_read"], 6);
    let rest = read(dir.path(), json!({"path": "u.txt", "offset": 6}));
    assert_eq!(rest["content"], "😀");
    assert_eq!(rest["truncated"], false);
    // A cut that would leave nothing keeps the partial character, so paging makes progress.
    let tiny = read(
        dir.path(),
        json!({"path": "u.txt", "offset": 3, "max_bytes": 1}),
    );
    assert_eq!(tiny["bytes_read"], 1);
    assert_eq!(tiny["content"], "\u{FFFD}");
}

#[test]
fn invalid_utf8_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("bin"), b"ok\xff\xfeok").unwrap();
    let out = read(dir.path(), json!({"path": "bin"}));
    assert_eq!(out["content"], "ok\u{FFFD}\u{FFFD}ok");
    assert_eq!(out["bytes_read"], 6);
}

#[test]
fn empty_file() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("empty"), "").unwrap();
    assert_eq!(
        read(dir.path(), json!({"path": "empty"})),
        json!({"path": "empty", "content": "", "bytes_read": 0, "total_bytes": 0, "truncated": false})
    );
}

#[test]
fn errors_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("sub")).unwrap();
    fs::write(dir.path().join("a.txt"), "abc").unwrap();

    let err = read_err(dir.path(), json!({"path": "missing.txt"}));
    assert_eq!(err.kind(), ErrorKind::BadArgs);
    assert!(err.message().contains("no such file or directory"), "{err}");
    assert!(err.message().contains("filesystem.list"), "{err}");

    let err = read_err(dir.path(), json!({"path": "sub"}));
    assert_eq!(
        err.message(),
        "\"sub\" is a directory, not a file; use filesystem.list to see what it contains"
    );

    let err = read_err(dir.path(), json!({"path": "a.txt", "offset": 4}));
    assert!(
        err.message()
            .starts_with("offset 4 is past the end of \"a.txt\", which has 3 bytes"),
        "{err}"
    );

    let err = read_err(dir.path(), json!({"path": "a.txt", "max_bytes": 0}));
    assert!(
        err.message()
            .starts_with("max_bytes must be between 1 and 10485760"),
        "{err}"
    );
    let err = read_err(
        dir.path(),
        json!({"path": "a.txt", "max_bytes": 10 * 1024 * 1024 + 1}),
    );
    assert!(
        err.message().starts_with("max_bytes must be between"),
        "{err}"
    );

    let err = read_err(dir.path(), json!({"path": "/etc/passwd"}));
    assert!(err.message().contains("outside the workspace"), "{err}");

    let err = read_err(dir.path(), json!({"path": "a.txt", "limit": 3}));
    assert!(
        err.message()
            .starts_with("invalid arguments: unknown field `limit`"),
        "{err}"
    );

    let err = read_err(dir.path(), json!({"path": 3}));
    assert!(
        err.message()
            .starts_with("invalid arguments: invalid type: integer `3`"),
        "{err}"
    );
}
