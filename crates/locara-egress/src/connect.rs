//! Resolving, checking, tunnelling and connecting.

use std::{
    fmt, io,
    net::{IpAddr, SocketAddr},
    path::Path,
    sync::Arc,
    time::Duration,
};

use hyper_util::client::proxy::matcher::{Intercept, Matcher};
use rustls::pki_types::ServerName;
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::TcpStream,
};
use url::{Host, Url};

use crate::{AddressPolicy, Error, Stream, tls};

/// How long one address may take to accept a TCP connection before the next is tried.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most bytes of a proxy's answer to `CONNECT` read.
const MAX_PROXY_HEAD: usize = 16 << 10;

/// Resolves host names to addresses. The connector asks once per connection and connects only
/// to an address it checked, so what a resolver answers the second time never matters.
#[async_trait::async_trait]
pub trait Resolve: Send + Sync + fmt::Debug {
    /// The addresses of `host` (a name, never an IP literal) on `port`.
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>>;
}

/// The system's resolver (`getaddrinfo`, through tokio): the hosts file, then DNS.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

#[async_trait::async_trait]
impl Resolve for SystemResolver {
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        Ok(tokio::net::lookup_host((host, port)).await?.collect())
    }
}

/// A connected stream and what was agreed on it.
#[derive(Debug)]
#[non_exhaustive]
pub struct Connection {
    /// The stream to speak HTTP on.
    pub stream: Stream,
    /// Whether the server chose HTTP/2 (ALPN `h2`); otherwise speak HTTP/1.1.
    pub http2: bool,
    /// The server's address: the checked address connected to (through the proxy's tunnel,
    /// when there is one).
    pub address: SocketAddr,
    /// The proxy the connection goes through, when one does.
    pub proxy: Option<String>,
}

/// Opens connections to `http` and `https` URLs: resolves, checks each address against the
/// request's [`AddressPolicy`], tunnels through a proxy when the environment names one, and
/// speaks TLS for `https` (see the crate's documentation). Cheap to clone.
#[derive(Clone)]
pub struct Connector {
    tls: Arc<tls::Tls>,
    resolver: Arc<dyn Resolve>,
    proxy: Option<Arc<Matcher>>,
}

impl fmt::Debug for Connector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connector")
            .field("tls", &self.tls)
            .field("resolver", &self.resolver)
            .field("proxy", &self.proxy.is_some())
            .finish()
    }
}

impl Default for Connector {
    fn default() -> Connector {
        Connector::new()
    }
}

impl Connector {
    /// A connector trusting the system's roots, resolving with the system's resolver, and
    /// using the proxies the environment names (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`,
    /// `NO_PROXY` and their lowercase forms, read now).
    pub fn new() -> Connector {
        Connector {
            tls: Arc::new(tls::Tls::new(true, Vec::new())),
            resolver: Arc::new(SystemResolver),
            proxy: Some(Arc::new(Matcher::from_env())),
        }
    }

    /// Also trusts the CA certificates of the PEM file at `path` (a private CA).
    ///
    /// # Errors
    /// [`Error::Config`] when the file cannot be read or holds no certificate.
    pub fn with_ca_cert(self, path: &Path) -> Result<Connector, Error> {
        let extra = tls::read_pem(path)?;
        Ok(self.with_roots(extra))
    }

    /// Also trusts the CA certificates of `pem` (PEM text).
    ///
    /// # Errors
    /// [`Error::Config`] when `pem` holds no certificate.
    pub fn with_ca_cert_pem(self, pem: &[u8]) -> Result<Connector, Error> {
        let extra = tls::pem_certificates(pem, "given")?;
        Ok(self.with_roots(extra))
    }

    /// Trusts only the CAs given with [`Connector::with_ca_cert`], not the system's (a test
    /// that must not depend on the machine's store, or an app pinning its own CA).
    #[must_use]
    pub fn without_system_roots(self) -> Connector {
        Connector {
            tls: Arc::new(tls::Tls::new(false, self.extra_roots())),
            ..self
        }
    }

    /// Resolves host names with `resolver`.
    #[must_use]
    pub fn with_resolver(self, resolver: Arc<dyn Resolve>) -> Connector {
        Connector { resolver, ..self }
    }

    /// Uses the proxies `matcher` names (`None`: no proxy, whatever the environment says).
    #[must_use]
    pub fn with_proxy(self, matcher: Option<Matcher>) -> Connector {
        Connector {
            proxy: matcher.map(Arc::new),
            ..self
        }
    }

    fn extra_roots(&self) -> Vec<rustls::pki_types::CertificateDer<'static>> {
        self.tls.extra_roots()
    }

    fn with_roots(self, extra: Vec<rustls::pki_types::CertificateDer<'static>>) -> Connector {
        let mut roots = self.extra_roots();
        roots.extend(extra);
        Connector {
            tls: Arc::new(tls::Tls::new(self.tls.system(), roots)),
            ..self
        }
    }

    /// Checks that the TLS set-up can be built (the system's roots are read, or a CA was
    /// given), so an app can fail at start rather than on its first `https` request.
    ///
    /// # Errors
    /// [`Error::Config`] saying what is missing.
    pub fn check_tls(&self) -> Result<(), Error> {
        self.tls.config().map(drop)
    }

    /// The TLS client set-up this connector uses (roots, ALPN), for a client that must make
    /// its own connections (the MCP client's `reqwest`), so that it trusts the same CAs.
    ///
    /// # Errors
    /// [`Error::Config`] as [`Connector::check_tls`].
    pub fn tls_config(&self) -> Result<rustls::ClientConfig, Error> {
        Ok(self.tls.config()?.as_ref().clone())
    }

    /// Connects to the server of `url` (`http` or `https`), reaching only addresses `policy`
    /// allows.
    ///
    /// # Errors
    /// An [`Error`] saying what failed: the URL, resolution, the policy (naming the address
    /// and the grant that would allow it), the TCP connection, the proxy, or TLS.
    pub async fn connect(&self, url: &Url, policy: AddressPolicy<'_>) -> Result<Connection, Error> {
        let bad = |reason: &str| Error::Url {
            url: url.to_string(),
            reason: reason.to_owned(),
        };
        let https = match url.scheme() {
            "https" => true,
            "http" => false,
            _ => return Err(bad("is not an http or https URL")),
        };
        let port = url
            .port_or_known_default()
            .ok_or_else(|| bad("has no port"))?;
        let host = url.host().ok_or_else(|| bad("has no host"))?;
        let (name, server_name, candidates) = match host {
            Host::Domain(domain) => {
                let addresses =
                    self.resolver
                        .resolve(domain, port)
                        .await
                        .map_err(|e| Error::Resolve {
                            host: domain.to_owned(),
                            reason: e.to_string(),
                        })?;
                let server_name = ServerName::try_from(domain.to_owned())
                    .map_err(|e| bad(&format!("has a host that is not a DNS name: {e}")))?;
                (domain.to_owned(), server_name, addresses)
            }
            Host::Ipv4(ip) => (
                ip.to_string(),
                ServerName::IpAddress(IpAddr::V4(ip).into()),
                vec![SocketAddr::new(IpAddr::V4(ip), port)],
            ),
            Host::Ipv6(ip) => (
                ip.to_string(),
                ServerName::IpAddress(IpAddr::V6(ip).into()),
                vec![SocketAddr::new(IpAddr::V6(ip), port)],
            ),
        };
        if candidates.is_empty() {
            return Err(Error::Resolve {
                host: name,
                reason: "it has no address".to_owned(),
            });
        }
        let mut allowed = Vec::new();
        let mut refusal = None;
        for address in candidates {
            match policy.check(&name, address.ip()) {
                Ok(()) => allowed.push(address),
                Err(why) => {
                    refusal.get_or_insert(why);
                }
            }
        }
        if allowed.is_empty() {
            return Err(Error::Refused(refusal.unwrap_or_default()));
        }
        let proxy = self.proxy_for(url);
        let mut last = None;
        for address in allowed {
            let tcp = match &proxy {
                Some(proxy) => tunnel(proxy, address).await,
                None => tcp(address).await.map_err(|e| Error::Connect {
                    host: name.clone(),
                    address,
                    reason: e,
                }),
            };
            let tcp = match tcp {
                Ok(tcp) => tcp,
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            };
            let proxy = proxy.as_ref().map(|p| p.uri().to_string());
            if !https {
                return Ok(Connection {
                    stream: Stream::Plain(tcp),
                    http2: false,
                    address,
                    proxy,
                });
            }
            let config = self.tls.config()?;
            let tls = tokio_rustls::TlsConnector::from(config)
                .connect(server_name.clone(), tcp)
                .await
                .map_err(|e| Error::Tls(crate::tls_failure(&name, &e)))?;
            let http2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
            return Ok(Connection {
                stream: Stream::Tls(Box::new(tls)),
                http2,
                address,
                proxy,
            });
        }
        Err(last.unwrap_or_else(|| Error::Refused(format!("`{name}` has no address to try"))))
    }

    fn proxy_for(&self, url: &Url) -> Option<Intercept> {
        let matcher = self.proxy.as_ref()?;
        let uri = url.as_str().parse::<http::Uri>().ok()?;
        matcher.intercept(&uri)
    }
}

async fn tcp(address: SocketAddr) -> Result<TcpStream, String> {
    let tcp = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address))
        .await
        .map_err(|_| format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()))?
        .map_err(|e| e.to_string())?;
    // Requests are written whole; waiting to coalesce them only adds latency.
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    Ok(tcp)
}

/// A TCP stream to `address` through `proxy`'s `CONNECT` tunnel. The tunnel is asked for the
/// checked address, never the name, so the proxy cannot resolve it to somewhere else.
async fn tunnel(proxy: &Intercept, address: SocketAddr) -> Result<TcpStream, Error> {
    let uri = proxy.uri();
    let failed = |m: String| Error::Proxy(format!("the proxy {uri} {m}"));
    if uri.scheme_str() != Some("http") {
        return Err(failed(
            "is not an http:// proxy; only http:// proxies (which tunnel with CONNECT) are supported"
                .to_owned(),
        ));
    }
    let host = uri
        .host()
        .ok_or_else(|| failed("has no host".to_owned()))?
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(80);
    let mut stream = None;
    let mut last = String::from("it has no address");
    let addresses = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| failed(format!("cannot be resolved: {e}")))?;
    for proxy_address in addresses {
        match tcp(proxy_address).await {
            Ok(tcp) => {
                stream = Some(tcp);
                break;
            }
            Err(e) => last = e,
        }
    }
    let mut stream = stream.ok_or_else(|| failed(format!("cannot be reached: {last}")))?;
    let mut head = format!("CONNECT {address} HTTP/1.1\r\nHost: {address}\r\n");
    if let Some(auth) = proxy.basic_auth().and_then(|v| v.to_str().ok()) {
        head.push_str(&format!("Proxy-Authorization: {auth}\r\n"));
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .await
        .map_err(|e| failed(format!("dropped the connection: {e}")))?;
    // Read the answer's head byte by byte: what follows it is the server's, not ours to eat.
    let mut answer = Vec::new();
    while !answer.ends_with(b"\r\n\r\n") {
        if answer.len() == MAX_PROXY_HEAD {
            return Err(failed(format!(
                "answered CONNECT with a head longer than {MAX_PROXY_HEAD} bytes"
            )));
        }
        let byte = stream.read_u8().await.map_err(|e| {
            failed(format!(
                "closed the tunnel to {address} before answering: {e}"
            ))
        })?;
        answer.push(byte);
    }
    let status_line = String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok());
    match status {
        Some(200..=299) => Ok(stream),
        _ => Err(failed(format!(
            "refused to open a tunnel to {address}: `{}`",
            status_line.trim()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_the_systems_roots_only_the_apps_cas_are_trusted() {
        let none = Connector::new().with_proxy(None).without_system_roots();
        let error = none.check_tls().unwrap_err().to_string();
        assert!(
            error.starts_with("no trusted certificate authorities")
                && error.contains("`--ca-cert FILE`"),
            "{error}"
        );
        let pem = "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n";
        let error = none
            .with_ca_cert_pem(pem.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("certificate 1 of the CA file given cannot be a trust anchor"),
            "{error}"
        );
    }
}
