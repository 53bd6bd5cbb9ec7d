//! Tests for the shared PDF helpers: page lists, loading errors, encryption and page text.

use super::testing::sample_pdf;
use super::*;

/// `sample_pdf(["Hello PDF world"])` encrypted by `qpdf --encrypt secret owner 256`
/// (AES-256, a user password is needed to open it).
const ENCRYPTED_USER: &[u8] = include_bytes!("testdata/encrypted-user.pdf");

/// The same encrypted by `qpdf --encrypt "" owner 128 --print=none` (opens without a password).
const ENCRYPTED_OWNER: &[u8] = include_bytes!("testdata/encrypted-owner.pdf");

fn message(result: Result<impl std::fmt::Debug, ToolError>) -> String {
    result.unwrap_err().message().to_owned()
}

#[test]
fn parses_page_lists() {
    assert_eq!(parse_pages("1-3,5", 10, "pages").unwrap(), [1, 2, 3, 5]);
    assert_eq!(
        parse_pages(" 8 - end , 2", 10, "pages").unwrap(),
        [8, 9, 10, 2]
    );
    assert_eq!(parse_pages("9-", 10, "pages").unwrap(), [9, 10]);
    assert_eq!(parse_pages("end", 10, "pages").unwrap(), [10]);
    assert_eq!(parse_pages("END", 1, "pages").unwrap(), [1]);
    assert_eq!(parse_pages("1-1", 1, "pages").unwrap(), [1]);
}

#[test]
fn refuses_bad_page_lists_with_the_reason() {
    let err = |spec: &str| message(parse_pages(spec, 10, "pages"));
    assert_eq!(
        err("11"),
        "pages: page 11 (in \"11\") is out of range: the PDF has 10 pages (1-10)"
    );
    assert_eq!(
        err("3-12"),
        "pages: page 12 (in \"3-12\") is out of range: the PDF has 10 pages (1-10)"
    );
    assert_eq!(
        err("0"),
        "pages: \"0\" names page 0; pages are numbered from 1"
    );
    assert_eq!(
        err("5-3"),
        "pages: the range \"5-3\" is reversed; write \"3-5\""
    );
    assert_eq!(
        err("1-3,2"),
        "pages: page 2 is listed more than once in \"1-3,2\""
    );
    assert!(err("").contains("the page list is empty"));
    assert!(err("1,,2").contains("empty item"));
    assert!(err("two").contains("\"two\" is not a page or range"));
    assert!(err("-3").contains("is not a page or range"));
    assert!(err("1-2-3").contains("is not a page or range"));
    assert_eq!(
        message(parse_pages("2", 1, "ranges[0]")),
        "ranges[0]: page 2 (in \"2\") is out of range: the PDF has 1 page (1-1)"
    );
}

#[test]
fn formats_page_lists_compactly() {
    assert_eq!(format_pages(&[1, 2, 3, 5, 7, 8]), "1-3, 5, 7-8");
    assert_eq!(format_pages(&[4]), "4");
    assert_eq!(format_pages(&[]), "");
}

#[test]
fn loads_a_pdf_and_reads_each_page() {
    let pdf = load(&sample_pdf(&["First page\nsecond line", "", "Third"]), "x").unwrap();
    assert_eq!(pdf.page_count(), 3);
    assert_eq!(pdf.encryption, Encryption::None);
    assert_eq!(
        page_text(&pdf, 1, &mut pdf_extract::Fonts::new()).unwrap(),
        "First page\nsecond line"
    );
    assert_eq!(
        page_text(&pdf, 2, &mut pdf_extract::Fonts::new()).unwrap(),
        ""
    );
    assert_eq!(
        page_text(&pdf, 3, &mut pdf_extract::Fonts::new()).unwrap(),
        "Third"
    );
}

#[test]
fn names_what_a_non_pdf_looks_like() {
    let err = |bytes: &[u8]| message(load(bytes, "source \"a.pdf\""));
    assert_eq!(
        err(b""),
        "source \"a.pdf\" is not a PDF: the file is empty; pass a .pdf file"
    );
    assert!(err(b"\x89PNG\r\n\x1a\n....").contains("it looks like a PNG image"));
    assert!(err(b"PK\x03\x04....").contains("a ZIP archive"));
    assert!(err(b"<!DOCTYPE html><html>").contains("an HTML page"));
    assert!(err(b"just some words").contains("a text file"));
    assert!(err(&[0xde, 0xad, 0xbe, 0xef, 0x00, 0xff]).contains("no %PDF- header"));
}

thread_local! {
    /// Panics on this thread, counted by the hook [`count_panics`] installs.
    static PANICS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Runs `f` and returns how many panics it caused on this thread (caught or not).
fn count_panics(f: impl FnOnce()) -> usize {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.with(|p| p.set(p.get() + 1));
            previous(info);
        }));
    });
    let before = PANICS.with(std::cell::Cell::get);
    f();
    PANICS.with(std::cell::Cell::get) - before
}

#[test]
fn garbage_after_a_pdf_header_is_a_clean_error() {
    let sample = sample_pdf(&["Hello"]);
    let mut inputs: Vec<Vec<u8>> = vec![
        b"%PDF-1.7\n".to_vec(),
        b"%PDF-1.4\nthis is not a pdf at all\n%%EOF\n".to_vec(),
        b"%PDF-1.4\nstartxref\n999999\n%%EOF".to_vec(),
        sample[..sample.len() / 2].to_vec(),
    ];
    // Every 7th byte overwritten in turn with junk.
    for i in (0..sample.len()).step_by(7) {
        let mut broken = sample.clone();
        broken[i] = b'#';
        inputs.push(broken);
    }
    for (i, input) in inputs.iter().enumerate() {
        // Either a clean error, or a PDF whose pages read (or fail) cleanly, and no panic:
        // in the guest a panic ends the tool, with a vaguer message.
        let panics = count_panics(|| {
            match load(input, "source").map(|mut pdf| {
                repair_fonts(&mut pdf);
                pdf
            }) {
                Err(err) => assert!(
                    err.message().starts_with("source is"),
                    "input {i}: {}",
                    err.message()
                ),
                Ok(pdf) => {
                    for n in 1..=pdf.page_count() {
                        let _ = page_text(&pdf, n, &mut pdf_extract::Fonts::new());
                    }
                }
            }
        });
        assert_eq!(panics, 0, "input {i} panicked");
    }
    assert!(message(load(&inputs[1], "source")).contains("is a malformed PDF"));
}

#[test]
fn refuses_a_pdf_that_needs_a_password() {
    let err = message(load(ENCRYPTED_USER, "source \"s.pdf\""));
    assert!(
        err.starts_with(
            "source \"s.pdf\" is an encrypted (password-protected) PDF, which this tool does not support"
        ),
        "{err}"
    );
    assert!(err.contains("decrypt it first"), "{err}");
}

#[test]
fn refuses_an_encrypt_entry_it_cannot_use() {
    // A trailer naming an /Encrypt dictionary of an unknown security handler.
    let mut doc = Document::load_mem(&sample_pdf(&["Hello"])).unwrap();
    let encrypt = doc.add_object(Dictionary::from_iter(vec![
        ("Filter", Object::Name(b"Mystery".to_vec())),
        ("V", Object::Integer(9)),
        ("R", Object::Integer(9)),
    ]));
    doc.trailer.set("Encrypt", Object::Reference(encrypt));
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes).unwrap();
    assert!(message(load(&bytes, "source")).contains("is an encrypted (password-protected) PDF"));
}

#[test]
fn opens_a_pdf_encrypted_with_an_owner_password_only() {
    let pdf = load(ENCRYPTED_OWNER, "source").unwrap();
    assert_eq!(pdf.encryption, Encryption::OpenedWithoutPassword);
    assert_eq!(
        page_text(&pdf, 1, &mut pdf_extract::Fonts::new()).unwrap(),
        "Hello PDF world"
    );
}

#[test]
fn gives_pages_without_a_media_box_a_default_one() {
    let mut doc = Document::load_mem(&sample_pdf(&["Boxless"])).unwrap();
    let root = doc
        .catalog()
        .unwrap()
        .get(b"Pages")
        .unwrap()
        .as_reference()
        .unwrap();
    doc.get_dictionary_mut(root).unwrap().remove(b"MediaBox");
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes).unwrap();
    let pdf = load(&bytes, "source").unwrap();
    let page = pdf.doc.get_dictionary(pdf.pages[0]).unwrap();
    assert_eq!(
        page.get(b"MediaBox").unwrap(),
        &Object::Array(vec![0.into(), 0.into(), 612.into(), 792.into()])
    );
    assert_eq!(
        page_text(&pdf, 1, &mut pdf_extract::Fonts::new()).unwrap(),
        "Boxless"
    );
}

#[test]
fn standalone_pages_carry_their_inherited_attributes() {
    let pdf = load(&sample_pdf(&["A"]), "source").unwrap();
    let dict = standalone_page(&pdf.doc, pdf.pages[0]).unwrap();
    assert!(dict.get(b"Parent").is_err());
    assert!(dict.get(b"Resources").unwrap().as_reference().is_ok());
    assert!(dict.get(b"MediaBox").unwrap().as_array().is_ok());
}

#[test]
fn makes_a_font_shared_by_pages_once_and_reads_each_page_as_alone() {
    let pdf = load(&sample_pdf(&["First page", "Second", "", "Fourth"]), "x").unwrap();
    let mut fonts = pdf_extract::Fonts::new();
    for n in 1..=4 {
        let alone = page_text(&pdf, n, &mut pdf_extract::Fonts::new()).unwrap();
        assert_eq!(page_text(&pdf, n, &mut fonts).unwrap(), alone, "page {n}");
    }
    // The four pages inherit one font dictionary: it was made once, for page 1.
    assert_eq!(fonts.len(), 1);
}

/// Font names are per page: a name reused on a later page for another font must read with
/// that font, not with the one made for the earlier page under the same name.
#[test]
fn a_font_name_reused_on_a_later_page_reads_with_that_pages_font() {
    use lopdf::content::{Content, Operation};
    use lopdf::{Dictionary, Document, Object, Stream};

    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    // Font A draws code 65 as the glyph `x`; font B is plain Helvetica, where 65 is `A`.
    let mut redrawn = super::testing::helvetica();
    redrawn.set(
        "Encoding",
        Dictionary::from_iter(vec![(
            "Differences",
            Object::Array(vec![65.into(), Object::Name(b"x".to_vec())]),
        )]),
    );
    let font_a = doc.add_object(redrawn);
    let font_b = doc.add_object(super::testing::helvetica());
    let mut kids = Vec::new();
    for font in [font_a, font_b, font_a] {
        let content = Content {
            operations: vec![
                Operation::new("BT", vec![]),
                Operation::new("Tf", vec!["F1".into(), 12.into()]),
                Operation::new("Td", vec![72.into(), 720.into()]),
                Operation::new("Tj", vec![Object::string_literal("AA")]),
                Operation::new("ET", vec![]),
            ],
        };
        let content_id = doc.add_object(Stream::new(Dictionary::new(), content.encode().unwrap()));
        let resources = Dictionary::from_iter(vec![(
            "Font",
            Object::Dictionary(Dictionary::from_iter(vec![("F1", Object::Reference(font))])),
        )]);
        kids.push(Object::Reference(doc.add_object(Dictionary::from_iter(
            vec![
                ("Type", Object::Name(b"Page".to_vec())),
                ("Parent", Object::Reference(pages_id)),
                ("Contents", Object::Reference(content_id)),
                ("Resources", Object::Dictionary(resources)),
            ],
        ))));
    }
    // Each page has its own resources; the root gives them nothing more.
    let bytes = super::testing::saved_with_pages(doc, pages_id, kids, vec![]);

    let pdf = load(&bytes, "x").unwrap();
    let mut fonts = pdf_extract::Fonts::new();
    let texts: Vec<String> = (1..=3)
        .map(|n| page_text(&pdf, n, &mut fonts).unwrap())
        .collect();
    assert_eq!(texts, ["xx", "AA", "xx"]);
    // Page 3 took font A as made for page 1.
    assert_eq!(fonts.len(), 2);
}
