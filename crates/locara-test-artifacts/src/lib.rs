//! Paths of the guest modules this crate's build script compiled from source, for tests.
//!
//! Depend on it as a dev-dependency; it has no runtime code.

include!(concat!(env!("OUT_DIR"), "/artifacts.rs"));
