//! Empty: it exists so that the `[build-dependencies]` in `Cargo.toml`, which unify the
//! features of the crates proc-macros and build scripts use, are part of every build.

fn main() {}
