//! `locara serve` over stdio, driven line by line as an MCP client would: every line that is
//! not a message gets a JSON-RPC error and the server goes on serving, and privileged tools
//! are served with each call needing `--yes` or `--policy`, as `serve --help` says.

use std::{
    io::{BufRead as _, BufReader, Read as _, Write as _},
    process::{Child, ChildStdin, Stdio},
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

mod support;
use support::Cli;

/// How long a test waits for one answer (the first one includes opening the home).
const WAIT: Duration = Duration::from_secs(30);

/// Starts `locara ARGS…` (ending in `serve`) and completes the MCP handshake.
fn serve(cli: &Cli, args: &[&str]) -> Server {
    let mut child = cli
        .command(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn locara serve");
    let stdin = child.stdin.take();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (lines, received) = mpsc::channel();
    thread::spawn(move || {
        for line in stdout.lines() {
            if lines.send(line.expect("stdout is text")).is_err() {
                return;
            }
        }
    });
    let mut stderr = child.stderr.take().unwrap();
    let stderr = thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut server = Server {
        child,
        stdin,
        received,
        stderr: Some(stderr),
    };
    let initialized = server.ask(
            br#"{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}"#,
        );
    assert_eq!(
        initialized["result"]["serverInfo"]["name"],
        json!("locara"),
        "{initialized}"
    );
    server.send(br#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#);
    server
}

/// A running `locara serve`, killed when the test ends however it ends.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    received: mpsc::Receiver<String>,
    stderr: Option<thread::JoinHandle<String>>,
}

impl Server {
    fn send(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line the server writes, as JSON; fails after [`WAIT`] without one.
    fn receive(&mut self) -> Value {
        match self.received.recv_timeout(WAIT) {
            Ok(line) => {
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
            }
            Err(_) => {
                let _ = self.child.kill();
                let stderr = self.stderr.take().map(|t| t.join().unwrap());
                panic!("no answer within {WAIT:?}; stderr:\n{stderr:?}")
            }
        }
    }

    fn ask(&mut self, line: &[u8]) -> Value {
        self.send(line);
        self.receive()
    }

    /// Calls a tool and returns its result.
    fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        let response = self.ask(request.to_string().as_bytes());
        assert_eq!(response["id"], json!(id), "{response}");
        response["result"].clone()
    }

    /// Closes stdin and waits for a clean exit.
    fn finish(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let stderr = self.stderr.take().map(|t| t.join().unwrap());
                assert!(status.success(), "locara serve: {status}; {stderr:?}");
                return;
            }
            assert!(
                Instant::now() < deadline,
                "locara serve did not exit after stdin closed"
            );
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The JSON in a tool result's first text block.
fn first_text(result: &Value) -> Value {
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text block: {result}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn every_bad_line_on_stdio_is_answered_and_the_server_goes_on() {
    let fixture = Cli::new();
    let mut server = serve(&fixture, &["serve"]);

    let mut deep = "[".repeat(10_000);
    deep.push_str(&"]".repeat(10_000));
    let mut huge = br#"{"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"name": "text.chunk", "arguments": {"text": ""#.to_vec();
    huge.resize(5 * 1024 * 1024, b'x');
    huge.extend_from_slice(br#""}}}"#);
    let cases: [(&str, Vec<u8>, Value, i64); 7] = [
        (
            "not JSON",
            b"this is not json".to_vec(),
            Value::Null,
            -32700,
        ),
        (
            "JSON cut short, after its id",
            br#"{"jsonrpc": "2.0", "id": 7, "method": "tools/list""#.to_vec(),
            json!(7),
            -32700,
        ),
        ("invalid UTF-8", b"\xff\xfe{}".to_vec(), Value::Null, -32700),
        ("too deep", deep.into_bytes(), Value::Null, -32700),
        ("too large", huge, json!(41), -32600),
        ("not a request", b"[1, 2, 3]".to_vec(), Value::Null, -32600),
        (
            "no jsonrpc",
            br#"{"id": "x", "method": "tools/list"}"#.to_vec(),
            json!("x"),
            -32600,
        ),
    ];
    for (what, line, id, code) in cases {
        let response = server.ask(&line);
        assert_eq!(response["jsonrpc"], json!("2.0"), "{what}: {response}");
        assert_eq!(response["id"], id, "{what}: {response}");
        assert_eq!(response["error"]["code"], json!(code), "{what}: {response}");
        assert!(
            response["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{what}: {response}"
        );
    }

    // Still serving: a listing and a call.
    let listed = server.ask(br#"{"jsonrpc": "2.0", "id": 8, "method": "tools/list"}"#);
    assert!(
        listed["result"]["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == json!("text.chunk"))),
        "{listed}"
    );
    let chunked = server.call(
        9,
        "text.chunk",
        json!({"text": "One. Two.", "max_chars": 5}),
    );
    assert_eq!(chunked["isError"], json!(false), "{chunked}");
    server.finish();
}

#[test]
fn privileged_tools_are_served_and_each_call_needs_yes_or_a_policy() {
    let fixture = Cli::new();
    fixture.home.publish_probe_as("test.admin", "privileged");
    let echo = json!({"op": "echo", "text": "hi"});

    // Listed, marked destructive.
    let mut server = serve(&fixture, &["serve"]);
    let listed = server.ask(br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}"#);
    let admin = listed["result"]["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == json!("test.admin")))
        .unwrap_or_else(|| panic!("test.admin is not listed: {listed}"));
    assert_eq!(
        admin["annotations"]["destructiveHint"],
        json!(true),
        "{admin}"
    );

    // Over stdio nobody can be asked: refused, as a tool result naming --yes and --policy.
    let refused = server.call(2, "test.admin", echo.clone());
    assert_eq!(refused["isError"], json!(true), "{refused}");
    let report = first_text(&refused);
    assert_eq!(report["code"], json!("approval_denied"), "{report}");
    let message = report["message"].as_str().unwrap();
    assert!(
        message.contains("--yes") && message.contains("--policy"),
        "{message}"
    );
    server.finish();

    // --yes approves every call.
    let mut server = serve(&fixture, &["--yes", "serve"]);
    let approved = server.call(1, "test.admin", echo.clone());
    assert_eq!(approved["isError"], json!(false), "{approved}");
    server.finish();

    // A policy decides by its rules.
    let policy = fixture.cwd.path().join("policy.json");
    std::fs::write(&policy, json!({"allow": ["test.admin"]}).to_string()).unwrap();
    let mut server = serve(&fixture, &["--policy", policy.to_str().unwrap(), "serve"]);
    let allowed = server.call(1, "test.admin", echo.clone());
    assert_eq!(allowed["isError"], json!(false), "{allowed}");
    server.finish();
    std::fs::write(&policy, json!({"allow": ["other.*"]}).to_string()).unwrap();
    let mut server = serve(&fixture, &["--policy", policy.to_str().unwrap(), "serve"]);
    let denied = server.call(1, "test.admin", echo);
    assert_eq!(
        first_text(&denied)["code"],
        json!("approval_denied"),
        "{denied}"
    );
    server.finish();
}

#[test]
fn serve_help_says_how_privileged_calls_are_approved() {
    let fixture = Cli::new();
    let output = fixture.command(&["serve", "--help"]).output().unwrap();
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    let text = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for said in [
        "Privileged tools are listed (with destructiveHint) and served, and each call of one needs approval",
        "--yes approves every call; --policy FILE decides by its rules",
        "over stdio there is none (stdin is the MCP stream), so the call is refused",
        "code approval_denied, naming --yes and --policy",
        "Without an app manifest every safety tier is admitted",
        "is answered with a JSON-RPC error",
        "is refused with 403",
    ] {
        assert!(
            text.contains(said),
            "`serve --help` does not say {said:?}:\n{help}"
        );
    }
    assert!(!text.contains("up to the side-effecting tier"), "{help}");
}
