//! HTTP providers against a real HTTP server on loopback, started by the test: the call goes
//! through Locara's pipeline (grants, schemas, cap, limits) and over the wire to the endpoint.

use std::{convert::Infallible, net::SocketAddr, sync::Arc};

use http_body_util::{BodyExt as _, Full};
use hyper::{Request, Response, StatusCode, body::Bytes, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use locara_facade::{Grants, Locara, LocaraConfig, RunRequest, SafetyTier};
use locara_http::HyperClient;
use locara_manifest::NetAccess;
use locara_test_artifacts::{
    TestHome,
    tls::{Leaf, TestCa, TlsFront},
};
use serde_json::{Value, json};

/// The provider: `/add` sums `a` and `b`, `/fail` is a 400 with a message, `/moved` a redirect,
/// `/big` a body far over any output limit, `/text` a body that is not JSON.
async fn endpoint(
    request: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = request.uri().path().to_owned();
    let body = request.into_body().collect().await.unwrap().to_bytes();
    let arguments: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (status, body) = match path.as_str() {
        "/add" => (
            StatusCode::OK,
            json!({"sum": arguments["a"].as_i64().unwrap() + arguments["b"].as_i64().unwrap()})
                .to_string(),
        ),
        "/fail" => (StatusCode::BAD_REQUEST, "b must not be negative".to_owned()),
        "/moved" => {
            let response = Response::builder()
                .status(StatusCode::FOUND)
                .header("location", "http://evil.example/add")
                .body(Full::new(Bytes::new()))
                .unwrap();
            return Ok(response);
        }
        "/big" => (
            StatusCode::OK,
            format!("{{\"sum\": 1, \"pad\": \"{}\"}}", "x".repeat(1 << 20)),
        ),
        "/text" => (StatusCode::OK, "sum is 3".to_owned()),
        _ => (StatusCode::NOT_FOUND, String::new()),
    };
    Ok(Response::builder()
        .status(status)
        .body(Full::new(Bytes::from(body)))
        .unwrap())
}

async fn serve() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::spawn(
                http1::Builder::new().serve_connection(TokioIo::new(stream), service_fn(endpoint)),
            );
        }
    });
    addr
}

fn manifest(id: &str, url: &str) -> String {
    json!({
        "schema_version": 1,
        "id": id,
        "version": "1.0.0",
        "display_name": "Adder",
        "description": "Add two integers on a remote service.",
        "license": "MIT",
        "safety_tier": "read_only",
        "limits": {"wall_time_ms": 5000, "output_bytes": 65536},
        "input_schema": {
            "type": "object",
            "required": ["a", "b"],
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "additionalProperties": false
        },
        "output_schema": {"type": "object", "required": ["sum"], "properties": {"sum": {"type": "integer"}}},
        "endpoint": {"url": url}
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_runs_through_the_pipeline_and_over_http() {
    let addr = serve().await;
    let home = TestHome::new();
    let url = |path: &str| format!("http://127.0.0.1:{}{path}", addr.port());
    let mut config = LocaraConfig::new(home.path()).with_grants(
        Grants::new()
            .with_max_safety_tier(SafetyTier::ReadOnly)
            .with_net(NetAccess::new().with_host("127.0.0.1")),
    );
    for (id, path) in [
        ("remote.add", "/add"),
        ("remote.fail", "/fail"),
        ("remote.moved", "/moved"),
        ("remote.big", "/big"),
        ("remote.text", "/text"),
    ] {
        config = config.with_host_tool(locara_http::provider(&manifest(id, &url(path))).unwrap());
    }
    let locara = Locara::new(&config).unwrap();
    let run = |id: &str, arguments: Value| locara.run(RunRequest::new(id, arguments));

    let description = locara.describe("remote.add").unwrap();
    assert_eq!(description.backend, "in_process");
    assert_eq!(
        description.capabilities["wasi_imports"]["net"]["allowed_hosts"],
        json!(["127.0.0.1"])
    );
    let sum = run("remote.add", json!({"a": 2, "b": 40})).await.unwrap();
    assert!(sum.ok, "{:?}", sum.error);
    assert_eq!(sum.output, Some(json!({"sum": 42})));

    // Invalid arguments never leave the host.
    let error = run("remote.add", json!({"a": 2})).await.unwrap_err();
    assert_eq!(error.code(), "invalid_input");

    let failed = run("remote.fail", json!({"a": 1, "b": -1})).await.unwrap();
    let report = failed.error.unwrap();
    assert_eq!(report.code, "tool_error");
    assert!(
        report.message.contains("400 Bad Request")
            && report.message.contains("b must not be negative"),
        "{report:?}"
    );

    let moved = run("remote.moved", json!({"a": 1, "b": 1})).await.unwrap();
    let report = moved.error.unwrap();
    assert!(
        report.message.contains("do not follow redirects")
            && report.message.contains("http://evil.example/add"),
        "{report:?}"
    );

    let big = run("remote.big", json!({"a": 1, "b": 1})).await.unwrap();
    assert!(
        big.error
            .unwrap()
            .message
            .contains("larger than the tool's output limit (65536 bytes)")
    );

    let text = run("remote.text", json!({"a": 1, "b": 1})).await.unwrap();
    assert!(text.error.unwrap().message.contains("not JSON"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_host_the_app_did_not_grant_is_refused() {
    let addr = serve().await;
    let home = TestHome::new();
    let tool = locara_http::provider(&manifest(
        "remote.add",
        &format!("http://127.0.0.1:{}/add", addr.port()),
    ))
    .unwrap();
    let locara = Locara::new(
        &LocaraConfig::new(home.path())
            .with_grants(Grants::new().with_net(NetAccess::new().with_host("api.example.com")))
            .with_host_tool(tool),
    )
    .unwrap();
    let error = locara
        .run(RunRequest::new("remote.add", json!({"a": 1, "b": 2})))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "capability_denied");
    assert!(
        error.to_string().contains("network access to 127.0.0.1"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_over_https_trusts_the_apps_ca() {
    let addr = serve().await;
    let ca = TestCa::new();
    let front = TlsFront::start(ca.server_config(Leaf::Valid, &[b"http/1.1"]), addr);
    let url = format!("https://localhost:{}/add", front.port());
    let home = TestHome::new();
    let client = HyperClient::new(
        locara_egress::Connector::new()
            .with_ca_cert_pem(ca.pem().as_bytes())
            .unwrap(),
    );
    let grants = Grants::new()
        .with_max_safety_tier(SafetyTier::ReadOnly)
        .with_net(NetAccess::new().with_host("localhost"));
    let locara = Locara::new(
        &LocaraConfig::new(home.path())
            .with_grants(grants.clone())
            .with_host_tool(
                locara_http::provider_with(&manifest("remote.add", &url), Arc::new(client))
                    .unwrap(),
            )
            .with_host_tool(locara_http::provider(&manifest("plain.add", &url)).unwrap()),
    )
    .unwrap();
    let sum = locara
        .run(RunRequest::new("remote.add", json!({"a": 40, "b": 2})))
        .await
        .unwrap();
    assert_eq!(sum.output, Some(json!({"sum": 42})), "{:?}", sum.error);
    // The same endpoint with the system's roots only: refused, saying why.
    let untrusted = locara
        .run(RunRequest::new("plain.add", json!({"a": 40, "b": 2})))
        .await
        .unwrap();
    let report = untrusted.error.unwrap();
    assert!(report.message.contains("unknown issuer"), "{report:?}");
}

#[test]
fn bad_provider_manifests_are_refused_with_the_reason() {
    let ftp =
        locara_http::provider(&manifest("remote.add", "ftp://api.example.com/add")).unwrap_err();
    assert!(
        ftp.to_string().contains("the scheme must be http or https"),
        "{ftp}"
    );
    let mut no_endpoint: Value =
        serde_json::from_str(&manifest("remote.add", "http://x/")).unwrap();
    no_endpoint.as_object_mut().unwrap().remove("endpoint");
    let error = locara_http::provider(&no_endpoint.to_string()).unwrap_err();
    assert!(error.to_string().contains("no `endpoint`"), "{error}");
    let error = locara_http::provider(&manifest("Remote Add", "http://x/")).unwrap_err();
    assert!(
        error.to_string().contains("invalid provider manifest"),
        "{error}"
    );
}

#[test]
fn an_ipv6_endpoint_grants_the_address_without_brackets() {
    let tool = locara_http::provider(&manifest("remote.add", "http://[::1]:8080/add"))
        .expect("an IPv6 loopback endpoint is a valid provider");
    assert_eq!(
        tool.manifest().wasi_imports.net.allowed_hosts,
        ["::1".to_owned()]
    );
}
