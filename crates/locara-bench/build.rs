//! With the `extism` feature, builds the Extism peer plugin (`extism-plugin/`, `text.chunk`'s
//! source behind an `extism-pdk` export) for `wasm32-wasip1` from source, and tells the crate where
//! the module is (`LOCARA_BENCH_EXTISM_PLUGIN`). Without the feature it does nothing, so that
//! `cargo test --workspace` and CI's clippy never build the plugin or its dependencies.
//!
//! The plugin is its own workspace with its own Cargo.lock (it is guest code, resolved apart from
//! Locara's), built `--locked` into `extism-plugin/` inside the target dir, the way
//! `locara-test-artifacts` builds the guests into `guests/`.

use std::{
    env,
    path::{Path, PathBuf},
    process::Command,
};

const TARGET: &str = "wasm32-wasip1";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if env::var_os("CARGO_FEATURE_EXTISM").is_none() {
        return;
    }
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let plugin = manifest_dir.join("extism-plugin");
    let root = manifest_dir
        .parent()
        .and_then(Path::parent)
        .expect("crates/<this> is two levels below the root");
    for path in [
        plugin.join("Cargo.toml"),
        plugin.join("Cargo.lock"),
        plugin.join("src"),
        // The plugin compiles this very file: the chunking is `text.chunk`'s own.
        root.join("crates/locara-tools-builtin/src/text_chunk.rs"),
    ] {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");
    let target_dir = env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("extism-plugin");

    ensure_target();
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&plugin)
        .args(["build", "--locked", "--release", "--target", TARGET])
        .arg("--target-dir")
        .arg(&target_dir);
    // A clippy or coverage run wraps rustc for the workspace; the plugin is built plainly.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_MAKEFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd
        .status()
        .expect("could not run cargo to build the Extism plugin");
    assert!(
        status.success(),
        "building the Extism plugin (crates/locara-bench/extism-plugin) for {TARGET} failed (see the output above)"
    );
    let wasm = target_dir
        .join(TARGET)
        .join("release")
        .join("locara_bench_extism_plugin.wasm");
    assert!(wasm.is_file(), "no plugin at {}", wasm.display());
    println!(
        "cargo:rustc-env=LOCARA_BENCH_EXTISM_PLUGIN={}",
        wasm.display()
    );
}

/// Installs the wasm target with rustup when it is missing, as `locara-test-artifacts` does.
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
        "the {TARGET} target is missing and `rustup target add {TARGET}` failed"
    );
}
