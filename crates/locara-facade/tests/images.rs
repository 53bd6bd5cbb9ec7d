//! The image tools decode JPEG in the sandbox to the pixels a native decoder gets, resample
//! to the pixels `image` computes natively, and write the PNG a native encoder writes.
//!
//! In the sandbox, zune-jpeg runs the WebAssembly SIMD IDCT and colour conversion of
//! `vendor/zune-jpeg` (natively it runs its AVX2 or scalar code, which it keeps bit for bit the
//! same); a wrong lane, shift or shuffle there changes pixels, which this test compares exactly,
//! on both engines. The JPEGs are made here, so that every path is taken: colour and grey,
//! widths below 16 (converted through a scratch buffer), sizes that are not whole blocks, flat
//! blocks (the DC-only shortcut) and noisy ones (every AC term), low and high quality.

use base64::Engine as _;
use image::{
    DynamicImage, ImageEncoder, ImageFormat, codecs::jpeg::JpegEncoder, imageops::FilterType,
};
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

/// A [`picture`] of `channels` 8-bit channels (luma, luma-alpha, RGB or RGBA) as an image.
fn image_of(width: u32, height: u32, channels: usize, seed: u64) -> DynamicImage {
    let pixels = picture(width, height, channels, seed);
    let made = "the pixels fill the image";
    match channels {
        1 => DynamicImage::ImageLuma8(
            image::ImageBuffer::from_raw(width, height, pixels).expect(made),
        ),
        2 => DynamicImage::ImageLumaA8(
            image::ImageBuffer::from_raw(width, height, pixels).expect(made),
        ),
        3 => DynamicImage::ImageRgb8(
            image::ImageBuffer::from_raw(width, height, pixels).expect(made),
        ),
        _ => DynamicImage::ImageRgba8(
            image::ImageBuffer::from_raw(width, height, pixels).expect(made),
        ),
    }
}

/// `image` as a PNG file, in base64 (a call's file argument).
fn png_base64(image: &DynamicImage) -> String {
    let mut png = std::io::Cursor::new(Vec::new());
    image.write_to(&mut png, ImageFormat::Png).unwrap();
    base64::engine::general_purpose::STANDARD.encode(png.get_ref())
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
            let sandboxed =
                image::load_from_memory(&written_file(&response)).expect("the PNG decodes");
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

/// The file a call wrote (the PNG or WebP of the image tools), decoded from its base64.
fn written_file(response: &locara_facade::RunResponse) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(
            response.files[0]
                .base64
                .as_deref()
                .expect("the PNG's bytes"),
        )
        .expect("the PNG's base64")
}

/// What `image.resize` computes: `resize_exact`, around which an image with translucent
/// pixels is premultiplied by alpha (rounded to nearest) and divided back (transparent pixels
/// staying 0), as `image_resize.rs` documents.
fn premultiplied_resize(
    source: &DynamicImage,
    width: u32,
    height: u32,
    filter: FilterType,
) -> DynamicImage {
    let channels = usize::from(source.color().channel_count());
    let translucent = source.color().has_alpha()
        && source
            .as_bytes()
            .chunks_exact(channels)
            .any(|p| p[channels - 1] != 255);
    if !translucent {
        return source.resize_exact(width, height, filter);
    }
    let by_alpha = |image: &mut DynamicImage, forward: bool| {
        let bytes: &mut [u8] = match image {
            DynamicImage::ImageLumaA8(b) => b,
            DynamicImage::ImageRgba8(b) => b,
            _ => unreachable!("8-bit with alpha"),
        };
        for p in bytes.chunks_exact_mut(channels) {
            let a = u32::from(p[channels - 1]);
            for c in &mut p[..channels - 1] {
                let v = u32::from(*c);
                let v = if forward {
                    (v * a + 127) / 255
                } else {
                    (v * 255 + a / 2).checked_div(a).unwrap_or(0).min(255)
                };
                *c = u8::try_from(v).unwrap();
            }
        }
    };
    let mut image = source.clone();
    by_alpha(&mut image, true);
    let mut out = image.resize_exact(width, height, filter);
    by_alpha(&mut out, false);
    out
}

/// `image.resize` in the sandbox gives `image`'s own `resize_exact` pixels (premultiplied by
/// alpha as the tool does), for every 8-bit
/// layout and filter, down and up: the tool resamples with code of its own
/// (`image_resize/resample.rs`), in WebAssembly SIMD for three and four channels (an RGB pixel
/// read as four values, the last of a row reaching past it), so a wrong lane, tap or edge
/// changes pixels here. The PNG it writes is byte for byte the one `image` writes natively
/// for those pixels: the adaptive filter's choice of each row rests on a sum that
/// `vendor/png` computes in WebAssembly SIMD.
#[tokio::test(flavor = "multi_thread")]
async fn resize_in_the_sandbox_gives_the_native_pixels_and_png() {
    let home = TestHome::new();
    let filters = [
        ("nearest", FilterType::Nearest),
        ("triangle", FilterType::Triangle),
        ("catmull_rom", FilterType::CatmullRom),
        ("gaussian", FilterType::Gaussian),
        ("lanczos3", FilterType::Lanczos3),
    ];
    let engines = BackendKind::ALL.map(|engine| {
        let config = LocaraConfig::new(home.path()).with_engine(engine);
        (engine, Locara::new(&config).unwrap())
    });
    // Widths that are not whole blocks of 16 values, sizes down and up.
    let sizes = [((75, 61), (29, 40)), ((37, 23), (80, 47))];
    for channels in 1..=4 {
        for (seed, &((width, height), (to_width, to_height))) in sizes.iter().enumerate() {
            let source = image_of(width, height, channels, 7 + seed as u64);
            let base64 = png_base64(&source);
            for ((name, filter), (engine, locara)) in filters
                .into_iter()
                .flat_map(|f| engines.iter().map(move |e| (f, e)))
            {
                let what = format!(
                    "{channels} channels, {width}×{height} to {to_width}×{to_height}, {name}, on {engine:?}"
                );
                let response = locara
                    .run(RunRequest::new(
                        "image.resize",
                        json!({"source": {"base64": base64}, "width": to_width, "height": to_height,
                               "mode": "exact", "filter": name, "format": "png"}),
                    ))
                    .await
                    .unwrap();
                assert!(response.ok, "{what}: {:?}", response.error);
                let written = written_file(&response);
                let sandboxed = image::load_from_memory(&written).expect("the PNG decodes");
                let native = premultiplied_resize(&source, to_width, to_height, filter);
                assert_eq!(sandboxed.color(), native.color(), "{what}");
                assert!(
                    sandboxed.as_bytes() == native.as_bytes(),
                    "{what}: the pixels differ"
                );
                let mut again = std::io::Cursor::new(Vec::new());
                native.write_to(&mut again, ImageFormat::Png).unwrap();
                assert!(
                    written == *again.get_ref(),
                    "{what}: the PNG differs from the native one"
                );
            }
        }
    }
}

/// `image.format-convert` writes, in the sandbox, the lossless WebP `image` writes natively for
/// the same pixels, byte for byte, for every 8-bit layout: RGB and RGBA pixels are expanded and
/// their green subtracted four a vector in WebAssembly SIMD (`vendor/image-webp`'s
/// `encoder/wasm.rs`), the pixels after the last whole vector one by one, so the sizes below
/// leave every count of them; a wrong lane changes the bytes here.
#[tokio::test(flavor = "multi_thread")]
async fn webp_is_written_in_the_sandbox_as_natively() {
    let home = TestHome::new();
    let engines = BackendKind::ALL.map(|engine| {
        let config = LocaraConfig::new(home.path()).with_engine(engine);
        (engine, Locara::new(&config).unwrap())
    });
    let sizes = [(1, 1), (5, 3), (6, 1), (7, 9), (75, 61), (131, 20)];
    for channels in 1..=4 {
        for (seed, &(width, height)) in sizes.iter().enumerate() {
            let source = image_of(width, height, channels, 11 + seed as u64);
            let base64 = png_base64(&source);
            let mut native = std::io::Cursor::new(Vec::new());
            source.write_to(&mut native, ImageFormat::WebP).unwrap();
            for (engine, locara) in &engines {
                let what = format!("{channels} channels, {width}×{height}, on {engine:?}");
                let response = locara
                    .run(RunRequest::new(
                        "image.format-convert",
                        json!({"source": {"base64": base64}, "format": "webp"}),
                    ))
                    .await
                    .unwrap();
                assert!(response.ok, "{what}: {:?}", response.error);
                assert!(
                    written_file(&response) == *native.get_ref(),
                    "{what}: the WebP differs from the native one"
                );
            }
        }
    }
}
