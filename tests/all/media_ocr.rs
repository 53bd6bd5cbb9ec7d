//! ocr on text rendered by poppler from a real PDF (Debian's libtasn1 manual), with poppler's
//! own text layer for the same region as the transcript: the character error rate is printed
//! and bounded. The PP-OCR models come from PyPI (`rapidocr-onnxruntime`), pinned by sha256.

use std::{path::Path, sync::Arc, time::Instant};

use locara_facade::{BackendKind, Locara, RunRequest};
use serde_json::json;

use crate::media_support::{
    Counted, blob, call, edit_distance, engines, libtasn1_pdf, mime_spec_pdf, models_host, output,
    program, run,
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

/// Page `page` of `pdf` rendered whole by `pdftoppm -r 150` (no crop) as PNG, and the page's
/// text layer as `pdftotext -f N -l N` gives it.
fn whole_page(pdf: &Path, page: u32) -> (Vec<u8>, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut pdftoppm = program("pdftoppm", "poppler-utils");
    pdftoppm
        .args(["-png", "-singlefile", "-r", "150"])
        .args(["-f", &page.to_string(), "-l", &page.to_string()])
        .arg(pdf)
        .arg(dir.path().join("page"));
    run(pdftoppm, b"");
    let png = std::fs::read(dir.path().join("page.png")).unwrap();
    let mut pdftotext = program("pdftotext", "poppler-utils");
    pdftotext
        .args(["-f", &page.to_string(), "-l", &page.to_string()])
        .arg(pdf)
        .arg("-");
    let text = String::from_utf8(run(pdftotext, b"")).unwrap();
    (png, text)
}

/// A page's text reduced to what both readings can agree on: a word hyphenated at the end of
/// a line joined again (pdftotext does so, the image shows the hyphen), typographic quotes and
/// dashes as their ASCII forms, ligatures spelled out, list bullets (glyphs, not text) dropped,
/// and every run of whitespace (line and paragraph breaks, poppler's column gaps) one space.
fn normalise_page(text: &str) -> String {
    let mut joined = String::with_capacity(text.len());
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let line = line.trim_end();
        let hyphenated = line.ends_with('-')
            && line[..line.len() - 1]
                .chars()
                .next_back()
                .is_some_and(char::is_alphabetic)
            && lines
                .peek()
                .and_then(|next| next.trim_start().chars().next())
                .is_some_and(char::is_lowercase);
        if hyphenated {
            joined.push_str(&line[..line.len() - 1]);
            if let Some(next) = lines.peek_mut() {
                *next = next.trim_start();
            }
        } else {
            joined.push_str(line);
            joined.push('\n');
        }
    }
    let mapped: String = joined
        .chars()
        .map(|c| match c {
            '“' | '”' | '„' | '″' => "\"".to_owned(),
            '‘' | '’' | '‚' | '′' => "'".to_owned(),
            '–' | '—' | '‐' => "-".to_owned(),
            'ﬁ' => "fi".to_owned(),
            'ﬂ' => "fl".to_owned(),
            'ﬀ' => "ff".to_owned(),
            'ﬃ' => "ffi".to_owned(),
            'ﬄ' => "ffl".to_owned(),
            '•' | '·' => " ".to_owned(),
            other => other.to_string(),
        })
        .collect();
    mapped.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whole dense pages, not crops: two pages of running text from two Debian manuals, rendered
/// at 150 dpi (1275×1650), read under the tool's own limits by an app that grants
/// `models.run` (as the CLI's does), with the character error rate against the PDF's text
/// layer (both normalised by `normalise_page`) printed and bounded. The host ran the models:
/// detection once per page, recognition once per text box.
#[tokio::test(flavor = "multi_thread")]
async fn reads_whole_dense_pages() {
    let (home, _) = engines(&["ocr"], None);
    let runner = Arc::new(Counted::default());
    let locara = models_host(
        &home,
        BackendKind::Wasmtime,
        Some(Arc::clone(&runner)),
        true,
    );
    // An appendix page of the libtasn1 manual (46 lines of prose) and a page of the
    // shared-mime-info specification (a bulleted list with element names, 42 lines).
    for (n, (pdf, page)) in [(libtasn1_pdf(), 28), (mime_spec_pdf(), 5)]
        .into_iter()
        .enumerate()
    {
        let (png, layer) = whole_page(&pdf, page);
        let recognised = runner.runs("rec.onnx");
        let started = Instant::now();
        let (out, _) = output(
            &locara,
            "ocr",
            json!({"source": blob(&png), "language": "en"}),
        )
        .await;
        let elapsed = started.elapsed().as_secs_f64();
        let text = out["text"].as_str().unwrap();
        let (expected, got) = (normalise_page(&layer), normalise_page(text));
        let (expected, got): (Vec<char>, Vec<char>) =
            (expected.chars().collect(), got.chars().collect());
        let rate = edit_distance(&expected, &got) as f64 / expected.len() as f64;
        let boxes = runner.runs("rec.onnx") - recognised;
        eprintln!(
            "ocr of {} page {page} ({}×{}) on wasmtime, models on the host: {} characters expected, {} read, {boxes} boxes, CER {rate:.4}, {elapsed:.1} s",
            pdf.display(),
            out["width"],
            out["height"],
            expected.len(),
            got.len(),
        );
        assert!(
            rate <= 0.02,
            "CER {rate} on page {page} of {}:\n{text}",
            pdf.display()
        );
        assert_eq!(runner.runs("det.onnx"), n + 1);
        assert!(boxes >= 40, "{boxes} boxes read on the host");
    }
}

/// The host runs `ocr`'s models only for an app that grants `models.run` and a host that offers
/// it; otherwise the tool runs them itself, and reads the same text.
#[tokio::test(flavor = "multi_thread")]
async fn the_host_runs_the_models_only_where_granted_and_offered() {
    let pdf = libtasn1_pdf();
    let page_lines = lines(&pdf, 1);
    let title: Vec<&Line> = page_lines.iter().take(3).collect();
    let (png, _) = render(&pdf, 1, &title, 100.0);
    let (home, _) = engines(&["ocr"], None);
    let read = |locara: Locara| {
        let png = png.clone();
        async move {
            let (out, _) = output(&locara, "ocr", json!({"source": blob(&png)})).await;
            out["text"].as_str().unwrap().to_owned()
        }
    };

    let runner = Arc::new(Counted::default());
    let on_host = read(models_host(
        &home,
        BackendKind::Wasmtime,
        Some(Arc::clone(&runner)),
        true,
    ))
    .await;
    assert_eq!(runner.runs("det.onnx"), 1);
    assert_eq!(runner.runs("rec.onnx"), 3, "three text lines");
    // The interpreter gets the same: the models do not run on it.
    let on_wasmi = read(models_host(
        &home,
        BackendKind::Wasmi,
        Some(Arc::clone(&runner)),
        true,
    ))
    .await;
    assert_eq!(on_wasmi, on_host);
    assert_eq!(runner.runs("det.onnx"), 2);

    // Not granted, or granted by an app whose host runs no models: the tool runs them.
    let refused = Arc::new(Counted::default());
    let not_granted = read(models_host(
        &home,
        BackendKind::Wasmtime,
        Some(Arc::clone(&refused)),
        false,
    ))
    .await;
    let not_offered = read(models_host(&home, BackendKind::Wasmtime, None, true)).await;
    assert_eq!(refused.runs("det.onnx") + refused.runs("rec.onnx"), 0);
    assert_eq!(not_granted, on_host);
    assert_eq!(not_offered, on_host);
    assert!(
        on_host.contains("Abstract Syntax Notation One (ASN.1) library"),
        "{on_host}"
    );
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
