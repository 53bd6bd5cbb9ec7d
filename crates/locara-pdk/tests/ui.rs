//! Compile errors of `#[tool]`: each file under `ui/` must fail to compile with the message in
//! its `.stderr` (regenerate with `TRYBUILD=overwrite cargo test -p locara-pdk --test ui`).

#[test]
fn unsupported_signatures_fail_with_clear_messages() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
