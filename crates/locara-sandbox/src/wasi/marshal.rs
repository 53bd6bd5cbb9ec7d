//! JSON text rewritten in CPython's `marshal` format, for the host channel's answers to a guest
//! that asks for them (`"answer": "marshal"`, see [`super::host`]): CPython reads `marshal` in
//! C, without its JSON scanner, which in the sandbox takes several times as long as the rest of
//! a short answer's round trip.
//!
//! The JSON is read once and written as it is read, never held as values (parsing a tool's
//! answer into a `serde_json::Value` and walking it took a few microseconds an inner call,
//! mostly allocating and freeing its maps). Only the types JSON has are written, each in a
//! form every `marshal.loads` since Python 3.4 reads: `None`, `True`, `False`, `int` (`i`, or
//! `l` in 15-bit digits beyond 32 bits), `float` (`g`, binary), `str` (`z`/`a` when ASCII, so
//! CPython copies it without decoding UTF-8, else `u`), `list` and `dict`. A dict key is marked
//! as a reference the first time it is seen, and a key seen again (`"text"` in every chunk of a
//! list) is written as a back-reference to that string, not as a new one. (Keys are not
//! interned: on CPython 3.11 that made a short answer slower to read, 2.8 µs against 2.4.)

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};

/// A `str` of ASCII bytes, with a one-byte length (`z`), or a four-byte one (`a`).
const SHORT_ASCII: u8 = b'z';
const ASCII: u8 = b'a';
/// A `str` of UTF-8 bytes.
const UNICODE: u8 = b'u';
/// Added to a type: the reader keeps the object, for later back-references.
const FLAG_REF: u8 = 0x80;
/// A back-reference: the object the reader kept `n`th (four bytes).
const REF: u8 = b'r';

/// The most distinct keys marked as references; a later new key is written out each time.
const MAX_KEY_REFS: usize = 64;

/// `json` (a service's answer) in `marshal` format; text that is not JSON becomes a `str` of
/// it (invalid UTF-8 replaced), as it would in a JSON answer.
pub(crate) fn json_to_marshal(json: &[u8]) -> Vec<u8> {
    let mut writer = Writer {
        out: Vec::with_capacity(json.len() + 64),
        keys: Vec::new(),
    };
    let mut de = serde_json::Deserializer::from_slice(json);
    if Item(&mut writer).deserialize(&mut de).is_ok() && de.end().is_ok() {
        return writer.out;
    }
    // What was written before the JSON turned out bad is dropped, the keys with it.
    writer.out.clear();
    writer.keys.clear();
    writer.str(&String::from_utf8_lossy(json));
    writer.out
}

struct Writer<'de> {
    out: Vec<u8>,
    /// The keys marked as references, in the order the reader keeps them.
    keys: Vec<&'de str>,
}

impl<'de> Writer<'de> {
    fn len(&mut self, len: usize) {
        // An answer is far below 2 GiB (the channel's and the output limits see to it).
        let len = i32::try_from(len).unwrap_or(i32::MAX);
        self.out.extend_from_slice(&len.to_le_bytes());
    }

    fn str(&mut self, s: &str) {
        self.flagged_str(s, 0);
    }

    fn flagged_str(&mut self, s: &str, flags: u8) {
        if s.is_ascii() {
            if let Ok(short) = u8::try_from(s.len()) {
                self.out.extend_from_slice(&[SHORT_ASCII | flags, short]);
            } else {
                self.out.push(ASCII | flags);
                self.len(s.len());
            }
        } else {
            self.out.push(UNICODE | flags);
            self.len(s.len());
        }
        self.out.extend_from_slice(s.as_bytes());
    }

    /// A dict key the input lends for as long as it lives: a back-reference when seen before,
    /// else written and, while there is room, kept for one.
    fn key(&mut self, key: &'de str) {
        if let Some(n) = self.keys.iter().position(|k| *k == key) {
            self.out.push(REF);
            self.len(n);
        } else if self.keys.len() < MAX_KEY_REFS {
            self.keys.push(key);
            self.flagged_str(key, FLAG_REF);
        } else {
            self.str(key);
        }
    }

    /// An integer: `i` and 32 bits when it fits, else `l`: the count of 15-bit digits
    /// (negative for a negative number), then the digits of its magnitude, least significant
    /// first.
    fn int(&mut self, i: i128) {
        if let Ok(small) = i32::try_from(i) {
            self.out.push(b'i');
            self.out.extend_from_slice(&small.to_le_bytes());
            return;
        }
        let mut magnitude = i.unsigned_abs();
        let mut digits = Vec::new();
        while magnitude > 0 {
            digits.push((magnitude & 0x7fff) as u16);
            magnitude >>= 15;
        }
        let count = i32::try_from(digits.len()).unwrap_or(i32::MAX);
        self.out.push(b'l');
        self.out
            .extend_from_slice(&(if i < 0 { -count } else { count }).to_le_bytes());
        for digit in digits {
            self.out.extend_from_slice(&digit.to_le_bytes());
        }
    }
}

/// One JSON value, written as it is read.
struct Item<'w, 'de>(&'w mut Writer<'de>);

impl<'de> DeserializeSeed<'de> for Item<'_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Item<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.out.push(b'N');
        Ok(())
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.0.out.push(if v { b'T' } else { b'F' });
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.0.int(i128::from(v));
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.0.int(i128::from(v));
        Ok(())
    }

    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        self.0.out.push(b'g');
        self.0.out.extend_from_slice(&v.to_le_bytes());
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.0.str(v);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let at = self.0.out.len();
        self.0.out.extend_from_slice(&[b'[', 0, 0, 0, 0]);
        let mut count = 0usize;
        while seq.next_element_seed(Item(self.0))?.is_some() {
            count += 1;
        }
        let count = i32::try_from(count).map_err(|_| A::Error::custom("too many items"))?;
        self.0.out[at + 1..at + 5].copy_from_slice(&count.to_le_bytes());
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.0.out.push(b'{');
        while map.next_key_seed(Key(self.0))?.is_some() {
            map.next_value_seed(Item(self.0))?;
        }
        self.0.out.push(b'0');
        Ok(())
    }
}

/// A dict key: kept for back-references when the input lends it (it has no escapes).
struct Key<'w, 'de>(&'w mut Writer<'de>);

impl<'de> DeserializeSeed<'de> for Key<'_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object's key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<(), E> {
        self.0.key(v);
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.0.str(v);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::process::{Command, Stdio};

    use serde_json::json;

    use super::json_to_marshal;

    fn to_marshal(value: &serde_json::Value) -> Vec<u8> {
        json_to_marshal(value.to_string().as_bytes())
    }

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

    #[test]
    fn keys_seen_again_strings_of_every_length_and_escaped_keys_read_back_the_same() {
        let many: serde_json::Map<String, serde_json::Value> = (0..70)
            .map(|i| (format!("key{i}"), json!([i, {format!("key{i}"): i}])))
            .collect();
        let value = json!({
            "chunks": [{"text": "a", "start": 0}, {"text": "b", "start": 1}, {"start": 2, "text": "c"}],
            "ascii": ["x".repeat(255), "y".repeat(256), "z".repeat(70_000)],
            "not ascii": ["é".repeat(200), "日本".to_owned()],
            "clé": {"clé": "clé", "tab\tkey": {"tab\tkey": 1}, "é": 2},
            "many": many,
            "": {"": ""},
        });
        let bytes = to_marshal(&value);
        assert_eq!(python_reads(&bytes), value);
        // "text" and "start" once each, then back-references.
        assert_eq!(bytes.windows(4).filter(|w| *w == b"text").count(), 1);
    }

    #[test]
    fn text_that_is_not_json_is_a_string() {
        assert_eq!(
            python_reads(&json_to_marshal(b"plain words, not JSON \xff")),
            json!("plain words, not JSON \u{fffd}")
        );
        assert_eq!(
            python_reads(&json_to_marshal(b"{\"a\": 1} trailing")),
            json!("{\"a\": 1} trailing")
        );
        assert_eq!(python_reads(&json_to_marshal(b" [1, 2] ")), json!([1, 2]));
        assert_eq!(
            python_reads(&json_to_marshal(
                r#"[{"\u00e9": 1}, {"\u00e9": 2, "é": 3}]"#.as_bytes()
            )),
            json!([{"é": 1}, {"é": 3}])
        );
    }
}
