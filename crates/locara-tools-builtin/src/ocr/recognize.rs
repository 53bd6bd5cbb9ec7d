//! Text recognition: cropping a detected region, the CRNN/SVTR model's input, and greedy CTC
//! decoding of its output.

use image::RgbImage;
use rten_tensor::NdTensor;

/// The recognition model's input height.
pub(crate) const REC_HEIGHT: u32 = 48;
/// The narrowest input: shorter crops are padded to this width (PaddleOCR's `rec_image_shape`).
pub(crate) const REC_MIN_WIDTH: u32 = 320;
/// The widest input; a longer line is squeezed horizontally to fit.
pub(crate) const REC_MAX_WIDTH: u32 = 4800;

/// Cuts the quadrilateral `pts` (top-left, top-right, bottom-right, bottom-left, in image
/// pixels) out of `img` as an upright rectangle, with bilinear sampling and the border
/// replicated. A region much taller than wide is taken as vertical text and turned 90°
/// counter-clockwise, as PaddleOCR does.
pub(crate) fn crop_quad(img: &RgbImage, pts: [[f32; 2]; 4]) -> RgbImage {
    let dist = |a: [f32; 2], b: [f32; 2]| ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt();
    let width = dist(pts[0], pts[1])
        .max(dist(pts[2], pts[3]))
        .round()
        .max(1.0) as u32;
    let height = dist(pts[0], pts[3])
        .max(dist(pts[1], pts[2]))
        .round()
        .max(1.0) as u32;
    let [p0, p1, _, p3] = pts;
    let ux = [
        (p1[0] - p0[0]) / width as f32,
        (p1[1] - p0[1]) / width as f32,
    ];
    let vy = [
        (p3[0] - p0[0]) / height as f32,
        (p3[1] - p0[1]) / height as f32,
    ];
    let mut out = RgbImage::new(width, height);
    for (u, v, px) in out.enumerate_pixels_mut() {
        let (fu, fv) = (u as f32 + 0.5, v as f32 + 0.5);
        let x = p0[0] + fu * ux[0] + fv * vy[0];
        let y = p0[1] + fu * ux[1] + fv * vy[1];
        *px = sample_bilinear(img, x, y);
    }
    if height as f32 >= 1.5 * width as f32 {
        image::imageops::rotate270(&out)
    } else {
        out
    }
}

/// The colour at continuous coordinates `(x, y)`, where pixel `(i, j)` covers
/// `[i, i+1) × [j, j+1)`; coordinates outside the image take the nearest edge pixel.
fn sample_bilinear(img: &RgbImage, x: f32, y: f32) -> image::Rgb<u8> {
    let (w, h) = img.dimensions();
    let fx = (x - 0.5).clamp(0.0, (w - 1) as f32);
    let fy = (y - 0.5).clamp(0.0, (h - 1) as f32);
    let (x0, y0) = (fx.floor() as u32, fy.floor() as u32);
    let (x1, y1) = ((x0 + 1).min(w - 1), (y0 + 1).min(h - 1));
    let (tx, ty) = (fx - x0 as f32, fy - y0 as f32);
    let (a, b) = (img.get_pixel(x0, y0).0, img.get_pixel(x1, y0).0);
    let (c, d) = (img.get_pixel(x0, y1).0, img.get_pixel(x1, y1).0);
    let mut out = [0u8; 3];
    for i in 0..3 {
        let top = f32::from(a[i]) * (1.0 - tx) + f32::from(b[i]) * tx;
        let bottom = f32::from(c[i]) * (1.0 - tx) + f32::from(d[i]) * tx;
        out[i] = (top * (1.0 - ty) + bottom * ty).round().clamp(0.0, 255.0) as u8;
    }
    image::Rgb(out)
}

/// The recognition model's input for a crop: `[1, 3, 48, W]`, BGR, scaled to `[-1, 1]`, the
/// resized crop at the left and zeros (mid-grey) to the right.
pub(crate) fn prepare(crop: &RgbImage) -> NdTensor<f32, 4> {
    let (w, h) = crop.dimensions();
    let resized_w =
        ((REC_HEIGHT as f32 * w as f32 / h.max(1) as f32).ceil() as u32).clamp(1, REC_MAX_WIDTH);
    let resized = image::imageops::resize(
        crop,
        resized_w,
        REC_HEIGHT,
        image::imageops::FilterType::Triangle,
    );
    let width = resized_w.max(REC_MIN_WIDTH) as usize;
    let mut tensor = NdTensor::<f32, 4>::zeros([1, 3, REC_HEIGHT as usize, width]);
    for (x, y, px) in resized.enumerate_pixels() {
        for c in 0..3 {
            let v = f32::from(px.0[2 - c]) / 255.0;
            tensor[[0, c, y as usize, x as usize]] = (v - 0.5) / 0.5;
        }
    }
    tensor
}

/// The recognition model's classes: CTC blank, the dictionary, then a space
/// (PaddleOCR's `use_space_char`).
#[derive(Debug, Clone)]
pub(crate) struct Charset {
    /// Index `i` is class `i + 1`.
    chars: Vec<String>,
}

impl Charset {
    /// The dictionary as stored in the model's `character` metadata: one entry per line.
    pub(crate) fn from_dictionary(dict: &str) -> Charset {
        let mut chars: Vec<String> = dict
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned())
            .collect();
        // A trailing newline ends the last entry; it does not add an empty one.
        if chars.last().is_some_and(String::is_empty) {
            chars.pop();
        }
        chars.push(" ".to_owned());
        Charset { chars }
    }

    /// The number of model classes, blank included.
    pub(crate) fn classes(&self) -> usize {
        self.chars.len() + 1
    }

    /// The text of class `class` (`None` for the blank).
    pub(crate) fn text(&self, class: usize) -> Option<&str> {
        class
            .checked_sub(1)
            .and_then(|i| self.chars.get(i))
            .map(String::as_str)
    }

    /// Which classes may be emitted when reading Latin-script text only: the blank, the space,
    /// and dictionary entries made of ASCII, Latin-1 and Latin Extended-A characters or common
    /// typographic punctuation.
    pub(crate) fn latin_mask(&self) -> Vec<bool> {
        std::iter::once(true)
            .chain(self.chars.iter().map(|s| s.chars().all(is_latin)))
            .collect()
    }
}

fn is_latin(c: char) -> bool {
    c.is_ascii_graphic()
        || c == ' '
        || ('\u{a1}'..='\u{17f}').contains(&c)
        || "‘’‚“”„–—…€•′″".contains(c)
}

/// Greedy CTC decoding of per-step class probabilities (`steps` rows of `classes` values):
/// the most probable class at each step (among the `allowed` ones, if given), repeats
/// collapsed, blanks (class 0) dropped. Returns the kept classes and the mean of their
/// probabilities (0 when nothing is kept).
#[cfg(test)]
pub(crate) fn ctc_greedy_decode(
    probs: &[f32],
    classes: usize,
    allowed: Option<&[bool]>,
) -> (Vec<usize>, f32) {
    ctc_collapse(best_classes(probs, classes, allowed))
}

/// Each step's most probable class (among the `allowed` ones, if given) and its probability:
/// the first on a tie, `(0, -inf)` when none is above `-inf`. What the host's `models.run`
/// answers for an arg-max, computed here when the tool runs the model itself.
pub(crate) fn best_classes(
    probs: &[f32],
    classes: usize,
    allowed: Option<&[bool]>,
) -> Vec<(usize, f32)> {
    probs
        .chunks_exact(classes)
        .map(|row| {
            let mut best = (0usize, f32::NEG_INFINITY);
            for (class, &p) in row.iter().enumerate() {
                if allowed.is_some_and(|mask| !mask.get(class).copied().unwrap_or(false)) {
                    continue;
                }
                if p > best.1 {
                    best = (class, p);
                }
            }
            best
        })
        .collect()
}

/// CTC's collapse of each step's best class: repeats merged, blanks (class 0) dropped. The
/// kept classes and the mean of their probabilities (0 when nothing is kept).
pub(crate) fn ctc_collapse(best: impl IntoIterator<Item = (usize, f32)>) -> (Vec<usize>, f32) {
    let mut kept = Vec::new();
    let mut conf_sum = 0.0f64;
    let mut prev = None;
    for (class, p) in best {
        if class != 0 && prev != Some(class) {
            kept.push(class);
            conf_sum += f64::from(p);
        }
        prev = Some(class);
    }
    let conf = if kept.is_empty() {
        0.0
    } else {
        (conf_sum / kept.len() as f64) as f32
    };
    (kept, conf)
}
