//! The app manifest: which tools an app uses and what it grants them.

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::json;
use crate::tool::check_non_empty;
use crate::{Error, NetAccess, SafetyTier, ToolRef};

/// An app's manifest: the tools it uses and the grants that bound them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "json-schema", schemars(title = "Locara app manifest"))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AppManifest {
    /// Version of this manifest format; must be 1.
    #[cfg_attr(feature = "json-schema", schemars(extend("const" = 1)))]
    pub schema_version: u32,
    /// The app's name, for messages and logs.
    pub name: String,
    /// The tools the app may call.
    #[serde(default)]
    pub tools: Vec<AppTool>,
    /// What the app allows its tools; everything not granted is denied.
    #[serde(default)]
    pub grants: Grants,
}

impl AppManifest {
    /// The only `schema_version` this crate understands.
    pub const SCHEMA_VERSION: u32 = 1;

    /// An app with no tools and the default (deny-all, `read_only`) grants.
    #[must_use]
    pub fn new(name: impl Into<String>) -> AppManifest {
        AppManifest {
            schema_version: Self::SCHEMA_VERSION,
            name: name.into(),
            tools: Vec::new(),
            grants: Grants::default(),
        }
    }

    /// Parses and validates an app manifest.
    ///
    /// ```
    /// use locara_manifest::{AppManifest, AppTool, SafetyTier};
    ///
    /// let app = AppManifest::from_json(r#"{
    ///   "schema_version": 1,
    ///   "name": "notes",
    ///   "tools": [
    ///     "text.chunk@0.1.0",
    ///     { "path": "tools/my.tool.wasm", "manifest": "tools/manifest.json", "signature": "tools/manifest.sig.json" }
    ///   ],
    ///   "grants": { "max_safety_tier": "side_effecting" }
    /// }"#)?;
    /// assert!(matches!(app.tools[0], AppTool::Registry(_)));
    /// assert_eq!(app.grants.max_safety_tier, SafetyTier::SideEffecting);
    /// # Ok::<(), locara_manifest::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Returns [`Error::Json`] (with line, column and the parser's message) if the text is not a
    /// well-formed app manifest, including an unknown field or a registry tool without a version.
    /// Returns the errors of [`AppManifest::validate`] otherwise.
    pub fn from_json(text: &str) -> Result<AppManifest, Error> {
        let app: AppManifest = json::from_str("app manifest", text)?;
        app.validate()?;
        Ok(app)
    }

    /// Serializes the app manifest as pretty-printed JSON with a trailing newline.
    #[must_use]
    pub fn to_json_pretty(&self) -> String {
        json::to_pretty(self)
    }

    /// Checks the rules that the JSON types alone do not enforce.
    ///
    /// # Errors
    ///
    /// - [`Error::UnsupportedVersion`] if `schema_version` is not 1.
    /// - [`Error::EmptyField`] for an empty `name`, service or custom tool path.
    /// - [`Error::UnpinnedTool`] for a registry tool without a version.
    /// - [`Error::DuplicateTool`] for a registry tool listed twice.
    /// - [`Error::InvalidNetHost`] for a bad entry in `grants.net.allowed_hosts`.
    pub fn validate(&self) -> Result<(), Error> {
        if self.schema_version != Self::SCHEMA_VERSION {
            return Err(Error::UnsupportedVersion {
                what: "app manifest schema",
                found: self.schema_version,
                expected: Self::SCHEMA_VERSION,
            });
        }
        check_non_empty("name", &self.name)?;
        let mut seen = BTreeSet::new();
        for (i, tool) in self.tools.iter().enumerate() {
            match tool {
                AppTool::Registry(reference) => {
                    if reference.version.is_none() {
                        return Err(Error::UnpinnedTool {
                            reference: reference.to_string(),
                        });
                    }
                    if !seen.insert(&reference.id) {
                        return Err(Error::DuplicateTool {
                            id: reference.id.to_string(),
                        });
                    }
                }
                AppTool::Custom {
                    path,
                    manifest,
                    signature,
                } => {
                    for (name, value) in [
                        ("path", path),
                        ("manifest", manifest),
                        ("signature", signature),
                    ] {
                        check_non_empty(&format!("tools[{i}].{name}"), &value.to_string_lossy())?;
                    }
                }
            }
        }
        for (i, service) in self.grants.services.iter().enumerate() {
            check_non_empty(&format!("grants.services[{i}]"), service)?;
        }
        for (i, grant) in self.grants.fs.iter().enumerate() {
            check_non_empty(
                &format!("grants.fs[{i}].path"),
                &grant.path.to_string_lossy(),
            )?;
        }
        self.grants.net.validate("grants.net.allowed_hosts")
    }

    /// Adds a tool.
    #[must_use]
    pub fn with_tool(mut self, tool: AppTool) -> AppManifest {
        self.tools.push(tool);
        self
    }

    /// Sets `grants`.
    #[must_use]
    pub fn with_grants(mut self, grants: Grants) -> AppManifest {
        self.grants = grants;
        self
    }
}

/// A tool an app uses.
///
/// In JSON, a registry tool is the string `id@version`, and a custom tool is an object with
/// `path`, `manifest` and `signature`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(untagged, deny_unknown_fields)]
#[non_exhaustive]
pub enum AppTool {
    /// A registry tool pinned to an exact version, e.g. `text.chunk@0.1.0`.
    Registry(ToolRef),
    /// A tool shipped with the app. Paths are relative to the app manifest's directory.
    Custom {
        /// The wasm module.
        path: PathBuf,
        /// The tool's `manifest.json`.
        manifest: PathBuf,
        /// The tool's `manifest.sig.json`.
        signature: PathBuf,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CustomTool {
    path: PathBuf,
    manifest: PathBuf,
    signature: PathBuf,
}

impl<'de> Deserialize<'de> for AppTool {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<AppTool, D::Error> {
        struct AppToolVisitor;

        impl<'de> Visitor<'de> for AppToolVisitor {
            type Value = AppTool;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a registry tool as \"id@version\" or a custom tool as {\"path\", \"manifest\", \"signature\"}",
                )
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<AppTool, E> {
                let reference: ToolRef = s.parse().map_err(E::custom)?;
                if reference.version.is_none() {
                    return Err(E::custom(Error::UnpinnedTool {
                        reference: s.to_owned(),
                    }));
                }
                Ok(AppTool::Registry(reference))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<AppTool, A::Error> {
                let CustomTool {
                    path,
                    manifest,
                    signature,
                } = CustomTool::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(AppTool::Custom {
                    path,
                    manifest,
                    signature,
                })
            }
        }

        deserializer.deserialize_any(AppToolVisitor)
    }
}

/// What an app allows its tools. Everything not granted is denied; the default grants nothing
/// and admits only `read_only` tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Grants {
    /// Host directories the user may select as `/workspace`; relative paths are resolved against
    /// the app manifest's directory.
    #[serde(default)]
    pub fs: Vec<FsGrant>,
    /// Network hosts tools may reach (a tool gets the intersection with what it asks for).
    #[serde(default)]
    pub net: NetAccess,
    /// Host services beyond WASI tools may use, e.g. `llm.chat`.
    #[serde(default)]
    pub services: Vec<String>,
    /// The most dangerous safety tier the app admits (default `read_only`: side effects are opt-in).
    #[serde(default = "default_max_safety_tier")]
    pub max_safety_tier: SafetyTier,
}

fn default_max_safety_tier() -> SafetyTier {
    SafetyTier::ReadOnly
}

impl Default for Grants {
    fn default() -> Grants {
        Grants {
            fs: Vec::new(),
            net: NetAccess::default(),
            services: Vec::new(),
            max_safety_tier: default_max_safety_tier(),
        }
    }
}

impl Grants {
    /// Grants nothing and admits only `read_only` tools.
    #[must_use]
    pub fn new() -> Grants {
        Grants::default()
    }

    /// Adds a filesystem grant.
    #[must_use]
    pub fn with_fs(mut self, grant: FsGrant) -> Grants {
        self.fs.push(grant);
        self
    }

    /// Sets `net`.
    #[must_use]
    pub fn with_net(mut self, net: NetAccess) -> Grants {
        self.net = net;
        self
    }

    /// Adds a host service such as `llm.chat`.
    #[must_use]
    pub fn with_service(mut self, service: impl Into<String>) -> Grants {
        self.services.push(service.into());
        self
    }

    /// Sets `max_safety_tier`.
    #[must_use]
    pub fn with_max_safety_tier(mut self, tier: SafetyTier) -> Grants {
        self.max_safety_tier = tier;
        self
    }
}

/// A host directory the user may select as `/workspace`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct FsGrant {
    /// The directory; relative paths are resolved against the app manifest's directory.
    pub path: PathBuf,
    /// Whether tools that declare `read_write` may write there (default `false`).
    #[serde(default)]
    pub write: bool,
}

impl FsGrant {
    /// A read-only grant of `path`.
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> FsGrant {
        FsGrant {
            path: path.into(),
            write: false,
        }
    }

    /// Sets `write`.
    #[must_use]
    pub fn with_write(mut self, write: bool) -> FsGrant {
        self.write = write;
        self
    }
}
