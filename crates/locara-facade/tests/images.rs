//! The image tools decode JPEG in the sandbox to the pixels a native decoder gets.
//!
//! In the sandbox, zune-jpeg runs the WebAssembly SIMD IDCT and colour conversion of
//! `vendor/zune-jpeg` (natively it runs its AVX2 or scalar code, which it keeps bit for bit the
//! same); a wrong lane, shift or shuffle there changes pixels, which this test compares exactly,
//! on both engines. The JPEGs are made here, so that every path is taken: colour and grey,
//! widths below 16 (converted through a scratch buffer), sizes that are not whole blocks, flat
//! blocks (the DC-only shortcut) and noisy ones (every AC term), low and high quality.

use base64::Engine as _;
use image::{ImageEncoder, codecs::jpeg::JpegEncoder};
use locara_facade::{BackendKind, Locara, LocaraConfig, RunRequest};
use locara_test_artifacts::TestHome;
use serde_json::json;

/// A deterministic picture: smooth gradients, hard edges and noise, so its blocks range from
/// flat to dense.
fn picture(width: u32, height: u32, channels: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    let mut noise = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % 256) as u8
    };
    let mut pixels = Vec::with_capacity(width as usize * height as usize * channels);
    for y in 0..height {
        for x in 0..width {
            for c in 0..channels {
                let value = match (x / 8 + y / 8 + c as u32) % 4 {
                    // A flat block.
                    0 => 90,
                    // Gradients.
                    1 => (x * 255 / width.max(1)) as u8,
                    2 => (y * 255 / height.max(1)) as u8 ^ (c as u8 * 60),
                    // Noise.
                    _ => noise(),
                };
                pixels.push(value);
            }
        }
    }
    pixels
}

fn jpeg(width: u32, height: u32, grey: bool, quality: u8, seed: u64) -> Vec<u8> {
    let (channels, color) = if grey {
        (1, image::ExtendedColorType::L8)
    } else {
        (3, image::ExtendedColorType::Rgb8)
    };
    let mut out = Vec::new();
    JpegEncoder::new_with_quality(&mut out, quality)
        .write_image(
            &picture(width, height, channels, seed),
            width,
            height,
            color,
        )
        .expect("the JPEG encodes");
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn jpeg_is_decoded_in_the_sandbox_to_the_native_pixels() {
    let home = TestHome::new();
    let cases = [
        (131, 97, false, 92),
        (256, 200, false, 100),
        (64, 64, false, 35),
        (13, 40, false, 80),
        (37, 23, true, 90),
        (200, 120, true, 60),
    ];
    // Each JPEG, its native pixels and its base64, made once for both engines.
    let inputs: Vec<_> = cases
        .iter()
        .enumerate()
        .map(|(seed, &(width, height, grey, quality))| {
            let jpeg = jpeg(width, height, grey, quality, seed as u64 + 1);
            let native = image::load_from_memory(&jpeg)
                .expect("the JPEG decodes natively")
                .to_rgba8();
            let source = base64::engine::general_purpose::STANDARD.encode(&jpeg);
            let what = format!("{width}×{height}, grey {grey}, quality {quality}");
            (what, (width, height), native, source)
        })
        .collect();
    for engine in [BackendKind::Wasmtime, BackendKind::Wasmi] {
        let locara = Locara::new(&LocaraConfig::new(home.path()).with_engine(engine)).unwrap();
        for (what, (width, height), native, source) in &inputs {
            let what = format!("{what}, on {engine:?}");
            let response = locara
                .run(RunRequest::new(
                    "image.format-convert",
                    json!({"source": {"base64": source}, "format": "png"}),
                ))
                .await
                .unwrap();
            assert!(response.ok, "{what}: {:?}", response.error);
            let png = base64::engine::general_purpose::STANDARD
                .decode(
                    response.files[0]
                        .base64
                        .as_deref()
                        .expect("the PNG's bytes"),
                )
                .unwrap();
            let sandboxed = image::load_from_memory(&png).expect("the PNG decodes");
            assert_eq!(
                (sandboxed.width(), sandboxed.height()),
                (*width, *height),
                "{what}"
            );
            // The tool writes RGB(A); a grey JPEG's pixels are its grey value thrice.
            let sandboxed = sandboxed.to_rgba8();
            let differ = sandboxed
                .pixels()
                .zip(native.pixels())
                .filter(|(a, b)| a != b)
                .count();
            assert_eq!(differ, 0, "{what}: {differ} pixels differ");
        }
    }
}
