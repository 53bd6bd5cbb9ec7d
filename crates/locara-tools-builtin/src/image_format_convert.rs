//! `image.format-convert`: re-encodes an image in another format and writes `converted.<ext>`.
//!
//! The pixels are kept as they are, except where the target format cannot hold them (see
//! [`crate::image_io`]): JPEG flattens transparency onto white, GIF quantizes to 256 colours,
//! JPEG/WebP/GIF/BMP store 8 bits per channel. WebP is always written lossless, so `quality`
//! (JPEG only) is ignored for it, with a note in the result rather than an error.

use std::path::Path;

use locara_pdk::{JsonSchema, tool};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::abi::{self, ToolError};
use crate::blob::{Blob, OutDir};
use crate::image_io::{self, Format, SourceInfo};

#[cfg(test)]
mod tests;

/// `image.format-convert`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The image to convert: PNG, JPEG, WebP, GIF, BMP or TIFF.
    source: Blob,
    /// The target format: png (lossless, keeps transparency and 16-bit), jpeg (lossy, small for photos, no transparency: flattened onto white), webp (lossless only here, keeps transparency), gif (256 colours), bmp (uncompressed), tiff (lossless, keeps 16-bit).
    format: Format,
    /// JPEG quality, 1-100 (default 85; 60-75 gives smaller files, 90+ near-lossless). Applies to JPEG output only: for any other format it is ignored and a note says so (WebP is always written lossless).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u32", range(min = 1, max = 100))]
    quality: Option<u32>,
}

/// `image.format-convert`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(transparent)]
#[schemars(transform = converted_file)]
pub struct Output(image_io::Output);

/// The output file's name before its extension; the schema and the file written agree on it.
const STEM: &str = "converted";

fn converted_file(schema: &mut schemars::Schema) {
    image_io::name_output_file(schema, STEM);
}

/// Converts an image to another format (png, jpeg, webp, gif, bmp or tiff) without changing its
/// size, and writes it as the file converted.<ext> (returned to the caller). Reads PNG, JPEG, WebP,
/// GIF, BMP and TIFF (detected from the content; only the first frame of an animated GIF/WebP); at
/// most 64 MiB, 30000 pixels per side and 192 MiB of decoded pixels (about 50 megapixels of RGBA),
/// so a decompression bomb is refused. What the target format cannot hold is adapted and reported
/// in notes: JPEG has no transparency, so transparent areas are composited onto a white background;
/// WebP is always written lossless (the encoder has no lossy mode), so quality is ignored for it
/// and the file may be larger than a lossy WebP would be, ask for jpeg for a small lossy file; GIF
/// is reduced to a 256-colour palette; JPEG, WebP, GIF and BMP store 8 bits per channel (16-bit
/// PNG/TIFF are reduced). quality applies to JPEG only. To also change the size, use image.resize
/// with its format argument instead.
#[tool(id = "image.format-convert")]
pub fn image_format_convert(args: Args) -> Result<Output, ToolError> {
    convert(args, &abi::tool_root(), &OutDir::guest()).map(Output)
}

/// Runs `image.format-convert`.
///
/// # Errors
/// Bad arguments, an input that is not a supported image, or an encoder failure.
pub fn run(input: Value, root: &Path, out: &OutDir) -> Result<Value, ToolError> {
    abi::to_output(&convert(abi::parse_args(input)?, root, out)?)
}

fn convert(args: Args, root: &Path, out: &OutDir) -> Result<image_io::Output, ToolError> {
    let quality = image_io::check_quality(args.quality)?;
    let decoded = image_io::read_and_decode(&args.source, root)?;
    let mut notes = Vec::new();
    if decoded.format == args.format {
        notes.push(format!(
            "the source is already {}; it was re-encoded anyway",
            args.format.name()
        ));
    }
    let source = SourceInfo {
        width: decoded.image.width(),
        height: decoded.image.height(),
        format: decoded.format.name(),
    };
    image_io::write_result(
        &decoded.image,
        args.format,
        quality,
        STEM,
        source,
        notes,
        out,
    )
}
