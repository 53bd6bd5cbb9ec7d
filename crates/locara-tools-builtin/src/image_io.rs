//! What `image.resize` and `image.format-convert` share: guarded decoding, the output formats
//! and their encoders, and the result they report.
//!
//! Decoding is bounded before any pixel is allocated: the file is at most [`MAX_INPUT_BYTES`],
//! the decoder runs under [`image::Limits`] (at most [`MAX_INPUT_SIDE`] pixels per side and
//! [`MAX_DECODED_BYTES`] of allocations), and the decoded size the header announces is checked
//! again here, so a decompression bomb (a small file claiming a huge image) is a clean error.
//! Only the first frame of an animated GIF or WebP is decoded.
//!
//! Encoding: JPEG has no alpha channel, so transparent pixels are composited onto white
//! ([`flatten_on_white`]); WebP is written lossless (the only mode of the pure-Rust encoder);
//! GIF is quantized to a 256-colour palette; formats without 16-bit samples (JPEG, WebP, GIF,
//! BMP) get 8 bits per channel. Every such change is reported in the result's `notes`.

use std::io::Cursor;

use image::{
    ColorType, DynamicImage, ImageDecoder, ImageError, ImageFormat, ImageReader, Limits,
    error::LimitErrorKind,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::abi::ToolError;
use crate::blob::{OutDir, OutputFile};

#[cfg(test)]
pub(crate) mod tests;

/// The largest input file read, in bytes.
pub(crate) const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;
/// The largest width or height decoded.
pub(crate) const MAX_INPUT_SIDE: u32 = 30_000;
/// The most bytes the decoded image (and the decoder's own buffers) may take.
pub(crate) const MAX_DECODED_BYTES: u64 = 192 * 1024 * 1024;
/// The default JPEG quality.
pub(crate) const DEFAULT_QUALITY: u8 = 85;
/// The GIF encoder's NeuQuant speed (1 = best and slowest, 30 = fastest).
const GIF_SPEED: i32 = 10;

/// An output format, as named in the arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Format {
    Png,
    #[serde(alias = "jpg")]
    Jpeg,
    Webp,
    Gif,
    Bmp,
    Tiff,
}

impl Format {
    /// The format's name in results (`png`, `jpeg`, …).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Format::Png => "png",
            Format::Jpeg => "jpeg",
            Format::Webp => "webp",
            Format::Gif => "gif",
            Format::Bmp => "bmp",
            Format::Tiff => "tiff",
        }
    }

    /// The output file's extension.
    pub(crate) fn extension(self) -> &'static str {
        match self {
            Format::Jpeg => "jpg",
            other => other.name(),
        }
    }

    /// Whether the encoding keeps every pixel exactly (8-bit reduction aside).
    pub(crate) fn lossless(self) -> bool {
        !matches!(self, Format::Jpeg | Format::Gif)
    }

    fn from_image(format: ImageFormat) -> Option<Format> {
        Some(match format {
            ImageFormat::Png => Format::Png,
            ImageFormat::Jpeg => Format::Jpeg,
            ImageFormat::WebP => Format::Webp,
            ImageFormat::Gif => Format::Gif,
            ImageFormat::Bmp => Format::Bmp,
            ImageFormat::Tiff => Format::Tiff,
            _ => return None,
        })
    }

    fn to_image(self) -> ImageFormat {
        match self {
            Format::Png => ImageFormat::Png,
            Format::Jpeg => ImageFormat::Jpeg,
            Format::Webp => ImageFormat::WebP,
            Format::Gif => ImageFormat::Gif,
            Format::Bmp => ImageFormat::Bmp,
            Format::Tiff => ImageFormat::Tiff,
        }
    }
}

const SUPPORTED: &str = "PNG, JPEG, WebP, GIF, BMP or TIFF";

/// A decoded input image.
#[derive(Debug)]
pub(crate) struct Decoded {
    pub(crate) image: DynamicImage,
    pub(crate) format: Format,
}

/// The source's description in a result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SourceInfo {
    /// The source's width in pixels.
    #[schemars(range(min = 1))]
    pub(crate) width: u32,
    /// The source's height in pixels.
    #[schemars(range(min = 1))]
    pub(crate) height: u32,
    /// The source's format, detected from its content (not its name).
    #[schemars(with = "Format")]
    pub(crate) format: &'static str,
}

/// The result of both tools. Each tool's schema names its own output file:
/// [`name_output_file`].
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Output {
    /// The output file's name.
    pub(crate) file: String,
    /// The output file's size in bytes.
    #[schemars(range(min = 1))]
    pub(crate) bytes: u64,
    /// The output image's width in pixels.
    #[schemars(range(min = 1))]
    pub(crate) width: u32,
    /// The output image's height in pixels.
    #[schemars(range(min = 1))]
    pub(crate) height: u32,
    /// The output format.
    #[schemars(with = "Format")]
    pub(crate) format: &'static str,
    /// Whether the output encoding keeps the pixels exactly: true for PNG, WebP (always lossless here), BMP and TIFF; false for JPEG and GIF (256-colour palette). Reduction of 16-bit channels to 8 bits is reported in notes.
    pub(crate) lossless: bool,
    /// The input image as decoded.
    pub(crate) source: SourceInfo,
    /// What changed beyond the request, e.g. transparency flattened onto white for JPEG, a quality that was ignored, 16-bit channels reduced to 8 bits, a GIF palette. Empty when nothing did.
    pub(crate) notes: Vec<String>,
}

/// Describes the `file` of an [`Output`] schema as `<stem>.<ext>`, the name the tool writes.
pub(crate) fn name_output_file(schema: &mut schemars::Schema, stem: &str) {
    if let Some(file) = schema
        .get_mut("properties")
        .and_then(|p| p.get_mut("file"))
        .and_then(|f| f.as_object_mut())
    {
        file.insert(
            "pattern".to_owned(),
            format!("^{stem}\\.(png|jpg|webp|gif|bmp|tiff)$").into(),
        );
        file.insert(
            "description".to_owned(),
            format!("The output file's name ({stem}.<ext>; the extension of JPEG is jpg); the host returns the file under this name.").into(),
        );
    }
}

/// Reads the file argument `source` (at most [`MAX_INPUT_BYTES`]) and decodes it.
///
/// # Errors
/// As [`crate::blob::Blob::read`] and [`decode`].
pub(crate) fn read_and_decode(
    source: &crate::blob::Blob,
    root: &std::path::Path,
) -> Result<Decoded, ToolError> {
    let bytes = source.read(root, MAX_INPUT_BYTES)?;
    decode(&bytes, &source.describe())
}

/// Decodes `bytes` (the file `what`, as the caller knows it) under the limits above.
///
/// # Errors
/// A bad-arguments error when the bytes are not an image in a supported format, are corrupt,
/// or describe an image larger than the limits.
pub(crate) fn decode(bytes: &[u8], what: &str) -> Result<Decoded, ToolError> {
    let detected = image::guess_format(bytes).map_err(|_| not_an_image(bytes, what))?;
    let format = Format::from_image(detected).ok_or_else(|| {
        ToolError::bad_args(format!(
            "{what} is a {} image ({}), which this tool cannot read; it reads {SUPPORTED}",
            format_label(detected),
            detected.to_mime_type()
        ))
    })?;

    let mut reader = ImageReader::with_format(Cursor::new(bytes), detected);
    reader.limits(limits());
    let decoder = reader.into_decoder().map_err(|e| match &e {
        ImageError::Limits(_) => too_large(header_dimensions(bytes, detected), what),
        _ => decode_error(&e, format, what),
    })?;
    let (width, height) = decoder.dimensions();
    if width == 0 || height == 0 {
        return Err(ToolError::bad_args(format!(
            "{what} declares an empty {width}x{height} {} image",
            format.name()
        )));
    }
    if decoder.total_bytes() > MAX_DECODED_BYTES {
        return Err(too_large(Some((width, height)), what));
    }
    let image = DynamicImage::from_decoder(decoder).map_err(|e| match &e {
        ImageError::Limits(_) => too_large(Some((width, height)), what),
        _ => decode_error(&e, format, what),
    })?;
    Ok(Decoded { image, format })
}

fn limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_INPUT_SIDE);
    limits.max_image_height = Some(MAX_INPUT_SIDE);
    limits.max_alloc = Some(MAX_DECODED_BYTES);
    limits
}

/// The dimensions in the header, read without the dimension limits (for messages only).
fn header_dimensions(bytes: &[u8], format: ImageFormat) -> Option<(u32, u32)> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = Limits::default();
    limits.max_alloc = Some(MAX_DECODED_BYTES);
    reader.limits(limits);
    reader.into_dimensions().ok()
}

fn too_large(dimensions: Option<(u32, u32)>, what: &str) -> ToolError {
    let size = match dimensions {
        Some((w, h)) => format!(
            "{w}x{h} pixels ({:.1} megapixels)",
            f64::from(w) * f64::from(h) / 1e6
        ),
        None => "larger than this tool decodes".to_owned(),
    };
    ToolError::bad_args(format!(
        "{what} is {size}; this tool decodes images of at most {MAX_INPUT_SIDE} pixels per side and {} MiB of pixel data (about {} megapixels of 8-bit RGBA); use a smaller image",
        MAX_DECODED_BYTES >> 20,
        MAX_DECODED_BYTES / 4 / 1_000_000
    ))
}

fn decode_error(err: &ImageError, format: Format, what: &str) -> ToolError {
    match err {
        ImageError::Unsupported(e) => ToolError::bad_args(format!(
            "{what} is a {} file using a feature this tool cannot decode: {}",
            format.name(),
            crate::abi::one_line(&e.to_string())
        )),
        ImageError::Limits(e) if matches!(e.kind(), LimitErrorKind::InsufficientMemory) => {
            too_large(None, what)
        }
        other => ToolError::bad_args(format!(
            "{what} looks like a {} file but cannot be decoded; it is corrupt or truncated ({})",
            format.name(),
            crate::abi::one_line(&other.to_string())
        )),
    }
}

fn format_label(format: ImageFormat) -> &'static str {
    format
        .extensions_str()
        .first()
        .copied()
        .unwrap_or("unknown")
}

/// The error for bytes with no image signature: names what they look like.
fn not_an_image(bytes: &[u8], what: &str) -> ToolError {
    if bytes.is_empty() {
        return ToolError::bad_args(format!(
            "{what} is empty (0 bytes); pass a {SUPPORTED} image"
        ));
    }
    let head = &bytes[..bytes.len().min(512)];
    let lower = String::from_utf8_lossy(head).to_ascii_lowercase();
    let guess = if head.starts_with(b"%PDF") {
        Some("a PDF document")
    } else if lower.contains("<svg") {
        Some("an SVG (vector) image, which this tool cannot rasterize")
    } else if head.len() >= 12 && &head[4..8] == b"ftyp" {
        match &head[8..12] {
            b"heic" | b"heix" | b"mif1" | b"msf1" | b"hevc" => Some("a HEIC/HEIF image"),
            b"avif" | b"avis" => Some("an AVIF image"),
            _ => Some("an MP4/QuickTime container"),
        }
    } else if head.starts_with(b"PK\x03\x04") {
        Some("a ZIP archive (or an Office document)")
    } else if std::str::from_utf8(head).is_ok() {
        Some("text")
    } else {
        None
    };
    let magic: Vec<String> = bytes.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let looks = guess
        .map(|g| format!(", it looks like {g}"))
        .unwrap_or_default();
    ToolError::bad_args(format!(
        "{what} is not an image this tool recognises (it starts with bytes {}{looks}); it reads {SUPPORTED}",
        magic.join(" ")
    ))
}

/// Composites every pixel onto an opaque white background; images without alpha are returned
/// unchanged (8-bit). Greyscale stays greyscale (`L8`), colour becomes `Rgb8`.
pub(crate) fn flatten_on_white(image: &DynamicImage) -> DynamicImage {
    fn blend(c: u8, a: u8) -> u8 {
        let (c, a) = (u32::from(c), u32::from(a));
        ((c * a + 255 * (255 - a) + 127) / 255) as u8
    }
    let grey = matches!(
        image.color(),
        ColorType::L8 | ColorType::La8 | ColorType::L16 | ColorType::La16
    );
    match (grey, image.has_alpha()) {
        (true, false) => DynamicImage::ImageLuma8(image.to_luma8()),
        (false, false) => DynamicImage::ImageRgb8(image.to_rgb8()),
        (true, true) => {
            let la = image.to_luma_alpha8();
            let (w, h) = la.dimensions();
            let data = la.pixels().map(|p| blend(p[0], p[1])).collect();
            DynamicImage::ImageLuma8(image::GrayImage::from_raw(w, h, data).expect("w*h pixels"))
        }
        (false, true) => {
            let rgba = image.to_rgba8();
            let (w, h) = rgba.dimensions();
            let mut data = Vec::with_capacity(w as usize * h as usize * 3);
            for p in rgba.pixels() {
                data.extend([blend(p[0], p[3]), blend(p[1], p[3]), blend(p[2], p[3])]);
            }
            DynamicImage::ImageRgb8(image::RgbImage::from_raw(w, h, data).expect("w*h pixels"))
        }
    }
}

/// Whether an image has more than 8 bits per channel.
fn is_deep(image: &DynamicImage) -> bool {
    image.color().bytes_per_pixel() > image.color().channel_count()
}

/// Encodes `image` as `format`, appending what changed on the way to `notes`.
///
/// `quality` applies to JPEG only; for other formats it is ignored with a note.
///
/// # Errors
/// A failed error if the encoder fails (not expected for images within the limits).
pub(crate) fn encode(
    image: &DynamicImage,
    format: Format,
    quality: Option<u8>,
    notes: &mut Vec<String>,
) -> Result<Vec<u8>, ToolError> {
    if let Some(q) = quality
        && format != Format::Jpeg
    {
        notes.push(match format {
            Format::Webp => format!(
                "quality {q} was ignored: WebP output is always lossless here; ask for jpeg for a smaller lossy file"
            ),
            other => format!(
                "quality {q} was ignored: it applies to JPEG only, and {} is lossless",
                other.name()
            ),
        });
    }
    if is_deep(image) && !matches!(format, Format::Png | Format::Tiff) {
        notes.push(format!(
            "the image had 16-bit (or floating-point) channels; {} stores 8 bits per channel",
            format.name()
        ));
    }
    let mut out = Cursor::new(Vec::new());
    let result = match format {
        Format::Jpeg => {
            if image.has_alpha() {
                notes.push(
                    "JPEG has no transparency: transparent areas were composited onto a white background".to_owned(),
                );
            }
            let flat = flatten_on_white(image);
            let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(
                &mut out,
                quality.unwrap_or(DEFAULT_QUALITY),
            );
            flat.write_with_encoder(encoder)
        }
        Format::Gif => {
            notes.push("GIF stores at most 256 colours: the image was reduced to a 256-colour palette (fully transparent pixels stay transparent)".to_owned());
            let rgba = DynamicImage::ImageRgba8(image.to_rgba8());
            let encoder = image::codecs::gif::GifEncoder::new_with_speed(&mut out, GIF_SPEED);
            rgba.write_with_encoder(encoder)
        }
        Format::Png | Format::Tiff
            if matches!(image.color(), ColorType::Rgb32F | ColorType::Rgba32F) =>
        {
            let deep = if image.has_alpha() {
                DynamicImage::ImageRgba16(image.to_rgba16())
            } else {
                DynamicImage::ImageRgb16(image.to_rgb16())
            };
            deep.write_to(&mut out, format.to_image())
        }
        other => image.write_to(&mut out, other.to_image()),
    };
    result.map_err(|e| {
        ToolError::failed(format!(
            "cannot encode the image as {}: {}",
            format.name(),
            crate::abi::one_line(&e.to_string())
        ))
    })?;
    Ok(out.into_inner())
}

/// Encodes `image`, writes it as `<stem>.<ext>` and builds the result.
pub(crate) fn write_result(
    image: &DynamicImage,
    format: Format,
    quality: Option<u8>,
    stem: &str,
    source: SourceInfo,
    mut notes: Vec<String>,
    out: &OutDir,
) -> Result<Output, ToolError> {
    let bytes = encode(image, format, quality, &mut notes)?;
    let OutputFile { file, bytes } =
        out.write(&format!("{stem}.{}", format.extension()), &bytes)?;
    Ok(Output {
        file,
        bytes,
        width: image.width(),
        height: image.height(),
        format: format.name(),
        lossless: format.lossless(),
        source,
        notes,
    })
}

/// Checks a JPEG quality argument.
pub(crate) fn check_quality(quality: Option<u32>) -> Result<Option<u8>, ToolError> {
    match quality {
        None => Ok(None),
        Some(q @ 1..=100) => Ok(Some(q as u8)),
        Some(q) => Err(ToolError::bad_args(format!(
            "quality must be between 1 and 100, got {q}; 85 is a good default, 60-75 for smaller files"
        ))),
    }
}
