//! `image`'s separable resampling (`imageops::resize`, which `DynamicImage::resize_exact`
//! runs) for 8-bit images, to the same bits, walked in the order the memory is laid out.
//!
//! `image` 0.25 computes each output pixel with `get_pixel`/`put_pixel` and its horizontal
//! pass walks the `f32` intermediate column by column, so every tap is a bounds-checked
//! lookup a row away from the last; it widens every pixel to four channels (an RGB image pays
//! for an alpha it never writes) and rounds with `f32::round`, which WebAssembly has no
//! instruction for (a libm call per channel in the guest). Here both passes run along rows:
//! the vertical pass sums a block of columns over the taps' source rows and stores it in an
//! intermediate row, and the horizontal pass reads each output pixel's taps from one
//! intermediate row. Only the image's own channels are computed, and rounding is exact
//! integer arithmetic.
//!
//! The arithmetic is `image`'s, operation for operation: the same kernels and weights
//! (normalised by their sum, in the same order), each channel summed tap by tap from `0.0` in
//! the same order, clamped to `0..=255` and rounded half away from zero. So the output equals
//! `resize_exact`'s to the bit (the tests compare them for every 8-bit layout and filter).
//! Other sample types (16-bit, `f32`) are left to `image`.
//!
//! In the guest (`wasm32` with `simd128`) two steps are written in WebAssembly SIMD, each
//! lane doing the portable code's operations in its order, so the bits are the same: the
//! vertical pass's blocks of 16 columns (`lanes`: a tap's 16 bytes in two widening
//! loads rather than four 4-byte ones), and the horizontal pass for three and four channels
//! (`horizontal_simd`: a pixel's channels are one vector's lanes, one multiplication and
//! one addition a tap rather than three or four). Natively LLVM's code for the portable loops
//! is already as good. `crates/locara-facade/tests/images.rs` compares the sandbox's pixels
//! with `image`'s on both engines.

use image::{DynamicImage, ImageBuffer, Pixel, imageops::FilterType};

/// `image.resize_exact(width, height, filter)`, to the same bits.
pub(crate) fn resize_exact(
    image: &DynamicImage,
    width: u32,
    height: u32,
    filter: FilterType,
) -> DynamicImage {
    match image {
        DynamicImage::ImageLuma8(i) => {
            resize::<_, 1>(i, width, height, filter).map(DynamicImage::ImageLuma8)
        }
        DynamicImage::ImageLumaA8(i) => {
            resize::<_, 2>(i, width, height, filter).map(DynamicImage::ImageLumaA8)
        }
        DynamicImage::ImageRgb8(i) => {
            resize::<_, 3>(i, width, height, filter).map(DynamicImage::ImageRgb8)
        }
        DynamicImage::ImageRgba8(i) => {
            resize::<_, 4>(i, width, height, filter).map(DynamicImage::ImageRgba8)
        }
        _ => None,
    }
    .unwrap_or_else(|| image.resize_exact(width, height, filter))
}

/// Resamples an `N`-channel 8-bit image; `None` for what `image` handles itself (an empty
/// source, an unchanged size, a colour space the output cannot carry).
fn resize<P: Pixel<Subpixel = u8>, const N: usize>(
    source: &ImageBuffer<P, Vec<u8>>,
    width: u32,
    height: u32,
    filter: FilterType,
) -> Option<ImageBuffer<P, Vec<u8>>> {
    let (sw, sh) = source.dimensions();
    if sw == 0 || sh == 0 || (sw, sh) == (width, height) {
        return None;
    }
    let (kernel, support) = kernel(filter);
    let (sw, width_out) = (sw as usize, width as usize);
    let src = source.as_raw();

    // Vertical: source rows into an `f32` intermediate `sw` wide and `height` high.
    let row = sw * N;
    // One `f32` more than the rows: the vector horizontal pass reads an RGB pixel as four.
    let mut between = vec![0.0f32; row * height as usize + 1];
    for (out, taps) in between
        .chunks_exact_mut(row)
        .zip(Taps::new(sh, height, kernel, support))
    {
        let lines = &src[taps.first * row..][..taps.weights.len() * row];
        vertical(lines, &taps.weights, out);
    }

    // Horizontal: each intermediate row into an output row.
    let columns: Vec<Taps> = Taps::new(sw as u32, width, kernel, support).collect();
    let out_row = width_out * N;
    let mut pixels = vec![0u8; out_row * height as usize];
    for (y, out) in pixels.chunks_exact_mut(out_row).enumerate() {
        // The row, and after it the next row's first value (or the padding).
        horizontal::<N>(&between[y * row..=(y + 1) * row], &columns, out);
    }
    let mut out = ImageBuffer::from_raw(width, height, pixels)?;
    out.set_color_space(source.color_space()).ok()?;
    Some(out)
}

/// One intermediate row: `out[x]` is the sum over the taps `i` of `lines[i][x] * weights[i]`,
/// `lines` being the taps' source rows one after another, added in tap order. Sixteen columns
/// at a time, each block summed over every tap before it is stored, two taps a turn (one
/// after the other, so the order of the additions is unchanged): in the guest each turn of a
/// loop pays a fuel and an interrupt check. Not inlined: in the guest, Cranelift allocates a
/// small function's registers much better than those of one inlined into the tool's whole
/// body.
#[inline(never)]
fn vertical(lines: &[u8], weights: &[f32], out: &mut [f32]) {
    const LANES: usize = 16;
    let row = out.len();
    let whole = row - row % LANES;
    let (blocks, rest) = out.split_at_mut(whole);
    let (pairs, last) = weights.as_chunks::<2>();
    for (x, block) in (0..whole)
        .step_by(LANES)
        .zip(blocks.as_chunks_mut::<LANES>().0)
    {
        *block = block_sum(lines, row, x, pairs, last.first().copied());
    }
    for (x, out) in (whole..row).zip(rest) {
        let mut t = 0.0f32;
        for (line, &w) in lines.chunks_exact(row).zip(weights) {
            t += f32::from(line[x]) * w;
        }
        *out = t;
    }
}

/// Columns `x..x + 16` of [`vertical`]'s sum: two taps a turn (`pairs`), then the `last` if
/// the count is odd, each tap's product added to every lane in tap order. The order is this
/// one loop's for every target; only the lanes' arithmetic ([`lanes`]) is chosen per target.
#[inline(always)]
fn block_sum(
    lines: &[u8],
    row: usize,
    x: usize,
    pairs: &[[f32; 2]],
    last: Option<f32>,
) -> [f32; 16] {
    let mut t = lanes::zero();
    for (two, &[w0, w1]) in lines.chunks_exact(2 * row).zip(pairs) {
        let (s0, s1) = (lanes::load(&two[..row], x), lanes::load(&two[row..], x));
        lanes::add_product(&mut t, s0, w0);
        lanes::add_product(&mut t, s1, w1);
    }
    if let Some(w) = last {
        lanes::add_product(&mut t, lanes::load(&lines[pairs.len() * 2 * row..], x), w);
    }
    lanes::finish(t)
}

/// [`block_sum`]'s 16 running sums, portably: LLVM vectorizes these loops well natively.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
mod lanes {
    pub(super) type Sums = [f32; 16];
    pub(super) type Bytes = [u8; 16];

    #[inline(always)]
    pub(super) fn zero() -> Sums {
        [0.0; 16]
    }

    #[inline(always)]
    pub(super) fn load(line: &[u8], x: usize) -> Bytes {
        line[x..x + 16].try_into().expect("16 bytes")
    }

    /// `t[i] += f32::from(s[i]) * w` for every lane.
    #[inline(always)]
    pub(super) fn add_product(t: &mut Sums, s: Bytes, w: f32) {
        for (t, s) in t.iter_mut().zip(s) {
            *t += f32::from(s) * w;
        }
    }

    #[inline(always)]
    pub(super) fn finish(t: Sums) -> [f32; 16] {
        t
    }
}

/// [`block_sum`]'s 16 running sums in WebAssembly SIMD, four `f32x4`s, the same operation on
/// each lane (so the same bits): LLVM made the portable loads a 4-byte load, two widenings and
/// a conversion for each 4 columns, each load's address computed and bounds-checked apart, in
/// the guest; here each tap's 16 bytes are two 8-byte widening loads.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod lanes {
    use core::arch::wasm32::{
        f32x4_add, f32x4_convert_i32x4, f32x4_extract_lane, f32x4_mul, f32x4_splat, u8x16,
        u16x8_extend_high_u8x16, u16x8_extend_low_u8x16, u32x4_extend_high_u16x8,
        u32x4_extend_low_u16x8, v128,
    };

    pub(super) type Sums = [v128; 4];
    pub(super) type Bytes = [v128; 4];

    #[inline(always)]
    pub(super) fn zero() -> Sums {
        [f32x4_splat(0.0); 4]
    }

    /// The 16 bytes as four vectors of `f32` (the values are below 2⁸, so the signed
    /// conversion is exact, and one instruction where the unsigned one is several).
    #[inline(always)]
    pub(super) fn load(line: &[u8], x: usize) -> Bytes {
        let b: &[u8; 16] = line[x..x + 16].try_into().expect("16 bytes");
        let v = u8x16(
            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
            b[14], b[15],
        );
        let (low, high) = (u16x8_extend_low_u8x16(v), u16x8_extend_high_u8x16(v));
        [
            u32x4_extend_low_u16x8(low),
            u32x4_extend_high_u16x8(low),
            u32x4_extend_low_u16x8(high),
            u32x4_extend_high_u16x8(high),
        ]
        // A closure: a `#[target_feature]` function is not an `FnMut`.
        .map(|v| f32x4_convert_i32x4(v))
    }

    /// `t[i] += s[i] * w` for every lane.
    #[inline(always)]
    pub(super) fn add_product(t: &mut Sums, s: Bytes, w: f32) {
        let w = f32x4_splat(w);
        for (t, s) in t.iter_mut().zip(s) {
            *t = f32x4_add(*t, f32x4_mul(s, w));
        }
    }

    /// The sums as 16 `f32`s (four vector stores).
    #[inline(always)]
    pub(super) fn finish(t: Sums) -> [f32; 16] {
        let mut out = [0.0f32; 16];
        for (out, t) in out.as_chunks_mut::<4>().0.iter_mut().zip(t) {
            *out = [
                f32x4_extract_lane::<0>(t),
                f32x4_extract_lane::<1>(t),
                f32x4_extract_lane::<2>(t),
                f32x4_extract_lane::<3>(t),
            ];
        }
        out
    }
}

/// One output row from one intermediate row of `N`-channel pixels, each channel summed tap by
/// tap. `line` is the row and one value more (the vector pass for three channels reads each
/// pixel as four). Not inlined, as [`vertical`].
#[inline(never)]
fn horizontal<const N: usize>(line: &[f32], columns: &[Taps], out: &mut [u8]) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    if N == 3 || N == 4 {
        return horizontal_simd::<N>(line, columns, out);
    }
    for (taps, pixel) in columns.iter().zip(out.chunks_exact_mut(N)) {
        let mut t = [0.0f32; N];
        let first = &line[taps.first * N..][..taps.weights.len() * N];
        for (&w, p) in taps.weights.iter().zip(first.as_chunks::<N>().0) {
            for c in 0..N {
                t[c] += p[c] * w;
            }
        }
        for (out, t) in pixel.iter_mut().zip(t) {
            *out = to_u8(t);
        }
    }
}

/// [`horizontal`] for three or four channels in WebAssembly SIMD: a pixel's channels are the
/// lanes of one vector (for RGB the fourth lane reads the next value and is dropped), each
/// summed tap by tap from `0.0` as in the scalar loop, so to the same bits, with one load,
/// one multiplication and one addition a tap instead of three or four of each. Two taps a
/// turn, from one bounds-checked slice (in the guest each turn of a loop pays a fuel check),
/// each tap's pixel one vector load ([`load4`]) and its weight a vector splatted once per
/// image (`Taps::splats`), and the pixel rounded in vector operations ([`to_u8x4`]). Built
/// from four scalar values, LLVM merged a turn's two RGB pixels into loads and a two-vector
/// shuffle, and each weight was a load and a broadcast: the pass ran at ~1.8× its native
/// time; with vector loads the image.resize row of `--bench media` went ~8% faster.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn horizontal_simd<const N: usize>(line: &[f32], columns: &[Taps], out: &mut [u8]) {
    use core::arch::wasm32::{f32x4_add, f32x4_mul, f32x4_splat};
    for (taps, pixel) in columns.iter().zip(out.chunks_exact_mut(N)) {
        let first = &line[taps.first * N..];
        let (pairs, last) = taps.splats.as_chunks::<2>();
        let mut t = f32x4_splat(0.0);
        let mut at = 0;
        for &[w0, w1] in pairs {
            let s = &first[at..at + N + 4];
            t = f32x4_add(t, f32x4_mul(load4(&s[..4]), w0));
            t = f32x4_add(t, f32x4_mul(load4(&s[N..]), w1));
            at += 2 * N;
        }
        if let [w] = *last {
            t = f32x4_add(t, f32x4_mul(load4(&first[at..]), w));
        }
        pixel.copy_from_slice(&to_u8x4(t)[..N]);
    }
}

/// The first four `f32`s of `s` as a vector, in one unaligned vector load.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline(always)]
#[allow(unsafe_code, reason = "a vector load from a checked slice")]
fn load4(s: &[f32]) -> core::arch::wasm32::v128 {
    let s = &s[..4];
    // SAFETY: `s` is four `f32`s, 16 readable bytes, and `v128_load` needs no alignment.
    unsafe { core::arch::wasm32::v128_load(s.as_ptr().cast()) }
}

/// [`to_u8`] of each lane, in vector operations: `f32x4.pmax` and `f32x4.pmin` are the
/// scalar code's comparisons (`a < b ? b : a` and `b < a ? b : a`, NaN giving the bound), and
/// a tie adds the all-ones of `f32x4.eq` taken away.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline(always)]
fn to_u8x4(t: core::arch::wasm32::v128) -> [u8; 4] {
    use core::arch::wasm32::{
        f32x4_add, f32x4_eq, f32x4_pmax, f32x4_pmin, f32x4_splat, f32x4_sub, i32x4_extract_lane,
        i32x4_splat, i32x4_sub, v128_and,
    };
    let t = f32x4_pmax(f32x4_splat(0.0), t);
    let t = f32x4_pmin(f32x4_splat(255.0), t);
    let m = f32x4_add(t, f32x4_splat(TWO_23));
    let n = f32x4_sub(m, f32x4_splat(TWO_23));
    let tie = f32x4_eq(f32x4_sub(t, n), f32x4_splat(0.5));
    let r = i32x4_sub(v128_and(m, i32x4_splat(0xff)), tie);
    // Each lane is in `0..=255`.
    [
        i32x4_extract_lane::<0>(r) as u8,
        i32x4_extract_lane::<1>(r) as u8,
        i32x4_extract_lane::<2>(r) as u8,
        i32x4_extract_lane::<3>(r) as u8,
    ]
}

/// The source pixels one output pixel reads along one axis, and their normalised weights.
struct Taps {
    first: usize,
    weights: Vec<f32>,
    /// In the guest, each weight in the four lanes of a vector, for [`horizontal_simd`]: one
    /// vector load a tap rather than a scalar load and a broadcast.
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    splats: Vec<core::arch::wasm32::v128>,
}

impl Taps {
    /// Each output position's taps along an axis `from` pixels long resampled to `to`: `image`'s
    /// `vertical_sample`/`horizontal_sample` computation.
    fn new(from: u32, to: u32, kernel: fn(f32) -> f32, support: f32) -> impl Iterator<Item = Taps> {
        let ratio = from as f32 / to as f32;
        let sratio = if ratio < 1.0 { 1.0 } else { ratio };
        let src_support = support * sratio;
        (0..to).map(move |out| {
            let input = (out as f32 + 0.5) * ratio;
            let left = ((input - src_support).floor() as i64).clamp(0, i64::from(from) - 1);
            let right = ((input + src_support).ceil() as i64).clamp(left + 1, i64::from(from));
            let input = input - 0.5;
            let mut weights: Vec<f32> = (left..right)
                .map(|i| kernel((i as f32 - input) / sratio))
                .collect();
            let sum = weights.iter().fold(0.0, |sum, w| sum + w);
            for w in &mut weights {
                *w /= sum;
            }
            Taps {
                first: left as usize,
                #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
                splats: weights
                    .iter()
                    .map(|&w| core::arch::wasm32::f32x4_splat(w))
                    .collect(),
                weights,
            }
        })
    }
}

/// `2²³`: adding it to an `f32` in `0.0..=255.0` rounds it to an integer, ties to even.
const TWO_23: f32 = 8_388_608.0;

/// `image`'s `clamp(t, 0.0, 255.0)` then `f32::round` (half away from zero) to `u8`, in
/// floating-point arithmetic and bit operations only: WebAssembly has no `round`, and
/// Cranelift turns its saturating conversion to an integer (`t as u8`) into a long sequence
/// of x86 instructions, as LLVM's saturating `as` is a few natively. For `t` in
/// `0.0..=255.0`, `t + 2²³` is `2²³ + n` with `n` the integer nearest `t`, ties to even, in
/// the low bits of its representation; `t - n` is exact (Sterbenz's lemma, or `n = 0`), and it
/// is `0.5` exactly at the ties that rounding to even took down, which rounding away from zero
/// takes up.
fn to_u8(t: f32) -> u8 {
    // NaN (weights summing to zero) becomes 0 (it is not `> 0.0`); `image` then panics
    // on the conversion.
    let t = if t > 0.0 { t } else { 0.0 };
    let t = if t < 255.0 { t } else { 255.0 };
    let m = t + TWO_23;
    let n = m - TWO_23;
    (m.to_bits() as u8) + u8::from(t - n == 0.5)
}

/// `image`'s kernel and support for `filter`.
fn kernel(filter: FilterType) -> (fn(f32) -> f32, f32) {
    match filter {
        FilterType::Nearest => (|_| 1.0, 0.0),
        FilterType::Triangle => (triangle, 1.0),
        FilterType::CatmullRom => (|x| bc_cubic_spline(x, 0.0, 0.5), 2.0),
        FilterType::Gaussian => (|x| gaussian(x, 0.5), 3.0),
        FilterType::Lanczos3 => (|x| lanczos(x, 3.0), 3.0),
    }
}

fn sinc(t: f32) -> f32 {
    let a = t * std::f32::consts::PI;
    if t == 0.0 { 1.0 } else { a.sin() / a }
}

fn lanczos(x: f32, t: f32) -> f32 {
    if x.abs() < t {
        sinc(x) * sinc(x / t)
    } else {
        0.0
    }
}

fn bc_cubic_spline(x: f32, b: f32, c: f32) -> f32 {
    let a = x.abs();
    let k = if a < 1.0 {
        (12.0 - 9.0 * b - 6.0 * c) * a.powi(3)
            + (-18.0 + 12.0 * b + 6.0 * c) * a.powi(2)
            + (6.0 - 2.0 * b)
    } else if a < 2.0 {
        (-b - 6.0 * c) * a.powi(3)
            + (6.0 * b + 30.0 * c) * a.powi(2)
            + (-12.0 * b - 48.0 * c) * a
            + (8.0 * b + 24.0 * c)
    } else {
        0.0
    };
    k / 6.0
}

fn gaussian(x: f32, r: f32) -> f32 {
    ((2.0 * std::f32::consts::PI).sqrt() * r).recip() * (-x.powi(2) / (2.0 * r.powi(2))).exp()
}

fn triangle(x: f32) -> f32 {
    if x.abs() < 1.0 { 1.0 - x.abs() } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use image::{GrayAlphaImage, GrayImage, RgbImage, RgbaImage};

    use super::*;

    const FILTERS: [FilterType; 5] = [
        FilterType::Nearest,
        FilterType::Triangle,
        FilterType::CatmullRom,
        FilterType::Gaussian,
        FilterType::Lanczos3,
    ];

    /// A source with edges, gradients and noise in every channel, so that weights of both
    /// signs, clamping at both ends and rounding near .5 all occur.
    fn bytes(len: usize) -> Vec<u8> {
        let mut state = 0x9e37_79b9u32;
        (0..len)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                match i % 7 {
                    0 | 1 => (state >> 24) as u8,
                    2 => {
                        if (i / 13) % 2 == 0 {
                            0
                        } else {
                            255
                        }
                    }
                    _ => (i % 251) as u8,
                }
            })
            .collect()
    }

    fn sources(w: u32, h: u32) -> Vec<DynamicImage> {
        let n = (w * h) as usize;
        vec![
            DynamicImage::ImageLuma8(GrayImage::from_raw(w, h, bytes(n)).unwrap()),
            DynamicImage::ImageLumaA8(GrayAlphaImage::from_raw(w, h, bytes(2 * n)).unwrap()),
            DynamicImage::ImageRgb8(RgbImage::from_raw(w, h, bytes(3 * n)).unwrap()),
            DynamicImage::ImageRgba8(RgbaImage::from_raw(w, h, bytes(4 * n)).unwrap()),
        ]
    }

    #[test]
    fn equals_image_resize_exact_to_the_bit_for_every_8_bit_layout_and_filter() {
        // Down and up, by whole and odd factors, to and from a single row or column.
        let cases = [
            ((37, 29), (12, 9)),
            ((37, 29), (80, 61)),
            ((64, 48), (16, 12)),
            ((20, 20), (1, 7)),
            ((1, 9), (5, 3)),
            ((9, 1), (4, 4)),
            ((31, 17), (31, 40)),
        ];
        let mut compared = 0;
        for ((sw, sh), (w, h)) in cases {
            for source in sources(sw, sh) {
                for filter in FILTERS {
                    let ours = resize_exact(&source, w, h, filter);
                    let theirs = source.resize_exact(w, h, filter);
                    assert_eq!(ours.color(), theirs.color());
                    assert_eq!((ours.width(), ours.height()), (w, h));
                    assert!(
                        ours.as_bytes() == theirs.as_bytes(),
                        "{:?} {sw}x{sh} -> {w}x{h} with {filter:?} differs from image's",
                        source.color()
                    );
                    compared += 1;
                }
            }
        }
        assert_eq!(compared, 7 * 4 * 5);
    }

    #[test]
    fn rounds_half_away_from_zero_and_clamps_like_f32_round() {
        for bits in (0..=u32::from(u16::MAX)).map(|i| (255.0f32 * i as f32 / 65535.0).to_bits()) {
            let t = f32::from_bits(bits);
            for t in [
                t,
                f32::from_bits(bits + 1),
                f32::from_bits(bits.saturating_sub(1)),
            ] {
                let round = t.clamp(0.0, 255.0).round() as u8;
                assert_eq!(to_u8(t), round, "{t}");
            }
        }
        let edges = [-0.5, -3.0, 255.49, 255.5, 1e9, 0.49999997, 0.5, 2.5, -0.0];
        for t in edges {
            assert_eq!(f32::from(to_u8(t)), t.clamp(0.0, 255.0).round(), "{t}");
        }
        // Every tie, and the floats on either side of it.
        for n in 0..255u8 {
            let tie = f32::from(n) + 0.5;
            assert_eq!(to_u8(tie), n + 1, "{tie}");
            assert_eq!(to_u8(f32::from_bits(tie.to_bits() - 1)), n, "below {tie}");
            assert_eq!(
                to_u8(f32::from_bits(tie.to_bits() + 1)),
                n + 1,
                "above {tie}"
            );
        }
        // Weights summing to zero: `image` panics, this makes it 0.
        assert_eq!(to_u8(f32::NAN), 0);
    }

    #[test]
    fn keeps_16_bit_images_to_image() {
        let source = DynamicImage::ImageRgb16(
            image::ImageBuffer::from_raw(9, 7, vec![4000u16; 9 * 7 * 3]).unwrap(),
        );
        let ours = resize_exact(&source, 4, 3, FilterType::Lanczos3);
        assert_eq!(ours, source.resize_exact(4, 3, FilterType::Lanczos3));
    }
}
