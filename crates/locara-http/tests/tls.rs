//! The HTTP client against real TLS on loopback: a hyper server (HTTP/1.1 and HTTP/2) behind a
//! rustls front presenting certificates made by a CA of the test; addresses checked after
//! one resolution; a real CONNECT proxy (tinyproxy).

use std::{
    collections::HashMap,
    convert::Infallible,
    io,
    net::SocketAddr,
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use http_body_util::Full;
use hyper::{Request, Response, body::Bytes, service::service_fn};
use hyper_util::{
    client::proxy::matcher::Matcher,
    rt::{TokioExecutor, TokioIo},
    server::conn::auto,
};
use locara_egress::{Connector, Resolve};
use locara_exec::{Egress, HttpClient, HttpRequest, HttpResponse};
use locara_http::HyperClient;
use locara_test_artifacts::{
    proxy::Tinyproxy,
    tls::{Leaf, TestCa, TlsFront},
};
use url::Url;

/// A plain HTTP server on loopback (HTTP/1.1, and HTTP/2 when the client starts with its
/// preface): `/hello` answers with the protocol version the request came in.
async fn backend() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let service = service_fn(|request: Request<hyper::body::Incoming>| async move {
                    let body = format!("hello over {:?}", request.version());
                    Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(body))))
                });
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    address
}

/// A client without proxies, trusting the system's roots and `ca`.
fn client(ca: Option<&TestCa>) -> HyperClient {
    let connector = Connector::new().with_proxy(None);
    let connector = match ca {
        Some(ca) => connector.with_ca_cert_pem(ca.pem().as_bytes()).unwrap(),
        None => connector,
    };
    HyperClient::new(connector)
}

async fn get(client: &HyperClient, url: &str, egress: Egress) -> Result<HttpResponse, String> {
    let request = HttpRequest::get(Url::parse(url).unwrap(), Vec::new()).with_egress(egress);
    client.send(request, 1 << 20).await
}

fn text(response: &HttpResponse) -> String {
    String::from_utf8_lossy(&response.body).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_the_tests_ca_speaks_http2_when_offered_and_http1_otherwise() {
    let ca = TestCa::new();
    let backend = backend().await;
    let h2 = TlsFront::start(
        ca.server_config(Leaf::Valid, &[b"h2", b"http/1.1"]),
        backend,
    );
    let h1 = TlsFront::start(ca.server_config(Leaf::Valid, &[b"http/1.1"]), backend);
    let client = client(Some(&ca));
    for (front, host, version) in [
        (&h2, "localhost", "HTTP/2.0"),
        (&h2, "127.0.0.1", "HTTP/2.0"),
        (&h1, "localhost", "HTTP/1.1"),
    ] {
        let url = format!("https://{host}:{}/hello", front.port());
        let response = get(&client, &url, Egress::Configured).await.unwrap();
        assert_eq!(response.status, 200, "{url}");
        assert_eq!(text(&response), format!("hello over {version}"), "{url}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_failures_say_what_failed_and_what_to_do() {
    let ca = TestCa::new();
    let backend = backend().await;
    let valid = TlsFront::start(ca.server_config(Leaf::Valid, &[b"http/1.1"]), backend);
    let wrong_name = TlsFront::start(ca.server_config(Leaf::WrongName, &[b"http/1.1"]), backend);
    let expired = TlsFront::start(ca.server_config(Leaf::Expired, &[b"http/1.1"]), backend);
    let url = |front: &TlsFront| format!("https://localhost:{}/hello", front.port());

    // The system's roots alone do not know the test's CA.
    let error = get(&client(None), &url(&valid), Egress::Configured)
        .await
        .unwrap_err();
    assert!(
        error.contains(
            "issued by a certificate authority this host does not trust (unknown issuer)"
        ) && error.contains("`--ca-cert FILE`"),
        "{error}"
    );
    let trusting = client(Some(&ca));
    let error = get(&trusting, &url(&wrong_name), Egress::Configured)
        .await
        .unwrap_err();
    assert!(
        error.contains("the certificate of `localhost` is not valid for the name `localhost` (name mismatch): it is issued for other.test"),
        "{error}"
    );
    let error = get(&trusting, &url(&expired), Egress::Configured)
        .await
        .unwrap_err();
    assert!(
        error.contains("the certificate of `localhost` expired on 2021-01-01T00:00:00Z"),
        "{error}"
    );
    // A server that speaks neither protocol offered ends the handshake with an alert.
    let h3_only = TlsFront::start(ca.server_config(Leaf::Valid, &[b"h3"]), backend);
    let error = get(&trusting, &url(&h3_only), Egress::Configured)
        .await
        .unwrap_err();
    assert!(
        error.contains(
            "the server `localhost` ended the TLS handshake with the alert `NoApplicationProtocol`: it speaks neither HTTP/2 nor HTTP/1.1 over TLS (ALPN)"
        ),
        "{error}"
    );
    // A private CA the app names is trusted on top of the system's roots, from a file too.
    let dir = tempfile::tempdir().unwrap();
    let file = Connector::new()
        .with_proxy(None)
        .with_ca_cert(&ca.write_pem(dir.path()))
        .unwrap();
    let response = get(&HyperClient::new(file), &url(&valid), Egress::Configured)
        .await
        .unwrap();
    assert_eq!(text(&response), "hello over HTTP/1.1");
    let missing = Connector::new().with_ca_cert(Path::new("/nonexistent/ca.pem"));
    assert!(
        missing
            .unwrap_err()
            .to_string()
            .starts_with("the CA file /nonexistent/ca.pem cannot be read")
    );
}

/// A resolver the test controls: fixed answers, and a count of the questions.
#[derive(Debug, Default)]
struct Fixed {
    answers: HashMap<String, Vec<SocketAddr>>,
    asked: AtomicUsize,
}

#[async_trait::async_trait]
impl Resolve for Fixed {
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.answers
            .get(host)
            .map(|all| all.iter().map(|a| SocketAddr::new(a.ip(), port)).collect())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such host"))
    }
}

fn grants(list: &[&str]) -> Egress {
    Egress::Granted(list.iter().map(|g| (*g).to_owned()).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_granted_name_that_resolves_to_loopback_is_refused_unless_the_address_is_granted() {
    let backend = backend().await;
    let resolver = Arc::new(Fixed {
        answers: HashMap::from([(
            "intranet.test".to_owned(),
            vec!["127.0.0.1:0".parse().unwrap()],
        )]),
        ..Fixed::default()
    });
    let client = HyperClient::new(
        Connector::new()
            .with_proxy(None)
            .with_resolver(resolver.clone()),
    );
    let url = format!("http://intranet.test:{}/hello", backend.port());
    for refused in [
        grants(&["intranet.test"]),
        grants(&["*"]),
        grants(&["10.0.0.0/8"]),
    ] {
        let error = get(&client, &url, refused).await.unwrap_err();
        assert_eq!(
            error,
            "`intranet.test` resolves to 127.0.0.1, which is a loopback address; a tool reaches \
             such an address only when the app grants that address or a range holding it (e.g. \
             `--allow-host 127.0.0.1`), not through a host name or `*`"
        );
    }
    for allowed in [
        grants(&["intranet.test", "127.0.0.1"]),
        grants(&["intranet.test", "127.0.0.0/8"]),
        Egress::Configured,
    ] {
        let response = get(&client, &url, allowed).await.unwrap();
        assert_eq!(text(&response), "hello over HTTP/1.1");
    }
    // One question per request: the address connected to is the one checked, so a resolver
    // answering differently the second time (DNS rebinding) is never asked.
    assert_eq!(resolver.asked.load(Ordering::SeqCst), 6);
    // An address literal is judged as itself.
    let literal = format!("http://127.0.0.1:{}/hello", backend.port());
    let error = get(&client, &literal, grants(&["*"])).await.unwrap_err();
    assert!(
        error.starts_with("`127.0.0.1` is a loopback address;"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_proxy_tunnels_to_the_checked_address_and_widens_nothing() {
    let proxy = Tinyproxy::start();
    let ca = TestCa::new();
    let backend = backend().await;
    let front = TlsFront::start(
        ca.server_config(Leaf::Valid, &[b"h2", b"http/1.1"]),
        backend,
    );
    let through = |matcher: Matcher| {
        HyperClient::new(
            Connector::new()
                .with_ca_cert_pem(ca.pem().as_bytes())
                .unwrap()
                .with_proxy(Some(matcher)),
        )
    };
    let client = through(Matcher::builder().all(proxy.url()).build());
    let https = format!("https://localhost:{}/hello", front.port());
    let response = get(&client, &https, grants(&["localhost", "127.0.0.1"]))
        .await
        .unwrap();
    assert_eq!(text(&response), "hello over HTTP/2.0");
    let plain = format!("http://localhost:{}/hello", backend.port());
    let response = get(&client, &plain, grants(&["localhost", "127.0.0.1"]))
        .await
        .unwrap();
    assert_eq!(text(&response), "hello over HTTP/1.1");
    // The tunnel goes to the address that was checked, never to the name.
    assert_eq!(
        proxy.requests(),
        [
            format!("CONNECT 127.0.0.1:{} HTTP/1.1", front.port()),
            format!("CONNECT 127.0.0.1:{} HTTP/1.1", backend.port()),
        ]
    );
    // The proxy widens nothing: a refused address is refused before the proxy is asked.
    let error = get(&client, &https, grants(&["localhost"]))
        .await
        .unwrap_err();
    assert!(error.contains("which is a loopback address"), "{error}");
    assert_eq!(proxy.requests().len(), 2);
    // NO_PROXY: a host it names is reached directly.
    let direct = through(Matcher::builder().all(proxy.url()).no("localhost").build());
    let response = get(&direct, &https, grants(&["localhost", "127.0.0.1"]))
        .await
        .unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(proxy.requests().len(), 2);
    // A proxy that refuses the tunnel says so.
    let refused = format!("http://localhost:{}/hello", proxy.port());
    drop(proxy);
    let error = get(&client, &refused, grants(&["localhost", "127.0.0.1"]))
        .await
        .unwrap_err();
    assert!(error.starts_with("the proxy http://127.0.0.1:"), "{error}");
}
