//! Builds every guest module (the built-in tools and the adversarial probe) for
//! `wasm32-wasip1` from source, so that `cargo test` never depends on committed wasm or on a
//! step someone forgot to run. This is the pattern of Wasmtime's `test-programs/artifacts`.
//!
//! The nested cargo uses its own target dir (`guests/` inside the target dir), the same one
//! `cargo xtask build-tools` uses, so the guests are compiled once for both.

use std::{
    env,
    fmt::Write as _,
    path::{Path, PathBuf},
    process::Command,
};

const TARGET: &str = "wasm32-wasip1";
const PROFILE: &str = "tools";

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir
        .parent()
        .and_then(Path::parent)
        .expect("crates/<this> is two levels below the root");
    let target_dir = guest_target_dir(root);
    for dir in [
        "crates/locara-tools-builtin",
        "crates/locara-test-guests",
        "crates/locara-pdk",
        "crates/locara-pdk-macros",
        "vendor",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    // The lockfile pins the guests' dependencies; the root manifest holds the `tools` profile
    // they are built with, and `.cargo/config.toml` their target features (`simd128`).
    for file in ["Cargo.lock", "Cargo.toml", ".cargo/config.toml"] {
        println!("cargo:rerun-if-changed={}", root.join(file).display());
    }

    ensure_target();
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args([
            "build",
            "--locked",
            "--target",
            TARGET,
            "--profile",
            PROFILE,
        ])
        .args(["-p", "locara-tools-builtin", "-p", "locara-test-guests"])
        .env("CARGO_TARGET_DIR", &target_dir);
    // A clippy or coverage run wraps rustc for the workspace; the guests are built plainly.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_MAKEFLAGS",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd
        .status()
        .expect("could not run cargo to build the guest modules");
    assert!(
        status.success(),
        "building the guest modules for {TARGET} failed (see the output above)"
    );

    let out_dir = target_dir.join(TARGET).join(PROFILE);
    let manifests = root.join("crates/locara-tools-builtin/manifests");
    let mut tools: Vec<String> = std::fs::read_dir(&manifests)
        .expect("the built-in tools' manifest templates")
        .filter_map(|e| {
            e.ok()?
                .file_name()
                .to_str()?
                .strip_suffix(".json")
                .map(str::to_owned)
        })
        .collect();
    tools.sort();
    // Tools whose module is an upstream interpreter have no bin: `TestHome` fetches them.
    let is_interpreter = |id: &String| {
        let text = std::fs::read_to_string(manifests.join(format!("{id}.json")))
            .expect("a readable manifest template");
        let value: serde_json::Value =
            serde_json::from_str(&text).expect("a manifest template is JSON");
        value.get("interpreter").is_some()
    };
    let (upstream, tools): (Vec<String>, Vec<String>) = tools.into_iter().partition(is_interpreter);

    let mut code = String::new();
    writeln!(code, "/// Where the adversarial probe guest was built.").unwrap();
    writeln!(
        code,
        "pub const PROBE: &str = {:?};",
        out_dir.join("locara-probe.wasm").display().to_string()
    )
    .unwrap();
    writeln!(
        code,
        "/// The probe's manifest template.\npub const PROBE_MANIFEST: &str = {:?};",
        root.join("crates/locara-test-guests/manifests/test.probe.json")
            .display()
            .to_string()
    )
    .unwrap();
    writeln!(
        code,
        "/// Where `test.shout`, the guest written with `locara-pdk`, was built.\npub const PDK_SHOUT: &str = {:?};\n/// `test.shout`'s manifest template.\npub const PDK_SHOUT_MANIFEST: &str = {:?};",
        out_dir.join("pdk-shout.wasm").display().to_string(),
        root.join("crates/locara-test-guests/manifests/test.shout.json")
            .display()
            .to_string()
    )
    .unwrap();
    writeln!(
        code,
        "/// Where `test.state`, the guest that uses `kv`, `progress` and random numbers, was built.\npub const PDK_STATE: &str = {:?};\n/// `test.state`'s manifest template.\npub const PDK_STATE_MANIFEST: &str = {:?};",
        out_dir.join("pdk-state.wasm").display().to_string(),
        root.join("crates/locara-test-guests/manifests/test.state.json")
            .display()
            .to_string()
    )
    .unwrap();
    writeln!(
        code,
        "/// The directory holding the built-in tools' manifest templates."
    )
    .unwrap();
    writeln!(
        code,
        "pub const MANIFESTS_DIR: &str = {:?};",
        manifests.display().to_string()
    )
    .unwrap();
    writeln!(
        code,
        "/// Every built-in tool as `(id, wasm path, manifest template path)`."
    )
    .unwrap();
    writeln!(code, "pub const TOOLS: &[(&str, &str, &str)] = &[").unwrap();
    for id in &tools {
        let wasm = out_dir.join(format!("{}.wasm", id.replace('.', "-")));
        assert!(
            wasm.is_file(),
            "tool {id} has a manifest template but no bin `{}`",
            id.replace('.', "-")
        );
        let manifest = manifests.join(format!("{id}.json"));
        writeln!(
            code,
            "    ({id:?}, {:?}, {:?}),",
            wasm.display().to_string(),
            manifest.display().to_string()
        )
        .unwrap();
    }
    writeln!(code, "];").unwrap();
    writeln!(
        code,
        "/// Every built-in tool whose module is an upstream interpreter, as `(id, manifest template path)`;\n/// see `TestHome::publish_upstream_tool`."
    )
    .unwrap();
    writeln!(code, "pub const UPSTREAM_TOOLS: &[(&str, &str)] = &[").unwrap();
    for id in &upstream {
        let manifest = manifests.join(format!("{id}.json"));
        writeln!(code, "    ({id:?}, {:?}),", manifest.display().to_string()).unwrap();
    }
    writeln!(code, "];").unwrap();
    writeln!(
        code,
        "/// A compiled-module cache shared by every test process (see `LocaraConfig::with_compiled_cache`).\npub const SHARED_COMPILED_CACHE: &str = {:?};",
        target_dir.join("compiled-cache").display().to_string()
    )
    .unwrap();
    writeln!(code, "/// Calls `$m!(test_name, \"tool.id\")` for every built-in tool, so that a tool without a test").unwrap();
    writeln!(code, "/// fails to compile where the tests match on it.").unwrap();
    writeln!(
        code,
        "#[macro_export]\nmacro_rules! foreach_tool {{\n    ($m:ident) => {{"
    )
    .unwrap();
    for id in &tools {
        writeln!(
            code,
            "        $m!({}, {id:?});",
            id.replace(['.', '-'], "_")
        )
        .unwrap();
    }
    writeln!(code, "    }};\n}}").unwrap();
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo")).join("artifacts.rs");
    std::fs::write(out, code).expect("write artifacts.rs");
}

/// `$CARGO_TARGET_DIR/guests`, or `<root>/target/guests`: the same place `cargo xtask
/// build-tools` builds into.
fn guest_target_dir(root: &Path) -> PathBuf {
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");
    env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("guests")
}

/// Installs the wasm target with rustup when it is missing.
fn ensure_target() {
    let sysroot = Command::new(env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned()))
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if sysroot.is_some_and(|s| s.join("lib/rustlib").join(TARGET).is_dir()) {
        return;
    }
    let ok = Command::new("rustup")
        .args(["target", "add", TARGET])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "the {TARGET} target is missing and `rustup target add {TARGET}` failed; \
         see shared/notes/wasm-toolchain.md for the offline fallback"
    );
}
