//! The `locara` binary refuses input that means different things to different readers: JSON
//! that repeats a key (arguments, request files, tool-call messages, app manifests, receipts),
//! and `--allow-host` values that are not a host (a grant that would match nothing). Both are
//! usage errors, exit code 2, saying what to pass; nothing runs.

use serde_json::{Value, json};

mod support;
use support::Cli;

/// What the strict parser says of a repeated key, after `where`.
const ONCE: &str = "an object may name a key only once (JSON readers disagree on which value wins)";

#[test]
fn json_arguments_that_repeat_a_key_are_refused() {
    let cli = Cli::new();
    let twice = r#"{"text": "a", "max_chars": 5, "text": "b"}"#;

    let stderr = cli.refused(&["run", "text.chunk", twice], "");
    assert_eq!(
        stderr,
        format!(
            "error: ARGS_JSON repeats a key: invalid tool arguments at line 1, column 36: duplicate key \"text\" at /text; {ONCE}\n"
        )
    );

    cli.write("args.json", "{\n  \"text\": \"a\",\n  \"text\": \"b\"\n}\n");
    let stderr = cli.refused(&["run", "text.chunk", "--input", "args.json"], "");
    assert!(
        stderr.starts_with("error: --input args.json repeats a key: invalid tool arguments at line 3, column 8: duplicate key \"text\" at /text;"),
        "{stderr}"
    );
    let stderr = cli.refused(&["run", "text.chunk", "--input", "-"], twice);
    assert!(
        stderr.starts_with("error: --input - repeats a key:"),
        "{stderr}"
    );

    // Inside a `--arg` value: refused, not taken as a string.
    let stderr = cli.refused(
        &[
            "run",
            "text.chunk",
            "--arg",
            "text=a",
            "--arg",
            r#"x={"a": [{"k": 1, "k": 2}]}"#,
        ],
        "",
    );
    assert_eq!(
        stderr,
        format!(
            "error: --arg x=… repeats a key: invalid --arg value at line 1, column 19: duplicate key \"k\" at /a/0/k; {ONCE}\n"
        )
    );
    // The same key by two `--arg`s.
    let stderr = cli.refused(
        &["run", "text.chunk", "--arg", "text=a", "--arg", "text=b"],
        "",
    );
    assert_eq!(
        stderr,
        "error: --arg text=… is given twice; give each key once\n"
    );

    // What stays allowed: one `--arg` over the object's key, JSON that is not JSON.
    let run = cli.expect(
        0,
        &[
            "--json",
            "run",
            "text.chunk",
            r#"{"text": "a"}"#,
            "--arg",
            "text=b c",
        ],
    );
    let response: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(response["output"]["chunks"][0]["text"], "b c", "{response}");
    cli.expect(0, &["run", "text.chunk", "--arg", r#"text={"a": 1, "a""#]);
}

#[test]
fn request_files_and_tool_call_messages_that_repeat_a_key_are_refused() {
    let cli = Cli::new();
    cli.write(
        "batch.json",
        r#"{"calls": [{"tool": "text.chunk", "arguments": {"text": "a", "text": "b"}}]}"#,
    );
    let stderr = cli.refused(&["batch", "batch.json"], "");
    assert_eq!(
        stderr,
        format!(
            "error: batch.json is not a valid batch request: invalid request at line 1, column 67: duplicate key \"text\" at /calls/0/arguments/text; {ONCE}\n"
        )
    );
    let chain = r#"{"steps": [{"tool": "text.chunk", "tool": "bash.read-only", "arguments": {"text": "a"}}]}"#;
    let stderr = cli.refused(&["chain", "-"], chain);
    assert!(
        stderr.starts_with(
            "error: - is not a valid chain request: invalid request at line 1, column 40: duplicate key \"tool\" at /steps/0/tool;"
        ),
        "{stderr}"
    );

    // The message file itself.
    let message = r#"{"role": "assistant", "content": null, "tool_calls": [], "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "text_chunk", "arguments": "{}"}}]}"#;
    cli.write("message.json", message);
    let stderr = cli.refused(&["run", "--tool-call", "message.json"], "");
    assert!(
        stderr.starts_with(
            "error: cannot read message.json as a tool-call message: invalid tool-call message at line 1, column 69: duplicate key \"tool_calls\" at /tool_calls;"
        ),
        "{stderr}"
    );
    // OpenAI's `arguments` string: that call is answered with the error, the others run.
    let message = json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "text_chunk", "arguments": "{\"text\": \"a\", \"text\": \"b\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "text_chunk", "arguments": "{\"text\": \"c\"}"}},
        ],
    });
    let run = cli.run_with_stdin(&["run", "--tool-call", "-"], &message.to_string());
    assert_eq!(run.code, 1, "{run:#?}");
    let reply: Value = serde_json::from_str(&run.stdout).unwrap();
    let refused: Value = serde_json::from_str(reply[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(refused["error"]["code"], "invalid_tool_call", "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "tool call `call_1` (text_chunk): `arguments` repeats the key \"text\" at /text (line 1, column 20); give each key once"
    );
    let answered: Value = serde_json::from_str(reply[1]["content"].as_str().unwrap()).unwrap();
    assert_eq!(answered["chunks"][0]["text"], "c", "{answered}");
}

#[test]
fn app_manifests_and_receipts_that_repeat_a_key_are_refused() {
    let cli = Cli::new();
    cli.write(
        "locara.json",
        r#"{"schema_version": 1, "name": "a", "tools": ["text.chunk@0.1.0"], "grants": {"max_safety_tier": "read_only", "max_safety_tier": "privileged"}}"#,
    );
    let stderr = cli.refused(&["list"], "");
    assert!(
        stderr.contains(
            "invalid app manifest at line 1, column 126: duplicate key \"max_safety_tier\" at /grants/max_safety_tier;"
        ),
        "{stderr}"
    );
    std::fs::remove_file(cli.cwd.path().join("locara.json")).unwrap();

    // A receipt whose document says `ok` twice: the signature covers one reading of it.
    cli.expect(
        0,
        &[
            "run",
            "text.chunk",
            "--arg",
            "text=a",
            "--receipt",
            "receipt.json",
        ],
    );
    let receipt = std::fs::read_to_string(cli.cwd.path().join("receipt.json")).unwrap();
    cli.expect(0, &["verify-receipt", "receipt.json"]);
    let doubled = receipt.replacen("\"receipt\": {", "\"receipt\": {\n    \"ok\": false,", 1);
    assert_ne!(doubled, receipt, "the receipt has a `receipt` object");
    cli.write("doubled.json", &doubled);
    let stderr = cli.refused(&["verify-receipt", "doubled.json"], "");
    assert!(
        stderr.contains("duplicate key \"ok\" at /receipt/ok;"),
        "{stderr}"
    );
}

#[test]
fn allow_host_takes_a_host_name_an_address_a_range_or_a_star() {
    let cli = Cli::new();
    for (value, reason) in [
        ("example.com:443", "it has a port (`:443`)"),
        (
            "[::1]",
            "it has brackets; write the IPv6 address alone, `::1`",
        ),
        (
            "https://example.com",
            "it is a URL (`https://`), not a host",
        ),
        ("example.com/api", "it has a path"),
        ("example.com.", "it ends with a dot; write `example.com`"),
        ("", "it is empty"),
        ("*.example.com", "a wildcard is only `*` alone"),
        ("exa mple.com", "it contains whitespace"),
        ("127.1", "it ends in a number but is not an IPv4 address"),
        (
            "10.0.0.1/8",
            "the range has bits set past its prefix length; write `10.0.0.0/8`",
        ),
        (
            "10.0.0.0/40",
            "`/40` is not a prefix length for this address",
        ),
    ] {
        let stderr = cli.refused(&["--allow-host", value, "list"], "");
        assert!(
            stderr.starts_with(&format!(
                "error: invalid value '{value}' for '--allow-host <HOST>': {reason}"
            )),
            "{value}: {stderr}"
        );
        assert!(
            stderr.contains("pass a host name (e.g. api.example.com), an IP address (e.g. 127.0.0.1 or ::1), a CIDR range (e.g. 10.0.0.0/8) or * for any host"),
            "{value}: {stderr}"
        );
    }
    for value in [
        "example.com",
        "localhost",
        "127.0.0.1",
        "::1",
        "10.0.0.0/8",
        "fd00::/8",
        "*",
    ] {
        cli.expect(0, &["--allow-host", value, "list"]);
    }
}
