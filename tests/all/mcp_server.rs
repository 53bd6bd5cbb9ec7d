//! `locara serve` driven by a real third-party MCP client, the official Python SDK (PyPI `mcp`,
//! installed by `.ci/test-deps` into a venv), over stdio and over streamable HTTP: the listing,
//! a successful call, invalid arguments and an exceeded limit, as the client parses them; and
//! `ocr` called with a progress callback, whose reports the client hears before the result.
//!
//! The `locara` binary belongs to another package, so the tests build it with the cargo that
//! runs them, into the same target directory (a no-op when it is fresh).

use std::{
    io::{BufRead as _, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
};

use locara_facade::{Locara, LocaraConfig};
use locara_test_artifacts::TestHome;
use serde_json::{Value, json};

/// Where `.ci/test-deps` puts the venv with the MCP SDK, unless `LOCARA_PY_VENV` says otherwise.
const DEFAULT_VENV: &str = "/var/tmp/locara-py";

/// The venv's python, or a failure saying how to make it.
pub(crate) fn python() -> PathBuf {
    let venv = std::env::var_os("LOCARA_PY_VENV")
        .map_or_else(|| PathBuf::from(DEFAULT_VENV), PathBuf::from);
    let python = venv.join("bin/python");
    let has_mcp = python.is_file()
        && Command::new(&python)
            .args(["-c", "import mcp"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    assert!(
        has_mcp,
        "no Python venv with the MCP SDK at {}: run `bash .ci/test-deps` (it creates the venv at \
         $LOCARA_PY_VENV, default {DEFAULT_VENV}, and installs the pinned `mcp`)",
        venv.display()
    );
    python
}

/// The `locara` binary, built (once per test process) into this test's target directory.
pub(crate) fn locara() -> &'static Path {
    locara_test_artifacts::locara_binary()
}

/// A home with every built-in tool, and an empty working directory (no stray `locara.json`).
struct Fixture {
    home: TestHome,
    cwd: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture {
            home: TestHome::new(),
            cwd: tempfile::tempdir().unwrap(),
        }
    }

    fn home(&self) -> &str {
        self.home.path().to_str().unwrap()
    }

    /// `locara --home HOME serve ARGS…`, with stderr piped.
    fn serve(&self, args: &[&str]) -> Command {
        let mut command = Command::new(locara());
        command
            .args(["--home", self.home(), "serve"])
            .args(args)
            .current_dir(self.cwd.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        command
    }

    /// Runs the Python client with `transport` (`stdio CMD…` or `http URL`) and `calls`.
    fn client(&self, transport: &[&str], calls: &Value) -> Value {
        self.run_script("client.py", transport, calls)
    }

    /// Runs the Python client with `calls` against `locara --home HOME serve SERVE_ARGS…`,
    /// which it starts itself over stdio.
    fn stdio_client(&self, serve_args: &[&str], calls: &Value) -> Value {
        let mut transport = vec![
            "stdio",
            locara().to_str().unwrap(),
            "--home",
            self.home(),
            "serve",
        ];
        transport.extend_from_slice(serve_args);
        self.client(&transport, calls)
    }

    /// Runs `tests/mcp/SCRIPT` (a Python client) with `calls` and `transport`; its report.
    fn run_script(&self, script: &str, transport: &[&str], calls: &Value) -> Value {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("mcp")
            .join(script);
        let output = Command::new(python())
            .arg(script)
            .arg(calls.to_string())
            .args(transport)
            .current_dir(self.cwd.path())
            .output()
            .expect("run the MCP client");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "MCP client over {transport:?} failed ({}):\nstdout: {stdout}\nstderr: {stderr}",
            output.status
        );
        serde_json::from_str(&stdout).unwrap_or_else(|e| {
            panic!("client output is not JSON ({e}): {stdout}\nstderr: {stderr}")
        })
    }
}

/// A child process killed when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The calls every transport makes, in order; `check` knows what each must return.
fn calls() -> Value {
    json!([
        {"name": "text.chunk", "arguments": {"text": "Alpha beta. Gamma delta. Epsilon zeta.", "max_chars": 12}},
        {"name": "text.chunk", "arguments": {"text": "Alpha.", "max_chars": "x"}},
        {"name": "code-exec.lua", "arguments": {"code": "while true do end"}},
        {"name": "no.such-tool", "arguments": {}},
    ])
}

/// The text of a result's first content block, parsed as JSON.
fn first_text(result: &Value) -> Value {
    let block = &result["content"][0];
    assert_eq!(block["type"], json!("text"), "{result:#}");
    let text = block["text"].as_str().expect("text");
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Asserts what the client saw against the home's own manifests.
fn check(fixture: &Fixture, report: &Value) {
    assert_eq!(report["server"]["name"], json!("locara"), "{report:#}");
    let locara = Locara::new(&LocaraConfig::new(fixture.home.path())).unwrap();
    let chunk = locara.describe("text.chunk").unwrap();

    // 1. The listing: every tool once, by id; text.chunk with its manifest's schemas.
    let tools = report["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for id in [
        "text.chunk",
        "code-exec.lua",
        "pdf.split",
        "filesystem.write",
    ] {
        assert!(names.contains(&id), "{id} is not listed: {names:?}");
    }
    let listed = tools
        .iter()
        .find(|t| t["name"] == json!("text.chunk"))
        .unwrap();
    assert_eq!(listed["inputSchema"], chunk.input_schema, "{listed:#}");
    assert_eq!(listed["outputSchema"], chunk.output_schema, "{listed:#}");
    assert_eq!(listed["description"], json!(chunk.summary.description));
    assert_eq!(
        listed["annotations"]["readOnlyHint"],
        json!(true),
        "{listed:#}"
    );
    let write = tools
        .iter()
        .find(|t| t["name"] == json!("filesystem.write"))
        .unwrap();
    assert_eq!(
        write["annotations"]["readOnlyHint"],
        json!(false),
        "{write:#}"
    );

    let results = report["results"].as_array().expect("results");
    assert_eq!(results.len(), 4, "{report:#}");

    // 2. A successful call: the chunks, as text and as structured content.
    let ok = &results[0];
    assert_eq!(ok["isError"], json!(false), "{ok:#}");
    let output = first_text(ok);
    assert_eq!(ok["structuredContent"], output, "{ok:#}");
    let chunks: Vec<&str> = output["chunks"]
        .as_array()
        .unwrap_or_else(|| panic!("no chunks: {output:#}"))
        .iter()
        .map(|c| c["text"].as_str().or(c.as_str()).expect("chunk text"))
        .collect();
    assert!(chunks.len() >= 3, "{output:#}");
    assert_eq!(output["count"], json!(chunks.len()), "{output:#}");
    assert!(chunks.iter().all(|c| c.chars().count() <= 12), "{chunks:?}");
    assert_eq!(
        chunks.concat().split_whitespace().collect::<Vec<_>>(),
        "Alpha beta. Gamma delta. Epsilon zeta."
            .split_whitespace()
            .collect::<Vec<_>>(),
        "{chunks:?}"
    );

    // 3. Invalid arguments: an error result (not a protocol error) with the JSON pointer.
    let invalid = &results[1];
    assert_eq!(invalid["isError"], json!(true), "{invalid:#}");
    let error = first_text(invalid);
    assert_eq!(error["code"], json!("invalid_input"), "{error:#}");
    let violation = error["violations"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["pointer"] == json!("/max_chars")))
        .unwrap_or_else(|| panic!("no violation at /max_chars: {error:#}"));
    assert!(
        violation["constraint"]
            .as_str()
            .unwrap()
            .starts_with("type"),
        "{violation:#}"
    );

    // 4. An exceeded limit: an error result naming the limit.
    let limit = &results[2];
    assert_eq!(limit["isError"], json!(true), "{limit:#}");
    let error = first_text(limit);
    locara_test_artifacts::assert_an_endless_loop_names_its_limit(&error);

    // 5. An unknown tool: the one JSON-RPC error, invalid params, naming what exists (the
    // closest ten, and a count of the rest).
    let unknown = &results[3]["protocolError"];
    assert_eq!(unknown["code"], json!(-32602), "{:#}", results[3]);
    let message = unknown["message"].as_str().unwrap();
    let listed = message
        .strip_prefix("unknown tool `no.such-tool`; available: ")
        .unwrap_or_else(|| panic!("{unknown:#}"));
    let (names, more) = listed.rsplit_once(", and ").unwrap_or((listed, ""));
    assert_eq!(names.split(", ").count(), 10, "{unknown:#}");
    assert!(names.contains("filesystem.read"), "{unknown:#}");
    assert!(more.ends_with(" more"), "{unknown:#}");
}

#[test]
fn stdio() {
    let fixture = Fixture::new();
    let report = fixture.stdio_client(&[], &calls());
    check(&fixture, &report);
}

/// `locara serve --http 127.0.0.1:0` for `fixture`, and its URL, once it listens.
fn serve_http(fixture: &Fixture) -> (Server, String) {
    let mut server = Server(
        fixture
            .serve(&["--http", "127.0.0.1:0"])
            .spawn()
            .expect("spawn locara serve"),
    );
    let mut stderr = BufReader::new(server.0.stderr.take().unwrap());
    let mut seen = String::new();
    let url = loop {
        let mut line = String::new();
        let read = stderr.read_line(&mut line).unwrap();
        assert!(read > 0, "locara serve ended before listening:\n{seen}");
        seen.push_str(&line);
        if let Some(url) = line.trim().strip_prefix("listening on ") {
            break url.to_owned();
        }
    };
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (server, url)
}

#[test]
fn streamable_http() {
    let fixture = Fixture::new();
    let (_server, url) = serve_http(&fixture);
    let report = fixture.client(&["http", &url], &calls());
    check(&fixture, &report);
}

/// Issue 14 over `serve --http`: a tool that replaces `/tmp/out` by a link to the home's
/// `keys/` gets an error result, and no blob resource (nor any other byte of the answer) holds
/// the key.
#[test]
fn a_symlinked_out_returns_no_home_key_over_http() {
    let fixture = Fixture::new();
    fixture.home.publish_upstream_tool("code-exec.python");
    let secret = crate::escape::plant_home_key(fixture.home.path());
    let (_server, url) = serve_http(&fixture);
    let code = crate::escape::link_out_to_keys(fixture.home.path());
    let calls = json!([{"name": "code-exec.python", "arguments": {"code": code}}]);
    let report = fixture.client(&["http", &url], &calls);
    let result = &report["results"][0];
    assert_eq!(result["isError"], json!(true), "{report:#}");
    let error = first_text(result);
    assert_eq!(error["code"], json!("invalid_output"), "{error:#}");
    crate::escape::assert_no_key(&report.to_string(), &secret);
}

#[test]
fn a_remote_address_is_refused_without_auth() {
    let fixture = Fixture::new();
    let output = fixture
        .serve(&["--http", "0.0.0.0:0"])
        .output()
        .expect("run locara serve");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a loopback address"), "{stderr}");
    assert!(stderr.contains("--auth FILE"), "{stderr}");
    // And `--auth` needs `--http`.
    let output = fixture.serve(&["--auth", "auth.json"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
}

/// The title block of the libtasn1 manual's first page (three lines), as poppler renders it.
fn title_block_png() -> Vec<u8> {
    use crate::media_support::{libtasn1_pdf, program, run};
    let dir = tempfile::tempdir().unwrap();
    let mut pdftoppm = program("pdftoppm", "poppler-utils");
    pdftoppm
        .args(["-png", "-singlefile", "-r", "100", "-f", "1", "-l", "1"])
        .args(["-x", "110", "-y", "280", "-W", "640", "-H", "110"])
        .arg(libtasn1_pdf())
        .arg(dir.path().join("title"));
    run(pdftoppm, b"");
    std::fs::read(dir.path().join("title.png")).unwrap()
}

/// `ocr` on the title block with a progress callback, then without one.
fn ocr_calls() -> Value {
    let source = crate::media_support::blob(&title_block_png());
    json!([
        {"name": "ocr", "arguments": {"source": source}, "progress": true},
        {"name": "ocr", "arguments": {"source": source}, "progress": false},
    ])
}

/// Asserts what `progress_client.py` saw of [`ocr_calls`] over `transport`.
fn check_progress(report: &Value, transport: &str) {
    let calls = report["calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 2, "{report:#}");
    for call in calls {
        let result = &call["result"];
        assert_eq!(result["isError"], json!(false), "{transport}: {result:#}");
        let text = first_text(result)["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(text.contains("Syntax"), "{transport}: {text:?}");
    }

    // With a callback: every report heard, in order, before the call returned.
    let heard = calls[0]["heard"].as_array().unwrap();
    eprintln!(
        "{transport}: {} progress notifications: {heard:#?}",
        heard.len()
    );
    assert!(heard.len() >= 2, "{transport}: {report:#}");
    let progress: Vec<f64> = heard
        .iter()
        .map(|h| h["progress"].as_f64().expect("a number"))
        .collect();
    assert!(
        progress.windows(2).all(|w| w[0] < w[1]),
        "{transport}: progress must increase: {progress:?}"
    );
    assert!(
        heard
            .iter()
            .all(|h| h["message"].as_str().is_some_and(|m| !m.is_empty())),
        "{transport}: {heard:#?}"
    );
    assert!(
        heard.iter().any(|h| h["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Reading lines"))
            && h["total"].is_number()),
        "{transport}: no step of reading lines with a total: {heard:#?}"
    );
    // The last report (the last task done) came before the result: the call was complete.
    let last = heard.last().unwrap();
    assert_eq!(last["progress"], last["total"], "{transport}: {heard:#?}");
    // The session saw exactly those, and none after the call returned.
    assert_eq!(
        calls[0]["notifications"].as_array().unwrap().len(),
        heard.len(),
        "{transport}: {report:#}"
    );
    assert_eq!(report["late"], json!([]), "{transport}: {report:#}");

    // Without a callback: no token, no notification.
    assert_eq!(calls[1]["heard"], json!([]), "{transport}: {report:#}");
    assert_eq!(
        calls[1]["notifications"],
        json!([]),
        "{transport}: {report:#}"
    );
}

#[test]
fn ocr_reports_progress_to_a_client_that_asks_over_stdio_and_http() {
    let fixture = Fixture::new();
    fixture.home.install_models("ocr");
    let calls = ocr_calls();

    let report = fixture.run_script(
        "progress_client.py",
        &[
            "stdio",
            locara().to_str().unwrap(),
            "--home",
            fixture.home(),
            "serve",
        ],
        &calls,
    );
    check_progress(&report, "stdio");

    let (_server, url) = serve_http(&fixture);
    let report = fixture.run_script("progress_client.py", &["http", &url], &calls);
    check_progress(&report, "http");
}

/// The memory tools over MCP: the session's user is the server's `--user` (one stdio server
/// per person), never an argument the model could choose. Alice's note is found in her next
/// session and never in Bob's; a server without a user refuses the call with a tool error.
#[test]
fn memory_belongs_to_the_user_the_server_runs_for() {
    let fixture = Fixture::new();
    let models = locara_registry::ModelStore::new(fixture.home.path().join("models"));
    let blobs = locara_upstream::fetch::BlobCache::user_default();
    let search = locara_memory::manifests().remove(1);
    locara_upstream::models::install_missing(&search, &models, &blobs, |_| {}).unwrap();
    let session = |user: Option<&str>, calls: Value| -> Vec<Value> {
        let mut command = vec![locara().to_str().unwrap(), "--home", fixture.home()];
        if let Some(user) = user {
            command.extend(["--user", user]);
        }
        command.push("serve");
        let mut transport = vec!["stdio"];
        transport.extend(command);
        let report = fixture.client(&transport, &calls);
        report["results"].as_array().unwrap().clone()
    };
    // The second call names another user in its arguments: not a parameter, so refused.
    let saved = session(
        Some("alice"),
        json!([
            {"name": "memory.save", "arguments": {
                "text": "The quarterly report is due on the first Monday of March",
                "source": "meeting notes",
            }},
            {"name": "memory.save", "arguments": {"text": "x", "user": "bob"}},
        ]),
    );
    assert_ne!(saved[0]["isError"], json!(true), "{saved:#?}");
    let note_id = first_text(&saved[0])["note_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(saved[1]["isError"], json!(true), "{saved:#?}");

    let query =
        json!([{"name": "memory.search", "arguments": {"query": "when is the report deadline"}}]);
    let alice = session(Some("alice"), query.clone());
    let hits = first_text(&alice[0])["results"].clone();
    assert_eq!(hits[0]["note_id"], json!(note_id), "{alice:#?}");
    assert_eq!(hits[0]["source"], json!("meeting notes"));
    let bob = session(Some("bob"), query.clone());
    assert_eq!(first_text(&bob[0])["results"], json!([]), "{bob:#?}");
    let nobody = session(None, query);
    assert_eq!(nobody[0]["isError"], json!(true), "{nobody:#?}");
    let message = nobody[0]["content"][0]["text"].as_str().unwrap();
    assert!(message.contains("need a user"), "{message}");
}

/// `locara serve --code-mode`, driven by the official client over stdio: two tools; a search
/// that names each tool as a program calls it; Python and JavaScript programs that call tools
/// through the gateway; a language that is not served.
#[test]
fn code_mode_serves_a_search_and_programs_that_call_tools() {
    let fixture = Fixture::new();
    fixture.home.publish_upstream_tool("code-exec.python");
    fixture.home.publish_upstream_tool("code-exec.js");
    let python = "import locara\nr = locara.tools.text_chunk(text='One. Two. Three.', max_chars=6)\nprint(r['count'], r.tool)";
    let js = "const r = await locara.call('text.chunk', { text: 'One. Two.', max_chars: 6 });\nprint(r.output.count)";
    let calls = json!([
        {"name": "search_tools", "arguments": {"query": "split text into chunks", "limit": 3}},
        {"name": "run_program", "arguments": {"language": "python", "code": python}},
        {"name": "run_program", "arguments": {"language": "javascript", "code": js}},
        {"name": "run_program", "arguments": {"language": "ruby", "code": "puts 1"}},
    ]);
    let report = fixture.stdio_client(&["--code-mode"], &calls);
    let names: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["run_program", "search_tools"], "{report:#}");

    let results = report["results"].as_array().unwrap();
    let hits = first_text(&results[0]);
    assert_eq!(hits[0]["id"], "text.chunk", "{hits:#}");
    assert_eq!(hits[0]["python"], "locara.tools.text_chunk");
    assert_eq!(hits[0]["javascript"], "locara.tools.textChunk");
    assert_eq!(hits[0]["input_schema"]["required"], json!(["text"]));

    for (result, stdout) in [(&results[1], "3 text.chunk@0.1.0\n"), (&results[2], "2\n")] {
        assert_ne!(result["isError"], json!(true), "{result:#}");
        let output = first_text(result);
        assert_eq!(output["exit_code"], 0, "{output:#}");
        assert_eq!(output["stdout"], stdout, "{output:#}");
    }
    assert_eq!(results[3]["isError"], json!(true), "{:#}", results[3]);
    let refused = first_text(&results[3]);
    assert_eq!(refused["code"], "invalid_input");
    assert_eq!(refused["violations"][0]["pointer"], "/language");
}
