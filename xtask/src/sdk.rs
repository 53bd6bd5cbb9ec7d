//! `cargo xtask sdk python|node|test`: builds the Python wheel (maturin) and the npm tarball
//! of the language packages, and runs their own test suites against what was built.
//!
//! Both packages are built in the `dev` profile by default, with the target dir `cargo test
//! --workspace` uses, so CI compiles the facade once for the Rust tests and both packages;
//! `--release` builds what a user would install (and what the SDK benchmark measures).

use std::{
    env,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

use crate::project_root;

/// What `cargo xtask sdk` was asked.
#[derive(Debug)]
pub(crate) struct Args {
    task: String,
    release: bool,
    out: Option<PathBuf>,
}

pub(crate) fn parse_args(args: &[String]) -> Result<Args> {
    let mut parsed = Args {
        task: String::new(),
        release: false,
        out: None,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--release" => parsed.release = true,
            "--out" => {
                let dir = args.next().context("--out needs a directory")?;
                parsed.out = Some(PathBuf::from(dir));
            }
            task @ ("python" | "node" | "test" | "bench") if parsed.task.is_empty() => {
                task.clone_into(&mut parsed.task);
            }
            other => bail!("unexpected argument `{other}` to sdk\n\n{}", crate::USAGE),
        }
    }
    if parsed.task.is_empty() {
        bail!(
            "sdk needs a task: python, node, test or bench\n\n{}",
            crate::USAGE
        );
    }
    Ok(parsed)
}

pub(crate) fn run(args: &Args) -> Result<()> {
    let out = args.out.clone().unwrap_or_else(|| sdk_dir().join("dist"));
    match args.task.as_str() {
        "python" => build_wheel(args.release, &catalog_home()?, &out).map(drop),
        "node" => build_npm(args.release, &catalog_home()?, &out).map(drop),
        "bench" => bench(&out),
        _ => test(args.release, &out),
    }
}

/// Cargo's target dir.
fn target_dir() -> PathBuf {
    env::var_os("CARGO_TARGET_DIR").map_or_else(|| project_root().join("target"), PathBuf::from)
}

/// `<target dir>/sdk`: the packages, the suites' home and their scratch space.
fn sdk_dir() -> PathBuf {
    target_dir().join("sdk")
}

/// The venv `.ci/test-deps` fills: maturin, pytest, the model server.
fn venv() -> PathBuf {
    env::var_os("LOCARA_PY_VENV").map_or_else(|| "/var/tmp/locara-py".into(), PathBuf::from)
}

fn status(command: &mut Command) -> Result<()> {
    let shown = format!("{command:?}");
    let status = command
        .status()
        .with_context(|| format!("cannot run {shown}"))?;
    if !status.success() {
        bail!("{shown} failed: {status}");
    }
    Ok(())
}

fn cargo() -> Command {
    Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// `locara tools export --format FORMAT` over the catalog of `home`.
fn export(home: &Path, format: &str) -> Result<Vec<u8>> {
    let types = cargo()
        .args(["run", "-q", "--locked", "-p", "locara-cli", "--", "--home"])
        .arg(home)
        .args(["tools", "export", "--format", format])
        .output()
        .context("running `locara tools export`")?;
    if !types.status.success() {
        bail!(
            "`locara tools export` failed: {}",
            String::from_utf8_lossy(&types.stderr)
        );
    }
    Ok(types.stdout)
}

/// Copies the files of directory `from` into `to`, recursively.
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Builds the wheel into `out`, its tool types from the catalog of `home`; its path.
///
/// maturin builds from a staging copy of the package's Python half with `locara/tools.pyi`
/// (`locara tools export --format python-module`) added, so the clone stays clean.
fn build_wheel(release: bool, home: &Path, out: &Path) -> Result<PathBuf> {
    let venv_maturin = venv().join("bin/maturin");
    let maturin = if venv_maturin.is_file() {
        venv_maturin
    } else {
        PathBuf::from("maturin")
    };
    let crate_dir = project_root().join("crates/locara-python");
    let source = sdk_dir().join("python-src");
    let _ = std::fs::remove_dir_all(&source);
    copy_dir(&crate_dir.join("python"), &source.join("python"))?;
    std::fs::write(
        source.join("python/locara/tools.pyi"),
        export(home, "python-module")?,
    )?;
    let pyproject = std::fs::read_to_string(crate_dir.join("pyproject.toml"))?;
    let manifest = crate_dir.join("Cargo.toml");
    let manifest = manifest.to_str().context("a UTF-8 path to the crate")?;
    std::fs::write(
        source.join("pyproject.toml"),
        pyproject.replace(
            "manifest-path = \"Cargo.toml\"",
            &format!("manifest-path = {manifest:?}"),
        ),
    )?;
    let staging = sdk_dir().join("wheel");
    let _ = std::fs::remove_dir_all(&staging);
    let mut command = Command::new(&maturin);
    command
        .args(["build", "--strip", "--out"])
        .arg(&staging)
        // The interpreter the wheel is built against only names its tag: it is abi3.
        .arg("--interpreter")
        .arg(venv().join("bin/python"))
        .current_dir(&source);
    if release {
        command.arg("--release");
    }
    status(&mut command).context("building the wheel (maturin comes from `bash .ci/test-deps`)")?;
    let wheel = std::fs::read_dir(&staging)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .context("maturin wrote no wheel")?;
    std::fs::create_dir_all(out)?;
    let target = out.join(wheel.file_name().context("wheel name")?);
    std::fs::copy(&wheel, &target)?;
    eprintln!("built {}", target.display());
    Ok(target)
}

/// Builds the npm tarball into `out`, its tool types from the catalog of `home`; its path.
fn build_npm(release: bool, home: &Path, out: &Path) -> Result<PathBuf> {
    let mut command = cargo();
    command.args(["build", "--locked", "-p", "locara-node"]);
    if release {
        command.arg("--release");
    }
    status(&mut command)?;
    let target = target_dir().join(if release { "release" } else { "debug" });
    let package = sdk_dir().join("npm");
    let _ = std::fs::remove_dir_all(&package);
    std::fs::create_dir_all(&package)?;
    let source = project_root().join("crates/locara-node/npm");
    for name in ["package.json", "index.js", "index.d.ts"] {
        std::fs::copy(source.join(name), package.join(name))
            .with_context(|| format!("copying {name}"))?;
    }
    // Debug builds carry hundreds of MB of debug info; the package needs none of it.
    status(
        Command::new("objcopy")
            .arg("--strip-debug")
            .arg(target.join("liblocara_node.so"))
            .arg(package.join("locara.node")),
    )?;
    // The tools' types, from the built-in tools' manifests (published into the suites' home).
    std::fs::write(
        package.join("tools.d.ts"),
        export(home, "typescript-module")?,
    )?;
    std::fs::create_dir_all(out)?;
    let packed = Command::new("npm")
        .args(["pack", "--silent", "--pack-destination"])
        .arg(std::path::absolute(out)?)
        .current_dir(&package)
        .output()
        .context("running npm pack")?;
    if !packed.status.success() {
        bail!(
            "npm pack failed: {}",
            String::from_utf8_lossy(&packed.stderr)
        );
    }
    let name = String::from_utf8(packed.stdout)?.trim().to_owned();
    let tarball = out.join(name);
    eprintln!("built {}", tarball.display());
    Ok(tarball)
}

/// A home with every built-in tool (not the test probe): the catalog the packages' tool types
/// are generated from, and the tools their suites call.
fn catalog_home() -> Result<PathBuf> {
    let home = sdk_dir().join("home");
    let manifests = project_root().join("crates/locara-tools-builtin/manifests");
    let mut ids = Vec::new();
    for entry in std::fs::read_dir(&manifests)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "json") {
            let id = path.file_stem().and_then(|s| s.to_str());
            ids.push(id.context("a manifest's file name")?.to_owned());
        }
    }
    crate::build_tools(&home, &ids)?;
    Ok(home)
}

/// Installs `wheel` into the test venv.
fn install_wheel(wheel: &Path) -> Result<()> {
    status(
        Command::new(venv().join("bin/python"))
            .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
            .args(["--no-deps", "--force-reinstall"])
            .arg(wheel),
    )
}

/// A fresh npm project at `dir` with `tarball` installed.
fn npm_project(dir: &Path, tarball: &Path) -> Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    std::fs::write(
        dir.join("package.json"),
        r#"{"name": "locara-sdk-project", "private": true, "type": "module"}"#,
    )?;
    status(
        Command::new("npm")
            .args([
                "install",
                "--silent",
                "--no-audit",
                "--no-fund",
                "--offline",
            ])
            .arg(tarball)
            .current_dir(dir),
    )
}

/// Builds and installs the release packages, then runs `cargo bench -p locara-bench --bench
/// sdk` against them.
fn bench(out: &Path) -> Result<()> {
    let home = catalog_home()?;
    install_wheel(&build_wheel(true, &home, out)?)?;
    let project = sdk_dir().join("bench-node");
    npm_project(&project, &build_npm(true, &home, out)?)?;
    status(
        cargo()
            .args(["bench", "--locked", "-p", "locara-bench", "--bench", "sdk"])
            .env("LOCARA_SDK_PYTHON", venv().join("bin/python"))
            .env("LOCARA_SDK_NODE_PROJECT", &project),
    )
}

/// Builds both packages, installs each from what was built (the wheel into the test venv, the
/// tarball into a fresh npm project), and runs pytest and node:test against them.
fn test(release: bool, out: &Path) -> Result<()> {
    let root = project_root();
    let home = catalog_home()?;
    let wheel = build_wheel(release, &home, out)?;
    let tarball = build_npm(release, &home, out)?;
    install_wheel(&wheel)?;
    status(
        Command::new(venv().join("bin/python"))
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .arg(root.join("crates/locara-python/tests"))
            .env("LOCARA_TEST_HOME", &home)
            .env("LOCARA_REPO", &root)
            .env("LOCARA_CLI", target_dir().join("debug/locara"))
            // The tests import the installed wheel, never the source tree.
            .current_dir(sdk_dir()),
    )
    .context("the Python package's tests")?;
    // The type hints, tools included, as a type checker reads them from the installed wheel.
    status(
        Command::new(venv().join("bin/python"))
            .args([
                "-m",
                "mypy",
                "--strict",
                "--warn-unused-ignores",
                "--no-incremental",
            ])
            .arg(root.join("crates/locara-python/tests/typed.py"))
            .current_dir(sdk_dir()),
    )
    .context("type-checking a program against the Python package's hints")?;
    let project = sdk_dir().join("node-project");
    npm_project(&project, &tarball)?;
    // The suites run from inside the project, so `import '@locara/sdk'` finds what was installed.
    let tests = root.join("crates/locara-node/tests");
    for entry in std::fs::read_dir(&tests)? {
        let path = entry?.path();
        std::fs::copy(&path, project.join(path.file_name().context("file name")?))?;
    }
    status(
        Command::new("tsc")
            .args([
                "--noEmit", "--strict", "--module", "nodenext", "--target", "es2022",
            ])
            .args(["--moduleResolution", "nodenext", "--lib", "es2022,dom"])
            .arg("types.ts")
            .current_dir(&project),
    )
    .context("type-checking a program against the package's declarations")?;
    status(
        Command::new("node")
            .args(["--test", "--test-concurrency=1", "sdk.test.mjs"])
            .env("LOCARA_TEST_HOME", &home)
            .env("LOCARA_REPO", &root)
            .current_dir(&project),
    )
    .context("the Node package's tests")?;
    Ok(())
}
