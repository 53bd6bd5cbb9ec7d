//! JSON values written in CPython's `marshal` format, for the host channel's answers to a guest
//! that asks for them (`"answer": "marshal"`, see [`super::host`]): CPython reads `marshal` in
//! C, without its JSON scanner, which in the sandbox takes several times as long as the rest of
//! a short answer's round trip.
//!
//! Only the types JSON has are written, each in the form every `marshal.loads` since Python 3.4
//! reads, and never as a back-reference: `None`, `True`, `False`, `int` (`i`, or `l` in 15-bit
//! digits beyond 32 bits), `float` (`g`, binary), `str` (`u`, UTF-8), `list` and `dict`.

use serde_json::Value;

/// `value` in `marshal` format.
pub(crate) fn to_marshal(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write(&mut out, value);
    out
}

fn write(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.push(b'N'),
        Value::Bool(false) => out.push(b'F'),
        Value::Bool(true) => out.push(b'T'),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                write_int(out, i128::from(i));
            } else if let Some(u) = n.as_u64() {
                write_int(out, i128::from(u));
            } else {
                out.push(b'g');
                out.extend_from_slice(&n.as_f64().unwrap_or(f64::NAN).to_le_bytes());
            }
        }
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            write_len(out, items.len());
            for item in items {
                write(out, item);
            }
        }
        Value::Object(map) => {
            out.push(b'{');
            for (key, item) in map {
                write_str(out, key);
                write(out, item);
            }
            out.push(b'0');
        }
    }
}

fn write_len(out: &mut Vec<u8>, len: usize) {
    // An answer is far below 2 GiB (the channel's and the output limits see to it).
    let len = i32::try_from(len).unwrap_or(i32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'u');
    write_len(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

/// An integer: `i` and 32 bits when it fits, else `l`: the count of 15-bit digits (negative
/// for a negative number), then the digits of its magnitude, least significant first.
fn write_int(out: &mut Vec<u8>, i: i128) {
    if let Ok(small) = i32::try_from(i) {
        out.push(b'i');
        out.extend_from_slice(&small.to_le_bytes());
        return;
    }
    let mut magnitude = i.unsigned_abs();
    let mut digits = Vec::new();
    while magnitude > 0 {
        digits.push((magnitude & 0x7fff) as u16);
        magnitude >>= 15;
    }
    let count = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    out.push(b'l');
    out.extend_from_slice(&(if i < 0 { -count } else { count }).to_le_bytes());
    for digit in digits {
        out.extend_from_slice(&digit.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::process::{Command, Stdio};

    use serde_json::json;

    use super::to_marshal;

    /// What Python's own `marshal.loads` makes of the bytes, written back as JSON.
    fn python_reads(bytes: &[u8]) -> serde_json::Value {
        let mut child = Command::new("python3")
            .args([
                "-c",
                "import json, marshal, sys; print(json.dumps(marshal.loads(sys.stdin.buffer.read())))",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs (Debian's python3 is a test dependency)");
        child.stdin.take().unwrap().write_all(bytes).unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "marshal.loads refused the bytes");
        serde_json::from_slice(&output.stdout).unwrap()
    }

    #[test]
    fn python_reads_back_every_json_value() {
        let value = json!({
            "none": null, "yes": true, "no": false,
            "ints": [0, 1, -1, 2147483647, -2147483648, 2147483648_i64, -2147483649_i64,
                     9007199254740993_i64, i64::MIN, u64::MAX],
            "floats": [0.5, -1.25e10, 1.0, 3.0e-310],
            "text": ["", "plain", "é ü 漢字 🦀", "line\nbreak \"quoted\" \u{0}"],
            "nested": {"list": [[], {}, [{"a": [1, {"b": null}]}]]},
        });
        assert_eq!(python_reads(&to_marshal(&value)), value);
    }

    #[test]
    fn a_run_response_reads_back_the_same() {
        let value = json!({"tool": "text.chunk@0.1.0", "ok": true, "output": {"chunks": [
            {"end": 19, "index": 0, "start": 0, "text": "Locara runs tools. "}], "count": 1},
            "stats": {"engine": "wasmtime", "elapsed_ms": 0.169724, "fuel_consumed": 51323}});
        assert_eq!(python_reads(&to_marshal(&value)), value);
    }
}
