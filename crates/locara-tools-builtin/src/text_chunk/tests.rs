//! Tests for `text.chunk`, including the concatenation and size invariants.

use serde_json::{Value, json};

fn chunk(input: Value) -> Value {
    super::run(input).unwrap()
}

/// The chunks' texts.
fn texts(out: &Value) -> Vec<String> {
    out["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["text"].as_str().unwrap().to_owned())
        .collect()
}

/// Checks every invariant the tool promises for `text` at `max_chars` / `overlap`.
fn check_invariants(text: &str, max_chars: usize, overlap: usize) -> Value {
    let out = chunk(json!({"text": text, "max_chars": max_chars, "overlap": overlap}));
    let chunks = out["chunks"].as_array().unwrap();
    assert_eq!(out["count"], chunks.len());
    let chars: Vec<char> = text.chars().collect();
    let mut covered = 0;
    for (i, c) in chunks.iter().enumerate() {
        let body = c["text"].as_str().unwrap();
        let (start, end) = (
            c["start"].as_u64().unwrap() as usize,
            c["end"].as_u64().unwrap() as usize,
        );
        assert_eq!(c["index"], i);
        assert!(!body.is_empty());
        assert!(
            body.chars().count() <= max_chars,
            "chunk {i} too long: {body:?}"
        );
        assert_eq!(
            chars[start..end].iter().collect::<String>(),
            body,
            "offsets of chunk {i}"
        );
        assert!(start <= covered, "gap before chunk {i}");
        assert!(
            covered - start <= overlap,
            "chunk {i} overlaps by more than {overlap}"
        );
        assert!(end > covered, "chunk {i} adds nothing");
        covered = end;
    }
    assert_eq!(covered, chars.len());
    if overlap == 0 {
        assert_eq!(texts(&out).concat(), text);
    }
    out
}

const PROSE: &str = "Rust is a language. It is fast! Is it safe? Yes.\n\nSecond paragraph here, with words.\nAnd a second line.\n\n\nThird.";

#[test]
fn small_text_is_one_chunk() {
    let out = chunk(json!({"text": "hello world"}));
    assert_eq!(
        out,
        json!({"chunks": [{"index": 0, "text": "hello world", "start": 0, "end": 11}], "count": 1})
    );
}

#[test]
fn empty_text_has_no_chunks() {
    assert_eq!(
        chunk(json!({"text": ""})),
        json!({"chunks": [], "count": 0})
    );
}

#[test]
fn prefers_paragraph_then_sentence_then_word_boundaries() {
    let out = check_invariants(PROSE, 50, 0);
    assert_eq!(
        texts(&out),
        [
            "Rust is a language. It is fast! Is it safe? Yes.\n\n",
            "Second paragraph here, with words.\n",
            // The pieces of a split paragraph are not merged with the next paragraph.
            "And a second line.\n\n\n",
            "Third.",
        ]
    );
    let out = check_invariants(PROSE, 25, 0);
    assert_eq!(
        texts(&out),
        [
            "Rust is a language. ",
            "It is fast! Is it safe? ",
            "Yes.\n\n",
            "Second paragraph here, ",
            "with words.\n",
            "And a second line.\n\n\n",
            "Third.",
        ]
    );
}

#[test]
fn long_words_are_cut_at_char_boundaries() {
    let text = "ab 😀😀😀😀😀😀😀 é";
    let out = check_invariants(text, 3, 0);
    assert_eq!(texts(&out), ["ab ", "😀😀😀", "😀😀😀", "😀 ", "é"]);
    // Offsets count characters, not bytes.
    assert_eq!(out["chunks"][1]["start"], 3);
    assert_eq!(out["chunks"][4]["end"], 12);
}

#[test]
fn max_chars_one() {
    let out = check_invariants("añb\n\nc", 1, 0);
    assert_eq!(texts(&out), ["a", "ñ", "b", "\n", "\n", "c"]);
}

#[test]
fn overlap_repeats_preceding_text_within_the_limit() {
    let text = "one two three four five six seven eight nine ten";
    let out = check_invariants(text, 20, 8);
    assert_eq!(
        texts(&out),
        // Chunks are built with 20 - 8 = 12 chars, then extended back by up to 8 chars.
        [
            "one two ",
            "one two three four ",
            "four five six ",
            "six seven eight ",
            "eight nine ten"
        ]
    );
}

#[test]
fn invariants_hold_on_varied_inputs() {
    let mut inputs: Vec<String> = vec![
        PROSE.to_owned(),
        "   leading spaces and trailing   ".to_owned(),
        "\n\n\nonly newlines first\n\n".to_owned(),
        "Ünïcödé wörds ünd 日本語の文章です。次の文。\n\n混合 text with 😀 emoji!".to_owned(),
        "x".repeat(1000),
        "word ".repeat(300),
    ];
    // A deterministic pseudo-random mix of characters and separators.
    let alphabet: Vec<char> = "ab é😀 .!?\n\t".chars().collect();
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..20 {
        let mut s = String::new();
        for _ in 0..300 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            s.push(alphabet[(seed % alphabet.len() as u64) as usize]);
        }
        inputs.push(s);
    }
    for text in &inputs {
        for max in [1, 2, 3, 7, 16, 50, 200, 5000] {
            check_invariants(text, max, 0);
            for overlap in [1, max / 2, max - 1] {
                if overlap < max {
                    check_invariants(text, max, overlap);
                }
            }
        }
    }
}

#[test]
fn argument_errors() {
    let err = super::run(json!({"text": "x", "max_chars": 0})).unwrap_err();
    assert_eq!(
        err.message(),
        "max_chars must be between 1 and 1000000, got 0"
    );
    let err = super::run(json!({"text": "x", "max_chars": 10, "overlap": 10})).unwrap_err();
    assert!(
        err.message()
            .starts_with("overlap (10) must be smaller than max_chars (10)"),
        "{err}"
    );
    let err = super::run(json!({"max_chars": 10})).unwrap_err();
    assert_eq!(err.message(), "invalid arguments: missing field `text`");
    let err = super::run(json!({"text": "x", "overlap": -1})).unwrap_err();
    assert!(
        err.message().contains("invalid value: integer `-1`"),
        "{err}"
    );
}

#[test]
fn overlap_starts_at_a_word_and_skips_whitespace_only_windows() {
    let out = check_invariants("Para one. Sentence two.\n\nPara two is here.", 20, 5);
    assert_eq!(
        texts(&out),
        [
            "Para one. ",
            "one. Sentence two.\n\n",
            "Para two is ",
            "is here."
        ]
    );
    // Without whitespace there is no word boundary: the overlap is taken as it is.
    let out = check_invariants("日本語の文章です次の文章です", 6, 2);
    assert_eq!(
        texts(&out),
        ["日本語の", "語の文章です", "です次の文章", "文章です"]
    );
}
