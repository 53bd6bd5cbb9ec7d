//! Tests for `pdf.split`: the page groups, and parts that re-parse as PDFs holding exactly the
//! text of their pages.

use serde_json::{Value, json};

use crate::blob::OutDir;
use crate::pdf::testing::sample_pdf;
use crate::pdf::{self, Encryption};
use crate::pdf_extract_text::all_pages;

/// Splits `pdf` with the extra arguments; returns the result and the output directory.
fn split(pdf: &[u8], extra: Value) -> (Result<Value, String>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("doc.pdf"), pdf).unwrap();
    let mut input = json!({"source": {"path": "doc.pdf"}});
    for (k, v) in extra.as_object().unwrap() {
        input[k] = v.clone();
    }
    let result = super::run(input, dir.path(), &OutDir::at(dir.path().join("out")))
        .map_err(|e| e.message().to_owned());
    (result, dir)
}

fn texts(n: usize) -> Vec<String> {
    (1..=n)
        .map(|i| format!("Page {i} says {}", "word ".repeat(i).trim()))
        .collect()
}

fn sample(n: usize) -> (Vec<u8>, Vec<String>) {
    let texts = texts(n);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    (sample_pdf(&refs), texts)
}

/// Checks every part: the file exists with the size reported, re-parses, has the listed
/// number of pages, and its pages' text is that of the original pages.
fn check_parts(out: &Value, dir: &std::path::Path, original: &[String]) {
    for part in out["parts"].as_array().unwrap() {
        let name = part["file"].as_str().unwrap();
        let bytes = std::fs::read(dir.join("out").join(name)).unwrap();
        assert_eq!(part["bytes"], bytes.len() as u64, "{name}");
        let pages: Vec<usize> = part["pages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_u64().unwrap() as usize)
            .collect();
        let reparsed = lopdf::Document::load_mem(&bytes).unwrap();
        assert_eq!(reparsed.get_pages().len(), pages.len(), "{name}");
        let loaded = pdf::load(&bytes, name).unwrap();
        assert_eq!(loaded.encryption, Encryption::None);
        let expected: Vec<String> = pages.iter().map(|&p| original[p - 1].clone()).collect();
        assert_eq!(all_pages(&loaded).unwrap(), expected, "{name}");
    }
}

#[test]
fn splits_by_ranges() {
    let (pdf, original) = sample(6);
    let (out, dir) = split(&pdf, json!({"ranges": ["1-2", "4", "5-end", "3"]}));
    let out = out.unwrap();
    assert_eq!(out["page_count"], 6);
    let summary: Vec<(String, Value)> = out["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["file"].as_str().unwrap().to_owned(), p["pages"].clone()))
        .collect();
    assert_eq!(
        summary,
        [
            ("part-001.pdf".to_owned(), json!([1, 2])),
            ("part-002.pdf".to_owned(), json!([4])),
            ("part-003.pdf".to_owned(), json!([5, 6])),
            ("part-004.pdf".to_owned(), json!([3])),
        ]
    );
    check_parts(&out, dir.path(), &original);
}

#[test]
fn a_part_may_list_pages_in_any_order() {
    let (pdf, original) = sample(5);
    let (out, dir) = split(&pdf, json!({"ranges": ["5,1-2"]}));
    let out = out.unwrap();
    assert_eq!(out["parts"][0]["pages"], json!([5, 1, 2]));
    check_parts(&out, dir.path(), &original);
}

#[test]
fn splits_every_n_pages() {
    let (pdf, original) = sample(7);
    let (out, dir) = split(&pdf, json!({"every": 3}));
    let out = out.unwrap();
    let pages: Vec<Value> = out["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pages"].clone())
        .collect();
    assert_eq!(pages, [json!([1, 2, 3]), json!([4, 5, 6]), json!([7])]);
    check_parts(&out, dir.path(), &original);

    let (out, dir) = split(&pdf, json!({"every": 1}));
    let out = out.unwrap();
    assert_eq!(out["parts"].as_array().unwrap().len(), 7);
    assert_eq!(out["parts"][6]["file"], "part-007.pdf");
    check_parts(&out, dir.path(), &original);
}

#[test]
fn parts_do_not_carry_the_other_pages() {
    let (pdf, _) = sample(20);
    let (out, dir) = split(&pdf, json!({"ranges": ["7"]}));
    let out = out.unwrap();
    let bytes = std::fs::read(dir.path().join("out/part-001.pdf")).unwrap();
    let doc = lopdf::Document::load_mem(&bytes).unwrap();
    // Catalog, page tree, page, content, resources, font: nothing else (but the
    // cross-reference stream, which lopdf keeps as an object when it reads a file).
    let objects: Vec<_> = doc
        .objects
        .values()
        .filter(|o| o.as_stream().map_or(true, |s| !s.dict.has_type(b"XRef")))
        .collect();
    assert_eq!(objects.len(), 6, "{objects:?}");
    assert!((out["parts"][0]["bytes"].as_u64().unwrap() as usize) < pdf.len() / 5);
}

#[test]
fn refuses_bad_ranges() {
    let (pdf, _) = sample(4);
    let err = |extra: Value| split(&pdf, extra).0.unwrap_err();
    assert_eq!(
        err(json!({"ranges": ["1-3", "3-4"]})),
        "ranges[1] (\"3-4\") overlaps ranges[0] (\"1-3\"): page 3 is in both; each page may go to one part only"
    );
    assert_eq!(
        err(json!({"ranges": ["1", "2-5"]})),
        "ranges[1]: page 5 (in \"2-5\") is out of range: the PDF has 4 pages (1-4)"
    );
    assert!(err(json!({"ranges": ["1", ""]})).starts_with("ranges[1]: the page list is empty"));
    assert!(err(json!({"ranges": []})).starts_with("ranges is empty"));
    assert_eq!(
        err(json!({"ranges": ["1"], "every": 2})),
        "pass either ranges or every, not both"
    );
    assert!(err(json!({})).starts_with("pass ranges"));
    assert!(err(json!({"every": 0})).starts_with("every must be at least 1"));
}

#[test]
fn refuses_too_many_parts() {
    assert!(
        super::groups_every(1, 1001)
            .unwrap_err()
            .message()
            .contains("at most 1000")
    );
    assert_eq!(super::groups_every(1, 1000).unwrap().len(), 1000);
    assert_eq!(super::groups_every(5, 3).unwrap(), [vec![1, 2, 3]]);
}

#[test]
fn refuses_encrypted_and_broken_input() {
    let user = include_bytes!("../pdf/testdata/encrypted-user.pdf");
    let (out, _) = split(user, json!({"every": 1}));
    assert!(
        out.unwrap_err()
            .contains("is an encrypted (password-protected) PDF")
    );
    let owner = include_bytes!("../pdf/testdata/encrypted-owner.pdf");
    let (out, dir) = split(owner, json!({"every": 1}));
    assert!(
        out.unwrap_err()
            .contains("is an encrypted PDF (it opens without a password")
    );
    assert!(!dir.path().join("out").exists(), "no part is written");
    let (out, _) = split(b"%PDF-1.4\ngarbage", json!({"every": 1}));
    assert!(out.unwrap_err().contains("is a malformed PDF"));
}

#[test]
fn manifest_advertises_the_limits_of_the_code() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/manifests/pdf.split.json");
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(
        manifest["input_schema"]["properties"]["ranges"]["maxItems"],
        super::MAX_PARTS
    );
    assert!(
        manifest["description"]
            .as_str()
            .unwrap()
            .contains(&format!("At most {} parts", super::MAX_PARTS))
    );
}
