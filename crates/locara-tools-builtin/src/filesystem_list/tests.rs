//! Tests for `filesystem.list` on real temporary directories.

use std::fs;
use std::path::Path;

use expect_test::{Expect, expect};
use serde_json::{Value, json};

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("src/abi")).unwrap();
    fs::create_dir_all(root.join(".git/objects")).unwrap();
    fs::write(root.join("Cargo.toml"), "[package]\n").unwrap();
    fs::write(root.join(".env"), "SECRET=1\n").unwrap();
    fs::write(root.join("src/lib.rs"), vec![b'x'; 1536]).unwrap();
    fs::write(root.join("src/abi/mod.rs"), "").unwrap();
    fs::write(root.join("src/ünïcode.txt"), "ü").unwrap();
    dir
}

/// Renders the entries one per line, then the tree.
fn render(out: &Value) -> String {
    let mut text = String::new();
    for e in out["entries"].as_array().unwrap() {
        text.push_str(&format!(
            "{} {} {}\n",
            e["kind"].as_str().unwrap(),
            e["size"],
            e["path"].as_str().unwrap()
        ));
    }
    text.push_str(&format!("truncated: {}\n", out["truncated"]));
    text.push_str(out["tree"].as_str().unwrap());
    text
}

fn check(root: &Path, input: Value, expect: Expect) {
    expect.assert_eq(&render(&super::run(root, input).unwrap()));
}

#[test]
fn lists_direct_children_by_default() {
    let dir = workspace();
    check(
        dir.path(),
        json!({}),
        expect![[r#"
            file 10 Cargo.toml
            dir 0 src
            truncated: false
            ./
              Cargo.toml (10 B)
              src/
        "#]],
    );
}

#[test]
fn lists_recursively_in_sorted_depth_first_order() {
    let dir = workspace();
    check(
        dir.path(),
        json!({"recursive": true}),
        expect![[r#"
            file 10 Cargo.toml
            dir 0 src
            dir 0 src/abi
            file 0 src/abi/mod.rs
            file 1536 src/lib.rs
            file 2 src/ünïcode.txt
            truncated: false
            ./
              Cargo.toml (10 B)
              src/
                abi/
                  mod.rs (0 B)
                lib.rs (1.5 KiB)
                ünïcode.txt (2 B)
        "#]],
    );
}

#[test]
fn max_depth_hidden_and_subdirectories() {
    let dir = workspace();
    check(
        dir.path(),
        json!({"path": "/workspace/src", "recursive": true, "max_depth": 1}),
        expect![[r#"
            dir 0 src/abi
            file 1536 src/lib.rs
            file 2 src/ünïcode.txt
            truncated: false
            src/
              abi/
              lib.rs (1.5 KiB)
              ünïcode.txt (2 B)
        "#]],
    );
    check(
        dir.path(),
        json!({"include_hidden": true}),
        expect![[r#"
            file 9 .env
            dir 0 .git
            file 10 Cargo.toml
            dir 0 src
            truncated: false
            ./
              .env (9 B)
              .git/
              Cargo.toml (10 B)
              src/
        "#]],
    );
}

#[test]
fn truncates_at_max_entries() {
    let dir = workspace();
    check(
        dir.path(),
        json!({"recursive": true, "max_entries": 3}),
        expect![[r#"
            file 10 Cargo.toml
            dir 0 src
            dir 0 src/abi
            truncated: true
            ./
              Cargo.toml (10 B)
              src/
                abi/
            ... truncated after 3 entries; list a subdirectory or raise max_entries
        "#]],
    );
    // Exactly max_entries entries is not a truncation.
    let out = super::run(dir.path(), json!({"max_entries": 2})).unwrap();
    assert_eq!(out["truncated"], false);
}

#[test]
fn empty_directory() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("empty")).unwrap();
    check(
        dir.path(),
        json!({"path": "empty"}),
        expect![[r#"
            truncated: false
            empty/
              (empty)
        "#]],
    );
}

#[cfg(unix)]
#[test]
fn symlinks_are_shown_not_followed() {
    let dir = workspace();
    std::os::unix::fs::symlink("src", dir.path().join("link")).unwrap();
    check(
        dir.path(),
        json!({"recursive": true, "max_depth": 2}),
        expect![[r#"
            file 10 Cargo.toml
            symlink 0 link
            dir 0 src
            dir 0 src/abi
            file 1536 src/lib.rs
            file 2 src/ünïcode.txt
            truncated: false
            ./
              Cargo.toml (10 B)
              link -> src
              src/
                abi/
                lib.rs (1.5 KiB)
                ünïcode.txt (2 B)
        "#]],
    );
}

#[test]
fn errors() {
    let dir = workspace();
    let err = super::run(dir.path(), json!({"path": "nope"})).unwrap_err();
    assert!(
        err.message()
            .starts_with("cannot list \"nope\": no such file or directory"),
        "{err}"
    );
    let err = super::run(dir.path(), json!({"path": "Cargo.toml"})).unwrap_err();
    assert!(
        err.message()
            .starts_with("\"Cargo.toml\" is a file, not a directory; use filesystem.read"),
        "{err}"
    );
    let err = super::run(dir.path(), json!({"max_depth": 0})).unwrap_err();
    assert_eq!(err.message(), "max_depth must be between 1 and 64, got 0");
    let err = super::run(dir.path(), json!({"max_entries": 0})).unwrap_err();
    assert_eq!(
        err.message(),
        "max_entries must be between 1 and 10000, got 0"
    );
    let err = super::run(dir.path(), json!({"recursive": "yes"})).unwrap_err();
    assert!(
        err.message()
            .starts_with("invalid arguments: invalid type: string"),
        "{err}"
    );
}

#[test]
fn human_sizes() {
    assert_eq!(super::human_size(0), "0 B");
    assert_eq!(super::human_size(1023), "1023 B");
    assert_eq!(super::human_size(1024), "1.0 KiB");
    assert_eq!(super::human_size(5 * 1024 * 1024 + 1), "5.0 MiB");
}
