//! image.resize and image.format-convert on real images (matplotlib's sample photographs and
//! logos, pinned by sha256), on both engines, each result decoded and compared by Pillow.

use locara_facade::RunRequest;
use serde_json::json;

use crate::media_support::{
    blob, call, engines, file, matplotlib_sample, output, pillow, pillow_difference,
};

#[tokio::test(flavor = "multi_thread")]
async fn resize_modes_give_the_documented_geometry_and_a_faithful_picture() {
    let photo = matplotlib_sample("grace_hopper.jpg");
    let source = pillow(&photo);
    assert_eq!(
        (source["width"].as_u64(), source["height"].as_u64()),
        (Some(512), Some(600))
    );
    let (_home, hosts) = engines(&[], None);
    for locara in &hosts {
        // fit: inside 128x128, aspect ratio kept (512x600 -> 109x128).
        let (out, response) = output(
            locara,
            "image.resize",
            json!({"source": blob(&photo), "width": 128, "height": 128}),
        )
        .await;
        assert_eq!(out["file"], "resized.jpg");
        assert_eq!(
            (out["width"].as_u64(), out["height"].as_u64()),
            (Some(109), Some(128))
        );
        let resized = file(&response, "resized.jpg");
        assert_eq!(response.files[0].size_bytes, resized.len() as u64);
        let decoded = pillow(&resized);
        assert_eq!(decoded["format"], "JPEG");
        assert_eq!(
            (decoded["width"].as_u64(), decoded["height"].as_u64()),
            (Some(109), Some(128))
        );
        // Downscaling keeps the picture's average colour.
        for band in 0..3 {
            let (before, after) = (
                source["mean"][band].as_f64().unwrap(),
                decoded["mean"][band].as_f64().unwrap(),
            );
            assert!(
                (before - after).abs() < 4.0,
                "band {band}: {before} vs {after}"
            );
        }

        // fill: exactly 100x50, cropped centred; to PNG.
        let (out, response) = output(
            locara,
            "image.resize",
            json!({"source": blob(&photo), "width": 100, "height": 50, "mode": "fill", "format": "png"}),
        )
        .await;
        assert_eq!(out["file"], "resized.png");
        let decoded = pillow(&file(&response, "resized.png"));
        assert_eq!(
            (
                decoded["format"].as_str(),
                decoded["width"].as_u64(),
                decoded["height"].as_u64()
            ),
            (Some("PNG"), Some(100), Some(50))
        );

        // exact + crop: the top-left 64x64 square stretched to 32x16.
        let (out, _) = output(
            locara,
            "image.resize",
            json!({"source": blob(&photo), "crop": {"x": 0, "y": 0, "width": 64, "height": 64},
                   "width": 32, "height": 16, "mode": "exact", "filter": "nearest"}),
        )
        .await;
        assert_eq!(
            (out["width"].as_u64(), out["height"].as_u64()),
            (Some(32), Some(16))
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn format_conversions_decode_to_the_same_pixels() {
    let logo = matplotlib_sample("logo2.png");
    let photo = matplotlib_sample("grace_hopper.jpg");
    let (_home, hosts) = engines(&[], None);
    for locara in &hosts {
        // PNG -> WebP is lossless: Pillow decodes the same pixels.
        let (out, response) = output(
            locara,
            "image.format-convert",
            json!({"source": blob(&logo), "format": "webp"}),
        )
        .await;
        assert_eq!(
            (out["file"].as_str(), out["lossless"].as_bool()),
            (Some("converted.webp"), Some(true))
        );
        let webp = file(&response, "converted.webp");
        assert_eq!(pillow(&webp)["format"], "WEBP");
        assert_eq!(pillow_difference(&logo, &webp)["max"], 0);

        // JPEG -> PNG: the PNG holds the JPEG's pixels as this tool decoded them; another
        // decoder (libjpeg, in Pillow) differs by rounding only.
        let (_, response) = output(
            locara,
            "image.format-convert",
            json!({"source": blob(&photo), "format": "png"}),
        )
        .await;
        let png = file(&response, "converted.png");
        let difference = pillow_difference(&photo, &png);
        assert!(difference["mean"].as_f64().unwrap() < 1.0, "{difference}");

        // PNG with transparency -> JPEG: flattened onto white, said so, close to the original.
        let (out, response) = output(
            locara,
            "image.format-convert",
            json!({"source": blob(&logo), "format": "jpeg", "quality": 92}),
        )
        .await;
        assert_eq!(out["lossless"], false);
        let jpeg = file(&response, "converted.jpg");
        assert_eq!(pillow(&jpeg)["format"], "JPEG");
        assert_eq!(pillow(&jpeg)["width"], pillow(&logo)["width"]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn files_in_the_workspace_and_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("logo.png"), matplotlib_sample("logo2.png")).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not an image").unwrap();
    let (_home, hosts) = engines(&[], Some(dir.path()));
    for locara in &hosts {
        let request = RunRequest::new(
            "image.resize",
            json!({"source": {"path": "logo.png"}, "width": 50}),
        )
        .with_workspace(dir.path());
        let response = call(locara, request).await;
        assert!(response.ok, "{:?}", response.error);
        assert_eq!(response.output.as_ref().unwrap()["width"], 50);

        let request = RunRequest::new(
            "image.format-convert",
            json!({"source": {"path": "notes.txt"}, "format": "png"}),
        )
        .with_workspace(dir.path());
        let response = call(locara, request).await;
        let error = response.error.expect("not an image is a tool error");
        assert_eq!(error.code, "tool_error");
        assert!(response.files.is_empty());
        assert!(
            error.message.contains("not") && error.message.contains("image"),
            "{}",
            error.message
        );
    }
}
