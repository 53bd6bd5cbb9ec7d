//! The Rust target tools are built for, `wasm32-wasip1`, installed with rustup when the
//! toolchain lacks it: by `cargo xtask build-tools` for the built-in tools and by
//! `locara build` for a tool crate. (The build scripts of `locara-test-artifacts` and
//! `locara-bench` do the same in a few lines of their own: a build script cannot use this
//! crate without building it first.)

use std::path::PathBuf;
use std::process::Command;

/// The target every tool is compiled for.
pub const WASM_TARGET: &str = "wasm32-wasip1";

/// Why the target could not be made available; the message says what to do instead.
#[derive(Debug, thiserror::Error)]
#[error(
    "the {WASM_TARGET} target is missing and {0}.\n\
     Without rustup's download, use Debian's toolchain and rebuild std:\n\
     \x20 apt-get install -y --no-install-recommends rustc-web cargo-web rust-web-src rust-web-llvm lld-22 wasi-libc\n\
     \x20 RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS='-L native=/usr/lib/wasm32-wasi' \\\n\
     \x20   /usr/bin/cargo build --release --target {WASM_TARGET} -Zbuild-std=std,panic_abort\n\
     (details: shared/notes/wasm-toolchain.md)"
)]
pub struct MissingTarget(String);

/// Installs [`WASM_TARGET`] with `rustup target add` unless the sysroot of `$RUSTC` (else
/// `rustc`) already has it.
///
/// # Errors
/// When rustc or rustup cannot be run, or rustup fails.
pub fn ensure_wasm_target() -> Result<(), MissingTarget> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| MissingTarget(format!("`{rustc} --print sysroot` could not be run ({e})")))?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    if sysroot.join("lib/rustlib").join(WASM_TARGET).is_dir() {
        return Ok(());
    }
    eprintln!("installing the {WASM_TARGET} target with rustup...");
    match Command::new("rustup")
        .args(["target", "add", WASM_TARGET])
        .status()
    {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(MissingTarget(format!(
            "`rustup target add {WASM_TARGET}` failed ({status})"
        ))),
        Err(e) => Err(MissingTarget(format!("rustup could not be run ({e})"))),
    }
}
