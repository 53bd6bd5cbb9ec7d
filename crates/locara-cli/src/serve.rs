//! `serve`: the callable tools as an MCP server (`locara-mcp`), over stdio or streamable HTTP.
//!
//! Stdout belongs to the stdio transport: everything this command says goes to stderr.

use std::{
    collections::HashMap,
    net::SocketAddr,
    path::{Path, PathBuf},
    process::ExitCode,
    sync::Arc,
    time::Duration,
};

use anyhow::{Context as _, format_err};
use locara_mcp::{HttpConfig, HttpServer, LocaraMcp, Metrics, MetricsServer};
use serde::Deserialize;

use crate::{
    cli::{LogFormat, ServeArgs},
    context::{self, Context},
    telemetry::{self, say},
};

/// What `locara serve` runs with: each setting from its flag, else its environment variable
/// (clap reads both into [`ServeArgs`]), else the `--config` file, else its default.
#[derive(Debug)]
pub(crate) struct Settings {
    http: Option<SocketAddr>,
    auth: Option<PathBuf>,
    public_url: Option<String>,
    metrics: Option<SocketAddr>,
    drain_seconds: u64,
    dir: Option<PathBuf>,
    allow_write: bool,
    code_mode: bool,
    stateless: bool,
    log_format: LogFormat,
    log: String,
    otlp_endpoint: Option<String>,
}

/// The `--config` file: the flags' names with `_`, all optional, nothing else.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    http: Option<SocketAddr>,
    auth: Option<PathBuf>,
    public_url: Option<String>,
    metrics: Option<SocketAddr>,
    drain_seconds: Option<u64>,
    dir: Option<PathBuf>,
    allow_write: Option<bool>,
    code_mode: Option<bool>,
    stateless: Option<bool>,
    log_format: Option<LogFormat>,
    log: Option<String>,
    otlp_endpoint: Option<String>,
}

impl Settings {
    /// Merges the flags and environment with the `--config` file, and checks what needs what.
    pub(crate) fn resolve(args: &ServeArgs) -> anyhow::Result<Settings> {
        let file = match &args.config {
            None => ConfigFile::default(),
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read the config file {}", path.display()))?;
                let mut file: ConfigFile = toml::from_str(&text)
                    .with_context(|| format!("{} is not a valid config file", path.display()))?;
                // Paths in the file are relative to it, as a person reading it expects.
                let base = path.parent().unwrap_or(Path::new("."));
                for field in [&mut file.auth, &mut file.dir] {
                    if let Some(relative) = field.as_mut().filter(|p| p.is_relative()) {
                        *relative = base.join(&*relative);
                    }
                }
                file
            }
        };
        let settings = Settings {
            http: args.http.or(file.http),
            auth: args.auth.clone().or(file.auth),
            public_url: args.public_url.clone().or(file.public_url),
            metrics: args.metrics.or(file.metrics),
            drain_seconds: args.drain_seconds.or(file.drain_seconds).unwrap_or(30),
            dir: args.dir.clone().or(file.dir),
            allow_write: args.allow_write || file.allow_write.unwrap_or(false),
            code_mode: args.code_mode || file.code_mode.unwrap_or(false),
            stateless: args.stateless || file.stateless.unwrap_or(false),
            log_format: args
                .log_format
                .or(file.log_format)
                .unwrap_or(LogFormat::Text),
            log: args
                .log
                .clone()
                .or(file.log)
                .unwrap_or_else(|| "info".to_owned()),
            otlp_endpoint: args.otlp_endpoint.clone().or(file.otlp_endpoint),
        };
        let needs_http = [
            ("auth", settings.auth.is_some()),
            ("metrics", settings.metrics.is_some()),
        ];
        if settings.http.is_none()
            && let Some((name, _)) = needs_http.iter().find(|(_, set)| *set)
        {
            return Err(format_err!(
                "`{name}` needs `http` (--http ADDR, LOCARA_HTTP or `http` in the config file): stdio has one client, its own"
            ));
        }
        if settings.public_url.is_some() && settings.auth.is_none() {
            return Err(format_err!(
                "`public_url` is for the OAuth metadata of an authenticated server: set `auth` too"
            ));
        }
        if settings.allow_write && settings.dir.is_none() {
            return Err(format_err!(
                "`allow_write` needs `dir`: the directory to write in"
            ));
        }
        Ok(settings)
    }
}

/// `locara serve`.
pub(crate) fn serve(ctx: &Context, args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let args = &Settings::resolve(args)?;
    let _telemetry = telemetry::init(args.log_format, &args.log, args.otlp_endpoint.as_deref())?;
    if let Some(addr) = args.http
        && !addr.ip().is_loopback()
        && args.auth.is_none()
    {
        return Err(format_err!(
            "refusing to serve on {addr}: it is not a loopback address, and without authentication anyone who can reach it could run tools on this machine; give --auth FILE (API keys from `locara keys add`, or JWTs) to serve there"
        ));
    }
    let dir = args.dir.as_deref().map(context::existing_dir).transpose()?;
    if let Some(auth) = &args.auth {
        return serve_authenticated(ctx, args, auth, dir.as_deref());
    }
    // Without an app manifest every tier is admitted (with one, its grants decide), and each
    // privileged call needs approval: `--yes`, `--policy`, or the terminal (never over stdio,
    // whose stdin is the transport).
    let locara = ctx.locara(dir.as_deref(), args.allow_write)?;
    let metrics = args.metrics.map(|_| Arc::new(Metrics::new()));
    let server = handler(locara, args, dir.as_deref(), metrics.as_ref());
    let tools = server.tools().len();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let served = runtime.block_on(async {
        match args.http {
            None => {
                say(&format!("locara: serving {tools} tools over MCP on stdio"));
                locara_mcp::serve_stdio(server).await
            }
            Some(addr) => {
                let mut config = HttpConfig::new(addr).with_stateless(args.stateless);
                if let Some(metrics) = metrics {
                    config = config.with_metrics(Arc::clone(&metrics));
                    spawn_metrics(args, metrics).await?;
                }
                let server = HttpServer::bind(server, &config).await?;
                say(&format!("locara: serving {tools} tools over MCP"));
                say(&format!("listening on {}", server.url()));
                drain(server, args).await;
                Ok(())
            }
        }
    });
    // The stdio transport may leave a blocking read of stdin behind: do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    served?;
    Ok(ExitCode::SUCCESS)
}

/// `locara serve --http ADDR --auth FILE`: one handler per app the auth file names, each on a
/// facade opened with that app (its tools and grants bound every call of its callers).
fn serve_authenticated(
    ctx: &Context,
    args: &Settings,
    auth_file: &Path,
    dir: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let addr = args
        .http
        .ok_or_else(|| format_err!("--auth needs --http: stdio has one client, its own"))?;
    let stamp = file_stamp(auth_file);
    let auth = Arc::new(locara_auth::Auth::load(auth_file)?);
    let metrics = args.metrics.map(|_| Arc::new(Metrics::new()));
    let mut handlers = HashMap::new();
    for app in auth.apps() {
        let locara = ctx
            .locara_for_app(&app, dir)
            .with_context(|| format!("cannot serve the app {}", app.display()))?;
        handlers.insert(app, handler(locara, args, dir, metrics.as_ref()));
    }
    let apps = handlers.len();
    let mut config = HttpConfig::new(addr)
        .with_auth(Arc::clone(&auth))
        .with_stateless(args.stateless);
    if let Some(url) = &args.public_url {
        config = config.with_public_url(url);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    if let Some(metrics) = &metrics {
        config = config.with_metrics(Arc::clone(metrics));
    }
    runtime.block_on(async {
        if let Some(metrics) = metrics {
            spawn_metrics(args, metrics).await?;
        }
        let served: Vec<PathBuf> = handlers.keys().cloned().collect();
        tokio::spawn(watch_auth(
            Arc::clone(&auth),
            auth_file.to_owned(),
            served,
            stamp,
        ));
        let server = HttpServer::bind_apps(handlers, &config).await?;
        say(&format!(
            "locara: serving {apps} apps over MCP to authenticated callers"
        ));
        say(&format!("listening on {}", server.url()));
        drain(server, args).await;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// What tells one version of a file from the next: its size, modification time and inode.
type FileStamp = (u64, Option<std::time::SystemTime>, u64);

fn file_stamp(path: &Path) -> Option<FileStamp> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path)
        .ok()
        .map(|m| (m.len(), m.modified().ok(), m.ino()))
}

/// How often the auth file is looked at for changes.
const AUTH_POLL: Duration = Duration::from_secs(2);

/// Reloads the auth file whenever it changes (its size, modification time or inode: `locara
/// keys add|remove` and Kubernetes' Secret updates both replace it), so a removed key is
/// refused and a new one admitted within [`AUTH_POLL`], without a restart. A file that does
/// not load, or that names an app this server does not serve, leaves the keys in force as they
/// were, and says so.
/// `seen` is the file's stamp taken before `auth` was loaded, so a change made while the
/// server was starting is not missed.
async fn watch_auth(
    auth: Arc<locara_auth::Auth>,
    path: PathBuf,
    served: Vec<PathBuf>,
    mut seen: Option<FileStamp>,
) {
    let mut tick = tokio::time::interval(AUTH_POLL);
    loop {
        tick.tick().await;
        let now = file_stamp(&path);
        if now == seen {
            continue;
        }
        seen = now;
        match auth.reload(&path, |app| served.iter().any(|s| s == app)) {
            Ok(keys) => say(&format!(
                "locara: reloaded {}: {keys} API keys admitted",
                path.display()
            )),
            Err(error) => say(&format!("locara: kept the keys in force: {error}")),
        }
    }
}

/// Binds `--metrics` and serves it in the background.
async fn spawn_metrics(args: &Settings, metrics: Arc<Metrics>) -> Result<(), locara_mcp::Error> {
    let Some(addr) = args.metrics else {
        return Ok(());
    };
    let server = MetricsServer::bind(addr, metrics).await?;
    say(&format!(
        "metrics on http://{}/metrics",
        server.local_addr()
    ));
    tokio::spawn(server.run());
    Ok(())
}

/// Serves until SIGTERM or Ctrl-C, then drains for at most `--drain-seconds`.
async fn drain(server: HttpServer, args: &Settings) {
    let drain = Duration::from_secs(args.drain_seconds);
    if server.run_until(stop_signal(), drain).await {
        say("locara: stopped; every call in flight was answered");
    } else {
        say(&format!(
            "locara: stopped after {} s of draining; connections still open were cut",
            drain.as_secs()
        ));
    }
}

/// SIGTERM (an orchestrator stopping the replica) or Ctrl-C.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(error) => {
                say(&format!(
                    "locara: cannot watch for SIGTERM ({error}); Ctrl-C still stops"
                ));
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
    say("locara: stopping: no new connections, draining calls in flight");
}

/// The MCP handler of `locara`, as the arguments ask: the workspace, code mode, metrics.
fn handler(
    locara: locara_facade::Locara,
    args: &Settings,
    dir: Option<&Path>,
    metrics: Option<&Arc<Metrics>>,
) -> LocaraMcp {
    let mut server = LocaraMcp::new(Arc::new(locara));
    if let Some(dir) = dir {
        server = server.with_workspace(dir);
    }
    if args.code_mode {
        server = server.code_mode();
    }
    if let Some(metrics) = metrics {
        server = server.with_metrics(Arc::clone(metrics));
    }
    server
}
