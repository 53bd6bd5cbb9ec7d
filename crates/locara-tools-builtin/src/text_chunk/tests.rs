//! Tests for `text.chunk`, including the concatenation and size invariants, checked on
//! examples and as properties (proptest) of generated texts.

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
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
        // The repeated text starts at a word when it has a word boundary at all.
        if chars[start..covered].iter().any(|c| c.is_whitespace()) {
            assert!(
                !chars[start].is_whitespace() && (start == 0 || chars[start - 1].is_whitespace()),
                "the overlap of chunk {i} starts inside a word or on a space: {body:?}"
            );
        }
        // A word is cut only when it is longer than a chunk's own text may be.
        if i > 0 && !chars[covered - 1].is_whitespace() && !chars[covered].is_whitespace() {
            let word_start = chars[..covered]
                .iter()
                .rposition(|c| c.is_whitespace())
                .map_or(0, |p| p + 1);
            let word_end = chars[covered..]
                .iter()
                .position(|c| c.is_whitespace())
                .map_or(chars.len(), |p| covered + p);
            assert!(
                word_end - word_start > max_chars - overlap,
                "chunk {i} starts inside a word that would have fit: {body:?}"
            );
        }
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

// Properties: for any text and any valid `max_chars`/`overlap`, `check_invariants` holds.

/// Pieces of text that exercise each level of the splitter and each way of counting.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        // Words, in ASCII and with multi-byte and combining characters.
        4 => "[a-zA-Z0-9,;:'-]{1,10}",
        2 => "[a-zéñüßøλж日本語😀\u{301}\u{308}]{1,8}",
        // Separators: spaces, tabs, line breaks (LF and CRLF), blank lines, odd whitespace.
        4 => Just(" ".to_owned()),
        2 => prop::sample::select(vec![
            "\n", "\r\n", "\n\n", "\r\n\r\n", "\n\n\n\n\n", " \n \t\n", "\t",
            "\u{a0}", "\u{2028}", "\u{85}", "\u{3000}", "  ",
        ])
        .prop_map(str::to_owned),
        // Sentence ends, with and without closers.
        2 => prop::sample::select(vec![".", "!", "?", "…", "。", "！", ".\"", "?)", ". ", "!» "])
            .prop_map(str::to_owned),
        // Long runs without whitespace: a word that must be cut inside.
        1 => ("[a-z😀é]", 20..300usize).prop_map(|(c, n)| c.repeat(n)),
        // Grapheme clusters of several scalar values: combining marks, skin tones, ZWJ.
        1 => prop::sample::select(vec!["e\u{301}", "👍🏽", "👨\u{200d}👩\u{200d}👧", "\u{200b}"])
            .prop_map(str::to_owned),
        // Anything at all.
        1 => any::<String>(),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..80).prop_map(|pieces| pieces.concat())
}

/// `max_chars` over its whole range, mostly small enough to split the text, and an `overlap`
/// smaller than it: 0 half the time.
fn limits() -> impl Strategy<Value = (usize, usize)> {
    prop_oneof![1..=8usize, 1..=64usize, 1..=super::MAX_MAX_CHARS]
        .prop_flat_map(|max| (Just(max), prop_oneof![Just(0), 0..max]))
}

/// A fixed seed keeps the run reproducible; `PROPTEST_RNG_SEED` and `PROPTEST_CASES` explore
/// further.
fn config(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = cases;
    }
    if config.rng_seed == RngSeed::Random {
        config.rng_seed = RngSeed::Fixed(0x7e57_c4a2);
    }
    config.failure_persistence = None;
    config
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn chunks_rejoin_respect_the_limit_and_report_their_offsets(
        text in text(),
        (max_chars, overlap) in limits(),
    ) {
        check_invariants(&text, max_chars, overlap);
    }

    /// Lengths count chars, not bytes: text of at most `max_chars` chars is never split.
    #[test]
    fn text_that_fits_is_one_chunk(text in text(), slack in 0..4usize) {
        let len = text.chars().count();
        let out = check_invariants(&text, (len + slack).max(1), 0);
        prop_assert_eq!(out["count"].as_u64(), Some(u64::from(len > 0)));
    }
}
