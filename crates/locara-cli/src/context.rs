//! What every command shares: the home, the engine, the app manifest, and how the facade and
//! the registry are opened from them.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, OnceLock},
};

use anyhow::{Context as _, format_err};
use locara_facade::{AppManifest, FsGrant, Grants, LlmEndpoint, Locara, LocaraConfig, SafetyTier};
use locara_manifest::NetAccess;
use locara_registry::{Registry, RegistryConfig, SigningKey, TrustStore};

use crate::{
    approve::{CliApprover, Policy},
    cli::Cli,
};

/// The name of the home directory looked for above the current directory and in `$HOME`.
const HOME_DIR_NAME: &str = ".locara";

/// The app manifest looked for in the current directory.
const APP_FILE_NAME: &str = "locara.json";

/// The global options, resolved.
#[derive(Debug)]
pub(crate) struct Context {
    /// The Locara home.
    pub(crate) home: PathBuf,
    /// The engine.
    pub(crate) engine: crate::cli::Engine,
    /// `--temp-dir`: where calls' temp dirs are made.
    temp_dir: Option<PathBuf>,
    /// `--no-fuel-metering`.
    no_fuel_metering: bool,
    /// `--user`: who calls are made for.
    user: Option<String>,
    /// The app manifest, read when a facade is opened (so a broken one does not stop `keygen`).
    pub(crate) app_file: Option<PathBuf>,
    /// Machine output.
    pub(crate) json: bool,
    /// Approves privileged calls: `--yes`, `--policy`, else the terminal.
    approver: Arc<CliApprover>,
    /// `--provider` files.
    providers: Vec<PathBuf>,
    /// `--allow-host` hosts.
    allow_hosts: Vec<String>,
    /// `--llm`, `--llm-model` and `LOCARA_LLM_API_KEY`.
    llm: Option<LlmEndpoint>,
    /// `--search-provider`, `--search-format` and `LOCARA_SEARCH_API_KEY`.
    search: Option<locara_http::SearchProvider>,
    /// `--mcp` servers, as (name, URL or command line).
    mcp_servers: Vec<(String, String)>,
    /// Every outbound connection's TLS roots (the system's plus `--ca-cert`), resolver and
    /// proxies (the environment's).
    connector: locara_egress::Connector,
}

impl Context {
    /// Resolves the global options: finds the home and reads the app manifest.
    pub(crate) fn new(cli: &Cli) -> anyhow::Result<Context> {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let home = match &cli.home {
            Some(home) => home.clone(),
            None => find_home(&cwd, std::env::home_dir().as_deref()).ok_or_else(|| {
                format_err!("cannot find a Locara home: pass `--home DIR` or set LOCARA_HOME")
            })?,
        };
        let app_file = match &cli.app {
            Some(file) => Some(file.clone()),
            None => Some(cwd.join(APP_FILE_NAME)).filter(|f| f.is_file()),
        };
        let policy = match &cli.policy {
            Some(path) => Some((path.clone(), Policy::read(path)?)),
            None => None,
        };
        let mut connector = locara_egress::Connector::new();
        for file in &cli.ca_certs {
            connector = connector
                .with_ca_cert(file)
                .with_context(|| format!("--ca-cert {}", file.display()))?;
        }
        Ok(Context {
            connector,
            home,
            engine: cli.engine,
            temp_dir: cli.temp_dir.clone(),
            no_fuel_metering: cli.no_fuel_metering,
            user: cli.user.clone().filter(|u| !u.trim().is_empty()),
            app_file,
            json: cli.json,
            approver: Arc::new(CliApprover {
                yes: cli.yes,
                policy,
            }),
            providers: cli.providers.clone(),
            mcp_servers: cli
                .mcp_servers
                .iter()
                .map(|spec| {
                    spec.split_once('=')
                        .filter(|(name, server)| !name.is_empty() && !server.trim().is_empty())
                        .map(|(name, server)| (name.to_owned(), server.trim().to_owned()))
                        .ok_or_else(|| {
                            format_err!(
                                "--mcp {spec:?}: expected NAME=http://HOST:PORT/mcp or NAME=COMMAND [ARG…]"
                            )
                        })
                })
                .collect::<anyhow::Result<_>>()?,
            allow_hosts: cli.allow_hosts.clone(),
            search: cli.search_provider.as_ref().map(|url| {
                let provider = locara_http::SearchProvider::new(url, cli.search_format.format());
                match std::env::var("LOCARA_SEARCH_API_KEY") {
                    Ok(key) => provider.with_api_key(key),
                    Err(_) => provider,
                }
            }),
            llm: cli.llm.as_ref().map(|url| {
                let endpoint = LlmEndpoint::new(url, &cli.llm_model);
                match std::env::var("LOCARA_LLM_API_KEY") {
                    Ok(key) if !key.is_empty() => endpoint.with_api_key(key),
                    _ => endpoint,
                }
            }),
        })
    }

    /// `<home>/models`, the model store.
    pub(crate) fn models_dir(&self) -> PathBuf {
        LocaraConfig::new(&self.home).models_dir()
    }

    /// `<home>/registry`.
    pub(crate) fn registry_dir(&self) -> PathBuf {
        self.home.join("registry")
    }

    /// `<home>/trust`.
    pub(crate) fn trust_dir(&self) -> PathBuf {
        self.home.join("trust")
    }

    /// `<home>/keys`: the host's own keys (the receipt key), made mode 0700 when missing.
    pub(crate) fn keys_dir(&self) -> PathBuf {
        self.home.join("keys")
    }

    /// `<home>/locara.lock`.
    pub(crate) fn lockfile(&self) -> PathBuf {
        self.home.join("locara.lock")
    }

    /// Fails with a message a person can act on when the home has no registry.
    pub(crate) fn require_registry(&self) -> anyhow::Result<()> {
        let registry = self.registry_dir();
        if registry.is_dir() {
            return Ok(());
        }
        Err(format_err!(
            "no tools installed in {}: run `cargo xtask build-tools` (in the Locara repo) or `locara publish`",
            registry.display()
        ))
    }

    /// The keys in `<home>/trust` and its revocation list, `revoked.json` (none when the
    /// directory does not exist). Its files are read as every home file: regular files only,
    /// bounded.
    pub(crate) fn trust(&self) -> anyhow::Result<TrustStore> {
        let dir = self.trust_dir();
        if !dir.is_dir() {
            return Ok(TrustStore::new());
        }
        TrustStore::load_dir(&dir)
            .with_context(|| format!("cannot load the trusted keys in {}", dir.display()))
    }

    /// The home's registry trusting `<home>/trust`, caching in `cache_dir`, without a lockfile.
    pub(crate) fn registry(&self, cache_dir: &Path) -> anyhow::Result<Registry> {
        let config = RegistryConfig::new(self.registry_dir())
            .with_cache_dir(cache_dir)
            .with_model_dir(self.models_dir())
            .with_trust(self.trust()?);
        Ok(Registry::new(config)?)
    }

    /// The home's registry as `locara run` opens it: trusting `<home>/trust`, caching in
    /// `<home>/cache`, pinning in `<home>/locara.lock`.
    pub(crate) fn locked_registry(&self) -> anyhow::Result<Registry> {
        let config = RegistryConfig::new(self.registry_dir())
            .with_cache_dir(self.home.join("cache"))
            .with_model_dir(self.models_dir())
            .with_trust(self.trust()?)
            .with_lockfile(self.lockfile());
        Ok(Registry::new(config)?)
    }

    /// Opens the facade. Without an app manifest, `dir` (if any) is granted, read-only unless
    /// `allow_write`, and every safety tier is admitted (a privileged call still needs the
    /// approver's yes: `--yes`, `--policy` or the terminal): the person at the terminal named
    /// the tool. With one, the app's grants rule and `dir` only selects the workspace.
    pub(crate) fn locara(&self, dir: Option<&Path>, allow_write: bool) -> anyhow::Result<Locara> {
        self.locara_with_output(dir, allow_write, None, None)
    }

    /// Like [`Context::locara`]; without an app manifest, `out` (if any) is granted read-write
    /// too: the person at the terminal chose it for the tool's output files. `receipt_key`
    /// signs the receipts of calls that ask for one.
    pub(crate) fn locara_with_output(
        &self,
        dir: Option<&Path>,
        allow_write: bool,
        out: Option<&Path>,
        receipt_key: Option<SigningKey>,
    ) -> anyhow::Result<Locara> {
        self.open(self.app_file.as_deref(), dir, allow_write, out, receipt_key)
    }

    /// Opens the facade for the app manifest `app` (whatever `--app` said): a server's
    /// callers each get the app their key names.
    pub(crate) fn locara_for_app(&self, app: &Path, dir: Option<&Path>) -> anyhow::Result<Locara> {
        self.open(Some(app), dir, false, None, None)
    }

    fn open(
        &self,
        app_file: Option<&Path>,
        dir: Option<&Path>,
        allow_write: bool,
        out: Option<&Path>,
        receipt_key: Option<SigningKey>,
    ) -> anyhow::Result<Locara> {
        // An app may ship every tool it uses itself; then the home needs no registry.
        if app_file.is_none() {
            self.require_registry()?;
        }
        let mut config = LocaraConfig::new(&self.home)
            .with_engine(self.engine.kind())
            .with_fuel_metering(!self.no_fuel_metering)
            .with_approver(self.approver.clone());
        if let Some(dir) = &self.temp_dir {
            config = config.with_temp_root(dir);
        }
        // Without an app manifest the person at the terminal is the app, and is offered the
        // memory tools (scoped by `--user`, loaded on first use); an app manifest's tool list
        // is the whole catalog.
        if app_file.is_none() {
            config = config.with_memory();
        }
        if let Some(user) = &self.user {
            config = config.with_user(user);
        }
        if let Some(key) = receipt_key {
            config = config.with_receipt_key(key);
        }
        if let Some(llm) = &self.llm {
            config = config.with_llm(llm.clone());
        }
        // One client for every request the call may make: web.fetch, --llm, providers and
        // web.search share the TLS roots and proxies.
        let http: Arc<dyn locara_facade::HttpClient> =
            Arc::new(locara_http::HyperClient::new(self.connector.clone()));
        config = config.with_http_client(http.clone());
        let mut provider_hosts = Vec::new();
        for file in &self.providers {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read the provider manifest {}", file.display()))?;
            let tool = locara_http::provider_with(&text, http.clone())
                .with_context(|| format!("cannot use the provider {}", file.display()))?;
            provider_hosts.extend(tool.manifest().wasi_imports.net.allowed_hosts.clone());
            config = config.with_host_tool(tool);
        }
        // `web.search` asks the service the person named, but its host is granted like any
        // other (`--allow-host`): a host grant is the app's, web.fetch's too.
        if let Some(search) = &self.search {
            let tool = locara_http::web_search(search.clone().with_client(http.clone()))
                .context("cannot use the search provider (--search-provider)")?;
            config = config.with_host_tool(tool);
        }
        for tool in self.mcp_tools()? {
            config = config.with_host_tool(tool);
        }
        match app_file.map(load_app).transpose()? {
            Some((app, app_dir)) => {
                if allow_write {
                    eprintln!(
                        "note: --allow-write is ignored: the app manifest's grants decide what tools may write"
                    );
                }
                if !self.allow_hosts.is_empty() {
                    eprintln!(
                        "note: --allow-host is ignored: the app manifest's grants decide which hosts tools may reach"
                    );
                }
                config = config.with_app(app, app_dir);
            }
            None => {
                let mut grants = Grants::new().with_max_safety_tier(SafetyTier::Privileged);
                if let Some(dir) = dir {
                    grants = grants.with_fs(FsGrant::new(dir).with_write(allow_write));
                }
                if let Some(out) = out {
                    grants = grants.with_fs(FsGrant::new(out).with_write(true));
                }
                // The person at the terminal named each provider and each `--allow-host`: they
                // are granted, and the language model when `--llm` names one.
                provider_hosts.extend(self.allow_hosts.iter().cloned());
                provider_hosts.sort();
                provider_hosts.dedup();
                let mut net = NetAccess::new();
                for host in provider_hosts {
                    net = net.with_host(host);
                }
                grants = grants.with_net(net);
                if self.llm.is_some() {
                    grants = grants.with_service(locara_facade::LLM_CHAT);
                }
                // The home's own key-value store (namespace `locara`), progress reports,
                // which only reach the terminal, code mode (a program's tool calls are
                // bounded by these same grants, so it can do nothing the user could not), and
                // tools' own pinned models run natively, which reach nothing.
                grants = grants
                    .with_service(locara_facade::KV)
                    .with_service(locara_facade::PROGRESS)
                    .with_service(locara_facade::TOOLS)
                    .with_service(locara_facade::MODELS_RUN);
                config = config.with_grants(grants);
            }
        }
        Ok(Locara::new(&config)?)
    }
}

impl Context {
    /// Connects to each `--mcp` server and returns its tools.
    ///
    /// The connections live on a runtime of their own, kept for the whole process: a command's
    /// runtime comes and goes, and a call on an MCP tool only sends a message to the
    /// connection's task, wherever that runs.
    fn mcp_tools(&self) -> anyhow::Result<Vec<locara_facade::HostTool>> {
        static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
        if self.mcp_servers.is_empty() {
            return Ok(Vec::new());
        }
        let runtime = match RUNTIME.get() {
            Some(runtime) => runtime,
            None => {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                    .context("cannot start the async runtime")?;
                RUNTIME.get_or_init(|| runtime)
            }
        };
        let mut tools = Vec::new();
        for (name, server) in &self.mcp_servers {
            let backend = runtime.block_on(async {
                if server.starts_with("http://") || server.starts_with("https://") {
                    locara_mcp::McpBackend::connect_http_with(name, server, &self.connector).await
                } else {
                    let mut words = server.split_whitespace();
                    let mut command = tokio::process::Command::new(words.next().unwrap_or(""));
                    command.args(words).stderr(std::process::Stdio::null());
                    locara_mcp::McpBackend::connect_stdio(name, command).await
                }
            });
            let backend = backend
                .with_context(|| format!("cannot use the MCP server `{name}` ({server})"))?;
            tools.extend(
                runtime
                    .block_on(backend.host_tools())
                    .with_context(|| format!("cannot list the tools of the MCP server `{name}`"))?,
            );
        }
        Ok(tools)
    }
}

/// The nearest `.locara` directory in `cwd` or above it, else `<user_home>/.locara`.
pub(crate) fn find_home(cwd: &Path, user_home: Option<&Path>) -> Option<PathBuf> {
    cwd.ancestors()
        .map(|dir| dir.join(HOME_DIR_NAME))
        .find(|candidate| candidate.is_dir())
        .or_else(|| user_home.map(|home| home.join(HOME_DIR_NAME)))
}

/// Reads an app manifest; its relative paths are relative to its directory.
fn load_app(file: &Path) -> anyhow::Result<(AppManifest, PathBuf)> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read the app manifest {}", file.display()))?;
    let app = AppManifest::from_json(&text)
        .with_context(|| format!("invalid app manifest {}", file.display()))?;
    let dir = match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    Ok((app, dir))
}

/// `dir` as an absolute path, checked to be an existing directory.
pub(crate) fn existing_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    let canonical = std::fs::canonicalize(dir)
        .with_context(|| format!("cannot use --dir {}", dir.display()))?;
    if !canonical.is_dir() {
        return Err(format_err!(
            "cannot use --dir {}: it is not a directory",
            dir.display()
        ));
    }
    Ok(canonical)
}

/// `dir`, created when missing, as an absolute path.
pub(crate) fn created_dir(dir: Option<&Path>, what: &str) -> anyhow::Result<Option<PathBuf>> {
    let Some(dir) = dir else {
        return Ok(None);
    };
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the {what} directory {}", dir.display()))?;
    Ok(Some(existing_dir(dir)?))
}

/// Parses tool references given on the command line (`id` or `id@version`).
pub(crate) fn tool_refs(names: &[String]) -> anyhow::Result<Vec<locara_manifest::ToolRef>> {
    names
        .iter()
        .map(|name| {
            name.trim()
                .parse::<locara_manifest::ToolRef>()
                .with_context(|| format!("invalid tool reference `{name}`"))
        })
        .collect()
}
