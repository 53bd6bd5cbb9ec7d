//! The fuzzers' regression inputs (`fuzz/regressions/chain_bind/`), run through the chain binder
//! as the `chain_bind` fuzz target drives it, so that `cargo test` keeps a fixed crash fixed
//! without the fuzzer. A new input shows up in the snapshot (`UPDATE_EXPECT=1` rewrites it).

use std::path::Path;

use expect_test::expect;
use serde_json::Value;

use crate::chain::bind;

/// As the `chain_bind` fuzz target: `[arguments, outputs…]`, or arguments alone.
fn chain_bind(data: &[u8]) -> String {
    let value = match serde_json::from_slice::<Value>(data) {
        Ok(value) => value,
        Err(e) => return format!("not JSON: {e}"),
    };
    let (arguments, outputs) = match &value {
        Value::Array(items) if !items.is_empty() => (&items[0], &items[1..]),
        other => (other, &[][..]),
    };
    match bind(arguments, outputs) {
        Ok(bound) => {
            let text = bound.to_string();
            let end = text.char_indices().nth(60).map_or(text.len(), |(i, _)| i);
            format!("ok {}", &text[..end])
        }
        Err(e) => {
            assert!(arguments.pointer(&e.pointer).is_some(), "{e:?}");
            format!("at `{}`: {}", e.pointer, e.message)
        }
    }
}

#[test]
fn chain_bind_regressions() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/chain_bind");
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
            format!("{name}: {}", chain_bind(&std::fs::read(path).unwrap()))
        })
        .collect();
    expect![[r#"
        deep-arguments.json: not JSON: recursion limit exceeded at line 1 column 128
        deep-ref-bad.json: at `/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0`: `steps.1.output` names step 1, but only steps 0 to 0 ran before this one
        deep-ref.json: ok [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[
        empty-segment.json: ok {"a":"empty key"}
        escaped-pointer.json: at `/a~1b/c~0d`: `steps.0.output` has no `x`; it is an empty object
        huge-index.json: at `/a`: `steps.0.output` has no `18446744073709551616`; it is an array of 2 items
        huge-step.json: at `/a`: `99999999999999999999` in `steps.99999999999999999999.output` is not a step number
        negative-step.json: at `/a`: `-1` in `steps.-1.output` is not a step number"#]].assert_eq(&outcomes.join("\n"));
}
