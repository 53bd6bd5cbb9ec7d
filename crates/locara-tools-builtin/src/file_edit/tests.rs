//! Tests for `file.edit` on real temporary directories.

use std::fs;

use serde_json::json;

use crate::abi::{ErrorKind, ToolError};

const SOURCE: &str = "fn main() {\n    let x = 1;\n    let y = 1;\n    println!(\"{x} {y}\");\n}\n";

fn setup(content: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("main.rs"), content).unwrap();
    dir
}

fn content(dir: &tempfile::TempDir) -> String {
    fs::read_to_string(dir.path().join("main.rs")).unwrap()
}

fn edit_err(dir: &tempfile::TempDir, edits: serde_json::Value) -> ToolError {
    let err = super::run(dir.path(), json!({"path": "main.rs", "edits": edits})).unwrap_err();
    assert_eq!(
        content(dir),
        SOURCE,
        "a failed edit must leave the file unchanged"
    );
    err
}

#[test]
fn applies_edits_in_order() {
    let dir = setup(SOURCE);
    let out = super::run(
        dir.path(),
        json!({"path": "main.rs", "edits": [
            {"old": "let x = 1;", "new": "let x = 2;"},
            {"old": "let x = 2;\n    let y = 1;", "new": "let x = 2;\n    let y = 3;"},
        ]}),
    )
    .unwrap();
    let expected = SOURCE.replace("x = 1", "x = 2").replace("y = 1", "y = 3");
    assert_eq!(
        out,
        json!({"path": "main.rs", "replacements": 2, "bytes_written": expected.len()})
    );
    assert_eq!(content(&dir), expected);
}

#[test]
fn replace_all_and_deletion() {
    let dir = setup(SOURCE);
    let out = super::run(
        dir.path(),
        json!({"path": "/workspace/main.rs", "edits": [
            {"old": " = 1;", "new": " = 0;", "replace_all": true},
            {"old": "    println!(\"{x} {y}\");\n", "new": ""},
        ]}),
    )
    .unwrap();
    assert_eq!(out["replacements"], 3);
    assert_eq!(
        content(&dir),
        "fn main() {\n    let x = 0;\n    let y = 0;\n}\n"
    );
}

#[test]
fn replace_all_with_a_single_match_is_fine() {
    let dir = setup(SOURCE);
    let out = super::run(
        dir.path(),
        json!({"path": "main.rs", "edits": [{"old": "main", "new": "start", "replace_all": true}]}),
    )
    .unwrap();
    assert_eq!(out["replacements"], 1);
    assert!(content(&dir).starts_with("fn start()"));
}

#[test]
fn unicode_text() {
    let dir = setup("naïve café 😀\n");
    super::run(
        dir.path(),
        json!({"path": "main.rs", "edits": [{"old": "café 😀", "new": "thé ☕"}]}),
    )
    .unwrap();
    assert_eq!(content(&dir), "naïve thé ☕\n");
}

#[test]
fn ambiguous_edit_names_the_count_and_lines() {
    let dir = setup(SOURCE);
    let err = edit_err(&dir, json!([{"old": " = 1;", "new": " = 2;"}]));
    assert_eq!(err.kind(), ErrorKind::BadArgs);
    assert_eq!(
        err.message(),
        "edits[0]: old text matches 2 times in \"main.rs\" (at lines 2, 3); include more surrounding lines in old to make it unique, or set replace_all to true to replace every occurrence; nothing was written"
    );
}

#[test]
fn ambiguity_lists_at_most_five_lines() {
    let text = "x\n".repeat(8);
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("f"), &text).unwrap();
    let err = super::run(
        dir.path(),
        json!({"path": "f", "edits": [{"old": "x", "new": "y"}]}),
    )
    .unwrap_err();
    assert!(
        err.message()
            .contains("matches 8 times in \"f\" (at lines 1, 2, 3, 4, 5 and 3 more)"),
        "{err}"
    );
}

#[test]
fn missing_text_is_all_or_nothing_and_names_the_edit() {
    let dir = setup(SOURCE);
    let err = edit_err(
        &dir,
        json!([
            {"old": "let x = 1;", "new": "let x = 2;"},
            {"old": "let z = 1;", "new": "let z = 2;"},
        ]),
    );
    assert_eq!(
        err.message(),
        "edits[1] (of 2): old text not found in \"main.rs\" (matched against the text as changed by the earlier edits in this call); old must match the file exactly, including whitespace and indentation; read the file again with filesystem.read and copy the text from it; nothing was written"
    );
}

#[test]
fn not_found_hints() {
    let dir = setup(SOURCE);
    let err = edit_err(
        &dir,
        json!([{"old": "let x = 1;\n", "new": ""}, {"old": "\n  let y = 1;  \n", "new": ""}]),
    );
    assert!(
        err.message().contains("leading/trailing whitespace"),
        "{err}"
    );
    let err = edit_err(&dir, json!([{"old": "LET X = 1;", "new": ""}]));
    assert!(err.message().contains("if case is ignored"), "{err}");
    let err = edit_err(&dir, json!([{"old": "let  x =\t1;", "new": ""}]));
    assert!(err.message().contains("if whitespace is ignored"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("crlf.txt"), "a\r\nb\r\n").unwrap();
    let err = super::run(
        dir.path(),
        json!({"path": "crlf.txt", "edits": [{"old": "a\nb", "new": "c"}]}),
    )
    .unwrap_err();
    assert!(err.message().contains("CRLF"), "{err}");
}

#[test]
fn argument_and_file_errors() {
    let dir = setup(SOURCE);
    let err = edit_err(&dir, json!([]));
    assert!(err.message().starts_with("edits is empty"), "{err}");
    let err = edit_err(&dir, json!([{"old": "", "new": "x"}]));
    assert!(err.message().starts_with("edits[0]: old is empty"), "{err}");
    let err = edit_err(&dir, json!([{"old": "x"}]));
    assert!(err.message().contains("missing field `new`"), "{err}");

    let err = super::run(
        dir.path(),
        json!({"path": "nope.rs", "edits": [{"old": "a", "new": "b"}]}),
    )
    .unwrap_err();
    assert!(err.message().contains("no such file or directory"), "{err}");
    fs::create_dir(dir.path().join("d")).unwrap();
    let err = super::run(
        dir.path(),
        json!({"path": "d", "edits": [{"old": "a", "new": "b"}]}),
    )
    .unwrap_err();
    assert_eq!(
        err.message(),
        "\"d\" is a directory; pass the path of a file"
    );
    fs::write(dir.path().join("bin"), b"\xff\xfe").unwrap();
    let err = super::run(
        dir.path(),
        json!({"path": "bin", "edits": [{"old": "a", "new": "b"}]}),
    )
    .unwrap_err();
    assert_eq!(
        err.message(),
        "\"bin\" is not valid UTF-8 text; file.edit only edits text files"
    );
}
