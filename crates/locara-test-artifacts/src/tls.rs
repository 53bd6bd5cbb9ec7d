//! TLS for tests: a CA made on the spot, the certificates it signs (valid, for another name,
//! expired), and [`TlsFront`], which serves TLS on loopback in front of a plain TCP server
//! (llama.cpp's, an MCP server, a hyper server in the test), so a real TLS handshake stands
//! before each of them.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::Arc,
    thread::JoinHandle,
};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, date_time_ymd,
};
use rustls::{
    ServerConfig,
    pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer},
};
use tokio::{net::TcpListener, sync::oneshot};

/// A certificate authority made for one test.
#[derive(Debug)]
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// What certificate a [`TlsFront`] presents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaf {
    /// Valid now, for `localhost` and `127.0.0.1`.
    Valid,
    /// Valid now, but for `other.test` only.
    WrongName,
    /// For `localhost` and `127.0.0.1`, but expired on 2021-01-01.
    Expired,
}

impl Default for TestCa {
    fn default() -> TestCa {
        TestCa::new()
    }
}

impl TestCa {
    /// A fresh CA (ECDSA P-256).
    ///
    /// # Panics
    /// If rcgen cannot make a key or sign (it always can).
    pub fn new() -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "Locara test CA");
        let key = KeyPair::generate().expect("CA key");
        TestCa {
            issuer: CertifiedIssuer::self_signed(params, key).expect("CA certificate"),
        }
    }

    /// The CA's certificate, PEM.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// Writes the CA's certificate to `dir/ca.pem` and returns the path.
    ///
    /// # Panics
    /// If the file cannot be written.
    pub fn write_pem(&self, dir: &Path) -> PathBuf {
        let path = dir.join("ca.pem");
        std::fs::write(&path, self.pem()).expect("write ca.pem");
        path
    }

    /// A certificate of `kind` signed by this CA, with its key.
    ///
    /// # Panics
    /// If rcgen cannot make a key or sign.
    pub fn leaf(&self, kind: Leaf) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
        let names: Vec<String> = match kind {
            Leaf::WrongName => vec!["other.test".to_owned()],
            Leaf::Valid | Leaf::Expired => vec!["localhost".to_owned(), "127.0.0.1".to_owned()],
        };
        let mut params = CertificateParams::new(names).expect("leaf parameters");
        params
            .distinguished_name
            .push(DnType::CommonName, "Locara test server");
        if kind == Leaf::Expired {
            params.not_before = date_time_ymd(2020, 1, 1);
            params.not_after = date_time_ymd(2021, 1, 1);
        }
        let key = KeyPair::generate().expect("leaf key");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("leaf certificate");
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        (vec![cert.der().clone(), self.issuer.der().clone()], key)
    }

    /// A rustls server set-up presenting a `kind` certificate and offering `alpn`.
    ///
    /// # Panics
    /// If rustls refuses the certificate (it does not).
    pub fn server_config(&self, kind: Leaf, alpn: &[&[u8]]) -> Arc<ServerConfig> {
        let (chain, key) = self.leaf(kind);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server certificate");
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }
}

/// TLS on a loopback port in front of a plain TCP server: each connection's handshake is
/// made here, then its bytes are copied to and from `backend`. It runs on its own thread (so
/// it serves whichever runtime, or none, the test uses) until dropped.
#[derive(Debug)]
pub struct TlsFront {
    address: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TlsFront {
    /// Serves TLS with `config` on 127.0.0.1 (a free port), forwarding to `backend`.
    ///
    /// # Panics
    /// If no loopback port can be bound.
    pub fn start(config: Arc<ServerConfig>, backend: SocketAddr) -> TlsFront {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).expect("non-blocking");
        let address = listener.local_addr().expect("local address");
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener).expect("listener");
                let acceptor = tokio_rustls::TlsAcceptor::from(config);
                let serve = async {
                    loop {
                        let Ok((tcp, _)) = listener.accept().await else {
                            continue;
                        };
                        let acceptor = acceptor.clone();
                        tokio::spawn(async move {
                            // A refused handshake (the client distrusts the certificate) ends
                            // here; that is what the tests look at from the client's side.
                            let Ok(mut tls) = acceptor.accept(tcp).await else {
                                return;
                            };
                            let Ok(mut plain) = tokio::net::TcpStream::connect(backend).await
                            else {
                                return;
                            };
                            let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                        });
                    }
                };
                tokio::select! {
                    () = serve => {}
                    _ = stopped => {}
                }
            });
        });
        TlsFront {
            address,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.address.port()
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
