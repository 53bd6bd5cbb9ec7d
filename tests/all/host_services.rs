//! Host services for wasm tools, on both engines: `web.fetch` against an HTTP server on
//! loopback (allowed and denied hosts, redirects, the size cap), and `text.summarize`,
//! `text.translate` and `text.classify` against a real language model (SmolLM2-135M, served by
//! llama.cpp's OpenAI-compatible server from `.ci/test-deps`) on loopback.
//!
//! The loopback server is reachable as `127.0.0.1` and as `localhost`; the app allows only the
//! first, so `localhost` is a denied host that would otherwise answer, and the server's log
//! shows a denied request never left the host.

use std::sync::{Arc, Mutex};

use locara_facade::{
    AppManifest, BackendKind, Grants, LlmEndpoint, Locara, LocaraConfig, RunRequest, RunResponse,
};
use locara_manifest::NetAccess;
use locara_test_artifacts::TestHome;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const ENGINES: [BackendKind; 2] = [BackendKind::Wasmtime, BackendKind::Wasmi];

/// The requests a [`LoopbackServer`] saw, as `Host path`.
type Log = Arc<Mutex<Vec<String>>>;

/// An HTTP/1.1 server on `127.0.0.1:<port>`, one response per connection.
pub(crate) struct LoopbackServer {
    pub(crate) port: u16,
    log: Log,
}

impl LoopbackServer {
    pub(crate) async fn start() -> LoopbackServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Log::default();
        let seen = log.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let path = head.split(' ').nth(1).unwrap_or("/").to_owned();
                    let host = head
                        .lines()
                        .find_map(|l| l.strip_prefix("host: ").or(l.strip_prefix("Host: ")))
                        .unwrap_or("")
                        .to_owned();
                    seen.lock().unwrap().push(format!("{host} {path}"));
                    let (status, headers, body): (&str, String, Vec<u8>) = match path.as_str() {
                        "/page" => (
                            "200 OK",
                            "content-type: text/plain; charset=utf-8\r\n".to_owned(),
                            "héllo from loopback".as_bytes().to_vec(),
                        ),
                        "/bytes" => (
                            "200 OK",
                            "content-type: application/octet-stream\r\n".to_owned(),
                            vec![0xff, 0x00, 0x80, 0x7f],
                        ),
                        "/big" => ("200 OK", String::new(), vec![b'x'; 200_000]),
                        "/hop" => ("302 Found", "location: /page\r\n".to_owned(), Vec::new()),
                        "/away" => (
                            "302 Found",
                            format!("location: http://localhost:{port}/page\r\n"),
                            Vec::new(),
                        ),
                        "/loop" => ("302 Found", "location: /loop\r\n".to_owned(), Vec::new()),
                        // To a name the egress tests resolve to an address the app did not grant.
                        "/intranet" => (
                            "302 Found",
                            format!("location: http://intranet.test:{port}/page\r\n"),
                            Vec::new(),
                        ),
                        _ => ("404 Not Found", String::new(), b"no such page".to_vec()),
                    };
                    let response = format!(
                        "HTTP/1.1 {status}\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                    let _ = stream.write_all(&body).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        LoopbackServer { port, log }
    }

    pub(crate) fn url(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.port)
    }

    pub(crate) fn seen(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

/// A runtime whose app allows `hosts` (and `llm.chat` with `llm`), on `engine`.
pub(crate) fn locara(
    home: &TestHome,
    engine: BackendKind,
    hosts: &[&str],
    llm: Option<&str>,
) -> Locara {
    let mut net = NetAccess::new();
    for host in hosts {
        net = net.with_host(*host);
    }
    let mut grants = Grants::new().with_net(net);
    let mut config = LocaraConfig::new(home.path()).with_engine(engine);
    if let Some(url) = llm {
        grants = grants.with_service("llm.chat");
        config = config.with_llm(LlmEndpoint::new(url, "smollm2"));
    }
    Locara::new(&config.with_grants(grants)).unwrap()
}

async fn fetch(locara: &Locara, arguments: Value) -> RunResponse {
    locara
        .run(RunRequest::new("web.fetch", arguments))
        .await
        .unwrap()
}

pub(crate) fn failure(response: &RunResponse) -> String {
    assert!(!response.ok, "{:?}", response.output);
    let error = response.error.as_ref().unwrap();
    assert_eq!(error.code, "tool_error", "{error:?}");
    error.message.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_fetch_reaches_only_allowed_hosts_on_both_engines() {
    let server = LoopbackServer::start().await;
    let home = TestHome::new();
    for engine in ENGINES {
        let locara = locara(&home, engine, &["127.0.0.1"], None);
        let ok = fetch(&locara, json!({"url": server.url("127.0.0.1", "/page")})).await;
        assert!(ok.ok, "{engine:?}: {:?}", ok.error);
        let output = ok.output.unwrap();
        assert_eq!(output["status"], 200);
        assert_eq!(output["text"], "héllo from loopback");
        assert_eq!(output["bytes"], 20);
        assert_eq!(output["truncated"], false);
        assert_eq!(output["content_type"], "text/plain; charset=utf-8");

        // A redirect to an allowed host is followed, and reported.
        let hop = fetch(&locara, json!({"url": server.url("127.0.0.1", "/hop")})).await;
        let output = hop.output.expect("followed");
        assert_eq!(output["url"], server.url("127.0.0.1", "/page"));
        assert_eq!(
            output["redirects"],
            json!([server.url("127.0.0.1", "/page")])
        );
        assert_eq!(output["text"], "héllo from loopback");

        // Binary bodies come back as base64; long ones are cut at max_bytes.
        let bytes = fetch(&locara, json!({"url": server.url("127.0.0.1", "/bytes")})).await;
        assert_eq!(bytes.output.unwrap()["base64"], "/wCAfw==");
        let big = fetch(
            &locara,
            json!({"url": server.url("127.0.0.1", "/big"), "max_bytes": 1000}),
        )
        .await;
        let output = big.output.unwrap();
        assert_eq!(
            (output["bytes"].clone(), output["truncated"].clone()),
            (json!(1000), json!(true))
        );

        // A host outside the allow-list is refused before any connection is made.
        let before = server.seen().len();
        let denied = fetch(&locara, json!({"url": server.url("localhost", "/page")})).await;
        let message = failure(&denied);
        assert!(
            message.contains("host `localhost`") && message.contains("127.0.0.1"),
            "{engine:?}: {message}"
        );
        assert_eq!(
            server.seen().len(),
            before,
            "the denied request reached the server"
        );

        // So is a redirect to one: the first request is made, the redirect is not followed.
        let away = fetch(&locara, json!({"url": server.url("127.0.0.1", "/away")})).await;
        let message = failure(&away);
        assert!(
            message.contains("redirected to") && message.contains("host `localhost`"),
            "{engine:?}: {message}"
        );
        let seen = server.seen();
        assert_eq!(
            seen.last().unwrap(),
            &format!("127.0.0.1:{} /away", server.port)
        );
        assert!(!seen.iter().any(|s| s.starts_with("localhost")), "{seen:?}");

        // Redirect loops end.
        let looping = fetch(&locara, json!({"url": server.url("127.0.0.1", "/loop")})).await;
        assert!(failure(&looping).contains("more than 5 times"));

        // Only http and https (tests/all/egress.rs fetches over https).
        let ftp = fetch(&locara, json!({"url": "ftp://127.0.0.1/"})).await;
        let message = failure(&ftp);
        assert!(
            message.contains("is not an http or https URL"),
            "{engine:?}: {message}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_needs_both_the_tool_and_the_app() {
    let server = LoopbackServer::start().await;
    let home = TestHome::new();
    // An app that allows no host: web.fetch (which asks for "any host the app allows") is
    // refused before it runs.
    let closed = locara(&home, BackendKind::Wasmtime, &[], None);
    let error = closed
        .run(RunRequest::new(
            "web.fetch",
            json!({"url": server.url("127.0.0.1", "/page")}),
        ))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "capability_denied", "{error}");
    assert!(
        error.to_string().contains("allows no network hosts"),
        "{error}"
    );

    // A tool that declares no network gets none, even from an app that allows the host.
    home.publish_probe_as("test.offline", "read_only");
    for engine in ENGINES {
        let open = locara(&home, engine, &["127.0.0.1"], None);
        let request = json!({"url": server.url("127.0.0.1", "/page")}).to_string();
        let response = open
            .run(RunRequest::new(
                "test.offline",
                json!({"op": "service", "service": "web.fetch", "request": request}),
            ))
            .await
            .unwrap();
        let output = response.output.unwrap();
        assert_eq!(output["errno"], 76, "{engine:?}: {output}");
        assert!(
            output["answer"]
                .as_str()
                .unwrap()
                .contains("no host services"),
            "{output}"
        );
    }
    assert!(server.seen().is_empty(), "{:?}", server.seen());
}

/// SmolLM2 on llama.cpp's server, started once for this test process: its API base.
pub(crate) fn llm() -> &'static str {
    locara_test_artifacts::llm::smollm2()
}

async fn text_tool(locara: &Locara, id: &str, arguments: Value) -> Value {
    let response = locara.run(RunRequest::new(id, arguments)).await.unwrap();
    assert!(response.ok, "{id}: {:?}", response.error);
    response.output.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_tools_ask_the_apps_language_model_on_both_engines() {
    let url = llm();
    let home = TestHome::new();
    let text = "The city council voted on Tuesday to expand the bike lane network by forty \
                kilometres over the next three years. Supporters say it will cut traffic and \
                pollution. Some shop owners worry about losing parking spaces.";
    for engine in ENGINES {
        let locara = locara(&home, engine, &[], Some(url));
        let summary = text_tool(
            &locara,
            "text.summarize",
            json!({"text": text, "max_words": 30}),
        )
        .await;
        let summary_text = summary["summary"].as_str().unwrap();
        assert!(
            !summary_text.is_empty() && summary_text != text,
            "{summary}"
        );
        assert!(
            summary["model"].as_str().unwrap().contains("SmolLM2"),
            "{summary}"
        );

        let translated = text_tool(
            &locara,
            "text.translate",
            json!({"text": "Good morning.", "target_language": "French"}),
        )
        .await;
        assert!(
            !translated["translation"].as_str().unwrap().is_empty(),
            "{translated}"
        );

        // Constrained to the labels: always one of them, and at temperature 0 the right one
        // for a text this plain.
        let labels = json!(["positive", "negative"]);
        let loved = text_tool(
            &locara,
            "text.classify",
            json!({"text": "I absolutely loved this film, it was wonderful.", "labels": labels}),
        )
        .await;
        assert_eq!(loved["label"], "positive", "{engine:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_language_model_needs_a_grant_and_an_endpoint() {
    let home = TestHome::new();
    let arguments = json!({"text": "Hello.", "target_language": "French"});
    // Not granted: refused before the tool runs.
    let ungranted = locara(&home, BackendKind::Wasmtime, &[], None);
    let error = ungranted
        .run(RunRequest::new("text.translate", arguments.clone()))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "capability_denied", "{error}");
    assert!(error.to_string().contains("llm.chat"), "{error}");

    // Granted by an app, but the host configured no model: the tool says so.
    let app = AppManifest::from_json(
        r#"{"schema_version": 1, "name": "no-model", "tools": ["text.translate@0.1.0"],
            "grants": {"services": ["llm.chat"]}}"#,
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = LocaraConfig::new(home.path()).with_app(app, dir.path());
    let response = Locara::new(&config)
        .unwrap()
        .run(RunRequest::new("text.translate", arguments))
        .await
        .unwrap();
    assert!(failure(&response).contains("configured no language model"));
}
