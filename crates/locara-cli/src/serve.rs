//! `serve`: the callable tools as an MCP server (`locara-mcp`), over stdio or streamable HTTP.
//!
//! Stdout belongs to the stdio transport: everything this command says goes to stderr.

use std::{process::ExitCode, sync::Arc, time::Duration};

use anyhow::{Context as _, format_err};
use locara_mcp::{HttpConfig, HttpServer, LocaraMcp};

use crate::{
    cli::ServeArgs,
    context::{self, Context},
};

/// `locara serve`.
pub(crate) fn serve(ctx: &Context, args: &ServeArgs) -> anyhow::Result<ExitCode> {
    if let Some(addr) = args.http
        && !addr.ip().is_loopback()
        && !args.allow_remote
    {
        return Err(format_err!(
            "refusing to serve on {addr}: it is not a loopback address, and the MCP server has no authentication, so anyone who can reach it could run tools on this machine; pass --allow-remote to serve there anyway"
        ));
    }
    let dir = args.dir.as_deref().map(context::existing_dir).transpose()?;
    // Without an app manifest every tier is admitted (with one, its grants decide), and each
    // privileged call needs approval: `--yes`, `--policy`, or the terminal (never over stdio,
    // whose stdin is the transport).
    let locara = ctx.locara(dir.as_deref(), args.allow_write)?;
    let mut server = LocaraMcp::new(Arc::new(locara));
    if let Some(dir) = dir {
        server = server.with_workspace(dir);
    }
    if args.code_mode {
        server = server.code_mode();
    }
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
                let config = HttpConfig::new(addr).with_allow_remote(args.allow_remote);
                let server = HttpServer::bind(server, &config).await?;
                eprintln!("locara: serving {tools} tools over MCP");
                eprintln!("listening on {}", server.url());
                server.run().await;
                Ok(())
            }
        }
    });
    // The stdio transport may leave a blocking read of stdin behind: do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    served?;
    Ok(ExitCode::SUCCESS)
}
