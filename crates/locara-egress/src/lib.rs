//! Outbound connections for Locara: every socket the host opens to reach the world.
//!
//! A [`Connector`] turns an `http`/`https` URL into a connected [`Stream`]. It knows three
//! things. **TLS**: rustls on ring (no OpenSSL), the system's root store (`/etc/ssl/certs`,
//! read by `rustls-native-certs` on the first `https` connection) plus any private CAs the app
//! adds, host-name verification always on, ALPN offering HTTP/2 and HTTP/1.1, and failures
//! explained in words a person can act on ([`tls_failure`]). **Addresses**: a host name is
//! resolved once ([`Resolve`]), every address is checked against an [`AddressPolicy`] (a
//! tool's request may reach a loopback, private, link-local, unique-local, shared or
//! cloud-metadata address only when its grants name that address or a range holding it), and
//! the connection goes to exactly an address that passed: there is no second resolution for
//! DNS rebinding to answer. **Proxies**: `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY`/`NO_PROXY`, as
//! curl reads them; through a proxy the connector opens a `CONNECT` tunnel to the checked
//! address and port (never to the name, which the proxy would resolve again), so a proxy
//! reaches nothing the policy refused.
//!
//! It deliberately knows nothing of HTTP beyond `CONNECT`, of tools, grants' syntax (that is
//! `locara-manifest`'s `NetAccess`) or redirects: the caller speaks HTTP over the stream and
//! checks each redirect's URL, then connects again through here.

#![forbid(unsafe_code)]

mod address;
mod connect;
mod stream;
mod tls;

pub use address::{AddressPolicy, non_public};
pub use connect::{Connection, Connector, Resolve, SystemResolver};
pub use stream::Stream;
pub use tls::tls_failure;

/// Why no connection was made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The URL cannot be connected to (its scheme, or it has no host).
    #[error("`{url}` {reason}")]
    Url {
        /// The URL.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The host name did not resolve.
    #[error("could not resolve `{host}`: {reason}")]
    Resolve {
        /// The host name.
        host: String,
        /// The resolver's answer.
        reason: String,
    },
    /// Every address of the host is one the policy refuses.
    #[error("{0}")]
    Refused(String),
    /// No address answered.
    #[error("could not connect to `{host}` ({address}): {reason}")]
    Connect {
        /// The host of the URL.
        host: String,
        /// The last address tried.
        address: std::net::SocketAddr,
        /// Why.
        reason: String,
    },
    /// The proxy could not be used, or refused the tunnel.
    #[error("{0}")]
    Proxy(String),
    /// The TLS handshake failed; the message says why and what to do.
    #[error("{0}")]
    Tls(String),
    /// The TLS set-up cannot be built (no roots, an unreadable or invalid CA file).
    #[error("{0}")]
    Config(String),
}
