//! `image.format-convert`: re-encodes an image in another format and writes `converted.<ext>`.
//!
//! The pixels are kept as they are, except where the target format cannot hold them (see
//! [`crate::image_io`]): JPEG flattens transparency onto white, GIF quantizes to 256 colours,
//! JPEG/WebP/GIF/BMP store 8 bits per channel. WebP is always written lossless, so `quality`
//! (JPEG only) is ignored for it, with a note in the result rather than an error.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::abi::{self, ToolError};
use crate::blob::{Blob, OutDir};
use crate::image_io::{self, Format, SourceInfo};

#[cfg(test)]
mod tests;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    source: Blob,
    format: Format,
    #[serde(default)]
    quality: Option<u32>,
}

/// Runs `image.format-convert`.
///
/// # Errors
/// Bad arguments, an input that is not a supported image, or an encoder failure.
pub fn run(input: Value, root: &Path, out: &OutDir) -> Result<Value, ToolError> {
    let args: Args = abi::parse_args(input)?;
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
    abi::to_output(&image_io::write_result(
        &decoded.image,
        args.format,
        quality,
        "converted",
        source,
        notes,
        out,
    )?)
}
