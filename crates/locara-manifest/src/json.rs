//! JSON parsing that turns serde_json errors into [`Error::Json`] with line and column.

use serde::de::DeserializeOwned;

use crate::Error;

/// Parses `text` as `T`, naming `what` in the error.
pub(crate) fn from_str<T: DeserializeOwned>(what: &'static str, text: &str) -> Result<T, Error> {
    serde_json::from_str(text).map_err(|e| to_error(what, &e))
}

/// Parses `bytes` (UTF-8 JSON) as `T`, naming `what` in the error.
pub(crate) fn from_slice<T: DeserializeOwned>(
    what: &'static str,
    bytes: &[u8],
) -> Result<T, Error> {
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
