//! `pdf.split`: cuts a PDF into standalone PDFs, one per page list (`ranges`) or one per
//! `every` pages.
//!
//! Each part is a new document built from scratch: its pages (with the attributes they inherit
//! from the page tree made their own), everything those pages reach (content streams, fonts,
//! images, annotations), renumbered from 1, under a fresh page tree and catalog. References to
//! pages outside the part, to the old page tree and to the old catalog become `null`, so nothing
//! of the rest of the document is dragged along. The document's `/Info` is kept; outlines,
//! forms' catalog entries and the structure tree are not.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;

use lopdf::{Dictionary, Document, Object, ObjectId};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use locara_pdk::{JsonSchema, tool};

use crate::abi::{self, ToolError};
use crate::blob::{Blob, OutDir};
use crate::pdf::{self, Encryption, Pdf};

#[cfg(test)]
mod tests;

/// The most parts one call may produce.
pub(crate) const MAX_PARTS: usize = 1000;

/// `pdf.split`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The PDF to split (at most 100 MiB).
    source: Blob,
    /// One output file per entry, each a page list. Pages are numbered from 1 as the PDF orders them (not by printed page labels such as "iv"); write a page ("5"), a range ("1-3"), a range to the last page ("4-end"), or several separated by commas ("1-3,7,10-end"). Example: ["1-2", "3", "4-end"] makes three files. A page may appear in only one entry; a page past the end is an error that gives the page count. Give either ranges or every, not both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        with = "Vec<String>",
        length(min = 1, max = 1000),
        inner(length(min = 1))
    )]
    ranges: Option<Vec<String>>,
    /// Cut the whole PDF into consecutive parts of this many pages (the last part may be shorter); 1 makes one file per page. Give either ranges or every, not both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u32", range(min = 1))]
    every: Option<u32>,
}

/// One output file.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// The output file's name (part-001.pdf, ...), as returned by the host.
    #[schemars(regex(pattern = r"^part-[0-9]{3,4}\.pdf$"))]
    file: String,
    /// The file's size in bytes.
    #[schemars(range(min = 1))]
    bytes: u64,
    /// The source pages in this file, in their order in it.
    #[schemars(length(min = 1), inner(range(min = 1)))]
    pages: Vec<u32>,
}

/// `pdf.split`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// The number of pages in the source PDF.
    #[schemars(range(min = 1))]
    page_count: u32,
    /// The output files, in order.
    #[schemars(length(min = 1))]
    parts: Vec<Part>,
}

/// Splits a PDF into smaller standalone PDF files, e.g. to pull out a chapter, separate the
/// documents of a scanned bundle, or make one file per page. Pass either ranges (a list of page
/// lists, one output file per entry, pages in the order written) or every (cut into
/// consecutive groups of that many pages); pages not in any range are simply left out, so
/// ranges ["3-5"] extracts pages 3-5 into one file. The files are named part-001.pdf,
/// part-002.pdf, ... in the order of the parts and are returned to the caller as output files;
/// each is a complete PDF with its pages' fonts, images and annotations, and without the rest
/// of the document (bookmarks, form-level data and links to pages outside the part are
/// dropped). Encrypted PDFs are refused: the user must decrypt them first. At most 1000 parts
/// per call.
#[tool(id = "pdf.split")]
pub fn pdf_split(args: Args) -> Result<Output, ToolError> {
    split(args, &abi::tool_root(), &OutDir::guest())
}

/// Runs `pdf.split`, writing `part-001.pdf`, … into `out`.
///
/// # Errors
/// Bad arguments for an unreadable, non-PDF, malformed or encrypted `source`, for `ranges`
/// that are empty, malformed, out of range or overlapping, and for a bad `every`; failed when
/// a part cannot be written.
pub fn run(input: Value, root: &Path, out: &OutDir) -> Result<Value, ToolError> {
    abi::to_output(&split(abi::parse_args(input)?, root, out)?)
}

fn split(args: Args, root: &Path, out: &OutDir) -> Result<Output, ToolError> {
    // Check the arguments that do not need the file before reading it.
    match (&args.ranges, args.every) {
        (Some(_), Some(_)) => {
            return Err(ToolError::bad_args("pass either ranges or every, not both"));
        }
        (None, None) => {
            return Err(ToolError::bad_args(
                "pass ranges (e.g. [\"1-2\", \"3-end\"]) or every (e.g. 1 for one file per page)",
            ));
        }
        (Some(ranges), None) if ranges.is_empty() => {
            return Err(ToolError::bad_args(
                "ranges is empty; give at least one page list, e.g. [\"1-2\", \"3-end\"]",
            ));
        }
        (Some(ranges), None) if ranges.len() > MAX_PARTS => {
            return Err(too_many_parts(ranges.len()));
        }
        (None, Some(0)) => {
            return Err(ToolError::bad_args(
                "every must be at least 1 (1 makes one file per page)",
            ));
        }
        _ => {}
    }
    let bytes = args.source.read(root, pdf::MAX_PDF_BYTES)?;
    let what = format!("source {}", args.source.describe());
    let pdf = pdf::load(&bytes, &what)?;
    if pdf.encryption == Encryption::OpenedWithoutPassword {
        return Err(ToolError::bad_args(format!(
            "{what} is an encrypted PDF (it opens without a password, but its owner restricts it), which this tool does not split; ask the user to decrypt it first (e.g. `qpdf --decrypt in.pdf out.pdf`) if they may"
        )));
    }
    let page_count = pdf.page_count();
    if page_count == 0 {
        return Err(ToolError::bad_args(format!(
            "{what} has no pages; there is nothing to split"
        )));
    }
    let groups = match (&args.ranges, args.every) {
        (Some(ranges), _) => groups_from_ranges(ranges, page_count)?,
        (None, Some(every)) => groups_every(every, page_count)?,
        (None, None) => unreachable!("checked above"),
    };

    let mut parts = Vec::with_capacity(groups.len());
    for (i, pages) in groups.into_iter().enumerate() {
        let bytes = build_part(&pdf, &pages)?;
        let file = out.write(&format!("part-{:03}.pdf", i + 1), &bytes)?;
        parts.push(Part {
            file: file.file,
            bytes: file.bytes,
            pages,
        });
    }
    Ok(Output { page_count, parts })
}

fn too_many_parts(n: usize) -> ToolError {
    ToolError::bad_args(format!(
        "that makes {n} parts; one call makes at most {MAX_PARTS}: split in several calls or use larger parts"
    ))
}

/// The page lists of `ranges`, checked against each other.
pub(crate) fn groups_from_ranges(
    ranges: &[String],
    page_count: u32,
) -> Result<Vec<Vec<u32>>, ToolError> {
    let mut owner: HashMap<u32, usize> = HashMap::new();
    let mut groups = Vec::with_capacity(ranges.len());
    for (i, spec) in ranges.iter().enumerate() {
        let pages = pdf::parse_pages(spec, page_count, &format!("ranges[{i}]"))?;
        for &page in &pages {
            if let Some(j) = owner.insert(page, i) {
                return Err(ToolError::bad_args(format!(
                    "ranges[{i}] (\"{spec}\") overlaps ranges[{j}] (\"{}\"): page {page} is in both; each page may go to one part only",
                    ranges[j]
                )));
            }
        }
        groups.push(pages);
    }
    Ok(groups)
}

/// Consecutive groups of `every` pages (the last may be shorter).
pub(crate) fn groups_every(every: u32, page_count: u32) -> Result<Vec<Vec<u32>>, ToolError> {
    let n = page_count.div_ceil(every) as usize;
    if n > MAX_PARTS {
        return Err(too_many_parts(n));
    }
    Ok((1..=page_count)
        .collect::<Vec<u32>>()
        .chunks(every as usize)
        .map(<[u32]>::to_vec)
        .collect())
}

/// A standalone PDF of `pages` (1-based, in this order) of `pdf`.
pub(crate) fn build_part(pdf: &Pdf, pages: &[u32]) -> Result<Vec<u8>, ToolError> {
    let src = &pdf.doc;
    let all_pages: HashSet<ObjectId> = pdf.pages.iter().copied().collect();
    let mut part = Document::with_version(src.version.clone());
    let pages_id = part.new_object_id();
    let catalog_id = part.new_object_id();

    let mut copier = Copier {
        src,
        all_pages: &all_pages,
        map: HashMap::new(),
        queue: VecDeque::new(),
        next_id: part.max_id,
    };
    let mut kids = Vec::with_capacity(pages.len());
    let mut page_dicts = Vec::with_capacity(pages.len());
    for &number in pages {
        let old = pdf.pages[number as usize - 1];
        let new = copier.allocate(old);
        kids.push(Object::Reference(new));
        let mut dict = pdf::standalone_page(src, old).ok_or_else(|| {
            ToolError::failed(format!("page {number} of the source is not a dictionary"))
        })?;
        // Article threads' beads chain through other pages; they are not carried over.
        dict.remove(b"B");
        page_dicts.push((new, dict));
    }
    // The page dictionaries were built above; the queue must not copy them again as is.
    copier.queue.clear();
    let mut objects: Vec<(ObjectId, Object)> = Vec::new();
    for (new, dict) in page_dicts {
        let mut dict = copier.dict(&dict);
        dict.set("Parent", Object::Reference(pages_id));
        objects.push((new, Object::Dictionary(dict)));
    }
    let info = src
        .trailer
        .get(b"Info")
        .ok()
        .map(|info| copier.object(info))
        .filter(|info| matches!(info, Object::Reference(_)));
    while let Some((old, new)) = copier.queue.pop_front() {
        let Ok(obj) = src.get_object(old) else {
            continue;
        };
        let copied = copier.object(obj);
        objects.push((new, copied));
    }
    part.max_id = copier.next_id;
    for (id, obj) in objects {
        part.objects.insert(id, obj);
    }
    let count = i64::try_from(pages.len()).unwrap_or(i64::MAX);
    part.objects.insert(
        pages_id,
        Object::Dictionary(Dictionary::from_iter(vec![
            ("Type", Object::Name(b"Pages".to_vec())),
            ("Kids", Object::Array(kids)),
            ("Count", Object::Integer(count)),
        ])),
    );
    part.objects.insert(
        catalog_id,
        Object::Dictionary(Dictionary::from_iter(vec![
            ("Type", Object::Name(b"Catalog".to_vec())),
            ("Pages", Object::Reference(pages_id)),
        ])),
    );
    part.trailer.set("Root", Object::Reference(catalog_id));
    if let Some(info) = info {
        part.trailer.set("Info", info);
    }
    let mut bytes = Vec::new();
    part.save_to(&mut bytes)
        .map_err(|e| ToolError::failed(format!("cannot write a part: {e}")))?;
    Ok(bytes)
}

/// Copies objects from `src` into a new document, renumbering them as it goes.
struct Copier<'a> {
    src: &'a Document,
    all_pages: &'a HashSet<ObjectId>,
    /// Old id to new id, for every object copied or about to be.
    map: HashMap<ObjectId, ObjectId>,
    /// Objects given a new id but not copied yet.
    queue: VecDeque<(ObjectId, ObjectId)>,
    next_id: u32,
}

impl Copier<'_> {
    fn allocate(&mut self, old: ObjectId) -> ObjectId {
        self.next_id += 1;
        let new = (self.next_id, 0);
        self.map.insert(old, new);
        self.queue.push_back((old, new));
        new
    }

    /// Whether a reference to `id` is left out (`null`) rather than copied.
    fn excluded(&self, id: ObjectId) -> bool {
        match self.src.objects.get(&id) {
            None => true,
            // Pages outside the part (pages inside it are already in `map`).
            Some(_) if self.all_pages.contains(&id) => true,
            Some(Object::Dictionary(dict)) => dict.has_type(b"Pages") || dict.has_type(b"Catalog"),
            Some(_) => false,
        }
    }

    fn object(&mut self, obj: &Object) -> Object {
        match obj {
            Object::Reference(id) => {
                if let Some(&new) = self.map.get(id) {
                    Object::Reference(new)
                } else if self.excluded(*id) {
                    Object::Null
                } else {
                    Object::Reference(self.allocate(*id))
                }
            }
            Object::Array(items) => Object::Array(items.iter().map(|o| self.object(o)).collect()),
            Object::Dictionary(dict) => Object::Dictionary(self.dict(dict)),
            Object::Stream(stream) => {
                let mut copy = stream.clone();
                copy.dict = self.dict(&stream.dict);
                let len = i64::try_from(stream.content.len()).unwrap_or(i64::MAX);
                copy.dict.set("Length", Object::Integer(len));
                Object::Stream(copy)
            }
            other => other.clone(),
        }
    }

    fn dict(&mut self, dict: &Dictionary) -> Dictionary {
        let mut copy = Dictionary::new();
        for (key, value) in dict.iter() {
            copy.set(key.clone(), self.object(value));
        }
        copy
    }
}
