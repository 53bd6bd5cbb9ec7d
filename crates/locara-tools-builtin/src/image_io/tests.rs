//! Tests for the shared decoding and encoding of the image tools.

use image::{GenericImageView, Rgba, RgbaImage};

use super::*;

/// A `w` x `h` RGBA test pattern: a gradient with a transparent left column and a
/// half-transparent top row.
pub(crate) fn pattern(w: u32, h: u32) -> DynamicImage {
    let img = RgbaImage::from_fn(w, h, |x, y| {
        let a = if x == 0 {
            0
        } else if y == 0 {
            128
        } else {
            255
        };
        Rgba([(x * 255 / w) as u8, (y * 255 / h) as u8, 200, a])
    });
    DynamicImage::ImageRgba8(img)
}

/// `image` encoded as PNG.
pub(crate) fn png_bytes(image: &DynamicImage) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, ImageFormat::Png).unwrap();
    out.into_inner()
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A PNG that is only a signature and an IHDR claiming `w` x `h` 8-bit RGBA, plus a tiny IDAT:
/// the shape of a decompression bomb's header.
pub(crate) fn png_header_claiming(w: u32, h: u32) -> Vec<u8> {
    fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
        out.extend((data.len() as u32).to_be_bytes());
        let mut body = kind.to_vec();
        body.extend(data);
        out.extend(&body);
        out.extend(crc32(&body).to_be_bytes());
    }
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend(w.to_be_bytes());
    ihdr.extend(h.to_be_bytes());
    ihdr.extend([8, 6, 0, 0, 0]);
    chunk(&mut png, b"IHDR", &ihdr);
    chunk(
        &mut png,
        b"IDAT",
        &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01],
    );
    chunk(&mut png, b"IEND", &[]);
    png
}

#[test]
fn the_crc_helper_is_the_png_crc() {
    // The CRC of "IEND" with no data, as found in every PNG.
    assert_eq!(crc32(b"IEND"), 0xae42_6082);
}

#[test]
fn a_decompression_bomb_header_is_a_clean_error() {
    let err = decode(&png_header_claiming(100_000, 100_000), "\"bomb.png\"").unwrap_err();
    assert_eq!(err.kind(), crate::abi::ErrorKind::BadArgs);
    assert!(
        err.message()
            .starts_with("\"bomb.png\" is 100000x100000 pixels (10000.0 megapixels)"),
        "{err}"
    );
    assert!(
        err.message().contains("at most 30000 pixels per side"),
        "{err}"
    );

    // Within the side limit, but 20000 x 20000 x 4 bytes is far beyond the pixel budget.
    let err = decode(&png_header_claiming(20_000, 20_000), "\"big.png\"").unwrap_err();
    assert!(
        err.message()
            .starts_with("\"big.png\" is 20000x20000 pixels"),
        "{err}"
    );
    assert!(err.message().contains("192 MiB"), "{err}");
}

#[test]
fn non_images_are_named_by_their_magic_bytes() {
    let err = decode(b"hello, world\n", "\"a.txt\"").unwrap_err();
    assert_eq!(
        err.message(),
        "\"a.txt\" is not an image this tool recognises (it starts with bytes 68 65 6c 6c 6f 2c 20 77, it looks like text); it reads PNG, JPEG, WebP, GIF, BMP or TIFF"
    );
    let err = decode(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "\"a.pdf\"").unwrap_err();
    assert!(
        err.message().contains("it looks like a PDF document"),
        "{err}"
    );
    let err = decode(&[0xde, 0xad, 0xbe, 0xef, 0, 1], "x").unwrap_err();
    assert!(
        err.message()
            .contains("starts with bytes de ad be ef 00 01);"),
        "{err}"
    );
    let err = decode(b"", "\"e.png\"").unwrap_err();
    assert!(err.message().starts_with("\"e.png\" is empty"), "{err}");
    let err = decode(b"\0\0\x01\0\x01\0\x10\x10", "\"i.ico\"").unwrap_err();
    assert!(
        err.message()
            .starts_with("\"i.ico\" is a ico image (image/x-icon), which this tool cannot read"),
        "{err}"
    );
}

#[test]
fn a_truncated_image_is_reported_as_corrupt() {
    let png = png_bytes(&pattern(64, 64));
    let err = decode(&png[..png.len() / 2], "\"cut.png\"").unwrap_err();
    assert_eq!(err.kind(), crate::abi::ErrorKind::BadArgs);
    assert!(
        err.message().starts_with(
            "\"cut.png\" looks like a png file but cannot be decoded; it is corrupt or truncated"
        ),
        "{err}"
    );
}

#[test]
fn every_format_round_trips_with_its_dimensions() {
    let source = pattern(37, 23);
    for format in [
        Format::Png,
        Format::Jpeg,
        Format::Webp,
        Format::Gif,
        Format::Bmp,
        Format::Tiff,
    ] {
        let mut notes = Vec::new();
        let bytes = encode(&source, format, Some(90), &mut notes).unwrap();
        let back = decode(&bytes, "x").unwrap_or_else(|e| panic!("{format:?}: {e}"));
        assert_eq!(back.format, format);
        assert_eq!(back.image.dimensions(), (37, 23), "{format:?}");
        if matches!(
            format,
            Format::Png | Format::Webp | Format::Bmp | Format::Tiff
        ) {
            assert_eq!(
                back.image.to_rgba8(),
                source.to_rgba8(),
                "{format:?} is lossless"
            );
            assert!(format.lossless());
        }
        if format == Format::Jpeg {
            assert!(
                notes.iter().any(|n| n.contains("white background")),
                "{notes:?}"
            );
        } else {
            assert!(notes[0].starts_with("quality 90 was ignored"), "{notes:?}");
        }
    }
}

#[test]
fn jpeg_flattens_transparency_onto_white() {
    let mut img = RgbaImage::new(16, 16);
    for (x, _, p) in img.enumerate_pixels_mut() {
        *p = match x / 4 {
            0 => Rgba([255, 0, 0, 0]),   // transparent red: white
            1 => Rgba([255, 0, 0, 255]), // opaque red
            2 => Rgba([0, 0, 0, 128]),   // half-transparent black: mid grey
            _ => Rgba([0, 0, 255, 255]), // opaque blue
        };
    }
    let img = DynamicImage::ImageRgba8(img);
    let flat = flatten_on_white(&img).to_rgb8();
    assert_eq!(flat.get_pixel(0, 0).0, [255, 255, 255]);
    assert_eq!(flat.get_pixel(4, 0).0, [255, 0, 0]);
    assert_eq!(flat.get_pixel(8, 0).0, [127, 127, 127]);
    assert_eq!(flat.get_pixel(12, 0).0, [0, 0, 255]);

    let bytes = encode(&img, Format::Jpeg, Some(95), &mut Vec::new()).unwrap();
    let back = decode(&bytes, "x").unwrap().image;
    assert!(!back.has_alpha());
    let close = |x: u32, want: [u8; 3]| {
        let got = back.to_rgb8().get_pixel(x, 8).0;
        assert!(
            got.iter().zip(want).all(|(g, w)| g.abs_diff(w) <= 12),
            "pixel {x}: {got:?} vs {want:?}"
        );
    };
    close(1, [255, 255, 255]);
    close(5, [255, 0, 0]);
    close(9, [127, 127, 127]);
    close(13, [0, 0, 255]);

    // Greyscale with alpha stays greyscale.
    let la = DynamicImage::ImageLumaA8(image::GrayAlphaImage::from_pixel(
        2,
        2,
        image::LumaA([0, 0]),
    ));
    let flat = flatten_on_white(&la);
    assert_eq!(flat.color(), ColorType::L8);
    assert_eq!(flat.to_luma8().get_pixel(1, 1).0, [255]);
}

#[test]
fn deep_images_note_the_reduction_to_8_bits() {
    let deep = DynamicImage::ImageRgb16(image::ImageBuffer::from_pixel(
        4,
        4,
        image::Rgb([65535u16, 0, 32768]),
    ));
    let mut notes = Vec::new();
    let bytes = encode(&deep, Format::Webp, None, &mut notes).unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("16-bit"), "{notes:?}");
    let back = decode(&bytes, "x").unwrap().image;
    assert_eq!(back.to_rgb8().get_pixel(0, 0).0, [255, 0, 128]);

    let mut notes = Vec::new();
    let bytes = encode(&deep, Format::Png, None, &mut notes).unwrap();
    assert!(notes.is_empty(), "PNG keeps 16 bits: {notes:?}");
    assert_eq!(decode(&bytes, "x").unwrap().image.color(), ColorType::Rgb16);
}

#[test]
fn quality_is_checked() {
    assert_eq!(check_quality(None).unwrap(), None);
    assert_eq!(check_quality(Some(1)).unwrap(), Some(1));
    assert_eq!(check_quality(Some(100)).unwrap(), Some(100));
    for bad in [0, 101, 1000] {
        let err = check_quality(Some(bad)).unwrap_err();
        assert!(
            err.message()
                .starts_with(&format!("quality must be between 1 and 100, got {bad}")),
            "{err}"
        );
    }
}
