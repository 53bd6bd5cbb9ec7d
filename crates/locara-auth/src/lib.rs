//! Who may call a Locara server, with which app, and how often.
//!
//! An operator's auth file ([`AuthFile`], JSON) lists API keys, each stored as the SHA-256 of
//! the key (the key itself is shown once, when [`new_key`] makes it) and bound to an app
//! manifest whose tools and grants bound every call made with it, with a concurrency cap and a
//! rate limit; and, optionally, how to accept JWT bearer tokens from an OAuth 2.1 authorization
//! server the operator already runs (a JWKS file, the issuer, the audience, and the app such
//! callers get). [`Auth::authenticate`] turns an `Authorization` header into a [`Principal`]
//! or a [`Refusal`] whose text says what to fix; [`Auth::admit`] applies the caller's rate
//! limit and concurrency cap, handing back a [`Permit`] held while the request runs.
//!
//! It knows keys, tokens and counters. It deliberately knows nothing of HTTP, MCP, app
//! manifests' contents or tools: a server maps a refusal to its status code and headers, and
//! opens the app a principal names.

#![forbid(unsafe_code)]

mod file;
mod jwt;
mod limit;

use std::{
    path::{Path, PathBuf},
    sync::{Arc, PoisonError, RwLock},
    time::Duration,
};

pub use crate::{
    file::{AuthFile, JwtEntry, KeyEntry, Limits},
    limit::Permit,
};

/// The prefix of every API key [`new_key`] makes; a bearer token without it is taken as a JWT.
pub const KEY_PREFIX: &str = "lk_";

/// What cannot be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read or written.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The auth file or the JWKS is not what it should be.
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, and how to fix it.
        message: String,
    },
    /// The system's random numbers are not available.
    #[error("cannot make a key: {0}")]
    Random(String),
}

/// Who is calling: the key or the token's subject, and the app that bounds their calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The key's id, or `jwt:` and the token's `sub`: what rate limits and logs count by.
    pub id: String,
    /// The app manifest every call is bounded by (absolute, or relative to the working
    /// directory when the auth file's path was).
    pub app: PathBuf,
    limits: Limits,
}

/// Why a request may not go on. Its text says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// No credentials (HTTP 401).
    #[error(
        "this server needs a bearer token: send `Authorization: Bearer <API key or JWT>` (the operator issues keys with `locara keys add`)"
    )]
    Missing,
    /// Credentials that are not valid (HTTP 401, `error="invalid_token"`).
    #[error("{0}")]
    InvalidToken(String),
    /// Over the caller's rate limit (HTTP 429 with `Retry-After`).
    #[error(
        "rate limit reached for `{principal}` ({per_minute} calls a minute): retry in {} s",
        .retry_after.as_secs().max(1)
    )]
    RateLimited {
        /// The caller.
        principal: String,
        /// Its limit.
        per_minute: u32,
        /// When a call will be admitted again.
        retry_after: Duration,
    },
    /// Over the caller's concurrency cap (HTTP 429 with `Retry-After`).
    #[error(
        "`{principal}` already has {max_concurrent} calls in flight, its cap: wait for one to finish"
    )]
    TooManyInFlight {
        /// The caller.
        principal: String,
        /// Its cap.
        max_concurrent: u32,
    },
}

impl Refusal {
    /// The HTTP status a server answers with.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::Missing | Refusal::InvalidToken(_) => 401,
            Refusal::RateLimited { .. } | Refusal::TooManyInFlight { .. } => 429,
        }
    }

    /// The `Retry-After` seconds of a 429.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            Refusal::RateLimited { retry_after, .. } => Some(retry_after.as_secs().max(1)),
            Refusal::TooManyInFlight { .. } => Some(1),
            Refusal::Missing | Refusal::InvalidToken(_) => None,
        }
    }
}

/// The callers a server admits (loaded from an [`AuthFile`]) and their counters.
#[derive(Debug)]
pub struct Auth {
    /// The keys and the JWT set-up, replaced whole by [`Auth::reload`].
    credentials: RwLock<Arc<Credentials>>,
    limiter: limit::Limiter,
}

/// What one reading of the auth file admits.
#[derive(Debug)]
struct Credentials {
    keys: Vec<file::HashedKey>,
    jwt: Option<jwt::JwtAuth>,
}

impl Credentials {
    /// Every app a principal may be bound to, each once, in the file's order.
    fn apps(&self) -> Vec<PathBuf> {
        let mut apps: Vec<PathBuf> = Vec::new();
        let all = self
            .keys
            .iter()
            .map(|k| &k.app)
            .chain(self.jwt.as_ref().map(|j| &j.app));
        for app in all {
            if !apps.contains(app) {
                apps.push(app.clone());
            }
        }
        apps
    }
}

impl Auth {
    /// Loads the auth file at `path` (relative paths in it are relative to its directory)
    /// and the JWKS it names.
    ///
    /// # Errors
    /// When a file cannot be read, or says something invalid (an empty file, a malformed
    /// hash, a duplicate id, a JWKS without keys).
    pub fn load(path: &Path) -> Result<Auth, Error> {
        let file = AuthFile::read(path)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Auth::from_file(&file, dir, path)
    }

    /// An `Auth` from an already read `file`, whose relative paths are relative to `dir`
    /// (`source` names it in errors).
    ///
    /// # Errors
    /// As [`Auth::load`].
    pub fn from_file(file: &AuthFile, dir: &Path, source: &Path) -> Result<Auth, Error> {
        let invalid = |message: String| Error::Invalid {
            path: source.to_owned(),
            message,
        };
        if file.keys.is_empty() && file.jwt.is_none() {
            return Err(invalid(
                "it admits nobody: add a key (`locara keys add ID --app APP --auth FILE`) or a `jwt` section".to_owned(),
            ));
        }
        let mut keys: Vec<file::HashedKey> = Vec::new();
        for entry in &file.keys {
            if keys.iter().any(|k| k.id == entry.id) {
                return Err(invalid(format!("the key id `{}` is used twice", entry.id)));
            }
            keys.push(file::HashedKey::new(entry, dir).map_err(invalid)?);
        }
        let jwt = file
            .jwt
            .as_ref()
            .map(|entry| jwt::JwtAuth::load(entry, dir))
            .transpose()?;
        Ok(Auth {
            credentials: RwLock::new(Arc::new(Credentials { keys, jwt })),
            limiter: limit::Limiter::default(),
        })
    }

    /// Reads the auth file at `path` again and, when it is valid and every app it names is one
    /// `serves` accepts, admits what it says from the next request on (a removed key is
    /// refused, a new one admitted); the counters of callers still there carry on. Otherwise
    /// the keys in force stay as they were. Returns how many keys are now admitted.
    ///
    /// # Errors
    /// As [`Auth::load`], and [`Error::Invalid`] when the file names an app `serves` refuses
    /// (a server opens its apps when it starts).
    pub fn reload(&self, path: &Path, serves: impl Fn(&Path) -> bool) -> Result<usize, Error> {
        let fresh = Auth::load(path)?.current();
        if let Some(app) = fresh.apps().into_iter().find(|app| !serves(app)) {
            return Err(Error::Invalid {
                path: path.to_owned(),
                message: format!(
                    "it binds a caller to the app {}, which this server does not serve (it opens its apps when it starts): restart it to serve a new app; the keys in force are unchanged",
                    app.display()
                ),
            });
        }
        let keys = fresh.keys.len();
        *self
            .credentials
            .write()
            .unwrap_or_else(PoisonError::into_inner) = fresh;
        Ok(keys)
    }

    fn current(&self) -> Arc<Credentials> {
        Arc::clone(
            &self
                .credentials
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Every app a principal may be bound to, each once, in the file's order.
    pub fn apps(&self) -> Vec<PathBuf> {
        self.current().apps()
    }

    /// The issuer JWTs must come from, when JWTs are accepted: the authorization server a
    /// client is told about.
    pub fn issuer(&self) -> Option<String> {
        self.current().jwt.as_ref().and_then(|j| j.issuer.clone())
    }

    /// Who sent `authorization` (the `Authorization` header's value, if any).
    ///
    /// # Errors
    /// [`Refusal::Missing`] without one, [`Refusal::InvalidToken`] for an unknown key, or a
    /// JWT that does not verify, has expired, or is for another audience.
    pub fn authenticate(&self, authorization: Option<&str>) -> Result<Principal, Refusal> {
        let header = authorization.ok_or(Refusal::Missing)?;
        let token = header
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .filter(|token| !token.is_empty())
            .ok_or_else(|| {
                Refusal::InvalidToken(
                    "the Authorization header must be `Bearer <token>`".to_owned(),
                )
            })?;
        let credentials = self.current();
        if token.starts_with(KEY_PREFIX) {
            return file::find(&credentials.keys, token)
                .map(|key| Principal {
                    id: key.id.clone(),
                    app: key.app.clone(),
                    limits: key.limits,
                })
                .ok_or_else(|| {
                    Refusal::InvalidToken(
                        "this API key is not known here (revoked, mistyped, or for another server)"
                            .to_owned(),
                    )
                });
        }
        match &credentials.jwt {
            Some(jwt) => jwt.verify(token),
            None => Err(Refusal::InvalidToken(format!(
                "not an API key (they start with `{KEY_PREFIX}`), and this server accepts no JWTs"
            ))),
        }
    }

    /// Counts a call of `principal` against its rate limit and concurrency cap; the permit
    /// is to be held until the call's answer has been sent.
    ///
    /// # Errors
    /// [`Refusal::RateLimited`] or [`Refusal::TooManyInFlight`].
    pub fn admit(&self, principal: &Principal) -> Result<Permit, Refusal> {
        self.limiter.admit(&principal.id, principal.limits)
    }
}

/// A new API key: the key to hand to the caller (shown once) and its entry for the auth file
/// (only the key's hash is stored).
///
/// # Errors
/// When the system's random numbers are not available.
pub fn new_key(id: &str, app: &Path, limits: Limits) -> Result<(String, KeyEntry), Error> {
    use base64::Engine as _;
    let mut secret = [0_u8; 32];
    getrandom::fill(&mut secret).map_err(|e| Error::Random(e.to_string()))?;
    let key = format!(
        "{KEY_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret)
    );
    let entry = KeyEntry {
        id: id.to_owned(),
        sha256: file::hash(&key),
        app: app.to_owned(),
        limits,
    };
    Ok((key, entry))
}

#[cfg(test)]
mod tests;
