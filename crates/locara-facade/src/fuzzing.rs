//! The chain binder, for the fuzz targets in `fuzz/` (the `fuzzing` feature).
//!
//! Not a stable API: it is here so that the fuzzers exercise the very code `run_chain` runs.

use serde_json::Value;

/// Replaces every `{"$ref": "steps.N.output…"}` in `arguments`, as `run_chain` does before a
/// step runs, given the outputs of the steps before it.
///
/// # Errors
///
/// Returns `(pointer, message)` for the first `$ref` that does not resolve: where it is in
/// `arguments`, as a JSON pointer, and why.
pub fn bind(arguments: &Value, outputs: &[Value]) -> Result<Value, (String, String)> {
    crate::chain::bind(arguments, outputs).map_err(|e| (e.pointer, e.message))
}
