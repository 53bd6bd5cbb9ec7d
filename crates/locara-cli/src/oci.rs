//! `push`, `pull` and `install`: signed tools to and from an OCI registry (and, for
//! `install`, from a directory whose manifest's `artifact.url` may be an `https` URL).
//! Moving bytes is `locara-oci`'s and verifying them `locara-registry`'s: this module only
//! chooses what goes where, and writes nothing the registry has not verified.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{Context as _, format_err};
use locara_manifest::{ToolManifest, ToolName, ToolRef, Version};
use locara_oci::{Client, ClientOptions, Location};
use locara_registry::{ReadLimit, Registry, ToolFiles, read_bounded};
use serde_json::json;

use crate::{cli::OciArgs, context::Context, output};

/// `locara push ID@VERSION --to oci://HOST/NS`: the home's copy, verified first.
pub(crate) fn push(
    ctx: &Context,
    tool: &str,
    to: &str,
    args: &OciArgs,
) -> anyhow::Result<ExitCode> {
    let (id, version) = exact(tool)?;
    let at: Location = to.parse()?;
    ctx.require_registry()?;
    let scratch = tempfile::tempdir().context("cannot create a scratch cache")?;
    let files = ctx
        .registry(scratch.path())?
        .files(&id, &version)
        .with_context(|| {
            format!("{id}@{version} does not verify in this home, so it is not pushed")
        })?;
    let client = client(args)?;
    let pushed = runtime()?.block_on(client.push(&at, &id, &version, &files))?;
    if ctx.json {
        output::json(&json!({
            "tool": format!("{id}@{version}"),
            "reference": pushed.reference,
            "manifest_url": pushed.manifest_url,
        }))?;
    } else {
        output::stdout(&format!("pushed {id}@{version} to {}\n", pushed.reference))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `locara pull ID@VERSION --from oci://HOST/NS --out DIR`: the three files, written only
/// after they verified against this home's trusted keys; an existing file is never replaced.
pub(crate) fn pull(
    ctx: &Context,
    tool: &str,
    from: &str,
    out: &Path,
    args: &OciArgs,
) -> anyhow::Result<ExitCode> {
    let (id, version) = exact(tool)?;
    let (files, source) = fetch(&id, &version, from, args)?;
    let scratch = tempfile::tempdir().context("cannot create a scratch cache")?;
    let verified = ctx
        .registry(scratch.path())?
        .verify_files(&files, &source)?;
    check_identity(verified.manifest(), &id, &version, &source)?;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let names = [
        ("manifest.json", &files.manifest),
        ("manifest.sig.json", &files.signature),
        (&*format!("{id}-{version}.wasm"), &files.wasm),
    ]
    .map(|(name, bytes)| (out.join(name), bytes.clone()));
    if let Some((path, _)) = names.iter().find(|(path, _)| path.exists()) {
        return Err(format_err!(
            "{} already exists: refusing to replace it; pull into an empty directory",
            path.display()
        ));
    }
    for (path, bytes) in &names {
        std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if ctx.json {
        output::json(&json!({
            "tool": format!("{id}@{version}"),
            "source": source,
            "key_id": verified.key_id().to_string(),
            "files": names.iter().map(|(path, _)| path).collect::<Vec<_>>(),
        }))?;
    } else {
        output::stdout(&format!(
            "pulled {id}@{version} from {source} into {}\n  signed by {} (trusted here)\n",
            out.display(),
            verified.key_id()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `locara install ID@VERSION --from oci://HOST/NS|DIR`: verified, written into the home's
/// registry and pinned in its lockfile.
pub(crate) fn install(
    ctx: &Context,
    tool: &str,
    from: &str,
    args: &OciArgs,
) -> anyhow::Result<ExitCode> {
    let (id, version) = exact(tool)?;
    let (files, source) = fetch(&id, &version, from, args)?;
    let registry: Registry = ctx.locked_registry()?;
    let verified = registry.verify_files(&files, &source)?;
    check_identity(verified.manifest(), &id, &version, &source)?;
    let installed = registry.install(&files, &source)?;
    if ctx.json {
        output::json(&json!({
            "tool": format!("{id}@{version}"),
            "source": source,
            "manifest": installed.manifest_path,
            "artifact_sha256": installed.artifact_digest.to_hex(),
            "key_id": installed.key_id.to_string(),
            "lockfile": ctx.lockfile(),
        }))?;
    } else {
        output::stdout(&format!(
            "installed {id}@{version} from {source}\n  artifact sha256 {}\n  signed by {}\n  pinned in {}\n",
            installed.artifact_digest,
            installed.key_id,
            ctx.lockfile().display()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `ID@VERSION`: OCI tags name exact versions.
fn exact(tool: &str) -> anyhow::Result<(ToolName, Version)> {
    let reference: ToolRef = tool.parse()?;
    let version = reference.version.ok_or_else(|| {
        format_err!("`{tool}` names no version: a registry holds versions, write {tool}@VERSION")
    })?;
    Ok((reference.id, version))
}

/// The files asked for might be another tool's: the tag or directory is not what is signed.
fn check_identity(
    manifest: &ToolManifest,
    id: &ToolName,
    version: &Version,
    source: &str,
) -> anyhow::Result<()> {
    if manifest.id != *id || manifest.version != *version {
        return Err(format_err!(
            "{source} holds {}, not {id}@{version} (a tag or directory that names another tool); nothing was written",
            manifest.tool_ref()
        ));
    }
    Ok(())
}

/// The files of `id@version` from an OCI location or a directory, unverified, and where they
/// came from. A missing wasm is fetched from the manifest's `artifact.url`.
fn fetch(
    id: &ToolName,
    version: &Version,
    from: &str,
    args: &OciArgs,
) -> anyhow::Result<(ToolFiles, String)> {
    let runtime = runtime()?;
    let (mut files, source, wasm_included) = if from.starts_with("oci://") {
        let at: Location = from.parse()?;
        let pulled = runtime.block_on(client(args)?.pull(&at, id, version))?;
        (pulled.files, pulled.reference, pulled.wasm_included)
    } else {
        let dir = PathBuf::from(from);
        if !dir.is_dir() {
            return Err(format_err!(
                "--from {from} is neither oci://HOST/NAMESPACE nor a directory holding manifest.json and manifest.sig.json"
            ));
        }
        let manifest = read_bounded(&dir.join("manifest.json"), ReadLimit::MANIFEST)?;
        let signature = read_bounded(&dir.join("manifest.sig.json"), ReadLimit::SIGNATURE_FILE)?;
        (
            ToolFiles::new(manifest, signature, Vec::new()),
            dir.display().to_string(),
            false,
        )
    };
    if !wasm_included {
        // Read only to find the module; everything in it is verified once the module is here.
        let unverified = ToolManifest::from_slice(&files.manifest)
            .with_context(|| format!("the manifest from {source} does not parse"))?;
        let url = &unverified.artifact.url;
        files.wasm = if url.contains("://") {
            let mut connector = locara_egress::Connector::new();
            if let Some(ca) = &args.ca_file {
                connector = connector.with_ca_cert(ca)?;
            }
            let limit = unverified
                .artifact
                .size_bytes
                .min(ReadLimit::ARTIFACT.max_bytes());
            runtime.block_on(locara_oci::fetch_artifact(
                url,
                connector.tls_config()?,
                limit,
            ))?
        } else if from.starts_with("oci://") {
            return Err(format_err!(
                "{source} holds no wasm layer and its manifest's artifact.url `{url}` is not a URL to fetch the module from"
            ));
        } else if url.contains(['/', '\\']) || url.starts_with('.') {
            return Err(format_err!(
                "the manifest's artifact.url `{url}` is neither an https URL nor a file name beside it"
            ));
        } else {
            read_bounded(&Path::new(from).join(url), ReadLimit::ARTIFACT)?
        };
    }
    Ok((files, source))
}

fn client(args: &OciArgs) -> anyhow::Result<Client> {
    let mut options = ClientOptions::default();
    options.plain_http = args.plain_http;
    if let Some(ca) = &args.ca_file {
        options.ca_pem.push(
            std::fs::read(ca).with_context(|| format!("cannot read --ca-file {}", ca.display()))?,
        );
    }
    options.credentials = match (&args.username, &args.password) {
        (Some(user), Some(password)) => Some((user.clone(), password.clone())),
        (None, None) => None,
        _ => {
            return Err(format_err!(
                "set both LOCARA_OCI_USERNAME and LOCARA_OCI_PASSWORD, or neither"
            ));
        }
    };
    Ok(Client::new(options)?)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}
