//! Strict JSON parsing: the one parser for the wire formats and for the JSON a person or a
//! model hands Locara (arguments, request files, tool calls, receipts).
//!
//! It differs from `serde_json` in one rule: an object that names a key twice is refused.
//! `serde_json` keeps the last value (`{"path": "a", "path": "b"}` means `"b"`), other parsers
//! keep the first or fail, so such a text means different things to different readers; in a
//! signed manifest that is a way to make a signature cover something the reader does not see.
//! Errors carry the line and column, and a repeated key its JSON pointer
//! ([`Error::DuplicateKey`]).
//!
//! ```
//! use locara_manifest::{Error, json};
//!
//! let value = json::parse_value("tool arguments", r#"{"path": "a"}"#)?;
//! assert_eq!(value["path"], "a");
//!
//! let error = json::parse_value("tool arguments", r#"{"path": "a", "path": "b"}"#).unwrap_err();
//! assert!(matches!(&error, Error::DuplicateKey { key, pointer, .. } if key == "path" && pointer == "/path"));
//! assert_eq!(
//!     error.to_string(),
//!     "invalid tool arguments at line 1, column 20: duplicate key \"path\" at /path; \
//!      an object may name a key only once (JSON readers disagree on which value wins)"
//! );
//! # Ok::<(), locara_manifest::Error>(())
//! ```

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess};
use serde_json::{Map, Value};

use crate::Error;

/// Parses `text` as one JSON value, refusing an object that repeats a key; `what` names the
/// text in errors (e.g. `tool arguments`).
///
/// # Errors
/// [`Error::DuplicateKey`] for a repeated key, [`Error::Json`] for any other error (syntax,
/// trailing characters, nesting deeper than 128 levels), both with line and column.
pub fn parse_value(what: &'static str, text: &str) -> Result<Value, Error> {
    parse(what, &mut serde_json::Deserializer::from_str(text))
}

/// Like [`parse_value`], for UTF-8 bytes (invalid UTF-8 is an [`Error::Json`]).
///
/// # Errors
/// As [`parse_value`].
pub fn parse_slice(what: &'static str, bytes: &[u8]) -> Result<Value, Error> {
    parse(what, &mut serde_json::Deserializer::from_slice(bytes))
}

/// Parses `text` as `T`, after checking it repeats no key; `what` names the text in errors.
///
/// # Errors
/// As [`parse_value`], then [`Error::Json`] (with line and column) when the text is not a `T`.
pub fn from_str<T: DeserializeOwned>(what: &'static str, text: &str) -> Result<T, Error> {
    // Two passes: the second gives a type error its line and column, which deserializing `T`
    // from the checked `Value` would lose. The texts parsed here are small.
    parse_value(what, text)?;
    serde_json::from_str(text).map_err(|e| to_error(what, &e))
}

/// Like [`from_str`], for UTF-8 bytes.
///
/// # Errors
/// As [`from_str`].
pub fn from_slice<T: DeserializeOwned>(what: &'static str, bytes: &[u8]) -> Result<T, Error> {
    parse_slice(what, bytes)?;
    serde_json::from_slice(bytes).map_err(|e| to_error(what, &e))
}

/// Serializes `value` as pretty JSON with a trailing newline.
pub(crate) fn to_pretty<T: serde::Serialize>(value: &T) -> String {
    // Serializing these types cannot fail: every map key is a string and no `Serialize` impl
    // returns an error.
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|e| {
        unreachable!("serializing a wire type failed: {e}");
    });
    text.push('\n');
    text
}

fn parse<'de, R: serde_json::de::Read<'de>>(
    what: &'static str,
    deserializer: &mut serde_json::Deserializer<R>,
) -> Result<Value, Error> {
    let state = State::default();
    let parsed = Strict { state: &state }
        .deserialize(&mut *deserializer)
        .and_then(|value| deserializer.end().map(|()| value));
    parsed.map_err(|e| match state.duplicate.take() {
        Some((key, pointer)) => Error::DuplicateKey {
            what,
            key,
            pointer,
            line: e.line(),
            column: e.column(),
        },
        None => to_error(what, &e),
    })
}

fn to_error(what: &'static str, error: &serde_json::Error) -> Error {
    let full = error.to_string();
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_owned();
    Error::Json {
        what,
        line: error.line(),
        column: error.column(),
        message,
    }
}

/// Where the parse is, for the pointer of a repeated key, and the repeated key once found.
#[derive(Default)]
struct State {
    path: RefCell<Vec<Segment>>,
    /// The repeated key and its JSON pointer.
    duplicate: RefCell<Option<(String, String)>>,
}

enum Segment {
    Key(String),
    Index(usize),
}

impl State {
    /// The JSON pointer (RFC 6901) of `key` in the object being read.
    fn pointer_to(&self, key: &str) -> String {
        let mut pointer = String::new();
        let path = self.path.borrow();
        let segments = path.iter().map(|s| match s {
            Segment::Key(k) => k.as_str().into(),
            Segment::Index(i) => std::borrow::Cow::Owned(i.to_string()),
        });
        for segment in segments.chain(std::iter::once(key.into())) {
            pointer.push('/');
            pointer.push_str(&segment.replace('~', "~0").replace('/', "~1"));
        }
        pointer
    }
}

/// Deserializes one JSON value as `serde_json::Value` does, refusing a repeated key.
#[derive(Clone, Copy)]
struct Strict<'s> {
    state: &'s State,
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> de::Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // As serde_json's own `Value` does (a JSON text has no non-finite number).
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        loop {
            self.state
                .path
                .borrow_mut()
                .push(Segment::Index(items.len()));
            let item = seq.next_element_seed(self)?;
            self.state.path.borrow_mut().pop();
            match item {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                let pointer = self.state.pointer_to(&key);
                let message = format!("duplicate key {key:?} at {pointer}");
                *self.state.duplicate.borrow_mut() = Some((key, pointer));
                return Err(de::Error::custom(message));
            }
            self.state.path.borrow_mut().push(Segment::Key(key));
            let value = map.next_value_seed(self)?;
            let Some(Segment::Key(key)) = self.state.path.borrow_mut().pop() else {
                unreachable!("the key pushed above is on top of the path");
            };
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}
