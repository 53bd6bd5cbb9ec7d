//! BERT's uncased WordPiece tokenizer, as Hugging Face's `tokenizers` runs it for
//! all-MiniLM-L6-v2: only what that model's `tokenizer.json` asks for, and a load error for a
//! file that asks for anything else.
//!
//! A text is read in four steps, each the reference's:
//! 1. The special tokens written in the text (`[CLS]`, `[SEP]`, `[MASK]`…, the file's
//!    `added_tokens`, matched as written, leftmost and longest first) are taken out as
//!    themselves; the pieces between them go through the next steps.
//! 2. `BertNormalizer`: control and format characters, NUL and U+FFFD are dropped, every other
//!    white space becomes a space; CJK ideographs get a space on each side; the text is
//!    decomposed (NFD) and its non-spacing marks dropped (accents); then each character is
//!    lower-cased on its own (so a final `Σ` becomes `σ`, as in the reference).
//! 3. `BertPreTokenizer`: split at white space, which is dropped, and around each punctuation
//!    character, which becomes a word of its own.
//! 4. `WordPiece`: each word is the longest vocabulary entry that starts it, then the longest
//!    `##` entry that continues it, and so on; a word that cannot be pieced that way, or of
//!    more than `max_input_chars_per_word` characters, is one `[UNK]`.
//!
//! Character classes come from the `unicode_categories` tables the reference uses, so a
//! character's class is the one the model was trained with, not a newer Unicode's; NFD is
//! `unicode-normalization`'s. `tests/wordpiece/reference.json` holds the reference's ids for
//! 325 texts, and a test reads each of them here.

use std::collections::HashMap;

use serde_json::Value;
use unicode_categories::UnicodeCategories as _;
use unicode_normalization::UnicodeNormalization as _;

/// A `tokenizer.json` this module does not read as its writer meant.
#[derive(Debug, thiserror::Error)]
#[error("unsupported tokenizer file: {0}")]
pub(crate) struct Unsupported(String);

/// A loaded vocabulary and the settings the file gives; see the module docs.
#[derive(Debug)]
pub(crate) struct WordPiece {
    vocab: HashMap<String, u32>,
    /// The special tokens matched in a text as written, with their ids.
    specials: Vec<(String, u32)>,
    prefix: String,
    max_word_chars: usize,
    unk: u32,
    cls: u32,
    sep: u32,
}

impl WordPiece {
    /// Reads a Hugging Face `tokenizer.json` of a BERT uncased WordPiece model.
    pub(crate) fn from_json(bytes: &[u8]) -> Result<WordPiece, Unsupported> {
        let file: Value =
            serde_json::from_slice(bytes).map_err(|e| Unsupported(format!("not JSON: {e}")))?;
        let expect = |pointer: &str, want: Value| -> Result<(), Unsupported> {
            let got = file.pointer(pointer).unwrap_or(&Value::Null);
            if *got == want {
                Ok(())
            } else {
                Err(Unsupported(format!("{pointer} is {got}, expected {want}")))
            }
        };
        expect("/normalizer/type", "BertNormalizer".into())?;
        expect("/normalizer/clean_text", true.into())?;
        expect("/normalizer/handle_chinese_chars", true.into())?;
        expect("/normalizer/strip_accents", Value::Null)?;
        expect("/normalizer/lowercase", true.into())?;
        expect("/pre_tokenizer/type", "BertPreTokenizer".into())?;
        expect("/model/type", "WordPiece".into())?;

        let model = &file["model"];
        let vocab: HashMap<String, u32> = serde_json::from_value(model["vocab"].clone())
            .map_err(|e| Unsupported(format!("/model/vocab: {e}")))?;
        let prefix = model["continuing_subword_prefix"]
            .as_str()
            .ok_or_else(|| Unsupported("/model/continuing_subword_prefix is missing".into()))?
            .to_owned();
        let max_word_chars = model["max_input_chars_per_word"]
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| Unsupported("/model/max_input_chars_per_word is missing".into()))?;
        let id = |token: &str, of: &str| {
            vocab
                .get(token)
                .copied()
                .ok_or_else(|| Unsupported(format!("{of} {token:?} is not in the vocabulary")))
        };
        let unk = id(
            model["unk_token"]
                .as_str()
                .ok_or_else(|| Unsupported("/model/unk_token is missing".into()))?,
            "the unknown token",
        )?;

        // [CLS] $A [SEP]: the single-sequence template, checked to be exactly that.
        let single = file.pointer("/post_processor/single");
        let template = |i: usize, key: &str| {
            single
                .and_then(|s| s.get(i))
                .and_then(|part| part.get(key))
                .and_then(|part| part.get("id"))
                .and_then(Value::as_str)
        };
        expect("/post_processor/type", "TemplateProcessing".into())?;
        let (Some(cls), Some("A"), Some(sep), None) = (
            template(0, "SpecialToken"),
            template(1, "Sequence"),
            template(2, "SpecialToken"),
            single.and_then(|s| s.get(3)),
        ) else {
            return Err(Unsupported(
                "/post_processor/single is not [CLS] $A [SEP]".into(),
            ));
        };
        let (cls, sep) = (id(cls, "the template's")?, id(sep, "the template's")?);

        let mut specials = Vec::new();
        for token in file["added_tokens"].as_array().into_iter().flatten() {
            let flag = |key: &str| token[key].as_bool().unwrap_or(false);
            let content = token["content"].as_str().unwrap_or_default();
            if !flag("special") || flag("normalized") {
                return Err(Unsupported(format!(
                    "added token {content:?} is not a special token matched as written"
                )));
            }
            if flag("single_word") || flag("lstrip") || flag("rstrip") || content.is_empty() {
                return Err(Unsupported(format!(
                    "added token {content:?} asks for word or space matching"
                )));
            }
            let id = token["id"]
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| Unsupported(format!("added token {content:?} has no id")))?;
            specials.push((content.to_owned(), id));
        }
        Ok(WordPiece {
            vocab,
            specials,
            prefix,
            max_word_chars,
            unk,
            cls,
            sep,
        })
    }

    /// The ids of `text`: `[CLS]`, at most `max_tokens - 2` of its tokens, `[SEP]`.
    pub(crate) fn encode(&self, text: &str, max_tokens: usize) -> Vec<u32> {
        let mut ids = vec![self.cls];
        let mut rest = text;
        while !rest.is_empty() {
            let (before, special) = self.next_special(rest);
            self.encode_piece(before, &mut ids);
            match special {
                Some((len, id)) => {
                    ids.push(id);
                    rest = &rest[before.len() + len..];
                }
                None => break,
            }
        }
        ids.truncate(max_tokens.saturating_sub(1).max(1));
        ids.push(self.sep);
        ids
    }

    /// The text before the first special token written in `text`, and that token's length
    /// and id (the longest of those starting at the leftmost position).
    fn next_special<'t>(&self, text: &'t str) -> (&'t str, Option<(usize, u32)>) {
        for (at, _) in text.char_indices() {
            let longest = self
                .specials
                .iter()
                .filter(|(content, _)| text[at..].starts_with(content.as_str()))
                .max_by_key(|(content, _)| content.len());
            if let Some((content, id)) = longest {
                return (&text[..at], Some((content.len(), *id)));
            }
        }
        (text, None)
    }

    /// Normalizes, splits and pieces a text without special tokens, onto `ids`.
    fn encode_piece(&self, text: &str, ids: &mut Vec<u32>) {
        let mut spaced = String::with_capacity(text.len());
        for c in text.chars() {
            if c == '\0' || c == '\u{fffd}' || is_control(c) {
                continue;
            }
            if is_whitespace(c) {
                spaced.push(' ');
            } else if is_chinese_char(c) {
                spaced.extend([' ', c, ' ']);
            } else {
                spaced.push(c);
            }
        }
        let mut normalized = String::with_capacity(spaced.len());
        for c in spaced.nfd().filter(|c| !c.is_mark_nonspacing()) {
            normalized.extend(c.to_lowercase());
        }
        for word in normalized.split(char::is_whitespace) {
            let mut start = 0;
            for (at, c) in word.char_indices() {
                if is_punctuation(c) {
                    self.piece(&word[start..at], ids);
                    self.piece(&word[at..at + c.len_utf8()], ids);
                    start = at + c.len_utf8();
                }
            }
            self.piece(&word[start..], ids);
        }
    }

    /// WordPiece of one word (nothing for an empty one), onto `ids`.
    fn piece(&self, word: &str, ids: &mut Vec<u32>) {
        if word.is_empty() {
            return;
        }
        if word.chars().count() > self.max_word_chars {
            ids.push(self.unk);
            return;
        }
        let first = ids.len();
        let mut key = String::with_capacity(word.len() + self.prefix.len());
        let mut start = 0;
        while start < word.len() {
            let mut end = word.len();
            let found = loop {
                key.clear();
                if start > 0 {
                    key.push_str(&self.prefix);
                }
                key.push_str(&word[start..end]);
                if let Some(id) = self.vocab.get(&key) {
                    break Some(*id);
                }
                match word[start..end].char_indices().next_back() {
                    Some((last, _)) if last > 0 => end = start + last,
                    _ => break None,
                }
            };
            let Some(id) = found else {
                ids.truncate(first);
                ids.push(self.unk);
                return;
            };
            ids.push(id);
            start = end;
        }
    }
}

/// White space for the normalizer: tab, newline and carriage return, and what Rust calls
/// white space.
fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Control for the normalizer: Unicode's Cc, Cf and Co, but for tab, newline and return.
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

/// ASCII punctuation (which includes `$+<=>^`|~`) and Unicode's P* classes.
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || c.is_punctuation()
}

/// The CJK ideograph blocks the reference puts spaces around.
fn is_chinese_char(c: char) -> bool {
    matches!(
        u32::from(c),
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::WordPiece;

    fn file() -> Value {
        let names = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "!", "cafe",
            "σ", "中", "x",
        ];
        let special = |id: usize| {
            json!({"id": id, "content": names[id], "special": true, "normalized": false,
                   "single_word": false, "lstrip": false, "rstrip": false})
        };
        let vocab: serde_json::Map<String, Value> = names
            .iter()
            .enumerate()
            .map(|(i, t)| (t.to_string(), json!(i)))
            .collect();
        json!({
            "added_tokens": [special(0), special(1), special(2), special(3), special(4)],
            "normalizer": {"type": "BertNormalizer", "clean_text": true,
                           "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": {"type": "TemplateProcessing", "single": [
                {"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "[SEP]", "type_id": 0}}]},
            "model": {"type": "WordPiece", "unk_token": "[UNK]",
                      "continuing_subword_prefix": "##", "max_input_chars_per_word": 9,
                      "vocab": vocab},
        })
    }

    fn load(file: &Value) -> Result<WordPiece, String> {
        WordPiece::from_json(file.to_string().as_bytes()).map_err(|e| e.to_string())
    }

    #[test]
    fn words_are_pieced_longest_first_and_unknown_whole() {
        let wp = load(&file()).unwrap();
        // un ##aff ##able; "!" alone; CAFÉ lower-cased without its accent; [MASK] as written;
        // "unx" cannot be pieced (no "##x"): one [UNK]; a word over 9 characters: one [UNK].
        assert_eq!(
            wp.encode("Unaffable! CAFÉ [MASK]unx unaffableun", 16),
            [2, 5, 6, 7, 8, 9, 4, 1, 1, 3]
        );
        // A final capital sigma is lower-cased on its own; ideographs are words of their own.
        assert_eq!(wp.encode("Σ中x\u{7}", 16), [2, 10, 11, 12, 3]);
        // At most `max_tokens` ids, [SEP] last.
        assert_eq!(wp.encode("x x x x x", 4), [2, 12, 12, 3]);
        assert_eq!(wp.encode("", 4), [2, 3]);
    }

    #[test]
    fn a_file_asking_for_something_else_is_refused() {
        let cases: [(&str, Value); 5] = [
            ("/normalizer/lowercase", json!(false)),
            ("/normalizer/strip_accents", json!(true)),
            ("/pre_tokenizer/type", json!("Whitespace")),
            ("/model/unk_token", json!("<unk>")),
            ("/added_tokens/1/lstrip", json!(true)),
        ];
        for (pointer, value) in cases {
            let mut changed = file();
            *changed.pointer_mut(pointer).unwrap() = value;
            let error = load(&changed).unwrap_err();
            assert!(error.starts_with("unsupported tokenizer file: "), "{error}");
            let field = pointer.rsplit('/').next().unwrap();
            assert!(
                error.contains(field) || error.contains("<unk>") || error.contains("[UNK]"),
                "{pointer}: {error}"
            );
        }
        let mut pair = file();
        pair["post_processor"]["single"]
            .as_array_mut()
            .unwrap()
            .pop();
        assert!(load(&pair).unwrap_err().contains("[CLS] $A [SEP]"));
        assert!(load(&json!("not a tokenizer")).is_err());
    }
}
