//! The TLS client set-up, and TLS failures in words a person can act on.

use std::{
    io,
    path::Path,
    sync::{Arc, OnceLock},
};

use rustls::{
    AlertDescription, CertificateError, ClientConfig, RootCertStore,
    pki_types::{CertificateDer, UnixTime, pem::PemObject as _},
};

use crate::Error;

/// The roots a connector trusts, and the client set-up made from them on first use.
#[derive(Debug)]
pub(crate) struct Tls {
    /// Whether the system's roots are trusted (they are, unless a test says otherwise).
    system: bool,
    /// The app's own CAs (`--ca-cert`).
    extra: Vec<CertificateDer<'static>>,
    /// Built on the first `https` connection: reading the system store costs tens of
    /// milliseconds that a run without https should not pay.
    config: OnceLock<Result<Arc<ClientConfig>, String>>,
}

impl Tls {
    pub(crate) fn new(system: bool, extra: Vec<CertificateDer<'static>>) -> Tls {
        Tls {
            system,
            extra,
            config: OnceLock::new(),
        }
    }

    pub(crate) fn system(&self) -> bool {
        self.system
    }

    pub(crate) fn extra_roots(&self) -> Vec<CertificateDer<'static>> {
        self.extra.clone()
    }

    pub(crate) fn config(&self) -> Result<Arc<ClientConfig>, Error> {
        self.config
            .get_or_init(|| self.build().map(Arc::new))
            .clone()
            .map_err(Error::Config)
    }

    fn build(&self) -> Result<ClientConfig, String> {
        let mut roots = RootCertStore::empty();
        let mut system_errors = Vec::new();
        if self.system {
            let found = rustls_native_certs::load_native_certs();
            system_errors = found.errors.iter().map(ToString::to_string).collect();
            // A system store may hold a few certificates webpki cannot parse; the rest serve.
            roots.add_parsable_certificates(found.certs);
        }
        // The app's CAs were checked as trust anchors when they were given (`pem_certificates`).
        roots.add_parsable_certificates(self.extra.iter().cloned());
        if roots.is_empty() {
            let mut message = "no trusted certificate authorities: the system's store \
                               (/etc/ssl/certs, or $SSL_CERT_FILE / $SSL_CERT_DIR) holds none \
                               (on Debian, install the `ca-certificates` package) and no CA \
                               was given (`--ca-cert FILE`, `LocaraConfig::with_ca_cert`)"
                .to_owned();
            if !system_errors.is_empty() {
                message.push_str(&format!(
                    "; reading the store: {}",
                    system_errors.join("; ")
                ));
            }
            return Err(message);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("the TLS set-up cannot be built: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(config)
    }
}

/// The certificates of a PEM file (`-----BEGIN CERTIFICATE-----` blocks), for trusting a
/// private CA.
pub(crate) fn read_pem(path: &Path) -> Result<Vec<CertificateDer<'static>>, Error> {
    let bytes = std::fs::read(path).map_err(|e| {
        Error::Config(format!(
            "the CA file {} cannot be read: {e}",
            path.display()
        ))
    })?;
    pem_certificates(&bytes, &path.display().to_string())
}

/// The certificates of PEM text; `what` names it in errors.
pub(crate) fn pem_certificates(
    pem: &[u8],
    what: &str,
) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Config(format!("the CA file {what} is not valid PEM: {e}")))?;
    if certs.is_empty() {
        return Err(Error::Config(format!(
            "the CA file {what} holds no certificate (`-----BEGIN CERTIFICATE-----` blocks)"
        )));
    }
    // Checked now, so that a bad file fails when the app starts, not at its first https request.
    for (i, cert) in certs.iter().enumerate() {
        RootCertStore::empty().add(cert.clone()).map_err(|e| {
            Error::Config(format!(
                "certificate {} of the CA file {what} cannot be a trust anchor: {e}",
                i + 1
            ))
        })?;
    }
    Ok(certs)
}

/// Says why a TLS handshake with `host` failed, and what to do about it: an unknown issuer
/// (and how to add a CA), a name the certificate does not list, an expired certificate, an
/// alert from the server.
pub fn tls_failure(host: &str, error: &io::Error) -> String {
    let Some(tls) = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    else {
        return format!("the TLS handshake with `{host}` failed: {error}");
    };
    match tls {
        rustls::Error::InvalidCertificate(certificate) => certificate_failure(host, certificate),
        rustls::Error::AlertReceived(alert) => {
            let why = match alert {
                AlertDescription::NoApplicationProtocol => {
                    "it speaks neither HTTP/2 nor HTTP/1.1 over TLS (ALPN)"
                }
                AlertDescription::CertificateRequired | AlertDescription::BadCertificate => {
                    "it wants a client certificate, which Locara does not send"
                }
                AlertDescription::ProtocolVersion | AlertDescription::HandshakeFailure => {
                    "it supports none of the TLS versions and ciphers offered (TLS 1.2 and 1.3 \
                     with modern ciphers)"
                }
                _ => "it refused the connection",
            };
            format!("the server `{host}` ended the TLS handshake with the alert `{alert:?}`: {why}")
        }
        rustls::Error::NoApplicationProtocol => {
            format!("the server `{host}` speaks neither HTTP/2 nor HTTP/1.1 over TLS (ALPN)")
        }
        other => format!("the TLS handshake with `{host}` failed: {other}"),
    }
}

fn certificate_failure(host: &str, certificate: &CertificateError) -> String {
    match certificate {
        CertificateError::UnknownIssuer => format!(
            "the certificate of `{host}` was issued by a certificate authority this host does \
             not trust (unknown issuer). If the server uses a private CA, give its certificate \
             (PEM) with `--ca-cert FILE` (`LocaraConfig::with_ca_cert` in an app); if it is a \
             public site, the server may not be sending its intermediate certificates"
        ),
        CertificateError::NotValidForName => format!(
            "the certificate of `{host}` is not valid for the name `{host}` (name mismatch); \
             use the name the certificate is issued for"
        ),
        CertificateError::NotValidForNameContext { presented, .. } => format!(
            "the certificate of `{host}` is not valid for the name `{host}` (name mismatch): it \
             is issued for {}; use one of those names",
            if presented.is_empty() {
                "no name".to_owned()
            } else {
                presented
                    .iter()
                    .map(|name| plain_name(name))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
        CertificateError::Expired => format!(
            "the certificate of `{host}` has expired; the server must renew it (or this host's \
             clock is wrong)"
        ),
        CertificateError::ExpiredContext { time, not_after } => format!(
            "the certificate of `{host}` expired on {} (it is now {}); the server must renew it \
             (or this host's clock is wrong)",
            date(*not_after),
            date(*time)
        ),
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            format!("the certificate of `{host}` is not valid yet; this host's clock may be wrong")
        }
        CertificateError::Revoked => format!("the certificate of `{host}` has been revoked"),
        other => format!("the certificate of `{host}` was refused: {other:?}"),
    }
}

/// A presented name as rustls spells it (`DnsName("example.com")`, `IpAddress(…)`) without the
/// kind: `example.com`.
fn plain_name(presented: &str) -> &str {
    presented
        .split_once("(\"")
        .and_then(|(_, rest)| rest.strip_suffix("\")"))
        .unwrap_or(presented)
}

/// `time` as RFC 3339 in UTC, e.g. `2021-01-01T00:00:00Z`.
fn date(time: UnixTime) -> String {
    locara_manifest::rfc3339_utc(
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(time.as_secs()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presented_names_lose_their_kind() {
        assert_eq!(plain_name("DnsName(\"other.test\")"), "other.test");
        assert_eq!(plain_name("203.0.113.9"), "203.0.113.9");
    }

    #[test]
    fn a_ca_file_without_certificates_is_refused() {
        let error = pem_certificates(b"not pem at all", "ca.pem").unwrap_err();
        assert!(
            error.to_string().contains("holds no certificate"),
            "{error}"
        );
    }
}
