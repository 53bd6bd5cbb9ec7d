//! The fuzzers' regression inputs (`fuzz/regressions/schema_arguments/`), run through the schema
//! checks the `schema_arguments` fuzz target drives, so that `cargo test` keeps a fixed crash
//! fixed without the fuzzer. A new input shows up in the snapshot (`UPDATE_EXPECT=1` rewrites
//! it).

use std::path::Path;

use expect_test::expect;
use locara_manifest::{Artifact, Sha256Hex, ToolManifest};
use serde_json::Value;

use crate::schema::{compile, violations};

/// What the pipeline reports for `arguments` against `schema`: `ok`, or the first violation and
/// how many more there are. Every violation's pointer leads into `arguments`.
fn outcome(schema: &jsonschema::Validator, arguments: &Value) -> String {
    let found = violations(schema, arguments);
    for violation in &found {
        assert!(
            arguments.pointer(&violation.pointer).is_some(),
            "{violation}"
        );
    }
    match found.split_first() {
        None => "ok".to_owned(),
        Some((first, [])) => first.to_string(),
        Some((first, rest)) => format!("{first} (+{} more)", rest.len()),
    }
}

/// As the `schema_arguments` fuzz target: JSON arguments against every built-in tool's input
/// schema, or `<schema> NUL <instance>`.
fn schema_arguments(data: &[u8]) -> String {
    let parse =
        |bytes: &[u8]| serde_json::from_slice::<Value>(bytes).map_err(|e| format!("not JSON: {e}"));
    if let Some(nul) = data.iter().position(|&b| b == 0) {
        let (schema, instance) = match (parse(&data[..nul]), parse(&data[nul + 1..])) {
            (Ok(schema), Ok(instance)) => (schema, instance),
            (Err(e), _) | (_, Err(e)) => return e,
        };
        return match compile("fuzz@0.0.0", "input_schema", &schema) {
            Ok(validator) => outcome(&validator, &instance),
            Err(e) => e.to_string(),
        };
    }
    let arguments = match parse(data) {
        Ok(arguments) => arguments,
        Err(e) => return e,
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../locara-tools-builtin/manifests");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    let lines: Vec<String> = paths
        .iter()
        .map(|path| {
            let artifact = Artifact::new("x.wasm", Sha256Hex::new("0".repeat(64)).unwrap(), 1);
            // Only the input schema matters here; an interpreter template's `driver_file` is
            // resolved at publish time (locara-upstream), so its section is left out.
            let mut template: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
            template.as_object_mut().unwrap().remove("interpreter");
            let manifest =
                ToolManifest::from_template_json(&template.to_string(), artifact).unwrap();
            let tool = manifest.tool_ref().to_string();
            let validator = compile(&tool, "input_schema", &manifest.input_schema).unwrap();
            format!("\n  {tool}: {}", outcome(&validator, &arguments))
        })
        .collect();
    lines.concat()
}

#[test]
fn schema_arguments_regressions() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/schema_arguments");
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
            format!(
                "{name}: {}",
                schema_arguments(&std::fs::read(path).unwrap())
            )
        })
        .collect();
    expect![[r#"
        deep-arguments.json: not JSON: recursion limit exceeded at line 1 column 136
        escaped-keys.json: 
          audio.detect-silence@0.1.0: at /: Additional properties are not allowed ('a/b', 'c~d', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          audio.transcribe@0.1.0: at /: Additional properties are not allowed ('a/b', 'c~d', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          bash.read-only@0.1.0: at /: Additional properties are not allowed ('a/b', 'c~d', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          code-exec.js@0.1.0: at /: Additional properties are not allowed ('a/b', 'c~d', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          code-exec.lua@0.1.0: at /: Additional properties are not allowed ('a/b', 'c~d', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          code-exec.python@0.1.0: at /: Additional properties are not allowed ('a/b', 'c~d', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          file.edit@0.1.0: at /: "path" is a required property (required at /required) (+2 more)
          filesystem.list@0.1.0: at /: Additional properties are not allowed ('a/b', 'c~d', 'text' were unexpected) (additionalProperties at /additionalProperties)
          filesystem.read@0.1.0: at /: Additional properties are not allowed ('a/b', 'c~d', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          filesystem.search@0.1.0: at /: Additional properties are not allowed ('a/b', 'c~d', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          filesystem.write@0.1.0: at /: "path" is a required property (required at /required) (+2 more)
          image.format-convert@0.1.0: at /: "source" is a required property (required at /required) (+2 more)
          image.resize@0.1.0: at /: Additional properties are not allowed ('a/b', 'c~d', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          ocr@0.1.0: at /: Additional properties are not allowed ('a/b', 'c~d', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          pdf.extract-text@0.1.0: at /: Additional properties are not allowed ('a/b', 'c~d', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          pdf.split@0.1.0: at /: Additional properties are not allowed ('a/b', 'c~d', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          text.chunk@0.1.0: at /text: 1 is not of type "string" (type at /properties/text/type) (+1 more)
          text.classify@0.1.0: at /: "labels" is a required property (required at /required) (+2 more)
          text.summarize@0.1.0: at /text: 1 is not of type "string" (type at /properties/text/type) (+1 more)
          text.translate@0.1.0: at /: "target_language" is a required property (required at /required) (+2 more)
          web.fetch@0.1.0: at /: Additional properties are not allowed ('a/b', 'c~d', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
        huge-integer.json: 
          audio.detect-silence@0.1.0: at /: Additional properties are not allowed ('max_chars', 'overlap', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          audio.transcribe@0.1.0: at /: Additional properties are not allowed ('max_chars', 'overlap', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          bash.read-only@0.1.0: at /: Additional properties are not allowed ('max_chars', 'overlap', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          code-exec.js@0.1.0: at /: Additional properties are not allowed ('max_chars', 'overlap', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          code-exec.lua@0.1.0: at /: Additional properties are not allowed ('max_chars', 'overlap', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          code-exec.python@0.1.0: at /: Additional properties are not allowed ('max_chars', 'overlap', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          file.edit@0.1.0: at /: "path" is a required property (required at /required) (+2 more)
          filesystem.list@0.1.0: at /: Additional properties are not allowed ('max_chars', 'overlap', 'text' were unexpected) (additionalProperties at /additionalProperties)
          filesystem.read@0.1.0: at /: Additional properties are not allowed ('max_chars', 'overlap', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          filesystem.search@0.1.0: at /: Additional properties are not allowed ('max_chars', 'overlap', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          filesystem.write@0.1.0: at /: "path" is a required property (required at /required) (+2 more)
          image.format-convert@0.1.0: at /: "source" is a required property (required at /required) (+2 more)
          image.resize@0.1.0: at /: Additional properties are not allowed ('max_chars', 'overlap', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          ocr@0.1.0: at /: Additional properties are not allowed ('max_chars', 'overlap', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          pdf.extract-text@0.1.0: at /max_chars: 1.8446744073709552e+19 is greater than the maximum of 10000000 (maximum at /properties/max_chars/maximum) (+2 more)
          pdf.split@0.1.0: at /: Additional properties are not allowed ('max_chars', 'overlap', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
          text.chunk@0.1.0: at /max_chars: 1.8446744073709552e+19 is greater than the maximum of 1000000 (maximum at /properties/max_chars/maximum) (+1 more)
          text.classify@0.1.0: at /: "labels" is a required property (required at /required) (+1 more)
          text.summarize@0.1.0: at /: Additional properties are not allowed ('max_chars', 'overlap' were unexpected) (additionalProperties at /additionalProperties)
          text.translate@0.1.0: at /: "target_language" is a required property (required at /required) (+1 more)
          web.fetch@0.1.0: at /: Additional properties are not allowed ('max_chars', 'overlap', 'text' were unexpected) (additionalProperties at /additionalProperties) (+1 more)
        lone-surrogate.json: not JSON: unexpected end of hex escape at line 1 column 17
        nested-127.json: 
          audio.detect-silence@0.1.0: at /: Additional properties are not allowed ('text' was unexpected) (additionalProperties at /additionalProperties) (+1 more)
          audio.transcribe@0.1.0: at /: Additional properties are not allowed ('text' was unexpected) (additionalProperties at /additionalProperties) (+1 more)
          bash.read-only@0.1.0: at /: Additional properties are not allowed ('text' was unexpected) (additionalProperties at /additionalProperties) (+1 more)
          code-exec.js@0.1.0: at /: Additional properties are not allowed ('text' was unexpected) (additionalProperties at /additionalProperties) (+1 more)
          code-exec.lua@0.1.0: at /: Additional properties are not allowed ('text' was unexpected) (additionalProperties at /additionalProperties) (+1 more)
          code-exec.python@0.1.0: at /: Additional properties are not allowed ('text' was unexpected) (additionalProperties at /additionalProperties) (+1 more)
          file.edit@0.1.0: at /: "path" is a required property (required at /required) (+2 more)
          filesystem.list@0.1.0: at /: Additional properties are not allowed ('text' was unexpected) (additionalProperties at /additionalProperties)
          filesystem.read@0.1.0: at /: Additional properties are not allowed ('text' was unexpected) (additionalProperties at /additionalProperties) (+1 more)
          filesystem.search@0.1.0: at /: Additional properties are not allowed ('text' was unexpected) (additionalProperties at /additionalProperties) (+1 more)
          filesystem.write@0.1.0: at /: "path" is a required property (required at /required) (+2 more)
          image.format-convert@0.1.0: at /: "source" is a required property (required at /required) (+2 more)
          image.resize@0.1.0: at /: Additional properties are not allowed ('text' was unexpected) (additionalProperties at /additionalProperties) (+1 more)
          ocr@0.1.0: at /: Additional properties are not allowed ('text' was unexpected) (additionalProperties at /additionalProperties) (+1 more)
          pdf.extract-text@0.1.0: at /: Additional properties are not allowed ('text' was unexpected) (additionalProperties at /additionalProperties) (+1 more)
          pdf.split@0.1.0: at /: Additional properties are not allowed ('text' was unexpected) (additionalProperties at /additionalProperties) (+1 more)
          text.chunk@0.1.0: at /text: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{}]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]] is not of type "string" (type at /properties/text/type)
          text.classify@0.1.0: at /: "labels" is a required property (required at /required) (+1 more)
          text.summarize@0.1.0: at /text: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{}]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]] is not of type "string" (type at /properties/text/type)
          text.translate@0.1.0: at /: "target_language" is a required property (required at /required) (+1 more)
          web.fetch@0.1.0: at /: Additional properties are not allowed ('text' was unexpected) (additionalProperties at /additionalProperties) (+1 more)
        nested-128.json: not JSON: recursion limit exceeded at line 1 column 136
        out-of-range-float.json: not JSON: number out of range at line 1 column 32
        pair-backtracking-pattern: at /: Error executing regex: Max limit for backtracking count exceeded (pattern at /pattern)
        pair-huge-repetition: at /: "a" does not match "a{1000}{1000}{1000}" (pattern at /pattern)
        pair-mutual-refs: ok
        pair-recursive-ref: ok
        pair-remote-ref: the input_schema of fuzz@0.0.0 is not a valid JSON Schema: Resource 'https://example.invalid/schema.json' is not present in a registry and retrieving it failed: `resolve-http` feature or a custom resolver is required to resolve external schemas via HTTP
        pair-self-ref: ok"#]].assert_eq(&outcomes.join("\n"));
}
