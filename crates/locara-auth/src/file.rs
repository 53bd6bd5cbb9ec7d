//! The auth file an operator manages, and the hashed keys read from it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use crate::Error;

/// The auth file: API keys and, optionally, how JWTs are accepted.
///
/// ```json
/// {
///   "keys": [
///     {"id": "team-a", "sha256": "…", "app": "team-a.app.json",
///      "limits": {"max_concurrent": 4, "rate_per_minute": 120}}
///   ],
///   "jwt": {"jwks": "jwks.json", "issuer": "https://auth.example", "audience":
///           "https://locara.example/mcp", "app": "agents.app.json"}
/// }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthFile {
    /// The API keys, by their hashes.
    #[serde(default)]
    pub keys: Vec<KeyEntry>,
    /// JWT bearer tokens, when accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwt: Option<JwtEntry>,
}

/// One API key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyEntry {
    /// The name rate limits, logs and metrics use (never the key).
    pub id: String,
    /// The SHA-256 of the key, in hex.
    pub sha256: String,
    /// The app manifest that bounds every call made with the key.
    pub app: PathBuf,
    /// Its rate limit and concurrency cap.
    #[serde(default)]
    pub limits: Limits,
}

/// How JWT bearer tokens are accepted: signed by a key of the JWKS, from the issuer (when
/// given), for the audience, unexpired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtEntry {
    /// A JWKS file (the authorization server's `jwks_uri` document, saved).
    pub jwks: PathBuf,
    /// The `iss` tokens must carry, if checked; also the authorization server clients are
    /// pointed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The `aud` tokens must carry: this server's MCP endpoint URL.
    pub audience: String,
    /// The app manifest that bounds every call made with such a token.
    pub app: PathBuf,
    /// The rate limit and concurrency cap of each subject (`sub`).
    #[serde(default)]
    pub limits: Limits,
}

/// A caller's rate limit and concurrency cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Requests in flight at once (default 8).
    pub max_concurrent: u32,
    /// Requests a minute, in bursts of up to a sixth of it (default 600).
    pub rate_per_minute: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_concurrent: 8,
            rate_per_minute: 600,
        }
    }
}

impl AuthFile {
    /// Reads `path`.
    ///
    /// # Errors
    /// When it cannot be read or is not an auth file.
    pub fn read(path: &Path) -> Result<AuthFile, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            action: "read",
            path: path.to_owned(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|e| Error::Invalid {
            path: path.to_owned(),
            message: format!("not an auth file: {e}"),
        })
    }

    /// Reads `path`, or an empty file when there is none yet.
    ///
    /// # Errors
    /// As [`AuthFile::read`], except for a missing file.
    pub fn read_or_default(path: &Path) -> Result<AuthFile, Error> {
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(AuthFile::default()),
            _ => AuthFile::read(path),
        }
    }

    /// Writes the file to `path` (through a temporary file renamed over it, readable by its
    /// owner only), so that a crash never leaves half a file.
    ///
    /// # Errors
    /// When it cannot be written.
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        let io = |source| Error::Io {
            action: "write",
            path: path.to_owned(),
            source,
        };
        let mut text = serde_json::to_string_pretty(self).map_err(|e| io(e.into()))?;
        text.push('\n');
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        let temp = path.with_extension("json.tmp");
        {
            use std::io::Write as _;
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create(true).truncate(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options.open(&temp).map_err(io)?;
            file.write_all(text.as_bytes()).map_err(io)?;
            file.sync_all().map_err(io)?;
        }
        std::fs::rename(&temp, path).map_err(io)?;
        if let Some(dir) = dir {
            // The rename is durable once the directory is synced; not every system can.
            let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
        }
        Ok(())
    }
}

/// A key as the server holds it.
#[derive(Debug)]
pub(crate) struct HashedKey {
    pub(crate) id: String,
    hash: [u8; 32],
    pub(crate) app: PathBuf,
    pub(crate) limits: Limits,
}

impl HashedKey {
    pub(crate) fn new(entry: &KeyEntry, dir: &Path) -> Result<HashedKey, String> {
        if entry.id.is_empty() || entry.id.starts_with("jwt:") {
            return Err(format!(
                "the key id `{}` is empty or starts with `jwt:` (reserved for tokens' subjects)",
                entry.id
            ));
        }
        let hash = hex::decode(&entry.sha256)
            .ok()
            .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
            .ok_or_else(|| {
                format!(
                    "the key `{}` has a `sha256` that is not 64 hex digits (the file stores the key's hash, never the key)",
                    entry.id
                )
            })?;
        check_limits(&entry.limits, &entry.id)?;
        Ok(HashedKey {
            id: entry.id.clone(),
            hash,
            app: dir.join(&entry.app),
            limits: entry.limits,
        })
    }
}

pub(crate) fn check_limits(limits: &Limits, who: &str) -> Result<(), String> {
    if limits.max_concurrent == 0 || limits.rate_per_minute == 0 {
        return Err(format!(
            "`{who}` has a limit of 0, which would refuse every call: remove the key instead"
        ));
    }
    Ok(())
}

/// The hex SHA-256 of a key, as the file stores it.
pub(crate) fn hash(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// The key whose hash is `token`'s: every stored hash is compared, in constant time.
pub(crate) fn find<'k>(keys: &'k [HashedKey], token: &str) -> Option<&'k HashedKey> {
    let hash: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    let mut found = None;
    for key in keys {
        if bool::from(key.hash.ct_eq(&hash)) {
            found = Some(key);
        }
    }
    found
}
