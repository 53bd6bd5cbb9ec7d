//! Text detection: the DB (Differentiable Binarization) model's input and post-processing.
//!
//! The detection model maps an image to a per-pixel "this is text" probability. Text regions
//! are the connected regions above [`DetParams::thresh`]; each region's minimum-area
//! (possibly rotated) rectangle is scored by the mean probability inside it, and a kept
//! rectangle is grown ("unclipped") by `area * unclip_ratio / perimeter` on every side, since
//! the model is trained to mark a shrunk core of each text line. This follows PaddleOCR's
//! `DBPostProcess` with its `fast` score mode.

use image::RgbImage;
use rten_imageproc::{PointF, RetrievalMode, RotatedRect, Vec2, find_contours};
use rten_tensor::prelude::*;
use rten_tensor::{NdTensor, NdTensorView};

/// The per-channel mean and standard deviation the detection model was trained with, in the
/// model's channel order (PaddleOCR decodes images as BGR and normalizes that with the
/// ImageNet statistics listed in RGB order; we do the same so the inputs match training).
const DET_MEAN: [f32; 3] = [0.485, 0.456, 0.406];
const DET_STD: [f32; 3] = [0.229, 0.224, 0.225];

/// The detection model's strides need both sides to be multiples of this.
pub(crate) const DET_ALIGN: u32 = 32;

/// Post-processing parameters (PaddleOCR's names and defaults for PP-OCRv4).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct DetParams {
    /// A pixel is text when its probability exceeds this.
    pub thresh: f32,
    /// A region is kept when the mean probability inside its rectangle reaches this.
    pub box_thresh: f32,
    /// How much to grow a kept rectangle (see the module docs).
    pub unclip_ratio: f32,
    /// At most this many regions are considered.
    pub max_candidates: usize,
    /// Regions whose shorter side is below this (in map pixels) are dropped.
    pub min_size: f32,
}

impl Default for DetParams {
    fn default() -> DetParams {
        DetParams {
            thresh: 0.3,
            box_thresh: 0.5,
            unclip_ratio: 1.6,
            max_candidates: 1000,
            min_size: 3.0,
        }
    }
}

/// A text region: four corners `[x, y]`, clockwise from the top-left, and its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Quad {
    pub pts: [[f32; 2]; 4],
    pub score: f32,
}

impl Quad {
    /// The axis-aligned bounds `(left, top, right, bottom)`.
    pub(crate) fn bounds(&self) -> (f32, f32, f32, f32) {
        let xs = self.pts.map(|p| p[0]);
        let ys = self.pts.map(|p| p[1]);
        let min = |v: [f32; 4]| v.into_iter().fold(f32::INFINITY, f32::min);
        let max = |v: [f32; 4]| v.into_iter().fold(f32::NEG_INFINITY, f32::max);
        (min(xs), min(ys), max(xs), max(ys))
    }

    /// Applies `f` to every corner.
    pub(crate) fn map(self, f: impl Fn([f32; 2]) -> [f32; 2]) -> Quad {
        Quad {
            pts: self.pts.map(f),
            score: self.score,
        }
    }
}

/// The detection model's input and how to map its output back onto the source image.
#[derive(Debug)]
pub(crate) struct DetInput {
    /// `[1, 3, H, W]`, normalized, BGR.
    pub tensor: NdTensor<f32, 4>,
    /// Source pixels per map pixel, horizontally and vertically.
    pub scale: [f32; 2],
    /// The padding added to the source image before resizing, in source pixels (left, top).
    pub pad: [f32; 2],
}

impl DetInput {
    /// Maps a point of the probability map onto the source image.
    pub(crate) fn to_source(&self, p: [f32; 2]) -> [f32; 2] {
        [
            p[0] * self.scale[0] - self.pad[0],
            p[1] * self.scale[1] - self.pad[1],
        ]
    }
}

/// The padding `(horizontal, vertical)` added on each side of a `w`×`h` image before
/// detection. A single line of text filling a short or very wide image touches the border,
/// where the model finds it poorly; like RapidOCR, such images get a margin.
pub(crate) fn letterbox_padding(w: u32, h: u32) -> (u32, u32) {
    const MIN_SIDE: u32 = 32;
    const MAX_RATIO: u32 = 8;
    let pad_y = if h <= MIN_SIDE || w > h * MAX_RATIO {
        let target = (w / MAX_RATIO).max(MIN_SIDE) * 2;
        target.saturating_sub(h) / 2
    } else {
        0
    };
    let pad_x = if w <= MIN_SIDE {
        (MIN_SIDE * 2 - w) / 2
    } else {
        0
    };
    (pad_x, pad_y)
}

/// The detection input size for a `w`×`h` image: the longer side at most `max_side`, both
/// sides rounded to multiples of [`DET_ALIGN`] (at least one multiple).
pub(crate) fn det_size(w: u32, h: u32, max_side: u32) -> (u32, u32) {
    let longer = w.max(h) as f32;
    let ratio = if longer > max_side as f32 {
        max_side as f32 / longer
    } else {
        1.0
    };
    let round = |v: u32| {
        let scaled = (v as f32 * ratio).round() as u32;
        (((scaled + DET_ALIGN / 2) / DET_ALIGN) * DET_ALIGN).clamp(DET_ALIGN, max_side)
    };
    (round(w), round(h))
}

/// Builds the detection model's input for `img`.
pub(crate) fn prepare(img: &RgbImage, max_side: u32) -> DetInput {
    let (w, h) = img.dimensions();
    let (pad_x, pad_y) = letterbox_padding(w, h);
    let padded = if pad_x > 0 || pad_y > 0 {
        let fill = border_color(img);
        let mut canvas = RgbImage::from_pixel(w + 2 * pad_x, h + 2 * pad_y, fill);
        image::imageops::replace(&mut canvas, img, i64::from(pad_x), i64::from(pad_y));
        canvas
    } else {
        img.clone()
    };
    let (pw, ph) = padded.dimensions();
    let (dw, dh) = det_size(pw, ph, max_side);
    let resized = if (dw, dh) == (pw, ph) {
        padded
    } else {
        image::imageops::resize(&padded, dw, dh, image::imageops::FilterType::Triangle)
    };
    let (dw_us, dh_us) = (dw as usize, dh as usize);
    let mut tensor = NdTensor::<f32, 4>::zeros([1, 3, dh_us, dw_us]);
    for (x, y, px) in resized.enumerate_pixels() {
        // BGR: channel 0 is blue.
        for c in 0..3 {
            let v = f32::from(px.0[2 - c]) / 255.0;
            tensor[[0, c, y as usize, x as usize]] = (v - DET_MEAN[c]) / DET_STD[c];
        }
    }
    DetInput {
        tensor,
        scale: [pw as f32 / dw as f32, ph as f32 / dh as f32],
        pad: [pad_x as f32, pad_y as f32],
    }
}

/// The mean colour of the image's outermost pixels: the background, for padding.
fn border_color(img: &RgbImage) -> image::Rgb<u8> {
    let (w, h) = img.dimensions();
    let mut sum = [0u64; 3];
    let mut n = 0u64;
    let mut add = |x: u32, y: u32| {
        let p = img.get_pixel(x, y).0;
        for c in 0..3 {
            sum[c] += u64::from(p[c]);
        }
        n += 1;
    };
    for x in 0..w {
        add(x, 0);
        add(x, h - 1);
    }
    for y in 0..h {
        add(0, y);
        add(w - 1, y);
    }
    image::Rgb(sum.map(|s| (s / n.max(1)) as u8))
}

/// Finds the text regions in a probability map `[H, W]`; corners are in map pixels.
pub(crate) fn boxes_from_prob_map(prob: NdTensorView<'_, f32, 2>, params: &DetParams) -> Vec<Quad> {
    let [rows, cols] = prob.shape();
    // Threshold, then dilate with a 2x2 kernel (as RapidOCR does) so that characters
    // separated by a one-pixel gap join into one line.
    let mut mask = NdTensor::<bool, 2>::full([rows, cols], false);
    for y in 0..rows {
        for x in 0..cols {
            let on = |yy: usize, xx: usize| prob[[yy, xx]] > params.thresh;
            mask[[y, x]] = on(y, x)
                || (x > 0 && on(y, x - 1))
                || (y > 0 && on(y - 1, x))
                || (x > 0 && y > 0 && on(y - 1, x - 1));
        }
    }

    let contours = find_contours(mask.view(), RetrievalMode::External);
    let mut quads = Vec::new();
    for contour in contours.iter().take(params.max_candidates) {
        let points: Vec<PointF> = contour.iter().map(|p| p.to_f32()).collect();
        let Some(rect) = min_area_rect(&points) else {
            continue;
        };
        if rect.width().min(rect.height()) < params.min_size {
            continue;
        }
        let score = mean_inside(prob, &rect);
        if score < params.box_thresh {
            continue;
        }
        let (w, h) = (rect.width(), rect.height());
        let distance = w * h * params.unclip_ratio / (2.0 * (w + h));
        let grown = rect.expanded(2.0 * distance, 2.0 * distance);
        if grown.width().min(grown.height()) < params.min_size + 2.0 {
            continue;
        }
        let corners = grown.corners().map(|p| [p.x, p.y]);
        let pts = order_corners(corners).map(|[x, y]| {
            [
                x.clamp(0.0, cols as f32 - 1.0),
                y.clamp(0.0, rows as f32 - 1.0),
            ]
        });
        quads.push(Quad { pts, score });
    }
    quads
}

/// The smallest-area rectangle, at any angle, that contains `points`; `None` for no points.
///
/// The rectangle has a side on an edge of the points' convex hull (the exhaustive search of
/// geometrictools.com's "Minimum-Area Rectangle"). This is not `rten_imageproc::min_area_rect`:
/// for a long thin region, a text line of ~500×7 map pixels, its `f32` Graham scan can return a
/// hull that is not convex, and it measures each candidate's height on one side of the edge
/// only, so such a line came back about 1 pixel high and was dropped as too small (a whole
/// line of a dense page lost). Here the hull is Andrew's monotone chain in `f64`, and each
/// candidate spans the extreme projections on both sides of its edge.
pub(crate) fn min_area_rect(points: &[PointF]) -> Option<RotatedRect> {
    let hull = convex_hull(points);
    let (&first, rest) = hull.split_first()?;
    if rest.is_empty() {
        let center = PointF::from_yx(first[1] as f32, first[0] as f32);
        return Some(RotatedRect::new(center, Vec2::from_yx(1.0, 0.0), 0.0, 0.0));
    }
    let mut best: Option<(f64, RotatedRect)> = None;
    for (i, &start) in hull.iter().enumerate() {
        let end = hull[(i + 1) % hull.len()];
        let (dx, dy) = (end[0] - start[0], end[1] - start[1]);
        let length = dx.hypot(dy);
        if length == 0.0 {
            continue;
        }
        // The edge's direction and its perpendicular, unit length.
        let (ux, uy) = (dx / length, dy / length);
        let (vx, vy) = (-uy, ux);
        let (mut min_u, mut max_u, mut min_v, mut max_v) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for p in &hull {
            let (px, py) = (p[0] - start[0], p[1] - start[1]);
            let (u, v) = (px * ux + py * uy, px * vx + py * vy);
            min_u = min_u.min(u);
            max_u = max_u.max(u);
            min_v = min_v.min(v);
            max_v = max_v.max(v);
        }
        let (width, height) = (max_u - min_u, max_v - min_v);
        let area = width * height;
        if best.as_ref().is_none_or(|(smallest, _)| area < *smallest) {
            let (cu, cv) = ((min_u + max_u) / 2.0, (min_v + max_v) / 2.0);
            let center = PointF::from_yx(
                (start[1] + cu * uy + cv * vy) as f32,
                (start[0] + cu * ux + cv * vx) as f32,
            );
            let up = Vec2::from_yx(vy as f32, vx as f32);
            best = Some((
                area,
                RotatedRect::new(center, up, width as f32, height as f32),
            ));
        }
    }
    best.map(|(_, rect)| rect)
}

/// The convex hull of `points` as `[x, y]`, counter-clockwise in a y-up frame, without
/// collinear points (Andrew's monotone chain, in `f64`).
fn convex_hull(points: &[PointF]) -> Vec<[f64; 2]> {
    let mut pts: Vec<[f64; 2]> = points
        .iter()
        .map(|p| [f64::from(p.x), f64::from(p.y)])
        .collect();
    pts.sort_by(|a, b| a[0].total_cmp(&b[0]).then(a[1].total_cmp(&b[1])));
    pts.dedup();
    if pts.len() < 3 {
        return pts;
    }
    let cross = |o: [f64; 2], a: [f64; 2], b: [f64; 2]| {
        (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
    };
    let mut hull: Vec<[f64; 2]> = Vec::with_capacity(2 * pts.len());
    for pass in 0..2 {
        let start = hull.len();
        let ordered: Box<dyn Iterator<Item = &[f64; 2]>> = if pass == 0 {
            Box::new(pts.iter())
        } else {
            Box::new(pts.iter().rev())
        };
        for &p in ordered {
            while hull.len() >= start + 2
                && cross(hull[hull.len() - 2], hull[hull.len() - 1], p) <= 0.0
            {
                hull.pop();
            }
            hull.push(p);
        }
        // The last point of each half is the first of the other.
        hull.pop();
    }
    hull
}

/// The mean of `prob` over the pixels whose centres lie in `rect` (with a small tolerance,
/// since the rectangle passes through the centres of the region's border pixels).
fn mean_inside(prob: NdTensorView<'_, f32, 2>, rect: &rten_imageproc::RotatedRect) -> f32 {
    let [rows, cols] = prob.shape();
    let tolerant = rect.expanded(0.5, 0.5);
    let corners = tolerant.corners();
    let min_x = corners.iter().map(|p| p.x).fold(f32::INFINITY, f32::min);
    let max_x = corners
        .iter()
        .map(|p| p.x)
        .fold(f32::NEG_INFINITY, f32::max);
    let min_y = corners.iter().map(|p| p.y).fold(f32::INFINITY, f32::min);
    let max_y = corners
        .iter()
        .map(|p| p.y)
        .fold(f32::NEG_INFINITY, f32::max);
    let x0 = min_x.floor().max(0.0) as usize;
    let y0 = min_y.floor().max(0.0) as usize;
    let x1 = (max_x.ceil().max(0.0) as usize).min(cols.saturating_sub(1));
    let y1 = (max_y.ceil().max(0.0) as usize).min(rows.saturating_sub(1));
    let (mut sum, mut n) = (0.0f64, 0u32);
    for y in y0..=y1 {
        for x in x0..=x1 {
            if tolerant.contains(PointF::from_yx(y as f32, x as f32)) {
                sum += f64::from(prob[[y, x]]);
                n += 1;
            }
        }
    }
    if n == 0 {
        0.0
    } else {
        (sum / f64::from(n)) as f32
    }
}

/// Orders four corners as top-left, top-right, bottom-right, bottom-left (PaddleOCR's
/// `get_mini_boxes`): the two leftmost points are the left side, each side's upper point
/// is its top.
pub(crate) fn order_corners(mut pts: [[f32; 2]; 4]) -> [[f32; 2]; 4] {
    pts.sort_by(|a, b| a[0].total_cmp(&b[0]));
    let (tl, bl) = if pts[1][1] > pts[0][1] {
        (pts[0], pts[1])
    } else {
        (pts[1], pts[0])
    };
    let (tr, br) = if pts[3][1] > pts[2][1] {
        (pts[2], pts[3])
    } else {
        (pts[3], pts[2])
    };
    [tl, tr, br, bl]
}

/// Groups boxes (given as `(left, top, right, bottom)`) into lines, top to bottom, each
/// line's boxes left to right. A box joins the current line when its vertical extent
/// overlaps the line's first box by at least half the smaller height.
pub(crate) fn reading_order(bounds: &[(f32, f32, f32, f32)]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..bounds.len()).collect();
    let center_y = |i: usize| (bounds[i].1 + bounds[i].3) / 2.0;
    order.sort_by(|&a, &b| {
        center_y(a)
            .total_cmp(&center_y(b))
            .then(bounds[a].0.total_cmp(&bounds[b].0))
    });
    let mut lines: Vec<Vec<usize>> = Vec::new();
    for i in order {
        let joins = lines.last().is_some_and(|line| {
            let first = bounds[line[0]];
            let b = bounds[i];
            let overlap = b.3.min(first.3) - b.1.max(first.1);
            let smaller = (b.3 - b.1).min(first.3 - first.1);
            overlap >= 0.5 * smaller
        });
        if joins {
            if let Some(line) = lines.last_mut() {
                line.push(i);
            }
        } else {
            lines.push(vec![i]);
        }
    }
    for line in &mut lines {
        line.sort_by(|&a, &b| bounds[a].0.total_cmp(&bounds[b].0));
    }
    lines
}
