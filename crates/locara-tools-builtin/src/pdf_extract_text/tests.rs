//! Tests for `pdf.extract-text` on PDFs built with `lopdf`.

use serde_json::{Value, json};

use crate::blob::{Blob, OutDir};
use crate::pdf::testing::sample_pdf;

fn run(pdf: &[u8], extra: Value) -> Result<Value, String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("doc.pdf"), pdf).unwrap();
    let mut input = json!({"source": {"path": "doc.pdf"}});
    for (k, v) in extra.as_object().unwrap() {
        input[k] = v.clone();
    }
    super::run(input, dir.path(), &OutDir::at(dir.path().join("out")))
        .map_err(|e| e.message().to_owned())
}

fn texts(out: &Value) -> Vec<(u64, String)> {
    out["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["page"].as_u64().unwrap(),
                p["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn three_pages() -> Vec<u8> {
    sample_pdf(&["Alpha one\nAlpha two", "Bravo", "Charlie delta"])
}

#[test]
fn extracts_every_page_in_order() {
    let out = run(&three_pages(), json!({})).unwrap();
    assert_eq!(
        out,
        json!({
            "page_count": 3,
            "pages": [
                {"page": 1, "text": "Alpha one\nAlpha two"},
                {"page": 2, "text": "Bravo"},
                {"page": 3, "text": "Charlie delta"},
            ],
            "truncated": false,
        })
    );
}

#[test]
fn extracts_selected_pages_in_ascending_order() {
    let out = run(&three_pages(), json!({"pages": "3,1"})).unwrap();
    assert_eq!(
        texts(&out),
        [
            (1, "Alpha one\nAlpha two".into()),
            (3, "Charlie delta".into())
        ]
    );
    assert_eq!(out["page_count"], 3);
}

#[test]
fn reads_base64_sources_too() {
    let dir = tempfile::tempdir().unwrap();
    let input = json!({"source": Blob::bytes(&three_pages()).base64.unwrap()});
    let input = json!({"source": {"base64": input["source"]}, "pages": "2"});
    let out = super::run(input, dir.path(), &OutDir::at(dir.path())).unwrap();
    assert_eq!(texts(&out), [(2, "Bravo".into())]);
}

#[test]
fn cuts_at_max_chars_and_says_where_to_continue() {
    // "Alpha one\nAlpha two" is 19 characters: 4 more reach into page 2.
    let out = run(&three_pages(), json!({"max_chars": 23})).unwrap();
    assert_eq!(
        texts(&out),
        [(1, "Alpha one\nAlpha two".into()), (2, "Brav".into())]
    );
    assert_eq!(out["truncated"], true);
    assert_eq!(out["next_page"], 2);
    assert_eq!(
        out["hint"],
        "the text was cut at max_chars (23); for the rest, call again with pages \"2-3\" or with a larger max_chars"
    );
    // The pages still to read are those asked for.
    let out = run(&three_pages(), json!({"pages": "1,3", "max_chars": 5})).unwrap();
    assert_eq!(texts(&out), [(1, "Alpha".into())]);
    assert!(out["hint"].as_str().unwrap().contains("pages \"1,3\""));

    // A budget used up exactly at the end of a page continues at the next one.
    let out = run(&three_pages(), json!({"max_chars": 24})).unwrap();
    assert_eq!(texts(&out).len(), 2);
    assert_eq!(out["next_page"], 3);

    // Exactly enough for everything is not a truncation.
    let out = run(&three_pages(), json!({"max_chars": 19 + 5 + 13})).unwrap();
    assert_eq!(out["truncated"], false);
    assert!(out.get("next_page").is_none());
}

#[test]
fn pages_without_text_get_an_ocr_hint() {
    let pdf = sample_pdf(&["Text here", "", "", "More", ""]);
    let out = run(&pdf, json!({})).unwrap();
    assert_eq!(out["pages"][1]["text"], "");
    assert_eq!(
        out["hint"],
        "no text layer on pages 2-3, 5: they are blank or scanned images; to read scanned pages, use the ocr tool on images of them"
    );
    let out = run(&pdf, json!({"pages": "1,4"})).unwrap();
    assert!(out.get("hint").is_none());
}

#[test]
fn clear_errors_for_bad_arguments_and_files() {
    assert_eq!(
        run(&three_pages(), json!({"pages": "2-9"})).unwrap_err(),
        "pages: page 9 (in \"2-9\") is out of range: the PDF has 3 pages (1-3)"
    );
    assert!(
        run(&three_pages(), json!({"max_chars": 0}))
            .unwrap_err()
            .starts_with("max_chars must be between 1 and")
    );
    assert!(
        run(&three_pages(), json!({"password": "x"}))
            .unwrap_err()
            .contains("unknown field `password`")
    );
    assert_eq!(
        run(b"hello", json!({})).unwrap_err(),
        "source \"doc.pdf\" is not a PDF: it looks like a text file (no %PDF- header); pass a .pdf file"
    );
    let encrypted = include_bytes!("../pdf/testdata/encrypted-user.pdf");
    assert!(
        run(encrypted, json!({}))
            .unwrap_err()
            .contains("is an encrypted (password-protected) PDF")
    );
}

#[test]
fn notes_an_owner_password_it_did_not_need() {
    let owner = include_bytes!("../pdf/testdata/encrypted-owner.pdf");
    let out = run(owner, json!({})).unwrap();
    assert_eq!(texts(&out), [(1, "Hello PDF world".into())]);
    assert!(
        out["hint"]
            .as_str()
            .unwrap()
            .contains("owner password only")
    );
}

#[test]
fn manifest_advertises_the_limits_of_the_code() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/manifests/pdf.extract-text.json"
    );
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let max_chars = &manifest["input_schema"]["properties"]["max_chars"];
    assert_eq!(max_chars["default"], super::DEFAULT_MAX_CHARS);
    assert_eq!(max_chars["maximum"], super::MAX_MAX_CHARS);
}

#[test]
fn a_page_that_cannot_be_read_is_reported_and_the_others_read() {
    // lopdf's content parser stops at the first error instead of failing, so a broken
    // content stream just yields less text; a page that fails outright is marked as such.
    let mut doc = lopdf::Document::load_mem(&three_pages()).unwrap();
    let page2 = doc.get_pages()[&2];
    let content = doc.get_page_contents(page2)[0];
    doc.get_object_mut(content)
        .unwrap()
        .as_stream_mut()
        .unwrap()
        .set_content(b"BT /F1 12 Tf (unterminated Tj ET".to_vec());
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes).unwrap();
    let out = run(&bytes, json!({})).unwrap();
    assert_eq!(texts(&out)[1], (2, String::new()));
    assert_eq!(texts(&out)[2], (3, "Charlie delta".into()));

    let mut pdf = crate::pdf::load(&three_pages(), "source").unwrap();
    pdf.malformed_content.push(2);
    let out = crate::abi::to_output(&super::extract(&pdf, None, 1000).unwrap()).unwrap();
    assert_eq!(
        texts(&out),
        [
            (1, "Alpha one\nAlpha two".into()),
            (2, String::new()),
            (3, "Charlie delta".into())
        ]
    );
    assert_eq!(
        out["hint"],
        "the text of page 2 could not be read (the last error: cannot read the text of page 2: its content stream is malformed); use the ocr tool on images of them"
    );
    // Asked for alone, the page is an error.
    assert_eq!(
        super::extract(&pdf, Some("2"), 1000).unwrap_err().message(),
        "cannot read the text of page 2: its content stream is malformed"
    );
}
