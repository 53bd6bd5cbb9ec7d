//! `ocr`: reads the text in a PNG or JPEG image with the PP-OCRv4 models, run by rten.
//!
//! The pipeline is PaddleOCR's: the detection model (DB) marks text pixels, connected
//! regions become (possibly rotated) boxes ([`detect`]), each box is cut out, scaled to the
//! recognition model's height of 48 and read with greedy CTC decoding ([`recognize`]). Boxes
//! are put in reading order: lines top to bottom, boxes within a line left to right.
//!
//! The models are not embedded: the host maps them into the guest, read-only, as
//! `<models>/det.onnx` and `<models>/rec.onnx` (`/models` in the guest). The recognition
//! model carries its character dictionary in its ONNX metadata (`character`).
//!
//! Where the app grants `models.run`, the host runs both models natively
//! ([`locara_pdk::models`]) and the tool does the rest: decoding, cropping, boxes, decoding the
//! characters. Otherwise the tool loads them and runs them itself, several times slower.

mod detect;
mod recognize;

use std::io::Cursor;
use std::path::Path;

use image::RgbImage;
use rten::Model;
use rten_tensor::prelude::*;
use rten_tensor::{NdTensor, NdTensorView};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use locara_pdk::{JsonSchema, models, progress, tool};

use crate::abi::{self, ToolError};
use crate::blob::Blob;

pub(crate) use detect::{DetParams, Quad};
pub(crate) use recognize::Charset;

#[cfg(test)]
mod tests;

/// How many text lines are recognized at once: in one `models.run` request (enough for every
/// core of the host to take a few; 16 lines are at most 44 MB of input, 4,800 columns wide,
/// and about 12 MB on a dense page), or natively across rten's pool.
const LINES_AT_ONCE: usize = 16;

/// The detection model's file name in the models directory.
pub(crate) const DET_MODEL: &str = "det.onnx";
/// The recognition model's file name in the models directory.
pub(crate) const REC_MODEL: &str = "rec.onnx";

/// The largest input file accepted.
const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;
/// The largest image side accepted.
const MAX_IMAGE_SIDE: u32 = 20_000;
/// The most memory image decoding may allocate.
const MAX_DECODE_BYTES: u64 = 512 * 1024 * 1024;

/// `ocr`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The image to read: a PNG or JPEG file (photo, screenshot, scan or rendered page). PDFs are not accepted: extract a PDF's text with a PDF tool, or render its pages to PNG first.
    source: Blob,
    /// The script to expect. "auto" (default) reads Latin script and Chinese. "en" reads Latin script only (English and other Latin-alphabet languages): the reader never outputs Chinese characters or full-width punctuation, which avoids look-alike substitutions on Latin text.
    #[serde(default)]
    language: Language,
    /// The longest side, in pixels, the image is scaled down to for finding text (a multiple of 32, at most 2560). Default 960 suits pages and screenshots; raise it (e.g. 1600 or 2048) for small print on a large, high-resolution scan, at the cost of time and memory (about 480 MB at 2048). Images smaller than this are not enlarged.
    #[serde(default = "default_max_side")]
    #[schemars(range(min = 320, max = 2560), extend("multipleOf" = 32))]
    max_side: u32,
    /// Text boxes read with a confidence below this (0 to 1) are left out. Default 0.5; lower it to keep doubtful text, raise it (e.g. 0.8) to keep only clear text.
    #[serde(default = "default_min_confidence")]
    #[schemars(range(min = 0.0, max = 1.0))]
    min_confidence: f32,
}

// The variants have no doc comments, which would make the schema a `oneOf` of constants:
// `language`'s description says what each means. `Serialize` puts the default in the schema.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Language {
    // Latin and Chinese (everything the model knows).
    #[default]
    Auto,
    // Latin script only: the decoder never emits CJK characters or full-width punctuation.
    En,
}

fn default_max_side() -> u32 {
    960
}

fn default_min_confidence() -> f32 {
    0.5
}

/// The accepted range of `max_side`.
const MAX_SIDE_RANGE: std::ops::RangeInclusive<u32> = 320..=2560;

/// `ocr`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// All the text read, one line of the image per line (boxes on the same line joined by a space); empty when no text was found.
    text: String,
    /// The text boxes in reading order: top to bottom, then left to right.
    blocks: Vec<Block>,
    /// The mean confidence of the blocks; 0 when none was found.
    #[schemars(range(min = 0.0, max = 1.0))]
    confidence: f64,
    /// The image's width in pixels.
    #[schemars(range(min = 1))]
    width: u32,
    /// The image's height in pixels.
    #[schemars(range(min = 1))]
    height: u32,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Block {
    /// The text in this box.
    #[schemars(length(min = 1))]
    text: String,
    /// The box's axis-aligned bounds in pixels of the original image, origin at the top-left.
    #[serde(rename = "box")]
    bounds: BoxXywh,
    /// How sure the reader is of this box's text, 0 to 1 (mean per-character probability).
    #[schemars(range(min = 0.0, max = 1.0))]
    confidence: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BoxXywh {
    /// Left edge.
    x: u32,
    /// Top edge.
    y: u32,
    /// Width.
    #[schemars(range(min = 1))]
    width: u32,
    /// Height.
    #[schemars(range(min = 1))]
    height: u32,
}

/// Reads the printed or on-screen text in a PNG or JPEG image (scan, photo of a document,
/// screenshot, rendered page) and returns it as plain text plus one block per detected text
/// line with its bounding box in image pixels and a confidence. Runs PaddleOCR's PP-OCRv4
/// detection and recognition models locally. It reads Latin script (English and other
/// Latin-alphabet languages, digits, punctuation) and Chinese; handwriting, stylized fonts and
/// text smaller than about 8 pixels high are read poorly. Lines are returned top to bottom, and
/// text boxes on the same line left to right joined by a space; columns and tables are not
/// reconstructed. Text rotated by more than about 45 degrees or upside down is not supported.
/// PDFs are out of scope: use a PDF text-extraction tool, or render pages to PNG first. Time
/// grows with the amount of text: a few lines take under a second, a dense page of 45 lines
/// about 5 seconds where the app grants `models.run` (the host then runs the models natively),
/// and about 20 seconds where it does not.
#[tool(id = "ocr")]
pub fn ocr(args: Args) -> Result<Output, ToolError> {
    read(args, &abi::tool_root(), Path::new("/models"))
}

/// Runs `ocr`; `root` is the workspace, `models` the directory holding the model files.
///
/// # Errors
/// Bad arguments (a missing or undecodable image, out-of-range options), missing or broken
/// model files, or a model that fails to run.
pub fn run(input: Value, root: &Path, models: &Path) -> Result<Value, ToolError> {
    abi::to_output(&read(abi::parse_args(input)?, root, models)?)
}

fn read(args: Args, root: &Path, models: &Path) -> Result<Output, ToolError> {
    if !MAX_SIDE_RANGE.contains(&args.max_side) || !args.max_side.is_multiple_of(detect::DET_ALIGN)
    {
        return Err(ToolError::bad_args(format!(
            "max_side must be a multiple of 32 between {} and {}, got {}; the default 960 suits most pages, use more (e.g. 1600) for small print on a large scan",
            MAX_SIDE_RANGE.start(),
            MAX_SIDE_RANGE.end(),
            args.max_side
        )));
    }
    if !(0.0..=1.0).contains(&args.min_confidence) {
        return Err(ToolError::bad_args(format!(
            "min_confidence must be between 0 and 1, got {}",
            args.min_confidence
        )));
    }
    let bytes = args.source.read(root, MAX_INPUT_BYTES)?;
    let img = decode_image(&bytes, &args.source)?;
    let engine = Engine::load(models)?;
    engine.read(&img, &args)
}

fn decode_image(bytes: &[u8], source: &Blob) -> Result<RgbImage, ToolError> {
    if bytes.starts_with(b"%PDF") {
        return Err(ToolError::bad_args(format!(
            "source {} is a PDF; this tool reads PNG and JPEG images only: extract the PDF's text with a PDF tool, or render its pages to PNG first",
            source.describe()
        )));
    }
    let mut reader = image::ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| ToolError::failed(format!("cannot read {}: {e}", source.describe())))?;
    if reader.format().is_none() {
        return Err(ToolError::bad_args(format!(
            "source {} is not a PNG or JPEG image",
            source.describe()
        )));
    }
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_IMAGE_SIDE);
    limits.max_image_height = Some(MAX_IMAGE_SIDE);
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    reader.limits(limits);
    let img = reader.decode().map_err(|e| {
        ToolError::bad_args(format!(
            "cannot decode {} as a PNG or JPEG image: {e}; images up to {MAX_IMAGE_SIDE} pixels per side are accepted",
            source.describe()
        ))
    })?;
    if img.width() == 0 || img.height() == 0 {
        return Err(ToolError::bad_args(format!(
            "source {} is an empty image",
            source.describe()
        )));
    }
    Ok(img.to_rgb8())
}

/// Who runs the models: the host, or this tool with the models it loaded.
enum Runner {
    Host,
    Local { det: Box<Model>, rec: Box<Model> },
}

/// The models and the recognition dictionary.
struct Engine {
    runner: Runner,
    charset: Charset,
}

impl Engine {
    fn load(models: &Path) -> Result<Engine, ToolError> {
        let no_dictionary = || {
            ToolError::failed(format!(
                "the recognition model {} has no `character` dictionary in its metadata; it is not the expected PP-OCR model: run `locara models fetch ocr`",
                models.join(REC_MODEL).display()
            ))
        };
        match models::metadata(REC_MODEL, &["character"]) {
            Ok(found) => {
                let dict = found.get("character").ok_or_else(no_dictionary)?;
                let charset = Charset::from_dictionary(dict);
                return Ok(Engine {
                    runner: Runner::Host,
                    charset,
                });
            }
            Err(error) if models::refused(&error) => {}
            Err(error) => return Err(error),
        }
        let det = load_model(models, DET_MODEL)?;
        let rec = load_model(models, REC_MODEL)?;
        let dict = rec.metadata().get("character").ok_or_else(no_dictionary)?;
        let charset = Charset::from_dictionary(dict);
        Ok(Engine {
            runner: Runner::Local {
                det: Box::new(det),
                rec: Box::new(rec),
            },
            charset,
        })
    }

    /// Runs model `name` (one input, one output) where [`Runner`] says.
    fn infer<const M: usize>(
        &self,
        name: &str,
        input: NdTensorView<'_, f32, 4>,
    ) -> Result<NdTensor<f32, M>, ToolError> {
        let unexpected = |e: &dyn std::fmt::Display| unexpected_output(name, e);
        match &self.runner {
            Runner::Local { det, rec } => {
                let model = if name == DET_MODEL { det } else { rec };
                let output = model
                    .run_one(input.into(), None)
                    .map_err(|e| model_error(name, &e))?;
                output.try_into().map_err(|e| unexpected(&e))
            }
            Runner::Host => {
                let data = input.to_vec();
                let mut outputs = models::run(name, &[(&input.shape(), &data)])?;
                if outputs.len() != 1 {
                    return Err(unexpected(&format_args!("{} outputs", outputs.len())));
                }
                let output = outputs.remove(0);
                let shape: [usize; M] = output
                    .shape
                    .as_slice()
                    .try_into()
                    .map_err(|_| unexpected(&format_args!("shape {:?}", output.shape)))?;
                NdTensor::try_from_data(shape, output.data).map_err(|e| unexpected(&e))
            }
        }
    }

    fn read(&self, img: &RgbImage, args: &Args) -> Result<Output, ToolError> {
        let (width, height) = img.dimensions();
        let detecting = progress::Task::start("Finding text", None);
        let quads = self.detect(img, args.max_side)?;
        detecting.done(Some(&format!("{} text boxes", quads.len())));
        let allowed = (args.language == Language::En).then(|| self.charset.latin_mask());

        let reading = progress::Task::start("Reading lines", Some(quads.len() as u64));
        let mut found: Vec<(Quad, String, f32)> = Vec::new();
        for group in quads.chunks(LINES_AT_ONCE) {
            let crops: Vec<RgbImage> = group
                .iter()
                .map(|quad| recognize::crop_quad(img, quad.pts))
                .collect();
            let read = self.recognize_each(&crops, allowed.as_deref())?;
            reading.advance(group.len() as u64, None);
            for (&quad, (text, confidence)) in group.iter().zip(read) {
                let text = text.trim().to_owned();
                if text.is_empty() || confidence < args.min_confidence {
                    continue;
                }
                found.push((quad, text, confidence));
            }
        }
        reading.done(Some(&format!("{} lines read", found.len())));
        Ok(assemble(&found, width, height))
    }

    /// Text regions in source-image pixels.
    fn detect(&self, img: &RgbImage, max_side: u32) -> Result<Vec<Quad>, ToolError> {
        let input = detect::prepare(img, max_side);
        let prob: NdTensor<f32, 4> = self.infer(DET_MODEL, input.tensor.view())?;
        let map: NdTensorView<'_, f32, 2> = prob.slice((0, 0));
        let (w, h) = (img.width() as f32, img.height() as f32);
        Ok(detect::boxes_from_prob_map(map, &DetParams::default())
            .into_iter()
            .map(|q| {
                q.map(|p| {
                    let [x, y] = input.to_source(p);
                    [x.clamp(0.0, w), y.clamp(0.0, h)]
                })
            })
            .filter(|q| {
                let (l, t, r, b) = q.bounds();
                r - l >= 2.0 && b - t >= 2.0
            })
            .collect())
    }

    /// Each line's text and confidence. Where the host runs the models, it runs the lines'
    /// recognitions at once and answers only each step's best class (an arg-max), not a score
    /// for each of the 6,625 classes; natively the lines share rten's pool; in the sandbox
    /// they run one after another. Every way gives the same text.
    fn recognize_each(
        &self,
        crops: &[RgbImage],
        allowed: Option<&[bool]>,
    ) -> Result<Vec<(String, f32)>, ToolError> {
        let inputs: Vec<Line> = crops
            .iter()
            .map(|crop| {
                let input = recognize::prepare(crop);
                (input.shape(), input.into_data())
            })
            .collect();
        let best = match &self.runner {
            Runner::Host => self.best_on_host(&inputs, allowed)?,
            Runner::Local { .. } => each(&inputs, |input| self.best_here(input, allowed))?,
        };
        Ok(best
            .into_iter()
            .map(|steps| {
                let (kept, confidence) = recognize::ctc_collapse(steps);
                let text = kept
                    .into_iter()
                    .filter_map(|c| self.charset.text(c))
                    .collect();
                (text, confidence)
            })
            .collect())
    }

    /// Each step's best class for each of `inputs`, by the host's `models.run`.
    fn best_on_host(
        &self,
        inputs: &[Line],
        allowed: Option<&[bool]>,
    ) -> Result<Vec<Vec<(usize, f32)>>, ToolError> {
        let among: Option<Vec<usize>> =
            allowed.map(|mask| (0..mask.len()).filter(|&c| mask[c]).collect());
        let runs: Vec<[(&[usize], &[f32]); 1]> = inputs
            .iter()
            .map(|(shape, data)| [(&shape[..], &data[..])])
            .collect();
        let runs: Vec<&[(&[usize], &[f32])]> = runs.iter().map(|run| &run[..]).collect();
        let reduce = models::Reduce::ArgMax {
            among: among.as_deref(),
        };
        let unexpected = |e: &dyn std::fmt::Display| unexpected_output(REC_MODEL, e);
        models::run_each(REC_MODEL, &runs, reduce)?
            .into_iter()
            .map(|outputs| {
                let [output] = <[models::Tensor; 1]>::try_from(outputs)
                    .map_err(|o| unexpected(&format_args!("{} outputs", o.len())))?;
                if !matches!(output.shape[..], [1, _, 2]) {
                    return Err(unexpected(&format_args!("shape {:?}", output.shape)));
                }
                output
                    .data
                    .chunks_exact(2)
                    .map(|pair| {
                        // An index of the model's last axis, exact in an f32.
                        let class = pair[0] as usize;
                        if class >= self.charset.classes() {
                            return Err(self.wrong_classes(&format_args!("at least {}", class + 1)));
                        }
                        Ok((class, pair[1]))
                    })
                    .collect()
            })
            .collect()
    }

    /// Each step's best class for `input`, the model run where [`Runner`] says.
    fn best_here(
        &self,
        (shape, data): &Line,
        allowed: Option<&[bool]>,
    ) -> Result<Vec<(usize, f32)>, ToolError> {
        let input = NdTensorView::from_data(*shape, &data[..]);
        let probs: NdTensor<f32, 3> = self.infer(REC_MODEL, input)?;
        let [_, _, classes] = probs.shape();
        if classes != self.charset.classes() {
            return Err(self.wrong_classes(&classes));
        }
        Ok(match probs.data() {
            Some(data) => recognize::best_classes(data, classes, allowed),
            None => recognize::best_classes(&probs.to_vec(), classes, allowed),
        })
    }

    fn wrong_classes(&self, classes: &dyn std::fmt::Display) -> ToolError {
        ToolError::failed(format!(
            "the recognition model has {classes} classes but its dictionary implies {}; the model file is not the expected PP-OCR model: run `locara models fetch ocr`",
            self.charset.classes()
        ))
    }
}

/// A text line's recognition input: its shape (`[1, 3, 48, width]`) and its elements.
type Line = ([usize; 4], Vec<f32>);

/// `f` of each item: at once on rten's pool natively, one after another in the sandbox
/// (wasip1 has no threads).
fn each<T: Sync, R: Send>(
    items: &[T],
    f: impl Fn(&T) -> Result<R, ToolError> + Sync + Send,
) -> Result<Vec<R>, ToolError> {
    #[cfg(not(target_family = "wasm"))]
    {
        use rayon::prelude::*;
        rten::thread_pool().run(|| items.par_iter().map(f).collect())
    }
    #[cfg(target_family = "wasm")]
    {
        items.iter().map(f).collect()
    }
}

fn unexpected_output(name: &str, e: &dyn std::fmt::Display) -> ToolError {
    ToolError::failed(format!(
        "the OCR model {name} returned an unexpected output ({e}); run `locara models fetch ocr`"
    ))
}

/// Puts the recognized boxes in reading order and builds the result.
fn assemble(found: &[(Quad, String, f32)], width: u32, height: u32) -> Output {
    let bounds: Vec<_> = found.iter().map(|(q, _, _)| q.bounds()).collect();
    let lines = detect::reading_order(&bounds);
    let mut blocks = Vec::with_capacity(found.len());
    let mut text_lines = Vec::with_capacity(lines.len());
    for line in &lines {
        let mut parts = Vec::with_capacity(line.len());
        for &i in line {
            let (_, text, confidence) = &found[i];
            parts.push(text.as_str());
            blocks.push(Block {
                text: text.clone(),
                bounds: to_xywh(bounds[i], width, height),
                confidence: round4(*confidence),
            });
        }
        text_lines.push(parts.join(" "));
    }
    let confidence = if found.is_empty() {
        0.0
    } else {
        round4(found.iter().map(|(_, _, c)| *c).sum::<f32>() / found.len() as f32)
    };
    Output {
        text: text_lines.join("\n"),
        blocks,
        confidence,
        width,
        height,
    }
}

fn to_xywh((l, t, r, b): (f32, f32, f32, f32), width: u32, height: u32) -> BoxXywh {
    let x = (l.floor().max(0.0) as u32).min(width.saturating_sub(1));
    let y = (t.floor().max(0.0) as u32).min(height.saturating_sub(1));
    let right = (r.ceil().max(0.0) as u32).clamp(x + 1, width.max(x + 1));
    let bottom = (b.ceil().max(0.0) as u32).clamp(y + 1, height.max(y + 1));
    BoxXywh {
        x,
        y,
        width: right - x,
        height: bottom - y,
    }
}

fn round4(v: f32) -> f64 {
    (f64::from(v) * 10_000.0).round() / 10_000.0
}

fn load_model(models: &Path, name: &str) -> Result<Model, ToolError> {
    let path = models.join(name);
    if !path.is_file() {
        return Err(ToolError::failed(format!(
            "the OCR model file {} is missing; run `locara models fetch ocr` to download the models",
            path.display()
        )));
    }
    Model::load_file(&path).map_err(|e| {
        ToolError::failed(format!(
            "cannot load the OCR model {}: {e}; the file may be damaged: run `locara models fetch ocr` again",
            path.display()
        ))
    })
}

fn model_error(name: &str, err: &rten::RunError) -> ToolError {
    ToolError::failed(format!("the OCR model {name} failed to run: {err}"))
}
