//! ocr on text rendered by poppler from a real PDF (Debian's libtasn1 manual), with poppler's
//! own text layer for the same region as the transcript: the character error rate is printed
//! and bounded. The PP-OCR models come from PyPI (`rapidocr-onnxruntime`), pinned by sha256.

use std::{path::Path, time::Instant};

use locara_facade::{BackendKind, RunRequest};
use serde_json::json;

use crate::media_support::{
    blob, call, edit_distance, engines, libtasn1_pdf, output, program, run,
};

/// A line of a PDF page as poppler lays it out: its box in points and its words.
struct Line {
    x_min: f64,
    y_min: f64,
    x_max: f64,
    y_max: f64,
    text: String,
}

/// The lines of `page` of `pdf`, from `pdftotext -bbox-layout`.
fn lines(pdf: &Path, page: u32) -> Vec<Line> {
    let mut command = program("pdftotext", "poppler-utils");
    command
        .args([
            "-bbox-layout",
            "-f",
            &page.to_string(),
            "-l",
            &page.to_string(),
        ])
        .arg(pdf)
        .arg("-");
    let html = String::from_utf8(run(command, b"")).unwrap();
    let attribute = |tag: &str, name: &str| -> f64 {
        let start = tag.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
        tag[start..].split('"').next().unwrap().parse().unwrap()
    };
    let mut lines: Vec<Line> = Vec::new();
    for row in html.lines().map(str::trim) {
        if row.starts_with("<line ") {
            lines.push(Line {
                x_min: attribute(row, "xMin"),
                y_min: attribute(row, "yMin"),
                x_max: attribute(row, "xMax"),
                y_max: attribute(row, "yMax"),
                text: String::new(),
            });
        } else if row.starts_with("<word ") {
            let word = row.split('>').nth(1).unwrap().split('<').next().unwrap();
            let line = lines.last_mut().unwrap();
            if !line.text.is_empty() {
                line.text.push(' ');
            }
            line.text.push_str(&word.replace("&amp;", "&"));
        }
    }
    lines
}

/// `lines` of `page` rendered by pdftoppm at `dpi` as one PNG, with a margin, and their text
/// (one line per line).
fn render(pdf: &Path, page: u32, lines: &[&Line], dpi: f64) -> (Vec<u8>, String) {
    let scale = dpi / 72.0;
    let margin = 12.0;
    let x = lines.iter().map(|l| l.x_min).fold(f64::MAX, f64::min) * scale - margin;
    let y = lines.iter().map(|l| l.y_min).fold(f64::MAX, f64::min) * scale - margin;
    let right = lines.iter().map(|l| l.x_max).fold(0.0, f64::max) * scale + margin;
    let bottom = lines.iter().map(|l| l.y_max).fold(0.0, f64::max) * scale + margin;
    let dir = tempfile::tempdir().unwrap();
    let mut pdftoppm = program("pdftoppm", "poppler-utils");
    pdftoppm
        .args(["-png", "-singlefile", "-r", &dpi.to_string()])
        .args(["-f", &page.to_string(), "-l", &page.to_string()])
        .args(["-x", &(x as i64).to_string(), "-y", &(y as i64).to_string()])
        .args([
            "-W",
            &((right - x) as i64).to_string(),
            "-H",
            &((bottom - y) as i64).to_string(),
        ])
        .arg(pdf)
        .arg(dir.path().join("region"));
    run(pdftoppm, b"");
    let png = std::fs::read(dir.path().join("region.png")).unwrap();
    let text = lines
        .iter()
        .map(|l| l.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    (png, text)
}

/// Character error rate of `got` against `expected`, ignoring whitespace differences.
fn cer(expected: &str, got: &str) -> f64 {
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let expected = squash(expected);
    let (expected, got): (Vec<char>, Vec<char>) =
        (expected.chars().collect(), squash(got).chars().collect());
    edit_distance(&expected, &got) as f64 / expected.len() as f64
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_the_title_block_of_a_real_page() {
    reads_the_title_block(BackendKind::Wasmtime).await;
}

/// The same on the wasmi interpreter, which takes about 220 s for what Wasmtime does in 3 s
/// (two ONNX models, ~1.5e10 instructions): kept out of the default run, `.ci/run` runs it.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "slow on the interpreter (~220 s); .ci/run runs it with --ignored"]
async fn reads_the_title_block_of_a_real_page_on_wasmi() {
    reads_the_title_block(BackendKind::Wasmi).await;
}

async fn reads_the_title_block(engine: BackendKind) {
    let pdf = libtasn1_pdf();
    let page_lines = lines(&pdf, 1);
    // The title, the subtitle and the version line of the manual's first page.
    let title: Vec<&Line> = page_lines.iter().take(3).collect();
    assert!(title[1].text.starts_with("Abstract Syntax Notation"));
    let (png, expected) = render(&pdf, 1, &title, 100.0);

    let (_home, hosts) = engines(&["ocr"], None);
    for locara in hosts.iter().filter(|l| l.engine() == engine) {
        let started = Instant::now();
        let (out, _) = output(locara, "ocr", json!({"source": blob(&png)})).await;
        let text = out["text"].as_str().unwrap();
        let rate = cer(&expected, text);
        eprintln!(
            "ocr of the title block on {}: {text:?} vs {expected:?}: CER {rate:.4}, {:.1} s",
            locara.engine().name(),
            started.elapsed().as_secs_f64()
        );
        assert!(rate <= 0.05, "CER {rate}");
        let blocks = out["blocks"].as_array().unwrap();
        assert_eq!(blocks.len(), 3, "{out}");
        let tops: Vec<f64> = blocks
            .iter()
            .map(|b| b["box"]["y"].as_f64().unwrap())
            .collect();
        assert!(
            tops.windows(2).all(|w| w[0] < w[1]),
            "reading order: {tops:?}"
        );
        for block in blocks {
            let right =
                block["box"]["x"].as_f64().unwrap() + block["box"]["width"].as_f64().unwrap();
            assert!(right <= out["width"].as_f64().unwrap(), "{block}");
            let confidence = block["confidence"].as_f64().unwrap();
            assert!(confidence > 0.5 && confidence <= 1.0, "{block}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_models_are_refused_naming_the_fetch_command() {
    // A home without `locara models fetch`: the call cannot run, and says how to fix it.
    let (_home, hosts) = engines(&[], None);
    let locara = &hosts[0];
    let error = locara
        .run(RunRequest::new(
            "ocr",
            json!({"source": blob(b"\x89PNG\r\n\x1a\n")}),
        ))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "model_missing");
    assert!(
        error.to_string().contains("locara models fetch ocr"),
        "{error}"
    );
    assert!(error.to_string().contains("det.onnx"), "{error}");
    // A PDF is not an image: the tool says which tools to use.
    let (_home, hosts) = engines(&["ocr"], None);
    let response = call(
        &hosts[0],
        RunRequest::new("ocr", json!({"source": blob(b"%PDF-1.5\n...")})),
    )
    .await;
    let report = response.error.expect("a tool error");
    assert!(report.message.contains("PDF"), "{}", report.message);
}
