//! Unit tests against real temporary directories and real Ed25519 keys.

use std::path::{Path, PathBuf};

use expect_test::{Expect, expect};
use locara_manifest::{ToolManifest, ToolName, Version};

use crate::{
    Digest, Error, ManifestSignature, PublicKey, PublishedTool, Registry, RegistryConfig,
    RejectedEntry, Revocation, SigningKey, TrustStore, VerifiedArtifact, generate_keypair,
    prepare_manifest, sign_manifest, verify_manifest,
};

fn key(seed: u8) -> SigningKey {
    SigningKey::from_seed(&format!("publisher-{seed}"), &[seed; 32]).unwrap()
}

fn template(id: &str, version: &str) -> String {
    format!(
        r#"{{
  "schema_version": 1,
  "id": "{id}",
  "version": "{version}",
  "display_name": "Test tool",
  "description": "A tool for tests.",
  "license": "Apache-2.0",
  "safety_tier": "read_only",
  "input_schema": {{ "type": "object" }},
  "output_schema": {{ "type": "object" }}
}}"#
    )
}

/// Fake module bytes: the registry never parses wasm.
fn wasm(tag: &str) -> Vec<u8> {
    let mut bytes = b"\0asm\x01\0\0\0".to_vec();
    bytes.extend_from_slice(tag.as_bytes());
    bytes
}

struct Fixture {
    dir: tempfile::TempDir,
    key: SigningKey,
    registry: Registry,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let key = key(1);
        let registry = Registry::new(Fixture::config(dir.path(), &key)).unwrap();
        Fixture { dir, key, registry }
    }

    fn config(dir: &Path, key: &SigningKey) -> RegistryConfig {
        RegistryConfig::new(dir.join("registry"))
            .with_cache_dir(dir.join("cache"))
            .with_trust(TrustStore::new().with_key(key.public_key().clone()))
            .with_lockfile(dir.join("locara.lock.json"))
    }

    /// A second registry over the same files, reading the lockfile from disk.
    fn reopen(&self) -> Registry {
        Registry::new(Fixture::config(self.dir.path(), &self.key)).unwrap()
    }

    fn publish(&self, id: &str, version: &str, wasm: &[u8]) -> PublishedTool {
        self.publish_with(id, version, wasm, &self.key)
    }

    fn publish_with(
        &self,
        id: &str,
        version: &str,
        wasm: &[u8],
        key: &SigningKey,
    ) -> PublishedTool {
        let manifest = prepare_manifest(&template(id, version), wasm).unwrap();
        self.registry.publish(&manifest, wasm, key).unwrap()
    }

    fn resolve(&self, reference: &str) -> Result<VerifiedArtifact, Error> {
        self.registry.resolve(&reference.parse().unwrap())
    }

    fn cache_path(&self, digest: &Digest) -> PathBuf {
        self.dir
            .path()
            .join("cache")
            .join("sha256")
            .join(digest.to_hex())
    }

    /// The error with its source chain, temp paths replaced by `$TMP`.
    fn render(&self, error: &Error) -> String {
        let mut text = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(e) = source {
            text.push_str(&format!(": {e}"));
            source = e.source();
        }
        text.replace(&self.dir.path().display().to_string(), "$TMP")
    }

    fn check_err(&self, result: Result<VerifiedArtifact, Error>, expect: Expect) {
        match result {
            Ok(artifact) => panic!("expected an error, got {artifact:?}"),
            Err(e) => expect.assert_eq(&self.render(&e)),
        }
    }
}

fn flip_byte(path: &Path, index: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[index] ^= 0x01;
    std::fs::write(path, bytes).unwrap();
}

fn name(s: &str) -> ToolName {
    s.parse().unwrap()
}

fn version(s: &str) -> Version {
    s.parse().unwrap()
}

#[test]
fn publish_then_resolve() {
    let f = Fixture::new();
    let wasm = wasm("chunk");
    let published = f.publish("text.chunk", "0.1.0", &wasm);
    let dir = f.dir.path().join("registry/tools/text.chunk/0.1.0");
    assert_eq!(published.manifest_path, dir.join("manifest.json"));
    assert_eq!(published.signature_path, dir.join("manifest.sig.json"));
    assert_eq!(published.artifact_path, dir.join("text.chunk-0.1.0.wasm"));
    assert_eq!(published.artifact_digest, Digest::of(&wasm));
    assert_eq!(
        published.manifest_digest,
        Digest::of(&std::fs::read(&published.manifest_path).unwrap())
    );

    let artifact = f.resolve("text.chunk").unwrap();
    assert_eq!(artifact.wasm().unwrap().to_vec(), wasm);
    assert_eq!(artifact.manifest().artifact.url, "text.chunk-0.1.0.wasm");
    assert_eq!(*artifact.artifact_digest(), published.artifact_digest);
    assert_eq!(*artifact.manifest_digest(), published.manifest_digest);
    assert_eq!(artifact.key_id(), f.key.key_id());
    assert_eq!(
        std::fs::read(f.cache_path(&published.artifact_digest)).unwrap(),
        wasm
    );

    // Debug shows identity and digests, never the bytes.
    expect![[r#"VerifiedArtifact { tool: text.chunk@0.1.0, wasm_len: 13, artifact_digest: Digest(81e1d11ef465efd4355b4d99d9d1961ce8461af707e13de2375b0988513c9e45), manifest_digest: Digest(817e1725be5aede4b92f9cbd74a800344673d2269feaacaf1ea8c13388eea3f6), key_id: KeyId("ed25519:34750f98bd59fcfc") }"#]]
        .assert_eq(&format!("{artifact:?}"));

    expect![[r#"
        {
          "key_id": "ed25519:34750f98bd59fcfc",
          "algorithm": "ed25519",
          "signature": "92a9729ae2d552bd4ea65b00cf4ccf93c9abb12c244f9f8ef32eabfe064868411e2dadb016a1eb7b057e5b2596a01118a6ac17c06f6267cee6144ec9fbbc4504"
        }
    "#]]
    .assert_eq(&std::fs::read_to_string(&published.signature_path).unwrap());
}

#[test]
fn flipped_artifact_byte_is_a_hash_mismatch() {
    let f = Fixture::new();
    let published = f.publish("text.chunk", "0.1.0", &wasm("chunk"));
    flip_byte(&published.artifact_path, 10);
    f.check_err(f.resolve("text.chunk@0.1.0"), expect!["artifact hash mismatch for text.chunk@0.1.0: found a73feed4d6e66b39c8e33e9d7f8772a7a27b17c050edac79daeaeb5a768a4f5c, expected 81e1d11ef465efd4355b4d99d9d1961ce8461af707e13de2375b0988513c9e45 (the artifact was modified after signing; rebuild with `cargo xtask build-tools` or reinstall)"]);
}

#[test]
fn truncated_artifact_is_a_size_mismatch() {
    let f = Fixture::new();
    let published = f.publish("text.chunk", "0.1.0", &wasm("chunk"));
    std::fs::write(&published.artifact_path, wasm("chun")).unwrap();
    f.check_err(f.resolve("text.chunk@0.1.0"), expect!["artifact size mismatch for text.chunk@0.1.0: found 12 bytes, expected 13 (the artifact was modified after signing; rebuild with `cargo xtask build-tools` or reinstall)"]);
}

#[test]
fn flipped_manifest_byte_is_a_bad_signature() {
    let f = Fixture::new();
    let published = f.publish("text.chunk", "0.1.0", &wasm("chunk"));
    let text = std::fs::read_to_string(&published.manifest_path).unwrap();
    let index = text.find("A tool for tests").unwrap();
    flip_byte(&published.manifest_path, index);
    f.check_err(f.resolve("text.chunk@0.1.0"), expect!["bad signature on text.chunk@0.1.0 by ed25519:34750f98bd59fcfc: the manifest bytes do not match the signature (manifest.json was modified after signing); re-publish the tool or restore the original files"]);
}

#[test]
fn signature_by_another_key_is_an_unknown_key() {
    let f = Fixture::new();
    f.publish_with("text.chunk", "0.1.0", &wasm("chunk"), &key(2));
    f.check_err(f.resolve("text.chunk"), expect!["text.chunk@0.1.0 is signed by ed25519:6a3803d5f059902a, which is not in the trust store; if you trust its publisher, add their `*.pub.json` file to the trust directory"]);
}

#[test]
fn missing_signature_is_unsigned() {
    let f = Fixture::new();
    let published = f.publish("text.chunk", "0.1.0", &wasm("chunk"));
    std::fs::remove_file(&published.signature_path).unwrap();
    f.check_err(f.resolve("text.chunk"), expect!["text.chunk@0.1.0 is unsigned: `$TMP/registry/tools/text.chunk/0.1.0/manifest.sig.json` does not exist (publish it with `cargo xtask build-tools` or `Registry::publish`, which sign the manifest)"]);
}

#[test]
fn manifest_in_the_wrong_directory_is_rejected() {
    let f = Fixture::new();
    let published = f.publish("text.chunk", "0.1.0", &wasm("chunk"));
    let wrong = f.dir.path().join("registry/tools/text.chunk/0.3.0");
    std::fs::create_dir_all(&wrong).unwrap();
    for file in [&published.manifest_path, &published.signature_path] {
        std::fs::copy(file, wrong.join(file.file_name().unwrap())).unwrap();
    }
    f.check_err(f.resolve("text.chunk@0.3.0"), expect!["`$TMP/registry/tools/text.chunk/0.3.0` holds the manifest of text.chunk@0.1.0, expected text.chunk@0.3.0 (the files were copied to the wrong place; re-publish the tool)"]);
}

#[test]
fn lock_then_older_version_is_a_rollback() {
    let f = Fixture::new();
    f.publish("text.chunk", "0.1.0", &wasm("one"));
    f.publish("text.chunk", "0.2.0", &wasm("two"));
    f.registry
        .lock(&name("text.chunk"), &version("0.2.0"))
        .unwrap();
    f.check_err(f.resolve("text.chunk@0.1.0"), expect!["refusing to roll text.chunk back to 0.1.0: the lockfile pins 0.2.0; ask for text.chunk@0.2.0 or newer, or use `Registry::lock_forced` if the downgrade is intended"]);
    let err = f
        .registry
        .lock(&name("text.chunk"), &version("0.1.0"))
        .unwrap_err();
    assert!(matches!(err, Error::Rollback { .. }), "{err:?}");

    // Forcing the downgrade moves the pin back, and then 0.1.0 resolves.
    f.registry
        .lock_forced(&name("text.chunk"), &version("0.1.0"))
        .unwrap();
    assert_eq!(
        f.resolve("text.chunk@0.1.0")
            .unwrap()
            .wasm()
            .unwrap()
            .to_vec(),
        wasm("one")
    );
}

#[test]
fn bare_id_uses_the_lock() {
    let f = Fixture::new();
    f.publish("text.chunk", "0.1.0", &wasm("one"));
    f.publish("text.chunk", "0.2.0", &wasm("two"));
    f.registry
        .lock(&name("text.chunk"), &version("0.1.0"))
        .unwrap();
    assert_eq!(
        f.resolve("text.chunk").unwrap().wasm().unwrap().to_vec(),
        wasm("one")
    );
    // A fresh registry reads the pin back from disk.
    let reopened = f.reopen();
    let artifact = reopened.resolve(&"text.chunk".parse().unwrap()).unwrap();
    assert_eq!(artifact.manifest().version, version("0.1.0"));

    // The pinned version disappearing is an error, not a silent switch to another version.
    std::fs::remove_dir_all(f.dir.path().join("registry/tools/text.chunk/0.1.0")).unwrap();
    f.check_err(f.resolve("text.chunk"), expect!["tool `text.chunk@0.1.0 (pinned by the lockfile)` is not in the registry at `$TMP/registry`; available: text.chunk@0.2.0"]);
}

#[test]
fn bare_id_without_a_pin_takes_the_highest_release_and_pins_it() {
    let f = Fixture::new();
    f.publish("text.chunk", "0.2.0", &wasm("two"));
    f.publish("text.chunk", "0.10.0", &wasm("ten"));
    f.publish("text.chunk", "1.0.0-beta.1", &wasm("beta"));
    let artifact = f.resolve("text.chunk").unwrap();
    assert_eq!(artifact.manifest().version, version("0.10.0"));
    let lockfile = std::fs::read_to_string(f.dir.path().join("locara.lock.json")).unwrap();
    let lockfile = locara_manifest::Lockfile::from_json(&lockfile).unwrap();
    let pin = lockfile.get(&name("text.chunk")).unwrap();
    assert_eq!(pin.version, version("0.10.0"));
    assert_eq!(
        pin.artifact_sha256,
        artifact.artifact_digest().to_sha256_hex()
    );
    assert_eq!(
        pin.manifest_sha256,
        artifact.manifest_digest().to_sha256_hex()
    );

    // Asking for a newer version moves the pin forward.
    f.resolve("text.chunk@1.0.0-beta.1").unwrap();
    let pin = f
        .registry
        .lockfile()
        .unwrap()
        .get(&name("text.chunk"))
        .cloned()
        .unwrap();
    assert_eq!(pin.version, version("1.0.0-beta.1"));
}

#[test]
fn republished_version_is_a_lock_mismatch() {
    let f = Fixture::new();
    f.publish("text.chunk", "0.1.0", &wasm("one"));
    f.resolve("text.chunk").unwrap();
    f.publish("text.chunk", "0.1.0", &wasm("changed"));
    f.check_err(f.resolve("text.chunk"), expect!["manifest of text.chunk@0.1.0 does not match the lockfile: found 01b612f702ab20f7669f8be7267c100981557aa206d93fc39f540e0dfdc1e84b, locked b0b49851a7d5a159bbb217fd55f94c3f10f1558a5cd7a2bd524a8de9e3c34be6 (the tool was re-published under the same version; if the change is expected, re-lock it with `Registry::lock_forced`)"]);
    let err = f
        .registry
        .lock(&name("text.chunk"), &version("0.1.0"))
        .unwrap_err();
    assert!(matches!(err, Error::LockMismatch { .. }), "{err:?}");
    f.registry
        .lock_forced(&name("text.chunk"), &version("0.1.0"))
        .unwrap();
    assert_eq!(
        f.resolve("text.chunk").unwrap().wasm().unwrap().to_vec(),
        wasm("changed")
    );
}

#[test]
fn corrupt_cache_entry_is_reinstalled() {
    let f = Fixture::new();
    let published = f.publish("text.chunk", "0.1.0", &wasm("chunk"));
    f.resolve("text.chunk").unwrap();
    let cached = f.cache_path(&published.artifact_digest);
    flip_byte(&cached, 3);
    assert_ne!(std::fs::read(&cached).unwrap(), wasm("chunk"));

    let artifact = f.resolve("text.chunk").unwrap();
    assert_eq!(artifact.wasm().unwrap().to_vec(), wasm("chunk"));
    assert_eq!(std::fs::read(&cached).unwrap(), wasm("chunk"));
}

#[test]
fn a_cache_entry_changed_after_its_version_was_recorded_is_hashed_again() {
    let f = Fixture::new();
    let published = f.publish("text.chunk", "0.1.0", &wasm("chunk"));
    let tool = "text.chunk".parse().unwrap();
    f.resolve("text.chunk").unwrap();
    let cached = f.cache_path(&published.artifact_digest);
    let record = cached.with_extension("verified");
    assert!(
        !record.exists(),
        "a version changed less than SETTLE ago is never recorded"
    );
    std::thread::sleep(locara_stamp::SETTLE + std::time::Duration::from_millis(100));
    assert_eq!(
        f.reopen().resolve(&tool).unwrap().wasm().unwrap().to_vec(),
        wasm("chunk")
    );
    assert!(
        record.exists(),
        "the settled version was hashed and recorded"
    );
    assert_eq!(
        f.reopen().resolve(&tool).unwrap().wasm().unwrap().to_vec(),
        wasm("chunk")
    );

    // Changed in place, to the same size, with its mtime put back: its ctime moved, so the
    // record no longer applies; the entry is hashed, found corrupt, and replaced by the
    // registry's verified copy.
    let mtime = std::fs::metadata(&cached).unwrap().modified().unwrap();
    flip_byte(&cached, 3);
    let file = std::fs::File::options().write(true).open(&cached).unwrap();
    file.set_modified(mtime).unwrap();
    drop(file);
    assert_eq!(
        std::fs::metadata(&cached).unwrap().modified().unwrap(),
        mtime
    );
    assert_eq!(
        f.reopen().resolve(&tool).unwrap().wasm().unwrap().to_vec(),
        wasm("chunk")
    );
    assert_eq!(std::fs::read(&cached).unwrap(), wasm("chunk"));

    // And with the registry's copy changed too, the tool is refused.
    flip_byte(&cached, 3);
    flip_byte(&published.artifact_path, 3);
    let err = f.reopen().resolve(&tool).unwrap_err();
    assert!(matches!(err, Error::HashMismatch { .. }), "{err:?}");
}

#[test]
fn a_recorded_cache_entry_is_read_only_when_its_bytes_are_asked_for() {
    let f = Fixture::new();
    let published = f.publish("text.chunk", "0.1.0", &wasm("chunk"));
    let tool = "text.chunk".parse().unwrap();
    let cached = f.cache_path(&published.artifact_digest);
    f.resolve("text.chunk").unwrap();
    std::thread::sleep(locara_stamp::SETTLE + std::time::Duration::from_millis(100));
    f.reopen().resolve(&tool).unwrap();
    assert!(cached.with_extension("verified").exists(), "recorded");

    // Verified without reading: with both copies gone, only asking for the bytes fails.
    let artifact = f.reopen().resolve(&tool).unwrap();
    let kept = (
        std::fs::read(&cached).unwrap(),
        std::fs::read(&published.artifact_path).unwrap(),
    );
    std::fs::remove_file(&cached).unwrap();
    std::fs::remove_file(&published.artifact_path).unwrap();
    let err = artifact.wasm().unwrap_err();
    assert!(
        matches!(&err, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound),
        "{err:?}"
    );
    std::fs::write(&published.artifact_path, &kept.1).unwrap();
    assert_eq!(
        artifact.wasm().unwrap().to_vec(),
        wasm("chunk"),
        "the entry gone, the registry's copy is read and checked"
    );

    // Restored, then changed after it was verified: the entry is hashed when read, found
    // changed, and the registry's copy is used; both changed, the bytes are refused.
    std::fs::write(&cached, &kept.0).unwrap();
    std::thread::sleep(locara_stamp::SETTLE + std::time::Duration::from_millis(100));
    f.reopen().resolve(&tool).unwrap();
    let artifact = f.reopen().resolve(&tool).unwrap();
    assert_eq!(
        artifact.wasm().unwrap().to_vec(),
        wasm("chunk"),
        "unchanged"
    );
    flip_byte(&cached, 3);
    assert_eq!(artifact.wasm().unwrap().to_vec(), wasm("chunk"));
    flip_byte(&published.artifact_path, 3);
    let err = artifact.wasm().unwrap_err();
    assert!(matches!(err, Error::HashMismatch { .. }), "{err:?}");
}

#[test]
fn corrupt_cache_entry_and_artifact_is_refused() {
    let f = Fixture::new();
    let published = f.publish("text.chunk", "0.1.0", &wasm("chunk"));
    f.resolve("text.chunk").unwrap();
    flip_byte(&f.cache_path(&published.artifact_digest), 3);
    flip_byte(&published.artifact_path, 3);
    let err = f.resolve("text.chunk").unwrap_err();
    assert!(matches!(err, Error::HashMismatch { .. }), "{err:?}");
    assert!(!f.cache_path(&published.artifact_digest).exists());
}

#[test]
fn good_cache_entry_is_served_even_if_the_registry_copy_is_gone() {
    let f = Fixture::new();
    let published = f.publish("text.chunk", "0.1.0", &wasm("chunk"));
    f.resolve("text.chunk").unwrap();
    std::fs::remove_file(&published.artifact_path).unwrap();
    assert_eq!(
        f.resolve("text.chunk").unwrap().wasm().unwrap().to_vec(),
        wasm("chunk")
    );
}

#[test]
fn unknown_tool_lists_what_is_available() {
    let f = Fixture::new();
    f.check_err(f.resolve("text.chunk"), expect!["tool `text.chunk` is not in the registry at `$TMP/registry`; it holds no tools (publish them with `cargo xtask build-tools`)"]);
    f.publish("text.chunk", "0.1.0", &wasm("one"));
    f.publish("text.split", "0.2.0", &wasm("two"));
    f.check_err(f.resolve("text.chunk@0.3.0"), expect!["tool `text.chunk@0.3.0` is not in the registry at `$TMP/registry`; available: text.chunk@0.1.0"]);
    f.check_err(f.resolve("text.nope"), expect!["tool `text.nope` is not in the registry at `$TMP/registry`; available: text.chunk@0.1.0, text.split@0.2.0"]);
}

#[test]
fn list_verifies_and_reports_rejections() {
    let f = Fixture::new();
    f.publish("text.chunk", "0.1.0", &wasm("one"));
    f.publish("text.chunk", "0.10.0", &wasm("ten"));
    f.publish("text.chunk", "0.2.0", &wasm("two"));
    let unsigned = f.publish("text.split", "0.1.0", &wasm("split"));
    std::fs::remove_file(&unsigned.signature_path).unwrap();
    f.publish_with("other.tool", "1.0.0", &wasm("other"), &key(2));
    std::fs::create_dir_all(f.dir.path().join("registry/tools/Bad.Name/0.1.0")).unwrap();
    std::fs::create_dir_all(f.dir.path().join("registry/tools/.tmp")).unwrap();

    let listing = f.registry.list().unwrap();
    let tools: Vec<String> = listing
        .tools
        .iter()
        .map(|t| format!("{}@{} {}", t.id, t.version, t.manifest.display_name))
        .collect();
    let rejected: Vec<String> = listing
        .rejected
        .iter()
        .map(|r| {
            let path = r.path.strip_prefix(f.dir.path()).unwrap().display();
            format!("{path}: {}", f.render(&r.error))
        })
        .collect();
    expect![[r#"
        (
            [
                "text.chunk@0.1.0 Test tool",
                "text.chunk@0.2.0 Test tool",
                "text.chunk@0.10.0 Test tool",
            ],
            [
                "registry/tools/Bad.Name: invalid registry directory `$TMP/registry/tools/Bad.Name`: invalid tool name `Bad.Name`: character 'B' is not allowed (a tool name is one or more dot-separated segments, each a lowercase ascii letter or digit followed by lowercase ascii letters, digits, `_` or `-`, at most 64 characters in total, e.g. `text.chunk` or `bash.read-only`)",
                "registry/tools/other.tool/1.0.0: other.tool@1.0.0 is signed by ed25519:6a3803d5f059902a, which is not in the trust store; if you trust its publisher, add their `*.pub.json` file to the trust directory",
                "registry/tools/text.split/0.1.0: text.split@0.1.0 is unsigned: `$TMP/registry/tools/text.split/0.1.0/manifest.sig.json` does not exist (publish it with `cargo xtask build-tools` or `Registry::publish`, which sign the manifest)",
            ],
        )
    "#]].assert_debug_eq(&(tools, rejected));
}

#[test]
fn list_of_an_empty_registry_is_empty() {
    let f = Fixture::new();
    let listing = f.registry.list().unwrap();
    assert!(listing.tools.is_empty() && listing.rejected.is_empty());
}

#[test]
fn custom_tool_is_verified_from_paths() {
    let f = Fixture::new();
    let app = f.dir.path().join("app/tools");
    std::fs::create_dir_all(&app).unwrap();
    let wasm = wasm("custom");
    let manifest = prepare_manifest(&template("app.custom", "0.1.0"), &wasm).unwrap();
    let manifest_bytes = manifest.to_json_pretty();
    let signature = sign_manifest(manifest_bytes.as_bytes(), &f.key);
    std::fs::write(app.join("manifest.json"), &manifest_bytes).unwrap();
    std::fs::write(app.join("manifest.sig.json"), signature.to_json_pretty()).unwrap();
    std::fs::write(app.join("custom.wasm"), &wasm).unwrap();

    let verify = || {
        f.registry.verify_path(
            &app.join("manifest.json"),
            &app.join("manifest.sig.json"),
            &app.join("custom.wasm"),
        )
    };
    let artifact = verify().unwrap();
    assert_eq!(artifact.wasm().unwrap().to_vec(), wasm);
    assert_eq!(artifact.tool_ref().to_string(), "app.custom@0.1.0");

    std::fs::remove_file(app.join("manifest.sig.json")).unwrap();
    f.check_err(verify(), expect!["custom tool `$TMP/app/tools/manifest.json` is unsigned: `$TMP/app/tools/manifest.sig.json` does not exist (publish it with `cargo xtask build-tools` or `Registry::publish`, which sign the manifest)"]);
}

#[test]
fn publish_refuses_a_manifest_that_does_not_pin_the_wasm() {
    let f = Fixture::new();
    let manifest = prepare_manifest(&template("text.chunk", "0.1.0"), &wasm("one")).unwrap();
    let err = f
        .registry
        .publish(&manifest, &wasm("two"), &f.key)
        .unwrap_err();
    expect!["cannot publish text.chunk@0.1.0: the manifest's `artifact.sha256` is 0b81d9d17005e88ad0ae5bc027ba4112db70561bef5813814bd3fdc700e1122c, but the wasm gives ea7ccd4339fd0cda60a84a55090fe30b2421c2013e6bee7d3b5abcb3820c016f; build the manifest with `prepare_manifest` so it pins these bytes"].assert_eq(&f.render(&err));
    let err = f
        .registry
        .publish(&manifest, &wasm("one!"), &f.key)
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::PublishMismatch {
                field: "sha256",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn prepare_manifest_reports_template_errors() {
    let f = Fixture::new();
    let template = template("text.chunk", "0.1.0").replace("\"license\"", "\"licence\"");
    let err = prepare_manifest(&template, &wasm("one")).unwrap_err();
    expect!["invalid template passed to `prepare_manifest`: invalid tool manifest template at line 7, column 11: unknown field `licence`, expected one of `schema_version`, `id`, `version`, `display_name`, `description`, `license`, `interpreter`, `model_dependencies`, `capability_requirements`, `wasi_imports`, `safety_tier`, `limits`, `input_schema`, `output_schema`"].assert_eq(&f.render(&err));
}

#[test]
fn lock_without_a_lockfile_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::new(RegistryConfig::new(dir.path())).unwrap();
    let err = registry.lock(&name("a"), &version("1.0.0")).unwrap_err();
    expect![
        "no lockfile is configured; set one with `RegistryConfig::with_lockfile` before locking"
    ]
    .assert_eq(&err.to_string());
}

#[test]
fn malformed_lockfile_is_reported_with_its_path() {
    let f = Fixture::new();
    std::fs::write(f.dir.path().join("locara.lock.json"), r#"{"version": 2}"#).unwrap();
    let err = Registry::new(Fixture::config(f.dir.path(), &f.key)).unwrap_err();
    expect!["invalid lockfile `$TMP/locara.lock.json`: unsupported lockfile version 2, expected 1"]
        .assert_eq(&f.render(&err));
}

#[test]
fn key_files_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let key = generate_keypair("locara").unwrap();
    let secret = dir.path().join("keys/locara.key.json");
    key.write_file(&secret).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&secret).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let err = key.write_file(&secret).unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Io {
                action: "create",
                ..
            }
        ),
        "{err:?}"
    );

    let read = SigningKey::read_file(&secret).unwrap();
    assert_eq!(read.key_id(), key.key_id());
    assert_eq!(read.publisher(), "locara");

    let trust_dir = dir.path().join("trust");
    key.public_key()
        .write_file(&trust_dir.join("locara.pub.json"))
        .unwrap();
    key2_public()
        .write_file(&trust_dir.join("other.pub.json"))
        .unwrap();
    std::fs::write(trust_dir.join("README.md"), "not a key").unwrap();
    let trust = TrustStore::load_dir(&trust_dir).unwrap();
    assert_eq!(trust.len(), 2);
    assert_eq!(trust.get(key.key_id()), Some(key.public_key()));

    // Signatures made by the loaded key verify against the loaded trust store.
    let signature = sign_manifest(b"{}", &read);
    assert_eq!(
        verify_manifest(b"{}", &signature, &trust).unwrap(),
        *key.key_id()
    );
    let err = verify_manifest(b"{ }", &signature, &trust).unwrap_err();
    assert!(matches!(err, Error::BadSignature { .. }), "{err:?}");
}

fn key2_public() -> PublicKey {
    key(2).public_key().clone()
}

#[test]
fn key_file_formats() {
    let key = key(1);
    expect![[r#"
        {
          "publisher": "publisher-1",
          "key_id": "ed25519:34750f98bd59fcfc",
          "public_key": "8a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c"
        }
    "#]]
    .assert_eq(&key.public_key().to_json_pretty());
    expect![[
        r#"SigningKey { publisher: "publisher-1", key_id: KeyId("ed25519:34750f98bd59fcfc"), .. }"#
    ]]
    .assert_eq(&format!("{key:?}"));
    let public = PublicKey::from_json(&key.public_key().to_json_pretty()).unwrap();
    assert_eq!(&public, key.public_key());
    let from_secret = SigningKey::from_json(&key.to_json_pretty()).unwrap();
    assert_eq!(from_secret.public_key(), key.public_key());

    let tampered = key
        .public_key()
        .to_json_pretty()
        .replace(key.key_id().as_str(), "ed25519:0000000000000000");
    expect!["key id mismatch in public key file: the file says ed25519:0000000000000000, but its key is ed25519:34750f98bd59fcfc (the file was edited by hand; regenerate or restore it)"].assert_eq(&PublicKey::from_json(&tampered).unwrap_err().to_string());
    expect![
        "malformed public key file: `public_key` must be 64 hex characters: Invalid string length"
    ]
    .assert_eq(
        &PublicKey::from_json(r#"{"publisher": "x", "key_id": "k", "public_key": "zz"}"#)
            .unwrap_err()
            .to_string(),
    );
    expect![[
        r#"invalid publisher name "": it must be non-empty and contain no control characters"#
    ]]
    .assert_eq(&SigningKey::from_seed("", &[0; 32]).unwrap_err().to_string());
}

#[test]
fn signature_file_format() {
    let key = key(1);
    let signature = sign_manifest(b"manifest", &key);
    let parsed = ManifestSignature::from_json(&signature.to_json_pretty()).unwrap();
    assert_eq!(parsed, signature);
    let other = signature.to_json_pretty().replace("\"ed25519\"", "\"rsa\"");
    expect!["malformed signature file: unsupported algorithm `rsa`, expected `ed25519`"].assert_eq(
        &ManifestSignature::from_json(&other)
            .unwrap_err()
            .to_string(),
    );
    expect!["malformed signature file: invalid key id `k`: expected `ed25519:` followed by 16 lowercase hex characters"].assert_eq(
        &ManifestSignature::from_json(r#"{"key_id": "k", "algorithm": "ed25519", "signature": ""}"#)
            .unwrap_err()
            .to_string(),
    );
}

#[test]
fn digests() {
    let digest = Digest::of(b"abc");
    expect!["ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"]
        .assert_eq(&digest.to_string());
    assert_eq!(digest.to_hex().parse::<Digest>().unwrap(), digest);
    assert_eq!(Digest::from(&digest.to_sha256_hex()), digest);
    expect!["invalid sha256 digest `ABC`: expected 64 lowercase hex characters"]
        .assert_eq(&"ABC".parse::<Digest>().unwrap_err().to_string());
}

#[test]
fn manifest_round_trip_through_publish_is_byte_exact() {
    let f = Fixture::new();
    let published = f.publish("text.chunk", "0.1.0", &wasm("chunk"));
    let bytes = std::fs::read_to_string(&published.manifest_path).unwrap();
    let manifest = ToolManifest::from_json(&bytes).unwrap();
    assert_eq!(manifest.to_json_pretty(), bytes);
}

/// Runs `check` on a thread of its own and fails the test when it has not returned within
/// 20 s: a read that blocks on a FIFO must fail the test, not hang the suite.
fn quickly<T: Send + 'static>(what: &str, check: impl FnOnce() -> T + Send + 'static) -> T {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || send.send(check()));
    receive
        .recv_timeout(std::time::Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("{what} did not return within 20 s ({e}): it blocked"))
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[cfg(unix)]
fn link_to_dev_zero(path: &Path) {
    let _ = std::fs::remove_file(path);
    std::os::unix::fs::symlink("/dev/zero", path).unwrap();
}

/// What replaces a home file in the hostile-file tests.
#[cfg(unix)]
#[derive(Clone, Copy, Debug)]
enum Hostile {
    Fifo,
    DevZero,
}

#[cfg(unix)]
impl Hostile {
    const ALL: [Hostile; 2] = [Hostile::Fifo, Hostile::DevZero];

    fn put(self, path: &Path) {
        match self {
            Hostile::Fifo => mkfifo(path),
            Hostile::DevZero => link_to_dev_zero(path),
        }
    }

    /// The kind the error names.
    fn kind(self) -> &'static str {
        match self {
            Hostile::Fifo => "FIFO (named pipe)",
            Hostile::DevZero => "character device",
        }
    }
}

#[cfg(unix)]
#[test]
fn a_fifo_or_dev_zero_in_place_of_a_registry_file_is_refused_quickly() {
    for hostile in Hostile::ALL {
        for file in [
            "manifest.json",
            "manifest.sig.json",
            "text.chunk-0.1.0.wasm",
        ] {
            let f = Fixture::new();
            let published = f.publish("text.chunk", "0.1.0", &wasm("chunk"));
            let path = published.manifest_path.with_file_name(file);
            hostile.put(&path);
            let registry = f.reopen();
            let err = quickly(
                &format!("resolving with a {hostile:?} as {file}"),
                move || registry.resolve(&"text.chunk".parse().unwrap()),
            )
            .unwrap_err();
            assert_eq!(
                f.render(&err),
                format!(
                    "refusing to read `$TMP/registry/tools/text.chunk/0.1.0/{file}`: it is a {}, not a regular file (Locara reads only regular files from its home; a FIFO could block it forever and a device such as /dev/zero never ends); replace it with the file that belongs there",
                    hostile.kind()
                )
            );
            // `list` reads manifests and signatures too: the entry is rejected, not waited on.
            if file != "text.chunk-0.1.0.wasm" {
                let registry = f.reopen();
                let listing = quickly("listing", move || registry.list().unwrap());
                assert!(
                    matches!(
                        listing.rejected[..],
                        [RejectedEntry {
                            error: Error::NotARegularFile { .. },
                            ..
                        }]
                    ),
                    "{listing:?}"
                );
            }
        }
    }
}

#[cfg(unix)]
#[test]
fn a_fifo_or_dev_zero_in_place_of_a_key_trust_file_or_lockfile_is_refused_quickly() {
    for hostile in Hostile::ALL {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_owned();
        let path = root.join("k.secret.json");
        hostile.put(&path);
        let err = quickly("reading a secret key", move || {
            SigningKey::read_file(&path).unwrap_err()
        });
        assert!(
            matches!(err, Error::NotARegularFile { kind, .. } if kind == hostile.kind()),
            "{err:?}"
        );

        let path = root.join("k.pub.json");
        hostile.put(&path);
        let err = quickly("reading a public key", move || {
            PublicKey::read_file(&path).unwrap_err()
        });
        assert!(matches!(err, Error::NotARegularFile { .. }), "{err:?}");

        // A trust directory with a hostile key file, then with a hostile revocation list.
        let trust = root.join("trust");
        std::fs::create_dir_all(&trust).unwrap();
        hostile.put(&trust.join("evil.pub.json"));
        let dir_ = trust.clone();
        let err = quickly("loading the trust store", move || {
            TrustStore::load_dir(&dir_).unwrap_err()
        });
        assert!(matches!(err, Error::NotARegularFile { .. }), "{err:?}");
        std::fs::remove_file(trust.join("evil.pub.json")).unwrap();
        hostile.put(&trust.join("revoked.json"));
        let dir_ = trust.clone();
        let err = quickly("loading the revocation list", move || {
            TrustStore::load_dir(&dir_).unwrap_err()
        });
        assert!(matches!(err, Error::NotARegularFile { .. }), "{err:?}");

        let lockfile = root.join("locara.lock");
        hostile.put(&lockfile);
        let config = RegistryConfig::new(root.join("registry")).with_lockfile(&lockfile);
        let err = quickly("opening a registry", move || {
            Registry::new(config).unwrap_err()
        });
        assert!(matches!(err, Error::NotARegularFile { .. }), "{err:?}");
    }
}

#[cfg(unix)]
#[test]
fn a_fifo_or_dev_zero_in_the_cache_is_replaced_by_the_verified_bytes() {
    for hostile in Hostile::ALL {
        let f = Fixture::new();
        let published = f.publish("text.chunk", "0.1.0", &wasm("chunk"));
        f.resolve("text.chunk").unwrap();
        let entry = f.cache_path(&published.artifact_digest);
        hostile.put(&entry);
        let registry = f.reopen();
        let artifact = quickly("resolving from a hostile cache", move || {
            registry.resolve(&"text.chunk".parse().unwrap()).unwrap()
        });
        assert_eq!(artifact.wasm().unwrap().to_vec(), wasm("chunk"));
        assert_eq!(std::fs::read(&entry).unwrap(), wasm("chunk"));
    }
}

#[test]
fn home_files_are_read_up_to_a_bound() {
    let f = Fixture::new();
    let published = f.publish("text.chunk", "0.1.0", &wasm("chunk"));

    // An artifact far larger than the signed size is refused by its size, without reading it:
    // a sparse 8 GiB file takes no disk and, read whole, would take 8 GiB of memory.
    let artifact = std::fs::File::create(&published.artifact_path).unwrap();
    artifact.set_len(8 << 30).unwrap();
    drop(artifact);
    let registry = f.reopen();
    let err = quickly("resolving an 8 GiB artifact", move || {
        registry
            .resolve(&"text.chunk".parse().unwrap())
            .unwrap_err()
    });
    expect!["artifact size mismatch for text.chunk@0.1.0: found 8589934592 bytes, expected 13 (the artifact was modified after signing; rebuild with `cargo xtask build-tools` or reinstall)"].assert_eq(&f.render(&err));

    // A manifest over 1 MiB is not a manifest Locara wrote.
    let mut big = std::fs::read(&published.manifest_path).unwrap();
    big.resize(1024 * 1024 + 1, b' ');
    std::fs::write(&published.manifest_path, big).unwrap();
    f.check_err(f.resolve("text.chunk"), expect!["refusing to read `$TMP/registry/tools/text.chunk/0.1.0/manifest.json`: it is larger than 1048576 bytes, the most a manifest may be here; it is not a file Locara wrote: replace it with the file that belongs there"]);

    // The public helper applies the same rules to the files callers read themselves.
    let path = f.dir.path().join("notes.json");
    std::fs::write(&path, "12345").unwrap();
    let limit = crate::ReadLimit::new("note", 4);
    assert!(matches!(
        crate::read_bounded(&path, limit),
        Err(Error::FileTooLarge { limit: 4, .. })
    ));
    assert_eq!(
        crate::read_bounded_to_string(&path, crate::ReadLimit::new("note", 5)).unwrap(),
        "12345"
    );
    let err = crate::read_bounded(f.dir.path(), limit).unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotARegularFile {
                kind: "directory",
                ..
            }
        ),
        "{err:?}"
    );
}

#[cfg(unix)]
#[test]
fn secret_keys_are_created_owner_only_and_refused_when_others_can_reach_them() {
    use std::os::unix::fs::PermissionsExt as _;

    let dir = tempfile::tempdir().unwrap();
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let chmod = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    let key = key(3);
    let secret = dir.path().join("home/keys/publisher-3.secret.json");
    key.write_file(&secret).unwrap();
    assert_eq!(mode(&dir.path().join("home/keys")), 0o700);
    assert_eq!(mode(&secret), 0o600);
    // The home above it was made as usual, not private.
    assert_eq!(mode(&dir.path().join("home")) & 0o700, 0o700);

    // An existing directory is left as it is (it may be the current directory of `keygen`).
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    chmod(&shared, 0o755);
    key.write_file(&shared.join("k.secret.json")).unwrap();
    assert_eq!(mode(&shared), 0o755);
    assert_eq!(mode(&shared.join("k.secret.json")), 0o600);

    chmod(&secret, 0o640);
    let err = SigningKey::read_file(&secret).unwrap_err();
    let text = err
        .to_string()
        .replace(&dir.path().display().to_string(), "$TMP");
    expect!["refusing to use the secret key file `$TMP/home/keys/publisher-3.secret.json`: its mode is 0640, so users other than its owner can reach it; run `chmod 600 $TMP/home/keys/publisher-3.secret.json`, and if anyone else could have read it, treat the key as leaked: make a new key and revoke this one (see docs/keys.md)"].assert_eq(&text);
    chmod(&secret, 0o604);
    assert!(matches!(
        SigningKey::read_file(&secret),
        Err(Error::SecretKeyExposed { mode: 0o604, .. })
    ));
    chmod(&secret, 0o400);
    assert_eq!(
        SigningKey::read_file(&secret).unwrap().key_id(),
        key.key_id()
    );
}

#[test]
fn a_revoked_key_is_never_trusted_even_with_its_key_file_in_the_trust_directory() {
    let f = Fixture::new();
    f.publish("text.chunk", "0.1.0", &wasm("chunk"));
    let trust_dir = f.dir.path().join("trust");
    f.key
        .public_key()
        .write_file(&trust_dir.join("publisher-1.pub.json"))
        .unwrap();
    key2_public()
        .write_file(&trust_dir.join("publisher-2.pub.json"))
        .unwrap();
    let config = |trust| {
        RegistryConfig::new(f.dir.path().join("registry"))
            .with_cache_dir(f.dir.path().join("cache"))
            .with_trust(trust)
    };
    let trust = TrustStore::load_dir(&trust_dir).unwrap();
    assert!(trust.revocations().next().is_none());
    Registry::new(config(trust.clone()))
        .unwrap()
        .resolve(&"text.chunk".parse().unwrap())
        .unwrap();

    let mut trust = trust;
    trust.revoke(
        Revocation::of_key(f.key.public_key())
            .with_reason("laptop stolen")
            .with_revoked_at("2025-01-02T03:04:05Z"),
    );
    // Revoking by id alone is enough, and a later revocation of the same key replaces it.
    trust.revoke(Revocation::new(key2_public().key_id().clone()));
    let written = trust.write_revocations(&trust_dir).unwrap();
    assert_eq!(written, trust_dir.join(crate::REVOCATION_FILE));
    expect![[r#"
        {
          "revoked": [
            {
              "key_id": "ed25519:34750f98bd59fcfc",
              "publisher": "publisher-1",
              "public_key": "8a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c",
              "reason": "laptop stolen",
              "revoked_at": "2025-01-02T03:04:05Z"
            },
            {
              "key_id": "ed25519:6a3803d5f059902a"
            }
          ]
        }
    "#]]
    .assert_eq(&std::fs::read_to_string(&written).unwrap());

    // Loaded back: both key files are still there, neither key is trusted.
    let trust = TrustStore::load_dir(&trust_dir).unwrap();
    assert_eq!(trust.listed_keys().count(), 2);
    assert_eq!(trust.len(), 0);
    assert!(trust.is_empty());
    assert!(trust.get(f.key.key_id()).is_none());
    assert_eq!(
        trust.revocation(f.key.key_id()).unwrap().reason.as_deref(),
        Some("laptop stolen")
    );
    let registry = Registry::new(config(trust.clone())).unwrap();
    let err = registry
        .resolve(&"text.chunk".parse().unwrap())
        .unwrap_err();
    expect!["text.chunk@0.1.0 is signed by ed25519:34750f98bd59fcfc, which was revoked on 2025-01-02T03:04:05Z (laptop stolen): a revoked key is never trusted, even while its `.pub.json` is still in the trust directory; ask the publisher for a copy signed by their new key, or, if the revocation was a mistake, remove it from `trust/revoked.json` (see docs/keys.md)"].assert_eq(&f.render(&err));
    let listing = registry.list().unwrap();
    assert!(listing.tools.is_empty());
    assert!(
        matches!(
            listing.rejected[..],
            [RejectedEntry {
                error: Error::RevokedKey { .. },
                ..
            }]
        ),
        "{listing:?}"
    );
    // Adding the key again in code does not trust it either.
    let trust = trust.with_key(f.key.public_key().clone());
    let signature = sign_manifest(b"{}", &f.key);
    assert!(matches!(
        verify_manifest(b"{}", &signature, &trust),
        Err(Error::RevokedKey { .. })
    ));
    // A key revoked without being trusted is named as revoked, not as unknown.
    let stranger = TrustStore::new().with_revocation(Revocation::new(f.key.key_id().clone()));
    let err = verify_manifest(b"{}", &signature, &stranger).unwrap_err();
    expect!["manifest is signed by ed25519:34750f98bd59fcfc, which was revoked: a revoked key is never trusted, even while its `.pub.json` is still in the trust directory; ask the publisher for a copy signed by their new key, or, if the revocation was a mistake, remove it from `trust/revoked.json` (see docs/keys.md)"].assert_eq(&err.to_string());
}

#[test]
fn a_malformed_revocation_list_fails_the_whole_trust_store() {
    let dir = tempfile::tempdir().unwrap();
    key(1)
        .public_key()
        .write_file(&dir.path().join("publisher-1.pub.json"))
        .unwrap();
    let load = |json: &str| {
        std::fs::write(dir.path().join("revoked.json"), json).unwrap();
        TrustStore::load_dir(dir.path())
            .unwrap_err()
            .to_string()
            .replace(&dir.path().display().to_string(), "$TMP")
    };
    expect!["malformed revocation list `$TMP/revoked.json`: invalid key id `ed25519:XYZ`: expected `ed25519:` followed by 16 lowercase hex characters"].assert_eq(&load(r#"{"revoked": [{"key_id": "ed25519:XYZ"}]}"#));
    // A public key that is not the key the id names.
    let other = hex::encode(key(2).public_key().to_bytes());
    expect!["key id mismatch in revocation list `$TMP/revoked.json`: the file says ed25519:34750f98bd59fcfc, but its key is ed25519:6a3803d5f059902a (the file was edited by hand; regenerate or restore it)"].assert_eq(&load(&format!(
        r#"{{"revoked": [{{"key_id": "ed25519:34750f98bd59fcfc", "public_key": "{other}"}}]}}"#
    )));
    expect!["malformed revocation list `$TMP/revoked.json`: unknown field `why`, expected one of `key_id`, `publisher`, `public_key`, `reason`, `revoked_at` at line 1 column 57"].assert_eq(&load(r#"{"revoked": [{"key_id": "ed25519:34750f98bd59fcfc", "why": "x"}]}"#));
}

#[test]
fn receipt_errors_name_the_receipt_and_a_revoked_host_key() {
    let host = key(4);
    let signed = crate::SignedReceipt::sign(serde_json::json!({"tool": "text.chunk@0.1.0"}), &host);
    let trust = TrustStore::new().with_key(host.public_key().clone());
    assert_eq!(signed.verify(&trust).unwrap(), *host.key_id());

    let mut changed = signed.clone();
    changed.receipt["tool"] = serde_json::json!("text.chunk@9.9.9");
    expect!["the receipt's signature by ed25519:c5b940ed3f65c391 does not verify: the receipt was changed after it was signed, or it was not signed by that key; do not rely on anything it says"].assert_eq(&changed.verify(&trust).unwrap_err().to_string());

    let other = TrustStore::new().with_key(key2_public());
    expect!["the receipt is signed by key ed25519:c5b940ed3f65c391, which is not the host key it was checked against; check it with the public key of the host that wrote it"].assert_eq(&signed.verify(&other).unwrap_err().to_string());

    let revoked = trust.with_revocation(
        Revocation::new(host.key_id().clone()).with_revoked_at("2025-01-02T03:04:05Z"),
    );
    expect!["the receipt is signed by key ed25519:c5b940ed3f65c391, which was revoked on 2025-01-02T03:04:05Z: do not rely on anything it says (a revoked host key may have signed it after it leaked)"].assert_eq(&signed.verify(&revoked).unwrap_err().to_string());
}

/// A second, empty registry (its own directory, lockfile and cache) trusting `key`.
fn other_registry(key: &SigningKey) -> (tempfile::TempDir, Registry) {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::new(Fixture::config(dir.path(), key)).unwrap();
    (dir, registry)
}

#[test]
fn files_installed_elsewhere_resolve_there_and_are_pinned() {
    let fixture = Fixture::new();
    fixture.publish("text.echo", "1.2.0", &wasm("echo"));
    let files = fixture
        .registry
        .files(&name("text.echo"), &version("1.2.0"))
        .unwrap();
    assert_eq!(files.wasm, wasm("echo"));

    let (dir, other) = other_registry(&fixture.key);
    let installed = other.install(&files, "a test").unwrap();
    assert_eq!(
        std::fs::read(&installed.manifest_path).unwrap(),
        files.manifest
    );
    let artifact = other.resolve(&"text.echo".parse().unwrap()).unwrap();
    assert_eq!(artifact.wasm().unwrap().to_vec(), wasm("echo"));
    let lock = std::fs::read_to_string(dir.path().join("locara.lock.json")).unwrap();
    assert!(lock.contains("\"version\": \"1.2.0\""), "{lock}");
    // The same files again change nothing.
    other.install(&files, "a test").unwrap();
}

#[test]
fn files_that_fail_verification_write_nothing() {
    let fixture = Fixture::new();
    fixture.publish("text.echo", "1.2.0", &wasm("echo"));
    let files = fixture
        .registry
        .files(&name("text.echo"), &version("1.2.0"))
        .unwrap();
    let (dir, other) = other_registry(&fixture.key);

    let mut tampered = files.clone();
    tampered.wasm = wasm("evil!");
    let error = other.install(&tampered, "a test").unwrap_err();
    assert!(matches!(error, Error::SizeMismatch { .. }), "{error}");
    tampered.wasm = wasm("ohce");
    let error = other.install(&tampered, "a test").unwrap_err();
    assert!(matches!(error, Error::HashMismatch { .. }), "{error}");

    let mut forged = files.clone();
    forged.manifest = String::from_utf8(files.manifest.clone())
        .unwrap()
        .replace("A tool for tests.", "A tool for tests!")
        .into_bytes();
    let error = other.install(&forged, "a test").unwrap_err();
    assert!(matches!(error, Error::BadSignature { .. }), "{error}");

    let (_, stranger) = other_registry(&key(9));
    let error = stranger.install(&files, "a test").unwrap_err();
    assert!(matches!(error, Error::UnknownKey { .. }), "{error}");

    assert!(!dir.path().join("registry").exists());
    assert!(!dir.path().join("cache").exists());
    assert!(!dir.path().join("locara.lock.json").exists());
}

#[test]
fn install_keeps_the_lockfile_rules_and_never_replaces_a_version() {
    let fixture = Fixture::new();
    fixture.publish("text.echo", "1.0.0", &wasm("one"));
    fixture.publish("text.echo", "2.0.0", &wasm("two"));
    let one = fixture
        .registry
        .files(&name("text.echo"), &version("1.0.0"))
        .unwrap();
    let two = fixture
        .registry
        .files(&name("text.echo"), &version("2.0.0"))
        .unwrap();
    let (_dir, other) = other_registry(&fixture.key);
    other.install(&two, "a test").unwrap();
    let error = other.install(&one, "a test").unwrap_err();
    assert!(matches!(error, Error::Rollback { .. }), "{error}");

    // The same version, signed again over other bytes: refused, the installed one stays.
    let republished = Fixture::new();
    republished.publish("text.echo", "2.0.0", &wasm("two, again"));
    let other_two = republished
        .registry
        .files(&name("text.echo"), &version("2.0.0"))
        .unwrap();
    let error = other.install(&other_two, "a test").unwrap_err();
    assert!(matches!(error, Error::LockMismatch { .. }), "{error}");
    let (_dir, unlocked) = {
        let dir = tempfile::tempdir().unwrap();
        let config = RegistryConfig::new(dir.path().join("registry"))
            .with_cache_dir(dir.path().join("cache"))
            .with_trust(TrustStore::new().with_key(fixture.key.public_key().clone()));
        let registry = Registry::new(config).unwrap();
        (dir, registry)
    };
    unlocked.install(&two, "a test").unwrap();
    let error = unlocked.install(&other_two, "a test").unwrap_err();
    assert!(matches!(error, Error::AlreadyInstalled { .. }), "{error}");
    let kept = unlocked
        .resolve(&"text.echo@2.0.0".parse().unwrap())
        .unwrap();
    assert_eq!(kept.wasm().unwrap().to_vec(), wasm("two"));
}
