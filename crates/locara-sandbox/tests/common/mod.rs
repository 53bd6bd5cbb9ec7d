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
