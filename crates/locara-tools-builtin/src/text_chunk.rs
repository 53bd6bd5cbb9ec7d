//! `text.chunk`: splits text into chunks of at most `max_chars` characters.
//!
//! Splitting is hierarchical: the text is cut into paragraphs (at blank lines), and
//! consecutive paragraphs are packed greedily into chunks. A paragraph that is too long on
//! its own is cut into sentences (after `.`, `!`, `?` and line breaks) and packed the same
//! way; a sentence that is too long, into words; a word that is too long, at character
//! boundaries. The chunks of a paragraph that had to be split are not merged with the
//! neighbouring paragraphs, so chunk boundaries stay at the coarsest level available.
//! Separators stay attached to the piece before them, so with `overlap` 0 the chunks
//! concatenate back to the input exactly.
//!
//! With `overlap` > 0, chunks are first built with `max_chars - overlap` characters, then
//! each chunk after the first is extended backwards by up to `overlap` characters of the
//! preceding text (starting at a word boundary when one is available), so every chunk still
//! has at most `max_chars` characters. Lengths and offsets count Unicode scalar values.

use std::ops::Range;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use locara_pdk::{JsonSchema, tool};

use crate::abi::ToolError;

#[cfg(test)]
mod tests;

/// The largest `max_chars` accepted.
pub(crate) const MAX_MAX_CHARS: usize = 1_000_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
/// `text.chunk`'s arguments.
pub struct Args {
    /// The text to split.
    text: String,
    /// The most characters in one chunk (including any overlap). Default 1000.
    #[serde(default = "default_max_chars")]
    #[schemars(range(min = 1, max = 1_000_000))]
    max_chars: usize,
    /// How many characters of the preceding text each chunk after the first repeats; must be smaller than max_chars. Default 0.
    #[serde(default)]
    #[schemars(range(max = 999_999))]
    overlap: usize,
}

fn default_max_chars() -> usize {
    1000
}

/// One chunk of the input.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Chunk {
    /// The chunk's position, from 0.
    index: usize,
    /// The chunk's text.
    #[schemars(length(min = 1))]
    text: String,
    /// Character offset of the chunk's first character in the input.
    start: usize,
    /// Character offset just after the chunk's last character in the input.
    #[schemars(range(min = 1))]
    end: usize,
}

/// `text.chunk`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// The chunks, in order.
    chunks: Vec<Chunk>,
    /// The number of chunks.
    count: usize,
}

/// Splits text into chunks of at most max_chars characters (Unicode scalar values, not bytes),
/// e.g. for embedding or summarising a long document piece by piece. It splits at paragraph
/// breaks (blank lines) first, then at sentence ends and line breaks, then between words, and
/// only as a last resort inside a word, packing as many whole pieces into each chunk as fit.
/// Each chunk reports its start and end character offsets in the input (end exclusive). With
/// overlap 0 the chunks concatenate back to the input exactly; with overlap N, each chunk after
/// the first also repeats up to N characters of the text before it (starting at a word boundary
/// when possible). No file access.
#[tool(id = "text.chunk")]
pub fn text_chunk(args: Args) -> Result<Output, ToolError> {
    chunk(&args)
}

/// Runs `text.chunk` on a JSON input.
///
/// # Errors
/// Fails if the arguments are invalid, e.g. `overlap` is not smaller than `max_chars`.
pub fn run(input: Value) -> Result<Value, ToolError> {
    __locara_tool_call(input)
}

fn chunk(args: &Args) -> Result<Output, ToolError> {
    if !(1..=MAX_MAX_CHARS).contains(&args.max_chars) {
        return Err(ToolError::bad_args(format!(
            "max_chars must be between 1 and {MAX_MAX_CHARS}, got {}",
            args.max_chars
        )));
    }
    if args.overlap >= args.max_chars {
        return Err(ToolError::bad_args(format!(
            "overlap ({}) must be smaller than max_chars ({}); a common choice is 10-20% of max_chars",
            args.overlap, args.max_chars
        )));
    }
    let text = args.text.as_str();
    let mut spans = Vec::new();
    split(
        text,
        0..text.len(),
        Level::Paragraph,
        args.max_chars - args.overlap,
        &mut spans,
    );

    let mut start_counter = CharCounter::default();
    let mut end_counter = CharCounter::default();
    let chunks: Vec<Chunk> = spans
        .iter()
        .enumerate()
        .map(|(index, span)| {
            let start = if index == 0 {
                span.start
            } else {
                overlap_start(text, span.start, args.overlap)
            };
            Chunk {
                index,
                text: text[start..span.end].to_owned(),
                start: start_counter.char_offset(text, start),
                end: end_counter.char_offset(text, span.end),
            }
        })
        .collect();
    Ok(Output {
        count: chunks.len(),
        chunks,
    })
}

/// The levels of the hierarchy, coarsest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Paragraph,
    Sentence,
    Word,
    Char,
}

impl Level {
    fn finer(self) -> Level {
        match self {
            Level::Paragraph => Level::Sentence,
            Level::Sentence => Level::Word,
            Level::Word | Level::Char => Level::Char,
        }
    }
}

/// Splits `range` of `text` at `level` and packs the pieces greedily into spans of at most
/// `budget` chars, recursing into pieces that are too long. Appends the spans, in order.
fn split(
    text: &str,
    range: Range<usize>,
    level: Level,
    budget: usize,
    out: &mut Vec<Range<usize>>,
) {
    let mut current: Option<(Range<usize>, usize)> = None;
    for piece in pieces(text, range, level, budget) {
        let len = text[piece.clone()].chars().count();
        if len > budget {
            if let Some((span, _)) = current.take() {
                out.push(span);
            }
            split(text, piece, level.finer(), budget, out);
            continue;
        }
        current = match current.take() {
            Some((span, n)) if n + len <= budget => Some((span.start..piece.end, n + len)),
            Some((span, _)) => {
                out.push(span);
                Some((piece, len))
            }
            None => Some((piece, len)),
        };
    }
    if let Some((span, _)) = current {
        out.push(span);
    }
}

/// Cuts `range` into contiguous, non-empty pieces that together cover it.
fn pieces(text: &str, range: Range<usize>, level: Level, budget: usize) -> Vec<Range<usize>> {
    let base = range.start;
    let slice = &text[range.clone()];
    let cuts = match level {
        Level::Paragraph => paragraph_cuts(slice),
        Level::Sentence => whitespace_cuts(slice, true),
        Level::Word => whitespace_cuts(slice, false),
        Level::Char => slice
            .char_indices()
            .map(|(i, _)| i)
            .skip(budget)
            .step_by(budget)
            .collect(),
    };
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for cut in cuts {
        if cut > start && cut < slice.len() {
            out.push(base + start..base + cut);
            start = cut;
        }
    }
    if start < slice.len() {
        out.push(base + start..range.end);
    }
    out
}

/// Byte offsets where a paragraph starts after one or more blank lines.
fn paragraph_cuts(s: &str) -> Vec<usize> {
    let mut cuts = Vec::new();
    let mut offset = 0;
    let mut seen_text = false;
    let mut after_blank = false;
    for line in s.split_inclusive('\n') {
        let blank = line.trim().is_empty();
        if blank {
            after_blank = seen_text;
        } else {
            if after_blank {
                cuts.push(offset);
            }
            after_blank = false;
            seen_text = true;
        }
        offset += line.len();
    }
    cuts
}

/// Byte offsets at the end of whitespace runs.
///
/// With `sentences`, only runs that contain a line break or follow a sentence terminator
/// (optionally followed by closing quotes or brackets) count.
fn whitespace_cuts(s: &str, sentences: bool) -> Vec<usize> {
    let mut cuts = Vec::new();
    let mut chars = s.char_indices().peekable();
    let mut last_significant: Option<char> = None;
    while let Some((_, c)) = chars.next() {
        if !c.is_whitespace() {
            if !is_closer(c) || !last_significant.is_some_and(is_terminator) {
                last_significant = Some(c);
            }
            continue;
        }
        let mut has_newline = c == '\n';
        while let Some(&(_, next)) = chars.peek() {
            if !next.is_whitespace() {
                break;
            }
            has_newline |= next == '\n';
            chars.next();
        }
        let end = chars.peek().map_or(s.len(), |&(i, _)| i);
        if !sentences || has_newline || last_significant.is_some_and(is_terminator) {
            cuts.push(end);
        }
        last_significant = None;
    }
    cuts
}

fn is_terminator(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '…' | '。' | '！' | '？')
}

fn is_closer(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | ')' | ']' | '}' | '”' | '’' | '»' | '」' | '』'
    )
}

/// Where a chunk whose own text starts at byte `start` begins once up to `overlap` chars of
/// the preceding text are prepended.
///
/// The overlap starts at the first word start in that window, so it does not begin in the
/// middle of a word; a window with no whitespace at all (e.g. CJK text) is kept whole, and
/// one that holds no word start adds nothing.
fn overlap_start(text: &str, start: usize, overlap: usize) -> usize {
    if overlap == 0 {
        return start;
    }
    let window_start = text[..start]
        .char_indices()
        .rev()
        .nth(overlap - 1)
        .map_or(0, |(i, _)| i);
    let window = &text[window_start..start];
    if !window.contains(char::is_whitespace) {
        return window_start;
    }
    let mut after_space = window_start == 0
        || text[..window_start]
            .chars()
            .next_back()
            .is_some_and(char::is_whitespace);
    for (i, c) in window.char_indices() {
        if after_space && !c.is_whitespace() {
            return window_start + i;
        }
        after_space = c.is_whitespace();
    }
    start
}

/// Converts byte offsets to char offsets, counting only from the previous offset.
///
/// Fed (nearly) increasing offsets, this takes one pass over the text in total.
#[derive(Debug, Default)]
struct CharCounter {
    byte: usize,
    chars: usize,
}

impl CharCounter {
    fn char_offset(&mut self, text: &str, byte: usize) -> usize {
        if byte >= self.byte {
            self.chars += text[self.byte..byte].chars().count();
        } else {
            self.chars -= text[byte..self.byte].chars().count();
        }
        self.byte = byte;
        self.chars
    }
}
