/*
 * Copyright (c) 2025.
 *
 * This software is free software;
 *
 * You can redistribute it or modify it under terms of the MIT, Apache License or Zlib license
 */
//! LOCARA-PATCH: WebAssembly SIMD (`simd128`) YCbCr to RGB(A), added to this vendored copy.
//!
//! The scalar code's arithmetic (`scalar.rs`) on four pixels per `i32x4`: the same products
//! (the chroma ones as dot products of `(Cb, Cr)` pairs), sums and arithmetic shift, then
//! narrowed with saturation (`i32` to `i16`, then `i16` to `u8`, which is the scalar code's
//! clamp to `0..=255`), and interleaved with byte shuffles.
#![cfg(all(target_arch = "wasm32", target_feature = "simd128"))]

use core::arch::wasm32::*;

use crate::color_convert::scalar::{CB_CF, CR_CF, C_G_CB_COEF_2, C_G_CR_COEF_1, YUV_PREC, YUV_RND, Y_CF};

#[inline(always)]
fn load8(src: &[i16]) -> v128 {
    let src = &src[..8];
    // SAFETY: `src` holds eight `i16`s (16 bytes); `v128_load` has no alignment requirement.
    unsafe { v128_load(src.as_ptr().cast()) }
}

#[inline(always)]
fn store16(dst: &mut [u8], value: v128) {
    let dst = &mut dst[..16];
    // SAFETY: `dst` holds 16 bytes; `v128_store` has no alignment requirement.
    unsafe { v128_store(dst.as_mut_ptr().cast(), value) }
}

// `y * Y_CF` is computed as a shift.
const _: () = assert!(Y_CF as i32 == 1 << YUV_PREC);

/// Four pixels' R, G and B as `i32x4`s, before clamping, from their `Y` as `i32x4` and their
/// `Cb` and `Cr` (already less 128) as four `(Cb, Cr)` pairs of `i16`s. Each chroma term is a
/// dot product of a pair with a pair of coefficients (`i32x4.dot_i16x8_s`, one instruction on
/// x86, as AVX2's port uses `_mm256_madd_epi16`), where multiplying `i32x4`s lane by lane
/// takes several: every product and sum is exact in `i32` for `i16` inputs, so the result is
/// the scalar code's.
#[inline(always)]
fn four(y: v128, cb_cr: v128) -> (v128, v128, v128) {
    let shift = YUV_PREC as u32;
    let y0 = i32x4_add(i32x4_shl(y, shift), i32x4_splat(i32::from(YUV_RND)));
    let pair = |cb: i16, cr: i16| i16x8(cb, cr, cb, cr, cb, cr, cb, cr);
    let r = i32x4_shr(i32x4_add(y0, i32x4_dot_i16x8(cb_cr, pair(0, CR_CF))), shift);
    let g = i32x4_shr(
        i32x4_add(y0, i32x4_dot_i16x8(cb_cr, pair(C_G_CB_COEF_2, C_G_CR_COEF_1))),
        shift
    );
    let b = i32x4_shr(i32x4_add(y0, i32x4_dot_i16x8(cb_cr, pair(CB_CF, 0))), shift);
    (r, g, b)
}

/// Sixteen pixels' R, G and B, each as sixteen bytes clamped to `0..=255`.
#[inline(always)]
fn rgb16(y: &[i16; 16], cb: &[i16; 16], cr: &[i16; 16]) -> (v128, v128, v128) {
    let bias = i16x8_splat(128);
    let mut r16 = [i16x8_splat(0); 2];
    let mut g16 = [i16x8_splat(0); 2];
    let mut b16 = [i16x8_splat(0); 2];
    for half in 0..2 {
        let at = half * 8;
        let y = load8(&y[at..]);
        let cb = i16x8_sub(load8(&cb[at..]), bias);
        let cr = i16x8_sub(load8(&cr[at..]), bias);
        let (r_lo, g_lo, b_lo) = four(
            i32x4_extend_low_i16x8(y),
            i16x8_shuffle::<0, 8, 1, 9, 2, 10, 3, 11>(cb, cr)
        );
        let (r_hi, g_hi, b_hi) = four(
            i32x4_extend_high_i16x8(y),
            i16x8_shuffle::<4, 12, 5, 13, 6, 14, 7, 15>(cb, cr)
        );
        r16[half] = i16x8_narrow_i32x4(r_lo, r_hi);
        g16[half] = i16x8_narrow_i32x4(g_lo, g_hi);
        b16[half] = i16x8_narrow_i32x4(b_lo, b_hi);
    }
    (
        u8x16_narrow_i16x8(r16[0], r16[1]),
        u8x16_narrow_i16x8(g16[0], g16[1]),
        u8x16_narrow_i16x8(b16[0], b16[1])
    )
}

pub fn ycbcr_to_rgb_wasm(
    y: &[i16; 16], cb: &[i16; 16], cr: &[i16; 16], out: &mut [u8], offset: &mut usize
) {
    let (r, g, b) = rgb16(y, cb, cr);
    let out = &mut out[*offset..*offset + 48];
    // Output byte j of vector k is channel (16k + j) % 3 of pixel (16k + j) / 3: R and G
    // placed first, then B.
    let rg = i8x16_shuffle::<0, 16, 0, 1, 17, 0, 2, 18, 0, 3, 19, 0, 4, 20, 0, 5>(r, g);
    let v0 = i8x16_shuffle::<0, 1, 16, 3, 4, 17, 6, 7, 18, 9, 10, 19, 12, 13, 20, 15>(rg, b);
    let rg = i8x16_shuffle::<21, 0, 6, 22, 0, 7, 23, 0, 8, 24, 0, 9, 25, 0, 10, 26>(r, g);
    let v1 = i8x16_shuffle::<0, 21, 2, 3, 22, 5, 6, 23, 8, 9, 24, 11, 12, 25, 14, 15>(rg, b);
    let rg = i8x16_shuffle::<0, 11, 27, 0, 12, 28, 0, 13, 29, 0, 14, 30, 0, 15, 31, 0>(r, g);
    let v2 = i8x16_shuffle::<26, 1, 2, 27, 4, 5, 28, 7, 8, 29, 10, 11, 30, 13, 14, 31>(rg, b);
    store16(&mut out[0..], v0);
    store16(&mut out[16..], v1);
    store16(&mut out[32..], v2);
    *offset += 48;
}

pub fn ycbcr_to_rgba_wasm(
    y: &[i16; 16], cb: &[i16; 16], cr: &[i16; 16], out: &mut [u8], offset: &mut usize
) {
    let (r, g, b) = rgb16(y, cb, cr);
    let a = u8x16_splat(255);
    let out = &mut out[*offset..*offset + 64];
    let rg_lo = i8x16_shuffle::<0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23>(r, g);
    let rg_hi = i8x16_shuffle::<8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31>(r, g);
    let ba_lo = i8x16_shuffle::<0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23>(b, a);
    let ba_hi = i8x16_shuffle::<8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31>(b, a);
    store16(&mut out[0..], i16x8_shuffle::<0, 8, 1, 9, 2, 10, 3, 11>(rg_lo, ba_lo));
    store16(&mut out[16..], i16x8_shuffle::<4, 12, 5, 13, 6, 14, 7, 15>(rg_lo, ba_lo));
    store16(&mut out[32..], i16x8_shuffle::<0, 8, 1, 9, 2, 10, 3, 11>(rg_hi, ba_hi));
    store16(&mut out[48..], i16x8_shuffle::<4, 12, 5, 13, 6, 14, 7, 15>(rg_hi, ba_hi));
    *offset += 64;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::color_convert::scalar::{ycbcr_to_rgb_inner_16_scalar, ycbcr_to_rgba_inner_16_scalar};

    #[test]
    fn the_wasm_conversions_are_the_scalar_ones() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        // Samples in 0..=255, then (as a bad stream can give, out of the IDCT) any `i16`.
        let mut round = 0;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            round += 1;
            if round <= 10_000 * 48 { (state % 256) as i16 } else { state as u16 as i16 }
        };
        for _ in 0..20_000 {
            let (mut y, mut cb, mut cr) = ([0i16; 16], [0i16; 16], [0i16; 16]);
            for i in 0..16 {
                (y[i], cb[i], cr[i]) = (next(), next(), next());
            }
            let (mut scalar, mut wasm) = ([0u8; 64], [0u8; 64]);
            let (mut at_scalar, mut at_wasm) = (0, 0);
            ycbcr_to_rgb_inner_16_scalar::<false>(&y, &cb, &cr, &mut scalar, &mut at_scalar);
            ycbcr_to_rgb_wasm(&y, &cb, &cr, &mut wasm, &mut at_wasm);
            assert_eq!((scalar, at_scalar), (wasm, at_wasm));
            let (mut scalar, mut wasm) = ([0u8; 64], [0u8; 64]);
            let (mut at_scalar, mut at_wasm) = (0, 0);
            ycbcr_to_rgba_inner_16_scalar::<false>(&y, &cb, &cr, &mut scalar, &mut at_scalar);
            ycbcr_to_rgba_wasm(&y, &cb, &cr, &mut wasm, &mut at_wasm);
            assert_eq!((scalar, at_scalar), (wasm, at_wasm));
        }
    }
}
