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
//! `output_bytes` of a response, and speaks plain HTTP/1.1: an `https` URL is refused when the
//! manifest is read, since this build has no TLS.

#![forbid(unsafe_code)]

use std::sync::Arc;

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::{Request, StatusCode, Uri, body::Bytes, header};
use hyper_util::rt::TokioIo;
use locara_facade::{HandlerError, HostTool, ToolHandler, ToolManifest};
use locara_manifest::NetAccess;
use serde::Deserialize;
use serde_json::Value;

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

/// Reads a provider manifest (a tool manifest template with an `endpoint`) and makes its tool.
///
/// # Errors
/// [`Error::Manifest`] for a manifest that does not parse or validate, and [`Error::Endpoint`]
/// for a URL that is not `http://host[:port]/path`.
pub fn provider(manifest_json: &str) -> Result<HostTool, Error> {
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
    let url: Uri = endpoint.url.parse().map_err(|e| Error::Endpoint {
        url: endpoint.url.clone(),
        reason: format!("{e}"),
    })?;
    let bad = |reason: &str| Error::Endpoint {
        url: endpoint.url.clone(),
        reason: reason.to_owned(),
    };
    match url.scheme_str() {
        Some("http") => {}
        Some("https") => {
            return Err(bad(
                "https needs TLS, which this build does not have; use an http endpoint on a trusted network, e.g. loopback",
            ));
        }
        _ => return Err(bad("the scheme must be http")),
    }
    let host = url.host().ok_or_else(|| bad("it has no host"))?.to_owned();
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
        url,
        host,
        max_bytes: usize::try_from(max_bytes).unwrap_or(usize::MAX),
    });
    HostTool::new(manifest, handler).map_err(|e| Error::Manifest(e.to_string()))
}

/// POSTs each call to the endpoint.
#[derive(Debug)]
struct HttpHandler {
    url: Uri,
    host: String,
    max_bytes: usize,
}

#[async_trait::async_trait]
impl ToolHandler for HttpHandler {
    async fn call(&self, arguments: Value) -> Result<Value, HandlerError> {
        let unreachable = |e: &dyn std::fmt::Display| {
            HandlerError::new(
                format!("the endpoint {} could not be reached: {e}", self.url),
                "the provider may be down; try again later, or tell the user",
            )
        };
        let port = self.url.port_u16().unwrap_or(80);
        let stream = tokio::net::TcpStream::connect((self.host.as_str(), port))
            .await
            .map_err(|e| unreachable(&e))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| unreachable(&e))?;
        // The connection is driven by its own task, which ends with the call (dropping the
        // sender closes it); an aborted call aborts the handler and drops both.
        tokio::spawn(connection);
        let body = serde_json::to_vec(&arguments).unwrap_or_default();
        let path = self
            .url
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        let authority = self
            .url
            .authority()
            .map_or(self.host.clone(), |a| a.to_string());
        let request = Request::post(path)
            .header(header::HOST, authority)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| unreachable(&e))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| unreachable(&e))?;
        let status = response.status();
        let location = response
            .headers()
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = Limited::new(response.into_body(), self.max_bytes)
            .collect()
            .await
            .map_err(|e| {
                HandlerError::new(
                    format!(
                        "the endpoint {}'s response is larger than the tool's output limit ({} bytes): {e}",
                        self.url, self.max_bytes
                    ),
                    "ask for less at once: narrow the request or split it into smaller calls",
                )
            })?
            .to_bytes();
        if status.is_redirection() {
            return Err(HandlerError::new(
                format!(
                    "the endpoint {} answered {status} to {}; providers do not follow redirects",
                    self.url,
                    location.as_deref().unwrap_or("an unnamed location")
                ),
                "the provider's manifest names an outdated URL; tell the user",
            ));
        }
        if !status.is_success() {
            let text: String = String::from_utf8_lossy(&bytes).chars().take(500).collect();
            return Err(HandlerError::new(
                format!(
                    "the endpoint {} answered {status}: {}",
                    self.url,
                    text.trim()
                ),
                hint(status),
            ));
        }
        serde_json::from_slice(&bytes).map_err(|e| {
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

fn hint(status: StatusCode) -> &'static str {
    if status.is_client_error() {
        "read the message, correct the arguments and call again"
    } else {
        "the provider failed; try again later, or tell the user"
    }
}
