//! Consistency checks between the manifest templates in `manifests/` and the tool bins.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use locara_pdk::ToolInfo;
use serde_json::Value;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every manifest template, as `(file stem, parsed JSON)`.
fn manifests() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for entry in fs::read_dir(crate_dir().join("manifests")).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_str().unwrap().to_owned();
        assert_eq!(
            path.extension().and_then(|e| e.to_str()),
            Some("json"),
            "{path:?}"
        );
        let json: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{path:?} is not valid JSON: {e}"));
        out.push((stem, json));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn bins() -> BTreeSet<String> {
    fs::read_dir(crate_dir().join("src/bin"))
        .unwrap()
        .map(|e| {
            e.unwrap()
                .path()
                .file_stem()
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[test]
fn every_manifest_has_a_bin_and_every_bin_a_manifest() {
    // An interpreter tool's module is an upstream file, not a bin of this crate.
    let ids: BTreeSet<String> = manifests()
        .into_iter()
        .filter(|(_, m)| m.get("interpreter").is_none())
        .map(|(stem, _)| stem.replace('.', "-"))
        .collect();
    assert_eq!(ids, bins());
    assert!(ids.len() >= 8, "the manifests directory was read: {ids:?}");
}

#[test]
fn interpreter_templates_name_their_driver_and_upstream() {
    let mut interpreters = Vec::new();
    for (stem, m) in manifests() {
        let Some(interpreter) = m.get("interpreter") else {
            continue;
        };
        let driver = interpreter["driver_file"]
            .as_str()
            .unwrap_or_else(|| panic!("{stem}: a template names its driver by `driver_file`"));
        assert!(
            crate_dir().join("manifests").join(driver).is_file(),
            "{stem}: no driver at {driver}"
        );
        assert!(interpreter.get("driver").is_none(), "{stem}");
        // The tool is the upstream module run by our driver: it carries the module's license,
        // and those of the libraries built into it.
        let upstream = &interpreter["upstream"];
        let linked = upstream["linked"].as_array().cloned().unwrap_or_default();
        for source in std::iter::once(upstream).chain(&linked) {
            let license = source["license"].as_str().unwrap();
            assert!(
                m["license"].as_str().unwrap().contains(license),
                "{stem}: the license must include {}'s {license}",
                source["package"]
            );
        }
        // A prebuilt module comes from PyPI; a module built from source names its recipe.
        match upstream["registry"].as_str().unwrap() {
            "pypi" => assert!(upstream.get("build").is_none(), "{stem}"),
            "debian" => assert_eq!(upstream["build"], "cpython-wasi", "{stem}"),
            other => panic!("{stem}: upstream registry {other}"),
        }
        interpreters.push(stem);
    }
    assert_eq!(interpreters, ["code-exec.js", "code-exec.python"]);
}

#[test]
fn manifest_templates_follow_the_spec_notes() {
    for (stem, m) in manifests() {
        assert_eq!(m["id"], stem.as_str());
        assert_eq!(m["schema_version"], 1, "{stem}");
        assert_eq!(m["version"], "0.1.0", "{stem}");
        if m.get("interpreter").is_none() {
            assert_eq!(m["license"], "Apache-2.0", "{stem}");
        }
        for filled_in_by_xtask in ["artifact", "validated_at", "validated_by"] {
            assert!(
                m.get(filled_in_by_xtask).is_none(),
                "{stem} must not set {filled_in_by_xtask}"
            );
        }
        let user_dir = m["wasi_imports"]["fs"]["user_dir"].as_str().unwrap();
        let tier = m["safety_tier"].as_str().unwrap();
        match user_dir {
            "read_write" => assert_eq!(tier, "side_effecting", "{stem}"),
            "read" | "none" => assert_eq!(tier, "read_only", "{stem}"),
            other => panic!("{stem}: unknown user_dir {other}"),
        }
        // Only web.fetch reaches the network, and only the hosts the app allows ("*").
        let hosts = if stem == "web.fetch" {
            serde_json::json!(["*"])
        } else {
            serde_json::json!([])
        };
        assert_eq!(m["wasi_imports"]["net"]["allowed_hosts"], hosts, "{stem}");
        assert!(
            m["description"].as_str().unwrap().len() > 100,
            "{stem}: describe the tool for an LLM"
        );
        for key in ["input_schema", "output_schema"] {
            check_schema(&m[key], &format!("{stem}.{key}"));
        }
        assert_eq!(
            m["input_schema"]["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
    }
}

/// Every object is closed and every property is described.
fn check_schema(schema: &Value, at: &str) {
    if schema["type"] == "object" {
        assert_eq!(schema["additionalProperties"], false, "{at}");
        let props = schema["properties"].as_object().unwrap();
        if schema["x-locara-blob"] == true {
            // A file argument: exactly one of `path` and `base64` (docs/tool-abi.md).
            let keys: Vec<&String> = props.keys().collect();
            assert_eq!(keys, ["base64", "path"], "{at}");
            assert_eq!(
                (&schema["minProperties"], &schema["maxProperties"]),
                (&1.into(), &1.into()),
                "{at}"
            );
        }
        let required = schema.get("required").and_then(Value::as_array);
        for required in required.into_iter().flatten() {
            assert!(
                props.contains_key(required.as_str().unwrap()),
                "{at}: {required}"
            );
        }
        for (name, prop) in props {
            assert!(
                prop["description"].is_string(),
                "{at}.{name} has no description"
            );
            check_schema(prop, &format!("{at}.{name}"));
        }
    }
    if let Some(items) = schema.get("items") {
        check_schema(items, &format!("{at}[]"));
    }
}

/// The defaults a schema advertises are the ones the tool applies.
#[test]
fn schema_defaults_match_the_code() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("f.txt"), "x").unwrap();
    let schema = |id: &str| -> Value {
        let path = crate_dir().join("manifests").join(format!("{id}.json"));
        serde_json::from_str::<Value>(&fs::read_to_string(path).unwrap()).unwrap()["input_schema"]["properties"].clone()
    };
    let read = schema("filesystem.read");
    assert_eq!(
        read["max_bytes"]["default"],
        super::filesystem_read::DEFAULT_MAX_BYTES
    );
    assert_eq!(
        read["max_bytes"]["maximum"],
        super::filesystem_read::MAX_MAX_BYTES
    );
    let list = schema("filesystem.list");
    assert_eq!(
        list["max_depth"]["maximum"],
        super::filesystem_list::MAX_DEPTH
    );
    assert_eq!(
        list["max_entries"]["maximum"],
        super::filesystem_list::MAX_ENTRIES
    );
    let search = schema("filesystem.search");
    assert_eq!(
        search["max_results"]["maximum"],
        super::filesystem_search::MAX_RESULTS
    );
    let chunk = schema("text.chunk");
    assert_eq!(
        chunk["max_chars"]["maximum"],
        super::text_chunk::MAX_MAX_CHARS
    );

    // Running with only the required fields gives the documented defaults' behaviour.
    let root: &Path = dir.path();
    let out = super::filesystem_list(root, serde_json::json!({})).unwrap();
    assert_eq!(out["entries"][0]["path"], "f.txt");
    let out = super::text_chunk(serde_json::json!({"text": "a".repeat(1001)})).unwrap();
    assert_eq!(out["count"], 2, "max_chars defaults to 1000");
}

/// The built-in tools written with `#[locara_pdk::tool]`: the id, version, description and
/// schemas in their manifest templates are the code's.
fn tools_from_code() -> Vec<ToolInfo> {
    vec![
        super::audio_detect_silence::__locara_tool_info(),
        super::audio_transcribe::__locara_tool_info(),
        super::image_format_convert::__locara_tool_info(),
        super::image_resize::__locara_tool_info(),
        super::ocr::__locara_tool_info(),
        super::pdf_extract_text::__locara_tool_info(),
        super::pdf_split::__locara_tool_info(),
        super::text_chunk::__locara_tool_info(),
        super::filesystem_read::__locara_tool_info(),
        super::filesystem_list::__locara_tool_info(),
        super::filesystem_search::__locara_tool_info(),
        super::filesystem_write::__locara_tool_info(),
        super::file_edit::__locara_tool_info(),
        super::bash_read_only::__locara_tool_info(),
        super::text_llm::classify::__locara_tool_info(),
        super::text_llm::summarize::__locara_tool_info(),
        super::text_llm::translate::__locara_tool_info(),
        super::web_fetch::__locara_tool_info(),
    ]
}

/// The built-in tools whose manifests are still written by hand, and why.
const HAND_WRITTEN: &[(&str, &str)] = &[
    (
        "code-exec.python",
        "an interpreter tool: the module is CPython, not Rust",
    ),
    (
        "code-exec.js",
        "an interpreter tool: the module is QuickJS, not Rust",
    ),
    (
        "code-exec.lua",
        "writes its result to stdout as it builds it and lets os.exit end the program mid-run; a #[tool] function returns one value, so it keeps its own main",
    ),
];

/// Set to rewrite the templates' code-derived fields from the code instead of failing.
const UPDATE: &str = "LOCARA_UPDATE_MANIFESTS";

/// A manifest template a test rewrites: JSON whose objects keep their keys' order, so a
/// rewrite changes only the fields it sets.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
enum Ordered {
    Object(indexmap::IndexMap<String, Ordered>),
    Array(Vec<Ordered>),
    Other(Value),
}

/// The schemas a model reads come from the code of every tool written with `#[tool]`, and a
/// template that says otherwise fails here (or is rewritten, with [`UPDATE`] set).
#[test]
fn manifest_templates_say_what_the_code_says() {
    let update = std::env::var_os(UPDATE).is_some();
    let mut stale = Vec::new();
    let mut covered: BTreeSet<String> = HAND_WRITTEN
        .iter()
        .map(|(id, _)| (*id).to_owned())
        .collect();
    assert_eq!(covered.len(), HAND_WRITTEN.len(), "an id is listed twice");
    for info in tools_from_code() {
        assert!(
            covered.insert(info.id.clone()),
            "{} is both from code and hand-written",
            info.id
        );
        let path = crate_dir()
            .join("manifests")
            .join(format!("{}.json", info.id));
        let text = fs::read_to_string(&path).unwrap();
        let manifest: Value = serde_json::from_str(&text).unwrap();
        let code = serde_json::to_value(&info).unwrap();
        let differ: Vec<&str> = ToolInfo::MANIFEST_FIELDS
            .into_iter()
            .filter(|field| manifest[*field] != code[*field])
            .collect();
        if differ.is_empty() {
            continue;
        }
        if update {
            let Ordered::Object(mut ordered) = serde_json::from_str(&text).unwrap() else {
                panic!("{path:?} is not an object");
            };
            for field in ToolInfo::MANIFEST_FIELDS {
                ordered.insert(field.to_owned(), Ordered::Other(code[field].clone()));
            }
            let mut json = serde_json::to_string_pretty(&Ordered::Object(ordered)).unwrap();
            json.push('\n');
            fs::write(&path, json).unwrap();
        } else {
            stale.push(format!("{}: {}", info.id, differ.join(", ")));
        }
    }
    let on_disk: BTreeSet<String> = manifests().into_iter().map(|(stem, _)| stem).collect();
    assert_eq!(
        covered, on_disk,
        "every template is from code or listed in HAND_WRITTEN"
    );
    assert!(
        stale.is_empty(),
        "these templates disagree with their tool's code: {stale:?}; run `{UPDATE}=1 cargo test -p locara-tools-builtin manifest_templates_say` and review the diff"
    );
}
