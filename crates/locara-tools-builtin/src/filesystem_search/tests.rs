//! Tests for `filesystem.search` on real temporary directories.

use std::fs;
use std::path::Path;

use expect_test::{Expect, expect};
use serde_json::{Value, json};

use crate::abi::ErrorKind;

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("src/net")).unwrap();
    fs::create_dir_all(root.join(".git")).unwrap();
    fs::create_dir_all(root.join("node_modules/pkg")).unwrap();
    fs::write(root.join("README.md"), "# Demo\nCall main() to start.\n").unwrap();
    fs::write(
        root.join("src/main.rs"),
        "fn main() {\n    let x = Main::new();\n    helper();\n}\n",
    )
    .unwrap();
    fs::write(
        root.join("src/net/client.rs"),
        "// TODO: retry\npub fn connect() {}\n",
    )
    .unwrap();
    fs::write(root.join("src/data.bin"), b"main\0\x01\x02").unwrap();
    fs::write(root.join(".git/config"), "main = true\n").unwrap();
    fs::write(root.join("node_modules/pkg/index.js"), "main();\n").unwrap();
    dir
}

fn render(out: &Value) -> String {
    let mut text = String::new();
    for m in out["matches"].as_array().unwrap() {
        let path = m["path"].as_str().unwrap();
        match (m.get("line"), m.get("text")) {
            (Some(line), Some(t)) => {
                text.push_str(&format!("{path}:{line}: {}\n", t.as_str().unwrap()))
            }
            _ => text.push_str(&format!("{path}\n")),
        }
    }
    text.push_str(&format!(
        "files_scanned: {}, truncated: {}\n",
        out["files_scanned"], out["truncated"]
    ));
    text
}

fn check(root: &Path, input: Value, expect: Expect) {
    expect.assert_eq(&render(&super::run(root, input).unwrap()));
}

#[test]
fn content_search_is_literal_and_case_insensitive_by_default() {
    let dir = workspace();
    check(
        dir.path(),
        json!({"query": "main("}),
        expect![[r#"
            README.md:2: Call main() to start.
            src/main.rs:1: fn main() {
            files_scanned: 3, truncated: false
        "#]],
    );
    check(
        dir.path(),
        json!({"query": "MAIN"}),
        expect![[r#"
            README.md:2: Call main() to start.
            src/main.rs:1: fn main() {
            src/main.rs:2: let x = Main::new();
            files_scanned: 3, truncated: false
        "#]],
    );
    check(
        dir.path(),
        json!({"query": "Main", "case_sensitive": true}),
        expect![[r#"
            src/main.rs:2: let x = Main::new();
            files_scanned: 3, truncated: false
        "#]],
    );
}

#[test]
fn regex_glob_and_path() {
    let dir = workspace();
    check(
        dir.path(),
        json!({"query": r"^pub fn \w+", "regex": true}),
        expect![[r#"
            src/net/client.rs:2: pub fn connect() {}
            files_scanned: 3, truncated: false
        "#]],
    );
    check(
        dir.path(),
        json!({"query": "main", "glob": "*.md"}),
        expect![[r#"
            README.md:2: Call main() to start.
            files_scanned: 1, truncated: false
        "#]],
    );
    check(
        dir.path(),
        json!({"query": "fn", "path": "src/net"}),
        expect![[r#"
            src/net/client.rs:2: pub fn connect() {}
            files_scanned: 1, truncated: false
        "#]],
    );
    check(
        dir.path(),
        json!({"query": "todo", "path": "src/net/client.rs"}),
        expect![[r#"
            src/net/client.rs:1: // TODO: retry
            files_scanned: 1, truncated: false
        "#]],
    );
    check(
        dir.path(),
        json!({"query": "fn", "glob": "src/**/*.rs"}),
        expect![[r#"
            src/main.rs:1: fn main() {
            src/net/client.rs:2: pub fn connect() {}
            files_scanned: 2, truncated: false
        "#]],
    );
}

#[test]
fn name_search() {
    let dir = workspace();
    check(
        dir.path(),
        json!({"query": "main", "mode": "name"}),
        expect![[r#"
            src/main.rs
            files_scanned: 6, truncated: false
        "#]],
    );
    check(
        dir.path(),
        json!({"query": "net/", "mode": "name"}),
        expect![[r#"
            src/net/client.rs
            files_scanned: 6, truncated: false
        "#]],
    );
    check(
        dir.path(),
        json!({"query": r"\.rs$", "mode": "name", "regex": true}),
        expect![[r#"
            src/main.rs
            src/net/client.rs
            files_scanned: 6, truncated: false
        "#]],
    );
}

#[test]
fn truncates_at_max_results() {
    let dir = workspace();
    check(
        dir.path(),
        json!({"query": "main", "max_results": 1}),
        expect![[r#"
            README.md:2: Call main() to start.
            files_scanned: 2, truncated: true
        "#]],
    );
}

#[test]
fn long_lines_are_cut_around_the_match() {
    let dir = tempfile::tempdir().unwrap();
    let line = format!("{}NEEDLE{}", "a".repeat(500), "b".repeat(500));
    fs::write(
        dir.path().join("long.txt"),
        format!("   {line}\nshort needle\n"),
    )
    .unwrap();
    let out = super::run(dir.path(), json!({"query": "needle"})).unwrap();
    let text = out["matches"][0]["text"].as_str().unwrap();
    assert_eq!(text.chars().count(), 300);
    assert!(text.starts_with('…') && text.ends_with('…'), "{text}");
    assert!(text.contains("NEEDLE"), "{text}");
    assert_eq!(&text[..63], format!("…{}", "a".repeat(60)).as_str());
    assert_eq!(out["matches"][1]["text"], "short needle");

    // A match near the end keeps a full window.
    let tail = format!("{}END", "c".repeat(400));
    assert_eq!(super::snippet(&tail, 400).chars().count(), 300);
    assert!(super::snippet(&tail, 400).ends_with("cEND"));
    // Multi-byte characters are never split.
    let wide = "é".repeat(400);
    assert_eq!(super::snippet(&wide, 200).chars().count(), 300);
}

#[test]
fn errors() {
    let dir = workspace();
    let err = super::run(dir.path(), json!({"query": "(", "regex": true})).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgs);
    assert_eq!(
        err.message(),
        "invalid regex \"(\": unclosed group; fix the pattern or set regex to false for a literal search"
    );
    // The same text is fine as a literal.
    assert!(super::run(dir.path(), json!({"query": "("})).is_ok());

    let err = super::run(dir.path(), json!({"query": ""})).unwrap_err();
    assert!(err.message().starts_with("query is empty"), "{err}");
    let err = super::run(dir.path(), json!({"query": "x", "path": "missing"})).unwrap_err();
    assert!(err.message().contains("no such file or directory"), "{err}");
    let err = super::run(dir.path(), json!({"query": "x", "glob": "*.{rs"})).unwrap_err();
    assert_eq!(err.message(), "invalid glob \"*.{rs\": unclosed '{'");
    let err = super::run(dir.path(), json!({"query": "x", "max_results": 0})).unwrap_err();
    assert_eq!(
        err.message(),
        "max_results must be between 1 and 10000, got 0"
    );
    let err = super::run(dir.path(), json!({"query": "x", "mode": "fuzzy"})).unwrap_err();
    assert!(err.message().contains("unknown variant `fuzzy`"), "{err}");
}
