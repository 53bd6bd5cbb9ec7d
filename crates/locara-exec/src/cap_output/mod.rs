//! Keeps a tool's output within what the caller (often an LLM's context window) can take.

mod layer;

use std::task::{Context, Poll};

use serde_json::Value;
use tower::Service;

pub use self::layer::CapOutputLayer;
use crate::{CallFuture, ExecError, ResolvedCall, ToolResult, Truncation};

/// Cuts the longest strings of an output larger than the cap, each with a marker that says
/// how much was kept, so that the output stays valid JSON of the same shape.
#[derive(Debug, Clone)]
pub struct CapOutput<S> {
    inner: S,
    cap_bytes: usize,
}

impl<S> CapOutput<S> {
    /// Wraps `inner`, capping outputs at `cap_bytes` of compact JSON.
    pub fn new(inner: S, cap_bytes: usize) -> CapOutput<S> {
        CapOutput { inner, cap_bytes }
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Unwraps the service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S> Service<ResolvedCall> for CapOutput<S>
where
    S: Service<ResolvedCall, Response = ToolResult, Error = ExecError> + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = ToolResult;
    type Error = ExecError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ExecError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: ResolvedCall) -> CallFuture {
        let cap = self.cap_bytes;
        let future = self.inner.call(call);
        Box::pin(async move {
            let mut result = future.await?;
            if let Some(output) = &mut result.output {
                result.truncation = cap_value(output, cap);
            }
            Ok(result)
        })
    }
}

pub(crate) fn size(value: &Value) -> usize {
    /// Counts the bytes written to it, keeping none.
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).map_or(usize::MAX, |()| count.0)
}

/// Whether `value`'s compact JSON surely fits in `cap` bytes, from a bound on its length that
/// is cheaper than writing it (most outputs are far below the cap): each string at most six
/// bytes per byte of text (`\u00XX`, the longest escape) and its quotes, each number at most
/// 24 characters (`-1.2345678901234567e-308`; an integer is at most 20), each literal at most
/// 5, and the brackets, colons and commas. `false` says only that the exact size is needed.
pub(crate) fn surely_fits(value: &Value, cap: usize) -> bool {
    /// Adds `value`'s bound to `total`; `false` as soon as it passes `cap`.
    fn add(value: &Value, total: &mut usize, cap: usize) -> bool {
        let string = |s: &str| s.len().saturating_mul(6).saturating_add(2);
        match value {
            Value::Null | Value::Bool(_) => *total = total.saturating_add(5),
            Value::Number(_) => *total = total.saturating_add(24),
            Value::String(s) => *total = total.saturating_add(string(s)),
            Value::Array(items) => {
                *total = total.saturating_add(2 + items.len());
                for item in items {
                    if !add(item, total, cap) {
                        return false;
                    }
                }
            }
            Value::Object(map) => {
                *total = total.saturating_add(2 + 2 * map.len());
                for (key, item) in map {
                    *total = total.saturating_add(string(key));
                    if !add(item, total, cap) {
                        return false;
                    }
                }
            }
        }
        *total <= cap
    }
    add(value, &mut 0, cap)
}

/// The marker appended to a cut string.
fn marker(kept: usize, original: usize) -> String {
    format!("…[truncated by locara: kept {kept} of {original} bytes]")
}

/// Cuts every string longer than `keep` bytes to `keep` bytes (at a char boundary) plus a
/// marker.
fn cut_strings(value: &mut Value, keep: usize) {
    match value {
        Value::String(s) if s.len() > keep + 64 => {
            let mut end = keep;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            let original = s.len();
            s.truncate(end);
            s.push_str(&marker(end, original));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| cut_strings(v, keep)),
        Value::Object(map) => map.values_mut().for_each(|v| cut_strings(v, keep)),
        _ => {}
    }
}

fn longest_string(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len(),
        Value::Array(items) => items.iter().map(longest_string).max().unwrap_or(0),
        Value::Object(map) => map.values().map(longest_string).max().unwrap_or(0),
        _ => 0,
    }
}

/// Brings `value` within `cap` bytes of compact JSON, if it is over.
///
/// The largest per-string length that fits is found by bisection, so short strings (ids,
/// paths, numbers) are kept whole and only the long ones are cut. If cutting every string
/// is not enough (a huge array of numbers, say), the value is replaced by an object that
/// says so and carries a prefix of the JSON text.
pub(crate) fn cap_value(value: &mut Value, cap: usize) -> Option<Truncation> {
    if surely_fits(value, cap) {
        return None;
    }
    let original = size(value);
    if original <= cap {
        return None;
    }
    let (mut lo, mut hi) = (0usize, longest_string(value));
    let mut best = None;
    while lo <= hi {
        let mid = lo + (hi - lo) / 2;
        let mut candidate = value.clone();
        cut_strings(&mut candidate, mid);
        if size(&candidate) <= cap {
            best = Some(candidate);
            lo = mid + 1;
        } else if mid == 0 {
            break;
        } else {
            hi = mid - 1;
        }
    }
    *value = match best {
        Some(v) => v,
        None => {
            let text = serde_json::to_string(value).unwrap_or_default();
            let mut end = (cap / 2).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            serde_json::json!({
                "truncated": true,
                "original_bytes": original,
                "json_prefix": &text[..end],
            })
        }
    };
    Some(Truncation {
        original_bytes: original,
        returned_bytes: size(value),
    })
}
