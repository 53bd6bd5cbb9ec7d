//! What `pdf.extract-text` and `pdf.split` share: loading a PDF with clear errors, page-range
//! lists, inherited page attributes and the text of one page.
//!
//! Both tools read the file with `lopdf` 0.42, the version `pdf-extract` works on, so one parsed
//! [`Document`] serves both parsing and text extraction. `pdf-extract` panics on some malformed
//! files; the checks here (a header, a page tree, a usable `MediaBox` on every page) avoid the
//! common cases, and a panic that still happens becomes a one-line tool error (natively through
//! `catch_unwind`, in the guest through the panic hook of [`crate::abi::main_with`]).

use std::panic::{self, AssertUnwindSafe};

use lopdf::{Dictionary, Document, Object, ObjectId};

use crate::abi::ToolError;

#[cfg(test)]
mod tests;

/// The largest PDF the tools read.
pub(crate) const MAX_PDF_BYTES: u64 = 100 * 1024 * 1024;

/// How deep a page's `/Parent` chain is followed for inherited attributes.
const MAX_TREE_DEPTH: usize = 64;

/// The page size assumed for a page without a usable `MediaBox` (US Letter, in points).
const DEFAULT_MEDIA_BOX: [i64; 4] = [0, 0, 612, 792];

/// What a split part must refuse and text extraction may accept: a file encrypted with an
/// empty user password opens without one (viewers do that too), but still carries the owner's
/// restrictions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encryption {
    /// Not encrypted.
    None,
    /// Encrypted, but opened with the empty user password.
    OpenedWithoutPassword,
}

/// A loaded PDF and its pages in order (`pages[0]` is page 1).
#[derive(Debug)]
pub(crate) struct Pdf {
    pub(crate) doc: Document,
    pub(crate) pages: Vec<ObjectId>,
    pub(crate) encryption: Encryption,
    /// Pages whose content stream does not parse (found by [`repair_fonts`]).
    pub(crate) malformed_content: Vec<u32>,
}

impl Pdf {
    /// The number of pages.
    pub(crate) fn page_count(&self) -> u32 {
        self.pages.len() as u32
    }
}

/// Parses `bytes` as a PDF; `what` names the input in messages (e.g. `source "a.pdf"`).
///
/// # Errors
/// Bad-arguments errors for something that is not a PDF, a PDF that cannot be parsed, and a
/// PDF that needs a password.
pub(crate) fn load(bytes: &[u8], what: &str) -> Result<Pdf, ToolError> {
    let head = &bytes[..bytes.len().min(1024)];
    if !head.windows(5).any(|w| w == b"%PDF-") {
        return Err(ToolError::bad_args(format!(
            "{what} is not a PDF: {}; pass a .pdf file",
            sniff(bytes)
        )));
    }
    let loaded = panic::catch_unwind(AssertUnwindSafe(|| Document::load_mem(bytes)));
    let mut doc = match loaded {
        Ok(Ok(doc)) => doc,
        Ok(Err(err)) => return Err(load_error(&err, what)),
        Err(_) => {
            return Err(ToolError::bad_args(format!(
                "{what} is a malformed PDF: the parser gave up on its structure; if a viewer opens it, re-save it (e.g. print to PDF) and try again"
            )));
        }
    };
    if doc.is_encrypted() {
        return Err(encrypted(what));
    }
    let encryption = if doc.was_encrypted() {
        Encryption::OpenedWithoutPassword
    } else {
        Encryption::None
    };
    if doc.catalog().and_then(|c| c.get(b"Pages")).is_err() {
        return Err(ToolError::bad_args(format!(
            "{what} is a malformed PDF: it has no page tree (the catalog's /Pages entry is missing or broken); if a viewer opens it, re-save it and try again"
        )));
    }
    null_dangling_references(&mut doc);
    let pages: Vec<ObjectId> = doc.page_iter().collect();
    for &page in &pages {
        fix_media_box(&mut doc, page);
    }
    Ok(Pdf {
        doc,
        pages,
        encryption,
        malformed_content: Vec::new(),
    })
}

/// The message for a PDF that needs a password.
pub(crate) fn encrypted(what: &str) -> ToolError {
    ToolError::bad_args(format!(
        "{what} is an encrypted (password-protected) PDF, which this tool does not support; ask the user to decrypt it first (e.g. `qpdf --decrypt --password=PASSWORD in.pdf out.pdf`) and pass the decrypted file"
    ))
}

fn load_error(err: &lopdf::Error, what: &str) -> ToolError {
    use lopdf::Error as E;
    match err {
        E::Decryption(_) | E::InvalidPassword | E::AlreadyEncrypted => encrypted(what),
        other => ToolError::bad_args(format!(
            "{what} is a malformed PDF ({}); if a viewer opens it, re-save it (e.g. print to PDF) and try again",
            crate::abi::one_line(&other.to_string())
        )),
    }
}

/// A short guess at what a non-PDF file is, from its first bytes.
fn sniff(bytes: &[u8]) -> String {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x89PNG", "a PNG image"),
        (b"\xff\xd8\xff", "a JPEG image"),
        (b"GIF8", "a GIF image"),
        (b"PK\x03\x04", "a ZIP archive (or a DOCX/XLSX/ODT document)"),
        (b"\xd0\xcf\x11\xe0", "an old Microsoft Office document"),
        (b"{\\rtf", "an RTF document"),
        (b"%!PS", "a PostScript file"),
        (b"II*\0", "a TIFF image"),
        (b"MM\0*", "a TIFF image"),
    ];
    if bytes.is_empty() {
        return "the file is empty".to_owned();
    }
    for (magic, name) in MAGIC {
        if bytes.starts_with(magic) {
            return format!("it looks like {name}");
        }
    }
    let head = &bytes[..bytes.len().min(512)];
    if std::str::from_utf8(head).is_ok() {
        let lower = String::from_utf8_lossy(head).to_lowercase();
        if lower.contains("<html") || lower.contains("<!doctype html") {
            return "it looks like an HTML page".to_owned();
        }
        return "it looks like a text file (no %PDF- header)".to_owned();
    }
    "it has no %PDF- header".to_owned()
}

/// Repairs what `pdf-extract` would panic on in a page's resources: each page gets its own
/// direct `/Resources` with a `/Font` dictionary, a font entry that is not a dictionary becomes
/// Helvetica, a font without `/Subtype` a Type 1 font, a simple font without `/BaseFont`
/// Helvetica. Text drawn with a repaired font may come out wrong, but the rest of the page still
/// comes out. Only for text extraction: the document is changed in memory.
pub(crate) fn repair_fonts(pdf: &mut Pdf) {
    for (index, &page) in pdf.pages.iter().enumerate() {
        let doc = &pdf.doc;
        let mut resources = inherited(doc, page, b"Resources")
            .and_then(|r| doc.dereference(r).ok())
            .and_then(|(_, r)| r.as_dict().ok().cloned())
            .unwrap_or_default();
        let mut fonts = resources
            .get(b"Font")
            .ok()
            .and_then(|f| doc.dereference(f).ok())
            .and_then(|(_, f)| f.as_dict().ok().cloned())
            .unwrap_or_default();
        let mut repaired: Vec<ObjectId> = Vec::new();
        for (_, font) in fonts.iter_mut() {
            match font {
                Object::Reference(id)
                    if matches!(doc.get_object(*id), Ok(Object::Dictionary(_))) =>
                {
                    repaired.push(*id);
                }
                Object::Dictionary(dict) => repair_font(dict),
                other => {
                    let mut dict = Dictionary::new();
                    repair_font(&mut dict);
                    *other = Object::Dictionary(dict);
                }
            }
        }
        // A font the content selects (`/F1 12 Tf`) but the resources lack.
        let content = doc
            .get_page_content(page)
            .map(|c| lopdf::content::Content::decode(&c));
        if let Ok(Err(_)) = content {
            // `pdf-extract` would panic on it.
            pdf.malformed_content.push(index as u32 + 1);
        }
        if let Ok(Ok(content)) = content {
            for op in content.operations.iter().filter(|op| op.operator == "Tf") {
                if let Some(Ok(name)) = op.operands.first().map(Object::as_name)
                    && fonts.get(name).is_err()
                {
                    let mut dict = Dictionary::new();
                    repair_font(&mut dict);
                    fonts.set(name.to_vec(), Object::Dictionary(dict));
                }
            }
        }
        resources.set("Font", Object::Dictionary(fonts));
        for id in repaired {
            if let Ok(dict) = pdf.doc.get_dictionary_mut(id) {
                repair_font(dict);
            }
        }
        if let Ok(dict) = pdf.doc.get_dictionary_mut(page) {
            dict.set("Resources", Object::Dictionary(resources));
        }
    }
}

fn repair_font(font: &mut Dictionary) {
    if !matches!(font.get(b"Subtype"), Ok(Object::Name(_))) {
        font.set("Subtype", Object::Name(b"Type1".to_vec()));
    }
    let simple = !matches!(
        font.get(b"Subtype"),
        Ok(Object::Name(n)) if n == b"Type0" || n == b"Type3"
    );
    if simple && !matches!(font.get(b"BaseFont"), Ok(Object::Name(_))) {
        font.set("BaseFont", Object::Name(b"Helvetica".to_vec()));
    }
}

/// Replaces every reference to an object the file does not have by `null`, which is what the
/// PDF format says such a reference means (`pdf-extract` panics on them instead).
fn null_dangling_references(doc: &mut Document) {
    fn fix(obj: &mut Object, ids: &std::collections::HashSet<ObjectId>) {
        match obj {
            Object::Reference(id) if !ids.contains(id) => *obj = Object::Null,
            Object::Array(items) => items.iter_mut().for_each(|o| fix(o, ids)),
            Object::Dictionary(dict) => dict.iter_mut().for_each(|(_, o)| fix(o, ids)),
            Object::Stream(stream) => stream.dict.iter_mut().for_each(|(_, o)| fix(o, ids)),
            _ => {}
        }
    }
    let ids: std::collections::HashSet<ObjectId> = doc.objects.keys().copied().collect();
    for obj in doc.objects.values_mut() {
        fix(obj, &ids);
    }
}

/// The value of `key` on `page` or the nearest ancestor in the page tree that has it.
pub(crate) fn inherited<'a>(doc: &'a Document, page: ObjectId, key: &[u8]) -> Option<&'a Object> {
    let mut node = doc.get_dictionary(page).ok()?;
    for _ in 0..MAX_TREE_DEPTH {
        if let Ok(value) = node.get(key) {
            return Some(value);
        }
        let parent = node.get(b"Parent").and_then(Object::as_reference).ok()?;
        node = doc.get_dictionary(parent).ok()?;
    }
    None
}

/// The numbers of a rectangle object (resolving references), if it is one.
fn rectangle(doc: &Document, obj: &Object) -> Option<Vec<Object>> {
    let (_, obj) = doc.dereference(obj).ok()?;
    let items = obj.as_array().ok()?;
    if items.len() < 4 {
        return None;
    }
    items[..4]
        .iter()
        .map(|item| match doc.dereference(item).ok()?.1 {
            n @ (Object::Integer(_) | Object::Real(_)) => Some(n.clone()),
            _ => None,
        })
        .collect()
}

/// Gives `page` a direct `MediaBox` of four numbers when its own or inherited one is not
/// exactly that (`pdf-extract` panics otherwise).
fn fix_media_box(doc: &mut Document, page: ObjectId) {
    let current = inherited(doc, page, b"MediaBox");
    if let Some(Object::Array(items)) = current
        && items.len() == 4
        && items
            .iter()
            .all(|i| matches!(i, Object::Integer(_) | Object::Real(_)))
    {
        return;
    }
    let fixed = current
        .and_then(|obj| rectangle(doc, obj))
        .unwrap_or_else(|| DEFAULT_MEDIA_BOX.iter().map(|&n| n.into()).collect());
    if let Ok(dict) = doc.get_dictionary_mut(page) {
        dict.set("MediaBox", Object::Array(fixed));
    }
}

/// The text of page `number` (1-based), in the order `pdf-extract` produces it, with leading
/// blank lines and trailing whitespace removed.
///
/// `fonts` holds the fonts made for earlier pages of the same document (start with
/// [`pdf_extract::Fonts::new`]): a document's pages mostly share their fonts, and making one
/// (parsing its encoding and ToUnicode map) cost more than reading a page of text with it.
///
/// # Errors
/// A failed error when the page's content cannot be interpreted.
pub(crate) fn page_text<'a>(
    pdf: &'a Pdf,
    number: u32,
    fonts: &mut pdf_extract::Fonts<'a>,
) -> Result<String, ToolError> {
    if pdf.malformed_content.contains(&number) {
        return Err(ToolError::failed(format!(
            "cannot read the text of page {number}: its content stream is malformed"
        )));
    }
    let extracted = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut text = String::new();
        let mut output = pdf_extract::PlainTextOutput::new(&mut text);
        pdf_extract::output_doc_page_with_fonts(&pdf.doc, fonts, &mut output, number).map(|()| text)
    }));
    match extracted {
        Ok(Ok(text)) => Ok(text.trim_start_matches(['\n', '\r']).trim_end().to_owned()),
        Ok(Err(err)) => Err(ToolError::failed(format!(
            "cannot read the text of page {number}: {}; the page may be malformed",
            crate::abi::one_line(&format!("{err:?}"))
        ))),
        Err(_) => Err(ToolError::failed(format!(
            "cannot read the text of page {number}: its content uses a font or structure the text extractor does not support"
        ))),
    }
}

/// Parses a page list such as `"1-3,5,8-end"` against a document of `page_count` pages.
///
/// Items are `N`, `N-M`, `N-end` (also `N-`) or `end`, separated by commas; pages count from 1.
/// The pages come back in the order written; a page named twice is an error naming it.
/// `field` names the argument in messages (e.g. `pages` or `ranges[2]`).
///
/// # Errors
/// A bad-arguments error for an empty list or item, a malformed item, page 0, a page past the
/// end (the message gives the page count), a reversed range and a repeated page.
pub(crate) fn parse_pages(spec: &str, page_count: u32, field: &str) -> Result<Vec<u32>, ToolError> {
    let bad = |msg: String| ToolError::bad_args(format!("{field}: {msg}"));
    if spec.trim().is_empty() {
        return Err(bad(
            "the page list is empty; write pages like \"1-3,5\" or \"4-end\"".to_owned(),
        ));
    }
    let mut pages = Vec::new();
    let mut seen = vec![false; page_count as usize + 1];
    for item in spec.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(bad(format!(
                "\"{spec}\" has an empty item between commas; write pages like \"1-3,5\""
            )));
        }
        let (first, last) = match item.split_once('-') {
            Some((a, b)) => {
                let b = b.trim();
                let last = if b.is_empty() {
                    page_count
                } else {
                    page_number(b, page_count, item, &bad)?
                };
                (page_number(a.trim(), page_count, item, &bad)?, last)
            }
            None => {
                let n = page_number(item, page_count, item, &bad)?;
                (n, n)
            }
        };
        if first > last {
            return Err(bad(format!(
                "the range \"{item}\" is reversed; write \"{last}-{first}\""
            )));
        }
        for page in first..=last {
            if seen[page as usize] {
                return Err(bad(format!(
                    "page {page} is listed more than once in \"{spec}\""
                )));
            }
            seen[page as usize] = true;
            pages.push(page);
        }
    }
    Ok(pages)
}

fn page_number(
    text: &str,
    page_count: u32,
    item: &str,
    bad: &dyn Fn(String) -> ToolError,
) -> Result<u32, ToolError> {
    if text.eq_ignore_ascii_case("end") {
        if page_count == 0 {
            return Err(bad("the PDF has no pages".to_owned()));
        }
        return Ok(page_count);
    }
    let n: u64 = text.parse().map_err(|_| {
        bad(format!(
            "\"{item}\" is not a page or range; write a page number (\"5\"), a range (\"1-3\") or a range to the last page (\"4-end\")"
        ))
    })?;
    if n == 0 {
        return Err(bad(format!(
            "\"{item}\" names page 0; pages are numbered from 1"
        )));
    }
    if n > u64::from(page_count) {
        return Err(bad(format!(
            "page {n} (in \"{item}\") is out of range: the PDF has {page_count} page{} (1-{page_count})",
            if page_count == 1 { "" } else { "s" }
        )));
    }
    Ok(n as u32)
}

/// Formats sorted page numbers compactly, e.g. `1-3, 5`.
pub(crate) fn format_pages(pages: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < pages.len() {
        let mut j = i;
        while j + 1 < pages.len() && pages[j + 1] == pages[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            pages[i].to_string()
        } else {
            format!("{}-{}", pages[i], pages[j])
        });
        i = j + 1;
    }
    parts.join(", ")
}

/// A page dictionary's copy for another document: the inheritable attributes that it takes
/// from its ancestors made its own, and `/Parent` removed.
pub(crate) fn standalone_page(doc: &Document, page: ObjectId) -> Option<Dictionary> {
    let mut dict = doc.get_dictionary(page).ok()?.clone();
    for key in [b"Resources".as_slice(), b"MediaBox", b"CropBox", b"Rotate"] {
        if dict.get(key).is_err()
            && let Some(value) = inherited(doc, page, key)
        {
            dict.set(key.to_vec(), value.clone());
        }
    }
    dict.remove(b"Parent");
    Some(dict)
}

/// Small PDFs built with `lopdf`, for the tests of both tools.
#[cfg(test)]
pub(crate) mod testing {
    use lopdf::content::{Content, Operation};
    use lopdf::{Dictionary, Document, Object, Stream};

    /// A PDF with one page per entry of `pages`, each line of an entry drawn as one line of
    /// Helvetica text (an empty entry makes a blank page). The font, `Resources` and `MediaBox`
    /// sit on the page tree's root, so pages inherit them.
    pub(crate) fn sample_pdf(pages: &[&str]) -> Vec<u8> {
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font_id = doc.add_object(helvetica());
        let resources_id = doc.add_object(Dictionary::from_iter(vec![(
            "Font",
            Object::Dictionary(Dictionary::from_iter(vec![(
                "F1",
                Object::Reference(font_id),
            )])),
        )]));
        let mut kids = Vec::new();
        for text in pages {
            let mut operations = Vec::new();
            for (i, line) in text.lines().enumerate() {
                let y = 720 - 14 * i as i64;
                operations.extend([
                    Operation::new("BT", vec![]),
                    Operation::new("Tf", vec!["F1".into(), 12.into()]),
                    Operation::new("Td", vec![72.into(), y.into()]),
                    Operation::new("Tj", vec![Object::string_literal(line)]),
                    Operation::new("ET", vec![]),
                ]);
            }
            let content = Content { operations };
            let content_id =
                doc.add_object(Stream::new(Dictionary::new(), content.encode().unwrap()));
            let page_id = doc.add_object(Dictionary::from_iter(vec![
                ("Type", Object::Name(b"Page".to_vec())),
                ("Parent", Object::Reference(pages_id)),
                ("Contents", Object::Reference(content_id)),
            ]));
            kids.push(Object::Reference(page_id));
        }
        let resources = ("Resources", Object::Reference(resources_id));
        saved_with_pages(doc, pages_id, kids, vec![resources])
    }

    /// The dictionary of Helvetica, one of the standard Type 1 fonts (no font file embedded).
    pub(crate) fn helvetica() -> Dictionary {
        Dictionary::from_iter(vec![
            ("Type", Object::Name(b"Font".to_vec())),
            ("Subtype", Object::Name(b"Type1".to_vec())),
            ("BaseFont", Object::Name(b"Helvetica".to_vec())),
        ])
    }

    /// The bytes of `doc` once its page tree's root `pages_id` holds `kids` (each page's
    /// `Parent` is `pages_id`), a US Letter `MediaBox` and `inherited` for every page, and a
    /// catalog points at it.
    pub(crate) fn saved_with_pages(
        mut doc: Document,
        pages_id: lopdf::ObjectId,
        kids: Vec<Object>,
        inherited: Vec<(&str, Object)>,
    ) -> Vec<u8> {
        let count = kids.len() as i64;
        let mut root = Dictionary::from_iter(vec![
            ("Type", Object::Name(b"Pages".to_vec())),
            ("Kids", Object::Array(kids)),
            ("Count", Object::Integer(count)),
            (
                "MediaBox",
                Object::Array(vec![0.into(), 0.into(), 612.into(), 792.into()]),
            ),
        ]);
        for (key, value) in inherited {
            root.set(key, value);
        }
        doc.objects.insert(pages_id, Object::Dictionary(root));
        let catalog_id = doc.add_object(Dictionary::from_iter(vec![
            ("Type", Object::Name(b"Catalog".to_vec())),
            ("Pages", Object::Reference(pages_id)),
        ]));
        doc.trailer.set("Root", Object::Reference(catalog_id));
        let mut bytes = Vec::new();
        doc.save_to(&mut bytes).unwrap();
        bytes
    }
}
