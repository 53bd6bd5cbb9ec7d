//! Writing a tool from nothing with the CLI: `locara new tool`, the crate's own test,
//! `locara build` (schemas from the code), `keygen`, `publish` and `run`.

use std::path::Path;
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

#[test]
fn a_scaffolded_tool_is_tested_built_published_and_run() {
    let dir = tempfile::tempdir().unwrap();
    let (home, work) = (dir.path().join("home"), dir.path().join("work"));
    std::fs::create_dir_all(&work).unwrap();
    // The tool crate's dependencies are built once per target directory, beside this test's.
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap().join("authoring");

    ok(
        &locara(&home, &["new", "tool", "text.stats"], &work, &target),
        "locara new tool",
    );
    let crate_dir = work.join("text-stats");
    let again = locara(&home, &["new", "tool", "text.stats"], &work, &target);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    let bad = locara(&home, &["new", "tool", "Text Stats"], &work, &target);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid tool id"));

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

    ok(
        &locara(
            &home,
            &["keygen", "--publisher", "acme", "--out", "keys"],
            &work,
            &target,
        ),
        "locara keygen",
    );
    std::fs::create_dir_all(home.join("trust")).unwrap();
    std::fs::copy(
        work.join("keys/acme.pub.json"),
        home.join("trust/acme.pub.json"),
    )
    .unwrap();
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
    let sign = [
        "sign",
        "--key",
        "keys/acme.secret.json",
        "--manifest",
        "text-stats/manifest.json",
        "--wasm",
        &wasm,
    ];
    ok(&locara(&home, &sign, &work, &target), "locara sign");
    let app = work.join("app");
    std::fs::create_dir(&app).unwrap();
    std::fs::copy(&wasm, app.join("text-stats.wasm")).unwrap();
    for file in ["manifest.json", "manifest.sig.json"] {
        std::fs::copy(crate_dir.join(file), app.join(file)).unwrap();
    }
    let app_manifest = json!({
        "schema_version": 1,
        "name": "stats-app",
        "tools": [{"path": "text-stats.wasm", "manifest": "manifest.json", "signature": "manifest.sig.json"}],
    });
    std::fs::write(app.join("locara.json"), app_manifest.to_string()).unwrap();
    let app_home = dir.path().join("app-home");
    std::fs::create_dir_all(app_home.join("trust")).unwrap();
    std::fs::copy(
        work.join("keys/acme.pub.json"),
        app_home.join("trust/acme.pub.json"),
    )
    .unwrap();
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
