//! pdf.extract-text and pdf.split on real PDFs shipped by Debian packages, on both engines,
//! checked against poppler (`pdftotext`, `pdfinfo`) and qpdf, which this project did not write.

use std::path::Path;

use locara_facade::{BackendKind, FsGrant, Grants, Locara, LocaraConfig, RunRequest, SafetyTier};
use locara_test_artifacts::SHARED_COMPILED_CACHE;
use serde_json::{Value, json};

use crate::media_support::{
    blob, call, engines, file, libtasn1_pdf, mime_spec_pdf, output, pdftotext, program, run,
    word_recall, words,
};

/// Extracts `pages` of `pdf` and compares each page's words with pdftotext's.
async fn compare_with_pdftotext(locara: &Locara, pdf: &Path, pages: &str, first: u32, last: u32) {
    let bytes = std::fs::read(pdf).unwrap();
    let (out, _) = output(
        locara,
        "pdf.extract-text",
        json!({"source": blob(&bytes), "pages": pages, "max_chars": 10_000_000}),
    )
    .await;
    assert_eq!(out["truncated"], false);
    let pages_out = out["pages"].as_array().unwrap();
    assert_eq!(pages_out.len() as u32, last - first + 1);
    let mut ours = Vec::new();
    for (page, got) in (first..=last).zip(pages_out) {
        assert_eq!(got["page"], page);
        ours.extend(words(got["text"].as_str().unwrap()));
    }
    let theirs = words(&pdftotext(pdf, first, last));
    let recall = word_recall(&theirs, &ours);
    let precision = word_recall(&ours, &theirs);
    eprintln!(
        "{} pages {pages} on {}: {} words, pdftotext {}; recall {recall:.4}, precision {precision:.4}",
        pdf.display(),
        locara.engine().name(),
        ours.len(),
        theirs.len()
    );
    assert!(
        recall > 0.98 && precision > 0.98,
        "recall {recall}, precision {precision}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn text_layer_matches_pdftotext() {
    let (_home, hosts) = engines(&[], None);
    for locara in &hosts {
        compare_with_pdftotext(locara, &libtasn1_pdf(), "1-8", 1, 8).await;
        compare_with_pdftotext(locara, &mime_spec_pdf(), "1-6", 1, 6).await;
        if locara.engine() == BackendKind::Wasmtime {
            // Whole documents on the fast engine; wasmi reads the same pages above.
            compare_with_pdftotext(locara, &libtasn1_pdf(), "1-end", 1, 36).await;
            compare_with_pdftotext(locara, &mime_spec_pdf(), "1-end", 1, 17).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn split_parts_are_valid_pdfs_with_the_same_text() {
    let pdf = libtasn1_pdf();
    let bytes = std::fs::read(&pdf).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (_home, hosts) = engines(&[], None);
    for locara in &hosts {
        let (out, response) = output(
            locara,
            "pdf.split",
            json!({"source": blob(&bytes), "ranges": ["1-2", "3-10", "11", "12-end"]}),
        )
        .await;
        assert_eq!(out["page_count"], 36);
        let parts = out["parts"].as_array().unwrap();
        let expected: [(u32, u32); 4] = [(1, 2), (3, 10), (11, 11), (12, 36)];
        assert_eq!(parts.len(), 4);
        for (part, (first, last)) in parts.iter().zip(expected) {
            let name = part["file"].as_str().unwrap();
            let path = dir
                .path()
                .join(format!("{}-{name}", locara.engine().name()));
            std::fs::write(&path, file(&response, name)).unwrap();
            // poppler reads it as a PDF of the right length…
            let mut pdfinfo = program("pdfinfo", "poppler-utils");
            pdfinfo.arg(&path);
            let info = String::from_utf8(run(pdfinfo, b"")).unwrap();
            assert!(
                info.lines()
                    .any(|l| l.split_whitespace().collect::<Vec<_>>()
                        == ["Pages:", &(last - first + 1).to_string()]),
                "{name}: {info}"
            );
            // …qpdf finds no structural problem…
            let mut qpdf = program("qpdf", "qpdf");
            qpdf.arg("--check").arg(&path);
            run(qpdf, b"");
            // …and its text is the text of those pages of the original, byte for byte.
            assert_eq!(
                pdftotext(&path, 1, last - first + 1),
                pdftotext(&pdf, first, last),
                "{name} on {}",
                locara.engine().name()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn encrypted_truncated_and_out_of_range_are_clear_errors() {
    let pdf = libtasn1_pdf();
    let dir = tempfile::tempdir().unwrap();
    let encrypted = dir.path().join("encrypted.pdf");
    let mut qpdf = program("qpdf", "qpdf");
    qpdf.args(["--encrypt", "user-secret", "owner-secret", "256", "--"])
        .arg(&pdf)
        .arg(&encrypted);
    run(qpdf, b"");
    let encrypted = std::fs::read(&encrypted).unwrap();
    let truncated = std::fs::read(&pdf).unwrap()[..100_000].to_vec();
    let (_home, hosts) = engines(&[], None);
    for locara in &hosts {
        let cases: [(&str, Value, &str); 4] = [
            (
                "pdf.extract-text",
                json!({"source": blob(&encrypted)}),
                "encrypted",
            ),
            (
                "pdf.split",
                json!({"source": blob(&encrypted), "every": 2}),
                "encrypted",
            ),
            (
                "pdf.extract-text",
                json!({"source": blob(&truncated)}),
                "malformed",
            ),
            (
                "pdf.extract-text",
                json!({"source": blob(&std::fs::read(&pdf).unwrap()), "pages": "40"}),
                "36 pages",
            ),
        ];
        for (tool, arguments, needle) in cases {
            let response = call(locara, RunRequest::new(tool, arguments)).await;
            let error = response
                .error
                .unwrap_or_else(|| panic!("{tool} should fail"));
            assert_eq!(error.code, "tool_error", "{tool}: {error:?}");
            assert!(
                error.message.contains(needle),
                "{tool} on {}: {}",
                locara.engine().name(),
                error.message
            );
            assert!(response.files.is_empty());
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn parts_go_to_a_granted_output_directory_without_overwriting() {
    let home = locara_test_artifacts::TestHome::new();
    let docs = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    std::fs::copy(libtasn1_pdf(), docs.path().join("manual.pdf")).unwrap();
    std::fs::write(out.path().join("part-001.pdf"), b"precious").unwrap();
    let grants = Grants::new()
        .with_max_safety_tier(SafetyTier::ReadOnly)
        .with_fs(FsGrant::new(docs.path()))
        .with_fs(FsGrant::new(out.path()).with_write(true));
    let locara = Locara::new(
        &LocaraConfig::new(home.path())
            .with_grants(grants)
            .with_compiled_cache(SHARED_COMPILED_CACHE),
    )
    .unwrap();
    let request = RunRequest::new(
        "pdf.split",
        json!({"source": {"path": "manual.pdf"}, "ranges": ["1", "2-3"]}),
    )
    .with_workspace(docs.path())
    .with_output_dir(out.path());
    let response = call(&locara, request).await;
    assert!(response.ok, "{:?}", response.error);
    let written: Vec<_> = response
        .files
        .iter()
        .map(|f| (f.name.as_str(), f.path.clone().unwrap(), f.base64.is_none()))
        .collect();
    let out_dir = std::fs::canonicalize(out.path()).unwrap();
    assert_eq!(
        written,
        [
            ("part-001.pdf", out_dir.join("part-001-1.pdf"), true),
            ("part-002.pdf", out_dir.join("part-002.pdf"), true)
        ]
    );
    assert_eq!(
        std::fs::read(out.path().join("part-001.pdf")).unwrap(),
        b"precious"
    );
    assert_eq!(
        pdftotext(&out.path().join("part-002.pdf"), 1, 2),
        pdftotext(&libtasn1_pdf(), 2, 3)
    );

    // The workspace is granted read-only: it is no output directory.
    let request = RunRequest::new(
        "pdf.split",
        json!({"source": {"path": "manual.pdf"}, "every": 10}),
    )
    .with_workspace(docs.path())
    .with_output_dir(docs.path());
    let error = locara.run(request).await.unwrap_err();
    assert_eq!(error.code(), "capability_denied");
}
