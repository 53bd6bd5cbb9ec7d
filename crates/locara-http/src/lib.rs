//! HTTP providers: tools whose manifest points at an HTTP endpoint.
//!
//! A provider manifest is a tool manifest template (every field but `artifact`) with one more
//! field, `endpoint`: `{"url": "http://host:port/path"}`. [`provider`] turns it into a
//! [`HostTool`] whose handler POSTs the call's arguments as JSON to the URL and takes the JSON
//! body of a 2xx response as the output. Everything else is the pipeline's, as for any tool:
//! the input schema before the request, the output schema and the output cap after it, the
//! safety tier, approval, and the wall-time limit.
//!
//! The endpoint's host is added to the tool's `wasi_imports.net.allowed_hosts`, so the
//! composition rule lets the tool run only when the app grants that host. The provider itself
//! follows no redirect (a 3xx is an error naming its `Location`), reads at most the tool's
//! `output_bytes` of a response, and speaks `http` or `https` through [`HyperClient`] (TLS,
//! resolution and proxies are `locara-egress`'s). The endpoint is the app's own choice (it
//! installed the provider), so its address is not held to the rule that keeps a tool's
//! requests off private addresses.

#![forbid(unsafe_code)]

mod search;
pub use search::{
    DEFAULT_RESULTS, MAX_ATTEMPTS, MAX_RESULTS, SearchFormat, SearchProvider, WEB_SEARCH,
    web_search,
};

use std::sync::Arc;

use http_body_util::{BodyExt as _, Full};
use hyper::{Request, StatusCode, body::Bytes, header};
use hyper_util::rt::{TokioExecutor, TokioIo};
use locara_egress::{AddressPolicy, Connector};
use locara_exec::{
    Egress, HandlerError, HostTool, HttpClient, HttpRequest, HttpResponse, ToolHandler,
};
use locara_manifest::NetAccess;
use locara_manifest::ToolManifest;
use serde::Deserialize;
use serde_json::Value;
use url::Url;

/// Why a provider manifest cannot make a tool.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The manifest is not a tool manifest template plus an `endpoint`.
    #[error("invalid provider manifest: {0}")]
    Manifest(String),
    /// The endpoint URL cannot be used.
    #[error("invalid endpoint `{url}`: {reason}")]
    Endpoint {
        /// The URL given.
        url: String,
        /// Why it cannot be used.
        reason: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Endpoint {
    url: String,
}

/// Reads a provider manifest (a tool manifest template with an `endpoint`) and makes its tool,
/// which sends its requests with a [`HyperClient`] trusting the system's roots.
///
/// # Errors
/// [`Error::Manifest`] for a manifest that does not parse or validate, and [`Error::Endpoint`]
/// for a URL that is not `http[s]://host[:port]/path`.
pub fn provider(manifest_json: &str) -> Result<HostTool, Error> {
    provider_with(manifest_json, Arc::new(HyperClient::default()))
}

/// [`provider`], sending requests with `client` (e.g. a [`HyperClient`] that also trusts a
/// private CA).
///
/// # Errors
/// As [`provider`].
pub fn provider_with(manifest_json: &str, client: Arc<dyn HttpClient>) -> Result<HostTool, Error> {
    let mut template: Value =
        serde_json::from_str(manifest_json).map_err(|e| Error::Manifest(e.to_string()))?;
    let fields = template
        .as_object_mut()
        .ok_or_else(|| Error::Manifest("the manifest is not a JSON object".to_owned()))?;
    let endpoint = fields.remove("endpoint").ok_or_else(|| {
        Error::Manifest("it has no `endpoint` ({\"url\": \"http://…\"})".to_owned())
    })?;
    let endpoint: Endpoint = serde_json::from_value(endpoint)
        .map_err(|e| Error::Manifest(format!("`endpoint`: {e}")))?;
    let url = Url::parse(&endpoint.url).map_err(|e| Error::Endpoint {
        url: endpoint.url.clone(),
        reason: format!("{e}"),
    })?;
    let bad = |reason: &str| Error::Endpoint {
        url: endpoint.url.clone(),
        reason: reason.to_owned(),
    };
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("the scheme must be http or https"));
    }
    // `host_str` keeps an IPv6 address in brackets (`[::1]`); a grant names the address alone.
    let host = url
        .host_str()
        .ok_or_else(|| bad("it has no host"))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let placeholder = HostTool::manifest_template(
        "placeholder"
            .parse()
            .map_err(|e| Error::Manifest(format!("{e}")))?,
        "0.0.0"
            .parse()
            .map_err(|e| Error::Manifest(format!("{e}")))?,
    )
    .artifact;
    let mut manifest: ToolManifest =
        ToolManifest::from_template_json(&template.to_string(), placeholder)
            .map_err(|e| Error::Manifest(e.to_string()))?;
    let mut net = NetAccess::new();
    for declared in &manifest.wasi_imports.net.allowed_hosts {
        if *declared != host {
            net = net.with_host(declared.clone());
        }
    }
    manifest.wasi_imports.net = net.with_host(host.clone());
    let max_bytes = manifest.limits().output_bytes;
    let handler = Arc::new(HttpHandler {
        client,
        url,
        max_bytes: usize::try_from(max_bytes).unwrap_or(usize::MAX),
    });
    HostTool::new(manifest, handler).map_err(|e| Error::Manifest(e.to_string()))
}

/// POSTs each call to the endpoint.
#[derive(Debug)]
struct HttpHandler {
    client: Arc<dyn HttpClient>,
    url: Url,
    max_bytes: usize,
}

#[async_trait::async_trait]
impl ToolHandler for HttpHandler {
    async fn call(
        &self,
        arguments: Value,
        _context: &locara_exec::CallContext,
    ) -> Result<Value, HandlerError> {
        let request = HttpRequest::post(
            self.url.clone(),
            vec![
                ("content-type".to_owned(), "application/json".to_owned()),
                ("accept".to_owned(), "application/json".to_owned()),
            ],
            serde_json::to_vec(&arguments).unwrap_or_default(),
        )
        .with_egress(Egress::Configured);
        // One byte more than the limit tells "exactly at the limit" from "over it".
        let response = self
            .client
            .send(request, self.max_bytes.saturating_add(1))
            .await
            .map_err(|e| {
                HandlerError::new(
                    format!("the endpoint {} could not be reached: {e}", self.url),
                    "the provider may be down; try again later, or tell the user",
                )
            })?;
        let status = StatusCode::from_u16(response.status).unwrap_or(StatusCode::BAD_GATEWAY);
        // A cut body holds `max_bytes + 1` bytes, so the length alone says "too large".
        if response.body.len() > self.max_bytes {
            return Err(HandlerError::new(
                format!(
                    "the endpoint {}'s response is larger than the tool's output limit ({} bytes)",
                    self.url, self.max_bytes
                ),
                "ask for less at once: narrow the request or split it into smaller calls",
            ));
        }
        if status.is_redirection() {
            return Err(HandlerError::new(
                format!(
                    "the endpoint {} answered {status} to {}; providers do not follow redirects",
                    self.url,
                    response.header("location").unwrap_or("an unnamed location")
                ),
                "the provider's manifest names an outdated URL; tell the user",
            ));
        }
        if !status.is_success() {
            let text: String = String::from_utf8_lossy(&response.body)
                .chars()
                .take(500)
                .collect();
            return Err(HandlerError::new(
                format!(
                    "the endpoint {} answered {status}: {}",
                    self.url,
                    text.trim()
                ),
                hint(status),
            ));
        }
        serde_json::from_slice(&response.body).map_err(|e| {
            HandlerError::new(
                format!(
                    "the endpoint {} answered with a body that is not JSON: {e}",
                    self.url
                ),
                "this is a bug in the provider; report it",
            )
        })
    }
}

/// An [`HttpClient`] on hyper over a [`Connector`]: one connection per request (HTTP/2 when
/// the server offers it over TLS, else HTTP/1.1), `http` and `https`, each resolved address
/// checked against the request's [`Egress`] before it is connected to, proxies from the
/// environment, no redirects followed, the body read up to the limit and cut there.
///
/// It is what a [`provider`] tool and the host services of wasm tools (`web.fetch`,
/// `llm.chat`) send their requests with. Clones share the TLS set-up.
#[derive(Debug, Clone, Default)]
pub struct HyperClient {
    connector: Connector,
}

impl HyperClient {
    /// A client connecting through `connector` (its roots, resolver and proxies).
    pub fn new(connector: Connector) -> HyperClient {
        HyperClient { connector }
    }

    /// The connector it uses.
    pub fn connector(&self) -> &Connector {
        &self.connector
    }

    async fn exchange(
        &self,
        request: HttpRequest,
        max_bytes: usize,
        on_data: &mut (dyn for<'b> FnMut(&'b [u8]) + Send),
    ) -> Result<HttpResponse, String> {
        let url = &request.url;
        let policy = match &request.egress {
            Egress::Configured => AddressPolicy::Any,
            Egress::Granted(grants) => AddressPolicy::Grants(grants),
            // An `Egress` this client does not know yet reaches public addresses only.
            _ => AddressPolicy::Grants(&[]),
        };
        let connection = self
            .connector
            .connect(url, policy)
            .await
            .map_err(|e| e.to_string())?;
        let host = url
            .host_str()
            .ok_or_else(|| format!("`{url}` has no host"))?;
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        let path = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        // HTTP/2 carries the scheme and authority in the request's URI (`:scheme`,
        // `:authority`); HTTP/1.1 sends the path and a `Host` header.
        let mut builder = Request::builder().method(request.method).header(
            header::USER_AGENT,
            concat!("locara/", env!("CARGO_PKG_VERSION")),
        );
        builder = if connection.http2 {
            builder.uri(format!("{}://{authority}{path}", url.scheme()))
        } else {
            builder.uri(path).header(header::HOST, authority)
        };
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let outgoing = builder
            .body(Full::new(Bytes::from(request.body)))
            .map_err(|e| e.to_string())?;
        let io = TokioIo::new(connection.stream);
        // Each connection is driven by its own task, which ends with the request (dropping
        // the sender closes it); a dropped call drops both.
        let response = if connection.http2 {
            let (mut sender, driver) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
                    .await
                    .map_err(|e| chain(&e))?;
            tokio::spawn(driver);
            sender.send_request(outgoing).await
        } else {
            let (mut sender, driver) = hyper::client::conn::http1::handshake(io)
                .await
                .map_err(|e| chain(&e))?;
            tokio::spawn(driver);
            sender.send_request(outgoing).await
        }
        .map_err(|e| chain(&e))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        let mut body = response.into_body();
        let mut bytes = Vec::new();
        let mut truncated = false;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| chain(&e))?;
            if let Ok(data) = frame.into_data() {
                let room = max_bytes - bytes.len();
                let (kept, cut) = if data.len() > room {
                    (&data[..room], true)
                } else {
                    (&data[..], false)
                };
                on_data(kept);
                bytes.extend_from_slice(kept);
                if cut {
                    truncated = true;
                    break;
                }
            }
        }
        Ok(HttpResponse::new(status, headers, bytes, truncated))
    }
}

#[async_trait::async_trait]
impl HttpClient for HyperClient {
    async fn send(&self, request: HttpRequest, max_bytes: usize) -> Result<HttpResponse, String> {
        self.exchange(request, max_bytes, &mut |_| {}).await
    }

    async fn send_streaming(
        &self,
        request: HttpRequest,
        max_bytes: usize,
        on_data: &mut (dyn for<'b> FnMut(&'b [u8]) + Send),
    ) -> Result<HttpResponse, String> {
        self.exchange(request, max_bytes, on_data).await
    }
}

/// `error` and its causes, `: `-separated (hyper's own message alone is "connection error").
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn hint(status: StatusCode) -> &'static str {
    if status.is_client_error() {
        "read the message, correct the arguments and call again"
    } else {
        "the provider failed; try again later, or tell the user"
    }
}
