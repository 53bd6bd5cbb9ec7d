//! Tests for `image.resize`: the geometry of each mode, crop bounds, limits, and whole runs.

use image::{GenericImageView, Rgba, RgbaImage};
use serde_json::json;

use super::*;
use crate::image_io::tests::{pattern, png_bytes, png_header_claiming};

fn full(w: u32, h: u32) -> Rect {
    Rect {
        x: 0,
        y: 0,
        width: w,
        height: h,
    }
}

fn size(src: (u32, u32), w: Option<u32>, h: Option<u32>, mode: Mode) -> (u32, u32) {
    plan(src, None, w, h, mode).unwrap().size
}

#[test]
fn fit_keeps_the_aspect_ratio_inside_the_box() {
    assert_eq!(size((400, 200), Some(100), Some(100), Mode::Fit), (100, 50));
    assert_eq!(size((200, 400), Some(100), Some(100), Mode::Fit), (50, 100));
    assert_eq!(size((400, 200), Some(100), None, Mode::Fit), (100, 50));
    assert_eq!(size((400, 200), None, Some(100), Mode::Fit), (200, 100));
    // Upscaling is allowed.
    assert_eq!(size((40, 20), Some(100), Some(100), Mode::Fit), (100, 50));
    // Rounding, and never below one pixel.
    assert_eq!(size((3, 2), Some(2), None, Mode::Fit), (2, 1));
    assert_eq!(size((1000, 1), Some(10), None, Mode::Fit), (10, 1));
    // The region is the whole source.
    assert_eq!(
        plan((400, 200), None, Some(10), None, Mode::Fit)
            .unwrap()
            .region,
        full(400, 200)
    );
}

#[test]
fn fill_covers_the_box_and_crops_centred() {
    let p = plan((400, 200), None, Some(100), Some(100), Mode::Fill).unwrap();
    assert_eq!(p.size, (100, 100));
    assert_eq!(
        p.region,
        Rect {
            x: 100,
            y: 0,
            width: 200,
            height: 200
        }
    );
    let p = plan((200, 400), None, Some(100), Some(50), Mode::Fill).unwrap();
    assert_eq!(p.size, (100, 50));
    assert_eq!(
        p.region,
        Rect {
            x: 0,
            y: 150,
            width: 200,
            height: 100
        }
    );
    // The same aspect ratio crops nothing.
    let p = plan((400, 200), None, Some(40), Some(20), Mode::Fill).unwrap();
    assert_eq!(p.region, full(400, 200));
}

#[test]
fn exact_stretches() {
    let p = plan((400, 200), None, Some(30), Some(70), Mode::Exact).unwrap();
    assert_eq!(
        p,
        Plan {
            region: full(400, 200),
            size: (30, 70)
        }
    );
}

#[test]
fn fill_and_exact_need_both_sides() {
    for mode in [Mode::Fill, Mode::Exact] {
        let err = plan((400, 200), None, Some(100), None, mode).unwrap_err();
        assert!(
            err.message().contains("needs both width and height"),
            "{err}"
        );
    }
    let err = plan((400, 200), None, None, None, Mode::Fit).unwrap_err();
    assert!(
        err.message().starts_with("give width and/or height"),
        "{err}"
    );
}

#[test]
fn crop_applies_first_and_is_checked_against_the_image() {
    let crop = Rect {
        x: 10,
        y: 20,
        width: 200,
        height: 100,
    };
    let p = plan((400, 200), Some(crop), Some(50), None, Mode::Fit).unwrap();
    assert_eq!(
        p,
        Plan {
            region: crop,
            size: (50, 25)
        }
    );
    // A crop alone keeps its size.
    assert_eq!(
        plan((400, 200), Some(crop), None, None, Mode::Fit).unwrap(),
        Plan {
            region: crop,
            size: (200, 100)
        }
    );
    // Fill within a crop stays inside the crop.
    let p = plan((400, 200), Some(crop), Some(10), Some(10), Mode::Fill).unwrap();
    assert_eq!(
        p.region,
        Rect {
            x: 60,
            y: 20,
            width: 100,
            height: 100
        }
    );

    let err = plan(
        (400, 200),
        Some(Rect {
            x: 300,
            y: 0,
            width: 101,
            height: 10,
        }),
        Some(10),
        None,
        Mode::Fit,
    )
    .unwrap_err();
    assert_eq!(
        err.message(),
        "the crop rectangle does not fit in the 400x200 image: crop.x + crop.width = 401 exceeds the image width 400; x and y count from the top-left corner (0, 0)"
    );
    let err = plan(
        (400, 200),
        Some(Rect {
            x: 0,
            y: u32::MAX,
            width: 1,
            height: u32::MAX,
        }),
        None,
        None,
        Mode::Fit,
    )
    .unwrap_err();
    assert!(
        err.message().contains("exceeds the image height 200"),
        "{err}"
    );
    let err = plan(
        (400, 200),
        Some(Rect {
            x: 0,
            y: 0,
            width: 0,
            height: 5,
        }),
        None,
        None,
        Mode::Fit,
    )
    .unwrap_err();
    assert!(err.message().contains("at least 1"), "{err}");
}

#[test]
fn oversized_outputs_are_refused() {
    let err = plan((10, 10), None, Some(20_000), None, Mode::Fit).unwrap_err();
    assert!(
        err.message()
            .starts_with("width must be between 1 and 16384 pixels, got 20000"),
        "{err}"
    );
    // One side in range, the other derived far beyond it.
    let err = plan((1, 1000), None, Some(100), None, Mode::Fit).unwrap_err();
    assert!(
        err.message()
            .starts_with("the output would be 100x100000 pixels"),
        "{err}"
    );
    let err = plan((10, 10), None, Some(16_000), Some(16_000), Mode::Exact).unwrap_err();
    assert!(err.message().contains("64 megapixels"), "{err}");
}

fn run_on(dir: &Path, name: &str, bytes: &[u8], args: Value) -> Result<Value, ToolError> {
    std::fs::write(dir.join(name), bytes).unwrap();
    let mut input = args;
    input["source"] = json!({"path": name});
    run(input, dir, &OutDir::at(dir.join("out")))
}

#[test]
fn resizes_a_png_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_on(
        dir.path(),
        "a.png",
        &png_bytes(&pattern(400, 200)),
        json!({"width": 100, "height": 100}),
    )
    .unwrap();
    let bytes = std::fs::read(dir.path().join("out/resized.png")).unwrap();
    assert_eq!(
        out,
        json!({
            "file": "resized.png", "bytes": bytes.len(), "width": 100, "height": 50,
            "format": "png", "lossless": true,
            "source": {"width": 400, "height": 200, "format": "png"}, "notes": []
        })
    );
    let back = image::load_from_memory(&bytes).unwrap();
    assert_eq!(back.dimensions(), (100, 50));

    // fill + jpeg, from base64, with every option.
    let out = run(
        json!({
            "source": {"base64": base64_of(&png_bytes(&pattern(400, 200)))},
            "width": 64, "height": 64, "mode": "fill", "filter": "catmull_rom",
            "format": "jpeg", "quality": 70
        }),
        dir.path(),
        &OutDir::at(dir.path().join("out")),
    )
    .unwrap();
    assert_eq!(out["file"], "resized.jpg");
    assert_eq!(
        (out["width"].as_u64(), out["height"].as_u64()),
        (Some(64), Some(64))
    );
    assert_eq!(out["lossless"], false);
    let back = image::load_from_memory(&std::fs::read(dir.path().join("out/resized.jpg")).unwrap())
        .unwrap();
    assert_eq!(back.dimensions(), (64, 64));
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn transparent_pixels_do_not_bleed_into_the_colours() {
    // Left half transparent black, right half opaque white: resampling premultiplied keeps
    // the visible pixels white instead of greying them at the boundary.
    let img = RgbaImage::from_fn(64, 8, |x, _| {
        if x < 32 {
            Rgba([0, 0, 0, 0])
        } else {
            Rgba([255, 255, 255, 255])
        }
    });
    let out = resample(DynamicImage::ImageRgba8(img), (16, 2), FilterType::Lanczos3).to_rgba8();
    for (x, _, p) in out.enumerate_pixels() {
        if p[3] > 0 {
            assert!(p[0] >= 250, "pixel {x} is {p:?}");
        }
    }
    assert_eq!(out.get_pixel(15, 0).0, [255, 255, 255, 255]);
    assert_eq!(out.get_pixel(0, 0)[3], 0);
}

#[test]
fn bad_inputs_are_clean_errors() {
    let dir = tempfile::tempdir().unwrap();
    let err = run_on(
        dir.path(),
        "bomb.png",
        &png_header_claiming(100_000, 100_000),
        json!({"width": 10}),
    )
    .unwrap_err();
    assert!(
        err.message()
            .starts_with("\"bomb.png\" is 100000x100000 pixels"),
        "{err}"
    );
    let err = run_on(dir.path(), "a.txt", b"not an image", json!({"width": 10})).unwrap_err();
    assert!(err.message().contains("not an image"), "{err}");
    let err = run_on(
        dir.path(),
        "a.png",
        &png_bytes(&pattern(8, 8)),
        json!({"width": 10, "mode": "stretch"}),
    )
    .unwrap_err();
    assert!(err.message().contains("unknown variant `stretch`"), "{err}");
    let err = run_on(
        dir.path(),
        "a.png",
        &png_bytes(&pattern(8, 8)),
        json!({"width": 10, "quality": 0}),
    )
    .unwrap_err();
    assert!(
        err.message()
            .starts_with("quality must be between 1 and 100"),
        "{err}"
    );
    // The working-memory guard: a wide source upscaled tall.
    let err = run_on(
        dir.path(),
        "wide.png",
        &png_bytes(&DynamicImage::new_rgb8(16_000, 1)),
        json!({"width": 16_000, "height": 4_000, "mode": "exact"}),
    )
    .unwrap_err();
    assert!(err.message().contains("MiB of working memory"), "{err}");
}

#[test]
fn the_manifest_matches_the_code() {
    let manifest: Value =
        serde_json::from_str(include_str!("../../manifests/image.resize.json")).unwrap();
    let props = &manifest["input_schema"]["properties"];
    assert_eq!(props["width"]["maximum"], MAX_OUTPUT_SIDE);
    assert_eq!(props["height"]["maximum"], MAX_OUTPUT_SIDE);
    assert_eq!(props["filter"]["default"], "lanczos3");
    assert_eq!(Filter::default(), Filter::Lanczos3);
    assert_eq!(props["mode"]["default"], "fit");
    assert_eq!(Mode::default(), Mode::Fit);
    assert!(
        props["quality"]["description"]
            .as_str()
            .unwrap()
            .contains(&format!("default {}", crate::image_io::DEFAULT_QUALITY))
    );
}
