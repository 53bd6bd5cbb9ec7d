//! `cargo xtask fuzz [--seconds N] [TARGET...]`: builds the cargo-fuzz targets in `fuzz/` once,
//! then runs each for `N` seconds (default 60), as CI does.
//!
//! - cargo-fuzz, pinned to [`CARGO_FUZZ_VERSION`], is installed with `cargo install --locked`
//!   when missing, into `$LOCARA_TOOLS_ROOT` (default `$CARGO_HOME`, else `~/.cargo`), a
//!   directory CI can cache, and run from there; its `bin` goes on the children's `PATH`, after
//!   the directory of the cargo running this task (cargo-fuzz runs `cargo` from `PATH`).
//! - It builds with the toolchain at hand and `RUSTC_BOOTSTRAP=1` for cargo-fuzz's nightly-only
//!   flags, so CI needs no nightly toolchain; without a sanitizer (the code under test is safe
//!   Rust, and a sanitizer halves the executions), with debug assertions and overflow checks.
//! - The build goes to `$CARGO_TARGET_DIR/fuzz` (default `<repo>/target/fuzz`): its flags differ
//!   from a normal build's, so sharing the directory would rebuild everything each time.
//! - The committed corpus `fuzz/corpus/<target>` is copied into
//!   `<fuzz target dir>/runs/<target>/corpus`, the directory libFuzzer writes to, and
//!   `fuzz/regressions/<target>` is read as more seeds: a run never writes into the clone.
//! - A crash, timeout or out-of-memory fails the task, naming the target and the input that
//!   caused it, after every target has run.

use std::{
    env,
    ffi::OsString,
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use anyhow::{Context, Result, bail, format_err};

use crate::project_root;

/// The cargo-fuzz release that `cargo xtask fuzz` installs and expects.
const CARGO_FUZZ_VERSION: &str = "0.13.2";
/// How long each target runs by default, in seconds.
const DEFAULT_SECONDS: u64 = 60;
/// libFuzzer's limit on the process's resident memory, in MB: far above what any target needs,
/// well below what the machine has.
const RSS_LIMIT_MB: u64 = 2048;
/// libFuzzer's limit on one input, in seconds: anything slower is reported as a hang.
const TIMEOUT_SECONDS: u64 = 10;

/// What `cargo xtask fuzz` was asked to do.
#[derive(Debug)]
pub(crate) struct Options {
    seconds: u64,
    targets: Vec<String>,
}

/// Parses the arguments after `fuzz`.
pub(crate) fn parse_args(args: &[String]) -> Result<Options> {
    let mut options = Options {
        seconds: DEFAULT_SECONDS,
        targets: Vec::new(),
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--seconds" {
            let value = args
                .next()
                .ok_or_else(|| format_err!("--seconds needs a value"))?;
            options.seconds = match value.parse() {
                Ok(0) | Err(_) => bail!("--seconds takes a whole number above 0, not `{value}`"),
                Ok(seconds) => seconds,
            };
        } else if arg.starts_with('-') {
            bail!("unknown flag `{arg}` for fuzz");
        } else {
            options.targets.push(arg.clone());
        }
    }
    Ok(options)
}

/// Installs cargo-fuzz if needed, builds every target and runs the chosen ones.
pub(crate) fn run(options: &Options) -> Result<()> {
    let root = project_root();
    let fuzz_dir = root.join("fuzz");
    let all = target_names(&fuzz_dir)?;
    let targets = if options.targets.is_empty() {
        all.clone()
    } else {
        for target in &options.targets {
            if !all.contains(target) {
                bail!(
                    "no fuzz target `{target}`; the targets are: {}",
                    all.join(", ")
                );
            }
        }
        options.targets.clone()
    };

    let (cargo_fuzz, path) = ensure_cargo_fuzz()?;
    let target_dir = env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("fuzz");
    let lock_path = fuzz_dir.join("Cargo.lock");
    let lock_before = fs::read(&lock_path).ok();

    eprintln!(
        "building {} fuzz targets into {}...",
        all.len(),
        target_dir.display()
    );
    let status = Command::new(&cargo_fuzz)
        .current_dir(&root)
        .args(["build", "--release", "--debug-assertions"])
        .args(["--sanitizer", "none", "--fuzz-dir"])
        .arg(&fuzz_dir)
        .arg("--target-dir")
        .arg(&target_dir)
        .env("PATH", &path)
        .env("RUSTC_BOOTSTRAP", "1")
        // cargo-fuzz sets its own flags; the caller's (e.g. `-D warnings`) are not meant for
        // the other crates' no-engine build.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .status()
        .with_context(|| format!("running {} build", cargo_fuzz.display()))?;
    if !status.success() {
        bail!("building the fuzz targets failed (see above)");
    }
    if fs::read(&lock_path).ok() != lock_before {
        eprintln!(
            "note: the build updated {}; commit it so that every run builds the same dependencies",
            lock_path.display()
        );
    }

    let bin_dir = target_dir.join(host_triple()?).join("release");
    eprintln!(
        "running {} fuzz targets for {} s each...",
        targets.len(),
        options.seconds
    );
    let mut failures = Vec::new();
    for target in &targets {
        if let Err(error) = run_target(&fuzz_dir, &bin_dir, &target_dir, target, options.seconds) {
            eprintln!("{error:#}");
            failures.push(target.clone());
        }
    }
    if !failures.is_empty() {
        bail!(
            "{} of {} fuzz targets failed: {}",
            failures.len(),
            targets.len(),
            failures.join(", ")
        );
    }
    Ok(())
}

/// The fuzz targets: the files in `fuzz/fuzz_targets/`, sorted.
fn target_names(fuzz_dir: &Path) -> Result<Vec<String>> {
    let dir = fuzz_dir.join("fuzz_targets");
    let mut names = Vec::new();
    for entry in fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "rs")
            && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
        {
            names.push(stem.to_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// Installs cargo-fuzz [`CARGO_FUZZ_VERSION`] unless it is there, and returns its path and the
/// `PATH` for the children: the directory of the cargo running this task first (cargo-fuzz runs
/// `cargo` from `PATH`, which must be this toolchain's), then cargo-fuzz's `bin` directory.
fn ensure_cargo_fuzz() -> Result<(PathBuf, OsString)> {
    let tools_root = env::var_os("LOCARA_TOOLS_ROOT")
        .or_else(|| env::var_os("CARGO_HOME"))
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
        .ok_or_else(|| format_err!("set LOCARA_TOOLS_ROOT (or HOME) to install cargo-fuzz"))?;
    let bin = tools_root.join("bin");
    let cargo_fuzz = bin.join("cargo-fuzz");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let cargo_dir = Path::new(&cargo)
        .parent()
        .filter(|dir| dir.is_absolute())
        .map(Path::to_path_buf);
    let path = env::join_paths(
        cargo_dir
            .into_iter()
            .chain([bin])
            .chain(env::split_paths(&env::var_os("PATH").unwrap_or_default())),
    )?;

    let installed = Command::new(&cargo_fuzz)
        .arg("--version")
        .stderr(Stdio::null())
        .output()
        .ok()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned());
    if installed.as_deref() == Some(&format!("cargo-fuzz {CARGO_FUZZ_VERSION}")) {
        return Ok((cargo_fuzz, path));
    }
    eprintln!(
        "installing cargo-fuzz {CARGO_FUZZ_VERSION} into {} (found {})...",
        tools_root.display(),
        installed.as_deref().unwrap_or("none")
    );
    let status = Command::new(&cargo)
        .args(["install", "cargo-fuzz", "--locked", "--version"])
        .arg(CARGO_FUZZ_VERSION)
        .arg("--root")
        .arg(&tools_root)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .status()
        .with_context(|| format!("running {cargo} install"))?;
    if !status.success() {
        bail!("installing cargo-fuzz {CARGO_FUZZ_VERSION} failed (see above)");
    }
    Ok((cargo_fuzz, path))
}

/// The host's target triple, which cargo-fuzz builds for and names its output directory after.
fn host_triple() -> Result<String> {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let out = Command::new(&rustc)
        .arg("-vV")
        .output()
        .with_context(|| format!("running {rustc} -vV"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .map(str::to_owned)
        .ok_or_else(|| format_err!("`{rustc} -vV` names no host"))
}

/// Runs one target on a copy of its committed corpus and prints a one-line summary.
fn run_target(
    fuzz_dir: &Path,
    bin_dir: &Path,
    target_dir: &Path,
    target: &str,
    seconds: u64,
) -> Result<()> {
    let work = target_dir.join("runs").join(target);
    let corpus = work.join("corpus");
    let artifacts = work.join("artifacts");
    if work.exists() {
        fs::remove_dir_all(&work).with_context(|| format!("removing {}", work.display()))?;
    }
    fs::create_dir_all(&corpus)?;
    fs::create_dir_all(&artifacts)?;
    let committed = fuzz_dir.join("corpus").join(target);
    let seeds = copy_files(&committed, &corpus)?;
    let regressions = fuzz_dir.join("regressions").join(target);

    let bin = bin_dir.join(target);
    let log_path = work.join("libfuzzer.log");
    let log = fs::File::create(&log_path)?;
    let mut command = Command::new(&bin);
    // libFuzzer writes new inputs into the first directory only.
    command.arg(&corpus);
    if regressions.is_dir() {
        command.arg(&regressions);
    }
    let mut prefix = artifacts.clone().into_os_string();
    prefix.push("/");
    let mut artifact_prefix = OsString::from("-artifact_prefix=");
    artifact_prefix.push(&prefix);
    let status = command
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
        .arg(format!("-timeout={TIMEOUT_SECONDS}"))
        .arg("-print_final_stats=1")
        .arg(artifact_prefix)
        .stdout(log.try_clone()?)
        .stderr(log)
        .status()
        .with_context(|| format!("running {}", bin.display()))?;
    let text = fs::read_to_string(&log_path).unwrap_or_default();
    let stat = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(&format!("stat::{name}:")))
            .map_or_else(|| "?".to_owned(), |v| v.trim().to_owned())
    };
    let (files, bytes) = dir_size(&corpus)?;

    if status.success() {
        eprintln!(
            "  {target:<18} {:>10} runs {:>7} exec/s  corpus {files} files, {bytes} bytes \
             ({seeds} committed, {} new)  peak rss {} MB",
            stat("number_of_executed_units"),
            stat("average_exec_per_sec"),
            stat("new_units_added"),
            stat("peak_rss_mb"),
        );
        return Ok(());
    }
    let tail: Vec<&str> = text.lines().rev().take(40).collect();
    let input = text
        .lines()
        .filter_map(|line| line.split_once("Test unit written to "))
        .map(|(_, path)| path.trim().to_owned())
        .next_back();
    let found = match &input {
        Some(input) => format!(
            "the failing input is {input}\n  reproduce: {bin} {input}\n  minimize: {bin} \
             -minimize_crash=1 -max_total_time=60 -exact_artifact_path=<name> {input}\n  then \
             commit <name> under fuzz/regressions/{target}/ and fix the bug (see fuzz/README.md)",
            bin = bin.display()
        ),
        None => format!("no input was saved; the full log is {}", log_path.display()),
    };
    Err(format_err!(
        "{}\nfuzz target `{target}` failed ({status}): {found}",
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    ))
}

/// Copies the files directly in `from` (if it exists) into `to`, and returns how many.
fn copy_files(from: &Path, to: &Path) -> Result<usize> {
    let Ok(entries) = fs::read_dir(from) else {
        return Ok(0);
    };
    let mut files = 0;
    for entry in entries {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            fs::copy(entry.path(), to.join(entry.file_name()))
                .with_context(|| format!("copying {}", entry.path().display()))?;
            files += 1;
        }
    }
    Ok(files)
}

/// How many files `dir` holds directly, and their total size in bytes.
fn dir_size(dir: &Path) -> Result<(usize, u64)> {
    let (mut files, mut bytes) = (0, 0);
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let metadata = entry?.metadata()?;
        if metadata.is_file() {
            files += 1;
            bytes += metadata.len();
        }
    }
    Ok((files, bytes))
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn flags_parse() {
        let args = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let options = parse_args(&args(&["--seconds", "5", "lockfile", "signature"])).unwrap();
        assert_eq!(
            (options.seconds, options.targets),
            (5, args(&["lockfile", "signature"]))
        );
        assert_eq!(parse_args(&[]).unwrap().seconds, DEFAULT_SECONDS);
        for bad in [&["--seconds", "0"][..], &["--seconds"], &["--jobs", "2"]] {
            assert!(parse_args(&args(bad)).is_err(), "{bad:?}");
        }
    }

    /// A stand-in for a fuzz target binary: prints `output` to stderr and exits with `code`.
    fn fake_target(bin_dir: &Path, name: &str, output: &str, code: i32) {
        fs::create_dir_all(bin_dir).unwrap();
        let path = bin_dir.join(name);
        fs::write(
            &path,
            format!("#!/bin/sh\ncat >&2 <<'END'\n{output}\nEND\nexit {code}\n"),
        )
        .unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn a_run_is_summarized_and_a_crash_names_the_target_and_the_input() {
        let dir = env::temp_dir().join(format!("xtask-fuzz-test-{}", std::process::id()));
        let (fuzz_dir, target_dir) = (dir.join("fuzz"), dir.join("target"));
        let bin_dir = target_dir.join("bin");
        fs::create_dir_all(fuzz_dir.join("corpus/ok")).unwrap();
        fs::write(fuzz_dir.join("corpus/ok/seed"), "{}").unwrap();

        fake_target(
            &bin_dir,
            "ok",
            "stat::number_of_executed_units: 1234\nstat::average_exec_per_sec: 617",
            0,
        );
        run_target(&fuzz_dir, &bin_dir, &target_dir, "ok", 1).unwrap();
        // The committed corpus was copied, not written to.
        assert!(target_dir.join("runs/ok/corpus/seed").is_file());
        assert_eq!(fs::read_dir(fuzz_dir.join("corpus/ok")).unwrap().count(), 1);

        fake_target(
            &bin_dir,
            "bad",
            "==1== ERROR: libFuzzer: deadly signal\nTest unit written to /runs/bad/artifacts/crash-0a1b",
            77,
        );
        let error = run_target(&fuzz_dir, &bin_dir, &target_dir, "bad", 1)
            .unwrap_err()
            .to_string();
        assert!(error.contains("deadly signal"), "{error}");
        assert!(
            error.contains(
                "fuzz target `bad` failed (exit status: 77): the failing input is /runs/bad/artifacts/crash-0a1b"
            ),
            "{error}"
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
