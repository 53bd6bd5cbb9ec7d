//! Issue 15's reach, end to end through the facade: `web.fetch`, `llm.chat` (a real model
//! behind TLS) and redirects over https with a CA the test makes, refused without it, with a
//! certificate for another name and with an expired one; every redirect hop's address checked.

use std::{collections::HashMap, io, net::SocketAddr, sync::Arc};

use locara_egress::{Connector, Resolve};
use locara_facade::{
    BackendKind, Grants, LlmEndpoint, Locara, LocaraConfig, RunRequest, RunResponse,
};
use locara_manifest::NetAccess;
use locara_test_artifacts::{
    TestHome,
    tls::{Leaf, TestCa, TlsFront},
};
use serde_json::json;

use crate::host_services::{LoopbackServer, failure, llm};

/// The app's configuration: network `hosts`, and its language model at `llm` when given.
fn config(home: &TestHome, hosts: &[&str], llm: Option<&str>) -> LocaraConfig {
    let mut net = NetAccess::new();
    for host in hosts {
        net = net.with_host(*host);
    }
    let mut grants = Grants::new().with_net(net);
    let mut config = LocaraConfig::new(home.path()).with_engine(BackendKind::Wasmtime);
    if let Some(url) = llm {
        grants = grants.with_service("llm.chat");
        config = config.with_llm(LlmEndpoint::new(url, "smollm2"));
    }
    config.with_grants(grants)
}

async fn fetch(locara: &Locara, url: &str) -> RunResponse {
    locara
        .run(RunRequest::new("web.fetch", json!({"url": url})))
        .await
        .unwrap()
}

fn front(ca: &TestCa, leaf: Leaf, backend: u16) -> TlsFront {
    TlsFront::start(
        // The loopback server speaks HTTP/1.1 only (HTTP/2 is tested in locara-http).
        ca.server_config(leaf, &[b"http/1.1"]),
        SocketAddr::from(([127, 0, 0, 1], backend)),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_fetch_speaks_https_with_the_apps_ca_and_says_why_it_cannot_without() {
    let server = LoopbackServer::start().await;
    let ca = TestCa::new();
    let home = TestHome::new();
    let ca_file = ca.write_pem(home.path());
    let valid = front(&ca, Leaf::Valid, server.port);
    let hosts = ["localhost", "127.0.0.1"];
    let trusting =
        Locara::new(&config(&home, &hosts, None).with_ca_cert(&ca_file).unwrap()).unwrap();
    let url = format!("https://localhost:{}/page", valid.port());
    let response = fetch(&trusting, &url).await;
    assert!(response.ok, "{:?}", response.error);
    let output = response.output.unwrap();
    assert_eq!(output["status"], 200);
    assert_eq!(output["text"], "héllo from loopback");
    // Without the CA, with a certificate for another name, expired: refused, saying why.
    let untrusting = Locara::new(&config(&home, &hosts, None)).unwrap();
    let message = failure(&fetch(&untrusting, &url).await);
    assert!(
        message.contains("unknown issuer") && message.contains("--ca-cert FILE"),
        "{message}"
    );
    let wrong_name = front(&ca, Leaf::WrongName, server.port);
    let message = failure(
        &fetch(
            &trusting,
            &format!("https://localhost:{}/page", wrong_name.port()),
        )
        .await,
    );
    assert!(
        message.contains("(name mismatch): it is issued for other.test"),
        "{message}"
    );
    let expired = front(&ca, Leaf::Expired, server.port);
    let message = failure(
        &fetch(
            &trusting,
            &format!("https://localhost:{}/page", expired.port()),
        )
        .await,
    );
    assert!(message.contains("expired on 2021-01-01"), "{message}");
    // The three refusals never reached the server behind the TLS front.
    assert_eq!(server.seen().len(), 1, "{:?}", server.seen());
    // A CA file that holds no certificate is refused when the app is configured.
    let bad = home.path().join("not-a-ca.pem");
    std::fs::write(&bad, "hello").unwrap();
    let error = config(&home, &hosts, None).with_ca_cert(&bad).unwrap_err();
    assert!(
        error.to_string().contains("holds no certificate"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_redirect_to_a_host_the_app_did_not_grant_is_refused() {
    let server = LoopbackServer::start().await;
    let ca = TestCa::new();
    let home = TestHome::new();
    let valid = front(&ca, Leaf::Valid, server.port);
    let locara = Locara::new(
        &config(&home, &["127.0.0.1"], None)
            .with_ca_cert(ca.write_pem(home.path()))
            .unwrap(),
    )
    .unwrap();
    // https://127.0.0.1 → http://localhost: another host, and another scheme.
    let message =
        failure(&fetch(&locara, &format!("https://127.0.0.1:{}/away", valid.port())).await);
    assert!(
        message.contains(&format!(
            "redirected to `http://localhost:{}/page` is on host `localhost`, which is not among the hosts",
            server.port
        )),
        "{message}"
    );
    // The redirect was answered over TLS; the refused hop never reached the server.
    assert_eq!(server.seen(), [format!("127.0.0.1:{} /away", valid.port())]);
    // A redirect within the grant, from https to https, is followed.
    let response = fetch(&locara, &format!("https://127.0.0.1:{}/hop", valid.port())).await;
    assert!(response.ok, "{:?}", response.error);
    assert_eq!(response.output.unwrap()["text"], "héllo from loopback");
}

/// Names the test resolves itself: `public.test` to the loopback server's 127.0.0.1 (which
/// the app grants), `intranet.test` to 127.0.0.2 (which it does not).
#[derive(Debug)]
struct TestNames(HashMap<&'static str, [u8; 4]>);

#[async_trait::async_trait]
impl Resolve for TestNames {
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        let address = self
            .0
            .get(host)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such host"))?;
        Ok(vec![SocketAddr::from((*address, port))])
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_redirect_hop_is_checked_after_its_own_resolution() {
    let server = LoopbackServer::start().await;
    let home = TestHome::new();
    let names = TestNames(HashMap::from([
        ("public.test", [127, 0, 0, 1]),
        ("intranet.test", [127, 0, 0, 2]),
    ]));
    let client = locara_http::HyperClient::new(
        Connector::new()
            .with_proxy(None)
            .with_resolver(Arc::new(names)),
    );
    let hosts = ["public.test", "intranet.test", "127.0.0.1"];
    let locara =
        Locara::new(&config(&home, &hosts, None).with_http_client(Arc::new(client))).unwrap();
    let first = format!("http://public.test:{}/page", server.port);
    let response = fetch(&locara, &first).await;
    assert!(response.ok, "{:?}", response.error);
    // Both names are granted, but the second hop's address is not.
    let hop = format!("http://public.test:{}/intranet", server.port);
    let message = failure(&fetch(&locara, &hop).await);
    assert!(
        message.contains(
            "`intranet.test` resolves to 127.0.0.2, which is a loopback address; a tool reaches such an address only when the app grants that address"
        ),
        "{message}"
    );
    assert_eq!(
        server.seen(),
        [
            format!("public.test:{} /page", server.port),
            format!("public.test:{} /intranet", server.port),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_apps_language_model_is_reached_over_https() {
    let plain = llm();
    let port: u16 = plain
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/v1")
        .parse()
        .unwrap();
    let ca = TestCa::new();
    let home = TestHome::new();
    let tls = TlsFront::start(
        ca.server_config(Leaf::Valid, &[b"http/1.1"]),
        SocketAddr::from(([127, 0, 0, 1], port)),
    );
    let url = format!("https://localhost:{}/v1", tls.port());
    let summarize = RunRequest::new(
        "text.summarize",
        json!({"text": "The beaver builds dams of branches and mud across streams."}),
    );
    let trusting = Locara::new(
        &config(&home, &[], Some(&url))
            .with_ca_cert(ca.write_pem(home.path()))
            .unwrap(),
    )
    .unwrap();
    let response = trusting.run(summarize.clone()).await.unwrap();
    assert!(response.ok, "{:?}", response.error);
    let summary = response.output.unwrap()["summary"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!summary.trim().is_empty());
    let untrusting = Locara::new(&config(&home, &[], Some(&url))).unwrap();
    let message = failure(&untrusting.run(summarize).await.unwrap());
    assert!(message.contains("unknown issuer"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_apps_grant_lets_a_tool_reach_an_address_that_is_not_public() {
    let server = LoopbackServer::start().await;
    let home = TestHome::new();
    // A tool that asks for 127.0.0.1 itself (the probe's `service` op calls web.fetch).
    home.publish_probe_with("test.loopback", "read_only", |manifest| {
        manifest["wasi_imports"]["net"] = json!({"allowed_hosts": ["127.0.0.1"]});
    });
    let call = RunRequest::new(
        "test.loopback",
        json!({
            "op": "service",
            "service": "web.fetch",
            "request": json!({"url": server.url("127.0.0.1", "/page")}).to_string(),
        }),
    );
    // An app granting `*` admits the tool (the composition rule), but `*` names no address: the
    // tool's own `127.0.0.1` does not make loopback reachable.
    let any = Locara::new(&config(&home, &["*"], None)).unwrap();
    let output = any.run(call.clone()).await.unwrap().output.unwrap();
    let answer = output["answer"].as_str().unwrap();
    assert!(
        answer.contains("`127.0.0.1` is a loopback address; a tool reaches such an address only when the app grants that address"),
        "{output}"
    );
    assert!(server.seen().is_empty(), "{:?}", server.seen());
    // The app naming the address (or a range holding it) does.
    for grant in ["127.0.0.1", "127.0.0.0/8"] {
        let named = Locara::new(&config(&home, &[grant], None)).unwrap();
        let output = named.run(call.clone()).await.unwrap().output.unwrap();
        assert_eq!(output["errno"], 0, "{grant}: {output}");
        assert!(
            output["answer"]
                .as_str()
                .unwrap()
                .contains("\"status\":200"),
            "{output}"
        );
    }
}
