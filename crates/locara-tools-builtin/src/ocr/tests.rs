//! Tests of `ocr` that need no model: CTC decoding, box extraction, reading order, errors.

use std::path::PathBuf;

use image::{Rgb, RgbImage};
use rten_tensor::NdTensor;
use rten_tensor::prelude::*;
use serde_json::json;

use super::detect::{self, DetParams};
use super::recognize::{self, Charset};
use super::*;

/// A probability map of `rows`×`cols` with 0.05 background and `value` inside each
/// `(left, top, right, bottom)` rectangle (inclusive).
fn prob_map(
    rows: usize,
    cols: usize,
    rects: &[(usize, usize, usize, usize)],
    value: f32,
) -> NdTensor<f32, 2> {
    let mut map = NdTensor::<f32, 2>::full([rows, cols], 0.05);
    for &(l, t, r, b) in rects {
        for y in t..=b {
            for x in l..=r {
                map[[y, x]] = value;
            }
        }
    }
    map
}

fn sorted_bounds(quads: &[Quad]) -> Vec<(f32, f32, f32, f32)> {
    let mut bounds: Vec<_> = quads.iter().map(Quad::bounds).collect();
    bounds.sort_by(|a, b| a.1.total_cmp(&b.1));
    bounds
}

#[test]
fn two_rectangles_give_two_grown_boxes() {
    let map = prob_map(100, 200, &[(20, 10, 119, 19), (30, 60, 89, 79)], 0.9);
    let quads = detect::boxes_from_prob_map(map.view(), &DetParams::default());
    assert_eq!(quads.len(), 2, "{quads:?}");
    let bounds = sorted_bounds(&quads);
    // The dilation adds a row and a column of background to each region, lowering its mean.
    for q in &quads {
        assert!(q.score > 0.75 && q.score <= 0.9, "score {}", q.score);
    }

    // The first region: contour through pixel centres 20..=120 (the 2x2 dilation adds a
    // pixel right and below), i.e. 100 x 10; unclip distance = 100*10*1.6 / (2*110).
    let d1 = 100.0 * 10.0 * 1.6 / 220.0;
    let (l, t, r, b) = bounds[0];
    let close = |a: f32, e: f32| (a - e).abs() < 0.6;
    assert!(
        close(l, 20.0 - d1) && close(r, 120.0 + d1),
        "{:?} d={d1}",
        bounds[0]
    );
    assert!(
        close(t, 10.0 - d1) && close(b, 20.0 + d1),
        "{:?} d={d1}",
        bounds[0]
    );

    // The second: 60 x 20, distance 60*20*1.6 / 160 = 12.
    let (l, t, r, b) = bounds[1];
    assert!(
        close(l, 30.0 - 12.0) && close(r, 90.0 + 12.0),
        "{:?}",
        bounds[1]
    );
    assert!(
        close(t, 60.0 - 12.0) && close(b, 80.0 + 12.0),
        "{:?}",
        bounds[1]
    );
}

#[test]
fn weak_small_and_clipped_regions() {
    // Below box_thresh on average (0.4 > thresh 0.3 but < 0.5), and a 2-pixel speck.
    let mut map = prob_map(60, 100, &[(10, 10, 60, 20)], 0.4);
    map[[40, 40]] = 0.9;
    map[[40, 41]] = 0.9;
    assert!(detect::boxes_from_prob_map(map.view(), &DetParams::default()).is_empty());

    // A region touching the border is clamped to the map.
    let map = prob_map(40, 80, &[(0, 0, 50, 9)], 0.95);
    let quads = detect::boxes_from_prob_map(map.view(), &DetParams::default());
    assert_eq!(quads.len(), 1);
    let (l, t, r, b) = quads[0].bounds();
    assert_eq!((l, t), (0.0, 0.0));
    assert!(
        r > 51.0 && r <= 79.0 && b > 10.0 && b <= 39.0,
        "{:?}",
        quads[0].bounds()
    );
}

#[test]
fn a_rotated_region_gives_a_rotated_box() {
    // A thick diagonal band: its minimum-area rectangle is tilted, not axis-aligned.
    let mut map = NdTensor::<f32, 2>::full([120, 120], 0.0);
    for y in 0..120usize {
        for x in 0..120usize {
            let along = (x as f32 + y as f32) / 2.0_f32.sqrt();
            let across = (x as f32 - y as f32) / 2.0_f32.sqrt();
            if across.abs() <= 6.0 && (30.0..=130.0).contains(&along) {
                map[[y, x]] = 0.9;
            }
        }
    }
    let quads = detect::boxes_from_prob_map(map.view(), &DetParams::default());
    assert_eq!(quads.len(), 1);
    let [tl, tr, br, bl] = quads[0].pts;
    // The long side runs down-right at about 45 degrees.
    let angle = (tr[1] - tl[1]).atan2(tr[0] - tl[0]).to_degrees();
    assert!(
        (angle.abs() - 45.0).abs() < 5.0,
        "angle {angle}: {:?}",
        quads[0].pts
    );
    let long = ((tr[0] - tl[0]).powi(2) + (tr[1] - tl[1]).powi(2)).sqrt();
    let short = ((bl[0] - tl[0]).powi(2) + (bl[1] - tl[1]).powi(2)).sqrt();
    assert!(long > 3.0 * short, "{long} vs {short}");
    assert!(br[1] > tl[1]);
}

/// A long thin region with a ragged top and bottom, like a line of text at detection scale
/// (about 490×7 map pixels on a 150-dpi page): the rectangle around it must hold every point
/// and be as high as the line, not collapse to a sliver (which dropped whole lines of a page).
#[test]
fn a_long_thin_ragged_line_keeps_its_height() {
    for (length, slope) in [(490usize, 0.0f32), (487, 0.004), (300, -0.01), (900, 0.002)] {
        let rows = 40;
        let mut map = NdTensor::<f32, 2>::full([rows, length + 20], 0.05);
        for x in 0..length {
            // Ascenders, descenders and gaps between words make the edges uneven.
            let top = 15 + usize::from(x % 7 == 3) + usize::from(x % 13 == 5);
            let bottom = 21 - usize::from(x % 11 == 2);
            let shift = (slope * x as f32).round() as isize;
            for y in top..=bottom {
                let y = (y as isize + shift).clamp(0, rows as isize - 1) as usize;
                map[[y, x + 10]] = 0.9;
            }
        }
        let quads = detect::boxes_from_prob_map(map.view(), &DetParams::default());
        assert_eq!(quads.len(), 1, "{length} {slope}: {quads:?}");
        let (l, t, r, b) = quads[0].bounds();
        assert!(r - l > length as f32, "{length} {slope}: {:?}", quads[0]);
        assert!(
            b - t > 7.0 && b - t < 25.0 + length as f32 * slope.abs(),
            "{length} {slope}: {:?}",
            quads[0]
        );

        let points: Vec<rten_imageproc::PointF> = (0..=length)
            .flat_map(|x| {
                let y = slope * x as f32;
                [
                    rten_imageproc::PointF::from_yx(y + 15.0 + (x % 5) as f32 * 0.2, x as f32),
                    rten_imageproc::PointF::from_yx(y + 22.0 - (x % 3) as f32 * 0.3, x as f32),
                ]
            })
            .collect();
        let rect = detect::min_area_rect(&points).unwrap();
        let (w, h) = (
            rect.width().max(rect.height()),
            rect.width().min(rect.height()),
        );
        assert!(
            w >= length as f32 && (6.0..=8.0).contains(&h),
            "{length} {slope}: {w}x{h}"
        );
        let grown = rect.expanded(0.01, 0.01);
        for p in &points {
            assert!(
                grown.contains(*p),
                "{length} {slope}: {p:?} outside {rect:?}"
            );
        }
    }
}

#[test]
fn corners_are_ordered_clockwise_from_top_left() {
    let shuffled = [[10.0, 20.0], [0.0, 0.0], [10.0, 0.0], [0.0, 20.0]];
    assert_eq!(
        detect::order_corners(shuffled),
        [[0.0, 0.0], [10.0, 0.0], [10.0, 20.0], [0.0, 20.0]]
    );
}

#[test]
fn reading_order_groups_lines_top_to_bottom_left_to_right() {
    // (left, top, right, bottom); indices given out of order.
    let bounds = [
        (300.0, 52.0, 400.0, 72.0), // line 2, right
        (10.0, 10.0, 200.0, 30.0),  // line 1, left
        (10.0, 50.0, 250.0, 70.0),  // line 2, left (slightly higher than its neighbour)
        (220.0, 12.0, 400.0, 31.0), // line 1, right
        (10.0, 90.0, 100.0, 110.0), // line 3
    ];
    assert_eq!(
        detect::reading_order(&bounds),
        vec![vec![1, 3], vec![2, 0], vec![4]]
    );
    assert!(detect::reading_order(&[]).is_empty());
}

#[test]
fn assembled_text_joins_boxes_by_line() {
    let quad = |l: f32, t: f32, r: f32, b: f32| Quad {
        pts: [[l, t], [r, t], [r, b], [l, b]],
        score: 0.9,
    };
    let found = vec![
        (quad(10.0, 50.0, 90.0, 70.0), "second".to_owned(), 0.8),
        (quad(120.0, 10.0, 190.5, 30.0), "world".to_owned(), 0.9),
        (quad(10.0, 10.0, 100.0, 30.0), "Hello".to_owned(), 1.0),
    ];
    let out = serde_json::to_value(assemble(&found, 200, 80)).unwrap();
    assert_eq!(
        out,
        json!({
            "text": "Hello world\nsecond",
            "blocks": [
                {"text": "Hello", "box": {"x": 10, "y": 10, "width": 90, "height": 20}, "confidence": 1.0},
                {"text": "world", "box": {"x": 120, "y": 10, "width": 71, "height": 20}, "confidence": 0.9},
                {"text": "second", "box": {"x": 10, "y": 50, "width": 80, "height": 20}, "confidence": 0.8},
            ],
            "confidence": 0.9,
            "width": 200,
            "height": 80,
        })
    );
}

#[test]
fn greedy_ctc_collapses_repeats_and_drops_blanks() {
    // Classes: 0 blank, 1 'a', 2 'b', 3 ' '.
    let charset = Charset::from_dictionary("a\nb\n");
    assert_eq!(charset.classes(), 4);
    let one_hot = |class: usize, p: f32| {
        let mut row = vec![(1.0 - p) / 3.0; 4];
        row[class] = p;
        row
    };
    // a a _ a b b _ ' ' b  ->  "aab b"
    let steps = [
        (1, 0.9),
        (1, 0.7),
        (0, 0.99),
        (1, 0.8),
        (2, 0.6),
        (2, 0.9),
        (0, 0.9),
        (3, 0.5),
        (2, 1.0),
    ];
    let probs: Vec<f32> = steps.iter().flat_map(|&(c, p)| one_hot(c, p)).collect();
    let (kept, conf) = recognize::ctc_greedy_decode(&probs, 4, None);
    assert_eq!(kept, vec![1, 1, 2, 3, 2]);
    let text: String = kept.iter().filter_map(|&c| charset.text(c)).collect();
    assert_eq!(text, "aab b");
    // The first step of each run counts: 0.9, 0.8, 0.6, 0.5, 1.0.
    assert!((conf - 0.76).abs() < 1e-6, "{conf}");

    // All blanks: nothing, confidence 0.
    let blanks: Vec<f32> = (0..3).flat_map(|_| one_hot(0, 0.9)).collect();
    assert_eq!(
        recognize::ctc_greedy_decode(&blanks, 4, None),
        (vec![], 0.0)
    );
}

#[test]
fn the_latin_mask_keeps_the_decoder_off_other_scripts() {
    let charset = Charset::from_dictionary("a\n中\n，\né\n");
    let mask = charset.latin_mask();
    // blank, a, 中, full-width comma, é, space
    assert_eq!(mask, vec![true, true, false, false, true, true]);
    // '中' wins unmasked; with the mask the runner-up 'a' is read.
    let probs = [0.0, 0.3, 0.6, 0.05, 0.05, 0.0];
    assert_eq!(recognize::ctc_greedy_decode(&probs, 6, None).0, vec![2]);
    let (kept, conf) = recognize::ctc_greedy_decode(&probs, 6, Some(&mask));
    assert_eq!((kept, conf), (vec![1], 0.3));
    assert_eq!(charset.text(0), None);
    assert_eq!(charset.text(2), Some("中"));
    assert_eq!(charset.text(5), Some(" "));
    assert_eq!(charset.text(6), None);
}

#[test]
fn detection_input_size_and_padding() {
    assert_eq!(detect::det_size(800, 100, 960), (800, 96));
    assert_eq!(detect::det_size(1700, 2200, 960), (736, 960));
    assert_eq!(detect::det_size(10, 10, 960), (32, 32));
    // A short or very wide image gets a margin above and below; a narrow one left and right.
    assert_eq!(detect::letterbox_padding(800, 100), (0, 0));
    assert_eq!(detect::letterbox_padding(900, 100), (0, 62));
    assert_eq!(detect::letterbox_padding(200, 20), (0, 22));
    assert_eq!(detect::letterbox_padding(20, 200), (22, 0));

    let img = RgbImage::from_pixel(900, 100, Rgb([255, 255, 255]));
    let input = detect::prepare(&img, 960);
    assert_eq!(input.tensor.shape(), [1, 3, 224, 896]);
    // White in BGR order, normalized with the per-channel statistics.
    let expected = (1.0 - 0.485) / 0.229;
    assert!((input.tensor[[0, 0, 5, 5]] - expected).abs() < 1e-5);
    // Map coordinates come back onto the unpadded source.
    let [x, y] = input.to_source([896.0, 112.0]);
    assert!(
        (x - 900.0).abs() < 1e-3 && (y - 50.0).abs() < 0.5,
        "{x} {y}"
    );
}

#[test]
fn crops_are_cut_upright_and_scaled_for_recognition() {
    let mut img = RgbImage::from_pixel(100, 60, Rgb([255, 255, 255]));
    for y in 20..30 {
        for x in 10..50 {
            img.put_pixel(x, y, Rgb([0, 0, 0]));
        }
    }
    let crop = recognize::crop_quad(
        &img,
        [[10.0, 20.0], [50.0, 20.0], [50.0, 30.0], [10.0, 30.0]],
    );
    assert_eq!(crop.dimensions(), (40, 10));
    assert!(crop.pixels().all(|p| p.0 == [0, 0, 0]));

    // A tall region is vertical text: turned to read left to right.
    let tall = recognize::crop_quad(&img, [[0.0, 0.0], [10.0, 0.0], [10.0, 40.0], [0.0, 40.0]]);
    assert_eq!(tall.dimensions(), (40, 10));

    let input = recognize::prepare(&crop);
    // 40x10 scales to 192x48, padded to the minimum width 320.
    assert_eq!(input.shape(), [1, 3, 48, 320]);
    assert_eq!(input[[0, 1, 24, 100]], -1.0);
    assert_eq!(input[[0, 1, 24, 300]], 0.0);
}

#[test]
fn refuses_bad_arguments_and_missing_models() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let models = root.join("models");
    let png = {
        let mut bytes = Vec::new();
        RgbImage::from_pixel(64, 64, Rgb([255, 255, 255]))
            .write_to(&mut Cursor::new(&mut bytes), image::ImageFormat::Png)
            .unwrap();
        bytes
    };
    std::fs::write(root.join("page.png"), &png).unwrap();
    std::fs::write(root.join("doc.pdf"), b"%PDF-1.7\n").unwrap();
    std::fs::write(root.join("notes.txt"), b"hello").unwrap();

    let err = run(json!({"source": {"path": "page.png"}}), root, &models).unwrap_err();
    assert_eq!(err.kind(), abi::ErrorKind::Failed);
    assert!(err.message().contains("det.onnx is missing"), "{err}");
    assert!(err.message().contains("locara models fetch ocr"), "{err}");

    let bad = |input: Value, needle: &str| {
        let err = run(input, root, &models).unwrap_err();
        assert_eq!(err.kind(), abi::ErrorKind::BadArgs, "{err}");
        assert!(err.message().contains(needle), "{err}");
    };
    bad(json!({"source": {"path": "doc.pdf"}}), "is a PDF");
    bad(
        json!({"source": {"path": "notes.txt"}}),
        "not a PNG or JPEG",
    );
    bad(json!({"source": {"path": "nope.png"}}), "no such file");
    bad(
        json!({"source": {"path": "page.png"}, "max_side": 1000}),
        "max_side must be a multiple of 32",
    );
    bad(
        json!({"source": {"path": "page.png"}, "min_confidence": 2.0}),
        "min_confidence",
    );
    bad(
        json!({"source": {"path": "page.png"}, "language": "fr"}),
        "unknown variant",
    );
    bad(json!({"path": "page.png"}), "unknown field");
}

/// Runs the real models on a rendered or scanned image. Not run by default: set
/// `LOCARA_OCR_MODELS` to a directory holding `det.onnx` and `rec.onnx`, and
/// `LOCARA_OCR_IMAGE` to an image (and optionally `LOCARA_OCR_EXPECT` to its transcript,
/// which prints the character error rate), then run with `--ignored --nocapture`.
#[test]
#[ignore = "needs the PP-OCR model files (LOCARA_OCR_MODELS)"]
#[allow(
    clippy::print_stdout,
    reason = "manual check: prints the result and timings"
)]
fn reads_an_image_with_the_real_models() {
    let models = PathBuf::from(std::env::var("LOCARA_OCR_MODELS").expect("LOCARA_OCR_MODELS"));
    let image = PathBuf::from(std::env::var("LOCARA_OCR_IMAGE").expect("LOCARA_OCR_IMAGE"));
    let root = image.parent().unwrap();
    let name = image.file_name().unwrap().to_str().unwrap();
    let language = std::env::var("LOCARA_OCR_LANGUAGE").unwrap_or_else(|_| "auto".into());
    let max_side: u32 =
        std::env::var("LOCARA_OCR_MAX_SIDE").map_or(default_max_side(), |v| v.parse().unwrap());
    let started = std::time::Instant::now();
    let out = run(
        json!({"source": {"path": name}, "language": language, "max_side": max_side}),
        root,
        &models,
    )
    .unwrap();
    let total = started.elapsed();
    println!("{}", serde_json::to_string_pretty(&out).unwrap());

    // The stages timed apart.
    let t = std::time::Instant::now();
    let engine = Engine::load(&models).unwrap();
    let load = t.elapsed();
    let img = image::open(&image).unwrap().to_rgb8();
    let t = std::time::Instant::now();
    let quads = engine.detect(&img, max_side).unwrap();
    let det = t.elapsed();
    let t = std::time::Instant::now();
    let crops: Vec<_> = quads
        .iter()
        .map(|q| recognize::crop_quad(&img, q.pts))
        .collect();
    engine.recognize_each(&crops, None).unwrap();
    let rec = t.elapsed();
    println!(
        "total {total:?}: load {load:?}, detection {det:?}, recognition of {} boxes {rec:?}",
        quads.len()
    );
    if let Ok(expect) = std::env::var("LOCARA_OCR_EXPECT") {
        let expected = std::fs::read_to_string(&expect).unwrap_or(expect);
        let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let (got, want) = (norm(out["text"].as_str().unwrap()), norm(&expected));
        let cer = edit_distance(&got, &want) as f64 / want.chars().count().max(1) as f64;
        println!("CER {cer:.4} ({} chars expected)", want.chars().count());
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The defaults and ranges the manifest advertises are the ones the code applies.
#[test]
fn manifest_defaults_match_the_code() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("manifests/ocr.json");
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let props = &manifest["input_schema"]["properties"];
    assert_eq!(props["max_side"]["default"], default_max_side());
    assert_eq!(props["max_side"]["minimum"], *MAX_SIDE_RANGE.start());
    assert_eq!(props["max_side"]["maximum"], *MAX_SIDE_RANGE.end());
    assert_eq!(props["max_side"]["multipleOf"], detect::DET_ALIGN);
    assert_eq!(
        props["min_confidence"]["default"],
        f64::from(default_min_confidence())
    );
    assert_eq!(props["language"]["default"], "auto");
    let names: Vec<&str> = manifest["model_dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [DET_MODEL, REC_MODEL]);
}
