//! Guards against JSON nested deeper than any tool needs.
//!
//! Serializing, validating, cloning and even dropping a `serde_json::Value` recurse once per
//! level of nesting, so a value nested a few hundred thousand levels deep overflows the stack
//! of whatever thread touches it. A value parsed from JSON text is already bounded (serde_json
//! refuses more than 128 levels), but a host can build one in code. Everything here is
//! iterative, so it is safe on any value.

use serde_json::Value;

use crate::{ExecError, SchemaViolation};

/// The deepest nesting of arrays and objects accepted in a tool's arguments: 128 levels, as in
/// serde_json's parser, so any value that came from JSON text passes.
pub const MAX_JSON_DEPTH: usize = 128;

/// The JSON pointer of the first array or object nested deeper than `max` levels inside
/// `value` (the top level is level 1), or `None` if there is none.
///
/// ```
/// use locara_exec::depth::too_deep;
/// use serde_json::json;
///
/// assert_eq!(too_deep(&json!({"a": [[1]]}), 2).as_deref(), Some("/a/0"));
/// assert_eq!(too_deep(&json!({"a": [[1]]}), 3), None);
/// ```
pub fn too_deep(value: &Value, max: usize) -> Option<String> {
    enum Children<'a> {
        Array(std::iter::Enumerate<std::slice::Iter<'a, Value>>),
        Object(serde_json::map::Iter<'a>),
    }
    /// A container's place in its parent, written out only for the pointer of a refusal.
    enum Key<'a> {
        Root,
        Index(usize),
        Name(&'a str),
    }
    fn children(value: &Value) -> Option<Children<'_>> {
        match value {
            Value::Array(items) => Some(Children::Array(items.iter().enumerate())),
            Value::Object(map) => Some(Children::Object(map.iter())),
            _ => None,
        }
    }
    // One entry per open container: its remaining children and its key in its parent.
    let mut open: Vec<(Children<'_>, Key<'_>)> = Vec::new();
    open.push((children(value)?, Key::Root));
    while let Some((iter, _)) = open.last_mut() {
        let next = match iter {
            Children::Array(items) => items.next().map(|(i, v)| (Key::Index(i), v)),
            Children::Object(entries) => entries.next().map(|(k, v)| (Key::Name(k), v)),
        };
        let Some((key, child)) = next else {
            open.pop();
            continue;
        };
        if let Some(grandchildren) = children(child) {
            open.push((grandchildren, key));
            if open.len() > max {
                return Some(
                    open.iter()
                        .map(|(_, key)| match key {
                            Key::Root => String::new(),
                            Key::Index(i) => format!("/{i}"),
                            Key::Name(name) => format!("/{}", escape(name)),
                        })
                        .collect(),
                );
            }
        }
    }
    None
}

/// The refusal of `arguments` for `tool` when they are nested deeper than [`MAX_JSON_DEPTH`]:
/// [`ExecError::InvalidInput`] with one `max_depth` violation at the first level too deep.
/// Checked before anything recursive touches the arguments (the pipeline's `ValidateInput`,
/// the facade's chain binding).
pub fn refuse_too_deep(tool: &dyn std::fmt::Display, arguments: &Value) -> Option<ExecError> {
    let pointer = too_deep(arguments, MAX_JSON_DEPTH)?;
    Some(ExecError::InvalidInput {
        tool: tool.to_string(),
        violations: vec![SchemaViolation {
            pointer,
            constraint: "max_depth".to_owned(),
            message: format!(
                "arrays and objects are nested more than {MAX_JSON_DEPTH} levels deep"
            ),
        }],
    })
}

/// Escapes a key for a JSON pointer (RFC 6901).
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Drops `value` without recursion, however deep it is.
pub fn drop_deep(value: Value) {
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => pending.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn nested(depth: usize) -> Value {
        let mut value = json!("leaf");
        for i in 0..depth {
            // Not `json!([value])`: the macro serializes `value`, which recurses.
            value = if i % 2 == 0 {
                Value::Array(vec![value])
            } else {
                Value::Object([("k/~".to_owned(), value)].into_iter().collect())
            };
        }
        value
    }

    #[test]
    fn shallow_values_pass() {
        assert_eq!(too_deep(&json!(1), 3), None);
        assert_eq!(too_deep(&json!({"a": [1, {"b": 2}]}), 3), None);
        assert_eq!(too_deep(&nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH), None);
    }

    #[test]
    fn the_pointer_names_the_first_level_too_deep() {
        assert_eq!(
            too_deep(&json!({"a": [1, {"b": [[]]}]}), 3).as_deref(),
            Some("/a/1/b")
        );
        assert_eq!(too_deep(&nested(4), 3).as_deref(), Some("/k~1~0/0/k~1~0"));
    }

    #[test]
    fn a_million_levels_are_measured_and_dropped_without_overflowing() {
        let deep = nested(1_000_000);
        let pointer = too_deep(&deep, MAX_JSON_DEPTH).expect("too deep");
        assert_eq!(pointer.matches('/').count(), MAX_JSON_DEPTH);
        drop_deep(deep);
    }
}
