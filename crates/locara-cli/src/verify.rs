//! `verify`: checks tools the way running them would, and says which fail and why.
//!
//! Registry tools are resolved from the registry's own files through a scratch cache, so a
//! tampered registry file is caught even when the home's cache still holds good bytes, and
//! nothing in the home is written. The lockfile's pins are checked for the pinned versions.
//! A tool signed by a key revoked in `<home>/trust/revoked.json` is a FAIL (`revoked key`),
//! even while that key's `.pub.json` is still in `<home>/trust`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use locara_manifest::{Lockfile, ToolManifest};
use locara_registry::{Error, ReadLimit, Registry, RegistryConfig, VerifiedArtifact, read_bounded};
use serde_json::json;

use crate::{
    cli::VerifyArgs,
    context::{self, Context},
    output,
};

/// One line of the report.
#[derive(Debug)]
struct Row {
    /// `id@version`, or a path when the entry has no readable identity.
    tool: String,
    outcome: Result<Verified, Failed>,
}

#[derive(Debug)]
struct Verified {
    artifact_sha256: String,
    manifest_sha256: String,
    key_id: String,
    locked: bool,
}

#[derive(Debug)]
struct Failed {
    reason: &'static str,
    message: String,
}

impl Row {
    fn verified(artifact: &VerifiedArtifact, locked: bool) -> Row {
        Row {
            tool: artifact.tool_ref().to_string(),
            outcome: Ok(Verified {
                artifact_sha256: artifact.artifact_digest().to_hex(),
                manifest_sha256: artifact.manifest_digest().to_hex(),
                key_id: artifact.key_id().to_string(),
                locked,
            }),
        }
    }

    fn failed(tool: String, error: &Error) -> Row {
        Row {
            tool,
            outcome: Err(Failed {
                reason: reason(error),
                message: output::error_chain(error),
            }),
        }
    }
}

/// `locara verify`.
pub(crate) fn verify(ctx: &Context, args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    let scratch = tempfile::tempdir().context("cannot create a scratch cache")?;
    let rows = match &args.manifest {
        Some(manifest) => vec![verify_file(ctx, scratch.path(), manifest, args)?],
        None => verify_registry(ctx, scratch.path(), &args.tools)?,
    };
    report(ctx, &rows)
}

/// Verifies the registry's tools, or the named ones.
fn verify_registry(ctx: &Context, scratch: &Path, names: &[String]) -> anyhow::Result<Vec<Row>> {
    ctx.require_registry()?;
    let filters = context::tool_refs(names)?;
    let wanted = |id: &str, version: &str| {
        filters.is_empty()
            || filters.iter().any(|f| {
                f.id.as_str() == id && f.version.as_ref().is_none_or(|v| v.to_string() == version)
            })
    };

    let plain = ctx.registry(scratch)?;
    let lock_path = ctx.lockfile();
    // Whatever is at the path is opened (and a FIFO or device refused), not skipped as missing.
    let locked = if lock_path.symlink_metadata().is_ok() {
        let config = RegistryConfig::new(ctx.registry_dir())
            .with_cache_dir(scratch)
            .with_trust(plain.trust().clone())
            .with_lockfile(&lock_path);
        Some(
            Registry::new(config)
                .with_context(|| format!("cannot use the lockfile {}", lock_path.display()))?,
        )
    } else {
        None
    };
    let lockfile = locked
        .as_ref()
        .and_then(Registry::lockfile)
        .unwrap_or_else(Lockfile::new);

    let listing = plain.list()?;
    let mut rows = Vec::new();
    let mut seen = Vec::new();
    for tool in &listing.tools {
        let (id, version) = (tool.id.to_string(), tool.version.to_string());
        seen.push((id.clone(), version.clone()));
        if !wanted(&id, &version) {
            continue;
        }
        let pinned = lockfile
            .get(&tool.id)
            .is_some_and(|pin| pin.version == tool.version);
        let registry = match (&locked, pinned) {
            (Some(locked), true) => locked,
            _ => &plain,
        };
        rows.push(match registry.resolve(&tool.manifest.tool_ref()) {
            Ok(artifact) => Row::verified(&artifact, pinned),
            Err(error) => Row::failed(format!("{id}@{version}"), &error),
        });
    }
    let tools_dir = ctx.registry_dir().join("tools");
    for rejected in &listing.rejected {
        let identity = identity(&tools_dir, &rejected.path);
        if let Some((id, version)) = &identity {
            seen.push((id.clone(), version.clone()));
            if !wanted(id, version) {
                continue;
            }
        }
        let label = identity.map_or_else(
            || rejected.path.display().to_string(),
            |(id, v)| format!("{id}@{v}"),
        );
        rows.push(Row::failed(label, &rejected.error));
    }
    for (id, pin) in lockfile.tools() {
        let (id, version) = (id.to_string(), pin.version.to_string());
        if wanted(&id, &version) && !seen.contains(&(id.clone(), version.clone())) {
            rows.push(Row {
                tool: format!("{id}@{version}"),
                outcome: Err(Failed {
                    reason: "not found",
                    message: format!(
                        "the lockfile {} pins {id}@{version}, which is not in the registry",
                        lock_path.display()
                    ),
                }),
            });
        }
    }
    for filter in &filters {
        let matched = seen.iter().any(|(id, version)| {
            filter.id.as_str() == id
                && filter
                    .version
                    .as_ref()
                    .is_none_or(|v| v.to_string() == *version)
        });
        if !matched {
            let error = match plain.resolve(filter) {
                Err(error) => error,
                Ok(_) => continue,
            };
            rows.push(Row::failed(filter.to_string(), &error));
        }
    }
    rows.sort_by(|a, b| a.tool.cmp(&b.tool));
    Ok(rows)
}

/// Verifies one tool outside the registry.
fn verify_file(
    ctx: &Context,
    scratch: &Path,
    manifest: &Path,
    args: &VerifyArgs,
) -> anyhow::Result<Row> {
    let dir = manifest
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let signature = args
        .signature
        .clone()
        .unwrap_or_else(|| dir.join("manifest.sig.json"));
    let wasm = match &args.wasm {
        Some(wasm) => wasm.clone(),
        None => default_wasm(manifest, dir)?,
    };
    let registry = ctx.registry(scratch)?;
    Ok(match registry.verify_path(manifest, &signature, &wasm) {
        Ok(artifact) => Row::verified(&artifact, false),
        Err(error) => Row::failed(manifest.display().to_string(), &error),
    })
}

/// The wasm module a manifest names: its `artifact.url`, beside the manifest. The manifest is
/// read as the registry reads it (a regular file of at most 1 MiB), so that a FIFO given as
/// `--manifest` is refused here rather than waited on.
fn default_wasm(manifest: &Path, dir: &Path) -> anyhow::Result<PathBuf> {
    let bytes = read_bounded(manifest, ReadLimit::MANIFEST)
        .with_context(|| format!("cannot read {}", manifest.display()))?;
    let parsed = ToolManifest::from_slice(&bytes).with_context(|| {
        format!(
            "cannot find the wasm module of {}: pass --wasm",
            manifest.display()
        )
    })?;
    Ok(dir.join(&parsed.artifact.url))
}

/// Prints the rows and returns 1 when any failed.
fn report(ctx: &Context, rows: &[Row]) -> anyhow::Result<ExitCode> {
    let failures = rows.iter().filter(|r| r.outcome.is_err()).count();
    if ctx.json {
        let rows: Vec<_> = rows
            .iter()
            .map(|row| match &row.outcome {
                Ok(v) => json!({
                    "tool": row.tool,
                    "ok": true,
                    "artifact_sha256": v.artifact_sha256,
                    "manifest_sha256": v.manifest_sha256,
                    "key_id": v.key_id,
                    "locked": v.locked,
                }),
                Err(f) => json!({ "tool": row.tool, "ok": false, "reason": f.reason, "message": f.message }),
            })
            .collect();
        output::json(&json!({ "ok": failures == 0, "tools": rows }))?;
    } else {
        let width = rows.iter().map(|r| r.tool.len()).max().unwrap_or(0);
        let mut text = String::new();
        for row in rows {
            match &row.outcome {
                Ok(v) => text.push_str(&format!(
                    "ok    {:width$}  sha256 {}  key {}{}\n",
                    row.tool,
                    v.artifact_sha256,
                    v.key_id,
                    if v.locked { "  (locked)" } else { "" }
                )),
                Err(f) if f.message.contains(f.reason) => {
                    text.push_str(&format!("FAIL  {:width$}  {}\n", row.tool, f.message));
                }
                Err(f) => text.push_str(&format!(
                    "FAIL  {:width$}  {}: {}\n",
                    row.tool, f.reason, f.message
                )),
            }
        }
        output::stdout(&text)?;
    }
    if rows.is_empty() {
        eprintln!("no tools to verify in {}", ctx.registry_dir().display());
    }
    if rows
        .iter()
        .any(|r| r.outcome.as_ref().is_err_and(|f| f.reason == "unknown key"))
        && ctx.trust()?.is_empty()
    {
        eprintln!(
            "hint: {} holds no trusted keys: copy each publisher's `*.pub.json` there",
            ctx.trust_dir().display()
        );
    }
    if failures == 0 {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("{failures} of {} failed verification", rows.len());
    Ok(ExitCode::from(1))
}

/// `(id, version)` of a registry entry from its directory, `<tools>/<id>/<version>`.
fn identity(tools_dir: &Path, entry: &Path) -> Option<(String, String)> {
    let relative = entry.strip_prefix(tools_dir).ok()?;
    let mut parts = relative.iter().map(|p| p.to_str());
    match (parts.next(), parts.next(), parts.next()) {
        (Some(Some(id)), Some(Some(version)), None) => Some((id.to_owned(), version.to_owned())),
        _ => None,
    }
}

/// A short name for why verification failed.
fn reason(error: &Error) -> &'static str {
    match error {
        Error::Io { .. } => "cannot read",
        Error::Invalid { .. } => "invalid",
        Error::Malformed { .. } => "malformed",
        Error::KeyIdMismatch { .. } => "key id mismatch",
        Error::Unsigned { .. } => "unsigned",
        Error::RevokedKey { .. } => "revoked key",
        Error::UnknownKey { .. } => "unknown key",
        Error::BadSignature { .. } => "bad signature",
        Error::IdentityMismatch { .. } => "identity mismatch",
        Error::HashMismatch { .. } => "hash mismatch",
        Error::SizeMismatch { .. } => "size mismatch",
        Error::LockMismatch { .. } => "lock mismatch",
        Error::Rollback { .. } => "rollback",
        Error::ToolNotFound { .. } => "not found",
        Error::NotARegularFile { .. } => "not a regular file",
        Error::FileTooLarge { .. } => "too large",
        _ => "error",
    }
}
