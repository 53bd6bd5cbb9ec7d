//! Locara's cross-crate integration tests live in `all/`; this library is empty.
