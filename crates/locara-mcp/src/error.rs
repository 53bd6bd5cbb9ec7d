//! The crate's one error: why a server could not start or ended abnormally.

use std::{io, net::SocketAddr};

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The Locara could not be opened.
    #[error(transparent)]
    Locara(#[from] locara_facade::Error),
    /// A non-loopback address without auth or remote access allowed.
    #[error(
        "refusing to listen on {addr}: it is not a loopback address, and anyone who can reach it could run tools; require authentication (API keys or JWTs) to listen there"
    )]
    NotLoopback {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The address could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Accepting connections failed.
    #[error("cannot accept connections")]
    Accept(#[source] io::Error),
    /// The server was configured in a way that cannot work.
    #[error("{0}")]
    Config(String),
    /// An MCP server's tools cannot be Locara tools (a bad name or schema).
    #[error("invalid mcp backend {0}")]
    InvalidBackend(String),
    /// The MCP session failed (handshake, transport).
    #[error("mcp session failed: {0}")]
    Protocol(String),
}
