//! Fuzzes the chain binder: `{"$ref": "steps.N.output.path"}` in a step's arguments.
//!
//! Input: a JSON array `[arguments, output of step 0, output of step 1, …]`; any other JSON
//! value is arguments with no step before it. Arguments without a `$ref` bind to themselves, and
//! a failure's pointer leads to the `$ref` that failed.

#![no_main]

use libfuzzer_sys::fuzz_target;
use locara_facade::fuzzing::bind;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let (arguments, outputs) = match &value {
        Value::Array(items) if !items.is_empty() => (&items[0], &items[1..]),
        other => (other, &[][..]),
    };
    match bind(arguments, outputs) {
        Ok(bound) => {
            if !has_ref(arguments) {
                assert_eq!(&bound, arguments, "arguments without a `$ref` changed");
            }
        }
        Err((pointer, message)) => {
            let at = arguments
                .pointer(&pointer)
                .unwrap_or_else(|| panic!("the pointer `{pointer}` is not in the arguments"));
            assert!(is_ref(at), "`{pointer}` is not a `$ref`: {at}");
            assert!(!message.is_empty());
        }
    }
});

fn is_ref(value: &Value) -> bool {
    matches!(value, Value::Object(map) if map.len() == 1 && map.contains_key("$ref"))
}

fn has_ref(value: &Value) -> bool {
    match value {
        _ if is_ref(value) => true,
        Value::Object(map) => map.values().any(has_ref),
        Value::Array(items) => items.iter().any(has_ref),
        _ => false,
    }
}
