//! Tool versions: full semantic versions, serialized as strings.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Error;

/// A tool version: a full semantic version such as `0.1.0` or `1.2.3-beta.1`.
///
/// Ordered by semver precedence. Partial versions (`1.0`) and a leading `v` (`v1.0.0`) are
/// rejected, because a manifest pins one exact build.
///
/// ```
/// use locara_manifest::Version;
///
/// let old: Version = "0.1.0".parse()?;
/// let new: Version = "0.2.0".parse()?;
/// assert!(old < new);
/// assert!("1.0".parse::<Version>().is_err());
/// # Ok::<(), locara_manifest::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(semver::Version);

impl Version {
    /// The release version `major.minor.patch`.
    #[must_use]
    pub const fn new(major: u64, minor: u64, patch: u64) -> Version {
        Version(semver::Version::new(major, minor, patch))
    }

    /// The underlying semver value.
    #[must_use]
    pub fn as_semver(&self) -> &semver::Version {
        &self.0
    }

    /// Whether this is a pre-release such as `1.0.0-beta.1`.
    #[must_use]
    pub fn is_prerelease(&self) -> bool {
        !self.0.pre.is_empty()
    }
}

impl From<semver::Version> for Version {
    fn from(version: semver::Version) -> Version {
        Version(version)
    }
}

impl From<Version> for semver::Version {
    fn from(version: Version) -> semver::Version {
        version.0
    }
}

impl FromStr for Version {
    type Err = Error;

    fn from_str(s: &str) -> Result<Version, Error> {
        if s.starts_with(['v', 'V']) {
            return Err(Error::InvalidVersion {
                input: s.to_owned(),
                reason: "remove the leading `v`".to_owned(),
            });
        }
        semver::Version::parse(s)
            .map(Version)
            .map_err(|e| Error::InvalidVersion {
                input: s.to_owned(),
                reason: e.to_string(),
            })
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Version, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(feature = "json-schema")]
impl schemars::JsonSchema for Version {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Version".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A full semantic version MAJOR.MINOR.PATCH with optional pre-release and build parts, e.g. `0.1.0`.",
            "type": "string",
            "pattern": "^[0-9]+\\.[0-9]+\\.[0-9]+([-+].+)?$",
        })
    }
}
