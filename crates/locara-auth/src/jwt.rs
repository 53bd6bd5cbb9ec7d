//! JWT bearer tokens from an authorization server the operator runs, checked against its
//! JWKS (saved to a file: this crate makes no network requests).

use std::path::{Path, PathBuf};

use jsonwebtoken::{
    Algorithm, DecodingKey, Validation,
    errors::ErrorKind,
    jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm},
};
use serde::Deserialize;

use crate::{Error, JwtEntry, Limits, Principal, Refusal};

/// A verification key of the JWKS: its id, the one algorithm it verifies, and the key.
struct Key {
    kid: Option<String>,
    algorithm: Algorithm,
    key: DecodingKey,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key")
            .field("kid", &self.kid)
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
pub(crate) struct JwtAuth {
    keys: Vec<Key>,
    pub(crate) issuer: Option<String>,
    audience: String,
    pub(crate) app: PathBuf,
    limits: Limits,
}

/// The claims read: the subject (who), and the ones `Validation` checks.
#[derive(Clone, Deserialize)]
struct Claims {
    sub: String,
}

impl JwtAuth {
    pub(crate) fn load(entry: &JwtEntry, dir: &Path) -> Result<JwtAuth, Error> {
        let path = dir.join(&entry.jwks);
        let invalid = |message: String| Error::Invalid {
            path: path.clone(),
            message,
        };
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
            action: "read",
            path: path.clone(),
            source,
        })?;
        let set: JwkSet =
            serde_json::from_str(&text).map_err(|e| invalid(format!("not a JWKS: {e}")))?;
        let keys = set
            .keys
            .iter()
            .map(|jwk| verification_key(jwk).map_err(&invalid))
            .collect::<Result<Vec<_>, _>>()?;
        if keys.is_empty() {
            return Err(invalid("the JWKS has no keys".to_owned()));
        }
        if entry.audience.is_empty() {
            return Err(Error::Invalid {
                path: dir.to_owned(),
                message: "the `jwt.audience` is empty: give this server's MCP endpoint URL"
                    .to_owned(),
            });
        }
        crate::file::check_limits(&entry.limits, "jwt").map_err(|message| Error::Invalid {
            path: dir.to_owned(),
            message,
        })?;
        Ok(JwtAuth {
            keys,
            issuer: entry.issuer.clone(),
            audience: entry.audience.clone(),
            app: dir.join(&entry.app),
            limits: entry.limits,
        })
    }

    pub(crate) fn verify(&self, token: &str) -> Result<Principal, Refusal> {
        let invalid = |message: String| Refusal::InvalidToken(message);
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| invalid(format!("not a JWT: {e}")))?;
        let key = match &header.kid {
            Some(kid) => self.keys.iter().find(|k| k.kid.as_deref() == Some(kid)),
            None if self.keys.len() == 1 => self.keys.first(),
            None => None,
        }
        .ok_or_else(|| {
            invalid(format!(
                "the token's key id {:?} is not in this server's JWKS (was the authorization server's key rotated? save its JWKS again)",
                header.kid
            ))
        })?;
        // The key decides the algorithm, never the token: a token may not pick a weaker one.
        if header.alg != key.algorithm {
            return Err(invalid(format!(
                "the token is signed with {:?}, but its key verifies {:?} only",
                header.alg, key.algorithm
            )));
        }
        let mut validation = Validation::new(key.algorithm);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "aud", "sub"]);
        if let Some(issuer) = &self.issuer {
            validation.set_issuer(&[issuer]);
        }
        let data = jsonwebtoken::decode::<Claims>(token, &key.key, &validation).map_err(|e| {
            invalid(match e.kind() {
                ErrorKind::ExpiredSignature => {
                    "the token has expired: get a new one from the authorization server".to_owned()
                }
                ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
                ErrorKind::InvalidAudience => format!(
                    "the token is for another audience: ask for one for `{}`",
                    self.audience
                ),
                ErrorKind::InvalidIssuer => format!(
                    "the token is from another issuer: this server accepts `{}`'s",
                    self.issuer.as_deref().unwrap_or("")
                ),
                ErrorKind::InvalidSignature => "the token's signature does not verify".to_owned(),
                ErrorKind::MissingRequiredClaim(claim) => {
                    format!("the token has no `{claim}` claim")
                }
                _ => format!("the token is not valid: {e}"),
            })
        })?;
        Ok(Principal {
            id: format!("jwt:{}", data.claims.sub),
            app: self.app.clone(),
            limits: self.limits,
        })
    }
}

/// The key `jwk` is, and the one algorithm it verifies (its `alg`, or its type's).
fn verification_key(jwk: &Jwk) -> Result<Key, String> {
    let kid = jwk.common.key_id.clone();
    let named = |alg: KeyAlgorithm| -> Result<Algorithm, String> {
        Ok(match alg {
            KeyAlgorithm::RS256 => Algorithm::RS256,
            KeyAlgorithm::RS384 => Algorithm::RS384,
            KeyAlgorithm::RS512 => Algorithm::RS512,
            KeyAlgorithm::PS256 => Algorithm::PS256,
            KeyAlgorithm::PS384 => Algorithm::PS384,
            KeyAlgorithm::PS512 => Algorithm::PS512,
            KeyAlgorithm::ES256 => Algorithm::ES256,
            KeyAlgorithm::ES384 => Algorithm::ES384,
            KeyAlgorithm::EdDSA => Algorithm::EdDSA,
            other => {
                return Err(format!(
                    "the key {kid:?} is for {other:?}, not for verifying signatures"
                ));
            }
        })
    };
    let by_type = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Algorithm::RS256,
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => Algorithm::ES256,
            EllipticCurve::P384 => Algorithm::ES384,
            ref curve => return Err(format!("the key {kid:?} is on {curve:?}, not supported")),
        },
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
            Algorithm::EdDSA
        }
        AlgorithmParameters::OctetKeyPair(okp) => {
            return Err(format!(
                "the key {kid:?} is on {:?}, not supported",
                okp.curve
            ));
        }
        AlgorithmParameters::OctetKey(_) => {
            return Err(format!(
                "the key {kid:?} is a shared secret (`oct`): a JWKS given to a server holds public keys only"
            ));
        }
    };
    let algorithm = match jwk.common.key_algorithm {
        Some(alg) => named(alg)?,
        None => by_type,
    };
    let key =
        DecodingKey::from_jwk(jwk).map_err(|e| format!("the key {kid:?} is not usable: {e}"))?;
    Ok(Key {
        kid,
        algorithm,
        key,
    })
}
