//! The stdio transport's framing: which lines are answered with which JSON-RPC error, the
//! bounded line reader, and a whole session over in-memory pipes that goes on after bad lines.

use std::{sync::Arc, time::Duration};

use locara_facade::{Locara, LocaraConfig};
use locara_test_artifacts::TestHome;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

use super::{
    Incoming, Line, LineReader, MAX_JSON_DEPTH, MAX_MESSAGE_BYTES, classify, id_from_prefix,
    nested_deeper_than, serve_lines,
};
use crate::LocaraMcp;

/// The error response a line gets, parsed; panics when the line is not rejected.
fn rejected(line: &[u8]) -> Value {
    match classify(line) {
        Incoming::Reject(response) => {
            assert_eq!(response.last(), Some(&b'\n'), "a response is one line");
            assert!(
                !response[..response.len() - 1].contains(&b'\n'),
                "a response is one line"
            );
            serde_json::from_slice(&response).expect("the response is JSON")
        }
        other => panic!(
            "{:?} was not rejected: {other:?}",
            String::from_utf8_lossy(line)
        ),
    }
}

/// `(id, code)` of the error response a line gets.
fn answer(line: &[u8]) -> (Value, i64) {
    let response = rejected(line);
    assert_eq!(response["jsonrpc"], json!("2.0"), "{response}");
    assert!(
        response.as_object().unwrap().contains_key("id"),
        "the id is always there, null when unknown: {response}"
    );
    let code = response["error"]["code"].as_i64().expect("an error code");
    assert!(
        response["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{response}"
    );
    (response["id"].clone(), code)
}

/// JSON nested `depth` levels deep: arrays around an empty object.
fn nested(depth: usize) -> String {
    format!("{}{{}}{}", "[".repeat(depth - 1), "]".repeat(depth - 1))
}

#[test]
fn a_line_that_is_not_json_is_a_parse_error() {
    assert_eq!(answer(b"hello"), (Value::Null, -32700));
    assert_eq!(answer(b"{\"jsonrpc\": \"2.0\", "), (Value::Null, -32700));
    // When the id comes before the damage, the answer carries it.
    assert_eq!(
        answer(br#"{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {,}}"#),
        (json!(7), -32700)
    );
    assert_eq!(
        answer(br#"{"id": "abc", "jsonrpc": "2.0", "method": "tools/call", "params": "#),
        (json!("abc"), -32700)
    );
    let response = rejected(b"hello");
    let message = response["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Parse error: not valid JSON"),
        "{message}"
    );
}

#[test]
fn invalid_utf8_is_a_parse_error() {
    let line = b"{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \"ping\", \"x\": \"\xff\xfe\"}";
    assert_eq!(answer(line), (json!(3), -32700));
    let response = rejected(b"\xc3\x28");
    assert_eq!(response["id"], Value::Null);
    let message = response["error"]["message"].as_str().unwrap();
    assert!(message.contains("not UTF-8"), "{message}");
}

#[test]
fn nesting_deeper_than_the_bound_is_a_parse_error() {
    let deep = nested(MAX_JSON_DEPTH + 1);
    assert!(nested_deeper_than(deep.as_bytes(), MAX_JSON_DEPTH));
    assert!(!nested_deeper_than(
        nested(MAX_JSON_DEPTH).as_bytes(),
        MAX_JSON_DEPTH
    ));
    // Brackets inside strings, escaped quotes included, do not count.
    let in_string = format!(r#"{{"a": "\"{}"}}"#, "[".repeat(1000));
    assert!(!nested_deeper_than(in_string.as_bytes(), 2));

    let line = format!(
        r#"{{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {{"name": "text.chunk", "arguments": {{"text": {}}}}}}}"#,
        nested(100_000)
    );
    let response = rejected(line.as_bytes());
    assert_eq!(response["id"], json!(5), "{response}");
    assert_eq!(response["error"]["code"], json!(-32700), "{response}");
    assert_eq!(
        response["error"]["data"]["max_depth"],
        json!(MAX_JSON_DEPTH)
    );
    assert_eq!(answer(deep.as_bytes()), (Value::Null, -32700));
}

#[test]
fn json_that_is_not_a_request_is_an_invalid_request() {
    for line in [
        "42",
        "\"tools/list\"",
        "null",
        "[]",
        r#"[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]"#,
        r#"{"hello": "world"}"#,
        r#"{"jsonrpc": "2.0", "id": {"n": 1}, "method": "ping"}"#,
    ] {
        assert_eq!(answer(line.as_bytes()), (Value::Null, -32600), "{line}");
    }
    // With an id that can be read, the answer carries it.
    assert_eq!(
        answer(br#"{"jsonrpc": "1.0", "id": 4, "method": "ping"}"#),
        (json!(4), -32600)
    );
    assert_eq!(
        answer(br#"{"id": "x", "method": "ping"}"#),
        (json!("x"), -32600)
    );
    assert_eq!(
        answer(br#"{"jsonrpc": "2.0", "id": 6, "method": 6}"#),
        (json!(6), -32600)
    );
    assert_eq!(
        answer(br#"{"jsonrpc": "2.0", "id": 8}"#),
        (json!(8), -32600)
    );
    // A number is echoed as sent, even one JSON-RPC does not accept as an id.
    assert_eq!(
        answer(br#"{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}"#),
        (json!(1.5), -32600)
    );
}

#[test]
fn a_request_whose_params_do_not_fit_is_invalid_params() {
    let response = rejected(br#"{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": 5}"#);
    assert_eq!(response["id"], json!(9), "{response}");
    assert_eq!(response["error"]["code"], json!(-32602), "{response}");
    let message = response["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`tools/call`") && message.contains("must be an object"),
        "{message}"
    );
}

#[test]
fn messages_pass_and_blank_lines_and_broken_notifications_are_ignored() {
    for line in [
        r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}"#,
        "\u{feff}{\"jsonrpc\": \"2.0\", \"id\": \"a\", \"method\": \"ping\"}\r",
        r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#,
        // A request for a method rmcp does not know: rmcp answers it (method not found).
        r#"{"jsonrpc": "2.0", "id": 2, "method": "no/such-method"}"#,
        // A client's response to a server request.
        r#"{"jsonrpc": "2.0", "id": 3, "result": {}}"#,
    ] {
        assert!(
            matches!(classify(line.as_bytes()), Incoming::Message(_)),
            "{line:?}: {:?}",
            classify(line.as_bytes())
        );
    }
    for line in [
        "",
        "  \t",
        "\r",
        // A notification is never answered, not even when it does not parse.
        r#"{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 5}"#,
    ] {
        assert!(
            matches!(classify(line.as_bytes()), Incoming::Ignore),
            "{line:?}: {:?}",
            classify(line.as_bytes())
        );
    }
}

#[test]
fn the_id_is_read_from_the_start_of_a_damaged_message() {
    assert_eq!(
        id_from_prefix(br#"{"jsonrpc":"2.0","id":12,"par"#),
        json!(12)
    );
    assert_eq!(
        id_from_prefix(br#"{"params":{"a":[1,2]},"id":"q","method""#),
        json!("q")
    );
    // After the damage, or not a string or number: unknown.
    assert_eq!(id_from_prefix(br#"{"params":{"a":,"id":12}"#), Value::Null);
    assert_eq!(id_from_prefix(br#"{"id":[1],"method":"x"}"#), Value::Null);
    assert_eq!(id_from_prefix(b"[1, 2"), Value::Null);
}

#[tokio::test]
async fn the_line_reader_cuts_long_lines_and_skips_their_rest() {
    let input: &[u8] = b"short\nexactly-10\n0123456789ABCDEF\nnext\r\n\nlast";
    let mut lines = LineReader::new(input, 10);
    let mut read = Vec::new();
    while let Some(line) = lines.next().await.unwrap() {
        read.push(line);
    }
    assert_eq!(
        read,
        [
            Line::Complete(b"short".to_vec()),
            Line::Complete(b"exactly-10".to_vec()),
            Line::TooLong(b"0123456789".to_vec()),
            Line::Complete(b"next\r".to_vec()),
            Line::Complete(Vec::new()),
            Line::Complete(b"last".to_vec()),
        ]
    );

    // A long line arriving in small pieces is cut as soon as it crosses the limit, and its
    // tail, however long, is skipped.
    let (mut client, server) = tokio::io::duplex(8);
    let mut lines = LineReader::new(server, 10);
    let writer = tokio::spawn(async move {
        for _ in 0..1000 {
            client.write_all(b"abcdefgh").await.unwrap();
        }
        client.write_all(b"\nafter\n").await.unwrap();
    });
    assert_eq!(
        lines.next().await.unwrap(),
        Some(Line::TooLong(b"abcdefghab".to_vec()))
    );
    assert_eq!(
        lines.next().await.unwrap(),
        Some(Line::Complete(b"after".to_vec()))
    );
    writer.await.unwrap();
    assert_eq!(lines.next().await.unwrap(), None);
}

/// A client's end of an in-memory stdio session.
struct Session {
    input: tokio::io::DuplexStream,
    output: tokio::io::Lines<BufReader<tokio::io::DuplexStream>>,
}

impl Session {
    async fn send(&mut self, line: &[u8]) {
        self.input.write_all(line).await.unwrap();
        self.input.write_all(b"\n").await.unwrap();
    }

    /// The next message the server writes, within ten seconds.
    async fn receive(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.output.next_line())
            .await
            .expect("the server answers within 10 s")
            .unwrap()
            .expect("the server's output is open");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends a line and returns the answer.
    async fn ask(&mut self, line: &[u8]) -> Value {
        self.send(line).await;
        self.receive().await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_lines_are_answered_and_the_session_goes_on() {
    let home = TestHome::new();
    let locara = Locara::new(&LocaraConfig::new(home.path())).unwrap();
    let server = LocaraMcp::new(Arc::new(locara));
    let (input, server_input) = tokio::io::duplex(64 * 1024);
    let (server_output, output) = tokio::io::duplex(64 * 1024);
    let served = tokio::spawn(serve_lines(server, server_input, server_output));
    let mut session = Session {
        input,
        output: BufReader::new(output).lines(),
    };

    // A bad line before the handshake is answered too, and does not end the session.
    let early = session.ask(b"{oops").await;
    assert_eq!(early["error"]["code"], json!(-32700), "{early}");

    let initialized = session
        .ask(
            br#"{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}"#,
        )
        .await;
    assert_eq!(initialized["id"], json!(0), "{initialized}");
    assert_eq!(
        initialized["result"]["serverInfo"]["name"],
        json!("locara"),
        "{initialized}"
    );
    session
        .send(br#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#)
        .await;

    let cases: [(Vec<u8>, Value, i64); 5] = [
        (b"not json".to_vec(), Value::Null, -32700),
        (
            b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/list\", \"x\": \"\xff\"}"
                .to_vec(),
            json!(1),
            -32700,
        ),
        (nested(1000).into_bytes(), Value::Null, -32700),
        (b"[1, 2, 3]".to_vec(), Value::Null, -32600),
        (
            br#"{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": []}"#.to_vec(),
            json!(2),
            -32602,
        ),
    ];
    for (line, id, code) in cases {
        let response = session.ask(&line).await;
        assert_eq!(
            (&response["id"], &response["error"]["code"]),
            (&id, &json!(code)),
            "{}: {response}",
            String::from_utf8_lossy(&line)
        );
    }

    // Params rmcp takes for a custom request are answered by rmcp, with the id.
    let custom = session
        .ask(br#"{"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {"name": 5}}"#)
        .await;
    assert_eq!(custom["id"], json!("c"), "{custom}");
    assert!(custom["error"]["code"].is_i64(), "{custom}");

    // A line over the limit, its id first: answered with that id as soon as it is too long.
    let mut huge = br#"{"jsonrpc": "2.0", "id": "big", "method": "tools/call", "params": {"name": "text.chunk", "arguments": {"text": ""#.to_vec();
    huge.resize(MAX_MESSAGE_BYTES + 1024, b'a');
    huge.extend_from_slice(br#""}}}"#);
    let too_large = session.ask(&huge).await;
    assert_eq!(too_large["id"], json!("big"), "{too_large}");
    assert_eq!(too_large["error"]["code"], json!(-32600), "{too_large}");
    assert_eq!(
        too_large["error"]["data"]["max_bytes"],
        json!(MAX_MESSAGE_BYTES)
    );

    // And the session still serves.
    let listed = session
        .ask(br#"{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}"#)
        .await;
    assert_eq!(listed["id"], json!(3), "{listed}");
    assert!(
        listed["result"]["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == json!("text.chunk"))),
        "{listed}"
    );

    // Closing the input ends the session cleanly.
    drop(session.input);
    tokio::time::timeout(Duration::from_secs(10), served)
        .await
        .expect("the session ends when its input does")
        .unwrap()
        .unwrap();
}

/// A session with a Locara whose app runs `test.state` (which reports progress) and grants it
/// `progress`, initialized.
async fn state_session() -> (TestHome, Session) {
    let home = TestHome::new();
    home.publish(
        &home.registry(),
        std::path::Path::new(locara_test_artifacts::PDK_STATE),
        std::path::Path::new(locara_test_artifacts::PDK_STATE_MANIFEST),
    )
    .unwrap();
    let app = locara_facade::AppManifest::from_json(
        &json!({
            "schema_version": 1,
            "name": "watched",
            "tools": ["test.state@0.1.0"],
            "grants": {"services": ["kv", "progress"], "max_safety_tier": "side_effecting"},
        })
        .to_string(),
    )
    .unwrap();
    let config = LocaraConfig::new(home.path()).with_app(app, home.path());
    let server = LocaraMcp::new(Arc::new(Locara::new(&config).unwrap()));
    let (input, server_input) = tokio::io::duplex(64 * 1024);
    let (server_output, output) = tokio::io::duplex(64 * 1024);
    tokio::spawn(serve_lines(server, server_input, server_output));
    let mut session = Session {
        input,
        output: BufReader::new(output).lines(),
    };
    let initialized = session
        .ask(
            br#"{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}"#,
        )
        .await;
    assert_eq!(initialized["id"], json!(0), "{initialized}");
    session
        .send(br#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#)
        .await;
    (home, session)
}

/// Sends `request` and reads up to its response: the messages before it, and it.
async fn exchange(session: &mut Session, request: &Value) -> (Vec<Value>, Value) {
    session.send(request.to_string().as_bytes()).await;
    let mut before = Vec::new();
    loop {
        let message = session.receive().await;
        if message.get("id") == Some(&request["id"]) {
            return (before, message);
        }
        before.push(message);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_progress_token_brings_each_report_as_a_notification_before_the_result() {
    let (_home, mut session) = state_session().await;
    let (before, response) = exchange(
        &mut session,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "test.state",
            "arguments": {"op": "progress", "n": 3},
            "_meta": {"progressToken": "p-1"},
        }}),
    )
    .await;
    assert_eq!(response["result"]["isError"], json!(false), "{response}");
    let seen: Vec<(Value, Value, Value, Value)> = before
        .iter()
        .map(|m| {
            assert_eq!(m["method"], json!("notifications/progress"), "{m}");
            let p = &m["params"];
            (
                p["progressToken"].clone(),
                p["progress"].clone(),
                p["total"].clone(),
                p["message"].clone(),
            )
        })
        .collect();
    let expected: Vec<(Value, Value, Value, Value)> = [
        (1, "Counting"),
        (2, "Counting: step 1"),
        (3, "Counting: step 2"),
        (4, "Counting: step 3"),
        (5, "Counting: counted to 3"),
    ]
    .into_iter()
    .map(|(progress, message)| {
        // Numbers, as floats: MCP's `progress` and `total` need not be whole.
        let progress = f64::from(progress);
        (json!("p-1"), json!(progress), json!(5.0), json!(message))
    })
    .collect();
    assert_eq!(seen, expected);

    // Without a token the same call brings no notification: its response comes first.
    let (before, response) = exchange(
        &mut session,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "test.state",
            "arguments": {"op": "progress", "n": 3},
        }}),
    )
    .await;
    assert!(before.is_empty(), "{before:?}");
    assert_eq!(response["result"]["isError"], json!(false), "{response}");
    assert_eq!(
        response["result"]["structuredContent"],
        json!({"steps": 3}),
        "{response}"
    );
}
