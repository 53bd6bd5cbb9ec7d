//! What the sandbox's test files share.

/// Runs `$body` once per engine, as `<name>::wasmtime` and `<name>::wasmi`.
macro_rules! backend_test {
    ($name:ident, |$kind:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports, reason = "not every body uses every import")]
            use super::*;

            fn case($kind: BackendKind) $body

            #[test]
            fn wasmtime() {
                case(BackendKind::Wasmtime)
            }

            #[test]
            fn wasmi() {
                case(BackendKind::Wasmi)
            }
        }
    };
}
pub(crate) use backend_test;

/// A call's collected files as `(path, bytes)`, in the order the host gives them.
#[allow(dead_code, reason = "jail.rs collects no files")]
pub(crate) fn files_of(outcome: &locara_sandbox::RunOutcome) -> Vec<(&str, &[u8])> {
    outcome
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.bytes.as_slice()))
        .collect()
}
