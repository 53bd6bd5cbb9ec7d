//! The fuzzers' regression inputs (`fuzz/regressions/{tool_manifest,app_manifest,lockfile}/`),
//! run through the code their fuzz targets drive, so that `cargo test` keeps a fixed crash fixed
//! without the fuzzer. A new input shows up in the snapshot (`UPDATE_EXPECT=1` rewrites it).

use std::path::Path;

use expect_test::{Expect, expect};

use crate::{AppManifest, Artifact, Lockfile, Sha256Hex, ToolManifest};

/// Each input of `fuzz/regressions/<target>/`, with what `run` says about it, one per line.
fn check(target: &str, run: impl Fn(&[u8]) -> String, expect: Expect) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no inputs in {}", dir.display());
    let outcomes: Vec<String> = paths
        .iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            format!("{name}: {}", run(&std::fs::read(path).unwrap()))
        })
        .collect();
    expect.assert_eq(&outcomes.join("\n"));
}

/// As the `tool_manifest` fuzz target: a parsed manifest round-trips unchanged.
fn tool_manifest(data: &[u8]) -> String {
    let check = |manifest: ToolManifest| {
        let again = ToolManifest::from_json(&manifest.to_json_pretty()).unwrap();
        assert_eq!(again, manifest);
        format!("ok {}", manifest.tool_ref())
    };
    let artifact = Artifact::new("x.wasm", Sha256Hex::new("0".repeat(64)).unwrap(), 1);
    let template = match std::str::from_utf8(data) {
        Ok(text) => {
            ToolManifest::from_template_json(text, artifact).map_or_else(|e| e.to_string(), check)
        }
        Err(_) => "not UTF-8".to_owned(),
    };
    let manifest = ToolManifest::from_slice(data).map_or_else(|e| e.to_string(), check);
    format!("{manifest}\n    as a template: {template}")
}

#[test]
fn tool_manifest_regressions() {
    check(
        "tool_manifest",
        tool_manifest,
        expect![[r#"
            deep-input-schema.json: invalid tool manifest at line 36, column 150: recursion limit exceeded
                as a template: invalid tool manifest template at line 36, column 150: recursion limit exceeded
            float-limit.json: invalid tool manifest at line 31, column 25: number out of range
                as a template: invalid tool manifest template at line 31, column 25: number out of range
            huge-limit.json: invalid tool manifest at line 30, column 37: invalid type: floating point `1.8446744073709552e+19`, expected u64
                as a template: invalid tool manifest template at line 8, column 12: unknown field `artifact`, expected one of `schema_version`, `id`, `version`, `display_name`, `description`, `license`, `interpreter`, `model_dependencies`, `capability_requirements`, `wasi_imports`, `safety_tier`, `limits`, `input_schema`, `output_schema`
            huge-version.json: invalid tool manifest at line 4, column 39: invalid version `0.1.99999999999999999999`: value of patch version number exceeds u64::MAX (use a full semantic version MAJOR.MINOR.PATCH, e.g. `1.0.0`)
                as a template: invalid tool manifest template at line 4, column 39: invalid version `0.1.99999999999999999999`: value of patch version number exceeds u64::MAX (use a full semantic version MAJOR.MINOR.PATCH, e.g. `1.0.0`)
            invalid-utf8.json: invalid tool manifest at line 5, column 25: invalid unicode code point
                as a template: not UTF-8
            lone-surrogate.json: invalid tool manifest at line 5, column 31: unexpected end of hex escape
                as a template: invalid tool manifest template at line 5, column 31: unexpected end of hex escape
            max-limits.json: limit `memory_mb` is 18446744073709551615, above the maximum of 1024; lower it to at most 1024
                as a template: invalid tool manifest template at line 8, column 12: unknown field `artifact`, expected one of `schema_version`, `id`, `version`, `display_name`, `description`, `license`, `interpreter`, `model_dependencies`, `capability_requirements`, `wasi_imports`, `safety_tier`, `limits`, `input_schema`, `output_schema`
            schema-version-overflow.json: invalid tool manifest at line 2, column 30: invalid value: integer `4294967297`, expected u32
                as a template: invalid tool manifest template at line 2, column 30: invalid value: integer `4294967297`, expected u32"#]],
    );
}

#[test]
fn app_manifest_regressions() {
    let run = |data: &[u8]| match std::str::from_utf8(data).map(AppManifest::from_json) {
        Ok(Ok(app)) => {
            assert_eq!(AppManifest::from_json(&app.to_json_pretty()).unwrap(), app);
            format!("ok {}", app.name)
        }
        Ok(Err(e)) => e.to_string(),
        Err(_) => "not UTF-8".to_owned(),
    };
    check(
        "app_manifest",
        run,
        expect![[r#"
            deep-grants.json: invalid app manifest at line 1, column 178: recursion limit exceeded
            huge-schema-version.json: invalid app manifest at line 1, column 24: number out of range
            lone-surrogate-path.json: invalid app manifest at line 1, column 61: lone leading surrogate in hex escape
            nul-in-path.json: ok n
            version-overflow.json: invalid app manifest at line 1, column 86: invalid version `18446744073709551616.0.0`: value of major version number exceeds u64::MAX (use a full semantic version MAJOR.MINOR.PATCH, e.g. `1.0.0`)"#]],
    );
}

#[test]
fn lockfile_regressions() {
    let run = |data: &[u8]| match std::str::from_utf8(data).map(Lockfile::from_json) {
        Ok(Ok(lockfile)) => {
            assert_eq!(
                Lockfile::from_json(&lockfile.to_json_pretty()).unwrap(),
                lockfile
            );
            format!("ok, {} tools", lockfile.tools().len())
        }
        Ok(Err(e)) => e.to_string(),
        Err(_) => "not UTF-8".to_owned(),
    };
    check(
        "lockfile",
        run,
        expect![[r#"
            deep-tools.json: invalid lockfile at line 1, column 151: recursion limit exceeded
            huge-version.json: invalid lockfile at line 1, column 32: invalid type: floating point `1.8446744073709552e+19`, expected u32
            lone-surrogate-id.json: invalid lockfile at line 1, column 38: unexpected end of hex escape
            negative-version.json: invalid lockfile at line 1, column 14: invalid value: integer `-1`, expected u32
            uppercase-sha.json: invalid lockfile at line 1, column 145: invalid sha256 `AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`: character 'A' is not a lowercase hex digit (expected exactly 64 lowercase hex characters)"#]],
    );
}
