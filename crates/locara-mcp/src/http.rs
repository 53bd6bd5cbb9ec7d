//! The streamable HTTP transport: rmcp's `StreamableHttpService` (a tower service) at
//! [`MCP_PATH`], served by a bare hyper HTTP/1 connection loop.
//!
//! Loopback only unless callers authenticate ([`HttpConfig::with_auth`]) or remote access is
//! asked for: a Locara runs tools for whoever can reach it. On loopback, rmcp also checks the
//! `Host` header (`localhost`, `127.0.0.1`, `::1`); elsewhere that check is off, since the host
//! name clients use is not known here.
//!
//! With auth, every request to `/mcp` carries `Authorization: Bearer <API key or JWT>`
//! (`locara_auth`): a missing or invalid one is a 401 whose `WWW-Authenticate` points to the
//! protected-resource metadata (RFC 9728, as the MCP authorization spec asks) at
//! `/.well-known/oauth-protected-resource`; a caller over its rate limit or concurrency cap
//! gets a 429 with `Retry-After`. Each caller's requests go to the handler of its app
//! ([`HttpServer::bind_apps`]), so its app bounds every call; MCP sessions live in that
//! handler, so one app's session id means nothing to another's. `/healthz` and `/readyz`
//! answer without credentials.
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

use std::{
    collections::HashMap,
    convert::Infallible,
    fmt,
    future::Future,
    net::SocketAddr,
    path::PathBuf,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use http_body_util::{BodyExt as _, Full, combinators::BoxBody};
use hyper::{
    Method, Request, Response, StatusCode,
    body::{Body, Bytes, Frame, Incoming},
    header::{
        AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, ORIGIN, RETRY_AFTER, WWW_AUTHENTICATE,
    },
    http::uri::Authority,
};
use locara_auth::{Auth, Permit, Refusal};

use crate::metrics::Metrics;
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

/// The path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

/// Where the protected-resource metadata is served (RFC 9728), when callers authenticate.
pub const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// How the HTTP server listens.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The address to bind; port 0 picks a free port ([`HttpServer::local_addr`] says which).
    pub addr: SocketAddr,
    /// Whether a non-loopback address is allowed without auth. By default `false`.
    pub allow_remote: bool,
    /// Who may call, when callers must authenticate.
    pub auth: Option<Arc<Auth>>,
    /// The server's URL as clients reach it (behind a load balancer, its URL), for the
    /// protected-resource metadata; by default `http://ADDR`.
    pub public_url: Option<String>,
    /// Where requests refused before any call are counted (calls are counted by the
    /// handlers: [`LocaraMcp::with_metrics`]).
    pub metrics: Option<Arc<Metrics>>,
    /// Keep no MCP sessions: every POST is answered on its own (JSON when the call sends no
    /// progress), so any replica behind a load balancer can answer any request. By default
    /// `false`: clients of protocol versions before 2026-07-28 get a session, held by this
    /// process.
    pub stateless: bool,
}

impl HttpConfig {
    /// Listen on `addr`, loopback only.
    pub fn new(addr: SocketAddr) -> HttpConfig {
        HttpConfig {
            addr,
            allow_remote: false,
            auth: None,
            public_url: None,
            metrics: None,
            stateless: false,
        }
    }

    /// Keeps no sessions ([`HttpConfig::stateless`]).
    pub fn with_stateless(mut self, stateless: bool) -> HttpConfig {
        self.stateless = stateless;
        self
    }

    /// Counts refused requests in `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> HttpConfig {
        self.metrics = Some(metrics);
        self
    }

    /// Callers must authenticate, as `auth` says; then any address may be bound.
    pub fn with_auth(mut self, auth: Arc<Auth>) -> HttpConfig {
        self.auth = Some(auth);
        self
    }

    /// The server's URL as clients reach it (`https://tools.example`), without a path.
    pub fn with_public_url(mut self, url: impl Into<String>) -> HttpConfig {
        self.public_url = Some(url.into().trim_end_matches('/').to_owned());
        self
    }

    /// Allows (or not) a non-loopback address.
    pub fn with_allow_remote(mut self, allow: bool) -> HttpConfig {
        self.allow_remote = allow;
        self
    }
}

type Service = StreamableHttpService<LocaraMcp, LocalSessionManager>;

/// A bound, not yet running, streamable HTTP MCP server.
pub struct HttpServer {
    listener: TcpListener,
    addr: SocketAddr,
    router: Arc<Router>,
}

impl fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// Where a request goes: one handler for every caller, or the handler of each caller's app.
struct Router {
    addr: SocketAddr,
    /// Set once the server stops accepting: `/readyz` is then a 503.
    draining: AtomicBool,
    auth: Option<Arc<Auth>>,
    metrics: Option<Arc<Metrics>>,
    public_url: String,
    services: Services,
}

enum Services {
    One(Service),
    ByApp(HashMap<PathBuf, Service>),
}

impl HttpServer {
    /// Binds `config.addr` for a Locara's tools (an `Arc<Locara>` or a configured
    /// [`LocaraMcp`]): every caller (with auth, every admitted caller) uses this one handler.
    ///
    /// # Errors
    /// [`Error::NotLoopback`] for a non-loopback address without auth or `allow_remote`, and
    /// [`Error::Bind`] when the address cannot be bound.
    pub async fn bind(
        server: impl Into<LocaraMcp>,
        config: &HttpConfig,
    ) -> Result<HttpServer, Error> {
        let (listener, addr) = listen(config).await?;
        let services = Services::One(service(server.into(), addr, config.stateless));
        Ok(HttpServer::new(listener, addr, config, services))
    }

    /// Binds `config.addr`, whose auth must be set, with one handler per app: each admitted
    /// caller's requests go to the handler of the app its key or token is bound to.
    ///
    /// # Errors
    /// As [`HttpServer::bind`], and [`Error::Config`] without auth or without a handler for
    /// an app the auth names.
    pub async fn bind_apps(
        servers: HashMap<PathBuf, LocaraMcp>,
        config: &HttpConfig,
    ) -> Result<HttpServer, Error> {
        let auth = config.auth.as_ref().ok_or_else(|| {
            Error::Config("a server with one handler per app needs auth".to_owned())
        })?;
        if let Some(app) = auth
            .apps()
            .into_iter()
            .find(|app| !servers.contains_key(app))
        {
            return Err(Error::Config(format!(
                "no handler for the app {}",
                app.display()
            )));
        }
        let (listener, addr) = listen(config).await?;
        let services = Services::ByApp(
            servers
                .into_iter()
                .map(|(app, server)| (app, service(server, addr, config.stateless)))
                .collect(),
        );
        Ok(HttpServer::new(listener, addr, config, services))
    }

    fn new(
        listener: TcpListener,
        addr: SocketAddr,
        config: &HttpConfig,
        services: Services,
    ) -> HttpServer {
        let public_url = config
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{addr}"));
        HttpServer {
            listener,
            addr,
            router: Arc::new(Router {
                addr,
                draining: AtomicBool::new(false),
                auth: config.auth.clone(),
                metrics: config.metrics.clone(),
                public_url,
                services,
            }),
        }
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
        self.run_until(std::future::pending(), Duration::ZERO).await;
    }

    /// Serves connections until `shutdown` completes, then drains: it stops accepting,
    /// `/readyz` answers 503, idle connections are closed, and requests in flight (a call,
    /// or its streamed answer) are waited for, for at most `drain`. Whether everything
    /// drained in time.
    pub async fn run_until(self, shutdown: impl Future<Output = ()>, drain: Duration) -> bool {
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            let stream = tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(error) => {
                        tracing::warn!(%error, "cannot accept a connection");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            let router = Arc::clone(&self.router);
            let route = hyper::service::service_fn(move |request: Request<Incoming>| {
                let router = Arc::clone(&router);
                async move { Ok::<_, Infallible>(router.route(request).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), route);
            let connection = graceful.watch(connection);
            tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "connection ended with an error");
                }
            });
        }
        self.router.draining.store(true, Ordering::Release);
        drop(self.listener);
        tokio::time::timeout(drain, graceful.shutdown())
            .await
            .is_ok()
    }
}

/// Binds the listener, refusing a non-loopback address without auth or `allow_remote`.
async fn listen(config: &HttpConfig) -> Result<(TcpListener, SocketAddr), Error> {
    let addr = config.addr;
    if !addr.ip().is_loopback() && !config.allow_remote && config.auth.is_none() {
        return Err(Error::NotLoopback { addr });
    }
    bind_tcp(addr).await
}

/// Binds `addr`: the listener and the address bound (the port chosen for port 0).
async fn bind_tcp(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), Error> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Bind { addr, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| Error::Bind { addr, source })?;
    Ok((listener, addr))
}

/// rmcp's service around one handler.
fn service(handler: LocaraMcp, addr: SocketAddr, stateless: bool) -> Service {
    let mut http =
        StreamableHttpServerConfig::default().with_max_request_body_bytes(crate::MAX_MESSAGE_BYTES);
    if stateless {
        http = http
            .with_legacy_session_mode(false)
            .with_json_response(true);
    }
    if !addr.ip().is_loopback() {
        http = http.disable_allowed_hosts();
    }
    StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        http,
    )
}

type HttpResponse = Response<BoxBody<Bytes, Infallible>>;

impl Router {
    async fn route(&self, request: Request<Incoming>) -> HttpResponse {
        if let Some(reason) = refused_origin(request.headers(), self.addr) {
            return forbidden(&reason);
        }
        match request.uri().path() {
            MCP_PATH => {}
            "/healthz" => return text(StatusCode::OK, "ok\n"),
            "/readyz" if self.draining.load(Ordering::Acquire) => {
                return text(StatusCode::SERVICE_UNAVAILABLE, "draining: shutting down\n");
            }
            "/readyz" => return text(StatusCode::OK, "ready\n"),
            path if self.auth.is_some()
                && (path == RESOURCE_METADATA_PATH
                    || path == format!("{RESOURCE_METADATA_PATH}{MCP_PATH}")) =>
            {
                return self.resource_metadata();
            }
            _ => return not_found(),
        }
        let Some(auth) = &self.auth else {
            let Services::One(service) = &self.services else {
                return not_found();
            };
            return respond(service.clone().oneshot(request).await);
        };
        let authorization = request
            .headers()
            .get(AUTHORIZATION)
            .map(|value| value.to_str().unwrap_or(""));
        let principal = match auth.authenticate(authorization) {
            Ok(principal) => principal,
            Err(refusal) => return self.refused(&refusal),
        };
        // A POST is a call (or a notification): it counts against the caller's limits until its
        // answer has been sent. A GET is the session's stream of server messages, and a DELETE
        // ends a session; neither runs anything.
        let permit = if request.method() == Method::POST {
            match auth.admit(&principal) {
                Ok(permit) => Some(permit),
                Err(refusal) => return self.refused(&refusal),
            }
        } else {
            None
        };
        let service = match &self.services {
            Services::One(service) => service,
            Services::ByApp(by_app) => match by_app.get(&principal.app) {
                Some(service) => service,
                None => {
                    tracing::error!(app = %principal.app.display(), "no handler for an app the auth names");
                    return text(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "this caller's app is not served here: the server is misconfigured\n",
                    );
                }
            },
        };
        tracing::debug!(principal = %principal.id, method = %request.method(), "admitted");
        let response = respond(service.clone().oneshot(request).await);
        match permit {
            Some(permit) => response.map(|body| {
                Held {
                    body,
                    _permit: permit,
                }
                .boxed()
            }),
            None => response,
        }
    }

    /// The protected-resource metadata (RFC 9728).
    fn resource_metadata(&self) -> HttpResponse {
        let mut metadata = serde_json::json!({
            "resource": format!("{}{MCP_PATH}", self.public_url),
            "bearer_methods_supported": ["header"],
            "resource_name": "Locara",
        });
        if let Some(issuer) = self.auth.as_deref().and_then(Auth::issuer) {
            metadata["authorization_servers"] = serde_json::json!([issuer]);
        }
        let mut response = text(StatusCode::OK, &metadata.to_string());
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response
    }

    /// A 401 or 429 for `refusal`, with a JSON body saying why.
    fn refused(&self, refusal: &Refusal) -> HttpResponse {
        tracing::info!(
            target: "locara::http",
            status = refusal.status(),
            reason = %refusal,
            "refused"
        );
        let status = StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::UNAUTHORIZED);
        let (code, description) = match refusal {
            Refusal::Missing => ("unauthorized", refusal.to_string()),
            Refusal::InvalidToken(why) => ("invalid_token", why.clone()),
            _ => ("too_many_requests", refusal.to_string()),
        };
        if let Some(metrics) = &self.metrics {
            metrics.refused(match refusal {
                Refusal::RateLimited { .. } => "rate_limited",
                Refusal::TooManyInFlight { .. } => "too_many_in_flight",
                _ => code,
            });
        }
        let body = serde_json::json!({"error": code, "error_description": description});
        let mut response = text(status, &body.to_string());
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if status == StatusCode::UNAUTHORIZED {
            let mut challenge = format!(
                "Bearer resource_metadata=\"{}{RESOURCE_METADATA_PATH}\"",
                self.public_url
            );
            if let Refusal::InvalidToken(why) = refusal {
                let why: String = why
                    .chars()
                    .filter(|c| c.is_ascii() && !c.is_ascii_control() && *c != '"' && *c != '\\')
                    .collect();
                challenge.push_str(&format!(
                    ", error=\"invalid_token\", error_description=\"{why}\""
                ));
            }
            if let Ok(value) = HeaderValue::from_str(&challenge) {
                headers.insert(WWW_AUTHENTICATE, value);
            }
        }
        if let Some(seconds) = refusal.retry_after() {
            headers.insert(RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// `GET /metrics` (Prometheus's text format) on a listener of its own, so that the scraper's
/// network need not reach the MCP endpoint, and the MCP endpoint's callers never see it.
pub struct MetricsServer {
    listener: TcpListener,
    addr: SocketAddr,
    metrics: Arc<Metrics>,
}

impl fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl MetricsServer {
    /// Binds `addr` (any address: the counters hold no secrets, only tool ids and counts).
    ///
    /// # Errors
    /// [`Error::Bind`] when the address cannot be bound.
    pub async fn bind(addr: SocketAddr, metrics: Arc<Metrics>) -> Result<MetricsServer, Error> {
        let (listener, addr) = bind_tcp(addr).await?;
        Ok(MetricsServer {
            listener,
            addr,
            metrics,
        })
    }

    /// The address bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves `/metrics` until the task is dropped.
    pub async fn run(self) {
        loop {
            let Ok((stream, _)) = self.listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            let metrics = Arc::clone(&self.metrics);
            tokio::spawn(async move {
                let route = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let metrics = Arc::clone(&metrics);
                    async move {
                        if request.uri().path() != "/metrics" {
                            return Ok::<_, Infallible>(text(
                                StatusCode::NOT_FOUND,
                                "not found: the metrics are at /metrics\n",
                            ));
                        }
                        let mut response = text(StatusCode::OK, &metrics.render());
                        response.headers_mut().insert(
                            CONTENT_TYPE,
                            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
                        );
                        Ok(response)
                    }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), route);
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "metrics connection ended with an error");
                }
            });
        }
    }
}

fn respond(answer: Result<HttpResponse, Infallible>) -> HttpResponse {
    match answer {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// A response body that holds a caller's [`Permit`] until the body has been sent (or the
/// client went away): a streamed answer counts as in flight until its end.
struct Held {
    body: BoxBody<Bytes, Infallible>,
    _permit: Permit,
}

impl Body for Held {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

fn text(status: StatusCode, body: &str) -> HttpResponse {
    let mut response = Response::new(Full::new(Bytes::from(body.to_owned())).boxed());
    *response.status_mut() = status;
    response
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
