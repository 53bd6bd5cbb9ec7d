//! A crate with no code: its `Cargo.toml` lists the third-party crates that both `xtask` and
//! `locara-cli` build, each with the union of the features the two builds enable, and both
//! depend on it. Cargo resolves features per build, so without it `cargo xtask build-tools`
//! and the `cargo run -p locara-cli` after it compiled Wasmtime, Cranelift and serde twice,
//! once per feature set (the `cargo-hakari` pattern, kept by hand and checked by a tidy
//! test). It knows nothing else and is not meant to be used: nothing imports it.
