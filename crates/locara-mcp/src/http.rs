//! The streamable HTTP transport: rmcp's `StreamableHttpService` (a tower service) at
//! [`MCP_PATH`], served by a bare hyper HTTP/1 connection loop.
//!
//! Loopback only unless remote access is asked for: a Locara runs tools for whoever can reach
//! it, and there is no authentication. On loopback, rmcp also checks the `Host` header
//! (`localhost`, `127.0.0.1`, `::1`); with remote access that check is off, since the host name
//! clients use is not known here.
//!
//! DNS rebinding, and any other web page calling the server from a browser, is stopped by the
//! `Origin` header, as the MCP transport specification requires: a request that carries one
//! is served only when it is the server's own origin, `http://HOST:PORT` with the bound port
//! and HOST one of `localhost`, `127.0.0.1`, `[::1]` or the bound address itself (not when
//! that is unspecified, `0.0.0.0` or `[::]`: the names clients use for it are unknown here).
//! Anything else, including `Origin: null` and `https`, is a 403 whose body says why. A
//! request without `Origin` (every non-browser client) is served. With remote access the
//! same rule holds, so a browser page on another host is refused too: only non-browser clients
//! can use a remote server.

use std::{convert::Infallible, fmt, net::SocketAddr, sync::Arc, time::Duration};

use http_body_util::{BodyExt as _, Full, combinators::BoxBody};
use hyper::{
    Request, Response, StatusCode,
    body::{Bytes, Incoming},
    header::{HeaderMap, ORIGIN},
    http::uri::Authority,
};
use hyper_util::rt::TokioIo;
use rmcp::transport::{
    StreamableHttpServerConfig, StreamableHttpService,
    streamable_http_server::session::local::LocalSessionManager,
};
use tokio::net::TcpListener;
use tower::ServiceExt as _;

use crate::{Error, LocaraMcp};

/// Where `locara serve --http` listens by default.
pub const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:8765";

/// The path of the MCP endpoint; any other path is a 404.
pub const MCP_PATH: &str = "/mcp";

/// How the HTTP server listens.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The address to bind; port 0 picks a free port ([`HttpServer::local_addr`] says which).
    pub addr: SocketAddr,
    /// Whether a non-loopback address is allowed. By default `false`.
    pub allow_remote: bool,
}

impl HttpConfig {
    /// Listen on `addr`, loopback only.
    pub fn new(addr: SocketAddr) -> HttpConfig {
        HttpConfig {
            addr,
            allow_remote: false,
        }
    }

    /// Allows (or not) a non-loopback address.
    pub fn with_allow_remote(mut self, allow: bool) -> HttpConfig {
        self.allow_remote = allow;
        self
    }
}

/// A bound, not yet running, streamable HTTP MCP server.
pub struct HttpServer {
    listener: TcpListener,
    addr: SocketAddr,
    service: StreamableHttpService<LocaraMcp, LocalSessionManager>,
}

impl fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// Binds `config.addr` for a Locara's tools (an `Arc<Locara>` or a configured
    /// [`LocaraMcp`]).
    ///
    /// # Errors
    /// [`Error::NotLoopback`] for a non-loopback address without `allow_remote`, and
    /// [`Error::Bind`] when the address cannot be bound.
    pub async fn bind(
        server: impl Into<LocaraMcp>,
        config: &HttpConfig,
    ) -> Result<HttpServer, Error> {
        let addr = config.addr;
        if !addr.ip().is_loopback() && !config.allow_remote {
            return Err(Error::NotLoopback { addr });
        }
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| Error::Bind { addr, source })?;
        let mut http = StreamableHttpServerConfig::default()
            .with_max_request_body_bytes(crate::MAX_MESSAGE_BYTES);
        if !addr.ip().is_loopback() {
            http = http.disable_allowed_hosts();
        }
        let handler = server.into();
        let service = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(LocalSessionManager::default()),
            http,
        );
        Ok(HttpServer {
            listener,
            addr,
            service,
        })
    }

    /// The address bound (with the port chosen when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The endpoint's URL, `http://ADDR/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{MCP_PATH}", self.addr)
    }

    /// Serves connections until the task is dropped; failing connections are logged and
    /// dropped, and so are failed accepts (e.g. out of file descriptors), after a pause.
    pub async fn run(self) {
        loop {
            let stream = match self.listener.accept().await {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let service = self.service.clone();
            let addr = self.addr;
            tokio::spawn(async move {
                let route = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let service = service.clone();
                    async move {
                        if let Some(reason) = refused_origin(request.headers(), addr) {
                            return Ok::<_, Infallible>(forbidden(&reason));
                        }
                        if request.uri().path() != MCP_PATH {
                            return Ok::<_, Infallible>(not_found());
                        }
                        service.oneshot(request).await
                    }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), route);
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "connection ended with an error");
                }
            });
        }
    }
}

fn not_found() -> Response<BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(
        Full::new(Bytes::from(format!(
            "not found: the MCP endpoint is {MCP_PATH}\n"
        )))
        .boxed(),
    );
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}

fn forbidden(reason: &str) -> Response<BoxBody<Bytes, Infallible>> {
    let mut response =
        Response::new(Full::new(Bytes::from(format!("forbidden: {reason}\n"))).boxed());
    *response.status_mut() = StatusCode::FORBIDDEN;
    response
}

/// Why a request may not be served for its `Origin` header (see the module doc), or `None`.
pub(crate) fn refused_origin(headers: &HeaderMap, addr: SocketAddr) -> Option<String> {
    let mut origins = headers.get_all(ORIGIN).iter();
    let origin = origins.next()?;
    if origins.next().is_some() {
        return Some("the request has more than one Origin header".to_owned());
    }
    let Ok(origin) = origin.to_str() else {
        return Some("the Origin header is not text".to_owned());
    };
    if is_own_origin(origin, addr) {
        return None;
    }
    let port = addr.port();
    let mut own = vec![
        format!("http://localhost:{port}"),
        format!("http://127.0.0.1:{port}"),
        format!("http://[::1]:{port}"),
    ];
    if !addr.ip().is_unspecified() && !own.contains(&format!("http://{addr}")) {
        own.push(format!("http://{addr}"));
    }
    Some(format!(
        "Origin `{origin}` is not this server's own ({}); web pages from other origins may not call it (DNS rebinding protection)",
        own.join(", ")
    ))
}

/// Whether `origin` is `http://HOST:PORT` for the server bound at `addr`.
fn is_own_origin(origin: &str, addr: SocketAddr) -> bool {
    let Some(authority) = origin
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("http://"))
        .map(|_| &origin[7..])
    else {
        return false;
    };
    // An origin is a scheme, a host and a port: no user, path, query or fragment.
    if authority.contains(['/', '?', '#', '@']) {
        return false;
    }
    let Ok(authority) = authority.parse::<Authority>() else {
        return false;
    };
    if authority.port_u16().unwrap_or(80) != addr.port() {
        return false;
    }
    let host = authority.host();
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    let ip = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    match ip.parse::<std::net::IpAddr>() {
        Ok(ip) => {
            ip == std::net::Ipv4Addr::LOCALHOST
                || ip == std::net::Ipv6Addr::LOCALHOST
                || (ip == addr.ip() && !ip.is_unspecified())
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests;
