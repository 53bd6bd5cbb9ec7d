//! An external MCP server as a Locara backend: a server on the official Python SDK, started as
//! a process, whose tools are searched, described, run, chained and approved like any other,
//! with their schemas checked and their output capped by Locara's pipeline.

use std::path::Path;

use locara_facade::{
    BackendKind, ChainRequest, Grants, Locara, LocaraConfig, RunRequest, SafetyTier,
};
use locara_mcp::McpBackend;
use locara_test_artifacts::{
    TestHome,
    tls::{Leaf, TestCa, TlsFront},
};
use serde_json::json;

use crate::mcp_server::python;

fn server_script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/server.py")
}

async fn locara(home: &TestHome) -> Locara {
    let mut command = tokio::process::Command::new(python());
    command.arg(server_script());
    let backend = McpBackend::connect_stdio("py", command).await.unwrap();
    with_backend(home, &backend).await
}

async fn with_backend(home: &TestHome, backend: &McpBackend) -> Locara {
    let mut config = LocaraConfig::new(home.path())
        .with_engine(BackendKind::Wasmtime)
        .with_grants(Grants::new().with_max_safety_tier(SafetyTier::Privileged))
        .with_output_cap_bytes(4096);
    for tool in backend.host_tools().await.unwrap() {
        config = config.with_host_tool(tool);
    }
    Locara::new(&config).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_servers_tools_are_searched_described_and_run() {
    let home = TestHome::new();
    let locara = locara(&home).await;
    assert_eq!(locara.search_tools("add two integers", 1)[0].id, "py.add");
    let add = locara.describe("py.add").unwrap();
    assert_eq!(add.backend, "in_process");
    assert_eq!(add.summary.safety_tier, "read_only");
    assert_eq!(add.input_schema["required"], json!(["a", "b"]));
    assert!(
        add.summary.description.contains("Add two integers"),
        "{add:?}"
    );
    assert_eq!(
        locara.describe("py.wipe").unwrap().summary.safety_tier,
        "privileged"
    );

    // Structured output, checked against the server's output schema.
    let sum = locara
        .run(RunRequest::new("py.add", json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert!(sum.ok, "{:?}", sum.error);
    assert_eq!(sum.output, Some(json!({"result": 5})));

    // Arguments that break the server's input schema never reach it.
    let error = locara
        .run(RunRequest::new("py.add", json!({"a": "two", "b": 3})))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "invalid_input");
    assert_eq!(error.report().violations[0].pointer, "/a");

    // Plain text output comes back as text and content blocks, capped by Locara.
    let loud = locara
        .run(RunRequest::new(
            "py.shout",
            json!({"text": "hey", "times": 2}),
        ))
        .await
        .unwrap();
    assert_eq!(loud.output.as_ref().unwrap()["text"], "HEYHEY");
    let long = locara
        .run(RunRequest::new(
            "py.shout",
            json!({"text": "ab", "times": 20000}),
        ))
        .await
        .unwrap();
    assert!(long.ok, "{:?}", long.error);
    let cut = long.truncated.expect("capped");
    assert!(
        cut.original_bytes > 40_000 && cut.returned_bytes <= 4096,
        "{cut:?}"
    );

    // A tool error on the server is a tool error here, with its message.
    let failed = locara
        .run(RunRequest::new("py.fail", json!({"reason": "no"})))
        .await
        .unwrap();
    let report = failed.error.unwrap();
    assert_eq!(report.code, "tool_error");
    assert!(report.message.contains("refused: no"), "{report:?}");

    // A tool without annotations is destructive by MCP's default: it needs approval.
    let error = locara
        .run(RunRequest::new("py.wipe", json!({"target": "/"})))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "approval_denied");

    // And a chain passes one result on to the next call.
    let chain = locara
        .run_chain(ChainRequest::new(vec![
            RunRequest::new("py.add", json!({"a": 2, "b": 3})),
            RunRequest::new(
                "py.add",
                json!({"a": {"$ref": "steps.0.output.result"}, "b": 10}),
            ),
        ]))
        .await;
    assert!(chain.ok, "{chain:?}");
    assert_eq!(chain.steps[1].output, Some(json!({"result": 15})));
}

/// The same server over streamable HTTP on loopback: a process the test starts, reached by URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_over_streamable_http_is_a_backend_too() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = tokio::process::Command::new(python())
        .arg(server_script())
        .args(["--http", &port.to_string()])
        .kill_on_drop(true)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Ready when it accepts connections (uvicorn starts in about a second).
    let started = std::time::Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            started.elapsed().as_secs() < 30,
            "the MCP server did not start"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let url = format!("http://127.0.0.1:{port}/mcp");
    let backend = McpBackend::connect_http("web", &url).await.unwrap();
    let home = TestHome::new();
    let locara = with_backend(&home, &backend).await;
    assert_eq!(
        locara.describe("web.add").unwrap().summary.safety_tier,
        "read_only"
    );
    let sum = locara
        .run(RunRequest::new("web.add", json!({"a": 20, "b": 22})))
        .await
        .unwrap();
    assert_eq!(sum.output, Some(json!({"result": 42})), "{:?}", sum.error);
    let failed = locara
        .run(RunRequest::new("web.fail", json!({"reason": "no"})))
        .await
        .unwrap();
    let error = failed.error.unwrap();
    assert_eq!(error.code, "tool_error");
    assert!(error.message.contains("refused: no"), "{error:?}");
    let error = locara
        .run(RunRequest::new("web.add", json!({"a": "x", "b": 1})))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "invalid_input");

    // The same server behind TLS: reached with the app's CA, refused without it.
    let ca = TestCa::new();
    let front = TlsFront::start(
        ca.server_config(Leaf::Valid, &[b"http/1.1"]),
        std::net::SocketAddr::from(([127, 0, 0, 1], port)),
    );
    let https = format!("https://127.0.0.1:{}/mcp", front.port());
    let connector = locara_egress::Connector::new()
        .with_ca_cert_pem(ca.pem().as_bytes())
        .unwrap();
    let secure = McpBackend::connect_http_with("web", &https, &connector)
        .await
        .unwrap();
    let locara = with_backend(&home, &secure).await;
    let sum = locara
        .run(RunRequest::new("web.add", json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert_eq!(sum.output, Some(json!({"result": 5})), "{:?}", sum.error);
    let untrusted = McpBackend::connect_http("web", &https).await.unwrap_err();
    assert!(
        untrusted.to_string().contains("unknown issuer"),
        "{untrusted}"
    );
    // Neither http nor https: refused before anything is sent.
    let ftp = McpBackend::connect_http("web", "ftp://127.0.0.1:1/mcp")
        .await
        .unwrap_err();
    assert!(
        ftp.to_string().contains("is not an http or https URL"),
        "{ftp}"
    );
    server.kill().await.unwrap();
}
