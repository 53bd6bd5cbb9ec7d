//! Tests for `image.format-convert`: whole runs on generated images.

use image::GenericImageView;
use serde_json::json;

use super::*;
use crate::image_io::tests::{pattern, png_bytes};

fn convert(args: Value) -> (tempfile::TempDir, Result<Value, ToolError>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.png"), png_bytes(&pattern(40, 30))).unwrap();
    let mut input = args;
    input["source"] = json!({"path": "a.png"});
    let out = run(input, dir.path(), &OutDir::at(dir.path().join("out")));
    (dir, out)
}

#[test]
fn converts_png_to_every_format() {
    for (format, file) in [
        ("png", "converted.png"),
        ("jpeg", "converted.jpg"),
        ("jpg", "converted.jpg"),
        ("webp", "converted.webp"),
        ("gif", "converted.gif"),
        ("bmp", "converted.bmp"),
        ("tiff", "converted.tiff"),
    ] {
        let (dir, out) = convert(json!({"format": format}));
        let out = out.unwrap();
        let bytes = std::fs::read(dir.path().join("out").join(file)).unwrap();
        assert_eq!(out["file"], file);
        assert_eq!(out["bytes"], bytes.len());
        assert_eq!(
            out["source"],
            json!({"width": 40, "height": 30, "format": "png"})
        );
        let back = image::load_from_memory(&bytes).unwrap();
        assert_eq!(back.dimensions(), (40, 30), "{format}");
        assert_eq!(
            (out["width"].as_u64(), out["height"].as_u64()),
            (Some(40), Some(30))
        );
    }
}

#[test]
fn webp_is_lossless_and_ignores_quality_with_a_note() {
    let (dir, out) = convert(json!({"format": "webp", "quality": 50}));
    let out = out.unwrap();
    assert_eq!(out["format"], "webp");
    assert_eq!(out["lossless"], true);
    assert_eq!(
        out["notes"],
        json!([
            "quality 50 was ignored: WebP output is always lossless here; ask for jpeg for a smaller lossy file"
        ])
    );
    let back =
        image::load_from_memory(&std::fs::read(dir.path().join("out/converted.webp")).unwrap())
            .unwrap();
    assert_eq!(back.to_rgba8(), pattern(40, 30).to_rgba8());
}

#[test]
fn jpeg_reports_the_flattening_and_honours_quality() {
    let (dir, out) = convert(json!({"format": "jpeg", "quality": 95}));
    let out = out.unwrap();
    assert_eq!(out["lossless"], false);
    assert_eq!(
        out["notes"],
        json!([
            "JPEG has no transparency: transparent areas were composited onto a white background"
        ])
    );
    let high = std::fs::read(dir.path().join("out/converted.jpg"))
        .unwrap()
        .len();
    let (dir, out) = convert(json!({"format": "jpeg", "quality": 10}));
    out.unwrap();
    let low = std::fs::read(dir.path().join("out/converted.jpg"))
        .unwrap()
        .len();
    assert!(low < high, "quality 10 gives {low} bytes, 95 gives {high}");
}

#[test]
fn bad_arguments_name_the_field() {
    let (_dir, out) = convert(json!({"format": "heic"}));
    assert!(
        out.unwrap_err()
            .message()
            .contains("unknown variant `heic`")
    );
    let (_dir, out) = convert(json!({}));
    assert!(
        out.unwrap_err()
            .message()
            .contains("missing field `format`")
    );
    let (_dir, out) = convert(json!({"format": "png", "quality": 101}));
    assert!(
        out.unwrap_err()
            .message()
            .starts_with("quality must be between 1 and 100")
    );
    let (_dir, out) = convert(json!({"format": "png", "width": 3}));
    assert!(out.unwrap_err().message().contains("unknown field `width`"));
    let (_dir, out) = convert(json!({"format": "png"}));
    assert_eq!(
        out.unwrap()["notes"],
        json!(["the source is already png; it was re-encoded anyway"])
    );
}
