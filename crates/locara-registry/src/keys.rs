//! Ed25519 signing and public keys, their ids, and their JSON key files.
//!
//! Secret key file: `{"publisher", "key_id", "secret_key": <64 hex>}`, created with mode 0600 on
//! unix (by the `open` that creates it) in a directory created with mode 0700 when missing; one
//! that users other than its owner can reach (any of the mode bits 0077) is refused when read,
//! as ssh does. Public key file: `{"publisher", "key_id", "public_key": <64 hex>}`; a trust
//! directory holds these as `*.pub.json`. Reading either file checks that `key_id` belongs to the
//! key. Both are read as every home file is: regular files only, at most 64 KiB
//! ([`ReadLimit::KEY_FILE`]).

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::fs::{self, ReadLimit};
use crate::{Digest, Error};

/// Names a public key: `ed25519:` followed by the first 16 hex characters of the SHA-256 of the
/// 32 public key bytes, e.g. `ed25519:3f2a9c0d11e8b7a4`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyId(String);

impl KeyId {
    const PREFIX: &'static str = "ed25519:";

    fn of(key: &ed25519_dalek::VerifyingKey) -> KeyId {
        let hex = Digest::of(key.as_bytes()).to_hex();
        KeyId(format!("{}{}", Self::PREFIX, &hex[..16]))
    }

    /// The id as written, e.g. `ed25519:3f2a9c0d11e8b7a4`.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for KeyId {
    type Err = Error;

    fn from_str(s: &str) -> Result<KeyId, Error> {
        let valid = s.strip_prefix(Self::PREFIX).is_some_and(|hex| {
            hex.len() == 16 && hex.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
        });
        if valid {
            Ok(KeyId(s.to_owned()))
        } else {
            Err(Error::InvalidKeyId {
                input: s.to_owned(),
            })
        }
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A publisher's Ed25519 public key, used to verify manifest signatures.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    publisher: String,
    key: ed25519_dalek::VerifyingKey,
    key_id: KeyId,
}

impl PublicKey {
    /// A public key from its 32 bytes.
    ///
    /// # Errors
    ///
    /// Returns [`Error::InvalidPublisher`] for an empty publisher name and [`Error::Malformed`]
    /// if the bytes are not a valid Ed25519 point.
    pub fn from_bytes(publisher: &str, bytes: &[u8; 32]) -> Result<PublicKey, Error> {
        check_publisher(publisher)?;
        let key = ed25519_dalek::VerifyingKey::from_bytes(bytes).map_err(|e| Error::Malformed {
            subject: "public key".to_owned(),
            message: e.to_string(),
        })?;
        Ok(PublicKey::new(publisher.to_owned(), key))
    }

    fn new(publisher: String, key: ed25519_dalek::VerifyingKey) -> PublicKey {
        let key_id = KeyId::of(&key);
        PublicKey {
            publisher,
            key,
            key_id,
        }
    }

    /// Who published with this key, e.g. `locara`.
    #[must_use]
    pub fn publisher(&self) -> &str {
        &self.publisher
    }

    /// The key's id.
    #[must_use]
    pub fn key_id(&self) -> &KeyId {
        &self.key_id
    }

    /// The 32 public key bytes.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    pub(crate) fn verifying_key(&self) -> &ed25519_dalek::VerifyingKey {
        &self.key
    }

    /// The public key file's JSON, pretty-printed with a trailing newline.
    #[must_use]
    pub fn to_json_pretty(&self) -> String {
        fs::to_pretty_json(&PublicKeyFile {
            publisher: self.publisher.clone(),
            key_id: self.key_id.to_string(),
            public_key: hex::encode(self.key.as_bytes()),
        })
    }

    /// Parses a public key file's JSON.
    ///
    /// # Errors
    ///
    /// Returns [`Error::Malformed`] if the JSON or the key is malformed and
    /// [`Error::KeyIdMismatch`] if `key_id` does not belong to the key.
    pub fn from_json(text: &str) -> Result<PublicKey, Error> {
        PublicKey::parse("public key file", text)
    }

    fn parse(subject: &str, text: &str) -> Result<PublicKey, Error> {
        let file: PublicKeyFile = fs::parse_json(subject, text)?;
        let bytes = decode_32(subject, "public_key", &file.public_key)?;
        let key = PublicKey::from_bytes(&file.publisher, &bytes).map_err(|e| match e {
            Error::Malformed { message, .. } => Error::Malformed {
                subject: subject.to_owned(),
                message,
            },
            other => other,
        })?;
        check_key_id(subject, &file.key_id, key.key_id())?;
        Ok(key)
    }

    /// Reads a public key file.
    ///
    /// # Errors
    ///
    /// Returns [`Error::Io`] if the file cannot be read, [`Error::NotARegularFile`] or
    /// [`Error::FileTooLarge`] if it is not a regular file of at most 64 KiB, else the errors
    /// of [`PublicKey::from_json`].
    pub fn read_file(path: &Path) -> Result<PublicKey, Error> {
        let text = fs::read_to_string(path, ReadLimit::KEY_FILE)?;
        PublicKey::parse(&format!("public key file `{}`", path.display()), &text)
    }

    /// Writes the public key file (replacing any file at `path`).
    ///
    /// # Errors
    ///
    /// Returns [`Error::Io`] if the file cannot be written.
    pub fn write_file(&self, path: &Path) -> Result<(), Error> {
        fs::write_atomic(path, self.to_json_pretty().as_bytes())
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PublicKey")
            .field("publisher", &self.publisher)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// A publisher's Ed25519 signing key. Its `Debug` output never shows the secret.
#[derive(Clone)]
pub struct SigningKey {
    key: ed25519_dalek::SigningKey,
    public: PublicKey,
}

impl SigningKey {
    /// A signing key from a 32-byte seed (the Ed25519 secret key). Use [`generate_keypair`] for a
    /// fresh random key; a fixed seed is for tests and reproducible fixtures.
    ///
    /// # Errors
    ///
    /// Returns [`Error::InvalidPublisher`] for an empty publisher name.
    pub fn from_seed(publisher: &str, seed: &[u8; 32]) -> Result<SigningKey, Error> {
        check_publisher(publisher)?;
        let key = ed25519_dalek::SigningKey::from_bytes(seed);
        let public = PublicKey::new(publisher.to_owned(), key.verifying_key());
        Ok(SigningKey { key, public })
    }

    /// The public half, to put in a trust store.
    #[must_use]
    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// Who publishes with this key.
    #[must_use]
    pub fn publisher(&self) -> &str {
        self.public.publisher()
    }

    /// The key's id.
    #[must_use]
    pub fn key_id(&self) -> &KeyId {
        self.public.key_id()
    }

    pub(crate) fn sign(&self, message: &[u8]) -> ed25519_dalek::Signature {
        ed25519_dalek::Signer::sign(&self.key, message)
    }

    /// The secret key file's JSON, pretty-printed with a trailing newline. It contains the secret.
    #[must_use]
    pub fn to_json_pretty(&self) -> String {
        fs::to_pretty_json(&SecretKeyFile {
            publisher: self.public.publisher.clone(),
            key_id: self.public.key_id.to_string(),
            secret_key: hex::encode(self.key.as_bytes()),
        })
    }

    /// Parses a secret key file's JSON.
    ///
    /// # Errors
    ///
    /// Returns [`Error::Malformed`] if the JSON or the key is malformed and
    /// [`Error::KeyIdMismatch`] if `key_id` does not belong to the key.
    pub fn from_json(text: &str) -> Result<SigningKey, Error> {
        SigningKey::parse("secret key file", text)
    }

    fn parse(subject: &str, text: &str) -> Result<SigningKey, Error> {
        let file: SecretKeyFile = fs::parse_json(subject, text)?;
        let seed = decode_32(subject, "secret_key", &file.secret_key)?;
        let key = SigningKey::from_seed(&file.publisher, &seed)?;
        check_key_id(subject, &file.key_id, key.key_id())?;
        Ok(key)
    }

    /// Reads a secret key file.
    ///
    /// On unix the file must be reachable by its owner only: a file with any of the mode bits
    /// 0077 set is refused with [`Error::SecretKeyExposed`] (the mode is that of the file
    /// opened, not of a path looked at before).
    ///
    /// # Errors
    ///
    /// Returns [`Error::Io`] if the file cannot be read, [`Error::NotARegularFile`] or
    /// [`Error::FileTooLarge`] if it is not a regular file of at most 64 KiB,
    /// [`Error::SecretKeyExposed`] if others may read it, else the errors of
    /// [`SigningKey::from_json`].
    pub fn read_file(path: &Path) -> Result<SigningKey, Error> {
        let (file, meta) = fs::open_regular(path)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(Error::SecretKeyExposed {
                    path: path.to_owned(),
                    mode,
                });
            }
        }
        let bytes = fs::read_from(file, &meta, path, ReadLimit::KEY_FILE)?;
        let subject = format!("secret key file `{}`", path.display());
        let text = String::from_utf8(bytes).map_err(|_| Error::Malformed {
            subject: subject.clone(),
            message: "the file is not UTF-8".to_owned(),
        })?;
        SigningKey::parse(&subject, &text)
    }

    /// Writes the secret key file, readable only by its owner: on unix the file is created with
    /// mode 0600 (by the `open` that creates it, so it is never readable by others, not even
    /// for a moment), and its directory, when missing, is created with mode 0700. An existing
    /// directory is left as it is.
    ///
    /// Refuses to replace an existing file, so a key is never lost by accident. A write that
    /// fails removes the partial file.
    ///
    /// # Errors
    ///
    /// Returns [`Error::Io`] if the file exists or cannot be written.
    pub fn write_file(&self, path: &Path) -> Result<(), Error> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_private_dir(dir)?;
        }
        fs::write_private_new(path, self.to_json_pretty().as_bytes())
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("publisher", &self.public.publisher)
            .field("key_id", &self.public.key_id)
            .finish_non_exhaustive()
    }
}

/// Generates a fresh signing key for `publisher` from the operating system's random source.
/// Its public half is [`SigningKey::public_key`].
///
/// # Errors
///
/// Returns [`Error::InvalidPublisher`] for an empty publisher name and [`Error::Entropy`] if the
/// random source fails.
pub fn generate_keypair(publisher: &str) -> Result<SigningKey, Error> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| Error::Entropy {
        message: e.to_string(),
    })?;
    let key = SigningKey::from_seed(publisher, &seed);
    seed.fill(0);
    key
}

fn check_publisher(publisher: &str) -> Result<(), Error> {
    if publisher.trim().is_empty() || publisher.chars().any(char::is_control) {
        return Err(Error::InvalidPublisher {
            publisher: publisher.to_owned(),
        });
    }
    Ok(())
}

fn check_key_id(subject: &str, written: &str, actual: &KeyId) -> Result<(), Error> {
    if written != actual.as_str() {
        return Err(Error::KeyIdMismatch {
            subject: subject.to_owned(),
            found: written.to_owned(),
            expected: actual.clone(),
        });
    }
    Ok(())
}

fn decode_32(subject: &str, field: &str, text: &str) -> Result<[u8; 32], Error> {
    let mut bytes = [0; 32];
    hex::decode_to_slice(text, &mut bytes).map_err(|e| Error::Malformed {
        subject: subject.to_owned(),
        message: format!("`{field}` must be 64 hex characters: {e}"),
    })?;
    Ok(bytes)
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PublicKeyFile {
    publisher: String,
    key_id: String,
    public_key: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SecretKeyFile {
    publisher: String,
    key_id: String,
    secret_key: String,
}
