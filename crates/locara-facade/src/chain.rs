//! Chains: steps whose arguments bind earlier steps' results.
//!
//! Anywhere in a step's arguments, an object of exactly one key, `{"$ref": "steps.N.output.a.b"}`,
//! is replaced by that part of step `N`'s output before the step runs. Segments after
//! `output` are object keys, or array indices when they are numbers. `N` must be an earlier
//! step.

use serde_json::Value;

/// Why a `$ref` could not be bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BindError {
    /// Where in the step's arguments the `$ref` is, as a JSON pointer.
    pub(crate) pointer: String,
    /// What is wrong.
    pub(crate) message: String,
}

/// Replaces every `$ref` in `arguments`, given the outputs of the steps before this one.
pub(crate) fn bind(arguments: &Value, outputs: &[Value]) -> Result<Value, BindError> {
    bind_at(arguments, outputs, &mut String::new())
}

fn bind_at(value: &Value, outputs: &[Value], pointer: &mut String) -> Result<Value, BindError> {
    match value {
        Value::Object(map) if map.len() == 1 && map.contains_key("$ref") => {
            let Value::String(reference) = &map["$ref"] else {
                return Err(BindError {
                    pointer: pointer.clone(),
                    message: "`$ref` must be a string".to_owned(),
                });
            };
            lookup(reference, outputs).map_err(|message| BindError {
                pointer: pointer.clone(),
                message,
            })
        }
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (key, item) in map {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                out.insert(key.clone(), bind_at(item, outputs, pointer)?);
                pointer.truncate(len);
            }
            Ok(Value::Object(out))
        }
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push_str(&format!("/{i}"));
                out.push(bind_at(item, outputs, pointer)?);
                pointer.truncate(len);
            }
            Ok(Value::Array(out))
        }
        other => Ok(other.clone()),
    }
}

fn lookup(reference: &str, outputs: &[Value]) -> Result<Value, String> {
    let mut segments = reference.split('.');
    let (Some("steps"), Some(index), Some("output")) =
        (segments.next(), segments.next(), segments.next())
    else {
        return Err(format!(
            "`{reference}` is not of the form `steps.N.output[.field…]`"
        ));
    };
    let index: usize = index
        .parse()
        .map_err(|_| format!("`{index}` in `{reference}` is not a step number"))?;
    let mut current = outputs.get(index).ok_or_else(|| match outputs.len() {
        0 => format!("`{reference}` names step {index}, but this is the first step"),
        n => format!(
            "`{reference}` names step {index}, but only steps 0 to {} ran before this one",
            n - 1
        ),
    })?;
    let mut walked = format!("steps.{index}.output");
    for segment in segments {
        let next = match current {
            Value::Object(map) => map.get(segment),
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        };
        current = next.ok_or_else(|| {
            let available = match current {
                Value::Object(map) if map.is_empty() => "it is an empty object".to_owned(),
                Value::Object(map) => format!(
                    "its fields are: {}",
                    map.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
                Value::Array(items) => format!("it is an array of {} items", items.len()),
                other => format!("it is {}", kind(other)),
            };
            format!("`{walked}` has no `{segment}`; {available}")
        })?;
        walked.push('.');
        walked.push_str(segment);
    }
    Ok(current.clone())
}

/// What kind of JSON value `value` is, with its article, for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
