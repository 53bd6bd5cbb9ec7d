//! Serves a [`Locara`](locara_facade::Locara)'s tools over the Model Context Protocol.
//!
//! [`LocaraMcp`] is an rmcp `ServerHandler`: `tools/list` lists every callable tool (newest
//! version of each id), named by its id, with the manifest's description, input and output
//! schemas and annotations from its safety tier; `tools/call` runs
//! [`Locara::run`](locara_facade::Locara::run), the same pipeline as every other host. A call
//! that could not run and a tool that ran and failed are both tool results with `isError: true`
//! whose text is the error report as JSON, so the model can correct its arguments; only a tool
//! name that is not in the listing is a protocol error. A call whose request carries a
//! `progressToken` runs with
//! [`Locara::run_with_progress`](locara_facade::Locara::run_with_progress), and the tool's
//! progress reports reach the client as `notifications/progress`, all before the result.
//!
//! Two transports: [`serve_stdio`] (newline-delimited JSON-RPC on stdin and stdout; a line that
//! is not a message, over [`MAX_MESSAGE_BYTES`] or nested deeper than [`MAX_JSON_DEPTH`] is
//! answered with a JSON-RPC error and the session goes on) and [`HttpServer`] (streamable HTTP
//! at `/mcp`, on a loopback address unless callers must authenticate, refusing requests whose
//! `Origin` is not the server's own; with auth, each caller's API key or JWT names the app that
//! bounds its calls, and its rate limit and concurrency cap).
//!
//! This crate sits on top of the facade and adds only the protocol mapping and who may use
//! it: it knows nothing of engines, registries or signatures, and enforces nothing about calls
//! itself.
//!
//! ```no_run
//! # async fn demo() -> Result<(), locara_mcp::Error> {
//! use std::sync::Arc;
//!
//! use locara_facade::{Locara, LocaraConfig};
//!
//! let locara = Locara::new(&LocaraConfig::new(".locara"))?;
//! locara_mcp::serve_stdio(Arc::new(locara)).await?;
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

mod backend;
mod error;
mod handler;
mod http;
mod metrics;
mod progress;
mod stdio;

#[cfg(test)]
mod tests;

pub use crate::{
    backend::{McpBackend, tool_id},
    error::Error,
    handler::{LocaraMcp, RUN_PROGRAM, SEARCH_TOOLS},
    http::{
        DEFAULT_HTTP_ADDR, HttpConfig, HttpServer, MCP_PATH, MetricsServer, RESOURCE_METADATA_PATH,
    },
    metrics::Metrics,
    stdio::{MAX_JSON_DEPTH, MAX_MESSAGE_BYTES},
};

/// Serves a Locara's tools (an `Arc<Locara>` or a configured [`LocaraMcp`]) over stdio until
/// the client closes stdin.
///
/// Stdout carries the protocol only: log to stderr. A line that is not a JSON-RPC message
/// (not UTF-8, not JSON, nested deeper than [`MAX_JSON_DEPTH`], longer than
/// [`MAX_MESSAGE_BYTES`], or JSON of the wrong shape) is answered with a JSON-RPC error
/// response (`-32700`, `-32600` or `-32602`; with the request's `id` when it can be read, else
/// `null`), and the session goes on.
///
/// # Errors
/// When the MCP handshake fails or the session ends abnormally.
pub async fn serve_stdio(server: impl Into<LocaraMcp>) -> Result<(), Error> {
    stdio::serve_lines(server.into(), tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves a Locara's tools (an `Arc<Locara>` or a configured [`LocaraMcp`]) over streamable HTTP at `http://ADDR/mcp` until the task is
/// dropped. To learn the port chosen for port 0, use [`HttpServer::bind`] and
/// [`HttpServer::local_addr`] instead.
///
/// # Errors
/// As [`HttpServer::bind`].
pub async fn serve_http(server: impl Into<LocaraMcp>, config: &HttpConfig) -> Result<(), Error> {
    HttpServer::bind(server, config).await?.run().await;
    Ok(())
}
