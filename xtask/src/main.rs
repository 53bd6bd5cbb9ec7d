//! See <https://github.com/matklad/cargo-xtask/>.
//!
//! `cargo xtask build-tools [--home DIR] [ID...]` compiles the built-in tools (all of them and
//! the test probe, or only the named ones) to `wasm32-wasip1`, then hashes, signs and
//! publishes them into the local registry of a Locara home (by default `<repo>/.locara`) with
//! a development key, through `locara-registry`'s own functions. Naming the tools a first run
//! needs builds only their dependencies: each tool bin has a cargo feature of its name.
//!
//! `cargo xtask sdk python|node|test|bench` builds the Python and Node packages, runs their suites
//! (see `sdk.rs`).
//!
//! `cargo xtask fuzz [--seconds N] [TARGET...]` builds the cargo-fuzz targets in `fuzz/` and runs
//! each for a bounded time, as CI does (see `fuzz.rs`).

use std::{
    env,
    path::{Path, PathBuf},
    process::Command,
    time::SystemTime,
};

use anyhow::{Context, Result, bail, format_err};

mod fuzz;
mod sdk;
#[cfg(test)]
mod tidy;
use locara_registry::{
    Registry, RegistryConfig, SigningKey, TrustStore, generate_keypair, prepare_manifest,
};

const TARGET: &str = "wasm32-wasip1";
/// The cargo profile guests are built with (see the root `Cargo.toml`): release, size-optimized.
const PROFILE: &str = "tools";
const DEV_PUBLISHER: &str = "locara-dev";

const USAGE: &str = "\
usage: cargo xtask <task>

tasks:
  build-tools [--home DIR] [ID...]
                             build the built-in tools (all, or the named ones) for
                             wasm32-wasip1 and publish them, signed with a development
                             key, into DIR/registry (default DIR: <repo>/.locara)
  fuzz [--seconds N] [TARGET...]
                             build the fuzz targets in fuzz/ (installing cargo-fuzz if
                             missing) and run each for N seconds (default 60) on a copy of
                             its committed corpus; fails on any crash
  sdk python|node|test|bench [--release] [--out DIR]
                             build the Python wheel (maturin) or the npm tarball of the
                             language packages into DIR (default <target>/sdk/dist); `test`
                             builds both, installs them and runs their pytest and node:test
                             suites (needs `bash .ci/test-deps`); `bench` installs the
                             release builds and runs `cargo bench -p locara-bench --bench sdk`
";

fn main() -> Result<()> {
    let args: Vec<String> = env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("build-tools") => {
            let (home, ids) = match &args[1..] {
                [flag, dir, ids @ ..] if flag == "--home" => (PathBuf::from(dir), ids),
                [flag, ..] if flag == "--home" => bail!("--home needs a directory\n\n{USAGE}"),
                ids => (project_root().join(".locara"), ids),
            };
            if let Some(flag) = ids.iter().find(|id| id.starts_with('-')) {
                bail!("unexpected option `{flag}` to build-tools\n\n{USAGE}");
            }
            build_tools(&home, ids)
        }
        Some("fuzz") => fuzz::run(&fuzz::parse_args(&args[1..])?),
        Some("sdk") => sdk::run(&sdk::parse_args(&args[1..])?),
        Some("help" | "--help" | "-h") | None => {
            eprint!("{USAGE}");
            Ok(())
        }
        Some(other) => bail!("unknown task `{other}`\n\n{USAGE}"),
    }
}

/// The checkout xtask runs in. `cargo run -p xtask` sets `CARGO_MANIFEST_DIR` when it runs
/// the binary too; that one wins over the directory it was compiled in, which cargo does not
/// track: a target dir shared by two checkouts of the same commit reuses the binary.
fn project_root() -> PathBuf {
    env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .parent()
        .expect("xtask lives in the repo root")
        .to_owned()
}

/// Where guest builds go: the same directory `locara-test-artifacts` builds into, so the
/// guests are compiled once for both.
fn guest_target_dir() -> PathBuf {
    env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| project_root().join("target"), PathBuf::from)
        .join("guests")
}

/// Builds and publishes the tools named by `ids` (every tool when it is empty).
fn build_tools(home: &Path, ids: &[String]) -> Result<()> {
    locara_upstream::toolchain::ensure_wasm_target()?;
    let root = project_root();
    let manifests = root.join("crates/locara-tools-builtin/manifests");
    let mut templates: Vec<PathBuf> = std::fs::read_dir(&manifests)
        .with_context(|| format!("reading {}", manifests.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    templates.retain(|p| p.extension().is_some_and(|e| e == "json"));
    templates.sort();
    let id_of = |path: &Path| -> Result<String> {
        path.file_stem()
            .and_then(|s| s.to_str())
            .map(str::to_owned)
            .ok_or_else(|| format_err!("bad manifest file name {}", path.display()))
    };
    if !ids.is_empty() {
        let known = templates
            .iter()
            .map(|p| id_of(p))
            .collect::<Result<Vec<_>>>()?;
        if let Some(unknown) = ids.iter().find(|id| !known.contains(id)) {
            bail!(
                "there is no built-in tool `{unknown}`; the built-in tools are: {}",
                known.join(", ")
            );
        }
        templates.retain(|p| id_of(p).is_ok_and(|id| ids.contains(&id)));
    }
    let mut templates_with_source = Vec::with_capacity(templates.len());
    for path in templates {
        let template = std::fs::read_to_string(&path)?;
        let interpreter = locara_upstream::tool::is_interpreter_template(&template);
        templates_with_source.push((path, template, interpreter));
    }
    // The bins to compile: every one (and the test probe) for a full build, else the named
    // tools' bins with only their own features. Interpreter tools are fetched, not built.
    let bins: Vec<String> = templates_with_source
        .iter()
        .filter(|(_, _, interpreter)| !interpreter)
        .map(|(path, _, _)| id_of(path).map(|id| id.replace('.', "-")))
        .collect::<Result<_>>()?;
    if ids.is_empty() {
        compile_guests(
            &root,
            &["-p", "locara-tools-builtin", "-p", "locara-test-guests"],
        )?;
    } else if !bins.is_empty() {
        let features = bins.join(",");
        let mut args = vec!["-p", "locara-tools-builtin", "--no-default-features"];
        args.extend(["--features", features.as_str()]);
        for bin in &bins {
            args.extend(["--bin", bin]);
        }
        compile_guests(&root, &args)?;
    }

    let key = dev_key(home)?;
    let trust = TrustStore::new().with_key(key.public_key().clone());
    let registry = Registry::new(
        RegistryConfig::new(home.join("registry"))
            .with_cache_dir(home.join("cache"))
            .with_trust(trust)
            .with_lockfile(home.join("locara.lock"))
            .with_model_dir(home.join("models")),
    )?;
    let out = guest_target_dir().join(TARGET).join(PROFILE);
    let validated_at = locara_registry::rfc3339_utc(SystemTime::now());
    let blobs = locara_upstream::fetch::BlobCache::user_default();
    for (template_path, template, interpreter) in &templates_with_source {
        let id = id_of(template_path)?;
        let (template, wasm) = if *interpreter {
            // An upstream interpreter: fetched (pinned by sha256) and its driver inlined.
            let prepared = locara_upstream::tool::prepare(template_path, &blobs)?;
            (prepared.template, prepared.wasm)
        } else {
            let wasm_path = out.join(format!("{}.wasm", id.replace('.', "-")));
            let wasm = std::fs::read(&wasm_path).with_context(|| {
                format!(
                    "{id}: no module at {} (is there a bin for it?)",
                    wasm_path.display()
                )
            })?;
            // Pre-initialized when it asks to be (docs/tool-abi.md).
            let wasm = locara_upstream::tool::prepare_module(&id, wasm, &blobs)?;
            (template.clone(), wasm)
        };
        let mut manifest = prepare_manifest(&template, &wasm)?;
        manifest.validated_at = Some(validated_at.clone());
        manifest.validated_by = Some("cargo xtask build-tools".to_owned());
        let published = registry.publish(&manifest, &wasm, &key)?;
        locara_upstream::models::install_missing(&manifest, registry.models(), &blobs, |file| {
            eprintln!("  fetching {file}");
        })?;
        // The developer is the publisher here: re-pin even when the bytes changed.
        registry.lock_forced(&published.id, &published.version)?;
        eprintln!(
            "  {:<22} {:>9} bytes  sha256 {}",
            manifest.tool_ref().to_string(),
            wasm.len(),
            &published.artifact_digest.to_hex()[..16]
        );
    }
    eprintln!(
        "published {} tools into {} (key {})",
        templates_with_source.len(),
        home.join("registry").display(),
        key.key_id()
    );
    Ok(())
}

/// Runs `cargo build` for the guests, with `args` selecting the packages, features and bins.
fn compile_guests(root: &Path, args: &[&str]) -> Result<()> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    eprintln!("building guests for {TARGET} (profile `{PROFILE}`)...");
    let status = Command::new(&cargo)
        .current_dir(root)
        .args([
            "build",
            "--locked",
            "--target",
            TARGET,
            "--profile",
            PROFILE,
        ])
        .args(args)
        .env("CARGO_TARGET_DIR", guest_target_dir())
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .status()
        .with_context(|| format!("running {cargo}"))?;
    if !status.success() {
        bail!("building the tools failed (see above)");
    }
    Ok(())
}

/// The development signing key of `home`, created (with its trusted public half) if missing.
///
/// The secret key file is created mode 0600 in `<home>/keys`, itself created mode 0700 when
/// missing, both by `SigningKey::write_file`; a key file others can read is refused when read.
fn dev_key(home: &Path) -> Result<SigningKey> {
    let secret = home
        .join("keys")
        .join(format!("{DEV_PUBLISHER}.secret.json"));
    let public = home.join("trust").join(format!("{DEV_PUBLISHER}.pub.json"));
    // Anything at the path (not only a regular file) is read, so that a FIFO or a device there
    // is refused rather than taken for a missing key.
    let key = if secret.symlink_metadata().is_ok() {
        SigningKey::read_file(&secret)
            .with_context(|| format!("reading the development key {}", secret.display()))?
    } else {
        let key = generate_keypair(DEV_PUBLISHER)?;
        key.write_file(&secret)?;
        eprintln!(
            "generated development key {} at {}",
            key.key_id(),
            secret.display()
        );
        key
    };
    std::fs::create_dir_all(public.parent().expect("has a parent"))?;
    key.public_key().write_file(&public)?;
    Ok(key)
}

#[cfg(test)]
mod dev_key_tests {
    use super::dev_key;

    #[cfg(unix)]
    #[test]
    fn the_dev_key_is_created_owner_only_in_an_owner_only_directory() {
        use std::os::unix::fs::PermissionsExt as _;

        let home =
            std::env::temp_dir().join(format!("locara-xtask-dev-key-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        let key = dev_key(&home).unwrap();
        let mode =
            |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&home.join("keys")), 0o700);
        assert_eq!(mode(&home.join("keys/locara-dev.secret.json")), 0o600);
        assert!(home.join("trust/locara-dev.pub.json").is_file());
        // The second run reads the same key back.
        assert_eq!(dev_key(&home).unwrap().key_id(), key.key_id());
        std::fs::remove_dir_all(&home).unwrap();
    }
}
