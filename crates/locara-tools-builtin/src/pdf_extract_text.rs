//! `pdf.extract-text`: the text layer of a PDF, page by page.
//!
//! Text comes from `pdf-extract` in content-stream order with its line and word breaks
//! (see [`crate::pdf::page_text`]). Pages are extracted in ascending order until `max_chars`
//! characters (Unicode scalar values) have been returned; the page that crosses the limit is cut,
//! and the result says where to continue. Pages without any text (scanned images, blank pages)
//! get empty text and a hint pointing at OCR.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::abi::{self, ToolError};
use crate::blob::{Blob, OutDir};
use crate::pdf::{self, Encryption};

#[cfg(test)]
mod tests;

/// The default for `max_chars`.
pub(crate) const DEFAULT_MAX_CHARS: usize = 50_000;

/// The largest `max_chars` accepted.
pub(crate) const MAX_MAX_CHARS: usize = 10_000_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    source: Blob,
    #[serde(default)]
    pages: Option<String>,
    #[serde(default = "default_max_chars")]
    max_chars: usize,
}

fn default_max_chars() -> usize {
    DEFAULT_MAX_CHARS
}

/// The text of one page.
#[derive(Debug, Serialize)]
pub(crate) struct PageText {
    pub(crate) page: u32,
    pub(crate) text: String,
}

#[derive(Debug, Serialize)]
struct Output {
    page_count: u32,
    pages: Vec<PageText>,
    truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_page: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
}

/// Runs `pdf.extract-text`. `out` is unused: the tool produces no files.
///
/// # Errors
/// Bad arguments for an unreadable, non-PDF, malformed or encrypted `source`, a bad `pages`
/// list or `max_chars`; failed when a page's content cannot be interpreted.
pub fn run(input: Value, root: &Path, _out: &OutDir) -> Result<Value, ToolError> {
    let args: Args = abi::parse_args(input)?;
    if !(1..=MAX_MAX_CHARS).contains(&args.max_chars) {
        return Err(ToolError::bad_args(format!(
            "max_chars must be between 1 and {MAX_MAX_CHARS}, got {}",
            args.max_chars
        )));
    }
    let bytes = args.source.read(root, pdf::MAX_PDF_BYTES)?;
    let what = format!("source {}", args.source.describe());
    let mut pdf = pdf::load(&bytes, &what)?;
    pdf::repair_fonts(&mut pdf);
    abi::to_output(&extract(&pdf, args.pages.as_deref(), args.max_chars)?)
}

/// The text of every page of `pdf`, in order, with no limit (for tests and `pdf.split`'s tests).
#[cfg(test)]
pub(crate) fn all_pages(pdf: &pdf::Pdf) -> Result<Vec<String>, ToolError> {
    (1..=pdf.page_count())
        .map(|n| pdf::page_text(pdf, n))
        .collect()
}

fn extract(pdf: &pdf::Pdf, pages: Option<&str>, max_chars: usize) -> Result<Output, ToolError> {
    let page_count = pdf.page_count();
    let mut wanted = match pages {
        Some(spec) => pdf::parse_pages(spec, page_count, "pages")?,
        None => (1..=page_count).collect(),
    };
    wanted.sort_unstable();

    let mut budget = max_chars;
    let mut out = Vec::new();
    let mut truncated = false;
    let mut next_page = None;
    let mut unreadable = Vec::new();
    let mut last_error = None;
    for &number in &wanted {
        if budget == 0 {
            truncated = true;
            next_page = Some(number);
            break;
        }
        let mut text = match pdf::page_text(pdf, number) {
            Ok(text) => text,
            Err(err) if wanted.len() > 1 => {
                unreadable.push(number);
                last_error = Some(err);
                String::new()
            }
            Err(err) => return Err(err),
        };
        match text.char_indices().nth(budget) {
            Some((cut, _)) => {
                text.truncate(cut);
                budget = 0;
                truncated = true;
                next_page = Some(number);
            }
            None => budget -= text.chars().count(),
        }
        out.push(PageText { page: number, text });
        if truncated {
            break;
        }
    }

    let empty: Vec<u32> = out
        .iter()
        .filter(|p| p.text.trim().is_empty() && !unreadable.contains(&p.page))
        .map(|p| p.page)
        .collect();
    let mut hints = Vec::new();
    if !empty.is_empty() {
        hints.push(format!(
            "no text layer on page{} {}: they are blank or scanned images; to read scanned pages, use the ocr tool on images of them",
            if empty.len() == 1 { "" } else { "s" },
            pdf::format_pages(&empty)
        ));
    }
    if let Some(err) = last_error {
        hints.push(format!(
            "the text of page{} {} could not be read (the last error: {}); use the ocr tool on images of them",
            if unreadable.len() == 1 { "" } else { "s" },
            pdf::format_pages(&unreadable),
            err.message()
        ));
    }
    if let Some(next) = next_page {
        let rest: Vec<u32> = wanted.iter().copied().filter(|&p| p >= next).collect();
        let rest = pdf::format_pages(&rest).replace(", ", ",");
        hints.push(format!(
            "the text was cut at max_chars ({max_chars}); for the rest, call again with pages \"{rest}\" or with a larger max_chars"
        ));
    }
    if pdf.encryption == Encryption::OpenedWithoutPassword {
        hints.push(
            "the PDF is encrypted with an owner password only; it was read without a password"
                .to_owned(),
        );
    }
    Ok(Output {
        page_count,
        pages: out,
        truncated,
        next_page,
        hint: (!hints.is_empty()).then(|| hints.join("; ")),
    })
}
