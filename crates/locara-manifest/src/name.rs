//! Tool names (`text.chunk`) and tool references (`text.chunk@0.1.0`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{Error, Version};

/// A tool's id, e.g. `text.chunk` or `bash.read-only`.
///
/// The rule: one or more dot-separated segments, each a lowercase ascii letter or digit followed
/// by lowercase ascii letters, digits, `_` or `-`, at most [`ToolName::MAX_LEN`] characters in
/// total. The rule keeps names safe to use as directory names (no `/`, no `..`, no leading `-`).
///
/// Serialized as a plain JSON string.
///
/// ```
/// use locara_manifest::ToolName;
///
/// let name: ToolName = "text.chunk".parse()?;
/// assert_eq!(name.as_str(), "text.chunk");
/// assert!("Text.Chunk".parse::<ToolName>().is_err());
/// # Ok::<(), locara_manifest::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ToolName(String);

impl ToolName {
    /// The longest accepted tool name, in characters.
    pub const MAX_LEN: usize = 64;

    /// Checks `name` against the naming rule.
    ///
    /// # Errors
    ///
    /// Returns [`Error::InvalidToolName`], naming the broken part of the rule, if `name` is empty,
    /// too long, has an empty segment or contains a character outside `[a-z0-9_.-]`.
    pub fn new(name: impl Into<String>) -> Result<ToolName, Error> {
        let name = name.into();
        match check_name(&name) {
            Ok(()) => Ok(ToolName(name)),
            Err(reason) => Err(Error::InvalidToolName {
                input: name,
                reason,
            }),
        }
    }

    /// The name as written, e.g. `text.chunk`.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("it is empty".to_owned());
    }
    let len = name.chars().count();
    if len > ToolName::MAX_LEN {
        return Err(format!(
            "it is {len} characters long, more than {}",
            ToolName::MAX_LEN
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !matches!(c, 'a'..='z' | '0'..='9' | '_' | '-' | '.'))
    {
        return Err(format!("character {bad:?} is not allowed"));
    }
    for segment in name.split('.') {
        match segment.chars().next() {
            None => return Err("it has an empty segment".to_owned()),
            Some(first) if !first.is_ascii_alphanumeric() => {
                return Err(format!(
                    "segment `{segment}` starts with {first:?} instead of a letter or digit"
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

impl FromStr for ToolName {
    type Err = Error;

    fn from_str(s: &str) -> Result<ToolName, Error> {
        ToolName::new(s)
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ToolName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Serialize for ToolName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ToolName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ToolName, D::Error> {
        let s = String::deserialize(deserializer)?;
        ToolName::new(s).map_err(serde::de::Error::custom)
    }
}

#[cfg(feature = "json-schema")]
impl schemars::JsonSchema for ToolName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ToolName".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A tool id: dot-separated segments of `[a-z0-9][a-z0-9_-]*`, 1 to 64 characters, e.g. `text.chunk`.",
            "type": "string",
            "minLength": 1,
            "maxLength": ToolName::MAX_LEN,
            "pattern": "^[a-z0-9][a-z0-9_-]*(\\.[a-z0-9][a-z0-9_-]*)*$",
        })
    }
}

/// A reference to a tool: `id` (any version) or `id@version` (exactly that version).
///
/// `Display` writes the same form that `FromStr` reads, so references round-trip.
/// Serialized as a plain JSON string.
///
/// ```
/// use locara_manifest::ToolRef;
///
/// let r: ToolRef = "text.chunk@0.1.0".parse()?;
/// assert_eq!(r.id.as_str(), "text.chunk");
/// assert_eq!(r.version.as_ref().map(ToString::to_string).as_deref(), Some("0.1.0"));
/// assert_eq!(r.to_string(), "text.chunk@0.1.0");
/// # Ok::<(), locara_manifest::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ToolRef {
    /// The tool's id.
    pub id: ToolName,
    /// The exact version, or `None` to let the resolver pick one.
    pub version: Option<Version>,
}

impl ToolRef {
    /// A reference to any version of `id`.
    #[must_use]
    pub fn new(id: ToolName) -> ToolRef {
        ToolRef { id, version: None }
    }

    /// Pins the reference to `version`.
    #[must_use]
    pub fn with_version(mut self, version: Version) -> ToolRef {
        self.version = Some(version);
        self
    }
}

impl FromStr for ToolRef {
    type Err = Error;

    /// Parses `id` or `id@version`.
    fn from_str(s: &str) -> Result<ToolRef, Error> {
        match s.split_once('@') {
            None => Ok(ToolRef::new(s.parse()?)),
            Some((id, version)) => Ok(ToolRef::new(id.parse()?).with_version(version.parse()?)),
        }
    }
}

impl fmt::Display for ToolRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.version {
            None => write!(f, "{}", self.id),
            Some(version) => write!(f, "{}@{version}", self.id),
        }
    }
}

impl Serialize for ToolRef {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ToolRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ToolRef, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(feature = "json-schema")]
impl schemars::JsonSchema for ToolRef {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ToolRef".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A tool reference: `id` or `id@version`, e.g. `text.chunk@0.1.0`.",
            "type": "string",
            "pattern": "^[a-z0-9][a-z0-9_-]*(\\.[a-z0-9][a-z0-9_-]*)*(@.+)?$",
        })
    }
}

/// How many names [`available_list`] shows at most.
pub const AVAILABLE_LISTED: usize = 10;

/// `available: a, b, c`: the end of an error about a tool that does not exist, naming the tools
/// (`names`, ids or `id@version`s, or another catalog's names) that do. At most
/// [`AVAILABLE_LISTED`] are shown, the closest to `wanted` first (same first segment, then
/// containing its last segment, then the longest common prefix; ties in the given order),
/// followed by how many more there are, so that an error read by a language model stays short
/// however large the catalog: the catalog's search finds the rest.
///
/// ```
/// use locara_manifest::available_list;
///
/// assert_eq!(available_list("text.chonk", &["pdf.split", "text.chunk"]), "available: text.chunk, pdf.split");
/// let many: Vec<String> = (0..25).map(|i| format!("tool.t{i:02}")).collect();
/// let listed = available_list("pdf.split", &many);
/// assert!(listed.starts_with("available: tool.t00, tool.t01, "), "{listed}");
/// assert!(listed.ends_with(", tool.t09, and 15 more"), "{listed}");
/// ```
pub fn available_list<S: AsRef<str>>(wanted: &str, names: &[S]) -> String {
    fn id(s: &str) -> String {
        s.split('@').next().unwrap_or(s).to_ascii_lowercase()
    }
    let separators = ['.', '_', '-'];
    let wanted = id(wanted);
    let first = wanted.split(separators).next().unwrap_or_default();
    let last = wanted.rsplit(separators).next().unwrap_or_default();
    let closeness = |name: &str| {
        let name = id(name);
        let common = wanted
            .chars()
            .zip(name.chars())
            .take_while(|(a, b)| a == b)
            .count();
        (
            name.split(separators).next() == Some(first),
            !last.is_empty() && name.contains(last),
            common,
        )
    };
    let mut ranked: Vec<(_, &str)> = names
        .iter()
        .map(|n| (closeness(n.as_ref()), n.as_ref()))
        .collect();
    // Stable: among names as close as each other, the given order stays.
    ranked.sort_by_key(|(closeness, _)| std::cmp::Reverse(*closeness));
    let shown: Vec<&str> = ranked
        .iter()
        .take(AVAILABLE_LISTED)
        .map(|(_, n)| *n)
        .collect();
    let more = names.len().saturating_sub(AVAILABLE_LISTED);
    if more == 0 {
        format!("available: {}", shown.join(", "))
    } else {
        format!("available: {}, and {more} more", shown.join(", "))
    }
}
