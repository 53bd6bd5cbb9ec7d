//! Keys, tokens and limits, on real files and real signatures.

use std::time::{SystemTime, UNIX_EPOCH};

use ed25519_dalek::pkcs8::EncodePrivateKey as _;
use serde_json::json;

use super::*;

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// An auth file in a temp dir with one key per `(id, limits)`, and the keys.
fn keys_file(keys: &[(&str, Limits)]) -> (tempfile::TempDir, PathBuf, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.json");
    let mut file = AuthFile::default();
    let mut secrets = Vec::new();
    for (id, limits) in keys {
        let (key, entry) = new_key(id, Path::new(&format!("{id}.app.json")), *limits).unwrap();
        file.keys.push(entry);
        secrets.push(key);
    }
    file.write(&path).unwrap();
    (dir, path, secrets)
}

#[test]
fn a_key_is_stored_hashed_and_names_its_app() {
    let (dir, path, keys) = keys_file(&[("team-a", Limits::default())]);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains(&keys[0]),
        "the key itself must not be stored"
    );
    assert!(text.contains(&file::hash(&keys[0])));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let auth = Auth::load(&path).unwrap();
    let principal = auth
        .authenticate(Some(&format!("Bearer {}", keys[0])))
        .unwrap();
    assert_eq!(principal.id, "team-a");
    assert_eq!(principal.app, dir.path().join("team-a.app.json"));
    assert_eq!(auth.apps(), [dir.path().join("team-a.app.json")]);
    // The scheme is case-insensitive.
    assert!(
        auth.authenticate(Some(&format!("bearer {}", keys[0])))
            .is_ok()
    );
}

#[test]
fn missing_malformed_and_unknown_credentials_are_refused() {
    let (_dir, path, keys) = keys_file(&[("team-a", Limits::default())]);
    let auth = Auth::load(&path).unwrap();
    assert_eq!(auth.authenticate(None), Err(Refusal::Missing));
    assert_eq!(Refusal::Missing.status(), 401);
    let refused = |header: &str| match auth.authenticate(Some(header)) {
        Err(Refusal::InvalidToken(why)) => why,
        other => panic!("{header}: {other:?}"),
    };
    assert!(refused(&format!("Basic {}", keys[0])).contains("Bearer"));
    assert!(refused("Bearer ").contains("Bearer"));
    let wrong = format!("{}x", keys[0]);
    assert!(refused(&format!("Bearer {wrong}")).contains("not known"));
    assert!(refused("Bearer eyJhbGciOi.x.y").contains("accepts no JWTs"));
}

#[test]
fn bad_auth_files_say_what_to_fix() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.json");
    let error = |text: &str| {
        std::fs::write(&path, text).unwrap();
        Auth::load(&path).unwrap_err().to_string()
    };
    assert!(error("{}").contains("admits nobody"));
    assert!(error("{\"keys\": [], \"extra\": 1}").contains("unknown field"));
    let key = |id: &str, sha: &str| json!({"id": id, "sha256": sha, "app": "a.json"});
    let good = "ab".repeat(32);
    assert!(error(&json!({"keys": [key("a", "abc")]}).to_string()).contains("64 hex digits"));
    assert!(
        error(&json!({"keys": [key("a", &good), key("a", &good)]}).to_string())
            .contains("used twice")
    );
    assert!(error(&json!({"keys": [key("jwt:x", &good)]}).to_string()).contains("reserved"));
    let zero = json!({"keys": [{"id": "a", "sha256": good, "app": "a.json", "limits": {"max_concurrent": 0}}]});
    assert!(error(&zero.to_string()).contains("limit of 0"));
    assert!(
        Auth::load(&dir.path().join("none.json"))
            .unwrap_err()
            .to_string()
            .contains("cannot read")
    );
}

#[test]
fn the_rate_limit_refuses_with_a_retry_after() {
    // 6 a minute: bursts of one, then one every 10 s.
    let limits = Limits {
        max_concurrent: 8,
        rate_per_minute: 6,
    };
    let (_dir, path, keys) = keys_file(&[("slow", limits), ("other", limits)]);
    let auth = Auth::load(&path).unwrap();
    let slow = auth
        .authenticate(Some(&format!("Bearer {}", keys[0])))
        .unwrap();
    drop(auth.admit(&slow).unwrap());
    let refusal = auth.admit(&slow).unwrap_err();
    assert!(
        matches!(refusal, Refusal::RateLimited { .. }),
        "{refusal:?}"
    );
    assert_eq!(refusal.status(), 429);
    let retry = refusal.retry_after().unwrap();
    assert!((9..=10).contains(&retry), "{retry}");
    assert!(refusal.to_string().contains("6 calls a minute"));
    // Another key has its own bucket.
    let other = auth
        .authenticate(Some(&format!("Bearer {}", keys[1])))
        .unwrap();
    assert!(auth.admit(&other).is_ok());
}

#[test]
fn the_concurrency_cap_counts_calls_in_flight() {
    let limits = Limits {
        max_concurrent: 2,
        rate_per_minute: 6000,
    };
    let (_dir, path, keys) = keys_file(&[("busy", limits)]);
    let auth = Auth::load(&path).unwrap();
    let busy = auth
        .authenticate(Some(&format!("Bearer {}", keys[0])))
        .unwrap();
    let first = auth.admit(&busy).unwrap();
    let _second = auth.admit(&busy).unwrap();
    let refusal = auth.admit(&busy).unwrap_err();
    assert!(
        matches!(
            refusal,
            Refusal::TooManyInFlight {
                max_concurrent: 2,
                ..
            }
        ),
        "{refusal:?}"
    );
    assert_eq!(refusal.retry_after(), Some(1));
    drop(first);
    assert!(auth.admit(&busy).is_ok());
}

/// A JWKS with one Ed25519 key, and a function signing claims with it.
struct Issuer {
    _dir: tempfile::TempDir,
    auth_path: PathBuf,
    der: Vec<u8>,
}

const AUDIENCE: &str = "http://127.0.0.1:8765/mcp";
const ISSUER: &str = "https://auth.example";

impl Issuer {
    fn new() -> Issuer {
        use base64::Engine as _;
        let dir = tempfile::tempdir().unwrap();
        let signing = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
        let x = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(signing.verifying_key().as_bytes());
        let jwks = json!({"keys": [
            {"kty": "OKP", "crv": "Ed25519", "x": x, "kid": "k1", "alg": "EdDSA", "use": "sig"}
        ]});
        std::fs::write(dir.path().join("jwks.json"), jwks.to_string()).unwrap();
        let file = AuthFile {
            keys: Vec::new(),
            jwt: Some(JwtEntry {
                jwks: "jwks.json".into(),
                issuer: Some(ISSUER.to_owned()),
                audience: AUDIENCE.to_owned(),
                app: "agents.app.json".into(),
                limits: Limits::default(),
            }),
        };
        let auth_path = dir.path().join("auth.json");
        file.write(&auth_path).unwrap();
        let der = signing.to_pkcs8_der().unwrap().as_bytes().to_vec();
        Issuer {
            _dir: dir,
            auth_path,
            der,
        }
    }

    fn token(&self, claims: &serde_json::Value, kid: Option<&str>) -> String {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(
            &header,
            claims,
            &jsonwebtoken::EncodingKey::from_ed_der(&self.der),
        )
        .unwrap()
    }
}

#[test]
fn a_jwt_is_checked_for_signature_expiry_audience_and_issuer() {
    let issuer = Issuer::new();
    let auth = Auth::load(&issuer.auth_path).unwrap();
    assert_eq!(auth.issuer().as_deref(), Some(ISSUER));
    let claims = |exp: u64, aud: &str, iss: &str| json!({"sub": "agent-7", "exp": exp, "aud": aud, "iss": iss});
    let bearer = |token: String| format!("Bearer {token}");
    let good = issuer.token(&claims(now() + 600, AUDIENCE, ISSUER), Some("k1"));
    let principal = auth.authenticate(Some(&bearer(good))).unwrap();
    assert_eq!(principal.id, "jwt:agent-7");
    assert!(principal.app.ends_with("agents.app.json"));

    let refused = |token: String| match auth.authenticate(Some(&bearer(token))) {
        Err(Refusal::InvalidToken(why)) => why,
        other => panic!("{other:?}"),
    };
    let expired = issuer.token(&claims(now() - 3600, AUDIENCE, ISSUER), Some("k1"));
    assert!(refused(expired).contains("expired"));
    let elsewhere = issuer.token(
        &claims(now() + 600, "https://other/mcp", ISSUER),
        Some("k1"),
    );
    assert!(refused(elsewhere).contains("another audience"));
    let stranger = issuer.token(&claims(now() + 600, AUDIENCE, "https://evil"), Some("k1"));
    assert!(refused(stranger).contains("another issuer"));
    let unknown_kid = issuer.token(&claims(now() + 600, AUDIENCE, ISSUER), Some("k2"));
    assert!(refused(unknown_kid).contains("not in this server's JWKS"));
    let no_sub = issuer.token(
        &json!({"exp": now() + 600, "aud": AUDIENCE, "iss": ISSUER}),
        Some("k1"),
    );
    assert!(refused(no_sub).contains("`sub`"));
    // A signature by another key, under the right kid.
    let good = issuer.token(&claims(now() + 600, AUDIENCE, ISSUER), Some("k1"));
    let (head, rest) = good.split_once('.').unwrap();
    let (body, _) = rest.split_once('.').unwrap();
    let forged = {
        let other = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
        let token = jsonwebtoken::encode(
            &{
                let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
                h.kid = Some("k1".to_owned());
                h
            },
            &claims(now() + 600, AUDIENCE, ISSUER),
            &jsonwebtoken::EncodingKey::from_ed_der(other.to_pkcs8_der().unwrap().as_bytes()),
        )
        .unwrap();
        let signature = token.rsplit_once('.').unwrap().1.to_owned();
        format!("{head}.{body}.{signature}")
    };
    assert!(refused(forged).contains("signature"));
    // A token may not choose its algorithm: HS256 under an EdDSA key is refused.
    let hs = jsonwebtoken::encode(
        &{
            let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
            h.kid = Some("k1".to_owned());
            h
        },
        &claims(now() + 600, AUDIENCE, ISSUER),
        &jsonwebtoken::EncodingKey::from_secret(b"guess"),
    )
    .unwrap();
    assert!(refused(hs).contains("verifies EdDSA only"));
}

#[test]
fn a_jwks_with_a_shared_secret_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("jwks.json"),
        json!({"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "s"}]}).to_string(),
    )
    .unwrap();
    let path = dir.path().join("auth.json");
    std::fs::write(
        &path,
        json!({"jwt": {"jwks": "jwks.json", "audience": AUDIENCE, "app": "a.json"}}).to_string(),
    )
    .unwrap();
    assert!(
        Auth::load(&path)
            .unwrap_err()
            .to_string()
            .contains("shared secret")
    );
}

#[test]
fn a_reload_admits_the_new_file_only_when_it_names_served_apps() {
    let (dir, path, keys) = keys_file(&[("a", Limits::default()), ("b", Limits::default())]);
    let auth = Auth::load(&path).unwrap();
    let served = auth.apps();
    let bearer = |key: &str| format!("Bearer {key}");

    // `b` removed: refused after the reload; `a` still admitted.
    let mut file = AuthFile::read(&path).unwrap();
    file.keys.retain(|k| k.id != "b");
    file.write(&path).unwrap();
    assert_eq!(
        auth.reload(&path, |app| served.iter().any(|s| s == app))
            .unwrap(),
        1
    );
    assert!(auth.authenticate(Some(&bearer(&keys[1]))).is_err());
    assert_eq!(auth.authenticate(Some(&bearer(&keys[0]))).unwrap().id, "a");

    // A key bound to an app the server does not serve: the whole file is refused.
    let (key, entry) = new_key("c", &dir.path().join("c.app.json"), Limits::default()).unwrap();
    file.keys.push(entry);
    file.write(&path).unwrap();
    let error = auth
        .reload(&path, |app| served.iter().any(|s| s == app))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("which this server does not serve"),
        "{error}"
    );
    assert!(auth.authenticate(Some(&bearer(&key))).is_err());
    assert_eq!(auth.authenticate(Some(&bearer(&keys[0]))).unwrap().id, "a");

    // A file that does not load leaves the keys in force too.
    std::fs::write(&path, "{not json").unwrap();
    assert!(auth.reload(&path, |_| true).is_err());
    assert_eq!(auth.authenticate(Some(&bearer(&keys[0]))).unwrap().id, "a");
}
