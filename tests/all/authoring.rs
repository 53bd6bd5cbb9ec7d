//! Writing a tool from nothing with the CLI: `locara new tool`, the crate's own test,
//! `locara build` (schemas from the code), `keygen`, `publish` and `run`; and the edit-run
//! loop, `locara dev`, with `locara run` after each change.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

/// `locara ARGS` with `home`, as a user runs it.
fn locara(home: &Path, args: &[&str], cwd: &Path, target: &Path) -> Output {
    let mut command = Command::new(crate::mcp_server::locara());
    command
        .arg("--home")
        .arg(home)
        .args(args)
        .current_dir(cwd)
        .env("CARGO_TARGET_DIR", target);
    without_wrappers(&mut command);
    command.output().expect("run locara")
}

/// The tool crate is built plainly, whatever wraps this test's own build (clippy, coverage).
fn without_wrappers(command: &mut Command) {
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
    ] {
        command.env_remove(var);
    }
}

fn ok(output: &Output, what: &str) -> String {
    assert!(
        output.status.success(),
        "{what} failed: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// A temp dir with a home and a working directory, and the target directory the tool crates
/// share: their dependencies are built once per target directory, beside this test's.
fn workshop() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (home, work) = (dir.path().join("home"), dir.path().join("work"));
    std::fs::create_dir_all(&work).unwrap();
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap().join("authoring");
    (dir, home, work, target)
}

/// Makes a publisher key `acme` in `work/keys`.
fn keygen_acme(home: &Path, work: &Path, target: &Path) {
    ok(
        &locara(
            home,
            &["keygen", "--publisher", "acme", "--out", "keys"],
            work,
            target,
        ),
        "locara keygen",
    );
}

/// Has the home trust the publisher key `acme`.
fn trust_acme(home: &Path, work: &Path) {
    std::fs::create_dir_all(home.join("trust")).unwrap();
    std::fs::copy(
        work.join("keys/acme.pub.json"),
        home.join("trust/acme.pub.json"),
    )
    .unwrap();
}

/// Ships the tool crate `work/<name>` (built, its key `acme` made) in an app, `work/app`: the
/// module as built, signed with `locara sign`, beside its manifest and signature in
/// `locara.json`; and a home for it, in `dir`, with no registry, trusting only `acme`.
/// Returns the app's directory and that home.
fn ship_in_app(
    dir: &Path,
    home: &Path,
    work: &Path,
    target: &Path,
    name: &str,
) -> (PathBuf, PathBuf) {
    let wasm = target.join(format!("wasm32-wasip1/release/{name}.wasm"));
    let manifest = format!("{name}/manifest.json");
    let sign = [
        "sign",
        "--key",
        "keys/acme.secret.json",
        "--manifest",
        &manifest,
        "--wasm",
        &wasm.display().to_string(),
    ];
    ok(&locara(home, &sign, work, target), "locara sign");
    let app = work.join("app");
    std::fs::create_dir(&app).unwrap();
    std::fs::copy(&wasm, app.join(format!("{name}.wasm"))).unwrap();
    for file in ["manifest.json", "manifest.sig.json"] {
        std::fs::copy(work.join(name).join(file), app.join(file)).unwrap();
    }
    let app_manifest = json!({
        "schema_version": 1,
        "name": format!("{name}-app"),
        "tools": [{"path": format!("{name}.wasm"), "manifest": "manifest.json", "signature": "manifest.sig.json"}],
    });
    std::fs::write(app.join("locara.json"), app_manifest.to_string()).unwrap();
    let app_home = dir.join("app-home");
    std::fs::create_dir_all(app_home.join("trust")).unwrap();
    std::fs::copy(
        work.join("keys/acme.pub.json"),
        app_home.join("trust/acme.pub.json"),
    )
    .unwrap();
    (app, app_home)
}

#[test]
fn a_scaffolded_tool_is_tested_built_published_and_run() {
    let (dir, home, work, target) = workshop();

    ok(
        &locara(&home, &["new", "tool", "text.stats"], &work, &target),
        "locara new tool",
    );
    let crate_dir = work.join("text-stats");
    let again = locara(&home, &["new", "tool", "text.stats"], &work, &target);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    let bad = locara(&home, &["new", "tool", "Text Stats"], &work, &target);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid tool name `Text Stats`"));
    // A valid tool id whose last part could not name the function is refused too.
    let bad = locara(&home, &["new", "tool", "image.3d"], &work, &target);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("must start with a letter"));

    // The crate's own test runs natively.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut test = Command::new(cargo);
    test.args(["test", "--quiet"])
        .current_dir(&crate_dir)
        .env("CARGO_TARGET_DIR", &target);
    without_wrappers(&mut test);
    ok(
        &test.output().unwrap(),
        "cargo test in the scaffolded crate",
    );

    // `build` writes the description and the schemas the code derives into the manifest.
    let built = ok(
        &locara(&home, &["build", "text-stats"], &work, &target),
        "locara build",
    );
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(crate_dir.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(
        manifest["description"],
        "Counts the words and characters of a text."
    );
    assert_eq!(manifest["input_schema"]["required"], json!(["text"]));
    assert_eq!(
        manifest["output_schema"]["properties"]["words"]["description"],
        "Words: runs of characters between whitespace."
    );
    let wasm = target.join("wasm32-wasip1/release/text-stats.wasm");
    assert!(built.contains(&wasm.display().to_string()), "{built}");

    keygen_acme(&home, &work, &target);
    trust_acme(&home, &work);
    let wasm = wasm.display().to_string();
    let publish = [
        "publish",
        "--key",
        "keys/acme.secret.json",
        "--manifest",
        "text-stats/manifest.json",
        "--wasm",
        &wasm,
    ];
    ok(&locara(&home, &publish, &work, &target), "locara publish");

    let run = ok(
        &locara(
            &home,
            &["run", "text.stats", "--arg", "text=hello wide world"],
            &work,
            &target,
        ),
        "locara run",
    );
    let out: Value = serde_json::from_str(&run).unwrap();
    assert_eq!(out, json!({"words": 3, "characters": 16}));
    // The derived schema refuses an unknown field before the tool runs.
    let refused = locara(
        &home,
        &["run", "text.stats", "--arg", "txt=a"],
        &work,
        &target,
    );
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("invalid_input"));

    // Shipped inside an app instead: signed beside its manifest, run from a home that has no
    // registry at all, only the publisher's key.
    let (app, app_home) = ship_in_app(dir.path(), &home, &work, &target, "text-stats");
    let run_in_app = [
        "--app",
        "app/locara.json",
        "run",
        "text.stats",
        "--arg",
        "text=a b",
    ];
    let run = ok(
        &locara(&app_home, &run_in_app, &work, &target),
        "locara --app run",
    );
    assert_eq!(
        serde_json::from_str::<Value>(&run).unwrap(),
        json!({"words": 2, "characters": 3})
    );
    let manifest = std::fs::read_to_string(app.join("manifest.json")).unwrap();
    std::fs::write(
        app.join("manifest.json"),
        manifest.replace("Counts the", "Counts all the"),
    )
    .unwrap();
    let tampered = locara(&app_home, &run_in_app, &work, &target);
    assert!(!tampered.status.success());
    assert!(
        String::from_utf8_lossy(&tampered.stderr).contains("bad signature"),
        "{}",
        String::from_utf8_lossy(&tampered.stderr)
    );
}

/// `locara dev`'s stdout, a line at a time, and where its stderr goes, for messages.
struct DevLoop {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    stderr: std::path::PathBuf,
}

impl DevLoop {
    /// The next line `locara dev` prints, within `timeout`.
    fn next_line(&self, timeout: std::time::Duration) -> String {
        match self.lines.recv_timeout(timeout) {
            Ok(line) => line,
            Err(e) => panic!(
                "no line from locara dev within {timeout:?} ({e}); its stderr:\n{}",
                std::fs::read_to_string(&self.stderr).unwrap_or_default()
            ),
        }
    }

    /// Asserts that nothing is printed for `time`: the loop is idle, waiting for a change.
    fn quiet_for(&self, time: std::time::Duration) {
        if let Ok(line) = self.lines.recv_timeout(time) {
            panic!("locara dev printed {line:?} though nothing changed");
        }
    }
}

impl DevLoop {
    /// Stops `locara dev` by its pid and waits for it.
    fn stop(mut self) {
        self.child.kill().expect("kill locara dev");
        let status = self.child.wait().expect("wait for locara dev");
        assert!(!status.success(), "locara dev ended by itself: {status}");
    }
}

impl Drop for DevLoop {
    /// Stops `locara dev` by its pid, however the test ends.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn locara_dev_republishes_on_every_change_and_survives_a_broken_build() {
    use std::io::BufRead as _;
    use std::time::Duration;

    let (dir, home, work, target) = workshop();

    ok(
        &locara(&home, &["new", "tool", "dev.greet"], &work, &target),
        "locara new tool",
    );
    keygen_acme(&home, &work, &target);
    // An untrusted key is refused at once: every build is verified when it is pinned.
    let untrusted = locara(
        &home,
        &["dev", "dev-greet", "--key", "keys/acme.secret.json"],
        &work,
        &target,
    );
    assert!(!untrusted.status.success());
    assert!(
        String::from_utf8_lossy(&untrusted.stderr).contains("is not trusted"),
        "{}",
        String::from_utf8_lossy(&untrusted.stderr)
    );
    trust_acme(&home, &work);

    let stderr = dir.path().join("dev.stderr");
    let mut command = Command::new(crate::mcp_server::locara());
    command
        .arg("--home")
        .arg(&home)
        .args(["dev", "dev-greet", "--key", "keys/acme.secret.json"])
        .current_dir(&work)
        .env("CARGO_TARGET_DIR", &target)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap());
    without_wrappers(&mut command);
    let mut child = command.spawn().expect("start locara dev");
    let stdout = child.stdout.take().unwrap();
    let (send, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if send.send(line).is_err() {
                break;
            }
        }
    });
    let dev = DevLoop {
        child,
        lines,
        stderr,
    };
    // The first build compiles the crate's dependencies (unless the other test did already).
    let (first, later) = (Duration::from_secs(900), Duration::from_secs(300));
    let run = || {
        let out = ok(
            &locara(
                &home,
                &["run", "dev.greet", "--arg", "text=hello wide world"],
                &work,
                &target,
            ),
            "locara run",
        );
        serde_json::from_str::<Value>(&out).unwrap()
    };

    let line = dev.next_line(first);
    assert!(
        line.starts_with("published dev.greet@0.1.0-dev.1 (sha256 "),
        "{line}"
    );
    assert_eq!(run(), json!({"words": 3, "characters": 16}));
    // The manifest.json the build rewrote (description, schemas) does not start another cycle.
    dev.quiet_for(Duration::from_secs(2));

    let main_rs = work.join("dev-greet/src/main.rs");
    let source = std::fs::read_to_string(&main_rs).unwrap();
    let count = "characters: args.text.chars().count(),";
    assert!(source.contains(count), "{source}");
    let times_ten = source.replace(count, "characters: args.text.chars().count() * 10,");
    std::fs::write(&main_rs, &times_ten).unwrap();
    let line = dev.next_line(later);
    assert!(
        line.starts_with("published dev.greet@0.1.0-dev.2 "),
        "{line}"
    );
    assert_eq!(run(), json!({"words": 3, "characters": 160}));

    // Versions stay immutable: the earlier build is still there, and naming it now is a
    // rollback, which the lockfile refuses as it always does.
    let rollback = locara(
        &home,
        &[
            "run",
            "dev.greet@0.1.0-dev.1",
            "--arg",
            "text=hello wide world",
        ],
        &work,
        &target,
    );
    assert!(!rollback.status.success());
    assert!(
        String::from_utf8_lossy(&rollback.stderr).contains("roll"),
        "{}",
        String::from_utf8_lossy(&rollback.stderr)
    );

    // A syntax error is reported, and the loop waits for the next change.
    std::fs::write(&main_rs, format!("{times_ten}\nfn broken( {{\n")).unwrap();
    let line = dev.next_line(later);
    assert!(
        line.starts_with("build failed: cargo build failed"),
        "{line}"
    );
    assert!(
        std::fs::read_to_string(&dev.stderr)
            .unwrap()
            .contains("error"),
        "cargo's messages go to stderr"
    );
    // The last good build still runs.
    assert_eq!(run(), json!({"words": 3, "characters": 160}));

    let fixed = times_ten.replace(
        "words: args.text.split_whitespace().count(),",
        "words: args.text.split_whitespace().count() * 100,",
    );
    assert_ne!(fixed, times_ten);
    std::fs::write(&main_rs, &fixed).unwrap();
    let line = dev.next_line(later);
    assert!(
        line.starts_with("published dev.greet@0.1.0-dev.3 "),
        "{line}"
    );
    assert_eq!(run(), json!({"words": 300, "characters": 160}));

    dev.stop();
}

/// A tool made with `locara_pdk::preinit!`: `locara publish` runs its pre-initialization once
/// and publishes the module with the memory it left (so a call starts with its table made),
/// while the module as built, shipped in an app with `locara sign`, still works by making the
/// table itself.
#[test]
fn a_tool_with_a_preinit_is_published_pre_initialized() {
    let (dir, home, work, target) = workshop();
    ok(
        &locara(&home, &["new", "tool", "math.primes"], &work, &target),
        "locara new tool",
    );
    let crate_dir = work.join("math-primes");
    std::fs::write(
        crate_dir.join("src/main.rs"),
        r#"//! The n-th prime, from a table made by the pre-initialization.

use std::sync::OnceLock;

use locara_pdk::{JsonSchema, ToolError, tool};
use serde::{Deserialize, Serialize};

static PRIMES: OnceLock<Vec<u32>> = OnceLock::new();

fn primes() -> &'static [u32] {
    PRIMES.get_or_init(|| {
        (2..50_000u32)
            .filter(|&n| (2..).take_while(|d| d * d <= n).all(|d| n % d != 0))
            .collect()
    })
}

locara_pdk::preinit!(|| {
    primes();
});

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Which prime, counted from 0.
    index: usize,
}

#[derive(Serialize, JsonSchema)]
struct Prime {
    /// The prime.
    prime: u32,
    /// Whether the table was there when the call began.
    made_before: bool,
}

/// Gives the index-th prime below 50000.
#[tool(id = "math.primes")]
fn nth_prime(args: Args) -> Result<Prime, ToolError> {
    let made_before = PRIMES.get().is_some();
    let prime = *primes()
        .get(args.index)
        .ok_or_else(|| ToolError::bad_args("index is past the last prime below 50000"))?;
    Ok(Prime { prime, made_before })
}
"#,
    )
    .unwrap();
    ok(
        &locara(&home, &["build", "math-primes"], &work, &target),
        "locara build",
    );
    let built = target.join("wasm32-wasip1/release/math-primes.wasm");
    keygen_acme(&home, &work, &target);
    trust_acme(&home, &work);
    let wasm = built.display().to_string();
    let published = ok(
        &locara(
            &home,
            &[
                "--json",
                "publish",
                "--key",
                "keys/acme.secret.json",
                "--manifest",
                "math-primes/manifest.json",
                "--wasm",
                &wasm,
            ],
            &work,
            &target,
        ),
        "locara publish",
    );
    let published: Value = serde_json::from_str(&published).unwrap();
    assert_eq!(published["preinitialized"], true, "{published}");
    let artifact = std::fs::read(published["artifact"].as_str().unwrap()).unwrap();
    assert_ne!(
        artifact,
        std::fs::read(&built).unwrap(),
        "the published module is the one built"
    );
    let run = |home: &Path, args: &[&str]| -> Value {
        serde_json::from_str(&ok(&locara(home, args, &work, &target), "locara run")).unwrap()
    };
    let args = ["run", "math.primes", "--arg", "index=5"];
    assert_eq!(run(&home, &args), json!({"prime": 13, "made_before": true}));
    // Every call starts from the snapshot: the second is the same.
    let args = ["run", "math.primes", "--arg", "index=5132"];
    assert_eq!(
        run(&home, &args),
        json!({"prime": 49_999, "made_before": true})
    );

    // The module as built, signed for an app, makes its table in the call.
    let (_, app_home) = ship_in_app(dir.path(), &home, &work, &target, "math-primes");
    let args = [
        "--app",
        "app/locara.json",
        "run",
        "math.primes",
        "--arg",
        "index=5",
    ];
    assert_eq!(
        run(&app_home, &args),
        json!({"prime": 13, "made_before": false})
    );
}
