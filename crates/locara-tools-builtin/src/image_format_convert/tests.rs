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

/// The vendored WebP encoder (`vendor/image-webp`, patched: pixels read as words, codes in one
/// table) writes every colour type losslessly, with runs of every kind: none, the four short
/// ones, long ones with extra bits, and ones past the longest reference (4096), which split.
#[test]
fn webp_is_lossless_for_every_colour_type_and_run_length() {
    let runs = [1, 2, 3, 4, 5, 6, 17, 100, 4095, 4096, 4097, 5000, 8193];
    let mut seed = 0x9e37_79b9_u32;
    let mut noise = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed.to_le_bytes()
    };
    // A run of each length (each a fresh random pixel), then a stretch of noise.
    let mut pixels = Vec::new();
    for &run in &runs {
        let pixel = noise();
        pixels.extend(std::iter::repeat_n(pixel, run));
        pixels.extend((0..7).map(|_| noise()));
    }
    let width = 97;
    pixels.resize(pixels.len().div_ceil(width) * width, [9, 8, 7, 6]);
    let (width, height) = (width as u32, (pixels.len() / width) as u32);
    let rgba: Vec<u8> = pixels.concat();
    let rgba = image::RgbaImage::from_raw(width, height, rgba).unwrap();
    let images = [
        image::DynamicImage::ImageRgba8(rgba.clone()),
        image::DynamicImage::ImageRgb8(image::DynamicImage::ImageRgba8(rgba.clone()).to_rgb8()),
        image::DynamicImage::ImageLumaA8(
            image::DynamicImage::ImageRgba8(rgba.clone()).to_luma_alpha8(),
        ),
        image::DynamicImage::ImageLuma8(image::DynamicImage::ImageRgba8(rgba).to_luma8()),
        image::DynamicImage::ImageRgb8(image::RgbImage::new(1, 1)),
    ];
    for original in images {
        let mut webp = std::io::Cursor::new(Vec::new());
        original
            .write_to(&mut webp, image::ImageFormat::WebP)
            .unwrap();
        let back = image::load_from_memory(webp.get_ref()).unwrap();
        assert_eq!(
            back.to_rgba8(),
            original.to_rgba8(),
            "{:?}",
            original.color()
        );
    }
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
