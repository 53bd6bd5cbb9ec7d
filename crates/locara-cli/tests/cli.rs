//! End-to-end tests of the `locara` binary against a `TestHome` (every built-in tool and the
//! `test.probe` guest, published and signed): real processes, real outputs, real exit codes.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use locara_test_artifacts::TOOLS;
use serde_json::{Value, json};

mod support;
use support::{Cli, s};

/// The built-in tools every home built by `cargo xtask build-tools` has.
/// The built-in tools a `TestHome` publishes (interpreter tools are published on demand).
const BUILTIN: &[&str] = &[
    "audio.detect-silence",
    "audio.transcribe",
    "bash.read-only",
    "code-exec.lua",
    "file.edit",
    "filesystem.list",
    "filesystem.read",
    "filesystem.search",
    "filesystem.write",
    "image.format-convert",
    "image.resize",
    "ocr",
    "pdf.extract-text",
    "pdf.split",
    "text.chunk",
    "text.classify",
    "text.summarize",
    "text.translate",
    "web.fetch",
];

/// The wasm and manifest template of a built-in tool.
fn artifact(id: &str) -> (&'static str, &'static str) {
    let (_, wasm, template) = TOOLS
        .iter()
        .find(|(t, _, _)| *t == id)
        .expect("built-in tool");
    (wasm, template)
}

/// Writes a copy of text.chunk's template with another id, and its wasm, into `dir`.
fn custom_tool(dir: &Path, id: &str) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let (wasm, template) = artifact("text.chunk");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(template).unwrap()).unwrap();
    manifest["id"] = json!(id);
    let manifest_path = dir.join("manifest.json");
    std::fs::write(
        &manifest_path,
        serde_json::to_string_pretty(&manifest).unwrap(),
    )
    .unwrap();
    let wasm_path = dir.join("tool.wasm");
    std::fs::copy(wasm, &wasm_path).unwrap();
    (manifest_path, wasm_path)
}

/// The chunks' texts, concatenated.
fn rejoin(output: &Value) -> String {
    output["chunks"]
        .as_array()
        .expect("chunks")
        .iter()
        .map(|c| c["text"].as_str().unwrap())
        .collect()
}

/// The tools the CLI offers in-process when there is no app manifest.
const MEMORY: &[&str] = &[
    "memory.delete",
    "memory.save",
    "memory.search",
    "memory.update",
];

#[test]
fn list_shows_every_builtin_tool() {
    let cli = Cli::new();
    let run = cli.expect(0, &["list"]);
    for &id in BUILTIN {
        let line = run
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{id}@0.1.0 ")))
            .unwrap_or_else(|| panic!("{id} missing from:\n{}", run.stdout));
        let tier = if matches!(id, "filesystem.write" | "file.edit") {
            "side_effecting"
        } else {
            "read_only"
        };
        assert!(line.contains(tier), "{line}");
    }
    let chunk = run
        .stdout
        .lines()
        .find(|l| l.starts_with("text.chunk@0.1.0"))
        .unwrap();
    // The description's first sentence, cut at a word to fit one line.
    let description = chunk.split_once("read_only").unwrap().1.trim();
    assert!(
        description.starts_with("Splits text into chunks of at most max_chars characters"),
        "{chunk}"
    );
    assert!(
        description.ends_with(" e.g.…") && description.chars().count() <= 100,
        "{chunk}"
    );
    // Every built-in tool, the probe and the memory tools, one line each.
    assert_eq!(
        run.stdout.lines().count(),
        BUILTIN.len() + 1 + MEMORY.len(),
        "{}",
        run.stdout
    );
    assert_eq!(TOOLS.len(), BUILTIN.len());

    let listed = cli.expect(0, &["--json", "list"]).json();
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    // Sorted by id, like the text listing.
    let mut expected = [BUILTIN, &["test.probe"], MEMORY].concat();
    expected.sort();
    assert_eq!(ids, expected);
}

#[test]
fn search_ranks_text_chunk_first() {
    let cli = Cli::new();
    // "split text" alone is ambiguous now that pdf.split exists: ask for chunks of text.
    let run = cli.expect(0, &["search", "chunk", "text"]);
    let first = run.stdout.lines().next().expect("a result");
    let (score, rest) = first.trim_start().split_once("  ").unwrap();
    assert!(score.parse::<f64>().unwrap() > 0.0, "{first}");
    assert!(rest.starts_with("text.chunk@0.1.0"), "{first}");

    let hits = cli
        .expect(0, &["--json", "search", "chunk text", "--limit", "2"])
        .json();
    let hits = hits.as_array().unwrap();
    assert!(hits.len() <= 2);
    assert_eq!(hits[0]["tool"], "text.chunk@0.1.0");
    assert!(hits[0]["score"].as_f64().unwrap() > 0.0);
}

#[test]
fn describe_shows_tier_license_limits_and_schemas() {
    let cli = Cli::new();
    let run = cli.expect(0, &["describe", "text.chunk"]);
    assert!(
        run.stdout.starts_with("text.chunk@0.1.0 (Text chunker)\n"),
        "{}",
        run.stdout
    );
    for expected in [
        "safety tier:   read_only",
        "license:       Apache-2.0",
        "limits:        memory 128 MiB, wall time 10000 ms, fuel 5000000000, output 32 MiB, 8 file descriptors",
        "  workspace:     none",
        "input schema:\n{",
        "\"max_chars\": {",
        "output schema:\n{",
    ] {
        assert!(
            run.stdout.contains(expected),
            "{expected:?} missing from:\n{}",
            run.stdout
        );
    }

    let described = cli
        .expect(0, &["--json", "describe", "text.chunk@0.1.0"])
        .json();
    assert_eq!(described["input_schema"]["required"], json!(["text"]));
    assert_eq!(
        described["input_schema"]["properties"]["max_chars"]["type"],
        "integer"
    );

    let missing = cli.expect(2, &["describe", "no.such"]);
    assert!(
        missing
            .stderr
            .starts_with("error[not_found]: no tool `no.such`; available: "),
        "{}",
        missing.stderr
    );
}

#[test]
fn run_text_chunk_returns_chunks_that_rejoin() {
    let cli = Cli::new();
    let text = "Locara runs tools. Each one is signed. Chunks rejoin exactly.";
    let run = cli.expect(
        0,
        &[
            "run",
            "text.chunk",
            "--arg",
            &format!("text={text}"),
            "--arg",
            "max_chars=10",
        ],
    );
    let output: Value = run.json();
    let chunks = output["chunks"].as_array().unwrap();
    assert!(chunks.len() >= 6, "{output}");
    assert!(
        chunks
            .iter()
            .all(|c| c["text"].as_str().unwrap().chars().count() <= 10),
        "{output}"
    );
    assert_eq!(rejoin(&output), text);

    // `--json` prints the whole response.
    let response = cli
        .expect(0, &["--json", "run", "text.chunk", r#"{"text": "a b"}"#])
        .json();
    assert_eq!(response["ok"], true);
    assert_eq!(response["tool"], "text.chunk@0.1.0");
    assert_eq!(response["stats"]["engine"], "wasmtime");
    assert_eq!(rejoin(&response["output"]), "a b");
    assert_eq!(response["stats"]["limits"].get("not_enforced"), None);

    // `--no-fuel-metering`: the same output, bounded by time; the report says fuel was not
    // enforced.
    let unmetered = cli
        .expect(
            0,
            &[
                "--json",
                "--no-fuel-metering",
                "run",
                "text.chunk",
                r#"{"text": "a b"}"#,
            ],
        )
        .json();
    assert_eq!(unmetered["output"], response["output"]);
    assert_eq!(unmetered["stats"]["fuel_consumed"], 0);
    assert_eq!(
        unmetered["stats"]["limits"]["not_enforced"],
        json!(["fuel"])
    );
}

#[test]
fn arguments_come_from_json_files_stdin_and_at_paths() {
    let cli = Cli::new();
    std::fs::write(
        cli.path("args.json"),
        r#"{"text": "from a file", "max_chars": 4}"#,
    )
    .unwrap();
    std::fs::write(cli.path("text.txt"), "12345").unwrap();

    // `--input FILE`, with an `--arg` on top.
    let run = cli.expect(
        0,
        &[
            "run",
            "text.chunk",
            "--input",
            "args.json",
            "--arg",
            "max_chars=100",
        ],
    );
    assert_eq!(run.json()["chunks"].as_array().unwrap().len(), 1);
    assert_eq!(rejoin(&run.json()), "from a file");

    // `--input -` reads stdin.
    let run = cli.run_with_stdin(
        &["run", "text.chunk", "--input", "-"],
        r#"{"text": "piped in"}"#,
    );
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(rejoin(&run.json()), "piped in");

    // `@path` is the file's text, even when it would parse as JSON.
    let run = cli.expect(0, &["run", "text.chunk", "--arg", "text=@text.txt"]);
    assert_eq!(rejoin(&run.json()), "12345");

    // `@-` is stdin's text.
    let run = cli.run_with_stdin(
        &["run", "text.chunk", "--arg", "text=@-"],
        "line one\nline two\n",
    );
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(rejoin(&run.json()), "line one\nline two\n");

    // A positional value that is not an object is a usage error.
    let run = cli.expect(2, &["run", "text.chunk", "[1, 2]"]);
    assert_eq!(
        run.stderr,
        "error: ARGS_JSON must be a JSON object of arguments, not an array\n"
    );
}

#[test]
fn run_filesystem_read_reads_a_real_file() {
    let cli = Cli::new();
    let dir = cli.path("work");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("x.txt"), "hello from the host\n").unwrap();
    let run = cli.expect(
        0,
        &[
            "run",
            "filesystem.read",
            "--dir",
            s(&dir),
            "--arg",
            "path=x.txt",
        ],
    );
    let output = run.json();
    assert_eq!(output["content"], "hello from the host\n");
    assert_eq!(output["path"], "x.txt");

    // Without a directory the tool cannot run, and the hint says how to give one.
    let run = cli.expect(2, &["run", "filesystem.read", "--arg", "path=x.txt"]);
    assert!(
        run.stderr.starts_with(
            "error[capability_denied]: filesystem.read@0.1.0 needs a workspace directory"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("hint: choose the directory the tool sees at /workspace with `--dir DIR`"),
        "{}",
        run.stderr
    );
}

#[test]
fn run_filesystem_write_needs_allow_write() {
    let cli = Cli::new();
    let dir = cli.path("work");
    std::fs::create_dir_all(&dir).unwrap();
    let args = [
        "run",
        "filesystem.write",
        "--dir",
        s(&dir),
        "--arg",
        "path=out.txt",
        "--arg",
        "content=written",
    ];

    let refused = cli.expect(2, &args);
    assert!(
        refused
            .stderr
            .starts_with("error[capability_denied]: filesystem.write@0.1.0 needs write access to "),
        "{}",
        refused.stderr
    );
    assert!(
        refused
            .stderr
            .contains("hint: the tool writes in its workspace: add `--allow-write`"),
        "{}",
        refused.stderr
    );
    assert!(refused.stdout.is_empty());
    assert!(!dir.join("out.txt").exists());

    let run = cli.expect(0, &[&args[..], &["--allow-write"]].concat());
    assert_eq!(
        run.json(),
        json!({"path": "out.txt", "bytes_written": 7, "created": true})
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("out.txt")).unwrap(),
        "written"
    );
}

#[test]
fn invalid_arguments_exit_2_with_the_json_pointer() {
    let cli = Cli::new();
    let run = cli.expect(
        2,
        &[
            "run",
            "text.chunk",
            "--arg",
            "text=hi",
            "--arg",
            "max_chars=0",
        ],
    );
    assert!(
        run.stderr
            .starts_with("error[invalid_input]: invalid arguments for text.chunk@0.1.0"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("\n  at /max_chars: "), "{}", run.stderr);
    assert!(
        run.stderr.contains("hint: fix the argument at /max_chars"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty());

    // A VALUE read as JSON where a string was wanted: the hint says how to quote it.
    let run = cli.expect(2, &["run", "text.chunk", "--arg", "text=1"]);
    assert!(
        run.stderr.contains(r#"hint: `--arg text=1` was read as JSON; to pass it as a string, quote it: --arg 'text="1"'"#),
        "{}",
        run.stderr
    );
    let run = cli.expect(0, &["run", "text.chunk", "--arg", r#"text="1""#]);
    assert_eq!(rejoin(&run.json()), "1");

    let run = cli.expect(2, &["--json", "run", "text.chunk", r#"{"text": 5}"#]);
    let error = &run.json()["error"];
    assert_eq!(error["code"], "invalid_input");
    assert_eq!(error["violations"][0]["pointer"], "/text");

    let run = cli.expect(2, &["run", "no.such.tool"]);
    assert!(
        run.stderr
            .starts_with("error[not_found]: tool `no.such.tool` is not in the registry"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_spinning_tool_runs_out_of_fuel_on_both_engines() {
    let cli = Cli::new();
    let dir = cli.path("work");
    std::fs::create_dir_all(&dir).unwrap();
    for engine in ["wasmtime", "wasmi"] {
        let run = cli.expect(
            1,
            &[
                "--engine",
                engine,
                "run",
                "test.probe",
                r#"{"op": "spin"}"#,
                "--dir",
                s(&dir),
            ],
        );
        assert!(
            run.stderr
                .starts_with("test.probe@0.1.0 failed\nerror[limit_exceeded]: "),
            "{engine}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("\n  limit: fuel\n"),
            "{engine}: {}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "{engine}: {}", run.stdout);

        let response = cli
            .expect(
                1,
                &[
                    "--engine",
                    engine,
                    "--json",
                    "run",
                    "test.probe",
                    r#"{"op": "spin"}"#,
                    "--dir",
                    s(&dir),
                ],
            )
            .json();
        assert_eq!(response["ok"], false);
        assert_eq!(response["error"]["limit"], "fuel");
        assert_eq!(response["stats"]["engine"], engine);
    }
}

#[test]
fn output_that_is_not_json_is_invalid_output() {
    let cli = Cli::new();
    let dir = cli.path("work");
    std::fs::create_dir_all(&dir).unwrap();
    let run = cli.expect(
        1,
        &[
            "run",
            "test.probe",
            r#"{"op": "raw", "text": "not json"}"#,
            "--dir",
            s(&dir),
        ],
    );
    assert!(
        run.stderr
            .starts_with("test.probe@0.1.0 failed\nerror[invalid_output]: "),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty());
}

#[test]
fn verify_catches_a_tampered_artifact() {
    let cli = Cli::new();
    let run = cli.expect(0, &["verify"]);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), BUILTIN.len() + 1, "{}", run.stdout);
    assert!(
        lines.iter().all(|l| l.starts_with("ok    ")),
        "{}",
        run.stdout
    );
    let chunk = lines
        .iter()
        .find(|l| l.contains("text.chunk@0.1.0"))
        .unwrap();
    assert!(
        chunk.contains(&format!("key {}", cli.home.key.key_id())),
        "{chunk}"
    );

    // Run once so the home's cache holds the good bytes, then flip one byte in the registry.
    cli.expect(0, &["run", "text.chunk", "--arg", "text=warm the cache"]);
    let wasm = cli
        .home
        .registry_dir()
        .join("tools/text.chunk/0.1.0/text.chunk-0.1.0.wasm");
    let mut bytes = std::fs::read(&wasm).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&wasm, bytes).unwrap();

    // `verify` hashes the registry's files, not the cache, so it fails even with the cache intact.
    let run = cli.expect(1, &["verify", "text.chunk"]);
    assert!(
        run.stdout.starts_with(
            "FAIL  text.chunk@0.1.0  artifact hash mismatch for text.chunk@0.1.0: found "
        ),
        "{}",
        run.stdout
    );
    assert_eq!(run.stdout.lines().count(), 1);
    assert_eq!(run.stderr, "1 of 1 failed verification\n");

    std::fs::remove_dir_all(cli.home.path().join("cache")).unwrap();
    let run = cli.expect(1, &["verify"]);
    let failures: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("FAIL"))
        .collect();
    assert_eq!(failures.len(), 1, "{}", run.stdout);
    assert!(
        failures[0].contains("text.chunk@0.1.0") && failures[0].contains("hash mismatch"),
        "{}",
        failures[0]
    );
    assert_eq!(
        run.stdout
            .lines()
            .filter(|l| l.starts_with("ok    "))
            .count(),
        BUILTIN.len()
    );

    let report = cli.expect(1, &["--json", "verify"]).json();
    let failed: Vec<&Value> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["ok"] == false)
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["tool"], "text.chunk@0.1.0");
    assert_eq!(failed[0]["reason"], "hash mismatch");

    // Running it is refused as well, as could-not-run.
    let run = cli.expect(2, &["run", "text.chunk", "--arg", "text=x"]);
    assert!(run.stderr.contains("hash mismatch"), "{}", run.stderr);

    // Healthy tools still verify when named.
    cli.expect(0, &["verify", "filesystem.read", "bash.read-only@0.1.0"]);
    let run = cli.expect(1, &["verify", "no.such"]);
    assert!(
        run.stdout
            .starts_with("FAIL  no.such  not found: tool `no.such` is not in the registry"),
        "{}",
        run.stdout
    );
}

#[test]
fn keygen_sign_and_verify_round_trip() {
    let cli = Cli::new();
    let keys = cli.path("keys");
    let run = cli.expect(0, &["keygen", "--publisher", "acme", "--out", s(&keys)]);
    let secret = keys.join("acme.secret.json");
    let public = keys.join("acme.pub.json");
    let key_id = run
        .stdout
        .lines()
        .next()
        .unwrap()
        .strip_prefix("key id:      ")
        .unwrap()
        .to_owned();
    assert!(key_id.starts_with("ed25519:"), "{}", run.stdout);
    assert!(
        run.stdout.contains(&format!(
            "cp {} {}/",
            public.display(),
            cli.home.path().join("trust").display()
        )),
        "{}",
        run.stdout
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(
            std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    // Keys are never replaced.
    let again = cli.expect(2, &["keygen", "--publisher", "acme", "--out", s(&keys)]);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);

    // Trust the key, then sign a template, pinning the wasm.
    std::fs::copy(&public, cli.home.path().join("trust/acme.pub.json")).unwrap();
    let (manifest, wasm) = custom_tool(&cli.path("tool"), "acme.chunk");
    let run = cli.expect(
        0,
        &[
            "sign",
            "--key",
            s(&secret),
            "--manifest",
            s(&manifest),
            "--wasm",
            s(&wasm),
        ],
    );
    assert!(run.stdout.contains(&key_id), "{}", run.stdout);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let signed: Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    assert_eq!(
        signed["artifact"]["size_bytes"],
        std::fs::metadata(&wasm).unwrap().len()
    );
    let signature = cli.path("tool/manifest.sig.json");
    assert!(signature.is_file());

    let run = cli.expect(
        0,
        &[
            "verify",
            "--manifest",
            s(&manifest),
            "--signature",
            s(&signature),
            "--wasm",
            s(&wasm),
        ],
    );
    assert!(
        run.stdout.starts_with(&format!(
            "ok    acme.chunk@0.1.0  sha256 {}",
            signed["artifact"]["sha256"].as_str().unwrap()
        )),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(&format!("key {key_id}")));

    // Re-signing the now complete manifest without --wasm keeps it valid.
    cli.expect(
        0,
        &["sign", "--key", s(&secret), "--manifest", s(&manifest)],
    );
    cli.expect(
        0,
        &["verify", "--manifest", s(&manifest), "--wasm", s(&wasm)],
    );

    // A manifest edited after signing fails.
    let edited = std::fs::read_to_string(&manifest)
        .unwrap()
        .replace("Text chunker", "Text chunker!");
    std::fs::write(&manifest, edited).unwrap();
    let run = cli.expect(
        1,
        &["verify", "--manifest", s(&manifest), "--wasm", s(&wasm)],
    );
    assert!(
        run.stdout.starts_with("FAIL  ") && run.stdout.contains("bad signature"),
        "{}",
        run.stdout
    );

    // A key the home does not trust is refused.
    cli.expect(0, &["keygen", "--publisher", "mallory", "--out", s(&keys)]);
    let (manifest, wasm) = custom_tool(&cli.path("evil"), "evil.chunk");
    let run = cli.expect(
        0,
        &[
            "sign",
            "--key",
            s(&keys.join("mallory.secret.json")),
            "--manifest",
            s(&manifest),
            "--wasm",
            s(&wasm),
        ],
    );
    assert!(
        run.stderr.starts_with("note: ed25519:") && run.stderr.contains("is not trusted"),
        "{}",
        run.stderr
    );
    let run = cli.expect(
        1,
        &["verify", "--manifest", s(&manifest), "--wasm", s(&wasm)],
    );
    assert!(
        run.stdout.starts_with("FAIL  ") && run.stdout.contains("unknown key: "),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("not in the trust store"),
        "{}",
        run.stdout
    );
}

#[test]
fn publish_adds_a_tool_the_home_runs_once_its_key_is_trusted() {
    let cli = Cli::new();
    let keys = cli.path("keys");
    cli.expect(0, &["keygen", "--publisher", "acme", "--out", s(&keys)]);
    let (template, wasm) = custom_tool(&cli.path("tool"), "acme.split");
    let secret = keys.join("acme.secret.json");

    let run = cli.expect(
        0,
        &[
            "publish",
            "--key",
            s(&secret),
            "--manifest",
            s(&template),
            "--wasm",
            s(&wasm),
        ],
    );
    assert!(
        run.stdout.starts_with("published acme.split@0.1.0 to "),
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("is not trusted"), "{}", run.stderr);
    assert!(
        cli.home
            .registry_dir()
            .join("tools/acme.split/0.1.0/acme.split-0.1.0.wasm")
            .is_file()
    );

    // Untrusted: hidden from the catalog, and `verify` says why.
    let run = cli.expect(0, &["list"]);
    assert!(!run.stdout.contains("acme.split"), "{}", run.stdout);
    assert!(
        run.stderr.contains("1 registry entry failed verification"),
        "{}",
        run.stderr
    );
    let run = cli.expect(1, &["verify", "acme.split"]);
    assert!(
        run.stdout
            .starts_with("FAIL  acme.split@0.1.0  unknown key: "),
        "{}",
        run.stdout
    );

    std::fs::copy(
        keys.join("acme.pub.json"),
        cli.home.path().join("trust/acme.pub.json"),
    )
    .unwrap();
    let run = cli.expect(0, &["list"]);
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("acme.split@0.1.0 ")),
        "{}",
        run.stdout
    );
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let run = cli.expect(
        0,
        &[
            "run",
            "acme.split",
            "--arg",
            "text=published",
            "--arg",
            "max_chars=4",
        ],
    );
    assert_eq!(rejoin(&run.json()), "published");
}

#[test]
fn an_app_manifest_decides_the_catalog_and_the_grants() {
    let cli = Cli::new();
    let keys = cli.path("keys");
    cli.expect(0, &["keygen", "--publisher", "app", "--out", s(&keys)]);
    std::fs::copy(
        keys.join("app.pub.json"),
        cli.home.path().join("trust/app.pub.json"),
    )
    .unwrap();
    let (manifest, wasm) = custom_tool(&cli.path("tools"), "app.chunk");
    cli.expect(
        0,
        &[
            "sign",
            "--key",
            s(&keys.join("app.secret.json")),
            "--manifest",
            s(&manifest),
            "--wasm",
            s(&wasm),
        ],
    );
    let app = json!({
        "schema_version": 1,
        "name": "demo",
        "tools": [
            "text.chunk@0.1.0",
            "filesystem.read@0.1.0",
            { "path": "tools/tool.wasm", "manifest": "tools/manifest.json", "signature": "tools/manifest.sig.json" }
        ]
    });
    std::fs::write(cli.path("locara.json"), app.to_string()).unwrap();

    // `./locara.json` is used by default: only its tools are listed and callable.
    let run = cli.expect(0, &["list"]);
    let tools: Vec<&str> = run
        .stdout
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "app.chunk@0.1.0",
            "filesystem.read@0.1.0",
            "text.chunk@0.1.0"
        ]
    );
    let run = cli.expect(0, &["run", "app.chunk", "--arg", "text=custom tool"]);
    assert_eq!(rejoin(&run.json()), "custom tool");
    let run = cli.expect(2, &["run", "filesystem.list", "--arg", "path=."]);
    assert!(
        run.stderr
            .starts_with("error[not_found]: tool `filesystem.list` is not in the registry"),
        "{}",
        run.stderr
    );

    // The app granted no directory, so `--dir` alone does not grant one.
    let dir = cli.path("work");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("x.txt"), "x").unwrap();
    let run = cli.expect(
        2,
        &[
            "run",
            "filesystem.read",
            "--dir",
            s(&dir),
            "--arg",
            "path=x.txt",
        ],
    );
    assert!(
        run.stderr
            .contains("is not inside any directory the app granted"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("hint: grant the capability in the app manifest (locara.json)"),
        "{}",
        run.stderr
    );

    // `--app` names another manifest.
    std::fs::write(
        cli.path("other.json"),
        json!({"schema_version": 1, "name": "other", "tools": ["text.chunk@0.1.0"]}).to_string(),
    )
    .unwrap();
    let run = cli.expect(0, &["--app", s(&cli.path("other.json")), "list"]);
    assert_eq!(run.stdout.lines().count(), 1, "{}", run.stdout);

    std::fs::write(cli.path("locara.json"), "{}").unwrap();
    let run = cli.expect(2, &["list"]);
    assert!(
        run.stderr.starts_with(&format!(
            "error: invalid app manifest {}",
            cli.path("locara.json").display()
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn chain_binds_a_ref_to_an_earlier_output() {
    let cli = Cli::new();
    let chain = json!({
        "steps": [
            { "tool": "text.chunk", "arguments": { "text": "First part here. Second part.", "max_chars": 17 } },
            { "tool": "text.chunk", "arguments": { "text": { "$ref": "steps.0.output.chunks.0.text" }, "max_chars": 6 } }
        ]
    });
    let run = cli.run_with_stdin(&["chain", "-"], &chain.to_string());
    assert_eq!(run.code, 0, "{run:#?}");
    let response = run.json();
    assert_eq!(response["ok"], true);
    let steps = response["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    let first_chunk = steps[0]["output"]["chunks"][0]["text"].as_str().unwrap();
    assert_eq!(first_chunk, "First part here. ");
    assert_eq!(rejoin(&steps[1]["output"]), first_chunk);
    assert!(steps[1]["output"]["chunks"].as_array().unwrap().len() > 1);

    // A `$ref` to a step that has not run stops the chain: exit 1, with the reason.
    let bad = json!({ "steps": [
        { "tool": "text.chunk", "arguments": { "text": "x" } },
        { "tool": "text.chunk", "arguments": { "text": { "$ref": "steps.5.output" } } }
    ]});
    std::fs::write(cli.path("chain.json"), bad.to_string()).unwrap();
    let run = cli.expect(1, &["chain", "chain.json"]);
    let response = run.json();
    assert_eq!(response["ok"], false);
    assert_eq!(response["failed_step"], 1);
    assert_eq!(response["error"]["code"], "invalid_binding");
    assert!(
        run.stderr
            .starts_with("chain stopped: step 1 could not run\nerror[invalid_binding]: "),
        "{}",
        run.stderr
    );
}

#[test]
fn a_home_without_a_registry_says_how_to_install_tools() {
    let cli = Cli::new();
    let empty = tempfile::tempdir().unwrap();
    let run = cli
        .command(&["list"])
        .env("LOCARA_HOME", empty.path())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let stderr = String::from_utf8(run.stderr).unwrap();
    assert_eq!(
        stderr,
        format!(
            "error: no tools installed in {}: run `cargo xtask build-tools` (in the Locara repo) or `locara publish`\n",
            empty.path().join("registry").display()
        )
    );

    // `--home` wins over LOCARA_HOME.
    let run = cli
        .command(&["--home", s(cli.home.path()), "describe", "text.chunk"])
        .env("LOCARA_HOME", empty.path())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0));
}

#[test]
fn help_documents_the_exit_codes() {
    let cli = Cli::new();
    for args in [&["--help"][..], &["run", "--help"]] {
        let run = cli.expect(0, args);
        assert!(
            run.stdout
                .contains("Exit codes:\n  0  success\n  1  the tool ran and failed"),
            "{}",
            run.stdout
        );
        assert!(
            run.stdout.contains("  2  the call could not run"),
            "{}",
            run.stdout
        );
    }
    let run = cli.expect(2, &["run"]);
    assert!(run.stderr.contains("<TOOL>"), "{}", run.stderr);
    // Each subcommand's long description shows in its --help.
    for (command, says) in [
        ("run", "KEY=@PATH passes the file itself"),
        ("chain", "{\"$ref\": \"steps.N.output.field\"}"),
        ("batch", "Consecutive read-only calls"),
        (
            "verify",
            "Registry tools are checked from the registry's own files",
        ),
        (
            "verify-receipt",
            "Check a receipt written by `locara run --receipt FILE`",
        ),
    ] {
        let run = cli.expect(0, &[command, "--help"]);
        assert!(run.stdout.contains(says), "{command}: {}", run.stdout);
    }
}

#[test]
fn files_go_in_with_at_paths_and_come_out_with_out() {
    let cli = Cli::new();
    // A real PDF from Debian's libtasn1-doc (`.ci/test-deps`), outside any --dir: its bytes go.
    let manual = Path::new("/usr/share/doc/libtasn1-doc/libtasn1.pdf");
    assert!(
        manual.is_file(),
        "install Debian's libtasn1-doc (`bash .ci/test-deps`)"
    );
    let out = cli.path("parts");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("part-001.pdf"), "precious").unwrap();
    let source = format!("source=@{}", manual.display());
    let run = cli.expect(
        0,
        &[
            "run",
            "pdf.split",
            "--arg",
            &source,
            "--arg",
            r#"ranges=["1", "2-3"]"#,
            "--out",
            s(&out),
        ],
    );
    assert_eq!(run.json()["page_count"], 36, "{run:#?}");
    assert!(run.stderr.contains("part-001-1.pdf"), "{}", run.stderr);
    assert_eq!(
        std::fs::read(out.join("part-001.pdf")).unwrap(),
        b"precious"
    );
    assert!(
        std::fs::read(out.join("part-001-1.pdf"))
            .unwrap()
            .starts_with(b"%PDF-")
    );
    assert!(
        std::fs::read(out.join("part-002.pdf"))
            .unwrap()
            .starts_with(b"%PDF-")
    );

    // Inside --dir, the file goes by path; with --json and no --out, files come back inline.
    let docs = cli.path("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::copy(manual, docs.join("manual.pdf")).unwrap();
    let inside = format!("source=@{}", docs.join("manual.pdf").display());
    let run = cli.expect(
        0,
        &[
            "--json",
            "run",
            "pdf.split",
            "--dir",
            s(&docs),
            "--arg",
            &inside,
            "--arg",
            "every=20",
        ],
    );
    let response = run.json();
    let files = response["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "{response}");
    assert!(
        files[0]["base64"].as_str().unwrap().starts_with("JVBERi0"),
        "%PDF- in base64"
    );
}

#[test]
fn privileged_calls_need_yes_a_policy_or_a_terminal() {
    let cli = Cli::new();
    cli.home.publish_probe_as("test.admin", "privileged");
    cli.home.publish_probe_as("test.reader", "read_only");
    let batch = json!({"calls": [
        {"tool": "test.admin", "arguments": {"op": "echo", "text": "a"}},
        {"tool": "test.reader", "arguments": {"op": "echo", "text": "b"}},
    ]});
    std::fs::write(cli.path("batch.json"), batch.to_string()).unwrap();

    // No terminal (stdin is a pipe) and no --yes: denied, as data; the other call still ran.
    let run = cli.expect(1, &["batch", "batch.json"]);
    let response = run.json();
    assert_eq!(response["ok"], false);
    let denied = &response["results"][0];
    assert_eq!(denied["safety_tier"], "privileged");
    assert_eq!(denied["error"]["code"], "approval_denied");
    let message = denied["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("not an interactive session") && message.contains("--yes"),
        "{message}"
    );
    assert_eq!(response["results"][1]["response"]["ok"], true);
    assert!(
        run.stderr.contains("call 0 (test.admin) could not run"),
        "{}",
        run.stderr
    );

    // --yes approves, and says so in the response.
    let response = cli.expect(0, &["--yes", "batch", "batch.json"]).json();
    let approval = &response["results"][0]["response"]["approval"];
    assert_eq!(approval["approved"], true);
    assert_eq!(approval["by"], "--yes");

    // A policy file decides without asking: deny rules first, then allow rules.
    std::fs::write(
        cli.path("policy.json"),
        json!({"allow": ["test.*"], "deny": ["test.admin@0.1.0"]}).to_string(),
    )
    .unwrap();
    let run = cli.expect(
        2,
        &[
            "--policy",
            "policy.json",
            "run",
            "test.admin",
            "--arg",
            "op=echo",
        ],
    );
    assert!(
        run.stderr.contains("error[approval_denied]"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("denied by rule `test.admin@0.1.0`"),
        "{}",
        run.stderr
    );
    std::fs::write(
        cli.path("policy.json"),
        json!({"allow": ["test.*"]}).to_string(),
    )
    .unwrap();
    let run = cli.expect(
        0,
        &[
            "--json",
            "--policy",
            "policy.json",
            "run",
            "test.admin",
            "--arg",
            "op=echo",
        ],
    );
    assert_eq!(run.json()["approval"]["reason"], "allowed by rule `test.*`");
}

#[test]
fn a_run_receipt_verifies_and_a_changed_one_does_not() {
    let cli = Cli::new();
    let arguments = json!({"text": "One. Two. Three.", "max_chars": 6});
    std::fs::write(cli.path("args.json"), arguments.to_string()).unwrap();
    let run = cli.expect(
        0,
        &[
            "run",
            "text.chunk",
            "--input",
            "args.json",
            "--receipt",
            "receipt.json",
        ],
    );
    assert!(
        run.stderr.contains("made the receipt key"),
        "{}",
        run.stderr
    );
    std::fs::write(cli.path("output.json"), &run.stdout).unwrap();

    let run = cli.expect(
        0,
        &[
            "verify-receipt",
            "receipt.json",
            "--arguments",
            "args.json",
            "--output",
            "output.json",
        ],
    );
    assert!(
        run.stdout
            .starts_with("text.chunk@0.1.0 succeeded on wasmtime"),
        "{}",
        run.stdout
    );
    for check in ["signature", "tool", "arguments", "output"] {
        assert!(
            run.stdout
                .lines()
                .any(|l| l.starts_with("ok") && l.contains(check)),
            "{check}: {}",
            run.stdout
        );
    }
    // Other arguments than the ones the call had: that check fails, exit 1.
    std::fs::write(cli.path("other.json"), json!({"text": "x"}).to_string()).unwrap();
    let run = cli.expect(
        1,
        &[
            "verify-receipt",
            "receipt.json",
            "--arguments",
            "other.json",
        ],
    );
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("FAIL") && l.contains("arguments")),
        "{}",
        run.stdout
    );

    // A receipt edited after signing fails its signature check.
    let mut receipt: Value =
        serde_json::from_str(&std::fs::read_to_string(cli.path("receipt.json")).unwrap()).unwrap();
    receipt["receipt"]["ok"] = json!(false);
    std::fs::write(cli.path("edited.json"), receipt.to_string()).unwrap();
    let run = cli.expect(1, &["--json", "verify-receipt", "edited.json"]);
    let report = run.json();
    assert_eq!(report["ok"], false);
    assert_eq!(report["checks"][0]["check"], "signature");
    assert_eq!(report["checks"][0]["ok"], false);
    // Another host's key does not verify it either.
    let other = locara_registry::generate_keypair("other").unwrap();
    other
        .public_key()
        .write_file(&cli.path("other.pub.json"))
        .unwrap();
    let run = cli.expect(
        1,
        &["verify-receipt", "receipt.json", "--key", "other.pub.json"],
    );
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("FAIL") && l.contains("signature")),
        "{}",
        run.stdout
    );
}

#[test]
fn tools_export_gives_definitions_in_both_formats() {
    let cli = Cli::new();
    let openai = cli
        .expect(0, &["tools", "export", "--format", "openai"])
        .json();
    let tools = openai.as_array().unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for id in BUILTIN {
        let name = id.replace('.', "_");
        assert!(names.contains(&name.as_str()), "{name} not in {names:?}");
    }
    assert!(names.iter().all(|n| !n.contains('.')), "{names:?}");
    let chunk = tools
        .iter()
        .find(|t| t["function"]["name"] == "text_chunk")
        .unwrap();
    assert_eq!(chunk["type"], "function");
    assert_eq!(chunk["function"]["parameters"]["required"], json!(["text"]));

    // `--json` changes nothing: the export is JSON anyway.
    let anthropic = cli
        .expect(0, &["--json", "tools", "export", "--format", "anthropic"])
        .json();
    let chunk = anthropic
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "text_chunk")
        .unwrap();
    assert_eq!(chunk["input_schema"]["required"], json!(["text"]));
    assert!(chunk.get("type").is_none(), "{chunk}");

    let run = cli.expect(2, &["tools", "export", "--format", "gemini"]);
    assert!(run.stderr.contains("openai, anthropic"), "{}", run.stderr);
}

#[test]
fn run_tool_call_answers_in_the_message_format() {
    let cli = Cli::new();
    let openai = json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "text_chunk", "arguments": "{\"text\": \"One. Two.\", \"max_chars\": 5}"}},
            {"id": "call_2", "type": "function", "function": {"name": "text_chunk", "arguments": "{\"text\": \"a b\"}"}},
        ],
    });
    let run = cli.run_with_stdin(&["run", "--tool-call", "-"], &openai.to_string());
    assert_eq!(run.code, 0, "{run:#?}");
    let reply = run.json();
    let messages = reply.as_array().unwrap();
    assert_eq!(messages.len(), 2);
    for (message, (id, text)) in messages
        .iter()
        .zip([("call_1", "One. Two."), ("call_2", "a b")])
    {
        assert_eq!(message["role"], "tool");
        assert_eq!(message["tool_call_id"], id);
        let output: Value = serde_json::from_str(message["content"].as_str().unwrap()).unwrap();
        assert_eq!(rejoin(&output), text);
    }

    // Anthropic, from a file: one user message of tool_result blocks; a call whose name is
    // unknown is answered with the error, and the exit code is 1.
    let anthropic = json!({
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Chunking."},
            {"type": "tool_use", "id": "toolu_1", "name": "text_chunk", "input": {"text": "Alpha beta", "max_chars": 5}},
            {"type": "tool_use", "id": "toolu_2", "name": "text_chunker", "input": {"text": "x"}},
        ],
    });
    std::fs::write(cli.path("message.json"), anthropic.to_string()).unwrap();
    let run = cli.expect(1, &["run", "--tool-call", "message.json"]);
    let reply = run.json();
    assert_eq!(reply["role"], "user");
    let blocks = reply["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0]["type"], "tool_result");
    assert_eq!(blocks[0]["tool_use_id"], "toolu_1");
    assert_eq!(blocks[0]["is_error"], false);
    let output: Value = serde_json::from_str(blocks[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(rejoin(&output), "Alpha beta");
    assert_eq!(blocks[1]["tool_use_id"], "toolu_2");
    assert_eq!(blocks[1]["is_error"], true);
    let error: Value = serde_json::from_str(blocks[1]["content"].as_str().unwrap()).unwrap();
    assert_eq!(error["error"]["code"], "not_found");
    assert!(
        error["error"]["hint"]
            .as_str()
            .unwrap()
            .starts_with("did you mean `text_chunk`"),
        "{error}"
    );
    assert!(
        run.stderr.contains("call toolu_2 could not run"),
        "{}",
        run.stderr
    );

    // A tool that ran and failed is answered with its error report too.
    let failing = json!({"type": "function_call", "call_id": "call_9", "name": "text_chunk", "arguments": "{\"text\": \"abc\", \"max_chars\": 2, \"overlap\": 5}"});
    let run = cli.run_with_stdin(&["run", "--tool-call", "-"], &failing.to_string());
    assert_eq!(run.code, 1, "{run:#?}");
    let reply = run.json();
    assert_eq!(reply[0]["type"], "function_call_output");
    assert_eq!(reply[0]["call_id"], "call_9");
    let error: Value = serde_json::from_str(reply[0]["output"].as_str().unwrap()).unwrap();
    assert_eq!(error["ok"], false, "{error}");
    assert_eq!(error["tool"], "text.chunk@0.1.0", "{error}");
    assert_eq!(error["error"]["code"], "tool_error", "{error}");

    // A message without tool calls cannot run at all; --tool-call excludes TOOL.
    let run = cli.run_with_stdin(
        &["run", "--tool-call", "-"],
        r#"{"role": "assistant", "content": "Hello"}"#,
    );
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.stderr
            .starts_with("error[invalid_tool_call]: the message holds no tool call"),
        "{}",
        run.stderr
    );
    let run = cli.expect(2, &["run", "text.chunk", "--tool-call", "message.json"]);
    assert!(run.stderr.contains("cannot be used with"), "{}", run.stderr);
}

#[test]
fn a_provider_manifest_adds_an_http_tool_whose_host_the_terminal_grants() {
    let cli = Cli::new();
    // A real HTTP server on loopback: Python's http.server, answering POST /add with the sum.
    let server = r#"
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        args = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        body = json.dumps({"sum": args["a"] + args["b"]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;
    let (mut child, port) = python_server(server, &[]);
    let manifest = json!({
        "schema_version": 1,
        "id": "remote.add",
        "version": "1.0.0",
        "display_name": "Adder",
        "description": "Add two integers on a remote service.",
        "license": "MIT",
        "safety_tier": "read_only",
        "input_schema": {"type": "object", "required": ["a", "b"],
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
        "output_schema": {"type": "object", "required": ["sum"],
            "properties": {"sum": {"type": "integer"}}},
        "endpoint": {"url": format!("http://127.0.0.1:{}/add", port)}
    });
    std::fs::write(cli.path("adder.json"), manifest.to_string()).unwrap();
    let run = cli.run(&[
        "--provider",
        "adder.json",
        "run",
        "remote.add",
        "--arg",
        "a=2",
        "--arg",
        "b=40",
    ]);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.json(), json!({"sum": 42}));
    let described = cli.expect(
        0,
        &[
            "--provider",
            "adder.json",
            "--json",
            "describe",
            "remote.add",
        ],
    );
    assert_eq!(described.json()["backend"], "in_process");
    // A provider that is not one: a clear error naming the file.
    std::fs::write(cli.path("bad.json"), "{\"id\": \"x\"}").unwrap();
    let run = cli.expect(2, &["--provider", "bad.json", "list"]);
    assert!(
        run.stderr.contains("cannot use the provider bad.json"),
        "{}",
        run.stderr
    );
}

#[test]
fn allow_host_lets_web_fetch_reach_a_loopback_server() {
    let cli = Cli::new();
    std::fs::write(cli.path("hello.txt"), "hello over http").unwrap();
    // A real HTTP server on loopback: Python's http.server, serving the test's directory.
    let server = r#"
import functools, http.server, sys
H = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
H.log_message = lambda *a: None
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;
    let (mut child, port) = python_server(server, &[cli.path(".").as_os_str()]);
    let url = format!("url=http://127.0.0.1:{}/hello.txt", port);
    let fetched = cli.run(&[
        "--allow-host",
        "127.0.0.1",
        "run",
        "web.fetch",
        "--arg",
        &url,
    ]);
    let refused = cli.run(&["run", "web.fetch", "--arg", &url]);
    let elsewhere = cli.run(&[
        "--allow-host",
        "example.com",
        "run",
        "web.fetch",
        "--arg",
        &url,
    ]);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(fetched.code, 0, "{fetched:#?}");
    assert_eq!(fetched.json()["text"], "hello over http");
    assert_eq!(fetched.json()["status"], 200);
    // Without a grant, refused before the tool runs; with another host, refused by the host.
    assert_ne!(refused.code, 0);
    assert!(
        refused.stderr.contains("allows no network hosts"),
        "{refused:#?}"
    );
    assert_ne!(elsewhere.code, 0);
    assert!(
        elsewhere.stderr.contains("host `127.0.0.1`") && elsewhere.stderr.contains("example.com"),
        "{elsewhere:#?}"
    );
}

#[test]
fn an_mcp_server_named_with_mcp_joins_the_catalog() {
    let venv = std::env::var("LOCARA_PY_VENV").unwrap_or_else(|_| "/var/tmp/locara-py".to_owned());
    let python = Path::new(&venv).join("bin/python");
    assert!(
        python.is_file(),
        "no venv at {venv}: run `bash .ci/test-deps` (it installs the MCP SDK this test's server uses)"
    );
    let server = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/mcp/server.py");
    let spec = format!("py={} {server}", python.display());
    let cli = Cli::new();
    let run = cli.expect(
        0,
        &[
            "--mcp", &spec, "run", "py.add", "--arg", "a=2", "--arg", "b=40",
        ],
    );
    assert_eq!(run.json(), json!({"result": 42}));
    let listed = cli.expect(0, &["--mcp", &spec, "list"]);
    assert!(listed.stdout.contains("py.wipe"), "{}", listed.stdout);
    // Not a server: a clear error naming it.
    let broken = cli.expect(2, &["--mcp", "nope=/nonexistent/server", "list"]);
    assert!(
        broken.stderr.contains("cannot use the MCP server `nope`"),
        "{}",
        broken.stderr
    );
}

/// Starts `python3 -c script args…`, a server that prints its port on its first line; returns
/// the process and the port.
fn python_server(script: &str, args: &[&std::ffi::OsStr]) -> (std::process::Child, String) {
    let mut child = Command::new("python3")
        .args(["-c", script])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut port = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut port,
    )
    .unwrap();
    (child, port.trim().to_owned())
}

#[test]
fn a_program_calls_tools_from_the_command_line() {
    // Without an app manifest the CLI grants `tools`: a Lua program calls text.chunk, and
    // `--json` lists the inner call in `calls`.
    let cli = Cli::new();
    let code = r#"local r = locara.call("text.chunk", {text = "One. Two. Three.", max_chars = 6})
return #r.output.chunks"#;
    let response = cli
        .expect(
            0,
            &[
                "--json",
                "run",
                "code-exec.lua",
                "--arg",
                &format!("code={code}"),
            ],
        )
        .json();
    assert_eq!(response["output"]["result"], "3", "{response}");
    assert_eq!(
        response["calls"][0]["tool"], "text.chunk@0.1.0",
        "{response}"
    );
    assert_eq!(response["calls"][0]["ok"], true, "{response}");
    assert!(
        response["calls"][0]["elapsed_ms"].as_f64() > Some(0.0),
        "{response}"
    );
}

#[test]
fn tools_export_prints_the_code_mode_api_in_typescript_and_python() {
    let cli = Cli::new();
    let dir = tempfile::tempdir().unwrap();

    // TypeScript: the declarations type-check, a program using them right compiles, and one
    // passing a number as text.chunk's text does not (Debian's `tsc`, from node-typescript).
    let ts = cli
        .expect(0, &["tools", "export", "--format", "typescript"])
        .stdout;
    assert!(
        ts.contains("textChunk(args: TextChunkInput): Promise<ToolResult<TextChunkOutput>>;"),
        "{ts}"
    );
    std::fs::write(dir.path().join("locara.d.ts"), &ts).unwrap();
    let tsc = |program: &str| {
        std::fs::write(dir.path().join("main.ts"), program).unwrap();
        Command::new("tsc")
            .args([
                "--noEmit", "--strict", "--target", "es2020", "--lib", "es2020",
            ])
            .arg(dir.path().join("locara.d.ts"))
            .arg(dir.path().join("main.ts"))
            .output()
            .expect("tsc runs (Debian package node-typescript, installed by .ci/test-deps)")
    };
    let good = tsc(
        "export async function main(): Promise<number> {\n  const r = await locara.tools.textChunk({ text: \"a b\", max_chars: 5 });\n  const first: string = r.output.chunks[0].text;\n  return r.output.count + first.length;\n}\n",
    );
    assert!(
        good.status.success(),
        "{}",
        String::from_utf8_lossy(&good.stdout)
    );
    let bad = tsc(
        "export async function main(): Promise<void> {\n  await locara.tools.textChunk({ text: 5 });\n}\n",
    );
    assert!(
        !bad.status.success(),
        "a number passed as text type-checked"
    );
    assert!(String::from_utf8_lossy(&bad.stdout).contains("main.ts"));

    // Python: the stub is valid Python, and each tool is a method whose keyword arguments are
    // its input's properties, with the tool's description as its docstring.
    let py = cli
        .expect(0, &["tools", "export", "--format", "python"])
        .stdout;
    std::fs::write(dir.path().join("locara.pyi"), &py).unwrap();
    let check = Command::new("python3")
        .arg("-c")
        .arg(
            "import inspect, sys\n\
             source = open(sys.argv[1]).read()\n\
             scope = {}\n\
             exec(compile(source, 'locara.pyi', 'exec'), scope)\n\
             method = scope['Tools'].text_chunk\n\
             print(sorted(inspect.signature(method).parameters))\n\
             print(method.__doc__.splitlines()[0][:20])\n",
        )
        .arg(dir.path().join("locara.pyi"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(
        stdout.starts_with("['max_chars', 'overlap', 'self', 'text']\n"),
        "{stdout}"
    );

    // The language packages' module forms: the same tool types, without code mode's globals
    // (the packages' own suites type-check programs against them: `cargo xtask sdk test`).
    let module = cli
        .expect(0, &["tools", "export", "--format", "typescript-module"])
        .stdout;
    assert!(module.contains("export interface Tools {"), "{module}");
    assert!(!module.contains("declare global"), "{module}");
    let module = cli
        .expect(0, &["tools", "export", "--format", "python-module"])
        .stdout;
    assert!(module.contains("\nclass AsyncTools:"), "{module}");
    assert!(
        module.contains("    async def text_chunk(self, *, "),
        "{module}"
    );
    assert!(!module.contains("\ndef call("), "{module}");
}

/// `--temp-dir` (and `LOCARA_TEMP_DIR`) is where a call's temp dir is made: a program that
/// renames a file in `/tmp` (which the host cannot do while it holds the temp dir in memory)
/// creates it there, and it is gone when the call ends.
#[test]
fn calls_make_their_temp_dirs_under_temp_dir() {
    let cli = Cli::new();
    let code = r#"local f = assert(io.open("/tmp/note.txt", "w"))
f:write("kept for the call")
f:close()
assert(os.rename("/tmp/note.txt", "/tmp/kept.txt"))
return assert(io.open("/tmp/kept.txt")):read("a")"#;
    let arg = format!("code={code}");
    let untouched = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1);
    let modified = |dir: &Path| std::fs::metadata(dir).unwrap().modified().unwrap();
    for via_env in [false, true] {
        let root = tempfile::tempdir().unwrap();
        std::fs::File::open(root.path())
            .unwrap()
            .set_modified(untouched)
            .unwrap();
        let run = if via_env {
            let args = ["--json", "run", "code-exec.lua", "--arg", &arg];
            cli.run_with_env(&args, &[("LOCARA_TEMP_DIR", s(root.path()))], &[])
        } else {
            let args = [
                "--json",
                "--temp-dir",
                s(root.path()),
                "run",
                "code-exec.lua",
                "--arg",
                &arg,
            ];
            cli.run(&args)
        };
        assert_eq!(run.code, 0, "{run:#?}");
        assert_eq!(
            run.json()["output"]["result"],
            "kept for the call",
            "{run:#?}"
        );
        // The call's dir was made and removed there: the root changed, and is empty again.
        assert_ne!(modified(root.path()), untouched, "env: {via_env}");
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    }
    // A temp root that is not a directory: the program cannot write in /tmp.
    let file = tempfile::NamedTempFile::new().unwrap();
    let run = cli.run(&[
        "--json",
        "--temp-dir",
        s(file.path()),
        "run",
        "code-exec.lua",
        "--arg",
        &arg,
    ]);
    assert_ne!(run.code, 0, "{run:#?}");
}
