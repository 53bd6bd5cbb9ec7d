//! Turning Whisper token ids back into text, from a Hugging Face `tokenizer.json`.
//!
//! Whisper uses GPT-2's byte-level BPE: every token is a string over a 256-character alphabet
//! that stands for bytes (`bytes_to_unicode`). Decoding maps each character back to its byte
//! and reads the bytes as UTF-8. Only decoding is needed, so the tokenizer's merges are unused.

use std::collections::HashMap;

use serde::Deserialize;

#[derive(Deserialize)]
struct TokenizerJson {
    model: BpeModel,
    #[serde(default)]
    added_tokens: Vec<AddedToken>,
}

#[derive(Deserialize)]
struct BpeModel {
    vocab: HashMap<String, u32>,
}

#[derive(Deserialize)]
struct AddedToken {
    id: u32,
    content: String,
}

/// A token id → byte string table.
#[derive(Debug, Clone)]
pub(crate) struct Vocab {
    /// The bytes of each regular token, by id.
    tokens: Vec<Option<Vec<u8>>>,
    /// Special tokens (`<|endoftext|>` …) by content.
    special: HashMap<String, u32>,
}

/// GPT-2's byte ↔ character table: printable Latin-1 bytes stand for themselves, the others
/// are mapped to U+0100 onwards in byte order.
fn byte_of_char() -> HashMap<char, u8> {
    let mut map = HashMap::with_capacity(256);
    let mut next = 0u32;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xa1..=0xac | 0xae..=0xff);
        let c = if printable {
            char::from(b)
        } else {
            let c = char::from_u32(256 + next).unwrap_or('\u{fffd}');
            next += 1;
            c
        };
        map.insert(c, b);
    }
    map
}

impl Vocab {
    /// Parses a `tokenizer.json`.
    ///
    /// # Errors
    /// A message if the JSON is not a byte-level BPE tokenizer.
    pub(crate) fn from_json(bytes: &[u8]) -> Result<Vocab, String> {
        let json: TokenizerJson = serde_json::from_slice(bytes)
            .map_err(|e| format!("it is not a BPE tokenizer.json: {e}"))?;
        let table = byte_of_char();
        let size = json
            .model
            .vocab
            .values()
            .chain(json.added_tokens.iter().map(|t| &t.id))
            .max()
            .map_or(0, |&m| m as usize + 1);
        let mut tokens = vec![None; size];
        for (text, id) in json.model.vocab {
            let bytes: Option<Vec<u8>> = text.chars().map(|c| table.get(&c).copied()).collect();
            let bytes = bytes.ok_or_else(|| {
                format!("token {id} ({text:?}) is not byte-level BPE; is this Whisper's tokenizer?")
            })?;
            tokens[id as usize] = Some(bytes);
        }
        // Special tokens (`<|endoftext|>` is also in the BPE vocabulary) have no text.
        let mut special = HashMap::with_capacity(json.added_tokens.len());
        for t in json.added_tokens {
            if let Some(slot) = tokens.get_mut(t.id as usize) {
                *slot = None;
            }
            special.insert(t.content, t.id);
        }
        Ok(Vocab { tokens, special })
    }

    /// The id of a special token such as `<|endoftext|>`.
    pub(crate) fn special(&self, content: &str) -> Option<u32> {
        self.special.get(content).copied()
    }

    /// The text of a sequence of token ids; ids without text (special, timestamps) are skipped.
    pub(crate) fn decode(&self, ids: &[u32]) -> String {
        let bytes: Vec<u8> = ids
            .iter()
            .filter_map(|&id| self.tokens.get(id as usize).and_then(Option::as_ref))
            .flatten()
            .copied()
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}
