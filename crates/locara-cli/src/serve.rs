//! `serve`: the callable tools as an MCP server (`locara-mcp`), over stdio or streamable HTTP.
//!
//! Stdout belongs to the stdio transport: everything this command says goes to stderr.

use std::{collections::HashMap, path::Path, process::ExitCode, sync::Arc, time::Duration};

use anyhow::{Context as _, format_err};
use locara_mcp::{HttpConfig, HttpServer, LocaraMcp, Metrics, MetricsServer};

use crate::{
    cli::ServeArgs,
    context::{self, Context},
};

/// `locara serve`.
pub(crate) fn serve(ctx: &Context, args: &ServeArgs) -> anyhow::Result<ExitCode> {
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
                eprintln!("locara: serving {tools} tools over MCP on stdio");
                locara_mcp::serve_stdio(server).await
            }
            Some(addr) => {
                let mut config = HttpConfig::new(addr);
                if let Some(metrics) = metrics {
                    config = config.with_metrics(Arc::clone(&metrics));
                    spawn_metrics(args, metrics).await?;
                }
                let server = HttpServer::bind(server, &config).await?;
                eprintln!("locara: serving {tools} tools over MCP");
                eprintln!("listening on {}", server.url());
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
    args: &ServeArgs,
    auth_file: &Path,
    dir: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let addr = args
        .http
        .ok_or_else(|| format_err!("--auth needs --http: stdio has one client, its own"))?;
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
    let mut config = HttpConfig::new(addr).with_auth(auth);
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
        let server = HttpServer::bind_apps(handlers, &config).await?;
        eprintln!("locara: serving {apps} apps over MCP to authenticated callers");
        eprintln!("listening on {}", server.url());
        drain(server, args).await;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Binds `--metrics` and serves it in the background.
async fn spawn_metrics(args: &ServeArgs, metrics: Arc<Metrics>) -> Result<(), locara_mcp::Error> {
    let Some(addr) = args.metrics else {
        return Ok(());
    };
    let server = MetricsServer::bind(addr, metrics).await?;
    eprintln!("metrics on http://{}/metrics", server.local_addr());
    tokio::spawn(server.run());
    Ok(())
}

/// Serves until SIGTERM or Ctrl-C, then drains for at most `--drain-seconds`.
async fn drain(server: HttpServer, args: &ServeArgs) {
    let drain = Duration::from_secs(args.drain_seconds);
    if server.run_until(stop_signal(), drain).await {
        eprintln!("locara: stopped; every call in flight was answered");
    } else {
        eprintln!(
            "locara: stopped after {} s of draining; connections still open were cut",
            drain.as_secs()
        );
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
                eprintln!("locara: cannot watch for SIGTERM ({error}); Ctrl-C still stops");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
    eprintln!("locara: stopping: no new connections, draining calls in flight");
}

/// The MCP handler of `locara`, as the arguments ask: the workspace, code mode, metrics.
fn handler(
    locara: locara_facade::Locara,
    args: &ServeArgs,
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
