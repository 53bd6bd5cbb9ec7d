//! The `Origin` check: which origins are the server's own, and a real server on loopback
//! refusing a foreign one with a 403 while serving its own and requests without one.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use locara_facade::{Locara, LocaraConfig};
use locara_test_artifacts::TestHome;
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::TcpStream,
};

use super::is_own_origin;
use crate::{HttpConfig, HttpServer};

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

#[test]
fn only_the_servers_own_origin_is_its_own() {
    let loopback = addr("127.0.0.1:8765");
    for own in [
        "http://127.0.0.1:8765",
        "http://localhost:8765",
        "HTTP://LocalHost:8765",
        "http://[::1]:8765",
    ] {
        assert!(is_own_origin(own, loopback), "{own}");
    }
    for foreign in [
        "http://127.0.0.1:8766",
        "http://localhost",
        "https://127.0.0.1:8765",
        "http://evil.example:8765",
        "http://127.0.0.1.evil.example:8765",
        "http://localhost:8765/",
        "http://localhost:8765/mcp",
        "http://user@localhost:8765",
        "http://192.168.1.5:8765",
        "http://0.0.0.0:8765",
        "null",
        "",
        "localhost:8765",
    ] {
        assert!(!is_own_origin(foreign, loopback), "{foreign}");
    }
    // Port 80 is implied by an origin without a port.
    assert!(is_own_origin("http://localhost", addr("127.0.0.1:80")));

    // A remote bind: its own address too, and loopback; never an unspecified address.
    let remote = addr("192.168.1.5:8765");
    assert!(is_own_origin("http://192.168.1.5:8765", remote));
    assert!(is_own_origin("http://localhost:8765", remote));
    assert!(!is_own_origin("http://192.168.1.6:8765", remote));
    let any = addr("0.0.0.0:8765");
    assert!(!is_own_origin("http://0.0.0.0:8765", any));
    assert!(is_own_origin("http://127.0.0.1:8765", any));
    let v6 = addr("[fd00::5]:8765");
    assert!(is_own_origin("http://[fd00::5]:8765", v6));
    assert!(!is_own_origin("http://[fd00::6]:8765", v6));
}

/// POSTs an `initialize` to `/mcp` with `origin` (if any); returns the status and the body's
/// first bytes.
async fn initialize(addr: SocketAddr, origin: Option<&str>) -> (u16, String) {
    let body = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}"#;
    let origin = origin.map_or_else(String::new, |o| format!("Origin: {o}\r\n"));
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{origin}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    // The head and the start of the body are enough; an accepted session stays open.
    let mut response = Vec::new();
    let mut buf = [0; 4096];
    tokio::time::timeout(Duration::from_secs(10), async {
        while !String::from_utf8_lossy(&response).contains("\r\n\r\n") || response.len() < 64 {
            let n = stream.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            response.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .expect("the server answers within 10 s");
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {text}"));
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

#[tokio::test]
async fn a_foreign_origin_is_refused_with_a_403_saying_why() {
    let home = TestHome::new();
    let locara = Arc::new(Locara::new(&LocaraConfig::new(home.path())).unwrap());
    let server = HttpServer::bind(locara, &HttpConfig::new(addr("127.0.0.1:0")))
        .await
        .unwrap();
    let bound = server.local_addr();
    let running = tokio::spawn(server.run());

    for origin in ["http://evil.example", "http://localhost:1", "null"] {
        let (status, body) = initialize(bound, Some(origin)).await;
        assert_eq!(status, 403, "{origin}: {body}");
        assert!(
            body.contains(&format!("Origin `{origin}` is not this server's own"))
                && body.contains(&format!("http://127.0.0.1:{}", bound.port())),
            "{origin}: {body}"
        );
    }

    // Its own origin, and no origin at all (a client that is not a browser), are served.
    let own = format!("http://localhost:{}", bound.port());
    for origin in [Some(own.as_str()), None] {
        let (status, body) = initialize(bound, origin).await;
        assert_eq!(status, 200, "{origin:?}: {body}");
    }
    running.abort();
}
