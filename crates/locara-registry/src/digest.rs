//! SHA-256 digests. This crate is the only place in Locara that hashes.

use std::fmt;
use std::str::FromStr;

use locara_manifest::Sha256Hex;
use sha2::Digest as _;

use crate::Error;

/// A SHA-256 digest.
///
/// `Display` and [`Digest::to_hex`] give 64 lowercase hex characters; `FromStr` reads them back.
///
/// ```
/// use locara_registry::Digest;
///
/// let digest = Digest::of(b"");
/// assert_eq!(digest.to_hex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
/// assert_eq!(digest.to_hex().parse::<Digest>()?, digest);
/// # Ok::<(), locara_registry::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest([u8; 32]);

impl Digest {
    /// Hashes `bytes`.
    #[must_use]
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(sha2::Sha256::digest(bytes).into())
    }

    /// A hasher for bytes that come in pieces (a file read as a stream).
    pub(crate) fn hasher() -> Hasher {
        Hasher(sha2::Sha256::new())
    }

    /// The digest as 64 lowercase hex characters.
    #[must_use]
    pub fn to_hex(&self) -> String {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut hex = String::with_capacity(64);
        for byte in self.0 {
            hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
            hex.push(char::from(DIGITS[usize::from(byte & 0xf)]));
        }
        hex
    }

    /// The raw 32 bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The digest in the manifest's wire form.
    #[must_use]
    pub fn to_sha256_hex(&self) -> Sha256Hex {
        Sha256Hex::new(self.to_hex()).unwrap_or_else(|e| unreachable!("to_hex gave bad hex: {e}"))
    }
}

/// SHA-256 over bytes fed in pieces; [`Digest::hasher`] makes one.
pub(crate) struct Hasher(sha2::Sha256);

impl Hasher {
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub(crate) fn finish(self) -> Digest {
        Digest(self.0.finalize().into())
    }
}

impl From<&Sha256Hex> for Digest {
    fn from(hex: &Sha256Hex) -> Digest {
        let mut bytes = [0; 32];
        // `Sha256Hex` guarantees 64 lowercase hex characters.
        hex::decode_to_slice(hex.as_str(), &mut bytes)
            .unwrap_or_else(|e| unreachable!("Sha256Hex held bad hex: {e}"));
        Digest(bytes)
    }
}

impl From<Digest> for Sha256Hex {
    fn from(digest: Digest) -> Sha256Hex {
        digest.to_sha256_hex()
    }
}

impl FromStr for Digest {
    type Err = Error;

    fn from_str(s: &str) -> Result<Digest, Error> {
        Sha256Hex::new(s)
            .map(|hex| Digest::from(&hex))
            .map_err(|_| Error::InvalidDigest {
                input: s.to_owned(),
            })
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", self.to_hex())
    }
}
