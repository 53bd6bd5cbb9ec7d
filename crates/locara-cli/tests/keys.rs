//! End-to-end tests of the `locara` binary around keys: owner-only secret key files, revoking a
//! trusted key (`locara trust revoke`) and what that refuses, `verify-receipt`'s verdict coming
//! before the receipt's claims, and home files that are FIFOs or devices.

use std::{path::Path, process::Command};

use serde_json::{Value, json};

mod support;
use support::{Cli, Run, s};

/// Runs text.chunk with a receipt written to `file`.
fn run_with_receipt(cli: &Cli, file: &str) -> Run {
    cli.expect(
        0,
        &[
            "run",
            "text.chunk",
            "--arg",
            "text=One. Two.",
            "--receipt",
            file,
        ],
    )
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[cfg(unix)]
#[test]
fn secret_keys_are_owner_only_and_refused_when_others_can_read_them() {
    use std::os::unix::fs::PermissionsExt as _;

    let cli = Cli::watched();
    // `keygen --out DIR` makes DIR (missing) mode 0700 and the secret key 0600.
    let keys = cli.path("new/keys");
    cli.expect(0, &["keygen", "--publisher", "acme", "--out", s(&keys)]);
    assert_eq!(mode(&keys), 0o700);
    assert_eq!(mode(&keys.join("acme.secret.json")), 0o600);
    assert_eq!(mode(&keys.join("acme.pub.json")), 0o644);

    // The receipt key: `<home>/keys` made 0700, the key 0600.
    assert!(!cli.in_home("keys").exists());
    run_with_receipt(&cli, "receipt.json");
    assert_eq!(mode(&cli.in_home("keys")), 0o700);
    let secret = cli.in_home("keys/receipts.secret.json");
    assert_eq!(mode(&secret), 0o600);

    // A secret key others can read is refused, naming the fix.
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = cli.expect(
        2,
        &[
            "run",
            "text.chunk",
            "--arg",
            "text=x",
            "--receipt",
            "again.json",
        ],
    );
    assert!(
        run.stderr.contains(&format!(
            "refusing to use the secret key file `{}`: its mode is 0644",
            secret.display()
        )) && run
            .stderr
            .contains(&format!("run `chmod 600 {}`", secret.display())),
        "{}",
        run.stderr
    );
    let run = cli.expect(
        2,
        &[
            "sign",
            "--key",
            s(&secret),
            "--manifest",
            s(&cli.path("none.json")),
        ],
    );
    assert!(run.stderr.contains("its mode is 0644"), "{}", run.stderr);
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    run_with_receipt(&cli, "again.json");
}

#[test]
fn a_revoked_publisher_key_fails_run_verify_and_its_receipts() {
    let cli = Cli::watched();
    let key_id = cli.home.key.key_id().to_string();
    run_with_receipt(&cli, "receipt.json");

    let run = cli.expect(0, &["trust", "list"]);
    assert_eq!(
        run.stdout,
        format!("{key_id}  locara-tests      trusted\n"),
        "{run:#?}"
    );

    let run = cli.expect(
        0,
        &["trust", "revoke", &key_id, "--reason", "laptop stolen"],
    );
    let revoked = cli.in_home("trust/revoked.json");
    assert!(
        run.stdout.starts_with(&format!(
            "revoked {key_id} (locara-tests), recorded in {}\n",
            revoked.display()
        )),
        "{}",
        run.stdout
    );
    let list: Value = serde_json::from_str(&std::fs::read_to_string(&revoked).unwrap()).unwrap();
    assert_eq!(list["revoked"][0]["key_id"], json!(key_id));
    assert_eq!(list["revoked"][0]["publisher"], "locara-tests");
    assert_eq!(list["revoked"][0]["reason"], "laptop stolen");
    let revoked_at = list["revoked"][0]["revoked_at"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        revoked_at.len() == 20 && revoked_at.ends_with('Z'),
        "{revoked_at}"
    );
    // The key file stays; the key is not trusted all the same.
    assert!(cli.in_home("trust/locara-tests.pub.json").is_file());
    let run = cli.expect(0, &["trust", "list"]);
    assert_eq!(
        run.stdout,
        format!("{key_id}  locara-tests      REVOKED on {revoked_at} (laptop stolen)\n")
    );
    let run = cli.expect(0, &["trust", "revoke", &key_id]);
    assert!(run.stdout.contains("is already revoked"), "{}", run.stdout);

    // Running a tool it signed fails, naming the key and the revocation.
    let run = cli.expect(2, &["run", "text.chunk", "--arg", "text=x"]);
    assert!(
        run.stderr.contains(&format!(
            "text.chunk@0.1.0 is signed by {key_id}, which was revoked on {revoked_at} (laptop stolen)"
        )),
        "{}",
        run.stderr
    );

    // `verify` reports every tool it signed as FAIL.
    let run = cli.expect(1, &["verify", "text.chunk"]);
    assert!(
        run.stdout.starts_with(&format!(
            "FAIL  text.chunk@0.1.0  text.chunk@0.1.0 is signed by {key_id}, which was revoked on {revoked_at} (laptop stolen): a revoked key is never trusted"
        )),
        "{}",
        run.stdout
    );
    let report: Value = serde_json::from_str(&cli.expect(1, &["--json", "verify"]).stdout).unwrap();
    let tools = report["tools"].as_array().unwrap();
    assert!(!tools.is_empty());
    assert!(
        tools
            .iter()
            .all(|t| t["ok"] == false && t["reason"] == "revoked key"),
        "{report:#}"
    );

    // The receipt of a call of a tool it signed fails, FAIL lines first.
    let run = cli.expect(1, &["verify-receipt", "receipt.json"]);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].starts_with(&format!(
            "FAIL  publisher  text.chunk@0.1.0 ran signed by {key_id}, which this home revoked on {revoked_at} (laptop stolen)"
        )),
        "{}",
        run.stdout
    );
    assert!(
        lines[1].starts_with("FAIL  tool       text.chunk@0.1.0 cannot be verified in this home"),
        "{}",
        run.stdout
    );
    assert!(lines[2].starts_with("ok    signature  "), "{}", run.stdout);
    assert!(
        lines[3].starts_with(
            "the receipt did not verify; what it claims, unverified: text.chunk@0.1.0 succeeded"
        ),
        "{}",
        run.stdout
    );
    assert_eq!(lines.len(), 4, "{}", run.stdout);
}

#[test]
fn a_revoked_receipt_key_rejects_its_receipts_and_signs_no_more() {
    let cli = Cli::watched();
    run_with_receipt(&cli, "receipt.json");
    let public: Value = serde_json::from_str(
        &std::fs::read_to_string(cli.in_home("keys/receipts.pub.json")).unwrap(),
    )
    .unwrap();
    let receipt_key = public["key_id"].as_str().unwrap().to_owned();
    cli.expect(0, &["verify-receipt", "receipt.json"]);

    let run = cli.expect(
        0,
        &[
            "trust",
            "revoke",
            &receipt_key,
            "--reason",
            "host reinstalled",
        ],
    );
    assert!(
        run.stdout
            .starts_with(&format!("revoked {receipt_key} (receipts), recorded in ")),
        "{}",
        run.stdout
    );
    // The receipt key is not a trusted publisher key: listed as revoked without a key file.
    let run = cli.expect(0, &["trust", "list"]);
    assert!(
        run.stdout.lines().any(|l| l.starts_with(&receipt_key)
            && l.contains("REVOKED on ")
            && l.ends_with("(host reinstalled) (no key file in the trust directory)")),
        "{}",
        run.stdout
    );

    let run = cli.expect(1, &["verify-receipt", "receipt.json"]);
    assert!(
        run.stdout.starts_with(&format!(
            "FAIL  signature  the receipt is signed by key {receipt_key}, which was revoked on "
        )) && run
            .stdout
            .lines()
            .next()
            .unwrap()
            .contains("(host reinstalled)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .lines()
            .last()
            .unwrap()
            .starts_with("the receipt did not verify; what it claims, unverified: "),
        "{}",
        run.stdout
    );

    // A revoked receipt key signs nothing more; moved away, a new one is made.
    let run = cli.expect(
        2,
        &[
            "run",
            "text.chunk",
            "--arg",
            "text=x",
            "--receipt",
            "again.json",
        ],
    );
    assert!(
        run.stderr
            .contains(&format!("the receipt key {receipt_key} ("))
            && run.stderr.contains("is revoked in "),
        "{}",
        run.stderr
    );
    assert!(!cli.path("again.json").exists());
    std::fs::rename(cli.in_home("keys"), cli.in_home("old-keys")).unwrap();
    run_with_receipt(&cli, "again.json");
    cli.expect(0, &["verify-receipt", "again.json"]);
}

#[test]
fn verify_receipt_says_fail_before_the_claims_and_names_the_receipt() {
    let cli = Cli::watched();
    let run = run_with_receipt(&cli, "receipt.json");
    assert!(
        run.stderr.contains("made the receipt key"),
        "{}",
        run.stderr
    );

    // Every check passes: the (verified) summary first, then the checks.
    let run = cli.expect(0, &["verify-receipt", "receipt.json"]);
    assert!(
        run.stdout
            .starts_with("text.chunk@0.1.0 succeeded on wasmtime"),
        "{}",
        run.stdout
    );

    // A receipt changed after signing: FAIL first, naming the receipt, not a manifest.
    let mut receipt: Value =
        serde_json::from_str(&std::fs::read_to_string(cli.path("receipt.json")).unwrap()).unwrap();
    receipt["receipt"]["ok"] = json!(false);
    std::fs::write(cli.path("edited.json"), receipt.to_string()).unwrap();
    let run = cli.expect(1, &["verify-receipt", "edited.json"]);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].starts_with("FAIL  signature  the receipt's signature by ed25519:")
            && lines[0].contains("does not verify: the receipt was changed after it was signed"),
        "{}",
        run.stdout
    );
    assert!(!lines[0].contains("manifest"), "{}", run.stdout);
    assert!(
        lines.last().unwrap().starts_with(
            "the receipt did not verify; what it claims, unverified: text.chunk@0.1.0 failed"
        ),
        "{}",
        run.stdout
    );
    let first_claim = run.stdout.find("text.chunk@0.1.0 failed").unwrap();
    assert!(run.stdout.find("FAIL").unwrap() < first_claim);

    // Checked against another host's key: the receipt's key is named, and the one given.
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
        run.stdout.starts_with(&format!(
            "FAIL  signature  the receipt is signed by key {}, which is not the host key it was checked against",
            receipt["key_id"].as_str().unwrap()
        )) && run.stdout.contains(&format!(
            "(checked against other.pub.json, key {}; pass the key that signed it with --key)",
            other.key_id()
        )),
        "{}",
        run.stdout
    );
}

#[cfg(unix)]
#[test]
fn a_fifo_or_dev_zero_in_the_home_gives_a_clear_error_quickly() {
    let cli = Cli::watched();
    run_with_receipt(&cli, "receipt.json");
    let put = |path: &Path, fifo: bool| {
        std::fs::remove_file(path).unwrap();
        if fifo {
            let status = Command::new("mkfifo").arg(path).status().unwrap();
            assert!(status.success());
        } else {
            std::os::unix::fs::symlink("/dev/zero", path).unwrap();
        }
    };
    let kind = |fifo: bool| {
        if fifo {
            "it is a FIFO (named pipe), not a regular file"
        } else {
            "it is a character device, not a regular file"
        }
    };
    for fifo in [true, false] {
        // A tool's manifest: `verify` says so, and `run` refuses.
        let manifest = cli
            .home
            .registry_dir()
            .join("tools/text.chunk/0.1.0/manifest.json");
        let saved = std::fs::read(&manifest).unwrap();
        put(&manifest, fifo);
        let run = cli.expect(1, &["verify", "text.chunk"]);
        assert!(
            run.stdout.starts_with(&format!(
                "FAIL  text.chunk@0.1.0  refusing to read `{}`: {}",
                manifest.display(),
                kind(fifo)
            )),
            "{}",
            run.stdout
        );
        let run = cli.expect(2, &["run", "text.chunk", "--arg", "text=x"]);
        assert!(run.stderr.contains(kind(fifo)), "{}", run.stderr);
        std::fs::remove_file(&manifest).unwrap();
        std::fs::write(&manifest, saved).unwrap();

        // A tool's artifact, with the cache emptied so it is read.
        let wasm = manifest.with_file_name("text.chunk-0.1.0.wasm");
        let saved = std::fs::read(&wasm).unwrap();
        put(&wasm, fifo);
        let _ = std::fs::remove_dir_all(cli.in_home("cache"));
        let run = cli.expect(2, &["run", "text.chunk", "--arg", "text=x"]);
        assert!(
            run.stderr
                .contains(&format!("refusing to read `{}`", wasm.display())),
            "{}",
            run.stderr
        );
        std::fs::remove_file(&wasm).unwrap();
        std::fs::write(&wasm, saved).unwrap();

        // A trusted key file: the trust store does not load.
        let public = cli.in_home("trust/locara-tests.pub.json");
        let saved = std::fs::read(&public).unwrap();
        put(&public, fifo);
        let run = cli.expect(2, &["list"]);
        assert!(run.stderr.contains(kind(fifo)), "{}", run.stderr);
        let run = cli.expect(2, &["trust", "list"]);
        assert!(run.stderr.contains(kind(fifo)), "{}", run.stderr);
        std::fs::remove_file(&public).unwrap();
        std::fs::write(&public, saved).unwrap();

        // The lockfile: `verify` reads it, and so does `run`.
        let lockfile = cli.in_home("locara.lock");
        let saved = std::fs::read(&lockfile).unwrap();
        put(&lockfile, fifo);
        let run = cli.expect(2, &["verify"]);
        assert!(run.stderr.contains(kind(fifo)), "{}", run.stderr);
        let run = cli.expect(2, &["run", "text.chunk", "--arg", "text=x"]);
        assert!(run.stderr.contains(kind(fifo)), "{}", run.stderr);
        std::fs::remove_file(&lockfile).unwrap();
        std::fs::write(&lockfile, saved).unwrap();

        // The receipt key: refused, not taken for a missing key and replaced.
        let secret = cli.in_home("keys/receipts.secret.json");
        let saved = std::fs::read(&secret).unwrap();
        put(&secret, fifo);
        let run = cli.expect(
            2,
            &[
                "run",
                "text.chunk",
                "--arg",
                "text=x",
                "--receipt",
                "r.json",
            ],
        );
        assert!(
            run.stderr.contains("cannot read the receipt key") && run.stderr.contains(kind(fifo)),
            "{}",
            run.stderr
        );
        // The receipt's public key, read by `verify-receipt`.
        let public = cli.in_home("keys/receipts.pub.json");
        let saved_public = std::fs::read(&public).unwrap();
        put(&public, fifo);
        let run = cli.expect(2, &["verify-receipt", "receipt.json"]);
        assert!(run.stderr.contains(kind(fifo)), "{}", run.stderr);
        for (path, bytes) in [(&secret, saved), (&public, saved_public)] {
            std::fs::remove_file(path).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        std::fs::set_permissions(
            &secret,
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o600),
        )
        .unwrap();
        cli.expect(0, &["verify-receipt", "receipt.json"]);
    }
}
