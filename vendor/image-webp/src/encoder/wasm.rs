//! LOCARA-PATCH (new module): the lossless encoder's "expand to RGBA" and "subtract green"
//! steps in one pass on WebAssembly SIMD, four pixels a vector (see LOCARA-PATCH.md).
//!
//! The published steps collect a `flat_map` of each pixel into a `Vec` (a capacity check a
//! byte) and then subtract green byte by byte; natively LLVM turns the second loop into vector
//! code, in the sandbox Cranelift ran both at ~3× the native time. The arithmetic is the
//! published one: each byte the same `wrapping_sub`, alpha 255 for RGB.

#![allow(unsafe_code)]

use core::arch::wasm32::{
    i8x16_shuffle, u8x16, u8x16_sub, v128, v128_and, v128_load, v128_or,
    v128_store,
};

use super::ColorType;

/// 255 in each pixel's alpha byte.
const ALPHA: v128 = u8x16(0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255);
/// Each pixel's red and blue bytes.
const RED_BLUE: v128 = u8x16(255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0);

/// `data` (RGB or RGBA pixels) as RGBA with green subtracted from red and blue; `None` for the
/// other colour types, which take the published steps.
pub(super) fn rgba_minus_green(data: &[u8], color: ColorType) -> Option<Vec<u8>> {
    let channels = match color {
        ColorType::Rgb8 => 3,
        ColorType::Rgba8 => 4,
        ColorType::L8 | ColorType::La8 => return None,
    };
    let count = data.len() / channels;
    let mut pixels: Vec<u8> = Vec::with_capacity(count * 4);
    let out = pixels.spare_capacity_mut();
    // Each step reads 16 bytes: four RGBA pixels, or four RGB ones and 4 bytes past them.
    let mut done = 0;
    while (done + 4) * channels + (16 - 4 * channels) <= data.len() {
        let read = &data[done * channels..][..16];
        let written = &mut out[done * 4..][..16];
        // SAFETY: `read` and `written` are 16 bytes each (the slicing above checks it), and
        // `v128_load`/`v128_store` need no alignment.
        let v = unsafe { v128_load(read.as_ptr().cast::<v128>()) };
        let (rgba, green) = if channels == 3 {
            (
                v128_or(
                    i8x16_shuffle::<0, 1, 2, 0, 3, 4, 5, 0, 6, 7, 8, 0, 9, 10, 11, 0>(v, v),
                    ALPHA,
                ),
                i8x16_shuffle::<1, 1, 1, 1, 4, 4, 4, 4, 7, 7, 7, 7, 10, 10, 10, 10>(v, v),
            )
        } else {
            (
                v,
                i8x16_shuffle::<1, 1, 1, 1, 5, 5, 5, 5, 9, 9, 9, 9, 13, 13, 13, 13>(v, v),
            )
        };
        let result = u8x16_sub(rgba, v128_and(green, RED_BLUE));
        // SAFETY: as above.
        unsafe { v128_store(written.as_mut_ptr().cast::<v128>(), result) };
        done += 4;
    }
    for (pixel, out) in data[done * channels..count * channels]
        .chunks_exact(channels)
        .zip(out[done * 4..].chunks_exact_mut(4))
    {
        let alpha = if channels == 3 { 255 } else { pixel[3] };
        out[0].write(pixel[0].wrapping_sub(pixel[1]));
        out[1].write(pixel[1]);
        out[2].write(pixel[2].wrapping_sub(pixel[1]));
        out[3].write(alpha);
    }
    // SAFETY: the loops wrote every one of the `count * 4` bytes: the vector loop pixels
    // `0..done`, the other `done..count`.
    unsafe { pixels.set_len(count * 4) };
    Some(pixels)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The published steps, for comparison.
    fn published(data: &[u8], color: ColorType) -> Vec<u8> {
        let mut pixels: Vec<u8> = match color {
            ColorType::Rgb8 => data
                .chunks_exact(3)
                .flat_map(|p| [p[0], p[1], p[2], 255])
                .collect(),
            _ => data.to_vec(),
        };
        for pixel in pixels.chunks_exact_mut(4) {
            pixel[0] = pixel[0].wrapping_sub(pixel[1]);
            pixel[2] = pixel[2].wrapping_sub(pixel[1]);
        }
        pixels
    }

    #[test]
    fn equals_the_published_steps_for_every_length() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let bytes: Vec<u8> = (0..4096)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        for color in [ColorType::Rgb8, ColorType::Rgba8] {
            let channels = if color == ColorType::Rgb8 { 3 } else { 4 };
            for pixels in (0..40).chain([333, 1000]) {
                let data = &bytes[..pixels * channels];
                assert_eq!(
                    rgba_minus_green(data, color).unwrap(),
                    published(data, color),
                    "{color:?}, {pixels} pixels"
                );
            }
        }
        assert!(rgba_minus_green(&bytes, ColorType::L8).is_none());
    }
}
