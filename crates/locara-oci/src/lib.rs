//! Locara's signed tools as OCI artifacts, in any registry that speaks the OCI distribution
//! protocol (Docker's distribution registry, Harbor, GHCR, ECR, Zot…).
//!
//! It knows where a tool lives in a registry ([`Location`]: `oci://HOST[:PORT]/NAMESPACE`
//! holds `id@version` as the repository `NAMESPACE/id` at the tag `version`), the artifact's
//! layout (three layers, the exact bytes of `manifest.json`, `manifest.sig.json` and the wasm
//! module, each with its own media type, under an artifact type of its own), and how to move
//! those bytes: [`Client::push`], [`Client::pull`] (each blob's digest checked by
//! `oci-client`, each size bounded before it is read), and [`fetch_artifact`] for a manifest
//! whose `artifact.url` is an `https` URL. It deliberately knows nothing of trust: what it
//! pulls is untrusted bytes, and only `locara-registry`'s `Registry::verify_files` and
//! `Registry::install` (signature, hashes, lockfile) say what they are, so nothing pulled is
//! written anywhere before that. Nor does it cache blobs, or know tools, sandboxes or apps.

#![forbid(unsafe_code)]

use std::{collections::BTreeMap, fmt, str::FromStr};

use locara_manifest::{ToolName, Version};
use locara_registry::{ReadLimit, ToolFiles};
use oci_client::{
    Reference,
    client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol, Config, ImageLayer},
    errors::OciDistributionError,
    manifest::{OciDescriptor, OciImageManifest},
    secrets::RegistryAuth,
};

/// The artifact type of a Locara tool (the OCI manifest's `artifactType`).
pub const ARTIFACT_TYPE: &str = "application/vnd.locara.tool.v1";
/// The config blob's media type: `{"id": …, "version": …}`.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.locara.tool.config.v1+json";
/// The layer holding `manifest.json`'s exact bytes.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.locara.tool.manifest.v1+json";
/// The layer holding `manifest.sig.json`.
pub const SIGNATURE_MEDIA_TYPE: &str = "application/vnd.locara.tool.signature.v1+json";
/// The layer holding the wasm module (the media type of the CNCF Wasm OCI artifact layout).
pub const WASM_MEDIA_TYPE: &str = "application/wasm";

const TITLE: &str = "org.opencontainers.image.title";

/// What can go wrong moving a tool to or from a registry. Every message names the reference and
/// says what to check.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Not an `oci://HOST[:PORT]/NAMESPACE` location.
    #[error(
        "invalid OCI location `{input}`: {why}; write it as oci://HOST[:PORT]/NAMESPACE, e.g. oci://registry.example.com/locara-tools"
    )]
    Location {
        /// What was given.
        input: String,
        /// What is wrong with it.
        why: String,
    },
    /// The registry could not be reached or refused the request.
    #[error("{action} {reference}: {message}")]
    Registry {
        /// `cannot push` or `cannot pull`.
        action: &'static str,
        /// The OCI reference, `HOST/NAMESPACE/ID:TAG`.
        reference: String,
        /// What failed, and what to check.
        message: String,
    },
    /// What is at the reference is not a Locara tool as [`Client::push`] lays one out.
    #[error("{reference} is not a Locara tool: {why}")]
    NotATool {
        /// The OCI reference.
        reference: String,
        /// What is missing or wrong.
        why: String,
    },
    /// A blob is larger than such a file may be.
    #[error(
        "{reference}: its {what} is {size} bytes, more than the {limit} bytes such a file may have; refusing to download it"
    )]
    TooLarge {
        /// The OCI reference or URL.
        reference: String,
        /// The file, e.g. `manifest`.
        what: &'static str,
        /// Its declared size.
        size: u64,
        /// The most allowed.
        limit: u64,
    },
    /// The artifact's URL cannot be fetched.
    #[error("cannot fetch the artifact {url}: {message}")]
    Fetch {
        /// The `artifact.url`.
        url: String,
        /// What failed, and what to check.
        message: String,
    },
    /// The HTTP client cannot be set up (a CA file that is not PEM…).
    #[error("cannot set up the OCI client: {0}")]
    Setup(String),
}

/// Where tools live in an OCI registry: `oci://HOST[:PORT]/NAMESPACE`. The tool `id@version`
/// is the repository `NAMESPACE/id` at the tag `version` (with `+` written `_`, as tags cannot
/// hold `+`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    registry: String,
    namespace: String,
}

impl FromStr for Location {
    type Err = Error;

    fn from_str(input: &str) -> Result<Location, Error> {
        let invalid = |why: &str| Error::Location {
            input: input.to_owned(),
            why: why.to_owned(),
        };
        let rest = input
            .strip_prefix("oci://")
            .ok_or_else(|| invalid("it does not start with oci://"))?;
        let (registry, namespace) = rest.split_once('/').unwrap_or((rest, ""));
        let namespace = namespace.trim_end_matches('/');
        if registry.is_empty() {
            return Err(invalid("it names no registry host"));
        }
        if registry.contains(['@', '?', '#']) {
            return Err(invalid(
                "the host may not hold credentials, a query or a fragment (set LOCARA_OCI_USERNAME and LOCARA_OCI_PASSWORD for credentials)",
            ));
        }
        if namespace.split('/').any(|part| {
            !namespace.is_empty()
                && (part.is_empty()
                    || !part.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b)
                    }))
        }) {
            return Err(invalid(
                "a namespace is path components of lowercase letters, digits, `.`, `_` and `-`",
            ));
        }
        Ok(Location {
            registry: registry.to_owned(),
            namespace: namespace.to_owned(),
        })
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "oci://{}/{}", self.registry, self.namespace)
    }
}

impl Location {
    /// The registry's host and port.
    #[must_use]
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The OCI reference of `id@version` here.
    ///
    /// # Errors
    ///
    /// [`Error::Location`] when the id or version cannot be an OCI repository or tag.
    pub fn reference(&self, id: &ToolName, version: &Version) -> Result<Reference, Error> {
        let repository = if self.namespace.is_empty() {
            id.to_string()
        } else {
            format!("{}/{id}", self.namespace)
        };
        let tag = version.to_string().replace('+', "_");
        let text = format!("{}/{repository}:{tag}", self.registry);
        text.parse::<Reference>().map_err(|e| Error::Location {
            input: format!("{self} ({id}@{version})"),
            why: format!("`{text}` is not an OCI reference: {e}"),
        })
    }
}

/// How a [`Client`] reaches registries.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ClientOptions {
    /// Speak plain HTTP instead of HTTPS (a registry on loopback or a private network without
    /// TLS, like `docker --insecure-registry` or `oras --plain-http`).
    pub plain_http: bool,
    /// Certificate authorities (PEM) to trust besides the system's.
    pub ca_pem: Vec<Vec<u8>>,
    /// A user name and password (or token) for the registry; anonymous without.
    pub credentials: Option<(String, String)>,
}

/// A tool pulled from a registry: untrusted bytes until `locara-registry` verified them.
#[derive(Debug)]
#[non_exhaustive]
pub struct Pulled {
    /// The OCI reference pulled.
    pub reference: String,
    /// The OCI manifest's digest (`sha256:…`).
    pub digest: String,
    /// `manifest.json` and `manifest.sig.json`, and the wasm when the artifact holds it
    /// (`wasm` is empty when `wasm_included` is false).
    pub files: ToolFiles,
    /// Whether the artifact held the wasm layer; without it the manifest's `artifact.url`
    /// says where the module is.
    pub wasm_included: bool,
}

/// A tool pushed to a registry.
#[derive(Debug)]
#[non_exhaustive]
pub struct Pushed {
    /// The OCI reference, `HOST/NAMESPACE/ID:TAG`.
    pub reference: String,
    /// The URL of the pushed OCI manifest.
    pub manifest_url: String,
}

/// An OCI distribution client for Locara tools.
#[derive(Clone)]
pub struct Client {
    inner: oci_client::Client,
    auth: RegistryAuth,
    plain_http: bool,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("plain_http", &self.plain_http)
            .field(
                "auth",
                &match self.auth {
                    RegistryAuth::Anonymous => "anonymous",
                    _ => "credentials",
                },
            )
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client with these options.
    ///
    /// # Errors
    ///
    /// [`Error::Setup`] when a CA is not PEM.
    pub fn new(options: ClientOptions) -> Result<Client, Error> {
        // reqwest, built without a crypto provider of its own, asks for the process's default:
        // make ring (the one locara-egress uses) the default unless the app already chose one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        for pem in &options.ca_pem {
            reqwest::Certificate::from_pem(pem)
                .map_err(|e| Error::Setup(format!("a CA certificate is not PEM: {e}")))?;
        }
        let config = ClientConfig {
            protocol: if options.plain_http {
                ClientProtocol::Http
            } else {
                ClientProtocol::Https
            },
            extra_root_certificates: options
                .ca_pem
                .iter()
                .map(|pem| Certificate {
                    encoding: CertificateEncoding::Pem,
                    data: pem.clone(),
                })
                .collect(),
            platform_resolver: None,
            connect_timeout: Some(std::time::Duration::from_secs(10)),
            read_timeout: Some(std::time::Duration::from_secs(60)),
            user_agent: concat!("locara/", env!("CARGO_PKG_VERSION")),
            ..ClientConfig::default()
        };
        let auth = match options.credentials {
            Some((user, password)) => RegistryAuth::Basic(user, password),
            None => RegistryAuth::Anonymous,
        };
        Ok(Client {
            inner: oci_client::Client::new(config),
            auth,
            plain_http: options.plain_http,
        })
    }

    /// Pushes a tool's files to `at` as `id@version`: the three layers, a config naming the
    /// tool, and the OCI manifest, tagged with the version. Pushing the same files again is
    /// harmless (blobs are content-addressed); other files under the same tag replace the tag,
    /// which is why pulls verify and installs refuse a changed version.
    ///
    /// # Errors
    ///
    /// [`Error::Registry`] when the registry cannot be reached or refuses the push.
    pub async fn push(
        &self,
        at: &Location,
        id: &ToolName,
        version: &Version,
        files: &ToolFiles,
    ) -> Result<Pushed, Error> {
        let reference = at.reference(id, version)?;
        let layers = [
            layer(&files.manifest, MANIFEST_MEDIA_TYPE, "manifest.json"),
            layer(&files.signature, SIGNATURE_MEDIA_TYPE, "manifest.sig.json"),
            layer(
                &files.wasm,
                WASM_MEDIA_TYPE,
                &format!("{id}-{version}.wasm"),
            ),
        ];
        let config = Config::new(
            format!(r#"{{"id":"{id}","version":"{version}"}}"#).into_bytes(),
            CONFIG_MEDIA_TYPE.to_owned(),
            None,
        );
        let mut manifest = OciImageManifest::build(&layers, &config, None);
        manifest.artifact_type = Some(ARTIFACT_TYPE.to_owned());
        let pushed = self
            .inner
            .push(&reference, &layers, config, &self.auth, Some(manifest))
            .await
            .map_err(|e| self.registry_error("cannot push", &reference, &e))?;
        tracing::info!(%reference, "pushed");
        Ok(Pushed {
            reference: reference.whole(),
            manifest_url: pushed.manifest_url,
        })
    }

    /// Pulls `id@version` from `at`: the OCI manifest, then each of the tool's layers, each
    /// refused before it is read when its declared size is over what such a file may be, and
    /// checked against its digest as it arrives. Layers of other media types are not fetched.
    ///
    /// # Errors
    ///
    /// [`Error::Registry`] when the registry cannot be reached or has no such tag,
    /// [`Error::NotATool`] when the artifact is not laid out as [`Client::push`] lays a tool
    /// out, [`Error::TooLarge`] for an oversized layer.
    pub async fn pull(
        &self,
        at: &Location,
        id: &ToolName,
        version: &Version,
    ) -> Result<Pulled, Error> {
        let reference = at.reference(id, version)?;
        let whole = reference.whole();
        let (manifest, digest) = self
            .inner
            .pull_image_manifest(&reference, &self.auth)
            .await
            .map_err(|e| self.registry_error("cannot pull", &reference, &e))?;
        let not_a_tool = |why: String| Error::NotATool {
            reference: whole.clone(),
            why,
        };
        if manifest.config.media_type != CONFIG_MEDIA_TYPE {
            return Err(not_a_tool(format!(
                "its config is `{}`, not `{CONFIG_MEDIA_TYPE}` (an image, or another kind of artifact?)",
                manifest.config.media_type
            )));
        }
        let find = |media_type: &str| -> Result<Option<&OciDescriptor>, Error> {
            let mut found = manifest
                .layers
                .iter()
                .filter(|l| l.media_type == media_type);
            let first = found.next();
            if found.next().is_some() {
                return Err(not_a_tool(format!(
                    "it has more than one `{media_type}` layer"
                )));
            }
            Ok(first)
        };
        let manifest_layer = find(MANIFEST_MEDIA_TYPE)?
            .ok_or_else(|| not_a_tool("it has no manifest.json layer".to_owned()))?;
        let signature_layer = find(SIGNATURE_MEDIA_TYPE)?.ok_or_else(|| {
            not_a_tool("it has no manifest.sig.json layer: the tool is unsigned".to_owned())
        })?;
        let wasm_layer = find(WASM_MEDIA_TYPE)?;
        let manifest_bytes = self
            .blob(&reference, manifest_layer, "manifest", ReadLimit::MANIFEST)
            .await?;
        let signature = self
            .blob(
                &reference,
                signature_layer,
                "signature",
                ReadLimit::SIGNATURE_FILE,
            )
            .await?;
        let wasm = match wasm_layer {
            Some(layer) => Some(
                self.blob(&reference, layer, "wasm module", ReadLimit::ARTIFACT)
                    .await?,
            ),
            None => None,
        };
        tracing::info!(reference = %whole, %digest, "pulled");
        Ok(Pulled {
            reference: whole,
            digest,
            wasm_included: wasm.is_some(),
            files: ToolFiles::new(manifest_bytes, signature, wasm.unwrap_or_default()),
        })
    }

    /// One layer's bytes, refused before reading when its declared size is over `limit`;
    /// `oci-client` checks the digest (and so the length) as it arrives.
    async fn blob(
        &self,
        reference: &Reference,
        layer: &OciDescriptor,
        what: &'static str,
        limit: ReadLimit,
    ) -> Result<Vec<u8>, Error> {
        let size = u64::try_from(layer.size).unwrap_or(u64::MAX);
        if size > limit.max_bytes() {
            return Err(Error::TooLarge {
                reference: reference.whole(),
                what,
                size,
                limit: limit.max_bytes(),
            });
        }
        let mut out = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        self.inner
            .pull_blob(reference, layer, Bounded::new(&mut out, size))
            .await
            .map_err(|e| self.registry_error("cannot pull", reference, &e))?;
        Ok(out)
    }

    fn registry_error(
        &self,
        action: &'static str,
        reference: &Reference,
        error: &OciDistributionError,
    ) -> Error {
        let host = reference.resolve_registry();
        let message = match error {
            OciDistributionError::RequestError(e) if e.is_connect() || e.is_timeout() => {
                let mut message = format!("cannot reach {host}: {}", error_chain(e));
                if self.plain_http {
                    message.push_str("; is the registry running there?");
                } else {
                    message.push_str(
                        "; is the registry running there, and does it speak HTTPS with a certificate this machine trusts? (--ca-file adds a CA; a registry without TLS needs --plain-http)",
                    );
                }
                message
            }
            OciDistributionError::RequestError(e) => error_chain(e),
            OciDistributionError::ImageManifestNotFoundError(_) => {
                "the registry has no such tag; push it first (`locara push`), or check the id, version and namespace".to_owned()
            }
            OciDistributionError::RegistryError { envelope, .. }
                if envelope.errors.iter().any(|e| {
                    matches!(
                        e.code,
                        oci_client::errors::OciErrorCode::ManifestUnknown
                            | oci_client::errors::OciErrorCode::NameUnknown
                    )
                }) =>
            {
                "the registry has no such tool or version; push it first (`locara push`), or check the id, version and namespace".to_owned()
            }
            OciDistributionError::UnauthorizedError { .. }
            | OciDistributionError::AuthenticationFailure(_) => format!(
                "{host} refused the credentials ({error}); set LOCARA_OCI_USERNAME and LOCARA_OCI_PASSWORD to an account that may {}",
                if action == "cannot push" { "push" } else { "pull" }
            ),
            OciDistributionError::DigestError(e) => format!(
                "a blob does not match its digest ({e}): the registry's storage is corrupt or was tampered with; nothing was installed"
            ),
            other => other.to_string(),
        };
        Error::Registry {
            action,
            reference: reference.whole(),
            message,
        }
    }
}

fn layer(bytes: &[u8], media_type: &str, title: &str) -> ImageLayer {
    ImageLayer::new(
        bytes.to_vec(),
        media_type.to_owned(),
        Some(BTreeMap::from([(TITLE.to_owned(), title.to_owned())])),
    )
}

/// An error and its sources, `: `-joined (reqwest's own message is only "error sending request").
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// A writer that takes at most `limit` bytes: a registry that sends more than the descriptor
/// says is cut off, whatever its digest would have said.
struct Bounded<'a> {
    out: &'a mut Vec<u8>,
    limit: u64,
}

impl<'a> Bounded<'a> {
    fn new(out: &'a mut Vec<u8>, limit: u64) -> Bounded<'a> {
        Bounded { out, limit }
    }
}

impl tokio::io::AsyncWrite for Bounded<'_> {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if this.out.len() as u64 + buf.len() as u64 > this.limit {
            return std::task::Poll::Ready(Err(std::io::Error::other(format!(
                "the registry sent more than the {} bytes the layer declares",
                this.limit
            ))));
        }
        this.out.extend_from_slice(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// Fetches a wasm module from a manifest's `artifact.url`, which must be `https`, reading at
/// most `max_bytes` (the size the manifest declares). `tls` is the TLS set-up to use (a
/// `locara-egress` connector's, so private CAs and the system's roots are the same as for
/// every other outbound connection). Redirects are followed to `https` URLs only. The bytes
/// are as untrusted as a pull's until verified against the signed manifest.
///
/// # Errors
///
/// [`Error::Fetch`] for a URL that is not `https`, a failed request, a status other than 200,
/// and a body longer than `max_bytes`.
pub async fn fetch_artifact(
    url: &str,
    tls: rustls::ClientConfig,
    max_bytes: u64,
) -> Result<Vec<u8>, Error> {
    let fail = |message: String| Error::Fetch {
        url: url.to_owned(),
        message,
    };
    let parsed = url::Url::parse(url).map_err(|e| fail(format!("not a URL: {e}")))?;
    if parsed.scheme() != "https" {
        return Err(fail(
            "an artifact is fetched over https only (its bytes are checked against the signed manifest, but the request should not be readable or alterable on the way)".to_owned(),
        ));
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .https_only(true)
        .connect_timeout(std::time::Duration::from_secs(10))
        .timeout(std::time::Duration::from_secs(300))
        .user_agent(concat!("locara/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| fail(format!("the HTTP client cannot be built: {e}")))?;
    let mut response = client
        .get(parsed)
        .send()
        .await
        .map_err(|e| fail(error_chain(&e)))?;
    if response.status() != reqwest::StatusCode::OK {
        return Err(fail(format!("the server answered {}", response.status())));
    }
    if let Some(length) = response.content_length()
        && length > max_bytes
    {
        return Err(fail(format!(
            "the server sends {length} bytes, but the manifest pins {max_bytes}"
        )));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| fail(error_chain(&e)))? {
        if body.len() as u64 + chunk.len() as u64 > max_bytes {
            return Err(fail(format!(
                "the server sent more than the {max_bytes} bytes the manifest pins"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_and_name_references() {
        let at: Location = "oci://127.0.0.1:5000/team/tools".parse().unwrap();
        let reference = at
            .reference(
                &"text.chunk".parse().unwrap(),
                &"1.2.0+build.5".parse().unwrap(),
            )
            .unwrap();
        assert_eq!(
            reference.whole(),
            "127.0.0.1:5000/team/tools/text.chunk:1.2.0_build.5"
        );
        let bare: Location = "oci://ghcr.io".parse().unwrap();
        let reference = bare
            .reference(&"ocr".parse().unwrap(), &"0.1.0".parse().unwrap())
            .unwrap();
        assert_eq!(reference.whole(), "ghcr.io/ocr:0.1.0");
        for (input, why) in [
            ("https://ghcr.io/x", "does not start with oci://"),
            ("oci:///x", "names no registry host"),
            ("oci://user:pw@ghcr.io/x", "credentials"),
            ("oci://ghcr.io/Team", "lowercase"),
            ("oci://ghcr.io/a//b", "lowercase"),
        ] {
            let error = input.parse::<Location>().unwrap_err().to_string();
            assert!(error.contains(why), "{input}: {error}");
        }
    }
}
