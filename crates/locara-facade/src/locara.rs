//! [`Locara`]: the entry point a host builds from a [`LocaraConfig`].

use crate::GatewayLimits;
use std::{collections::HashMap, path::PathBuf, sync::Arc};

use locara_exec::{
    Approver, CallContext, ExecConfig, HostTool, HttpClient, LlmEndpoint, Pipeline, ProgressSink,
    Resolver, ServicesConfig, ToolCall, ToolResult,
};
use locara_manifest::{AppManifest, AppTool, Grants, SafetyTier, ToolManifest, ToolName, ToolRef};
#[cfg(feature = "memory")]
use locara_memory::{HybridWeights, LazyMemory};
use locara_registry::{Registry, RegistryConfig, SigningKey, TrustStore, VerifiedArtifact};
use locara_sandbox::{BackendKind, Enforcement, Sandbox, SandboxConfig};
use tower::ServiceExt;

use crate::{
    ApprovalReport, Error, ErrorReport, RunRequest, RunResponse, ToolDescription, ToolSummary,
    files, receipt,
    search::{self, Document},
    types::{LimitsReport, StatsReport, TruncationReport, ViolationReport},
};

/// How a [`Locara`] is built.
///
/// Everything lives under one home directory:
/// `registry/` (signed tools), `cache/` (content-addressed artifacts and compiled modules),
/// `trust/` (trusted publisher keys, `*.pub.json`) and `locara.lock` (the lockfile).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LocaraConfig {
    /// The home directory.
    pub home: PathBuf,
    /// The engine. By default Wasmtime.
    pub engine: BackendKind,
    /// The app manifest, when the host has one: its tools are the only ones callable, and its
    /// grants bound what any tool gets. Relative paths in it are relative to `app_dir`.
    pub app: Option<AppManifest>,
    /// The directory of the app manifest. By default the current directory.
    pub app_dir: PathBuf,
    /// The grants used when there is no app manifest. By default nothing beyond the sandbox's
    /// defaults (no directories, no network, no services) and tools up to the side-effecting
    /// tier: the host itself is the app.
    pub grants: Grants,
    /// The most output returned per call, in bytes of JSON. By default 1 MiB.
    pub output_cap_bytes: usize,
    /// Where per-call temp dirs are made. By default the system temp dir.
    pub temp_root: Option<PathBuf>,
    /// Whether a finished call's temp dir is removed by a cleaner thread, so that the call
    /// returns without waiting for the disk
    /// ([`SandboxConfig::remove_temp_dirs_in_background`]). By default `true`; dropping the
    /// `Locara` waits until every temp dir is removed.
    pub background_temp_removal: bool,
    /// Whether Wasmtime meters fuel, enforcing each call's fuel limit
    /// ([`SandboxConfig::meter_fuel`]). By default `true`. Without it, guest code runs 20–35%
    /// faster and a call is bounded by its wall-time limit instead; its report lists `fuel`
    /// as not enforced ([`LimitsReport::not_enforced`]) and counts no fuel. wasmi always
    /// meters.
    pub meter_fuel: bool,
    /// Where compiled modules are cached. By default `<home>/cache/compiled`. Entries are keyed
    /// by the module's hash and the engine's configuration and checksummed, so homes may share
    /// one directory (tests do, so that a large interpreter is compiled once).
    pub compiled_cache: Option<PathBuf>,
    /// Asked before every privileged call. Without one, privileged calls are denied
    /// (`approval_denied`).
    pub approver: Option<Arc<dyn Approver>>,
    /// Signs the receipts of calls that ask for one ([`RunRequest::receipt`]).
    pub receipt_key: Option<SigningKey>,
    /// Tools the host implements in-process; they are callable whatever the app manifest
    /// declares (the host registered them), within the app's grants.
    pub host_tools: Vec<HostTool>,
    /// What wasm tools' host services use: by default `locara-http`'s client for `web.fetch`
    /// (within the hosts the app grants), no language model, so `llm.chat` is refused until
    /// [`LocaraConfig::with_llm`] sets one, and (feature `native-models`) rten to run tools'
    /// pinned models natively for apps that grant [`MODELS_RUN`](crate::MODELS_RUN).
    pub services: ServicesConfig,
    /// The user calls are made for when a request names none: what per-user tools (memory)
    /// are scoped by. By default nobody, and such tools refuse calls.
    pub user: Option<String>,
    /// What the programs of one call may do through the tool gateway, when the app grants
    /// `tools` (see `docs/code-mode.md`). By default [`GatewayLimits::default`].
    pub gateway_limits: GatewayLimits,
    /// Whether the host offers the memory tools (`memory.save`, `memory.search`,
    /// `memory.update`, `memory.delete`) over `<home>/memory/notes.sqlite3`, and blends
    /// meaning into [`Locara::search_tools`] once their embedding model is installed. Off by
    /// default; see [`LocaraConfig::with_memory`]. When on, the weights memory search blends
    /// meaning and wording with.
    #[cfg(feature = "memory")]
    pub memory: Option<HybridWeights>,
}

impl LocaraConfig {
    /// A configuration with home `home` and every other option at its default.
    pub fn new(home: impl Into<PathBuf>) -> LocaraConfig {
        LocaraConfig {
            home: home.into(),
            engine: BackendKind::Wasmtime,
            app: None,
            app_dir: PathBuf::from("."),
            grants: Grants::new().with_max_safety_tier(SafetyTier::SideEffecting),
            output_cap_bytes: 1 << 20,
            temp_root: None,
            background_temp_removal: true,
            meter_fuel: true,
            compiled_cache: None,
            approver: None,
            receipt_key: None,
            host_tools: Vec::new(),
            services: default_services(),
            user: None,
            gateway_limits: GatewayLimits::default(),
            #[cfg(feature = "memory")]
            memory: None,
        }
    }

    /// Bounds what the programs of one call may do through the tool gateway.
    pub fn with_gateway_limits(mut self, limits: GatewayLimits) -> LocaraConfig {
        self.gateway_limits = limits;
        self
    }

    /// Offers the memory tools: a user's notes, saved and searched by meaning and wording,
    /// scoped by the call's user (never by the arguments). The database and the embedding
    /// model (`locara models fetch memory.search`) are opened on first use, and search
    /// ([`Locara::search_tools`]) ranks by meaning too once the model is installed.
    #[cfg(feature = "memory")]
    pub fn with_memory(mut self) -> LocaraConfig {
        self.memory = Some(HybridWeights::default());
        self
    }

    /// Offers the memory tools ([`LocaraConfig::with_memory`]), whose search weighs meaning
    /// and wording by `weights` (by default 0.7 and 0.3; [`HybridWeights::TEXT_ONLY`] is full
    /// text alone). [`Locara::new`] refuses weights that are negative, not finite, or both 0.
    #[cfg(feature = "memory")]
    pub fn with_memory_weights(mut self, weights: HybridWeights) -> LocaraConfig {
        self.memory = Some(weights);
        self
    }

    /// Sets the user calls are made for when a request names none.
    pub fn with_user(mut self, user: impl Into<String>) -> LocaraConfig {
        self.user = Some(user.into());
        self
    }

    /// The name of the app: its manifest's, or `locara` for the host without one. The `kv`
    /// store keeps one namespace per name.
    pub fn app_name(&self) -> &str {
        self.app.as_ref().map_or("locara", |app| app.name.as_str())
    }

    /// Sets the app's language model, the OpenAI-compatible endpoint that tools granted
    /// `llm.chat` (`text.summarize`, `text.translate`, `text.classify`) ask.
    pub fn with_llm(mut self, llm: LlmEndpoint) -> LocaraConfig {
        self.services = self.services.with_llm(llm);
        self
    }

    /// Replaces the HTTP client host services send their requests with.
    pub fn with_http_client(mut self, http: Arc<dyn HttpClient>) -> LocaraConfig {
        self.services = self.services.with_http(http);
        self
    }

    /// Also trusts the certificate authorities of the PEM file at `path` (a private CA) for
    /// every `https` request host services make (`web.fetch`, `llm.chat`), on top of the
    /// system's roots. It replaces the HTTP client with `locara-http`'s, trusting both.
    ///
    /// # Errors
    /// `invalid_config` when the file cannot be read or holds no certificate.
    pub fn with_ca_cert(self, path: impl AsRef<std::path::Path>) -> Result<LocaraConfig, Error> {
        let connector = locara_egress::Connector::new()
            .with_ca_cert(path.as_ref())
            .map_err(|e| {
                Error::new(
                    "invalid_config",
                    e.to_string(),
                    "give a PEM file holding the CA's certificate (-----BEGIN CERTIFICATE-----)",
                )
            })?;
        Ok(self.with_http_client(Arc::new(locara_http::HyperClient::new(connector))))
    }

    /// Registers an in-process tool (see [`HostTool`]). An id the registry also has is served
    /// by the host's tool.
    pub fn with_host_tool(mut self, tool: HostTool) -> LocaraConfig {
        self.host_tools.push(tool);
        self
    }

    /// Sets the approver asked before every privileged call.
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> LocaraConfig {
        self.approver = Some(approver);
        self
    }

    /// Sets the key that signs receipts.
    pub fn with_receipt_key(mut self, key: SigningKey) -> LocaraConfig {
        self.receipt_key = Some(key);
        self
    }

    /// Selects the engine.
    pub fn with_engine(mut self, engine: BackendKind) -> LocaraConfig {
        self.engine = engine;
        self
    }

    /// Uses an app manifest whose relative paths are relative to `dir`.
    pub fn with_app(mut self, app: AppManifest, dir: impl Into<PathBuf>) -> LocaraConfig {
        self.app = Some(app);
        self.app_dir = dir.into();
        self
    }

    /// Sets the grants used without an app manifest.
    pub fn with_grants(mut self, grants: Grants) -> LocaraConfig {
        self.grants = grants;
        self
    }

    /// Sets the output cap.
    pub fn with_output_cap_bytes(mut self, bytes: usize) -> LocaraConfig {
        self.output_cap_bytes = bytes;
        self
    }

    /// Sets where per-call temp dirs are made.
    pub fn with_temp_root(mut self, dir: impl Into<PathBuf>) -> LocaraConfig {
        self.temp_root = Some(dir.into());
        self
    }

    /// Sets whether finished calls' temp dirs are removed in the background.
    pub fn with_background_temp_removal(mut self, enable: bool) -> LocaraConfig {
        self.background_temp_removal = enable;
        self
    }

    /// Sets whether Wasmtime meters fuel ([`LocaraConfig::meter_fuel`]).
    pub fn with_fuel_metering(mut self, enable: bool) -> LocaraConfig {
        self.meter_fuel = enable;
        self
    }

    /// Sets where compiled modules are cached.
    pub fn with_compiled_cache(mut self, dir: impl Into<PathBuf>) -> LocaraConfig {
        self.compiled_cache = Some(dir.into());
        self
    }

    /// `<home>/registry`.
    pub fn registry_dir(&self) -> PathBuf {
        self.home.join("registry")
    }

    /// `<home>/models`: the models tools depend on, `sha256/<hex>` (`locara models fetch`).
    pub fn models_dir(&self) -> PathBuf {
        self.home.join("models")
    }

    /// `<home>/trust`.
    pub fn trust_dir(&self) -> PathBuf {
        self.home.join("trust")
    }
}

/// The tools a host may call: the registry's, or only those its app manifest declares, plus
/// the app's own signed tools.
#[derive(Debug)]
struct AppResolver {
    registry: Arc<Registry>,
    /// App-shipped tools, verified when the host started.
    custom: HashMap<ToolName, VerifiedArtifact>,
    /// With an app manifest: the versions it declares for registry tools.
    declared: Option<HashMap<ToolName, ToolRef>>,
    /// In-process tools, by id, oldest version first.
    host: HashMap<ToolName, Vec<HostTool>>,
}

impl Resolver for AppResolver {
    fn host_tool(&self, tool: &ToolRef) -> Option<HostTool> {
        let versions = self.host.get(&tool.id)?;
        match &tool.version {
            None => versions.last().cloned(),
            Some(version) => versions
                .iter()
                .find(|t| &t.manifest().version == version)
                .cloned(),
        }
    }

    fn models(&self, tool: &ToolManifest) -> Result<Option<PathBuf>, locara_registry::Error> {
        self.registry.models().view(tool)
    }

    fn resolve(&self, tool: &ToolRef) -> Result<VerifiedArtifact, locara_registry::Error> {
        if let Some(artifact) = self.custom.get(&tool.id) {
            let manifest = artifact.manifest();
            if tool.version.as_ref().is_none_or(|v| v == &manifest.version) {
                return Ok(artifact.clone());
            }
        }
        match &self.declared {
            None => self.registry.resolve(tool),
            Some(declared) => match declared.get(&tool.id) {
                // A bare id means the version the app declares.
                Some(pinned) if tool.version.is_none() || tool.version == pinned.version => {
                    self.registry.resolve(pinned)
                }
                // Anything else is not the app's to call.
                _ => {
                    let mut available: Vec<String> =
                        declared.values().map(ToString::to_string).collect();
                    available.extend(
                        self.custom
                            .values()
                            .map(|a| a.manifest().tool_ref().to_string()),
                    );
                    available.sort();
                    Err(locara_registry::Error::ToolNotFound {
                        reference: tool.to_string(),
                        registry: self.registry.root().to_owned(),
                        available,
                    })
                }
            },
        }
    }
}

/// The host services a new config offers: the HTTP client, and, with the `native-models`
/// feature, tools' models run natively ([`MODELS_RUN`](crate::MODELS_RUN), for the apps that
/// grant it).
fn default_services() -> ServicesConfig {
    let services = ServicesConfig::new().with_http(Arc::new(locara_http::HyperClient::default()));
    #[cfg(feature = "native-models")]
    let services = services.with_models(Arc::new(locara_infer::RtenModels::new()));
    services
}

/// Startup refused: two tools claim one `id@version` (or an app ships one id twice).
fn conflicting_tool(message: String, hint: &str) -> Error {
    Error::new("conflicting_tool", message, hint)
}

/// The one entry point for hosts and agents: search, describe, run and chain tools.
///
/// A handle, `Send + Sync` and cheap to clone: every clone is the same instance, and calls may
/// run concurrently through any of them. Dropping the future of [`run`](Locara::run) cancels
/// the call.
#[derive(Debug, Clone)]
pub struct Locara {
    pub(crate) shared: Arc<Shared>,
}

/// What every clone of a [`Locara`] shares. The tool gateway holds a clone for as long as a
/// call's program may ask it, so an inner call runs on the program's own thread.
#[derive(Debug)]
pub(crate) struct Shared {
    pipeline: Pipeline,
    /// What the app granted (with paths resolved): bounds output directories.
    grants: Arc<Grants>,
    pub(crate) catalog: Vec<Entry>,
    engine: BackendKind,
    pub(crate) receipt_key: Option<SigningKey>,
    /// The HTTP client and language model: what [`Locara::chat`] reaches its model with.
    pub(crate) services: ServicesConfig,
    /// The user of calls whose request names none.
    user: Option<String>,
    /// Whether the app grants `tools`, so calls are served a gateway.
    serves_gateway: bool,
    /// What a call's programs may do through the gateway.
    pub(crate) gateway_limits: crate::GatewayLimits,
    /// The memory tools' store and embedder, when the host offers them.
    #[cfg(feature = "memory")]
    memory: Option<LazyMemory>,
    /// `<home>/cache`: where the catalog's embeddings are kept between processes.
    #[cfg(feature = "memory")]
    cache_dir: PathBuf,
    /// The catalog's embeddings, two per tool in catalog order ([`Document::meanings`]), made
    /// on the first search by meaning.
    #[cfg(feature = "memory")]
    tool_vectors: std::sync::OnceLock<Vec<Vec<f32>>>,
}

#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) manifest: Arc<ToolManifest>,
    artifact_sha256: String,
    /// `wasm`, or `in_process` for a host tool.
    backend: &'static str,
}

impl Locara {
    /// Opens the registry under `config.home`, verifies the app's own tools, and starts the
    /// engine.
    ///
    /// # Errors
    /// When the trust store or lockfile cannot be read, an app tool fails verification, or the
    /// engine cannot start; `conflicting_tool` when an app tool has the `id@version` of a
    /// registry tool (one the registry holds or the app pins), or the app ships one id twice.
    pub fn new(config: &LocaraConfig) -> Result<Locara, Error> {
        let trust_dir = config.trust_dir();
        let trust = if trust_dir.is_dir() {
            TrustStore::load_dir(&trust_dir)?
        } else {
            TrustStore::new()
        };
        let registry = Registry::new(
            RegistryConfig::new(config.registry_dir())
                .with_cache_dir(config.home.join("cache"))
                .with_trust(trust)
                .with_lockfile(config.home.join("locara.lock"))
                .with_model_dir(config.models_dir()),
        )?;
        let registry = Arc::new(registry);

        let mut grants = config.grants.clone();
        let mut custom: HashMap<ToolName, VerifiedArtifact> = HashMap::new();
        // The manifest file of each app-shipped tool, for messages.
        let mut shipped: HashMap<ToolName, PathBuf> = HashMap::new();
        let mut declared = None;
        if let Some(app) = &config.app {
            grants = app.grants.clone();
            for grant in &mut grants.fs {
                if grant.path.is_relative() {
                    grant.path = config.app_dir.join(&grant.path);
                }
            }
            let mut pinned = HashMap::new();
            for tool in &app.tools {
                match tool {
                    AppTool::Registry(reference) => {
                        pinned.insert(reference.id.clone(), reference.clone());
                    }
                    AppTool::Custom {
                        path,
                        manifest,
                        signature,
                    } => {
                        let at = |p: &PathBuf| config.app_dir.join(p);
                        let artifact =
                            registry.verify_path(&at(manifest), &at(signature), &at(path))?;
                        let id = artifact.manifest().id.clone();
                        if let Some(first) = shipped.get(&id) {
                            return Err(conflicting_tool(
                                format!(
                                    "the app ships two tools with the id `{id}`: {} (`{}`) and {} (`{}`)",
                                    first.display(),
                                    custom[&id].manifest().tool_ref(),
                                    at(manifest).display(),
                                    artifact.manifest().tool_ref(),
                                ),
                                "ship one version of each tool; give a different tool its own id",
                            ));
                        }
                        shipped.insert(id.clone(), at(manifest));
                        custom.insert(id, artifact);
                    }
                    _ => {}
                }
            }
            declared = Some(pinned);
        }

        let mut catalog = Vec::new();
        let listing = registry.list()?;
        for rejected in &listing.rejected {
            tracing::warn!(path = %rejected.path.display(), error = %rejected.error, "registry entry rejected");
        }
        // An app-shipped tool must not share its `id@version` with a registry tool: which of the
        // two a call, a receipt or a lockfile pin means would depend on lookup order.
        for (id, artifact) in &custom {
            let version = &artifact.manifest().version;
            let reference = artifact.manifest().tool_ref();
            let in_registry = listing
                .tools
                .iter()
                .any(|t| &t.id == id && &t.version == version);
            let pinned = declared
                .as_ref()
                .and_then(|d| d.get(id))
                .is_some_and(|r| r.version.as_ref() == Some(version));
            if in_registry || pinned {
                let registry_side = if in_registry {
                    format!(
                        "the registry has `{reference}` too ({})",
                        registry
                            .root()
                            .join("tools")
                            .join(id.as_str())
                            .join(version.to_string())
                            .display()
                    )
                } else {
                    format!("the app manifest also lists `{reference}` as a registry tool")
                };
                return Err(conflicting_tool(
                    format!(
                        "the app ships `{reference}` ({}), and {registry_side}: one name for two tools",
                        shipped[id].display()
                    ),
                    "give the app's tool another id or version in its manifest and sign it again, or drop one of the two",
                ));
            }
        }
        for tool in listing.tools {
            let callable = match &declared {
                None => true,
                Some(declared) => declared
                    .get(&tool.id)
                    .is_some_and(|r| r.version.as_ref() == Some(&tool.version)),
            };
            if callable {
                let artifact_sha256 = tool.manifest.artifact.sha256.as_str().to_owned();
                catalog.push(Entry {
                    manifest: tool.manifest,
                    artifact_sha256,
                    backend: "wasm",
                });
            }
        }
        for artifact in custom.values() {
            catalog.push(Entry {
                manifest: Arc::new(artifact.manifest().clone()),
                artifact_sha256: artifact.artifact_digest().to_string(),
                backend: "wasm",
            });
        }
        #[cfg(feature = "memory")]
        let memory = match config.memory {
            Some(weights) => Some(
                LazyMemory::in_home(&config.home, config.models_dir())
                    .with_weights(weights)
                    .map_err(|e| {
                        Error::new(
                            "invalid_config",
                            e.to_string(),
                            "give memory weights that are finite, not negative, and not both 0",
                        )
                    })?,
            ),
            None => None,
        };
        #[cfg(feature = "memory")]
        let memory_tools = memory.as_ref().map(LazyMemory::tools).unwrap_or_default();
        #[cfg(not(feature = "memory"))]
        let memory_tools: Vec<HostTool> = Vec::new();
        let mut host: HashMap<ToolName, Vec<HostTool>> = HashMap::new();
        for tool in config.host_tools.iter().chain(&memory_tools) {
            let id = &tool.manifest().id;
            // A host tool replaces the registry's tool of the same id in the catalog.
            catalog.retain(|e| e.backend != "wasm" || &e.manifest.id != id);
            catalog.push(Entry {
                manifest: Arc::new(tool.manifest().clone()),
                artifact_sha256: String::new(),
                backend: "in_process",
            });
            host.entry(id.clone()).or_default().push(tool.clone());
        }
        for versions in host.values_mut() {
            versions.sort_by(|a, b| a.manifest().version.cmp(&b.manifest().version));
        }
        catalog.sort_by(|a, b| {
            (&a.manifest.id, &a.manifest.version).cmp(&(&b.manifest.id, &b.manifest.version))
        });

        let mut sandbox_config = SandboxConfig::new(config.engine);
        sandbox_config.cache_dir(
            config
                .compiled_cache
                .clone()
                .unwrap_or_else(|| config.home.join("cache").join("compiled")),
        );
        if let Some(temp_root) = &config.temp_root {
            sandbox_config.temp_root(temp_root);
        }
        sandbox_config.remove_temp_dirs_in_background(config.background_temp_removal);
        sandbox_config.meter_fuel(config.meter_fuel);
        let sandbox = Sandbox::new(&sandbox_config).map_err(locara_exec::ExecError::from)?;
        let resolver = Arc::new(AppResolver {
            registry,
            custom,
            declared,
            host,
        });
        let mut services = config.services.clone();
        if services.kv.is_none() {
            services = services.with_kv(Arc::new(crate::kv::LazyKv::new(
                config.home.join("state").join("kv.sqlite"),
                config.app_name(),
            )));
        }
        let mut exec = ExecConfig::new(resolver, sandbox, grants.clone())
            .with_output_cap_bytes(config.output_cap_bytes)
            .with_services(services);
        if let Some(approver) = &config.approver {
            exec = exec.with_approver(Arc::clone(approver));
        }
        let serves_gateway = grants.services.iter().any(|s| s == locara_exec::TOOLS);
        let shared = Shared {
            pipeline: locara_exec::pipeline(&exec),
            grants: Arc::new(grants),
            catalog,
            engine: config.engine,
            receipt_key: config.receipt_key.clone(),
            services: config.services.clone(),
            user: config.user.clone(),
            serves_gateway,
            gateway_limits: config.gateway_limits,
            #[cfg(feature = "memory")]
            memory,
            #[cfg(feature = "memory")]
            cache_dir: config.home.join("cache"),
            #[cfg(feature = "memory")]
            tool_vectors: std::sync::OnceLock::new(),
        };
        Ok(Locara {
            shared: Arc::new(shared),
        })
    }

    /// The engine this instance runs tools on.
    pub fn engine(&self) -> BackendKind {
        self.shared.engine
    }

    /// Every callable tool (the newest version of each id last), without scores.
    pub fn list(&self) -> Vec<ToolSummary> {
        self.shared
            .catalog
            .iter()
            .map(|e| summary(&e.manifest, None))
            .collect()
    }

    /// Tools whose id, name or description match `query`, best first, at most `limit`.
    ///
    /// With the memory tools on and their embedding model installed, the lexical score is
    /// blended with how close each tool's name and description are to the query in meaning
    /// (`meaning::blend`), so "make this photo smaller" finds `image.resize` first, not `ocr`;
    /// otherwise, or when the model fails to load, the ranking is lexical.
    pub fn search_tools(&self, query: &str, limit: usize) -> Vec<ToolSummary> {
        let documents: Vec<Document> = self
            .shared
            .catalog
            .iter()
            .map(|e| Document {
                id: e.manifest.id.to_string(),
                name: e.manifest.display_name.clone(),
                description: e.manifest.description.clone(),
            })
            .collect();
        let ranked = search::rank(&documents, query);
        #[cfg(feature = "memory")]
        let ranked = match self.similarities(&documents, query) {
            Some(similarities) => crate::meaning::blend(&documents, &ranked, &similarities),
            None => ranked,
        };
        ranked
            .into_iter()
            .take(limit)
            .map(|(i, score)| {
                summary(
                    &self.shared.catalog[i].manifest,
                    Some((score * 1000.0).round() / 1000.0),
                )
            })
            .collect()
    }

    /// The cosine similarity of `query` to each document, when the host has an embedder.
    #[cfg(feature = "memory")]
    fn similarities(&self, documents: &[Document], query: &str) -> Option<Vec<f32>> {
        let memory = self
            .shared
            .memory
            .as_ref()
            .filter(|m| m.model_installed())?;
        let embedder = match memory.embedder() {
            Ok(embedder) => embedder,
            Err(e) => {
                tracing::warn!("searching by wording only: {e}");
                return None;
            }
        };
        let vectors = match self.shared.tool_vectors.get() {
            Some(vectors) => vectors,
            None => {
                let texts: Vec<String> = documents.iter().flat_map(Document::meanings).collect();
                let vectors =
                    crate::meaning::cached_embeddings(&self.shared.cache_dir, &embedder, &texts)?;
                self.shared.tool_vectors.get_or_init(|| vectors)
            }
        };
        let query = embedder.embed_one(query).ok()?;
        Some(
            vectors
                .chunks(2)
                .map(|pair| {
                    pair.iter()
                        .map(|v| locara_memory::Embedder::similarity(v, &query))
                        .fold(f32::MIN, f32::max)
                })
                .collect(),
        )
    }

    /// The callable tools `reference` may name, oldest version first: every version of a bare
    /// id, or the one version it names.
    pub(crate) fn entries<'a>(
        &'a self,
        reference: &'a ToolRef,
    ) -> impl DoubleEndedIterator<Item = &'a Entry> + 'a {
        self.shared.catalog.iter().filter(move |e| {
            e.manifest.id == reference.id
                && reference
                    .version
                    .as_ref()
                    .is_none_or(|v| v == &e.manifest.version)
        })
    }

    /// Everything an agent needs to call `tool` (`id` or `id@version`; a bare id is the newest).
    ///
    /// # Errors
    /// `invalid_tool_ref` or `not_found`, naming the closest tools that do exist (at most ten,
    /// `locara_manifest::available_list`).
    pub fn describe(&self, tool: &str) -> Result<ToolDescription, Error> {
        let reference: ToolRef = tool.trim().parse().map_err(|e: locara_manifest::Error| {
            Error::new(
                "invalid_tool_ref",
                format!("invalid tool reference `{tool}`: {e}"),
                "name a tool as `id` or `id@version`",
            )
        })?;
        let entry = self.entries(&reference).next_back().ok_or_else(|| {
            let ids: Vec<String> = self
                .shared
                .catalog
                .iter()
                .map(|e| e.manifest.tool_ref().to_string())
                .collect();
            Error::new(
                "not_found",
                format!(
                    "no tool `{reference}`; {}",
                    locara_manifest::available_list(&reference.to_string(), &ids)
                ),
                "search the catalog for a tool that fits",
            )
        })?;
        let m = &entry.manifest;
        Ok(ToolDescription {
            summary: summary(m, None),
            license: m.license.clone(),
            input_schema: m.input_schema.clone(),
            output_schema: m.output_schema.clone(),
            capabilities: serde_json::json!({
                "wasi_imports": m.wasi_imports,
                "capability_requirements": m.capability_requirements,
            }),
            limits: {
                let l = m.limits();
                serde_json::json!({
                    "memory_bytes": l.memory_bytes,
                    "wall_time_ms": l.wall_time.as_millis() as u64,
                    "fuel": l.fuel,
                    "output_bytes": l.output_bytes,
                    "max_fds": l.max_fds,
                    "temp_bytes": l.temp_bytes,
                })
            },
            artifact_sha256: entry.artifact_sha256.clone(),
            backend: entry.backend.to_owned(),
        })
    }

    /// Runs one call through the whole pipeline.
    ///
    /// # Errors
    /// Only when the call could not run (unknown or unverifiable tool, capability denied,
    /// invalid arguments, engine failure); a tool that ran and failed is an `Ok` response with
    /// `ok: false`.
    pub async fn run(&self, request: RunRequest) -> Result<RunResponse, Error> {
        self.run_observed(request, None).await
    }

    /// Runs one call like [`run`](Locara::run), handing each progress report the tool makes
    /// (see [`Progress`](crate::Progress)) to `progress` as it comes, on the thread that runs
    /// the tool. Only tools that declare `progress` report, and only when the app grants it.
    ///
    /// # Errors
    /// As [`run`](Locara::run).
    pub async fn run_with_progress(
        &self,
        request: RunRequest,
        progress: ProgressSink,
    ) -> Result<RunResponse, Error> {
        self.run_observed(request, Some(progress)).await
    }

    async fn run_observed(
        &self,
        request: RunRequest,
        progress: Option<ProgressSink>,
    ) -> Result<RunResponse, Error> {
        self.run_framed(request, progress, None).await
    }

    /// Runs one call, an outer one or (with `parent`) one a program made through the gateway
    /// of its call `parent`. Boxed: a program's call may run a program.
    pub(crate) fn run_framed<'a>(
        &'a self,
        request: RunRequest,
        progress: Option<ProgressSink>,
        parent: Option<&'a crate::gateway::Frame>,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<RunResponse, Error>> + Send + 'a>> {
        Box::pin(async move {
            let started = receipt::Clock::start();
            let output_dir = match &request.output_dir {
                Some(dir) => Some(files::granted_output_dir(dir, &self.shared.grants)?),
                None => None,
            };
            let receipt_key = match (request.receipt, &self.shared.receipt_key) {
                (false, _) => None,
                (true, Some(key)) => Some(key),
                (true, None) => {
                    return Err(Error::new(
                        "receipt_unavailable",
                        "a receipt was asked for, but this host has no receipt key",
                        "call without `receipt`, or configure a receipt key (`locara run --receipt FILE` makes one in the home)",
                    ));
                }
            };
            let input_sha256 = receipt_key.map(|_| receipt::digest(&request.arguments));
            let mut context = CallContext::new();
            context.user = request.user.clone().or_else(|| self.shared.user.clone());
            context.seed = request.seed;
            context.progress = progress;
            // Only an app that grants `tools` pays for a gateway.
            let frame = self.shared.serves_gateway.then(|| {
                let frame = crate::gateway::Frame::new(
                    parent,
                    &request,
                    context.user.clone(),
                    context.progress.clone(),
                );
                context.gateway = Some(self.gateway(&frame));
                frame
            });
            let mut call = ToolCall::new(request.tool, request.arguments).with_context(context);
            call.workspace = request.workspace;
            let mut result = self.shared.pipeline.clone().oneshot(call).await?;
            let calls = frame.map(|f| f.take_calls()).unwrap_or_default();
            let produced = std::mem::take(&mut result.files);
            let provenance = std::mem::take(&mut result.provenance);
            let mut response = response(result);
            response.calls = calls;
            response.files = files::deliver(produced, output_dir.as_ref())?;
            if let (Some(key), Some(input_sha256)) = (receipt_key, input_sha256) {
                let body = receipt::build(&response, &provenance, input_sha256, &started);
                response.receipt = Some(receipt::sign(&body, key)?);
            }
            Ok(response)
        })
    }
}

pub(crate) fn tier_name(tier: SafetyTier) -> String {
    serde_json::to_value(tier)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn summary(m: &ToolManifest, score: Option<f64>) -> ToolSummary {
    ToolSummary {
        tool: m.tool_ref().to_string(),
        id: m.id.to_string(),
        version: m.version.to_string(),
        display_name: m.display_name.clone(),
        description: m.description.clone(),
        safety_tier: tier_name(m.safety_tier),
        score,
    }
}

/// `elapsed` in milliseconds, from whole nanoseconds, so that it prints as the decimal it is
/// (0.065278, not 0.06527799999999999).
pub(crate) fn millis(elapsed: std::time::Duration) -> f64 {
    elapsed.as_nanos() as f64 / 1e6
}

fn response(result: ToolResult) -> RunResponse {
    let stats = result.stats;
    let enforced = [
        ("memory", stats.enforced.memory),
        ("wall_time", stats.enforced.wall_time),
        ("fuel", stats.enforced.fuel),
        ("output_bytes", stats.enforced.output),
        ("max_fds", stats.enforced.fds),
    ];
    let names = |how: Enforcement| -> Vec<String> {
        enforced
            .iter()
            .filter(|(_, e)| *e == how)
            .map(|(name, _)| (*name).to_owned())
            .collect()
    };
    let (periodic, not_enforced) = (
        names(Enforcement::Periodic),
        names(Enforcement::NotEnforced),
    );
    let error = result.failure.as_ref().map(|f| {
        let (limit, exit_code) = match f.kind {
            locara_exec::FailureKind::LimitExceeded { limit } => (Some(limit.to_owned()), None),
            locara_exec::FailureKind::ToolError { exit_code } => (None, Some(exit_code)),
            _ => (None, None),
        };
        ErrorReport {
            code: f.kind.name().to_owned(),
            message: f.message.clone(),
            hint: f.hint.clone(),
            violations: f.violations.iter().map(ViolationReport::from).collect(),
            limit,
            exit_code,
        }
    });
    RunResponse {
        tool: result.tool.to_string(),
        ok: result.failure.is_none(),
        output: result.output,
        error,
        stderr: result.stderr,
        files: files::inline(result.files),
        truncated: result.truncation.map(|t| TruncationReport {
            original_bytes: t.original_bytes,
            returned_bytes: t.returned_bytes,
        }),
        approval: result.approval.map(|a| ApprovalReport {
            approved: a.approved,
            by: a.by,
            reason: a.reason,
        }),
        receipt: None,
        calls: Vec::new(),
        stats: StatsReport {
            engine: stats.engine,
            elapsed_ms: millis(stats.elapsed),
            fuel_consumed: stats.fuel_consumed,
            limits: LimitsReport {
                memory_bytes: stats.limits.memory_bytes,
                wall_time_ms: stats.limits.wall_time.as_millis() as u64,
                fuel: stats.limits.fuel,
                output_bytes: stats.limits.output_bytes,
                max_fds: stats.limits.max_fds,
                temp_bytes: stats.limits.temp_bytes,
                periodic,
                not_enforced,
            },
        },
    }
}

/// `Locara` is shared between threads by hosts, and `run`'s future is spawned on runtimes.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Locara>();
};
