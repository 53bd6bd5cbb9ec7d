//! The `locara-pdk` tool `pdk-shout`, run as a process: the ABI (stdin, stdout, stderr, exit
//! codes), and its committed manifest template against what its code describes.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

const SHOUT: &str = env!("CARGO_BIN_EXE_pdk-shout");

fn run(stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(SHOUT)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn the_program_speaks_the_tool_abi() {
    assert_eq!(
        run(r#"{"text": "hi", "bangs": 3}"#),
        (0, "{\"text\":\"HI!!!\"}\n".to_owned(), String::new())
    );
    assert_eq!(
        run(r#"{"text": "  "}"#),
        (
            2,
            String::new(),
            "text is empty; pass the text to shout\n".to_owned()
        )
    );
    let (code, _, err) = run(r#"{"txt": "hi"}"#);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("invalid arguments: unknown field `txt`"),
        "{err}"
    );
    let (code, _, err) = run("not json");
    assert_eq!(code, 2);
    assert!(
        err.starts_with("the arguments on stdin are not valid JSON"),
        "{err}"
    );
}

#[test]
fn the_committed_manifest_carries_what_the_code_describes() {
    let out = Command::new(SHOUT)
        .arg("--locara-describe")
        .output()
        .unwrap();
    assert!(out.status.success());
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/manifests/test.shout.json");
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for field in locara_pdk::ToolInfo::MANIFEST_FIELDS {
        assert_eq!(
            manifest[field], info[field],
            "{path}: `{field}` differs from what `pdk-shout --locara-describe` prints; copy it from there"
        );
    }
}
