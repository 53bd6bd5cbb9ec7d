//! `locara serve --http --auth FILE`, end to end: keys made by `locara keys add`, a real server
//! process on loopback, the official Python MCP client sending a bearer key, and raw HTTP for
//! what a client library hides (401 and its challenge, 429 and `Retry-After`, the
//! protected-resource metadata, health). JWTs are signed here with Ed25519 and checked by the
//! server against a JWKS file.

use std::{
    io::{BufRead as _, BufReader, Read as _, Write as _},
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use base64::Engine as _;
use locara_test_artifacts::TestHome;
use serde_json::{Value, json};

use crate::mcp_server::{locara, python};

/// A child process killed when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A home, a working directory with two apps and a data directory, and an auth file.
struct Site {
    home: TestHome,
    dir: tempfile::TempDir,
}

impl Site {
    fn new() -> Site {
        let site = Site {
            home: TestHome::new(),
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(site.path("data")).unwrap();
        let grants = json!({"fs": [{"path": site.path("data"), "write": false}]});
        for (name, tools) in [
            ("chunker", json!(["text.chunk@0.1.0"])),
            ("prober", json!(["test.probe@0.1.0", "text.chunk@0.1.0"])),
        ] {
            let app = json!({"schema_version": 1, "name": name, "tools": tools, "grants": grants});
            std::fs::write(site.path(&format!("{name}.json")), app.to_string()).unwrap();
        }
        site
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn locara(&self) -> Command {
        let mut command = Command::new(locara());
        command
            .arg("--home")
            .arg(self.home.path())
            .current_dir(self.dir.path());
        command
    }

    /// `locara keys add ID --app APP.json --auth auth.json EXTRA…`: the key it printed.
    fn add_key(&self, id: &str, app: &str, extra: &[&str]) -> String {
        let output = self
            .locara()
            .args([
                "keys",
                "add",
                id,
                "--app",
                &format!("{app}.json"),
                "--auth",
                "auth.json",
            ])
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        assert!(stderr.contains("shown once"), "{stderr}");
        let key = String::from_utf8(output.stdout).unwrap().trim().to_owned();
        assert!(key.starts_with("lk_") && key.len() > 40, "{key}");
        key
    }

    /// `locara serve --http 127.0.0.1:0 --auth auth.json --dir data`, once it listens; its
    /// address.
    fn serve(&self) -> (Server, String) {
        let (server, addr, _) = self.serve_with(&[]);
        (server, addr)
    }

    /// [`Site::serve`] with `extra` arguments; also the metrics address, if it printed one.
    fn serve_with(&self, extra: &[&str]) -> (Server, String, Option<String>) {
        let mut server = Server(
            self.locara()
                .args([
                    "serve",
                    "--http",
                    "127.0.0.1:0",
                    "--auth",
                    "auth.json",
                    "--dir",
                    "data",
                ])
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let mut stderr = BufReader::new(server.0.stderr.take().unwrap());
        let mut seen = String::new();
        let mut metrics = None;
        let url = loop {
            let mut line = String::new();
            let read = stderr.read_line(&mut line).unwrap();
            assert!(read > 0, "locara serve ended before listening:\n{seen}");
            seen.push_str(&line);
            if let Some(url) = line.trim().strip_prefix("metrics on http://") {
                metrics = url.strip_suffix("/metrics").map(str::to_owned);
            }
            if let Some(url) = line.trim().strip_prefix("listening on ") {
                break url.to_owned();
            }
        };
        // The rest of the log, in `serve.log`, for the assertions that look at it.
        let mut log = std::fs::File::create(self.path("serve.log")).unwrap();
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut log));
        let addr = url
            .strip_prefix("http://")
            .and_then(|u| u.strip_suffix("/mcp"))
            .unwrap()
            .to_owned();
        (server, addr, metrics)
    }

    /// The Python MCP client's report of `calls`, sending `bearer`.
    fn client(&self, addr: &str, bearer: &str, calls: &Value) -> Value {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/client.py");
        let output = Command::new(python())
            .arg(script)
            .arg(calls.to_string())
            .args(["http", &format!("http://{addr}/mcp")])
            .env("LOCARA_BEARER", bearer)
            .current_dir(self.dir.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "client failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_str(&stdout).unwrap()
    }
}

/// An HTTP answer read whole.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request on a new connection (closed after it), read to its end.
fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {raw}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Reply {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// A JSON-RPC POST to `/mcp` with `bearer` (if any) and the session (if any).
fn post(addr: &str, bearer: Option<&str>, session: Option<&str>, message: &Value) -> Reply {
    let authorization = bearer.map(|b| format!("Bearer {b}"));
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    if let Some(value) = &authorization {
        headers.push(("Authorization", value));
    }
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id", session));
    }
    http(addr, "POST", "/mcp", &headers, &message.to_string())
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
}

/// An initialized session for `bearer`: its id.
fn session(addr: &str, bearer: &str) -> String {
    let reply = post(addr, Some(bearer), None, &initialize());
    assert_eq!(reply.status, 200, "{reply:?}");
    let session = reply
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let reply = post(addr, Some(bearer), Some(&session), &note);
    assert_eq!(reply.status, 202, "{reply:?}");
    session
}

/// A `tools/call` of the probe sleeping 1.5 s in `session`, made on another thread; its reply.
fn sleep_in_background(
    addr: &str,
    bearer: &str,
    session: String,
) -> std::thread::JoinHandle<Reply> {
    let (addr, bearer) = (addr.to_owned(), bearer.to_owned());
    std::thread::spawn(move || {
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "test.probe", "arguments": {"op": "sleep", "ms": 1500}}});
        post(&addr, Some(&bearer), Some(&session), &call)
    })
}

fn names(report: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    names
}

#[test]
fn each_key_is_bounded_by_its_app() {
    let site = Site::new();
    let chunker = site.add_key("chunker", "chunker", &[]);
    let prober = site.add_key("prober", "prober", &[]);
    // Only hashes are stored.
    let file = std::fs::read_to_string(site.path("auth.json")).unwrap();
    assert!(
        !file.contains(&chunker) && !file.contains(&prober),
        "{file}"
    );
    let (_server, addr, metrics) = site.serve_with(&["--metrics", "127.0.0.1:0"]);
    let metrics = metrics.expect("the metrics address");

    let calls = json!([
        {"name": "text.chunk", "arguments": {"text": "One. Two. Three.", "max_chars": 6}},
        {"name": "test.probe", "arguments": {"op": "echo"}},
    ]);
    let report = site.client(&addr, &chunker, &calls);
    assert_eq!(names(&report), ["text.chunk"], "{report:#}");
    let chunked = &report["results"][0];
    assert_ne!(chunked["isError"], json!(true), "{report:#}");
    assert!(
        chunked["structuredContent"]["count"].as_u64() > Some(1),
        "{report:#}"
    );
    // A tool the key's app lacks is not there to call.
    let refused = &report["results"][1];
    assert!(
        refused["protocolError"].is_object() || refused["isError"] == json!(true),
        "{report:#}"
    );

    let report = site.client(&addr, &prober, &calls);
    assert_eq!(names(&report), ["test.probe", "text.chunk"], "{report:#}");
    assert_ne!(report["results"][1]["isError"], json!(true), "{report:#}");

    // Both apps' calls are counted, by tool and outcome, with their latency.
    let scraped = http(&metrics, "GET", "/metrics", &[], "");
    assert_eq!(scraped.status, 200, "{scraped:?}");
    assert!(
        scraped
            .header("content-type")
            .unwrap()
            .starts_with("text/plain; version=0.0.4"),
        "{scraped:?}"
    );
    let text = scraped.body;
    for line in [
        "locara_calls_total{tool=\"text.chunk\",outcome=\"ok\"} 2",
        "locara_calls_total{tool=\"test.probe\",outcome=\"ok\"} 1",
        "locara_call_duration_seconds_count{tool=\"text.chunk\"} 2",
        "locara_call_duration_seconds_bucket{tool=\"text.chunk\",le=\"+Inf\"} 2",
        "locara_calls_in_flight 0",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}:\n{text}");
    }
    // The MCP listener does not serve them.
    assert_eq!(http(&addr, "GET", "/metrics", &[], "").status, 404);
}

#[test]
fn missing_and_wrong_credentials_are_401_with_the_resource_metadata() {
    let site = Site::new();
    let key = site.add_key("chunker", "chunker", &[]);
    let (_server, addr) = site.serve();

    // Health needs no credentials.
    assert_eq!(http(&addr, "GET", "/healthz", &[], "").status, 200);
    assert_eq!(http(&addr, "GET", "/readyz", &[], "").status, 200);
    let metadata = http(
        &addr,
        "GET",
        "/.well-known/oauth-protected-resource",
        &[],
        "",
    );
    assert_eq!(metadata.status, 200, "{metadata:?}");
    let metadata: Value = serde_json::from_str(&metadata.body).unwrap();
    assert_eq!(metadata["resource"], json!(format!("http://{addr}/mcp")));
    assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));

    let none = post(&addr, None, None, &initialize());
    assert_eq!(none.status, 401, "{none:?}");
    let challenge = none.header("www-authenticate").unwrap();
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"http://{addr}/.well-known/oauth-protected-resource\""
        )),
        "{challenge}"
    );
    assert!(none.body.contains("locara keys add"), "{none:?}");

    let wrong = post(&addr, Some(&format!("{key}x")), None, &initialize());
    assert_eq!(wrong.status, 401, "{wrong:?}");
    assert!(
        wrong
            .header("www-authenticate")
            .unwrap()
            .contains("error=\"invalid_token\""),
        "{wrong:?}"
    );
    assert!(wrong.body.contains("not known"), "{wrong:?}");

    // The right key gets through.
    assert_eq!(post(&addr, Some(&key), None, &initialize()).status, 200);

    // A removed key is refused from the next start.
    let removed = site
        .locara()
        .args(["keys", "remove", "chunker", "--auth", "auth.json"])
        .output()
        .unwrap();
    assert!(removed.status.success());
    let file = std::fs::read_to_string(site.path("auth.json")).unwrap();
    assert!(!file.contains("chunker"), "{file}");
}

#[test]
fn the_rate_limit_and_the_concurrency_cap_answer_429_with_retry_after() {
    let site = Site::new();
    // Six a minute: one now, the next in ten seconds.
    let slow = site.add_key("slow", "chunker", &["--rate-per-minute", "6"]);
    // One call in flight at a time.
    let single = site.add_key("single", "prober", &["--max-concurrent", "1"]);
    let (_server, addr, metrics) = site.serve_with(&["--metrics", "127.0.0.1:0"]);
    let metrics = metrics.expect("the metrics address");

    assert_eq!(post(&addr, Some(&slow), None, &initialize()).status, 200);
    let limited = post(&addr, Some(&slow), None, &initialize());
    assert_eq!(limited.status, 429, "{limited:?}");
    let retry: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=10).contains(&retry), "{retry}");
    assert!(limited.body.contains("6 calls a minute"), "{limited:?}");

    // While a call sleeps, a second request of the same key is refused; after it, admitted.
    let id = session(&addr, &single);
    let sleeper = sleep_in_background(&addr, &single, id);
    std::thread::sleep(Duration::from_millis(500));
    let busy = post(&addr, Some(&single), None, &initialize());
    assert_eq!(busy.status, 429, "{busy:?}");
    assert_eq!(busy.header("retry-after"), Some("1"), "{busy:?}");
    assert!(busy.body.contains("in flight"), "{busy:?}");
    let slept = sleeper.join().unwrap();
    assert_eq!(slept.status, 200, "{slept:?}");
    assert!(slept.body.contains("\"result\""), "{slept:?}");
    assert_eq!(post(&addr, Some(&single), None, &initialize()).status, 200);

    let text = http(&metrics, "GET", "/metrics", &[], "").body;
    for line in [
        "locara_http_refused_total{reason=\"rate_limited\"} 1",
        "locara_http_refused_total{reason=\"too_many_in_flight\"} 1",
        "locara_call_duration_seconds_count{tool=\"test.probe\"} 1",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}:\n{text}");
    }
}

/// A compact JWS signed with Ed25519 (`alg` EdDSA).
fn jwt(key: &ed25519_dalek::SigningKey, kid: &str, claims: &Value) -> String {
    use ed25519_dalek::Signer as _;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let header = json!({"alg": "EdDSA", "typ": "JWT", "kid": kid});
    let signing_input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let signature = key.sign(signing_input.as_bytes());
    format!("{signing_input}.{}", b64(&signature.to_bytes()))
}

#[test]
fn jwts_are_checked_against_the_jwks_issuer_and_audience() {
    let site = Site::new();
    let key = ed25519_dalek::SigningKey::from_bytes(&[5; 32]);
    let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes());
    std::fs::write(
        site.path("jwks.json"),
        json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": "main", "alg": "EdDSA"}]})
            .to_string(),
    )
    .unwrap();
    // The audience is the server's public URL (what `--public-url` would say), not its port.
    let audience = "https://locara.test/mcp";
    let auth = json!({"jwt": {"jwks": "jwks.json", "issuer": "https://auth.test",
        "audience": audience, "app": "chunker.json",
        "limits": {"max_concurrent": 4, "rate_per_minute": 600}}});
    std::fs::write(site.path("auth.json"), auth.to_string()).unwrap();
    let (_server, addr) = site.serve();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = |exp: u64, aud: &str| json!({"sub": "agent", "iss": "https://auth.test", "aud": aud, "exp": exp});

    let metadata = http(
        &addr,
        "GET",
        "/.well-known/oauth-protected-resource",
        &[],
        "",
    );
    let metadata: Value = serde_json::from_str(&metadata.body).unwrap();
    assert_eq!(
        metadata["authorization_servers"],
        json!(["https://auth.test"])
    );

    let good = jwt(&key, "main", &claims(now + 600, audience));
    assert_eq!(post(&addr, Some(&good), None, &initialize()).status, 200);
    // The Python client too, with the token as its bearer.
    let report = site.client(&addr, &good, &json!([]));
    assert_eq!(names(&report), ["text.chunk"], "{report:#}");

    let refused = |token: String, why: &str| {
        let reply = post(&addr, Some(&token), None, &initialize());
        assert_eq!(reply.status, 401, "{reply:?}");
        assert!(reply.body.contains(why), "{why}: {reply:?}");
    };
    refused(jwt(&key, "main", &claims(now - 3600, audience)), "expired");
    refused(
        jwt(
            &key,
            "main",
            &claims(now + 600, "https://elsewhere.test/mcp"),
        ),
        "another audience",
    );
    let stranger = ed25519_dalek::SigningKey::from_bytes(&[6; 32]);
    refused(
        jwt(&stranger, "main", &claims(now + 600, audience)),
        "signature",
    );
    refused(
        jwt(&key, "old", &claims(now + 600, audience)),
        "not in this server's JWKS",
    );
}

#[test]
fn sigterm_drains_the_calls_in_flight_then_exits() {
    let site = Site::new();
    let key = site.add_key("prober", "prober", &[]);
    let (mut server, addr) = site.serve();
    let id = session(&addr, &key);
    let sleeper = sleep_in_background(&addr, &key, id);
    std::thread::sleep(Duration::from_millis(400));
    locara_test_artifacts::sigterm(&server.0);
    std::thread::sleep(Duration::from_millis(300));
    // No new connections once stopping…
    assert!(
        TcpStream::connect(&addr).is_err(),
        "still accepting after SIGTERM"
    );
    // …but the call in flight is answered.
    let slept = sleeper.join().unwrap();
    assert_eq!(slept.status, 200, "{slept:?}");
    assert!(slept.body.contains("\"result\""), "{slept:?}");
    // And the process ends by itself, successfully.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = server.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still running after draining"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
}

#[test]
fn settings_come_from_flags_then_the_environment_then_the_config_file_and_the_log_is_json() {
    let site = Site::new();
    let key = site.add_key("chunker", "chunker", &[]);
    let free = || format!("127.0.0.1:{}", locara_test_artifacts::free_port());
    let (file_addr, env_addr) = (free(), free());
    std::fs::create_dir(site.path("etc")).unwrap();
    // Relative paths in the file are relative to it.
    std::fs::write(
        site.path("etc/locara.toml"),
        format!(
            "http = \"{file_addr}\"\nauth = \"../auth.json\"\ndir = \"../data\"\n\
             drain_seconds = 5\nlog_format = \"text\"\nlog = \"info\"\n"
        ),
    )
    .unwrap();
    let mut server = Server(
        site.locara()
            .args(["serve", "--log-format", "json"])
            .env("LOCARA_CONFIG", site.path("etc/locara.toml"))
            .env("LOCARA_HTTP", &env_addr)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stderr = BufReader::new(server.0.stderr.take().unwrap());
    let mut line = String::new();
    let url = loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "ended before listening"
        );
        let event: Value = serde_json::from_str(&line).expect("every log line is JSON");
        if let Some(url) = event["message"]
            .as_str()
            .and_then(|m| m.strip_prefix("listening on "))
        {
            break url.to_owned();
        }
    };
    // The environment's address, not the file's.
    assert_eq!(url, format!("http://{env_addr}/mcp"));
    assert!(TcpStream::connect(&file_addr).is_err());

    let report = site.client(
        &env_addr,
        &key,
        &json!([{"name": "text.chunk", "arguments": {"text": "a b c", "max_chars": 2}}]),
    );
    assert_ne!(report["results"][0]["isError"], json!(true), "{report:#}");
    let refused = post(&env_addr, Some("lk_wrong"), None, &initialize());
    assert_eq!(refused.status, 401);
    locara_test_artifacts::sigterm(&server.0);
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let events: Vec<Value> = rest
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let call = events
        .iter()
        .find(|e| e["target"] == "locara::call")
        .unwrap_or_else(|| panic!("no call event in {rest}"));
    assert_eq!(call["tool"], "text.chunk", "{call}");
    assert_eq!(call["outcome"], "ok", "{call}");
    assert_eq!(call["level"], "INFO", "{call}");
    assert!(call["ms"].as_f64().unwrap() > 0.0, "{call}");
    let refusal = events
        .iter()
        .find(|e| e["target"] == "locara::http")
        .unwrap_or_else(|| panic!("no refusal event in {rest}"));
    assert_eq!(refusal["status"], 401, "{refusal}");
    assert!(
        events
            .iter()
            .any(|e| e["message"] == "locara: stopped; every call in flight was answered"),
        "{rest}"
    );

    // A key the file does not know is refused with where it was read.
    std::fs::write(site.path("etc/bad.toml"), "htp = \"127.0.0.1:1\"\n").unwrap();
    let output = site
        .locara()
        .args(["serve", "--config", "etc/bad.toml"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr.contains("etc/bad.toml is not a valid config file"),
        "{stderr}"
    );
    assert!(stderr.contains("unknown field `htp`"), "{stderr}");
}

/// What an OTLP receiver was sent: (path, body) of each request.
type Exports = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<u8>)>>>;

/// An OTLP/HTTP receiver on loopback: answers every POST with 200 and keeps (path, body).
fn otlp_receiver() -> (String, Exports) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = std::sync::Arc::clone(&received);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let mut reader = BufReader::new(stream);
            loop {
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
                    break;
                }
                let path = request_line.split(' ').nth(1).unwrap_or("").to_owned();
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    if line.trim().is_empty() {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap();
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                keep.lock().unwrap().push((path, body));
                let answer = "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
                if reader.get_mut().write_all(answer.as_bytes()).is_err() {
                    break;
                }
            }
        }
    });
    (url, received)
}

#[test]
fn each_call_is_a_span_exported_over_otlp() {
    use opentelemetry_proto::tonic::{
        collector::trace::v1::ExportTraceServiceRequest, common::v1::any_value::Value as Any,
    };
    use prost::Message as _;

    let site = Site::new();
    let (collector, received) = otlp_receiver();
    let mut server = Server(
        site.locara()
            .args([
                "serve",
                "--http",
                "127.0.0.1:0",
                "--stateless",
                "--dir",
                "data",
            ])
            .args(["--otlp-endpoint", &collector])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stderr = BufReader::new(server.0.stderr.take().unwrap());
    let addr = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "ended before listening"
        );
        if let Some(url) = line.trim().strip_prefix("listening on http://") {
            break url.strip_suffix("/mcp").unwrap().to_owned();
        }
    };
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "text.chunk", "arguments": {"text": "a b", "max_chars": 2}}});
    assert_eq!(post(&addr, None, None, &call).status, 200);
    let bad = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "text.chunk", "arguments": {"max_chars": 2}}});
    assert_eq!(post(&addr, None, None, &bad).status, 200);
    // Stopping flushes the spans not exported yet.
    locara_test_artifacts::sigterm(&server.0);
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(server.0.wait().unwrap().success(), "{rest}");

    let received = received.lock().unwrap();
    assert!(!received.is_empty(), "nothing exported: {rest}");
    let mut spans = Vec::new();
    for (path, body) in received.iter() {
        assert_eq!(path, "/v1/traces");
        let request = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        for resource_spans in request.resource_spans {
            let resource = resource_spans.resource.unwrap();
            let service = resource
                .attributes
                .iter()
                .find(|a| a.key == "service.name")
                .and_then(|a| a.value.clone()?.value);
            assert_eq!(service, Some(Any::StringValue("locara".into())));
            for scope in resource_spans.scope_spans {
                spans.extend(scope.spans);
            }
        }
    }
    let attribute = |span: &opentelemetry_proto::tonic::trace::v1::Span, key: &str| {
        span.attributes
            .iter()
            .find(|a| a.key == key)
            .and_then(|a| a.value.clone()?.value)
    };
    let calls: Vec<_> = spans.iter().filter(|s| s.name == "call").collect();
    assert_eq!(calls.len(), 2, "{spans:?}");
    let outcomes: Vec<_> = calls.iter().map(|s| attribute(s, "outcome")).collect();
    assert!(
        outcomes.contains(&Some(Any::StringValue("ok".into()))),
        "{outcomes:?}"
    );
    assert!(
        outcomes.contains(&Some(Any::StringValue("invalid_input".into()))),
        "{outcomes:?}"
    );
    for call in calls {
        assert_eq!(
            attribute(call, "tool"),
            Some(Any::StringValue("text.chunk".into()))
        );
        assert!(call.end_time_unix_nano > call.start_time_unix_nano);
    }
}

#[test]
fn a_changed_auth_file_is_reloaded_without_a_restart() {
    let site = Site::new();
    let old = site.add_key("old", "chunker", &[]);
    let (_server, addr) = site.serve();
    assert_eq!(post(&addr, Some(&old), None, &initialize()).status, 200);

    // Revoke one key and issue another: the running server follows within seconds.
    let removed = site
        .locara()
        .args(["keys", "remove", "old", "--auth", "auth.json"])
        .output()
        .unwrap();
    assert!(removed.status.success(), "{removed:?}");
    let new = site.add_key("new", "chunker", &[]);
    let until = |key: &str, status: u16| {
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        loop {
            let reply = post(&addr, Some(key), None, &initialize());
            if reply.status == status {
                return reply;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "still {reply:?}; the server said:\n{}",
                std::fs::read_to_string(site.path("serve.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let refused = until(&old, 401);
    assert!(refused.body.contains("not known here"), "{refused:?}");
    until(&new, 200);

    // A file binding a key to an app the server did not open at start is not taken: the
    // keys in force stay, and the new key is refused until a restart.
    let other = site.add_key("other", "prober", &[]);
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(post(&addr, Some(&other), None, &initialize()).status, 401);
    assert_eq!(post(&addr, Some(&new), None, &initialize()).status, 200);
}
