//! `new tool` and `build`: writing a tool with `locara-pdk`. `new tool` writes a crate to
//! start from; `build` compiles it for wasm32-wasip1 (installing the target if needed), runs
//! the module once in the sandbox with `--locara-describe`, and writes what the code says
//! (id, version, description, schemas) into the crate's `manifest.json`. Signing and
//! publishing stay `publish`'s; `dev` runs `build_tool` and `publish`'s functions in a loop.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context as _, ensure, format_err};
use locara_manifest::ToolName;
use locara_sandbox::{BackendKind, Capabilities, Limits, Sandbox, SandboxConfig};
use locara_upstream::toolchain::WASM_TARGET as TARGET;
use serde_json::{Value, json};

use crate::{context::Context, output};

/// The manifest template's file name in a tool crate.
pub(crate) const MANIFEST: &str = "manifest.json";

/// Where this CLI's own `locara-pdk` sources are, when it was built from the repository.
fn bundled_pdk() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../locara-pdk");
    path.join("Cargo.toml")
        .is_file()
        .then(|| path.canonicalize().ok())?
}

/// Checks `id` against `locara-manifest`'s naming rule, the one `#[tool(id = ...)]` and the
/// registry apply, and that it can also name the crate (`text-stats`) and the function
/// (`stats`) this writes: its first and last parts start with a letter.
fn check_id(id: &str) -> anyhow::Result<()> {
    ToolName::new(id)?;
    let starts_with_letter =
        |part: Option<&str>| part.is_some_and(|p| p.starts_with(|c: char| c.is_ascii_lowercase()));
    ensure!(
        starts_with_letter(id.split('.').next()) && starts_with_letter(id.rsplit('.').next()),
        "tool id `{id}` is valid, but its first and last parts must start with a letter to name the crate and the function `locara new tool` writes, e.g. `text.stats`"
    );
    Ok(())
}

/// `locara new tool ID`: a crate in `dir/<id with . as ->` with a `#[tool]` function, a test
/// and a manifest template.
pub(crate) fn new_tool(
    ctx: &Context,
    id: &str,
    dir: &Path,
    pdk: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    check_id(id)?;
    let pdk = match pdk {
        Some(path) => path
            .canonicalize()
            .with_context(|| format!("--pdk {}: no such directory", path.display()))?,
        None => bundled_pdk().ok_or_else(|| {
            format_err!(
                "this locara was not built from a Locara checkout, so it cannot point the new crate at locara-pdk; pass --pdk PATH (the crates/locara-pdk directory of a checkout)"
            )
        })?,
    };
    ensure!(
        pdk.join("Cargo.toml").is_file(),
        "{} has no Cargo.toml: --pdk must be the crates/locara-pdk directory of a Locara checkout",
        pdk.display()
    );
    let name = id.replace('.', "-");
    let root = dir.join(&name);
    ensure!(
        !root.exists(),
        "{} already exists: refusing to overwrite it; choose another --dir or id",
        root.display()
    );
    let function = id.rsplit('.').next().unwrap_or(id).replace('-', "_");
    let files = [
        ("Cargo.toml", cargo_toml(&name, &pdk)),
        ("src/main.rs", main_rs(id, &function)),
        (MANIFEST, manifest_template(id)),
        (".cargo/config.toml", CARGO_CONFIG.to_owned()),
        (".gitignore", "/target\n".to_owned()),
    ];
    for (path, text) in &files {
        let path = root.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if ctx.json {
        output::json(&json!({"id": id, "path": root, "files": files.map(|(p, _)| p)}))?;
    } else {
        output::stdout(&format!(
            "created {} (tool {id}); next: edit src/main.rs and the limits in {MANIFEST}, then `locara build {}`\n",
            root.display(),
            root.display()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn cargo_toml(name: &str, pdk: &Path) -> String {
    format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
publish = false

[[bin]]
name = "{name}"
path = "src/main.rs"

[dependencies]
locara-pdk = {{ path = {pdk:?} }}
schemars = "1"
serde = {{ version = "1", features = ["derive"] }}

[dev-dependencies]
serde_json = "1"

# Small modules that start fast: what a sandboxed tool wants.
[profile.release]
opt-level = "s"
lto = true
codegen-units = 1
strip = true

# Not part of any enclosing workspace.
[workspace]
"#,
        pdk = pdk.display().to_string()
    )
}

fn main_rs(id: &str, function: &str) -> String {
    format!(
        r#"//! The `{id}` tool. `locara build` compiles it for wasm32-wasip1 and writes its
//! description and schemas (from the doc comment and the types below) into manifest.json.

use locara_pdk::{{JsonSchema, ToolError, tool}};
use serde::{{Deserialize, Serialize}};

// The `///` comments below are what the model reads: the function's becomes the tool's
// description, the fields' the descriptions in its input and output schemas.

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {{
    /// The text to count.
    text: String,
}}

#[derive(Serialize, JsonSchema)]
struct Counts {{
    /// Words: runs of characters between whitespace.
    words: usize,
    /// Characters (Unicode scalar values).
    characters: usize,
}}

/// Counts the words and characters of a text.
#[tool(id = "{id}")]
fn {function}(args: Args) -> Result<Counts, ToolError> {{
    if args.text.is_empty() {{
        return Err(ToolError::bad_args("text is empty; pass the text to count"));
    }}
    Ok(Counts {{
        words: args.text.split_whitespace().count(),
        characters: args.text.chars().count(),
    }})
}}

#[cfg(test)]
mod tests {{
    use serde_json::json;

    #[test]
    fn counts_words_and_characters() {{
        let out = super::__locara_tool_call(json!({{"text": "two words"}})).unwrap();
        assert_eq!(out, json!({{"words": 2, "characters": 9}}));
        let err = super::__locara_tool_call(json!({{"text": ""}})).unwrap_err();
        assert_eq!(err.kind(), locara_pdk::ErrorKind::BadArgs);
    }}
}}
"#
    )
}

/// Everything but what `locara build` fills in from the code.
fn manifest_template(id: &str) -> String {
    let template = json!({
        "schema_version": 1,
        "id": id,
        "version": "0.1.0",
        "display_name": id,
        "description": "(written by `locara build` from the tool function's doc comment)",
        "license": "Apache-2.0",
        "model_dependencies": [],
        "capability_requirements": [],
        "wasi_imports": {
            "stdio": {"stdin": true, "stdout": true, "stderr": true},
            "net": {"allowed_hosts": []}
        },
        "safety_tier": "read_only",
        "limits": {
            "memory_mb": 64,
            "wall_time_ms": 5000,
            "fuel": 1_000_000_000_u64,
            "output_bytes": 1_048_576,
            "max_fds": 16
        },
        "input_schema": {"type": "object"},
        "output_schema": {"type": "object"}
    });
    let mut text = serde_json::to_string_pretty(&template).expect("a template is JSON");
    text.push('\n');
    text
}

/// Tools get wasm SIMD, as the built-in ones do.
const CARGO_CONFIG: &str = r#"[target.wasm32-wasip1]
rustflags = ["-C", "target-feature=+simd128"]
"#;

/// What [`build_tool`] made.
pub(crate) struct Built {
    /// The tool's id, as the module describes itself.
    pub(crate) id: Value,
    /// The module.
    pub(crate) wasm_path: PathBuf,
    /// Its bytes.
    pub(crate) wasm: Vec<u8>,
    /// The crate's `manifest.json`, now holding what the module describes.
    pub(crate) manifest_path: PathBuf,
    /// Whether `manifest.json` was rewritten (it is left alone when it already said the same).
    pub(crate) manifest_rewritten: bool,
}

/// Fails unless `path` is a tool crate: a `Cargo.toml` and a manifest template.
pub(crate) fn check_crate(path: &Path) -> anyhow::Result<()> {
    ensure!(
        path.join("Cargo.toml").is_file(),
        "{} has no Cargo.toml: pass the directory of a tool crate (see `locara new tool`)",
        path.display()
    );
    ensure!(
        path.join(MANIFEST).is_file(),
        "{} has no {MANIFEST}, the tool's manifest template: `locara new tool` writes one",
        path.display()
    );
    Ok(())
}

/// `locara build [PATH]`.
pub(crate) fn build(ctx: &Context, path: &Path) -> anyhow::Result<ExitCode> {
    let built = build_tool(path)?;
    if ctx.json {
        output::json(
            &json!({"id": built.id, "wasm": built.wasm_path, "manifest": built.manifest_path}),
        )?;
    } else {
        output::stdout(&format!(
            "built {} ({} bytes) and wrote its description and schemas into {}\nnext: locara publish --key NAME.secret.json --manifest {} --wasm {}\n",
            built.wasm_path.display(),
            built.wasm.len(),
            built.manifest_path.display(),
            built.manifest_path.display(),
            built.wasm_path.display()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What `locara build` does, without printing: compiles the crate at `path` for the wasm
/// target, runs the module with `--locara-describe`, and writes what it says into the crate's
/// `manifest.json` (only when that changes the file, so a rebuild of the same code does not
/// touch it: `locara dev` watches it).
pub(crate) fn build_tool(path: &Path) -> anyhow::Result<Built> {
    check_crate(path)?;
    let cargo_toml = path.join("Cargo.toml");
    let manifest_path = path.join(MANIFEST);
    locara_upstream::toolchain::ensure_wasm_target()?;
    let wasm_path = cargo_build(&cargo_toml)?;
    let wasm = std::fs::read(&wasm_path)
        .with_context(|| format!("cannot read {}", wasm_path.display()))?;
    let info = describe(&wasm)
        .with_context(|| format!("{} did not describe itself", wasm_path.display()))?;

    let old_text = std::fs::read_to_string(&manifest_path)
        .with_context(|| format!("cannot read {}", manifest_path.display()))?;
    let mut manifest: Value = serde_json::from_str(&old_text)
        .with_context(|| format!("{} is not valid JSON", manifest_path.display()))?;
    let object = manifest
        .as_object_mut()
        .ok_or_else(|| format_err!("{} must hold a JSON object", manifest_path.display()))?;
    for field in locara_pdk::ToolInfo::MANIFEST_FIELDS {
        let value = info
            .get(field)
            .cloned()
            .ok_or_else(|| format_err!("the module's --locara-describe output has no `{field}`"))?;
        object.insert(field.to_owned(), value);
    }
    let mut text = serde_json::to_string_pretty(&manifest).expect("a manifest is JSON");
    text.push('\n');
    let manifest_rewritten = text != old_text;
    if manifest_rewritten {
        std::fs::write(&manifest_path, text)
            .with_context(|| format!("cannot write {}", manifest_path.display()))?;
    }
    Ok(Built {
        id: info["id"].clone(),
        wasm_path,
        wasm,
        manifest_path,
        manifest_rewritten,
    })
}

/// Builds the crate's bin in release mode for the wasm target; returns the module's path.
fn cargo_build(cargo_toml: &Path) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut child = Command::new(cargo)
        .args(["build", "--release", "--target", TARGET])
        .args([
            "--message-format",
            "json-render-diagnostics",
            "--manifest-path",
        ])
        .arg(cargo_toml)
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot run cargo")?;
    let mut wasm = None;
    for line in std::io::BufReader::new(child.stdout.take().expect("piped")).lines() {
        let line = line.context("cannot read cargo's output")?;
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let is_bin = message["target"]["kind"]
            .as_array()
            .is_some_and(|kinds| kinds.iter().any(|k| k == "bin"));
        if message["reason"] == "compiler-artifact" && is_bin {
            wasm = message["filenames"]
                .as_array()
                .and_then(|f| {
                    f.iter()
                        .filter_map(Value::as_str)
                        .find(|f| f.ends_with(".wasm"))
                })
                .map(PathBuf::from);
        }
    }
    let status = child.wait().context("cannot wait for cargo")?;
    ensure!(
        status.success(),
        "cargo build failed (see its messages above)"
    );
    wasm.ok_or_else(|| {
        format_err!(
            "cargo built no wasm bin from {}: a tool crate has one bin, whose main is made by #[locara_pdk::tool]",
            cargo_toml.display()
        )
    })
}

/// Runs the module once in the sandbox, with no files and the default limits, as
/// `tool --locara-describe`, and parses what it prints.
fn describe(wasm: &[u8]) -> anyhow::Result<Value> {
    let sandbox = Sandbox::new(&SandboxConfig::new(BackendKind::Wasmtime))?;
    let module = sandbox.compile(wasm, None)?;
    let caps = Capabilities::new().with_args([locara_pdk::DESCRIBE_FLAG]);
    let outcome = module.run(b"", &Limits::default(), &caps)?;
    ensure!(
        outcome.status.is_success(),
        "it ended with {:?}: {}; is its main made by #[locara_pdk::tool]?",
        outcome.status,
        String::from_utf8_lossy(&outcome.stderr).trim()
    );
    serde_json::from_slice(&outcome.stdout).context(
        "it did not print JSON for --locara-describe; is its main made by #[locara_pdk::tool]?",
    )
}
