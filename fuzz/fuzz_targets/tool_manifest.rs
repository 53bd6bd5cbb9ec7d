//! Fuzzes the tool manifest parser (`manifest.json`) with its `validate`, and the template parser
//! of `crates/locara-tools-builtin/manifests/`.
//!
//! Input: the bytes of a manifest or a template. Whatever parses must survive a round trip
//! through `to_json_pretty` (the bytes the registry signs) unchanged, and name itself with a
//! reference that parses back.

#![no_main]

use libfuzzer_sys::fuzz_target;
use locara_manifest::{Artifact, Sha256Hex, ToolManifest, ToolRef};

fuzz_target!(|data: &[u8]| {
    let from_slice = ToolManifest::from_slice(data);
    match &from_slice {
        Ok(manifest) => check(manifest),
        Err(error) => drop(error.to_string()),
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The two entry points agree on UTF-8 input.
    assert_eq!(ToolManifest::from_json(text).ok(), from_slice.ok());
    let artifact = Artifact::new(
        "fuzz-0.1.0.wasm",
        Sha256Hex::new("0".repeat(64)).expect("a well-formed sha256"),
        1,
    );
    match ToolManifest::from_template_json(text, artifact) {
        Ok(manifest) => check(&manifest),
        Err(error) => drop(error.to_string()),
    }
});

fn check(manifest: &ToolManifest) {
    let text = manifest.to_json_pretty();
    let again = ToolManifest::from_json(&text)
        .unwrap_or_else(|e| panic!("the printed manifest does not parse: {e}\n{text}"));
    assert_eq!(&again, manifest, "the round trip changed the manifest");
    let limits = manifest.limits();
    drop(format!("{limits:?}"));
    let reference = manifest.tool_ref();
    assert_eq!(
        reference.to_string().parse::<ToolRef>().ok(),
        Some(reference),
        "the manifest's reference does not parse back"
    );
}
