//! Tests for `filesystem.write` on real temporary directories.

use std::fs;

use serde_json::json;

use crate::abi::ErrorKind;

#[test]
fn create_makes_a_new_file_and_refuses_to_clobber() {
    let dir = tempfile::tempdir().unwrap();
    let out = super::run(
        dir.path(),
        json!({"path": "notes.md", "content": "héllo\n"}),
    )
    .unwrap();
    assert_eq!(
        out,
        json!({"path": "notes.md", "bytes_written": 7, "created": true})
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("notes.md")).unwrap(),
        "héllo\n"
    );

    let err = super::run(dir.path(), json!({"path": "notes.md", "content": "x"})).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgs);
    assert!(err.message().contains("already exists"), "{err}");
    assert!(err.message().contains("\"overwrite\""), "{err}");
    assert_eq!(
        fs::read_to_string(dir.path().join("notes.md")).unwrap(),
        "héllo\n"
    );
}

#[test]
fn overwrite_and_append() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.txt"), "old content").unwrap();
    let out = super::run(
        dir.path(),
        json!({"path": "a.txt", "content": "new", "mode": "overwrite"}),
    )
    .unwrap();
    assert_eq!(
        out,
        json!({"path": "a.txt", "bytes_written": 3, "created": false})
    );
    assert_eq!(fs::read_to_string(dir.path().join("a.txt")).unwrap(), "new");

    let out = super::run(
        dir.path(),
        json!({"path": "a.txt", "content": "+more", "mode": "append"}),
    )
    .unwrap();
    assert_eq!(out["created"], false);
    assert_eq!(
        fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "new+more"
    );

    let out = super::run(
        dir.path(),
        json!({"path": "fresh.log", "content": "1", "mode": "append"}),
    )
    .unwrap();
    assert_eq!(out["created"], true);
    let out = super::run(
        dir.path(),
        json!({"path": "fresh2", "content": "", "mode": "overwrite"}),
    )
    .unwrap();
    assert_eq!(
        out,
        json!({"path": "fresh2", "bytes_written": 0, "created": true})
    );
    assert_eq!(fs::read(dir.path().join("fresh2")).unwrap(), b"");
}

#[test]
fn parent_directories_only_with_create_dirs() {
    let dir = tempfile::tempdir().unwrap();
    let err = super::run(dir.path(), json!({"path": "a/b/c.txt", "content": "x"})).unwrap_err();
    assert_eq!(
        err.message(),
        "the directory \"a/b\" does not exist; set create_dirs to true to create it, or check the path with filesystem.list"
    );
    assert!(!dir.path().join("a").exists());

    let out = super::run(
        dir.path(),
        json!({"path": "/workspace/a/b/c.txt", "content": "x", "create_dirs": true}),
    )
    .unwrap();
    assert_eq!(
        out,
        json!({"path": "a/b/c.txt", "bytes_written": 1, "created": true})
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
        "x"
    );
}

#[test]
fn refuses_directories_and_bad_paths() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("sub")).unwrap();
    let err = super::run(
        dir.path(),
        json!({"path": "sub", "content": "x", "mode": "overwrite"}),
    )
    .unwrap_err();
    assert_eq!(
        err.message(),
        "\"sub\" is a directory; pass the path of a file inside it"
    );

    let err = super::run(dir.path(), json!({"path": ".", "content": "x"})).unwrap_err();
    assert!(
        err.message().contains("workspace directory itself"),
        "{err}"
    );

    let err = super::run(dir.path(), json!({"path": "/tmp/x", "content": "x"})).unwrap_err();
    assert!(err.message().contains("outside the workspace"), "{err}");

    let err = super::run(
        dir.path(),
        json!({"path": "x", "content": "x", "mode": "truncate"}),
    )
    .unwrap_err();
    assert!(
        err.message().contains("unknown variant `truncate`"),
        "{err}"
    );

    let err = super::run(dir.path(), json!({"path": "x"})).unwrap_err();
    assert_eq!(err.message(), "invalid arguments: missing field `content`");
}

#[test]
fn a_file_in_the_way_of_a_directory_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("file"), "x").unwrap();
    let err = super::run(
        dir.path(),
        json!({"path": "file/inner.txt", "content": "x"}),
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgs);
    assert!(err.message().contains("file/inner.txt"), "{err}");
}
