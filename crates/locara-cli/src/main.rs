//! `locara`: the command line over `locara-facade` (list, search, describe, run, chain, batch,
//! chat, tool definitions and tool calls in LLM formats), `locara-mcp` (serve) and
//! `locara-registry` (verify, verify-receipt, keygen, sign, publish, trust), and a tool author's
//! `new tool`, `build` and `dev`.
//!
//! It sits on top of every library crate and adds only what a terminal needs: finding the home,
//! turning flags into a request and the response into text. It does not validate, hash or sign
//! anything itself. Exit codes: 0 success; 1 the tool ran and failed (or, with `run
//! --tool-call`, a call failed or could not run), a chain step failed, or a tool failed
//! verification; 2 the call could not run, bad usage, or any other error.
//!
//! Output goes through a locked stdout handle (see `output`), so a closed pipe ends quietly
//! instead of panicking as `println!` would.

#![forbid(unsafe_code)]

mod approve;
mod arguments;
mod authoring;
mod catalog;
mod chat;
mod cli;
mod context;
mod dev;
mod keys;
mod models;
mod oci;
mod output;
mod progress;
mod publish;
mod receipts;
mod run;
mod serve;
mod telemetry;
mod trust;
mod verify;

#[cfg(test)]
mod tests;

use std::process::ExitCode;

use clap::Parser as _;

use crate::{
    arguments::Stdin,
    cli::{Cli, Command, ModelsCommand, NewCommand, ToolsCommand, TrustCommand},
    context::Context,
};

/// Exit code for everything that is not a tool's own failure.
const ERROR: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let json = cli.json;
    match run(&cli) {
        Ok(code) => code,
        Err(error) => {
            if let Some(error) = error.downcast_ref::<locara_facade::Error>() {
                // A facade error already says what to do; print it as an agent would see it.
                if let Err(e) = output::could_not_run(error.report(), json) {
                    eprintln!("error: {e:#}");
                }
            } else {
                eprintln!("error: {error:#}");
            }
            ExitCode::from(ERROR)
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    let ctx = Context::new(cli)?;
    let mut stdin = Stdin::new(std::io::stdin());
    match &cli.command {
        Command::List => catalog::list(&ctx),
        Command::Search { query, limit } => catalog::search(&ctx, query, *limit),
        Command::Describe { tool } => catalog::describe(&ctx, tool),
        Command::Run(args) => run::run(&ctx, args, &mut stdin),
        Command::Chain(args) => run::chain(&ctx, args, &mut stdin),
        Command::Batch(args) => run::batch(&ctx, args, &mut stdin),
        Command::Chat(args) => chat::chat(&ctx, cli, args, &mut stdin),
        Command::VerifyReceipt(args) => receipts::verify_receipt(&ctx, args),
        Command::Serve(args) => serve::serve(&ctx, args),
        Command::Keys(command) => keys::keys(command),
        Command::Verify(args) => verify::verify(&ctx, args),
        Command::Trust(TrustCommand::List) => trust::list(&ctx),
        Command::Trust(TrustCommand::Revoke { key_id, reason }) => {
            trust::revoke(&ctx, key_id, reason.as_deref())
        }
        Command::Models(ModelsCommand::Fetch { tools }) => models::fetch(&ctx, tools),
        Command::Models(ModelsCommand::List) => models::list(&ctx),
        Command::Tools(ToolsCommand::Export { format }) => catalog::export(&ctx, format.export()),
        Command::Keygen { publisher, out } => publish::keygen(&ctx, publisher, out),
        Command::Sign {
            key,
            manifest,
            wasm,
            out,
        } => publish::sign(&ctx, key, manifest, wasm.as_deref(), out.as_deref()),
        Command::Publish {
            key,
            manifest,
            wasm,
        } => publish::publish(&ctx, key, manifest, wasm),
        Command::New(NewCommand::Tool { id, dir, pdk }) => {
            authoring::new_tool(&ctx, id, dir, pdk.as_deref())
        }
        Command::Push { tool, to, oci } => oci::push(&ctx, tool, to, oci),
        Command::Pull {
            tool,
            from,
            out,
            oci,
        } => oci::pull(&ctx, tool, from, out, oci),
        Command::Install { tool, from, oci } => oci::install(&ctx, tool, from, oci),
        Command::Build { path } => authoring::build(&ctx, path),
        Command::Dev { path, key } => dev::dev(&ctx, path, key),
    }
}
