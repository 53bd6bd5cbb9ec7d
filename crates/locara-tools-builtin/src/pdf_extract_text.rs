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

use locara_pdk::{JsonSchema, progress, tool};

use crate::abi::{self, ToolError};
use crate::blob::{Blob, OutDir};
use crate::pdf::{self, Encryption};

#[cfg(test)]
mod tests;

/// The default for `max_chars`.
pub(crate) const DEFAULT_MAX_CHARS: usize = 50_000;

/// The largest `max_chars` accepted.
pub(crate) const MAX_MAX_CHARS: usize = 10_000_000;

/// `pdf.extract-text`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The PDF to read (at most 100 MiB).
    source: Blob,
    /// Which pages to read; all of them when omitted. Pages are numbered from 1 as the PDF orders them (not by printed page labels such as "iv"); write a page ("5"), a range ("1-3"), a range to the last page ("4-end"), or several separated by commas ("1-3,7,10-end"). Pages come back in ascending order whatever the order written; a page past the end is an error that gives the page count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(min = 1))]
    pages: Option<String>,
    /// The most characters (Unicode scalar values) of text to return over all pages; the page that crosses the limit is cut and the result says where to continue. Default 50000 (roughly 12k tokens); lower it to sample a long document, raise it to get everything at once.
    #[serde(default = "default_max_chars")]
    #[schemars(range(min = 1, max = 10_000_000))]
    max_chars: usize,
}

fn default_max_chars() -> usize {
    DEFAULT_MAX_CHARS
}

/// The text of one page.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PageText {
    /// The page number, from 1.
    #[schemars(range(min = 1))]
    pub(crate) page: u32,
    /// The page's text; empty when the page has no text layer. The last page is cut short when truncated is true.
    pub(crate) text: String,
}

/// `pdf.extract-text`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// The number of pages in the whole PDF (not only those returned).
    page_count: u32,
    /// The requested pages, in ascending order, up to the max_chars limit.
    pages: Vec<PageText>,
    /// True when max_chars was reached before all requested pages were returned in full.
    truncated: bool,
    /// Present when truncated: the first page not returned in full; ask for pages starting here to continue.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u32", range(min = 1))]
    next_page: Option<u32>,
    /// Present when something needs attention: pages without a text layer (use the ocr tool for scanned pages), pages whose content could not be read (they come back empty), which pages to ask for to continue after truncation, or that the PDF was encrypted with an owner password only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    hint: Option<String>,
}

/// Extracts the text layer of a PDF, page by page, e.g. to read, quote, summarise or search a
/// PDF document. Each page's text comes in the order the PDF draws it, which for ordinary
/// documents is reading order, with line breaks between lines and blank lines between blocks;
/// multi-column layouts and tables may come out interleaved. It returns at most max_chars
/// characters: when the text is longer the result says truncated and next_page, and a second
/// call with pages starting there gets the rest. A page with no text layer (a scanned image or
/// a blank page) comes back with empty text and a hint naming those pages: to read scanned
/// pages, use the ocr tool on images of them. Encrypted (password-protected) PDFs are refused:
/// the user must decrypt them first; a PDF encrypted with only an owner password (it opens
/// without asking for one) is read. Reads the file only; writes nothing.
#[tool(id = "pdf.extract-text")]
pub fn pdf_extract_text(args: Args) -> Result<Output, ToolError> {
    read(args, &abi::tool_root())
}

/// Runs `pdf.extract-text`. `out` is unused: the tool produces no files.
///
/// # Errors
/// Bad arguments for an unreadable, non-PDF, malformed or encrypted `source`, a bad `pages`
/// list or `max_chars`; failed when a page's content cannot be interpreted.
pub fn run(input: Value, root: &Path, _out: &OutDir) -> Result<Value, ToolError> {
    abi::to_output(&read(abi::parse_args(input)?, root)?)
}

fn read(args: Args, root: &Path) -> Result<Output, ToolError> {
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
    extract(&pdf, args.pages.as_deref(), args.max_chars)
}

/// The text of every page of `pdf`, in order, with no limit (for tests and `pdf.split`'s tests).
#[cfg(test)]
pub(crate) fn all_pages(pdf: &pdf::Pdf) -> Result<Vec<String>, ToolError> {
    let mut fonts = pdf_extract::Fonts::new();
    (1..=pdf.page_count())
        .map(|n| pdf::page_text(pdf, n, &mut fonts))
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
    let mut fonts = pdf_extract::Fonts::new();
    let reading = progress::Task::start("Reading pages", Some(wanted.len() as u64));
    for &number in &wanted {
        if budget == 0 {
            truncated = true;
            next_page = Some(number);
            break;
        }
        reading.step(Some(&format!("page {number}")));
        let mut text = match pdf::page_text(pdf, number, &mut fonts) {
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
    reading.done(Some(&match next_page {
        Some(next) => format!("{} pages read, cut at max_chars on page {next}", out.len()),
        None => format!("{} pages read", out.len()),
    }));

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
