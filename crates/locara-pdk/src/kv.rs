//! The app's key-value store (the host's `kv` service; `docs/tool-abi.md` § Host services):
//! JSON values under string keys that outlive the call, shared by the app's tools and kept
//! apart from every other app's.
//!
//! ```no_run
//! # fn demo() -> Result<(), locara_pdk::ToolError> {
//! use locara_pdk::kv;
//! let seen: u64 = kv::get("visits")?.unwrap_or(0);
//! kv::set("visits", &(seen + 1))?;
//! for key in kv::list("drafts/")? {
//!     kv::delete(&key)?;
//! }
//! # Ok(()) }
//! ```
//!
//! The tool lists `kv` in its manifest's `capability_requirements`, and the app must grant it.
//! Keys are 1 to 512 bytes, values at most 64 KiB of JSON; the host bounds what one app holds
//! in all, and a `set` past that fails saying so.

use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

use crate::{ToolError, host};

/// The value of `key`, if it is set, as a `T`.
///
/// # Errors
/// The host refused or failed, or the value is not a `T`.
pub fn get<T: DeserializeOwned>(key: &str) -> Result<Option<T>, ToolError> {
    let answer = host::call("kv", &json!({"op": "get", "key": key}))?;
    match answer.get("value") {
        None | Some(Value::Null) => Ok(None),
        Some(value) => T::deserialize(value).map(Some).map_err(|e| {
            ToolError::failed(format!(
                "the stored value of `{key}` is not what was asked for: {e}"
            ))
        }),
    }
}

/// Sets `key` to `value`; it is stored durably when this returns.
///
/// # Errors
/// The host refused (a key or value too large, the app's store full) or failed.
pub fn set<T: Serialize + ?Sized>(key: &str, value: &T) -> Result<(), ToolError> {
    let value = serde_json::to_value(value)
        .map_err(|e| ToolError::failed(format!("the value of `{key}` is not JSON: {e}")))?;
    host::call("kv", &json!({"op": "set", "key": key, "value": value}))?;
    Ok(())
}

/// Removes `key`; whether it was set.
///
/// # Errors
/// The host refused or failed.
pub fn delete(key: &str) -> Result<bool, ToolError> {
    let answer = host::call("kv", &json!({"op": "delete", "key": key}))?;
    Ok(answer["deleted"].as_bool().unwrap_or(false))
}

/// The keys starting with `prefix`, in byte order (at most 1,000).
///
/// # Errors
/// The host refused or failed.
pub fn list(prefix: &str) -> Result<Vec<String>, ToolError> {
    let answer = host::call("kv", &json!({"op": "list", "prefix": prefix}))?;
    serde_json::from_value(answer["keys"].clone())
        .map_err(|e| ToolError::failed(format!("the host's `kv` answer is malformed: {e}")))
}
