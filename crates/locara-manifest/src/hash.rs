//! The textual form of a SHA-256 digest. This crate checks the format only; it never hashes.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Error;

/// A SHA-256 digest written as exactly 64 lowercase hex characters.
///
/// Serialized as a plain JSON string. Computing digests is `locara-registry`'s job.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sha256Hex(String);

impl Sha256Hex {
    /// Checks that `hex` is 64 lowercase hex characters.
    ///
    /// # Errors
    ///
    /// Returns [`Error::InvalidSha256`] if `hex` has the wrong length or contains a character
    /// other than `0-9` and `a-f`.
    pub fn new(hex: impl Into<String>) -> Result<Sha256Hex, Error> {
        let hex = hex.into();
        let len = hex.chars().count();
        let reason = if len != 64 {
            format!("it is {len} characters long")
        } else if let Some(bad) = hex.chars().find(|c| !matches!(c, '0'..='9' | 'a'..='f')) {
            format!("character {bad:?} is not a lowercase hex digit")
        } else {
            return Ok(Sha256Hex(hex));
        };
        Err(Error::InvalidSha256 { input: hex, reason })
    }

    /// The 64 hex characters.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Sha256Hex {
    type Err = Error;

    fn from_str(s: &str) -> Result<Sha256Hex, Error> {
        Sha256Hex::new(s)
    }
}

impl fmt::Display for Sha256Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Sha256Hex {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Serialize for Sha256Hex {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Sha256Hex {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Sha256Hex, D::Error> {
        let s = String::deserialize(deserializer)?;
        Sha256Hex::new(s).map_err(serde::de::Error::custom)
    }
}

#[cfg(feature = "json-schema")]
impl schemars::JsonSchema for Sha256Hex {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Sha256Hex".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A SHA-256 digest as 64 lowercase hex characters.",
            "type": "string",
            "pattern": "^[0-9a-f]{64}$",
        })
    }
}
