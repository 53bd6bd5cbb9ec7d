//! `locara run web.fetch` over https: `--ca-cert` trusts the app's CA on top of the system's
//! roots, and HTTPS_PROXY / NO_PROXY are honoured (a real CONNECT proxy, tinyproxy, on
//! loopback) without widening what `--allow-host` grants.

use std::{
    io::{Read as _, Write as _},
    net::{SocketAddr, TcpListener},
};

use locara_test_artifacts::{
    proxy::Tinyproxy,
    tls::{Leaf, TestCa, TlsFront},
};

mod support;
use support::{Cli, Run, s};

/// A plain HTTP/1.1 server on loopback answering every request with `hello over TLS`, on a
/// thread; it lives as long as the test process.
fn backend() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let body = "hello over TLS";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    address
}

/// `locara ARGS…` with `env` set and no proxy from the environment otherwise.
fn run(cli: &Cli, env: &[(&str, &str)], args: &[&str]) -> Run {
    let proxies = [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    ];
    cli.run_with_env(args, env, &proxies)
}

#[test]
fn web_fetch_over_https_trusts_ca_cert_and_goes_through_the_environments_proxy() {
    let cli = Cli::new();
    let ca = TestCa::new();
    let ca_file = ca.write_pem(cli.cwd.path());
    let front = TlsFront::start(ca.server_config(Leaf::Valid, &[b"http/1.1"]), backend());
    let url = format!("{{\"url\": \"https://localhost:{}/notes\"}}", front.port());
    let fetch = |env: &[(&str, &str)], extra: &[&str]| {
        let mut args = extra.to_vec();
        args.extend([
            "--allow-host",
            "localhost",
            "--allow-host",
            "127.0.0.1",
            "run",
            "web.fetch",
            &url,
        ]);
        run(&cli, env, &args)
    };

    let fetched = fetch(&[], &["--ca-cert", s(&ca_file)]);
    assert_eq!(fetched.code, 0, "{fetched:#?}");
    assert_eq!(fetched.json()["text"], "hello over TLS");

    let untrusted = fetch(&[], &[]);
    assert_eq!(untrusted.code, 1, "{untrusted:#?}");
    assert!(
        untrusted.stderr.contains("unknown issuer") && untrusted.stderr.contains("--ca-cert FILE"),
        "{untrusted:#?}"
    );
    let bad = cli.cwd.path().join("bad.pem");
    std::fs::write(&bad, "not a certificate").unwrap();
    let refused = fetch(&[], &["--ca-cert", s(&bad)]);
    assert_eq!(refused.code, 2, "{refused:#?}");
    assert!(
        refused.stderr.contains("holds no certificate"),
        "{refused:#?}"
    );

    // HTTPS_PROXY: the call tunnels through the proxy, to the address that was checked.
    let proxy = Tinyproxy::start();
    let proxied = fetch(
        &[("HTTPS_PROXY", &proxy.url())],
        &["--ca-cert", s(&ca_file)],
    );
    assert_eq!(proxied.code, 0, "{proxied:#?}");
    assert_eq!(
        proxy.requests(),
        [format!("CONNECT 127.0.0.1:{} HTTP/1.1", front.port())]
    );
    // NO_PROXY names the host: reached directly.
    let direct = fetch(
        &[("HTTPS_PROXY", &proxy.url()), ("NO_PROXY", "localhost")],
        &["--ca-cert", s(&ca_file)],
    );
    assert_eq!(direct.code, 0, "{direct:#?}");
    assert_eq!(proxy.requests().len(), 1);
    // The proxy widens nothing: without 127.0.0.1 granted, `localhost` is refused before the
    // proxy is asked.
    let narrow = run(
        &cli,
        &[("HTTPS_PROXY", &proxy.url())],
        &[
            "--ca-cert",
            s(&ca_file),
            "--allow-host",
            "localhost",
            "run",
            "web.fetch",
            &url,
        ],
    );
    assert_eq!(narrow.code, 1, "{narrow:#?}");
    assert!(
        narrow.stderr.contains("which is a loopback address"),
        "{narrow:#?}"
    );
    assert_eq!(proxy.requests().len(), 1);
}
