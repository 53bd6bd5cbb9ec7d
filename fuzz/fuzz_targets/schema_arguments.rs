//! Fuzzes the pipeline's argument validation (`ValidateInput`) and its violation reports.
//!
//! Input, one of two forms:
//! - JSON arguments (no NUL byte): checked against the real `input_schema` of every built-in tool
//!   in `crates/locara-tools-builtin/manifests/`;
//! - `<schema JSON> NUL <instance JSON>`: the schema is compiled as the pipeline compiles a
//!   manifest's schema, then the instance is checked against it.
//!
//! Every violation's JSON pointer must point into the checked value (agents follow it), there are
//! at most 8 of them, and the error's message and hint format.

#![no_main]

use std::{path::Path, sync::LazyLock};

use libfuzzer_sys::fuzz_target;
use locara_exec::{ExecError, fuzzing::Schema};
use locara_manifest::{Artifact, Sha256Hex, ToolManifest};
use serde_json::Value;

/// Each built-in tool's reference and compiled input schema.
static BUILTIN: LazyLock<Vec<(String, Schema)>> = LazyLock::new(|| {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/locara-tools-builtin/manifests");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no manifests in {}", dir.display());
    paths
        .iter()
        .map(|path| {
            // Only the input schema matters here; an interpreter template's `driver_file` is
            // resolved at publish time (locara-upstream), so its section is left out.
            let mut template: Value = serde_json::from_str(
                &std::fs::read_to_string(path).expect("a readable template"),
            )
            .expect("a template is JSON");
            if let Some(object) = template.as_object_mut() {
                object.remove("interpreter");
            }
            let template = template.to_string();
            let artifact = Artifact::new(
                "tool.wasm",
                Sha256Hex::new("0".repeat(64)).expect("a well-formed sha256"),
                1,
            );
            let manifest = ToolManifest::from_template_json(&template, artifact)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let tool = manifest.tool_ref().to_string();
            let schema = Schema::compile(&tool, "input_schema", &manifest.input_schema)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (tool, schema)
        })
        .collect()
});

fuzz_target!(|data: &[u8]| {
    match data.iter().position(|&b| b == 0) {
        None => {
            let Ok(arguments) = serde_json::from_slice::<Value>(data) else {
                return;
            };
            for (tool, schema) in BUILTIN.iter() {
                check(tool, schema, &arguments);
            }
        }
        Some(nul) => {
            let (Ok(schema), Ok(instance)) = (
                serde_json::from_slice::<Value>(&data[..nul]),
                serde_json::from_slice::<Value>(&data[nul + 1..]),
            ) else {
                return;
            };
            match Schema::compile("fuzz@0.0.0", "input_schema", &schema) {
                Ok(schema) => check("fuzz@0.0.0", &schema, &instance),
                Err(error) => {
                    assert!(
                        matches!(error, ExecError::InvalidSchema { .. }),
                        "{error:?}"
                    );
                    drop((error.to_string(), error.hint()));
                }
            }
        }
    }
});

fn check(tool: &str, schema: &Schema, arguments: &Value) {
    let Err(error) = schema.check_input(tool, arguments) else {
        return;
    };
    let ExecError::InvalidInput { violations, .. } = &error else {
        panic!("unexpected error {error:?}");
    };
    assert!(
        (1..=8).contains(&violations.len()),
        "{} violations",
        violations.len()
    );
    for violation in violations {
        assert!(
            arguments.pointer(&violation.pointer).is_some(),
            "the pointer `{}` of {violation} is not in the arguments",
            violation.pointer
        );
    }
    drop((error.to_string(), error.hint(), error.code()));
}
