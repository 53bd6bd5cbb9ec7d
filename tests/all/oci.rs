//! Tools through an OCI registry, end to end: `locara push` from one home to a real
//! distribution registry (Debian's `docker-registry`) on loopback, `locara pull` and `locara
//! install --from oci://…` into another home that trusts the publisher, then `locara run`
//! there. Refusals: a blob tampered with in the registry's storage, an artifact whose wasm is
//! another module, a signature by a key the home does not trust, and TLS to a registry whose
//! CA is not trusted. A manifest whose `artifact.url` is `https` is installed from a directory,
//! its module fetched over TLS. Every refusal leaves the home without a registry or a lockfile.

use std::{path::Path, process::Command};

use locara_manifest::{Artifact, ToolName, Version};
use locara_oci::{Client, ClientOptions, Location};
use locara_registry::{Digest, SigningKey, ToolFiles, prepare_manifest, sign_manifest};
use locara_test_artifacts::{
    TestHome,
    oci::DockerRegistry,
    tls::{Leaf, TestCa, TlsFront},
};
use serde_json::Value;

use crate::mcp_server::locara;

/// `locara --home HOME ARGS…`: (exit code, stdout, stderr).
fn run(home: &Path, args: &[&str]) -> (i32, String, String) {
    let output = Command::new(locara())
        .arg("--home")
        .arg(home)
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A home with no tools that trusts the keys of `trusted`'s `trust/` directory.
fn empty_home_trusting(trusted: &Path) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join("trust")).unwrap();
    for entry in std::fs::read_dir(trusted.join("trust")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(
            entry.path(),
            home.path().join("trust").join(entry.file_name()),
        )
        .unwrap();
    }
    home
}

/// Nothing was installed: no registry and no lockfile in `home`.
fn assert_nothing_installed(home: &Path) {
    assert!(!home.join("registry").exists(), "a registry was written");
    assert!(!home.join("locara.lock").exists(), "a lockfile was written");
}

fn push(home: &TestHome, tool: &str, to: &str) {
    let (code, out, err) = run(home.path(), &["push", tool, "--to", to, "--plain-http"]);
    assert_eq!(code, 0, "push: {out}{err}");
    assert!(out.starts_with(&format!("pushed {tool} to ")), "{out}");
}

/// The files of `id@0.1.0` as the publisher's home verifies them.
fn files_of(publisher: &TestHome, id: &str) -> ToolFiles {
    publisher
        .registry()
        .files(&id.parse().unwrap(), &"0.1.0".parse().unwrap())
        .unwrap()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn plain_client() -> Client {
    let mut options = ClientOptions::default();
    options.plain_http = true;
    Client::new(options).unwrap()
}

#[test]
fn a_pushed_tool_is_pulled_installed_pinned_and_run_in_another_home() {
    let registry = DockerRegistry::start();
    let publisher = TestHome::new();
    let at = format!("oci://{}/team/tools", registry.host());
    push(&publisher, "text.chunk@0.1.0", &at);

    let home = empty_home_trusting(publisher.path());
    // `pull`: the three files, byte for byte, after verifying.
    let out = home.path().join("pulled");
    let (code, stdout, err) = run(
        home.path(),
        &[
            "pull",
            "text.chunk@0.1.0",
            "--from",
            &at,
            "--plain-http",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stdout}{err}");
    let published = publisher.registry_dir().join("tools/text.chunk/0.1.0");
    for name in [
        "manifest.json",
        "manifest.sig.json",
        "text.chunk-0.1.0.wasm",
    ] {
        assert_eq!(
            std::fs::read(out.join(name)).unwrap(),
            std::fs::read(published.join(name)).unwrap(),
            "{name}"
        );
    }
    assert_nothing_installed(home.path());

    // `install`: into the registry, pinned, and runnable.
    let (code, stdout, err) = run(
        home.path(),
        &["install", "text.chunk@0.1.0", "--from", &at, "--plain-http"],
    );
    assert_eq!(code, 0, "{stdout}{err}");
    assert!(
        stdout.contains("installed text.chunk@0.1.0 from 127.0.0.1:"),
        "{stdout}"
    );
    let lock: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("locara.lock")).unwrap())
            .unwrap();
    assert_eq!(lock["tools"]["text.chunk"]["version"], "0.1.0", "{lock}");
    let (code, stdout, err) = run(
        home.path(),
        &[
            "run",
            "text.chunk",
            "--arg",
            "text=one two three four",
            "--arg",
            "max_chars=8",
        ],
    );
    assert_eq!(code, 0, "{stdout}{err}");
    let output: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(output["count"], 3, "{output}");
    assert_eq!(output["chunks"][0]["text"], "one two ", "{output}");

    // A version the registry does not hold, and a bare id, are refused with what to do.
    let (code, _, err) = run(
        home.path(),
        &["install", "text.chunk@9.9.9", "--from", &at, "--plain-http"],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("the registry has no such tool or version"),
        "{err}"
    );
    let (code, _, err) = run(home.path(), &["install", "text.chunk", "--from", &at]);
    assert_eq!(code, 2);
    assert!(err.contains("names no version"), "{err}");
}

#[test]
fn a_blob_tampered_with_in_the_registry_is_refused_and_nothing_is_installed() {
    let registry = DockerRegistry::start();
    let publisher = TestHome::new();
    let at = format!("oci://{}/tools", registry.host());
    push(&publisher, "text.chunk@0.1.0", &at);
    let wasm = std::fs::read(
        publisher
            .registry_dir()
            .join("tools/text.chunk/0.1.0/text.chunk-0.1.0.wasm"),
    )
    .unwrap();
    // Flip one byte of the wasm blob where the registry stores it.
    let blob = registry.blob_path(&format!("sha256:{}", Digest::of(&wasm).to_hex()));
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[1000] ^= 0xff;
    std::fs::write(&blob, &bytes).unwrap();

    let home = empty_home_trusting(publisher.path());
    let (code, out, err) = run(
        home.path(),
        &["install", "text.chunk@0.1.0", "--from", &at, "--plain-http"],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("does not match its digest"), "{err}");
    assert_nothing_installed(home.path());
}

#[test]
fn an_artifact_whose_wasm_is_another_module_or_whose_signer_is_not_trusted_is_refused() {
    let registry = DockerRegistry::start();
    let publisher = TestHome::new();
    let at: Location = format!("oci://{}/tools", registry.host()).parse().unwrap();
    let files = files_of(&publisher, "text.chunk");
    let other = files_of(&publisher, "filesystem.list");
    let id: ToolName = "text.chunk".parse().unwrap();
    let client = plain_client();
    let home = empty_home_trusting(publisher.path());

    // A coherent OCI artifact (every digest right) whose wasm layer is another tool's module.
    let swapped = ToolFiles::new(files.manifest.clone(), files.signature.clone(), other.wasm);
    rt().block_on(client.push(&at, &id, &"0.1.0".parse().unwrap(), &swapped))
        .unwrap();
    let (code, out, err) = run(
        home.path(),
        &[
            "install",
            "text.chunk@0.1.0",
            "--from",
            &at.to_string(),
            "--plain-http",
        ],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("artifact size mismatch for text.chunk@0.1.0"),
        "{err}"
    );
    assert_nothing_installed(home.path());

    // The same tool signed again by a key this home does not trust.
    let stranger = SigningKey::from_seed("stranger", &[42; 32]).unwrap();
    let signature = sign_manifest(&files.manifest, &stranger).to_json_pretty();
    let resigned = ToolFiles::new(files.manifest.clone(), signature.into_bytes(), files.wasm);
    let version: Version = "0.1.1".parse().unwrap();
    rt().block_on(client.push(&at, &id, &version, &resigned))
        .unwrap();
    let (code, out, err) = run(
        home.path(),
        &[
            "install",
            "text.chunk@0.1.1",
            "--from",
            &at.to_string(),
            "--plain-http",
        ],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains(&stranger.key_id().to_string()), "{err}");
    assert!(err.contains("which is not in the trust store"), "{err}");
    assert_nothing_installed(home.path());

    // And `pull` writes nothing either.
    let pulled = home.path().join("pulled");
    let (code, _, err) = run(
        home.path(),
        &[
            "pull",
            "text.chunk@0.1.1",
            "--from",
            &at.to_string(),
            "--plain-http",
            "--out",
            pulled.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(!pulled.exists());
}

#[test]
fn a_registry_behind_tls_is_reached_with_its_ca_and_refused_without() {
    let registry = DockerRegistry::start();
    let ca = TestCa::new();
    let front = TlsFront::start(
        ca.server_config(Leaf::Valid, &[b"http/1.1"]),
        ([127, 0, 0, 1], registry.port()).into(),
    );
    let publisher = TestHome::new();
    let at = format!("oci://127.0.0.1:{}/tools", front.port());
    let ca_file = ca.write_pem(registry.dir());
    let ca_file = ca_file.to_str().unwrap();
    let (code, out, err) = run(
        publisher.path(),
        &[
            "push",
            "text.chunk@0.1.0",
            "--to",
            &at,
            "--ca-file",
            ca_file,
        ],
    );
    assert_eq!(code, 0, "{out}{err}");

    let home = empty_home_trusting(publisher.path());
    let (code, out, err) = run(home.path(), &["install", "text.chunk@0.1.0", "--from", &at]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("does it speak HTTPS with a certificate this machine trusts"),
        "{err}"
    );
    assert_nothing_installed(home.path());
    let (code, out, err) = run(
        home.path(),
        &[
            "install",
            "text.chunk@0.1.0",
            "--from",
            &at,
            "--ca-file",
            ca_file,
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn a_manifest_whose_artifact_url_is_https_is_installed_from_a_directory() {
    // The module is served over TLS by the registry's blob endpoint, a plain HTTPS GET.
    let registry = DockerRegistry::start();
    let publisher = TestHome::new();
    let at: Location = format!("oci://{}/tools", registry.host()).parse().unwrap();
    let files = files_of(&publisher, "text.chunk");
    rt().block_on(plain_client().push(
        &at,
        &"text.chunk".parse().unwrap(),
        &"0.1.0".parse().unwrap(),
        &files,
    ))
    .unwrap();
    let ca = TestCa::new();
    let front = TlsFront::start(
        ca.server_config(Leaf::Valid, &[b"http/1.1"]),
        ([127, 0, 0, 1], registry.port()).into(),
    );
    let digest = Digest::of(&files.wasm);
    let url = format!(
        "https://127.0.0.1:{}/v2/tools/text.chunk/blobs/sha256:{}",
        front.port(),
        digest.to_hex()
    );

    // A manifest pinning that URL, signed by a key the installing home trusts.
    let template: Value = serde_json::from_slice(&files.manifest).unwrap();
    let mut template = template.as_object().unwrap().clone();
    template.remove("artifact");
    let manifest = prepare_manifest(&Value::Object(template).to_string(), &files.wasm)
        .unwrap()
        .with_artifact(Artifact::new(
            url.clone(),
            digest.to_sha256_hex(),
            files.wasm.len() as u64,
        ));
    let manifest_bytes = manifest.to_json_pretty().into_bytes();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("manifest.json"), &manifest_bytes).unwrap();
    std::fs::write(
        dir.path().join("manifest.sig.json"),
        sign_manifest(&manifest_bytes, &publisher.key).to_json_pretty(),
    )
    .unwrap();
    let ca_file = ca.write_pem(dir.path());
    let source = dir.path().to_str().unwrap();

    let home = empty_home_trusting(publisher.path());
    let (code, out, err) = run(
        home.path(),
        &["install", "text.chunk@0.1.0", "--from", source],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains(&format!("cannot fetch the artifact {url}")),
        "{err}"
    );
    assert_nothing_installed(home.path());
    let (code, out, err) = run(
        home.path(),
        &[
            "install",
            "text.chunk@0.1.0",
            "--from",
            source,
            "--ca-file",
            ca_file.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(
        home.path(),
        &[
            "run",
            "text.chunk@0.1.0",
            "--arg",
            "text=one two",
            "--arg",
            "max_chars=4",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");

    // The same manifest pointing at plain http is refused before any request.
    let insecure = url.replacen("https://", "http://", 1);
    let manifest = manifest.with_artifact(Artifact::new(
        insecure,
        digest.to_sha256_hex(),
        files.wasm.len() as u64,
    ));
    let manifest_bytes = manifest.to_json_pretty().into_bytes();
    std::fs::write(dir.path().join("manifest.json"), &manifest_bytes).unwrap();
    std::fs::write(
        dir.path().join("manifest.sig.json"),
        sign_manifest(&manifest_bytes, &publisher.key).to_json_pretty(),
    )
    .unwrap();
    let other_home = empty_home_trusting(publisher.path());
    let (code, _, err) = run(
        other_home.path(),
        &["install", "text.chunk@0.1.0", "--from", source],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("an artifact is fetched over https only"),
        "{err}"
    );
    assert_nothing_installed(other_home.path());
}
