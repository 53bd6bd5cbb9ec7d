//! Unit tests: argument assembly, value parsing and home discovery.

use std::io::Cursor;

use serde_json::json;

use crate::{
    arguments::{self, Stdin},
    context::find_home,
    output::one_line,
};

fn build(
    positional: Option<&str>,
    input: Option<&str>,
    pairs: &[&str],
    stdin: &str,
) -> anyhow::Result<serde_json::Value> {
    let pairs: Vec<String> = pairs.iter().map(|p| (*p).to_owned()).collect();
    arguments::build(
        positional,
        input,
        &pairs,
        &arguments::FileArgs::default(),
        &mut Stdin::new(Cursor::new(stdin.as_bytes().to_vec())),
    )
    .map(|arguments| arguments.value)
}

#[test]
fn file_arguments_pass_a_workspace_path_or_the_bytes() {
    let workspace = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(workspace.path().join("docs")).unwrap();
    std::fs::write(workspace.path().join("docs/a.pdf"), b"%PDF-inside").unwrap();
    std::fs::write(outside.path().join("b.pdf"), b"%PDF").unwrap();
    let root = std::fs::canonicalize(workspace.path()).unwrap();
    let files = arguments::FileArgs {
        keys: vec!["source".to_owned()],
        workspace: Some(&root),
    };
    let build = |pair: String| {
        arguments::build(
            None,
            None,
            &[pair],
            &files,
            &mut Stdin::new(std::io::empty()),
        )
        .map(|a| a.value)
    };
    let inside = workspace.path().join("docs/a.pdf");
    assert_eq!(
        build(format!("source=@{}", inside.display())).unwrap(),
        serde_json::json!({"source": {"path": "docs/a.pdf"}})
    );
    assert_eq!(
        build(format!(
            "source=@{}",
            outside.path().join("b.pdf").display()
        ))
        .unwrap(),
        serde_json::json!({"source": {"base64": "JVBERg=="}})
    );
    // Other keys still take the file's text.
    assert_eq!(
        build(format!("text=@{}", inside.display())).unwrap(),
        serde_json::json!({"text": "%PDF-inside"})
    );
    let err = build("source=@/no/such/file.pdf".to_owned()).unwrap_err();
    assert_eq!(err.to_string(), "cannot open /no/such/file.pdf");
}

#[test]
fn values_parse_as_json_when_they_can() {
    assert_eq!(arguments::parse_value("10"), json!(10));
    assert_eq!(arguments::parse_value("true"), json!(true));
    assert_eq!(arguments::parse_value("null"), json!(null));
    assert_eq!(arguments::parse_value("[1, \"a\"]"), json!([1, "a"]));
    assert_eq!(arguments::parse_value("{\"k\": 1}"), json!({"k": 1}));
    assert_eq!(arguments::parse_value("\"42\""), json!("42"));
    assert_eq!(arguments::parse_value("hello world"), json!("hello world"));
    assert_eq!(arguments::parse_value(""), json!(""));
}

#[test]
fn pairs_override_the_positional_object() {
    let args = build(
        Some(r#"{"text": "a", "max_chars": 5}"#),
        None,
        &["max_chars=10", "k=v=w"],
        "",
    )
    .unwrap();
    assert_eq!(args, json!({"text": "a", "max_chars": 10, "k": "v=w"}));
}

#[test]
fn no_arguments_is_an_empty_object() {
    assert_eq!(build(None, None, &[], "").unwrap(), json!({}));
}

#[test]
fn input_and_at_values_read_stdin_once() {
    assert_eq!(
        build(None, Some("-"), &[], r#"{"a": 1}"#).unwrap(),
        json!({"a": 1})
    );
    assert_eq!(
        build(None, None, &["text=@-"], "from stdin\n").unwrap(),
        json!({"text": "from stdin\n"})
    );
    let error = build(None, Some("-"), &["text=@-"], "{}")
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "--arg text cannot read stdin: --input already read it"
    );
}

#[test]
fn at_path_reads_a_file_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.txt");
    std::fs::write(&file, "42").unwrap();
    let args = build(None, None, &[&format!("text=@{}", file.display())], "").unwrap();
    assert_eq!(args, json!({"text": "42"}));
}

#[test]
fn bad_arguments_are_explained() {
    let message = |r: anyhow::Result<serde_json::Value>| format!("{:#}", r.unwrap_err());
    assert_eq!(
        message(build(Some("[1]"), None, &[], "")),
        "ARGS_JSON must be a JSON object of arguments, not an array"
    );
    assert!(message(build(Some("{"), None, &[], "")).starts_with("ARGS_JSON is not valid JSON: "));
    assert_eq!(
        message(build(None, None, &["novalue"], "")),
        "--arg \"novalue\" is not KEY=VALUE"
    );
    assert_eq!(
        message(build(None, None, &["=1"], "")),
        "--arg \"=1\" has an empty key"
    );
}

#[test]
fn home_is_the_nearest_dot_locara_else_the_users() {
    let root = tempfile::tempdir().unwrap();
    let deep = root.path().join("a/b/c");
    std::fs::create_dir_all(&deep).unwrap();
    let user = root.path().join("user");
    assert_eq!(find_home(&deep, Some(&user)), Some(user.join(".locara")));
    std::fs::create_dir_all(root.path().join("a/.locara")).unwrap();
    assert_eq!(
        find_home(&deep, Some(&user)),
        Some(root.path().join("a/.locara"))
    );
}

#[test]
fn one_line_takes_the_first_sentence() {
    assert_eq!(one_line("Splits text. Then more.", 100), "Splits text.");
    assert_eq!(one_line("Runs e.g. this", 100), "Runs e.g. this");
    assert_eq!(one_line("abcdef", 4), "abc…");
    assert_eq!(one_line("one two, three", 11), "one two…");
}

#[test]
fn values_read_as_json_are_remembered() {
    let pairs = [
        "a=1".to_owned(),
        "b=x".to_owned(),
        "c=\"2\"".to_owned(),
        "d=[]".to_owned(),
    ];
    let arguments = arguments::build(
        None,
        None,
        &pairs,
        &arguments::FileArgs::default(),
        &mut Stdin::new(std::io::empty()),
    )
    .unwrap();
    assert_eq!(
        arguments.parsed,
        [
            ("a".to_owned(), "1".to_owned()),
            ("d".to_owned(), "[]".to_owned())
        ]
    );
}
