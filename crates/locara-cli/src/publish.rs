//! `keygen`, `sign` and `publish`: a publisher's side. Hashing and signing are
//! `locara-registry`'s; this module only reads and writes the files around them.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, format_err};
use locara_manifest::{Lockfile, ToolManifest};
use locara_registry::{
    KeyId, PublishedTool, ReadLimit, Registry, RegistryConfig, SigningKey, generate_keypair,
    prepare_manifest, read_bounded_to_string, sign_manifest,
};
use locara_upstream::fetch::BlobCache;
use serde_json::{Map, Value, json};

use crate::{context::Context, output};

/// `locara keygen`. The secret key file is created mode 0600, and `--out`, when it does not
/// exist, mode 0700 (by the registry's `SigningKey::write_file`).
pub(crate) fn keygen(ctx: &Context, publisher: &str, out: &Path) -> anyhow::Result<ExitCode> {
    if publisher.is_empty() || publisher.starts_with('.') || publisher.contains(['/', '\\']) {
        return Err(format_err!(
            "invalid publisher name {publisher:?}: it names the key files, so it must not be empty, start with `.` or contain `/` or `\\`"
        ));
    }
    let secret_path = out.join(format!("{publisher}.secret.json"));
    let public_path = out.join(format!("{publisher}.pub.json"));
    for path in [&secret_path, &public_path] {
        if path.exists() {
            return Err(format_err!(
                "{} already exists: refusing to replace a key; choose another --out or --publisher",
                path.display()
            ));
        }
    }
    let key = generate_keypair(publisher)?;
    key.write_file(&secret_path)?;
    key.public_key().write_file(&public_path)?;
    let trust_dir = ctx.trust_dir();
    if ctx.json {
        output::json(&json!({
            "publisher": publisher,
            "key_id": key.key_id().to_string(),
            "secret_key_file": secret_path,
            "public_key_file": public_path,
            "trust_dir": trust_dir,
        }))?;
    } else {
        output::stdout(&format!(
            "key id:      {}\nsecret key:  {} (keep it private)\npublic key:  {}\n\nto trust this key, copy the public key into the home's trust directory:\n  mkdir -p {} && cp {} {}/\n",
            key.key_id(),
            secret_path.display(),
            public_path.display(),
            trust_dir.display(),
            public_path.display(),
            trust_dir.display(),
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `locara sign`.
pub(crate) fn sign(
    ctx: &Context,
    key: &Path,
    manifest_path: &Path,
    wasm: Option<&Path>,
    out: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let key = SigningKey::read_file(key)?;
    let manifest_bytes = match wasm {
        Some(wasm) => {
            let manifest = prepare(manifest_path, wasm)?;
            let text = manifest.to_json_pretty();
            std::fs::write(manifest_path, &text)
                .with_context(|| format!("cannot rewrite {}", manifest_path.display()))?;
            text.into_bytes()
        }
        None => {
            let bytes = std::fs::read(manifest_path)
                .with_context(|| format!("cannot read {}", manifest_path.display()))?;
            ToolManifest::from_slice(&bytes).with_context(|| {
                format!(
                    "{} is not a complete manifest (pass --wasm to pin its module first)",
                    manifest_path.display()
                )
            })?;
            bytes
        }
    };
    let signature = sign_manifest(&manifest_bytes, &key);
    let out = match out {
        Some(out) => out.to_owned(),
        None => beside(manifest_path, "manifest.sig.json"),
    };
    std::fs::write(&out, signature.to_json_pretty())
        .with_context(|| format!("cannot write {}", out.display()))?;
    if ctx.json {
        output::json(
            &json!({ "manifest": manifest_path, "signature": out, "key_id": key.key_id().to_string() }),
        )?;
    } else {
        output::stdout(&format!(
            "signed {} with {}\nwrote {}\n",
            manifest_path.display(),
            key.key_id(),
            out.display()
        ))?;
    }
    note_untrusted(ctx, key.key_id(), &format!("{}.pub.json", key.publisher()));
    Ok(ExitCode::SUCCESS)
}

/// `locara publish`.
pub(crate) fn publish(
    ctx: &Context,
    key: &Path,
    manifest_path: &Path,
    wasm_path: &Path,
) -> anyhow::Result<ExitCode> {
    let key = SigningKey::read_file(key)?;
    let wasm =
        std::fs::read(wasm_path).with_context(|| format!("cannot read {}", wasm_path.display()))?;
    let template = read_template(manifest_path)?;
    // Prepared once from the module as built, which checks the template and gives the id.
    let manifest = prepare_template(manifest_path, template.clone(), &wasm)?;
    let (wasm, preinitialized) = module_to_publish(manifest.id.as_str(), wasm)?;
    let manifest = if preinitialized {
        prepare_template(manifest_path, template, &wasm)?
    } else {
        manifest
    };
    let published = publish_prepared(ctx, &key, &manifest, &wasm)?;
    let tool = format!("{}@{}", published.id, published.version);
    if ctx.json {
        output::json(&json!({
            "tool": tool,
            "manifest": published.manifest_path,
            "signature": published.signature_path,
            "artifact": published.artifact_path,
            "artifact_sha256": published.artifact_digest.to_hex(),
            "manifest_sha256": published.manifest_digest.to_hex(),
            "key_id": published.key_id.to_string(),
            "preinitialized": preinitialized,
        }))?;
    } else {
        output::stdout(&format!(
            "published {tool} to {}\n  artifact sha256 {}{}\n  signed by {}\n",
            published
                .manifest_path
                .parent()
                .unwrap_or(&published.manifest_path)
                .display(),
            published.artifact_digest,
            if preinitialized {
                " (pre-initialized by its `locara_preinit` export)"
            } else {
                ""
            },
            published.key_id,
        ))?;
    }
    note_untrusted(
        ctx,
        &published.key_id,
        &format!("{}.pub.json", key.publisher()),
    );
    note_lock_mismatch(ctx, &manifest, &published.artifact_digest.to_hex());
    Ok(ExitCode::SUCCESS)
}

/// The module `locara publish` and `locara dev` publish for tool `id` built as `wasm`: `wasm`
/// pre-initialized when it exports `locara_preinit` (docs/tool-abi.md § Pre-initialization;
/// the snapshot is cached in the user's blob cache under the module's hash), else `wasm`
/// itself; and whether it was pre-initialized. A module that cannot be parsed is published as
/// it is, to be refused when it is compiled, as before.
pub(crate) fn module_to_publish(id: &str, wasm: Vec<u8>) -> anyhow::Result<(Vec<u8>, bool)> {
    if !locara_upstream::tool::exports_preinit(&wasm).unwrap_or(false) {
        return Ok((wasm, false));
    }
    let wasm = locara_upstream::tool::prepare_module(id, wasm, &BlobCache::user_default())
        .with_context(|| format!("cannot pre-initialize {id}"))?;
    Ok((wasm, true))
}

/// Signs `manifest` (which pins `wasm`, see [`prepare_template`]) with `key` and writes it,
/// its signature and `wasm` into the home's registry, as `locara publish` does.
pub(crate) fn publish_prepared(
    ctx: &Context,
    key: &SigningKey,
    manifest: &ToolManifest,
    wasm: &[u8],
) -> anyhow::Result<PublishedTool> {
    let registry = Registry::new(
        RegistryConfig::new(ctx.registry_dir()).with_cache_dir(ctx.home.join("cache")),
    )?;
    Ok(registry.publish(manifest, wasm, key)?)
}

/// Reads a manifest template (or a full manifest, whose `artifact` is replaced) and pins
/// `wasm` in it. `validated_at` and `validated_by` are kept.
fn prepare(manifest_path: &Path, wasm_path: &Path) -> anyhow::Result<ToolManifest> {
    let template = read_template(manifest_path)?;
    let wasm =
        std::fs::read(wasm_path).with_context(|| format!("cannot read {}", wasm_path.display()))?;
    prepare_template(manifest_path, template, &wasm)
}

/// Reads the manifest template at `manifest_path`: a JSON object.
pub(crate) fn read_template(manifest_path: &Path) -> anyhow::Result<Map<String, Value>> {
    let text = std::fs::read_to_string(manifest_path)
        .with_context(|| format!("cannot read {}", manifest_path.display()))?;
    match serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid JSON", manifest_path.display()))?
    {
        Value::Object(object) => Ok(object),
        _ => Err(format_err!(
            "{} must hold a JSON object",
            manifest_path.display()
        )),
    }
}

/// Pins `wasm` in a manifest template read from `manifest_path` (or a full manifest, whose
/// `artifact` is replaced). `validated_at` and `validated_by` are kept.
pub(crate) fn prepare_template(
    manifest_path: &Path,
    mut object: Map<String, Value>,
    wasm: &[u8],
) -> anyhow::Result<ToolManifest> {
    object.remove("artifact");
    let validated_at = object.remove("validated_at");
    let validated_by = object.remove("validated_by");
    let mut manifest = prepare_manifest(&Value::Object(object).to_string(), wasm)
        .with_context(|| format!("cannot prepare {}", manifest_path.display()))?;
    if let Some(Value::String(at)) = validated_at {
        manifest = manifest.with_validated_at(at);
    }
    if let Some(Value::String(by)) = validated_by {
        manifest = manifest.with_validated_by(by);
    }
    Ok(manifest)
}

/// `name` in the directory of `file`.
fn beside(file: &Path, name: &str) -> PathBuf {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(name),
        _ => PathBuf::from(name),
    }
}

/// Tells on stderr when the home does not trust `key_id` yet, or revoked it.
fn note_untrusted(ctx: &Context, key_id: &KeyId, public_file: &str) {
    if let Some(problem) = untrusted(ctx, key_id, public_file) {
        eprintln!("note: {problem}");
    }
}

/// Why the home would refuse what `key_id` signs (not trusted yet, or revoked), if it would;
/// `public_file` names the key's public half for the hint.
pub(crate) fn untrusted(ctx: &Context, key_id: &KeyId, public_file: &str) -> Option<String> {
    let trust = ctx.trust().ok()?;
    if trust.revocation(key_id).is_some() {
        Some(format!(
            "{key_id} is revoked in {}: Locara refuses what it signs; sign with a new key (see docs/keys.md)",
            ctx.trust_dir()
                .join(locara_registry::REVOCATION_FILE)
                .display()
        ))
    } else if trust.get(key_id).is_none() {
        Some(format!(
            "{key_id} is not trusted by {}: Locara refuses what it signed until you copy `{public_file}` into {}",
            ctx.home.display(),
            ctx.trust_dir().display()
        ))
    } else {
        None
    }
}

/// Tells on stderr when the lockfile pins this version with other bytes.
fn note_lock_mismatch(ctx: &Context, manifest: &ToolManifest, artifact_sha256: &str) {
    // Read as the registry reads it: a FIFO or a device there is refused, not waited on.
    let Ok(text) = read_bounded_to_string(&ctx.lockfile(), ReadLimit::LOCKFILE) else {
        return;
    };
    let Ok(lockfile) = Lockfile::from_json(&text) else {
        return;
    };
    if let Some(pin) = lockfile.get(&manifest.id)
        && pin.version == manifest.version
        && pin.artifact_sha256.as_str() != artifact_sha256
    {
        eprintln!(
            "note: {} pins {} with other bytes, so running it will fail with a lock mismatch until it is re-locked",
            ctx.lockfile().display(),
            manifest.tool_ref()
        );
    }
}
