//! `image.resize`: crops and/or resizes an image and writes `resized.<ext>`.
//!
//! Order: the optional `crop` rectangle is cut out of the source first, then the result is
//! fitted to the `width` x `height` box:
//! - `fit` (default): the largest size inside the box with the same aspect ratio (a missing
//!   `width` or `height` leaves that side unbounded); it may upscale.
//! - `fill`: covers the box with the aspect ratio kept, cropping the overflow evenly from both
//!   sides (done by cropping the source to the box's aspect ratio, then resizing).
//! - `exact`: exactly `width` x `height`, stretching if the aspect ratio differs.
//!
//! Resampling uses `image`'s separable filters (default Lanczos3, the sharpest of them and the
//! usual choice for photographs and downscaling), computed for 8-bit images by [`resample`] to
//! the same bits in a cache-friendly order; colours with partial transparency are
//! resampled premultiplied by alpha, so transparent pixels do not bleed dark fringes.
//! The output is bounded by [`MAX_OUTPUT_SIDE`], [`MAX_OUTPUT_PIXELS`] and the resampler's
//! working memory [`MAX_WORK_BYTES`].

use std::path::Path;

use image::{DynamicImage, imageops::FilterType};
use locara_pdk::{JsonSchema, tool};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::abi::{self, ToolError};
use crate::blob::{Blob, OutDir};
use crate::image_io::{self, Format, SourceInfo};

mod resample;
#[cfg(test)]
mod tests;

/// The largest output width or height.
pub(crate) const MAX_OUTPUT_SIDE: u32 = 16_384;
/// The most output pixels.
pub(crate) const MAX_OUTPUT_PIXELS: u64 = 64_000_000;
/// The most memory the resampler may need: its `f32` RGBA intermediate (source width x output
/// height x 16 bytes) plus the output buffer.
pub(crate) const MAX_WORK_BYTES: u64 = 384 * 1024 * 1024;

/// `image.resize`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The image to resize: PNG, JPEG, WebP, GIF, BMP or TIFF.
    source: Blob,
    /// The target width in pixels (the box's width). With mode fit it may be given alone (the height follows the aspect ratio); fill and exact need both width and height.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u32", range(min = 1, max = MAX_OUTPUT_SIDE))]
    width: Option<u32>,
    /// The target height in pixels (the box's height). With mode fit it may be given alone (the width follows the aspect ratio); fill and exact need both width and height.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u32", range(min = 1, max = MAX_OUTPUT_SIDE))]
    height: Option<u32>,
    /// How to fit the image to width x height: fit (default) = as large as possible inside the box, aspect ratio kept, so one side may be smaller than asked; fill = cover the box exactly, aspect ratio kept, cropping the excess centred; exact = exactly width x height, stretching if the aspect ratio differs.
    #[serde(default)]
    mode: Mode,
    /// A rectangle of the source to keep, applied before resizing, in source pixels from the top-left corner (0, 0); it must lie inside the image. With neither width nor height, the crop is output at its own size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Rect")]
    crop: Option<Rect>,
    /// The resampling filter: lanczos3 (default; sharpest, best for photos and downscaling), catmull_rom (nearly as sharp, faster), triangle (bilinear, softer), gaussian (soft, blurs slightly), nearest (blocky; keeps hard pixel edges, for pixel art or masks).
    #[serde(default)]
    filter: Filter,
    /// The output format; default: the source's format. jpeg has no transparency (flattened onto white); webp is written lossless; gif is reduced to 256 colours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Format")]
    format: Option<Format>,
    /// JPEG quality, 1-100 (default 85; 60-75 gives smaller files, 90+ near-lossless). Applies to JPEG output only: for any other format it is ignored and a note says so (WebP is always written lossless).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u32", range(min = 1, max = 100))]
    quality: Option<u32>,
}

/// How the image is fitted to the box.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Mode {
    #[default]
    Fit,
    Fill,
    Exact,
}

/// The resampling filter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Filter {
    Nearest,
    Triangle,
    CatmullRom,
    Gaussian,
    #[default]
    Lanczos3,
}

impl Filter {
    fn to_image(self) -> FilterType {
        match self {
            Filter::Nearest => FilterType::Nearest,
            Filter::Triangle => FilterType::Triangle,
            Filter::CatmullRom => FilterType::CatmullRom,
            Filter::Gaussian => FilterType::Gaussian,
            Filter::Lanczos3 => FilterType::Lanczos3,
        }
    }
}

/// A rectangle in source pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Rect {
    /// The rectangle's left edge, in pixels from the left of the source.
    pub(crate) x: u32,
    /// The rectangle's top edge, in pixels from the top of the source.
    pub(crate) y: u32,
    /// The rectangle's width in pixels; x + width must not exceed the source's width.
    #[schemars(range(min = 1))]
    pub(crate) width: u32,
    /// The rectangle's height in pixels; y + height must not exceed the source's height.
    #[schemars(range(min = 1))]
    pub(crate) height: u32,
}

/// What to do to the source: cut out `region`, then resample it to `size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    pub(crate) region: Rect,
    pub(crate) size: (u32, u32),
}

/// `image.resize`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(transparent)]
#[schemars(transform = resized_file)]
pub struct Output(image_io::Output);

/// The output file's name before its extension; the schema and the file written agree on it.
const STEM: &str = "resized";

fn resized_file(schema: &mut schemars::Schema) {
    image_io::name_output_file(schema, STEM);
}

/// Resizes and/or crops an image and writes the result as the file resized.<ext> (returned to the
/// caller). Reads PNG, JPEG, WebP, GIF, BMP and TIFF (detected from the content; only the first
/// frame of an animated GIF/WebP); at most 64 MiB, 30000 pixels per side and 192 MiB of decoded
/// pixels (about 50 megapixels of RGBA), so a decompression bomb is refused. The optional crop
/// rectangle is cut out first; then width/height define a box: mode fit (default) scales to the
/// largest size inside the box keeping the aspect ratio (give only width or only height to scale by
/// that side), fill covers the whole box keeping the aspect ratio and crops the overflow evenly
/// from both sides (e.g. square thumbnails), exact stretches to exactly width x height. Upscaling
/// is allowed up to 16384 pixels per side and 64 megapixels. Resampling uses the chosen filter
/// (default lanczos3); transparency is kept for formats that have it. The output format defaults to
/// the source's; JPEG output composites transparency onto white. The result gives the output's size
/// and format, the source's, and notes on anything changed beyond the request.
#[tool(id = "image.resize")]
pub fn image_resize(args: Args) -> Result<Output, ToolError> {
    resize(args, &abi::tool_root(), &OutDir::guest()).map(Output)
}

/// Runs `image.resize`.
///
/// # Errors
/// Bad arguments (no size, a crop outside the image, an output too large), an input that is
/// not a supported image, or an encoder failure.
pub fn run(input: Value, root: &Path, out: &OutDir) -> Result<Value, ToolError> {
    abi::to_output(&resize(abi::parse_args(input)?, root, out)?)
}

fn resize(args: Args, root: &Path, out: &OutDir) -> Result<image_io::Output, ToolError> {
    let quality = image_io::check_quality(args.quality)?;
    let decoded = image_io::read_and_decode(&args.source, root)?;
    let (sw, sh) = (decoded.image.width(), decoded.image.height());
    let plan = plan((sw, sh), args.crop, args.width, args.height, args.mode)?;
    check_work(&decoded.image, &plan)?;

    let mut image = decoded.image;
    if (
        plan.region.x,
        plan.region.y,
        plan.region.width,
        plan.region.height,
    ) != (0, 0, sw, sh)
    {
        let r = plan.region;
        image = image.crop_imm(r.x, r.y, r.width, r.height);
    }
    let image = resample(image, plan.size, args.filter.to_image());

    let format = args.format.unwrap_or(decoded.format);
    let source = SourceInfo {
        width: sw,
        height: sh,
        format: decoded.format.name(),
    };
    image_io::write_result(&image, format, quality, STEM, source, Vec::new(), out)
}

/// Works out the region to cut and the output size.
///
/// # Errors
/// A bad-arguments error for a missing size, a crop outside the source, or an output larger
/// than the limits.
pub(crate) fn plan(
    source: (u32, u32),
    crop: Option<Rect>,
    width: Option<u32>,
    height: Option<u32>,
    mode: Mode,
) -> Result<Plan, ToolError> {
    let region = match crop {
        Some(c) => check_crop(c, source)?,
        None => Rect {
            x: 0,
            y: 0,
            width: source.0,
            height: source.1,
        },
    };
    for (name, value) in [("width", width), ("height", height)] {
        if let Some(v) = value
            && !(1..=MAX_OUTPUT_SIDE).contains(&v)
        {
            return Err(ToolError::bad_args(format!(
                "{name} must be between 1 and {MAX_OUTPUT_SIDE} pixels, got {v}"
            )));
        }
    }
    let (rw, rh) = (u64::from(region.width), u64::from(region.height));
    // `a * b / c`, rounded, at least 1.
    let scale = |a: u64, b: u64, c: u64| -> u64 { ((a * b + c / 2) / c).max(1) };
    let (plan_region, size): (Rect, (u64, u64)) = match (mode, width, height) {
        (_, None, None) if crop.is_some() => (region, (rw, rh)),
        (_, None, None) => {
            return Err(ToolError::bad_args(
                "give width and/or height (the target size in pixels), or a crop rectangle",
            ));
        }
        (Mode::Fit, Some(w), None) => (region, (u64::from(w), scale(rh, u64::from(w), rw))),
        (Mode::Fit, None, Some(h)) => (region, (scale(rw, u64::from(h), rh), u64::from(h))),
        (Mode::Fit, Some(w), Some(h)) => {
            let (w, h) = (u64::from(w), u64::from(h));
            if w * rh <= h * rw {
                (region, (w, scale(rh, w, rw).min(h)))
            } else {
                (region, (scale(rw, h, rh).min(w), h))
            }
        }
        (Mode::Exact, Some(w), Some(h)) => (region, (u64::from(w), u64::from(h))),
        (Mode::Fill, Some(w), Some(h)) => {
            let (w, h) = (u64::from(w), u64::from(h));
            // Cut the region down to the box's aspect ratio, centred.
            let cut = if rw * h > w * rh {
                let cw = scale(rh, w, h).min(rw);
                Rect {
                    x: region.x + ((rw - cw) / 2) as u32,
                    y: region.y,
                    width: cw as u32,
                    height: region.height,
                }
            } else {
                let ch = scale(rw, h, w).min(rh);
                Rect {
                    x: region.x,
                    y: region.y + ((rh - ch) / 2) as u32,
                    width: region.width,
                    height: ch as u32,
                }
            };
            (cut, (w, h))
        }
        (mode @ (Mode::Fill | Mode::Exact), _, _) => {
            let name = if mode == Mode::Fill { "fill" } else { "exact" };
            return Err(ToolError::bad_args(format!(
                "mode \"{name}\" needs both width and height; give both, or use mode \"fit\" to scale by one side keeping the aspect ratio"
            )));
        }
    };
    let (ow, oh) = size;
    if ow > u64::from(MAX_OUTPUT_SIDE)
        || oh > u64::from(MAX_OUTPUT_SIDE)
        || ow * oh > MAX_OUTPUT_PIXELS
    {
        return Err(ToolError::bad_args(format!(
            "the output would be {ow}x{oh} pixels, more than this tool produces (at most {MAX_OUTPUT_SIDE} pixels per side and {} megapixels); ask for a smaller width or height",
            MAX_OUTPUT_PIXELS / 1_000_000
        )));
    }
    Ok(Plan {
        region: plan_region,
        size: (ow as u32, oh as u32),
    })
}

fn check_crop(crop: Rect, (sw, sh): (u32, u32)) -> Result<Rect, ToolError> {
    let Rect {
        x,
        y,
        width,
        height,
    } = crop;
    if width == 0 || height == 0 {
        return Err(ToolError::bad_args(format!(
            "crop.width and crop.height must be at least 1, got {width}x{height}"
        )));
    }
    let right = u64::from(x) + u64::from(width);
    let bottom = u64::from(y) + u64::from(height);
    if right > u64::from(sw) || bottom > u64::from(sh) {
        let side = if right > u64::from(sw) {
            format!("crop.x + crop.width = {right} exceeds the image width {sw}")
        } else {
            format!("crop.y + crop.height = {bottom} exceeds the image height {sh}")
        };
        return Err(ToolError::bad_args(format!(
            "the crop rectangle does not fit in the {sw}x{sh} image: {side}; x and y count from the top-left corner (0, 0)"
        )));
    }
    Ok(crop)
}

/// Refuses a resize whose resampler buffers would exceed [`MAX_WORK_BYTES`].
fn check_work(image: &DynamicImage, plan: &Plan) -> Result<(), ToolError> {
    let (ow, oh) = (u64::from(plan.size.0), u64::from(plan.size.1));
    let intermediate = u64::from(plan.region.width) * oh * 16;
    let output = ow * oh * u64::from(image.color().bytes_per_pixel());
    let work = intermediate + output;
    if work > MAX_WORK_BYTES {
        return Err(ToolError::bad_args(format!(
            "resizing to {ow}x{oh} needs about {} MiB of working memory, more than the {} MiB this tool may use; ask for a smaller output, or crop the source first",
            work >> 20,
            MAX_WORK_BYTES >> 20
        )));
    }
    Ok(())
}

/// Resamples to `size`, premultiplying partially transparent images by alpha around it.
fn resample(image: DynamicImage, size: (u32, u32), filter: FilterType) -> DynamicImage {
    if (image.width(), image.height()) == size {
        return image;
    }
    let mut image = image;
    let premultiplied = premultiply(&mut image, true);
    let mut out = resample::resize_exact(&image, size.0, size.1, filter);
    drop(image);
    if premultiplied {
        premultiply(&mut out, false);
    }
    out
}

/// Multiplies (or, with `forward` false, divides) the colour channels by alpha in place.
/// Returns whether anything was done: not for opaque images or types without alpha.
fn premultiply(image: &mut DynamicImage, forward: bool) -> bool {
    fn run<T: Copy + Into<u32> + TryFrom<u32>>(
        data: &mut [T],
        channels: usize,
        max: u32,
        forward: bool,
    ) -> bool {
        if forward
            && data
                .chunks_exact(channels)
                .all(|p| p[channels - 1].into() == max)
        {
            return false;
        }
        for p in data.chunks_exact_mut(channels) {
            let a = p[channels - 1].into();
            for c in &mut p[..channels - 1] {
                let v: u32 = (*c).into();
                let v = if forward {
                    (v * a + max / 2) / max
                } else {
                    // Fully transparent pixels have no colour left; they stay 0.
                    (v * max + a / 2).checked_div(a).unwrap_or(0).min(max)
                };
                *c = T::try_from(v).unwrap_or(*c);
            }
        }
        true
    }
    match image {
        DynamicImage::ImageRgba8(b) => run(b, 4, 0xff, forward),
        DynamicImage::ImageLumaA8(b) => run(b, 2, 0xff, forward),
        DynamicImage::ImageRgba16(b) => run(b, 4, 0xffff, forward),
        DynamicImage::ImageLumaA16(b) => run(b, 2, 0xffff, forward),
        _ => false,
    }
}
