//! The lockfile: which version of each tool an app was last resolved to, and its hashes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::json;
use crate::{Error, Sha256Hex, ToolName, Version};

/// A lockfile: `{"version": 1, "tools": {"<id>": {"version", "manifest_sha256", "artifact_sha256"}}}`,
/// one pin per tool id. This crate only reads and writes the format; `locara-registry` decides
/// when to pin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "json-schema", schemars(title = "Locara lockfile"))]
#[serde(deny_unknown_fields)]
pub struct Lockfile {
    /// Version of the lockfile format; must be 1.
    #[cfg_attr(feature = "json-schema", schemars(extend("const" = 1)))]
    version: u32,
    /// The pinned tools, by id.
    #[serde(default)]
    tools: BTreeMap<ToolName, LockedTool>,
}

impl Default for Lockfile {
    fn default() -> Lockfile {
        Lockfile {
            version: Self::VERSION,
            tools: BTreeMap::new(),
        }
    }
}

impl Lockfile {
    /// The only lockfile format version this crate understands.
    pub const VERSION: u32 = 1;

    /// An empty lockfile.
    #[must_use]
    pub fn new() -> Lockfile {
        Lockfile::default()
    }

    /// Parses a lockfile.
    ///
    /// # Errors
    ///
    /// Returns [`Error::Json`] if the text is not a well-formed lockfile and
    /// [`Error::UnsupportedVersion`] if `version` is not 1.
    pub fn from_json(text: &str) -> Result<Lockfile, Error> {
        let lockfile: Lockfile = json::from_str("lockfile", text)?;
        if lockfile.version != Self::VERSION {
            return Err(Error::UnsupportedVersion {
                what: "lockfile",
                found: lockfile.version,
                expected: Self::VERSION,
            });
        }
        Ok(lockfile)
    }

    /// Serializes the lockfile as pretty-printed JSON with a trailing newline, tools sorted by id.
    #[must_use]
    pub fn to_json_pretty(&self) -> String {
        json::to_pretty(self)
    }

    /// The pin for `id`, if any.
    #[must_use]
    pub fn get(&self, id: &ToolName) -> Option<&LockedTool> {
        self.tools.get(id)
    }

    /// Pins `id`, returning the previous pin.
    pub fn insert(&mut self, id: ToolName, locked: LockedTool) -> Option<LockedTool> {
        self.tools.insert(id, locked)
    }

    /// Removes the pin for `id`, returning it.
    pub fn remove(&mut self, id: &ToolName) -> Option<LockedTool> {
        self.tools.remove(id)
    }

    /// All pins, sorted by id.
    #[must_use]
    pub fn tools(&self) -> &BTreeMap<ToolName, LockedTool> {
        &self.tools
    }

    /// Adds a pin (builder form of [`Lockfile::insert`]).
    #[must_use]
    pub fn with_tool(mut self, id: ToolName, locked: LockedTool) -> Lockfile {
        self.tools.insert(id, locked);
        self
    }
}

/// One tool's pin: the exact version and the hashes of its manifest and artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct LockedTool {
    /// The pinned version.
    pub version: Version,
    /// SHA-256 of the exact bytes of the signed `manifest.json`.
    pub manifest_sha256: Sha256Hex,
    /// SHA-256 of the wasm artifact.
    pub artifact_sha256: Sha256Hex,
}

impl LockedTool {
    /// A pin.
    #[must_use]
    pub fn new(
        version: Version,
        manifest_sha256: Sha256Hex,
        artifact_sha256: Sha256Hex,
    ) -> LockedTool {
        LockedTool {
            version,
            manifest_sha256,
            artifact_sha256,
        }
    }
}
