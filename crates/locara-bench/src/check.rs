//! Checks a `text.chunk` output against its input, so that the benchmark never times a call
//! that failed or returned the wrong thing.

use serde_json::Value;

/// Checks that `output` is `text.chunk`'s correct answer for `text` with `max_chars` and no
/// overlap: every chunk is non-empty and at most `max_chars` characters, the offsets are
/// contiguous, the chunks concatenate back to `text`, and `count` is the number of chunks.
///
/// # Errors
/// A message saying what is wrong.
pub fn check_chunks(output: &Value, text: &str, max_chars: usize) -> Result<(), String> {
    let chunks = output
        .get("chunks")
        .and_then(Value::as_array)
        .ok_or("no `chunks` array")?;
    let count = output
        .get("count")
        .and_then(Value::as_u64)
        .ok_or("no `count`")?;
    if count != chunks.len() as u64 {
        return Err(format!(
            "count is {count} but there are {} chunks",
            chunks.len()
        ));
    }
    let mut joined = String::with_capacity(text.len());
    let mut offset = 0;
    for (i, chunk) in chunks.iter().enumerate() {
        let piece = chunk
            .get("text")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("chunk {i} has no text"))?;
        let chars = piece.chars().count();
        if chars == 0 || chars > max_chars {
            return Err(format!(
                "chunk {i} has {chars} characters (max {max_chars})"
            ));
        }
        let field = |name: &str| chunk.get(name).and_then(Value::as_u64);
        let expected = (
            Some(i as u64),
            Some(offset as u64),
            Some((offset + chars) as u64),
        );
        let found = (field("index"), field("start"), field("end"));
        if found != expected {
            return Err(format!(
                "chunk {i} has (index, start, end) {found:?}, expected {expected:?}"
            ));
        }
        offset += chars;
        joined.push_str(piece);
    }
    if joined != text {
        return Err(format!("the chunks join to {joined:?}, not to the input"));
    }
    Ok(())
}
