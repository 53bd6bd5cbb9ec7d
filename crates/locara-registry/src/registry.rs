//! The local directory registry: publish, list, resolve, verify custom tools, and lock.
//!
//! Layout under the root:
//!
//! ```text
//! <root>/tools/<id>/<version>/manifest.json
//! <root>/tools/<id>/<version>/manifest.sig.json
//! <root>/tools/<id>/<version>/<id>-<version>.wasm
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use locara_manifest::{Artifact, LockedTool, Lockfile, ToolManifest, ToolName, ToolRef, Version};

use crate::cache::{Cache, Loaded};
use crate::error::io;
use crate::fs::ReadLimit;
use crate::signature::{self, ManifestSignature};
use crate::verified::Wasm;
use crate::{Digest, Error, KeyId, ModelStore, SigningKey, TrustStore, VerifiedArtifact, fs};

const TOOLS_DIR: &str = "tools";
const MANIFEST_FILE: &str = "manifest.json";
const SIGNATURE_FILE: &str = "manifest.sig.json";

/// The file name of a tool's wasm module in the registry, and its manifest's `artifact.url`:
/// `<id>-<version>.wasm`.
fn artifact_file_name(id: &ToolName, version: &Version) -> String {
    format!("{id}-{version}.wasm")
}

/// Where a [`Registry`] keeps its files and whom it trusts.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RegistryConfig {
    /// The registry root, holding `tools/<id>/<version>/`.
    pub root: PathBuf,
    /// The content-addressed artifact cache, holding `sha256/<hex>`.
    /// By default this is `<root>/cache`.
    pub cache_dir: PathBuf,
    /// The keys whose signatures are accepted. By default this is empty, which trusts nothing.
    pub trust: TrustStore,
    /// The lockfile to honor and update. By default there is none: resolving never pins and
    /// never refuses a rollback.
    pub lockfile: Option<PathBuf>,
    /// The model store, holding `sha256/<hex>`. By default this is `<root>/models`.
    pub model_dir: PathBuf,
}

impl RegistryConfig {
    /// A registry at `root`, caching in `<root>/cache`, trusting nothing, without a lockfile.
    #[must_use]
    pub fn new(root: impl Into<PathBuf>) -> RegistryConfig {
        let root = root.into();
        RegistryConfig {
            cache_dir: root.join("cache"),
            model_dir: root.join("models"),
            root,
            trust: TrustStore::new(),
            lockfile: None,
        }
    }

    /// Sets `cache_dir`.
    #[must_use]
    pub fn with_cache_dir(mut self, cache_dir: impl Into<PathBuf>) -> RegistryConfig {
        self.cache_dir = cache_dir.into();
        self
    }

    /// Sets `model_dir`.
    #[must_use]
    pub fn with_model_dir(mut self, model_dir: impl Into<PathBuf>) -> RegistryConfig {
        self.model_dir = model_dir.into();
        self
    }

    /// Sets `trust`.
    #[must_use]
    pub fn with_trust(mut self, trust: TrustStore) -> RegistryConfig {
        self.trust = trust;
        self
    }

    /// Sets `lockfile`. The file need not exist yet; it is created on the first pin.
    #[must_use]
    pub fn with_lockfile(mut self, lockfile: impl Into<PathBuf>) -> RegistryConfig {
        self.lockfile = Some(lockfile.into());
        self
    }
}

/// What [`Registry::publish`] wrote.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PublishedTool {
    /// The tool's id.
    pub id: ToolName,
    /// The tool's version.
    pub version: Version,
    /// The written `manifest.json`.
    pub manifest_path: PathBuf,
    /// The written `manifest.sig.json`.
    pub signature_path: PathBuf,
    /// The written `<id>-<version>.wasm`.
    pub artifact_path: PathBuf,
    /// SHA-256 of the written manifest bytes (what the signature covers).
    pub manifest_digest: Digest,
    /// SHA-256 of the wasm bytes.
    pub artifact_digest: Digest,
    /// The signing key's id.
    pub key_id: KeyId,
}

/// The outcome of [`Registry::list`]: entries whose signature verified, and entries that did not.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct RegistryListing {
    /// Entries with a trusted, valid signature over a valid manifest in the right directory,
    /// sorted by id, then version.
    pub tools: Vec<ToolListing>,
    /// Entries that failed verification, with the reason, in the same order.
    pub rejected: Vec<RejectedEntry>,
}

/// A registry entry whose manifest verified. The artifact bytes were not read; `resolve` checks
/// them.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolListing {
    /// The tool's id.
    pub id: ToolName,
    /// The tool's version.
    pub version: Version,
    /// The signed manifest.
    pub manifest: Arc<ToolManifest>,
    /// SHA-256 of the signed manifest bytes.
    pub manifest_digest: Digest,
    /// The trusted key that signed it.
    pub key_id: KeyId,
}

/// A registry entry that [`Registry::list`] skipped.
#[derive(Debug)]
#[non_exhaustive]
pub struct RejectedEntry {
    /// The entry's directory.
    pub path: PathBuf,
    /// Why it was skipped.
    pub error: Error,
}

/// A signed tool's three files as bytes: `manifest.json`, `manifest.sig.json` and the wasm
/// module. It is what [`Registry::files`] hands out to be shipped elsewhere (an OCI registry)
/// and what comes back from there. Bytes that came from elsewhere are untrusted: only
/// [`Registry::verify_files`] and [`Registry::install`] say what they are.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolFiles {
    /// The exact bytes of `manifest.json` (what the signature covers).
    pub manifest: Vec<u8>,
    /// The bytes of `manifest.sig.json`.
    pub signature: Vec<u8>,
    /// The wasm module.
    pub wasm: Vec<u8>,
}

impl ToolFiles {
    /// The three files.
    #[must_use]
    pub fn new(manifest: Vec<u8>, signature: Vec<u8>, wasm: Vec<u8>) -> ToolFiles {
        ToolFiles {
            manifest,
            signature,
            wasm,
        }
    }
}

impl std::fmt::Debug for ToolFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolFiles")
            .field("manifest_bytes", &self.manifest.len())
            .field("signature_bytes", &self.signature.len())
            .field("wasm_bytes", &self.wasm.len())
            .finish()
    }
}

/// A manifest whose signature and identity checked out; the artifact is not read yet.
struct CheckedManifest {
    manifest: Arc<ToolManifest>,
    manifest_digest: Digest,
    key_id: KeyId,
}

#[derive(Debug)]
struct LockState {
    path: PathBuf,
    lockfile: Mutex<Lockfile>,
}

/// A local directory registry of signed tools, with a content-addressed cache and an optional
/// lockfile.
///
/// Every tool handed out is a [`VerifiedArtifact`]: its `manifest.json` is signed by a key in the
/// trust store, sits in the directory of its own id and version, and pins the artifact's size and
/// SHA-256. Artifacts are served from the cache when a cache entry re-hashes correctly; a corrupt
/// entry is removed and re-installed from the registry's copy, which is checked first.
///
/// Lockfile semantics (when one is configured):
/// - A bare `id` resolves to the pinned version; without a pin, to the highest version present
///   (the highest release, or the highest pre-release if there is no release), which is then pinned.
/// - `id@version` older than the pin fails with [`Error::Rollback`]; the pinned version itself must
///   still have the pinned hashes ([`Error::LockMismatch`]); a newer version is allowed and moves
///   the pin forward.
/// - [`Registry::lock`] pins explicitly with the same rules; [`Registry::lock_forced`] pins even a
///   downgrade or changed hashes.
///
/// The lockfile is read once by [`Registry::new`] and rewritten atomically on every pin.
#[derive(Debug)]
pub struct Registry {
    root: PathBuf,
    cache: Cache,
    trust: TrustStore,
    lock: Option<LockState>,
    models: ModelStore,
}

impl Registry {
    /// Opens a registry. Nothing is created on disk until something is published, cached or pinned.
    ///
    /// # Errors
    ///
    /// Returns [`Error::Io`] if the configured lockfile exists but cannot be read,
    /// [`Error::NotARegularFile`] or [`Error::FileTooLarge`] if it is not a regular file of at
    /// most 1 MiB, and [`Error::Invalid`] if it is malformed.
    pub fn new(config: RegistryConfig) -> Result<Registry, Error> {
        let RegistryConfig {
            root,
            cache_dir,
            trust,
            lockfile,
            model_dir,
        } = config;
        let lock = match lockfile {
            None => None,
            Some(path) => {
                let lockfile = match fs::read_to_string(&path, ReadLimit::LOCKFILE) {
                    Ok(text) => Lockfile::from_json(&text).map_err(|source| Error::Invalid {
                        subject: format!("lockfile `{}`", path.display()),
                        source,
                    })?,
                    Err(Error::Io { source, .. })
                        if source.kind() == std::io::ErrorKind::NotFound =>
                    {
                        Lockfile::new()
                    }
                    Err(e) => return Err(e),
                };
                Some(LockState {
                    path,
                    lockfile: Mutex::new(lockfile),
                })
            }
        };
        Ok(Registry {
            root,
            cache: Cache::new(cache_dir),
            trust,
            lock,
            models: ModelStore::new(model_dir),
        })
    }

    /// The store of the models tools depend on.
    #[must_use]
    pub fn models(&self) -> &ModelStore {
        &self.models
    }

    /// The registry root.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The trust store.
    #[must_use]
    pub fn trust(&self) -> &TrustStore {
        &self.trust
    }

    /// A copy of the current lockfile, if one is configured.
    #[must_use]
    pub fn lockfile(&self) -> Option<Lockfile> {
        self.lock.as_ref().map(|state| lock_guard(state).clone())
    }

    /// Signs `manifest` with `key` and writes `manifest.json`, `manifest.sig.json` and
    /// `<id>-<version>.wasm` into `<root>/tools/<id>/<version>/`, replacing an earlier publish of the
    /// same version. Each file is written atomically; the signature is written last.
    ///
    /// The manifest must pin exactly these wasm bytes (`artifact.sha256`, `artifact.size_bytes`,
    /// and `artifact.url` = `<id>-<version>.wasm`); [`prepare_manifest`] builds such a manifest from
    /// a template. The key need not be in this registry's trust store.
    ///
    /// # Errors
    ///
    /// Returns [`Error::Invalid`] if the manifest fails validation, [`Error::PublishMismatch`] if it
    /// does not pin `wasm`, and [`Error::Io`] if a file cannot be written.
    pub fn publish(
        &self,
        manifest: &ToolManifest,
        wasm: &[u8],
        key: &SigningKey,
    ) -> Result<PublishedTool, Error> {
        let subject = manifest.tool_ref().to_string();
        manifest.validate().map_err(|source| Error::Invalid {
            subject: format!("manifest of {subject}"),
            source,
        })?;
        let artifact_digest = Digest::of(wasm);
        let file_name = artifact_file_name(&manifest.id, &manifest.version);
        let mismatch = |field, found: String, expected: String| Error::PublishMismatch {
            subject: subject.clone(),
            field,
            found,
            expected,
        };
        if Digest::from(&manifest.artifact.sha256) != artifact_digest {
            return Err(mismatch(
                "sha256",
                artifact_digest.to_hex(),
                manifest.artifact.sha256.to_string(),
            ));
        }
        if manifest.artifact.size_bytes != wasm.len() as u64 {
            return Err(mismatch(
                "size_bytes",
                wasm.len().to_string(),
                manifest.artifact.size_bytes.to_string(),
            ));
        }
        if manifest.artifact.url != file_name {
            return Err(mismatch("url", file_name, manifest.artifact.url.clone()));
        }

        let manifest_bytes = manifest.to_json_pretty().into_bytes();
        let signature = signature::sign_manifest(&manifest_bytes, key);
        let dir = self.version_dir(&manifest.id, &manifest.version);
        let published = PublishedTool {
            id: manifest.id.clone(),
            version: manifest.version.clone(),
            manifest_path: dir.join(MANIFEST_FILE),
            signature_path: dir.join(SIGNATURE_FILE),
            artifact_path: dir.join(file_name),
            manifest_digest: Digest::of(&manifest_bytes),
            artifact_digest,
            key_id: key.key_id().clone(),
        };
        fs::write_atomic(&published.artifact_path, wasm)?;
        fs::write_atomic(&published.manifest_path, &manifest_bytes)?;
        fs::write_atomic(
            &published.signature_path,
            signature.to_json_pretty().as_bytes(),
        )?;
        tracing::info!(tool = %subject, dir = %dir.display(), key_id = %key.key_id(), "published");
        Ok(published)
    }

    /// Lists every entry under `<root>/tools`, verifying each manifest's signature and identity
    /// (but not reading artifacts). Entries that fail are not dropped silently: they are returned
    /// in [`RegistryListing::rejected`] and logged at warn level. A registry without a `tools`
    /// directory lists as empty.
    ///
    /// # Errors
    ///
    /// Returns [`Error::Io`] only if a directory exists but cannot be read; a bad entry is a
    /// rejection, not an error.
    pub fn list(&self) -> Result<RegistryListing, Error> {
        let mut listing = RegistryListing::default();
        for (id_name, id_dir) in subdirectories(&self.root.join(TOOLS_DIR))? {
            let id = match id_name.parse::<ToolName>() {
                Ok(id) => id,
                Err(source) => {
                    listing.reject(id_dir.clone(), invalid_dir(&id_dir, source));
                    continue;
                }
            };
            let mut versions = Vec::new();
            for (version_name, version_dir) in subdirectories(&id_dir)? {
                match version_name.parse::<Version>() {
                    Ok(version) => versions.push((version, version_dir)),
                    Err(source) => {
                        listing.reject(version_dir.clone(), invalid_dir(&version_dir, source));
                    }
                }
            }
            versions.sort();
            for (version, dir) in versions {
                match self.check_manifest(&id, &version) {
                    Ok(checked) => listing.tools.push(ToolListing {
                        id: id.clone(),
                        version,
                        manifest: checked.manifest,
                        manifest_digest: checked.manifest_digest,
                        key_id: checked.key_id,
                    }),
                    Err(error) => listing.reject(dir, error),
                }
            }
        }
        Ok(listing)
    }

    /// Resolves a reference to a verified artifact, following the lockfile rules described on
    /// [`Registry`].
    ///
    /// Checks, in order: the version exists; `manifest.sig.json` exists; its key is trusted; the
    /// signature matches the exact `manifest.json` bytes; the manifest parses and validates; its id
    /// and version match the directory; the lockfile pin (if this version is pinned) has the same
    /// manifest and artifact hashes; the artifact's size and SHA-256 match the manifest. The
    /// artifact is then installed into the cache and, if needed, pinned.
    ///
    /// # Errors
    ///
    /// [`Error::ToolNotFound`], [`Error::Rollback`], [`Error::Unsigned`], [`Error::RevokedKey`],
    /// [`Error::UnknownKey`], [`Error::BadSignature`], [`Error::Invalid`],
    /// [`Error::IdentityMismatch`], [`Error::LockMismatch`], [`Error::SizeMismatch`],
    /// [`Error::HashMismatch`], [`Error::Io`], and [`Error::NotARegularFile`] or
    /// [`Error::FileTooLarge`] for a file that is not a regular file of a sane size.
    pub fn resolve(&self, reference: &ToolRef) -> Result<VerifiedArtifact, Error> {
        let id = &reference.id;
        let mut guard = self.lock.as_ref().map(lock_guard);
        let pinned = guard
            .as_deref()
            .and_then(|lockfile| lockfile.get(id))
            .cloned();
        let version = match (&reference.version, &pinned) {
            (Some(requested), Some(pin)) if *requested < pin.version => {
                return Err(Error::Rollback {
                    id: id.clone(),
                    requested: requested.clone(),
                    locked: pin.version.clone(),
                });
            }
            (Some(requested), _) => requested.clone(),
            (None, Some(pin)) => {
                if !self.version_dir(id, &pin.version).is_dir() {
                    return Err(self
                        .not_found(id, format!("{id}@{} (pinned by the lockfile)", pin.version)));
                }
                pin.version.clone()
            }
            (None, None) => self
                .highest_version(id)?
                .ok_or_else(|| self.not_found(id, id.to_string()))?,
        };
        let checked = self.check_manifest(id, &version)?;
        if let Some(pin) = pinned.as_ref().filter(|pin| pin.version == version) {
            check_pin(pin, &checked)?;
        }
        let artifact_path = self
            .version_dir(id, &version)
            .join(artifact_file_name(id, &version));
        let artifact = self.load_artifact(checked, &artifact_path)?;
        if let (Some(lockfile), Some(state)) = (guard.as_deref_mut(), self.lock.as_ref())
            && pinned.is_none_or(|pin| pin.version < version)
        {
            pin(lockfile, &state.path, id, &artifact)?;
        }
        tracing::debug!(tool = %artifact.tool_ref(), "resolved");
        Ok(artifact)
    }

    /// Verifies a tool shipped outside the registry (an app's custom tool) with the same checks as
    /// [`Registry::resolve`], except the directory identity and the lockfile, which do not apply.
    /// The manifest's `artifact.url` is ignored: `wasm` names the module. The module is installed
    /// into the cache.
    ///
    /// # Errors
    ///
    /// [`Error::Unsigned`], [`Error::RevokedKey`], [`Error::UnknownKey`], [`Error::BadSignature`],
    /// [`Error::Invalid`], [`Error::SizeMismatch`], [`Error::HashMismatch`], [`Error::Io`],
    /// [`Error::NotARegularFile`] and [`Error::FileTooLarge`].
    pub fn verify_path(
        &self,
        manifest: &Path,
        signature: &Path,
        wasm: &Path,
    ) -> Result<VerifiedArtifact, Error> {
        let subject = format!("custom tool `{}`", manifest.display());
        let checked = self.check_files(&subject, manifest, signature)?;
        self.load_artifact(checked, wasm)
    }

    /// Pins `id@version` in the lockfile after verifying it fully (as [`Registry::resolve`] does).
    ///
    /// # Errors
    ///
    /// Returns [`Error::NoLockfile`] without a lockfile, [`Error::Rollback`] if `version` is older
    /// than the current pin, [`Error::LockMismatch`] if it equals the pin but the hashes changed,
    /// and the verification errors of [`Registry::resolve`].
    pub fn lock(&self, id: &ToolName, version: &Version) -> Result<LockedTool, Error> {
        self.lock_impl(id, version, false)
    }

    /// Like [`Registry::lock`], but pins even an older version or changed hashes. The tool must
    /// still verify.
    ///
    /// # Errors
    ///
    /// Returns [`Error::NoLockfile`] without a lockfile and the verification errors of
    /// [`Registry::resolve`].
    pub fn lock_forced(&self, id: &ToolName, version: &Version) -> Result<LockedTool, Error> {
        self.lock_impl(id, version, true)
    }

    fn lock_impl(
        &self,
        id: &ToolName,
        version: &Version,
        force: bool,
    ) -> Result<LockedTool, Error> {
        let state = self.lock.as_ref().ok_or(Error::NoLockfile)?;
        let mut lockfile = lock_guard(state);
        let checked = self.check_manifest(id, version)?;
        if let Some(pin) = lockfile.get(id).filter(|_| !force) {
            check_against_pin(pin, &checked)?;
        }
        let artifact_path = self
            .version_dir(id, version)
            .join(artifact_file_name(id, version));
        let artifact = self.load_artifact(checked, &artifact_path)?;
        pin(&mut lockfile, &state.path, id, &artifact)
    }

    /// The three files of `id@version`, verified as [`Registry::resolve`] verifies them (the
    /// lockfile aside: shipping a tool elsewhere pins nothing here). The bytes returned are the
    /// ones checked.
    ///
    /// # Errors
    ///
    /// The verification errors of [`Registry::resolve`].
    pub fn files(&self, id: &ToolName, version: &Version) -> Result<ToolFiles, Error> {
        let dir = self.version_dir(id, version);
        if !dir.is_dir() {
            return Err(self.not_found(id, format!("{id}@{version}")));
        }
        let subject = format!("{id}@{version}");
        let (checked, manifest, signature) = self.read_checked(
            &subject,
            &dir.join(MANIFEST_FILE),
            &dir.join(SIGNATURE_FILE),
        )?;
        check_identity(&dir, &checked, id, version)?;
        let artifact = self.load_artifact(checked, &dir.join(artifact_file_name(id, version)))?;
        Ok(ToolFiles::new(
            manifest,
            signature.into_bytes(),
            artifact.wasm()?.to_vec(),
        ))
    }

    /// Verifies files that came from elsewhere (`source` names where, for errors): a trusted
    /// signature over the exact manifest bytes, a valid manifest, and the wasm's size and
    /// SHA-256 against it. Nothing is written.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownKey`], [`Error::RevokedKey`], [`Error::BadSignature`],
    /// [`Error::Malformed`] (a signature that does not parse), [`Error::Invalid`],
    /// [`Error::SizeMismatch`], [`Error::HashMismatch`], and [`Error::FileTooLarge`] for a
    /// manifest or signature larger than a registry would read.
    pub fn verify_files(&self, files: &ToolFiles, source: &str) -> Result<VerifiedArtifact, Error> {
        let checked = self.check_in_memory(files, source)?;
        Ok(VerifiedArtifact::new(
            checked.manifest,
            Wasm::Bytes(files.wasm.clone().into()),
            checked.manifest_digest,
            checked.key_id,
        ))
    }

    /// [`Registry::verify_files`]'s checks, without copying the module.
    fn check_in_memory(&self, files: &ToolFiles, source: &str) -> Result<CheckedManifest, Error> {
        let too_large = |limit: ReadLimit| Error::FileTooLarge {
            what: limit.what(),
            path: PathBuf::from(source),
            limit: limit.max_bytes(),
        };
        if files.manifest.len() as u64 > ReadLimit::MANIFEST.max_bytes() {
            return Err(too_large(ReadLimit::MANIFEST));
        }
        if files.signature.len() as u64 > ReadLimit::SIGNATURE_FILE.max_bytes() {
            return Err(too_large(ReadLimit::SIGNATURE_FILE));
        }
        let signature_text =
            std::str::from_utf8(&files.signature).map_err(|e| Error::Malformed {
                subject: format!("signature from {source}"),
                message: e.to_string(),
            })?;
        let checked = self.check_bytes(
            &format!("the tool from {source}"),
            &files.manifest,
            &format!("manifest from {source}"),
            signature_text,
            &format!("signature from {source}"),
        )?;
        let subject = checked.manifest.tool_ref().to_string();
        checked
            .manifest
            .validate()
            .map_err(|source_error| Error::Invalid {
                subject: format!("manifest of {subject}"),
                source: source_error,
            })?;
        check_artifact(&checked.manifest, subject, &files.wasm)?;
        Ok(checked)
    }

    /// Installs files that came from elsewhere (`source` names where, for errors) into
    /// `<root>/tools/<id>/<version>/` and pins them in the lockfile, after
    /// [`Registry::verify_files`] checked them in memory and the lockfile's rules allowed them:
    /// nothing is written for files that fail. Installing the same files again changes nothing;
    /// other files under a version already installed are refused.
    ///
    /// # Errors
    ///
    /// The errors of [`Registry::verify_files`]; [`Error::Rollback`] for a version older than
    /// the lockfile's pin, [`Error::LockMismatch`] for the pinned version with other hashes,
    /// [`Error::AlreadyInstalled`] when the version holds another verified manifest, and
    /// [`Error::Io`] when a file cannot be written.
    pub fn install(&self, files: &ToolFiles, source: &str) -> Result<PublishedTool, Error> {
        let checked = self.check_in_memory(files, source)?;
        let mut guard = self.lock.as_ref().map(lock_guard);
        if let Some(pin) = guard
            .as_deref()
            .and_then(|lockfile| lockfile.get(&checked.manifest.id))
        {
            check_against_pin(pin, &checked)?;
        }
        let artifact = VerifiedArtifact::new(
            checked.manifest,
            Wasm::Bytes(files.wasm.clone().into()),
            checked.manifest_digest,
            checked.key_id,
        );
        let manifest = artifact.manifest();
        let (id, version) = (&manifest.id, &manifest.version);
        let dir = self.version_dir(id, version);
        if dir.is_dir()
            && let Ok(present) = self.check_manifest(id, version)
            && present.manifest_digest != *artifact.manifest_digest()
        {
            return Err(Error::AlreadyInstalled {
                subject: artifact.tool_ref().to_string(),
                dir,
            });
        }
        let file_name = artifact_file_name(id, version);
        let installed = PublishedTool {
            id: id.clone(),
            version: version.clone(),
            manifest_path: dir.join(MANIFEST_FILE),
            signature_path: dir.join(SIGNATURE_FILE),
            artifact_path: dir.join(file_name),
            manifest_digest: *artifact.manifest_digest(),
            artifact_digest: *artifact.artifact_digest(),
            key_id: artifact.key_id().clone(),
        };
        fs::write_atomic(&installed.artifact_path, &files.wasm)?;
        fs::write_atomic(&installed.manifest_path, &files.manifest)?;
        fs::write_atomic(&installed.signature_path, &files.signature)?;
        self.cache
            .install(artifact.artifact_digest(), &files.wasm)?;
        if let (Some(lockfile), Some(state)) = (guard.as_deref_mut(), self.lock.as_ref())
            && lockfile.get(id).is_none_or(|pin| pin.version < *version)
        {
            pin(lockfile, &state.path, id, &artifact)?;
        }
        tracing::info!(tool = %artifact.tool_ref(), %source, dir = %dir.display(), "installed");
        Ok(installed)
    }

    fn version_dir(&self, id: &ToolName, version: &Version) -> PathBuf {
        self.root
            .join(TOOLS_DIR)
            .join(id.as_str())
            .join(version.to_string())
    }

    /// Verifies the signature, manifest and directory identity of a registry entry.
    fn check_manifest(&self, id: &ToolName, version: &Version) -> Result<CheckedManifest, Error> {
        let dir = self.version_dir(id, version);
        if !dir.is_dir() {
            return Err(self.not_found(id, format!("{id}@{version}")));
        }
        let subject = format!("{id}@{version}");
        let checked = self.check_files(
            &subject,
            &dir.join(MANIFEST_FILE),
            &dir.join(SIGNATURE_FILE),
        )?;
        check_identity(&dir, &checked, id, version)?;
        Ok(checked)
    }

    /// Reads a manifest and its signature, checks the signature, then parses the manifest.
    fn check_files(
        &self,
        subject: &str,
        manifest_path: &Path,
        signature_path: &Path,
    ) -> Result<CheckedManifest, Error> {
        Ok(self.read_checked(subject, manifest_path, signature_path)?.0)
    }

    /// [`Registry::check_files`], also handing back the bytes that were checked.
    fn read_checked(
        &self,
        subject: &str,
        manifest_path: &Path,
        signature_path: &Path,
    ) -> Result<(CheckedManifest, Vec<u8>, String), Error> {
        let manifest_bytes = fs::read(manifest_path, ReadLimit::MANIFEST)?;
        let signature_text = match fs::read_to_string(signature_path, ReadLimit::SIGNATURE_FILE) {
            Ok(text) => text,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::Unsigned {
                    subject: subject.to_owned(),
                    path: signature_path.to_owned(),
                });
            }
            Err(e) => return Err(e),
        };
        let checked = self.check_bytes(
            subject,
            &manifest_bytes,
            &format!("manifest `{}`", manifest_path.display()),
            &signature_text,
            &format!("signature file `{}`", signature_path.display()),
        )?;
        Ok((checked, manifest_bytes, signature_text))
    }

    /// Checks a signature over manifest bytes, then parses the manifest; `manifest_name` and
    /// `signature_name` say where the bytes came from in errors.
    fn check_bytes(
        &self,
        subject: &str,
        manifest_bytes: &[u8],
        manifest_name: &str,
        signature_text: &str,
        signature_name: &str,
    ) -> Result<CheckedManifest, Error> {
        let signature = ManifestSignature::parse(signature_name, signature_text)?;
        let key_id = signature::verify(manifest_bytes, &signature, &self.trust, subject)?;
        let manifest =
            ToolManifest::from_slice(manifest_bytes).map_err(|source| Error::Invalid {
                subject: manifest_name.to_owned(),
                source,
            })?;
        Ok(CheckedManifest {
            manifest: Arc::new(manifest),
            manifest_digest: Digest::of(manifest_bytes),
            key_id,
        })
    }

    /// Serves the artifact from the cache if a cache entry re-hashes correctly (or is the very
    /// version of the file that did before: then it is not read now, see [`VerifiedArtifact`]),
    /// else reads `path`, checks it against the manifest and installs it into the cache.
    fn load_artifact(
        &self,
        checked: CheckedManifest,
        path: &Path,
    ) -> Result<VerifiedArtifact, Error> {
        let CheckedManifest {
            manifest,
            manifest_digest,
            key_id,
        } = checked;
        let expected = Digest::from(&manifest.artifact.sha256);
        let wasm = match self.cache.load(&expected, manifest.artifact.size_bytes)? {
            Some(Loaded::Bytes(bytes)) => Wasm::Bytes(bytes),
            Some(Loaded::Recorded(entry)) => Wasm::Cached {
                entry: Arc::new(entry),
                source: path.to_owned(),
            },
            None => {
                let wasm = read_artifact(&manifest, path)?;
                self.cache.install(&expected, &wasm)?;
                Wasm::Bytes(wasm.into())
            }
        };
        Ok(VerifiedArtifact::new(
            manifest,
            wasm,
            manifest_digest,
            key_id,
        ))
    }

    /// The highest version of `id` present: the highest release, or the highest pre-release if
    /// there is no release.
    fn highest_version(&self, id: &ToolName) -> Result<Option<Version>, Error> {
        let versions = self.versions_of(id)?;
        let release = versions.iter().filter(|v| !v.is_prerelease()).max();
        Ok(release.or_else(|| versions.iter().max()).cloned())
    }

    /// Versions of `id` present (directories whose names parse), unsorted.
    fn versions_of(&self, id: &ToolName) -> Result<Vec<Version>, Error> {
        let dir = self.root.join(TOOLS_DIR).join(id.as_str());
        Ok(subdirectories(&dir)?
            .into_iter()
            .filter_map(|(name, _)| name.parse().ok())
            .collect())
    }

    /// A [`Error::ToolNotFound`] listing the versions of `id`, or everything if there are none.
    fn not_found(&self, id: &ToolName, reference: String) -> Error {
        let mut available: Vec<String> = match self.versions_of(id) {
            Ok(versions) if !versions.is_empty() => {
                let mut versions = versions;
                versions.sort();
                versions.iter().map(|v| format!("{id}@{v}")).collect()
            }
            _ => self.all_refs(),
        };
        available.dedup();
        Error::ToolNotFound {
            reference,
            registry: self.root.clone(),
            available,
        }
    }

    fn all_refs(&self) -> Vec<String> {
        let mut refs = Vec::new();
        for (id_name, _) in subdirectories(&self.root.join(TOOLS_DIR)).unwrap_or_default() {
            let Ok(id) = id_name.parse::<ToolName>() else {
                continue;
            };
            let mut versions = self.versions_of(&id).unwrap_or_default();
            versions.sort();
            refs.extend(versions.iter().map(|v| format!("{id}@{v}")));
        }
        refs
    }
}

impl RegistryListing {
    fn reject(&mut self, path: PathBuf, error: Error) {
        tracing::warn!(path = %path.display(), error = %error, "skipping registry entry");
        self.rejected.push(RejectedEntry { path, error });
    }
}

/// Builds a publishable manifest from a template (every field except `artifact`, `validated_at`
/// and `validated_by`) and the wasm bytes: sets `artifact` to `{url: "<id>-<version>.wasm",
/// sha256, size_bytes}` of `wasm`. `validated_at`/`validated_by` stay unset; add them with the
/// manifest's `with_*` methods if wanted.
///
/// # Errors
///
/// Returns [`Error::Invalid`] if the template is malformed or fails validation.
pub fn prepare_manifest(template_json: &str, wasm: &[u8]) -> Result<ToolManifest, Error> {
    let digest = Digest::of(wasm);
    let size = wasm.len() as u64;
    let placeholder = Artifact::new("pending", digest.to_sha256_hex(), size);
    let manifest =
        ToolManifest::from_template_json(template_json, placeholder).map_err(|source| {
            Error::Invalid {
                subject: "template passed to `prepare_manifest`".to_owned(),
                source,
            }
        })?;
    let url = artifact_file_name(&manifest.id, &manifest.version);
    Ok(manifest.with_artifact(Artifact::new(url, digest.to_sha256_hex(), size)))
}

fn lock_guard(state: &LockState) -> MutexGuard<'_, Lockfile> {
    // A panic while holding the lock cannot leave the lockfile half-updated: `pin` replaces it
    // only after the file was written.
    state
        .lockfile
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// Pins `artifact` in `lockfile`, writing the file first so memory and disk never disagree.
fn pin(
    lockfile: &mut Lockfile,
    path: &Path,
    id: &ToolName,
    artifact: &VerifiedArtifact,
) -> Result<LockedTool, Error> {
    let locked = LockedTool::new(
        artifact.manifest().version.clone(),
        artifact.manifest_digest().to_sha256_hex(),
        artifact.artifact_digest().to_sha256_hex(),
    );
    let updated = lockfile.clone().with_tool(id.clone(), locked.clone());
    fs::write_atomic(path, updated.to_json_pretty().as_bytes())?;
    *lockfile = updated;
    tracing::info!(tool = %artifact.tool_ref(), lockfile = %path.display(), "pinned");
    Ok(locked)
}

/// Reads the module at `path` and checks it against `manifest` ([`check_artifact`]).
pub(crate) fn read_artifact(manifest: &ToolManifest, path: &Path) -> Result<Vec<u8>, Error> {
    let subject = manifest.tool_ref().to_string();
    let expected_size = manifest.artifact.size_bytes;
    let size_mismatch = |found| Error::SizeMismatch {
        what: "artifact",
        subject: subject.clone(),
        found,
        expected: expected_size,
    };
    // Bounded by the signed size: a larger file is refused by its size alone, and one that
    // grows while read is cut one byte past it.
    let (file, meta) = fs::open_regular(path)?;
    if meta.len() != expected_size {
        return Err(size_mismatch(meta.len()));
    }
    let limit = ReadLimit::ARTIFACT.at_most(expected_size);
    let wasm = fs::read_from(file, &meta, path, limit).map_err(|e| match e {
        // It grew while being read: one byte past the signed size was read.
        Error::FileTooLarge { .. } if limit.max_bytes() == expected_size => {
            size_mismatch(expected_size.saturating_add(1))
        }
        e => e,
    })?;
    check_artifact(manifest, subject, &wasm)?;
    Ok(wasm)
}

/// The module's bytes must have the size and SHA-256 `manifest` pins (`subject` names the
/// tool in errors).
fn check_artifact(manifest: &ToolManifest, subject: String, wasm: &[u8]) -> Result<(), Error> {
    let expected_size = manifest.artifact.size_bytes;
    if wasm.len() as u64 != expected_size {
        return Err(Error::SizeMismatch {
            what: "artifact",
            subject,
            found: wasm.len() as u64,
            expected: expected_size,
        });
    }
    let expected = Digest::from(&manifest.artifact.sha256);
    let found = Digest::of(wasm);
    if found != expected {
        return Err(Error::HashMismatch {
            what: "artifact",
            subject,
            found,
            expected,
        });
    }
    Ok(())
}

/// A manifest must sit in the directory of its own id and version.
fn check_identity(
    dir: &Path,
    checked: &CheckedManifest,
    id: &ToolName,
    version: &Version,
) -> Result<(), Error> {
    if checked.manifest.id != *id || checked.manifest.version != *version {
        return Err(Error::IdentityMismatch {
            dir: dir.to_owned(),
            found: checked.manifest.tool_ref().to_string(),
            expected: format!("{id}@{version}"),
        });
    }
    Ok(())
}

/// The lockfile's rules for a verified manifest against its id's pin: never older than the
/// pin, and the pinned version itself only with the pinned hashes.
fn check_against_pin(pin: &LockedTool, checked: &CheckedManifest) -> Result<(), Error> {
    let (id, version) = (&checked.manifest.id, &checked.manifest.version);
    if *version < pin.version {
        return Err(Error::Rollback {
            id: id.clone(),
            requested: version.clone(),
            locked: pin.version.clone(),
        });
    }
    if *version == pin.version {
        check_pin(pin, checked)?;
    }
    Ok(())
}

fn check_pin(pin: &LockedTool, checked: &CheckedManifest) -> Result<(), Error> {
    let subject = checked.manifest.tool_ref().to_string();
    let manifest_hash = checked.manifest_digest.to_sha256_hex();
    if manifest_hash != pin.manifest_sha256 {
        return Err(Error::LockMismatch {
            what: "manifest",
            subject,
            found: manifest_hash,
            expected: pin.manifest_sha256.clone(),
        });
    }
    if checked.manifest.artifact.sha256 != pin.artifact_sha256 {
        return Err(Error::LockMismatch {
            what: "artifact",
            subject,
            found: checked.manifest.artifact.sha256.clone(),
            expected: pin.artifact_sha256.clone(),
        });
    }
    Ok(())
}

fn invalid_dir(dir: &Path, source: locara_manifest::Error) -> Error {
    Error::Invalid {
        subject: format!("registry directory `{}`", dir.display()),
        source,
    }
}

/// The subdirectories of `dir` as (name, path), sorted by name, skipping hidden ones and
/// non-UTF-8 names. A missing `dir` has none.
fn subdirectories(dir: &Path) -> Result<Vec<(String, PathBuf)>, Error> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io("read directory", dir)(e)),
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io("read directory", dir))?;
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            tracing::warn!(path = %path.display(), "skipping entry with a non-UTF-8 name");
            continue;
        };
        if name.starts_with('.') || !path.is_dir() {
            continue;
        }
        dirs.push((name, path));
    }
    dirs.sort();
    Ok(dirs)
}
