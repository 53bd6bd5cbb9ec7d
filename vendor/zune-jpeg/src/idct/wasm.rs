/*
 * Copyright (c) 2023.
 *
 * This software is free software;
 *
 * You can redistribute it or modify it under terms of the MIT, Apache License or Zlib license
 */
//! LOCARA-PATCH: WebAssembly SIMD (`simd128`) IDCT, added to this vendored copy.
//!
//! A port of `neon.rs` (itself a direct translation of the scalar IDCT, bit identical to it):
//! the same arithmetic, in the same order, on `i32x4` vectors. A pass works on four columns of
//! all eight rows at a time (the lanes are independent), which keeps it within x86's sixteen
//! vector registers once Wasmtime compiles it; a whole row per pass, as `neon.rs` does with
//! its thirty-two, spilled most of the block to the stack. Each pass is followed by an 8×8
//! transpose, and the result is narrowed to `i16` with saturation and clamped to `0..=255`.
#![cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#![allow(clippy::cast_possible_truncation)]

use core::arch::wasm32::*;

use crate::idct::scalar::idct_int;

const SCALE_BITS: i32 = 512 + 65536 + (128 << 17);

/// Four `i32`s from `src[..4]`.
#[inline(always)]
fn load4(src: &[i32]) -> v128 {
    let src = &src[..4];
    // SAFETY: `src` holds four `i32`s (16 bytes); `v128_load` has no alignment requirement.
    unsafe { v128_load(src.as_ptr().cast()) }
}

/// Stores eight `i16` lanes at `out[pos..pos + 8]`.
///
/// # Safety
/// `pos + 8 <= out.len()`.
#[inline(always)]
unsafe fn store(out: &mut [i16], pos: usize, value: v128) {
    // SAFETY: the caller says `out[pos..pos + 8]` (16 bytes) is in bounds; `v128_store` has no
    // alignment requirement.
    unsafe { v128_store(out.as_mut_ptr().add(pos).cast(), value) }
}

/// Transposes the 4×4 block of `i32`s whose rows are `v`.
#[inline(always)]
fn transpose4([v0, v1, v2, v3]: [v128; 4]) -> [v128; 4] {
    let t0 = i32x4_shuffle::<0, 4, 1, 5>(v0, v1); // a0 b0 a1 b1
    let t1 = i32x4_shuffle::<2, 6, 3, 7>(v0, v1); // a2 b2 a3 b3
    let t2 = i32x4_shuffle::<0, 4, 1, 5>(v2, v3); // c0 d0 c1 d1
    let t3 = i32x4_shuffle::<2, 6, 3, 7>(v2, v3); // c2 d2 c3 d3
    [
        i64x2_shuffle::<0, 2>(t0, t2),
        i64x2_shuffle::<1, 3>(t0, t2),
        i64x2_shuffle::<0, 2>(t1, t3),
        i64x2_shuffle::<1, 3>(t1, t3),
    ]
}

/// One pass of the scalar IDCT's arithmetic over four of the block's columns at once: `r[i]`
/// holds four lanes of row `i`, `bias` is added before the final shift right by `SHIFT`. The
/// eight rows of four lanes (not eight) keep a pass within the sixteen vector registers.
#[inline(always)]
fn pass<const SHIFT: u32>(r: [v128; 8], bias: i32) -> [v128; 8] {
    let mul = |v: v128, c: i32| i32x4_mul(v, i32x4_splat(c));
    let (add, sub) = (i32x4_add, i32x4_sub);
    let bias = i32x4_splat(bias);
    let [row0, row1, row2, row3, row4, row5, row6, row7] = r;

    // even part
    let p1 = mul(add(row2, row6), 2217);
    let t2 = add(p1, mul(row6, -7567));
    let t3 = add(p1, mul(row2, 3135));
    let t0 = i32x4_shl(add(row0, row4), 12);
    let t1 = i32x4_shl(sub(row0, row4), 12);
    let x0 = add(add(t0, t3), bias);
    let x3 = add(sub(t0, t3), bias);
    let x1 = add(add(t1, t2), bias);
    let x2 = add(sub(t1, t2), bias);

    // odd part
    let p3 = add(row7, row3);
    let p4 = add(row5, row1);
    let p1 = add(row7, row1);
    let p2 = add(row5, row3);
    let p5 = mul(add(p3, p4), 4816);
    let p1 = add(p5, mul(p1, -3685));
    let p2 = add(p5, mul(p2, -10497));
    let p3 = mul(p3, -8034);
    let p4 = mul(p4, -1597);
    let t3 = add(mul(row1, 6149), add(p1, p4));
    let t2 = add(mul(row3, 12586), add(p2, p3));
    let t1 = add(mul(row5, 8410), add(p2, p4));
    let t0 = add(mul(row7, 1223), add(p1, p3));

    [
        i32x4_shr(add(x0, t3), SHIFT),
        i32x4_shr(add(x1, t2), SHIFT),
        i32x4_shr(add(x2, t1), SHIFT),
        i32x4_shr(add(x3, t0), SHIFT),
        i32x4_shr(sub(x3, t0), SHIFT),
        i32x4_shr(sub(x2, t1), SHIFT),
        i32x4_shr(sub(x1, t2), SHIFT),
        i32x4_shr(sub(x0, t3), SHIFT),
    ]
}

/// The 8×8 block held as its left and right halves (`left[i]` is row `i`'s columns 0..4),
/// transposed: each 4×4 quarter transposed, the top-right and bottom-left quarters swapped.
#[inline(always)]
fn transpose(left: [v128; 8], right: [v128; 8]) -> ([v128; 8], [v128; 8]) {
    let top_left = transpose4([left[0], left[1], left[2], left[3]]);
    let bottom_left = transpose4([left[4], left[5], left[6], left[7]]);
    let top_right = transpose4([right[0], right[1], right[2], right[3]]);
    let bottom_right = transpose4([right[4], right[5], right[6], right[7]]);
    (
        [
            top_left[0], top_left[1], top_left[2], top_left[3],
            top_right[0], top_right[1], top_right[2], top_right[3],
        ],
        [
            bottom_left[0], bottom_left[1], bottom_left[2], bottom_left[3],
            bottom_right[0], bottom_right[1], bottom_right[2], bottom_right[3],
        ],
    )
}

pub fn idct_wasm(in_vector: &mut [i32; 64], out_vector: &mut [i16], stride: usize) {
    // The block's eight rows must fit in `out_vector`; in a bad image they may not, and the
    // scalar IDCT writes what fits. Checked once, before any arithmetic: a check per store
    // would be a branch per row, and Wasmtime's compiler computes a pure value where it is
    // used, so the block's arithmetic was compiled once per branch (six times over).
    if stride.checked_mul(7).and_then(|at| at.checked_add(8)).is_none_or(|end| end > out_vector.len()) {
        return idct_int(in_vector, out_vector, stride);
    }
    // When every AC term is zero, the block is its DC term scaled, level shifted and clamped.
    let mut ac = v128_and(load4(&in_vector[..]), i32x4(0, -1, -1, -1));
    for at in (4..64).step_by(4) {
        ac = v128_or(ac, load4(&in_vector[at..]));
    }
    if !v128_any_true(ac) {
        let coeff = ((in_vector[0] + 4 + 1024) >> 3).clamp(0, 255) as i16;
        let value = i16x8_splat(coeff);
        for i in 0..8 {
            // SAFETY: i * stride + 8 <= 7 * stride + 8 <= out_vector.len(), checked above.
            unsafe { store(out_vector, i * stride, value) };
        }
        return;
    }

    let mut left = [i32x4_splat(0); 8];
    let mut right = [i32x4_splat(0); 8];
    for i in 0..8 {
        left[i] = load4(&in_vector[i * 8..]);
        right[i] = load4(&in_vector[i * 8 + 4..]);
    }
    // rows
    let (left, right) = transpose(pass::<10>(left, 512), pass::<10>(right, 512));
    // columns
    let (left, right) = transpose(pass::<17>(left, SCALE_BITS), pass::<17>(right, SCALE_BITS));

    for i in 0..8 {
        // Narrowed to `i16` with saturation, then clamped to `0..=255`.
        let packed = i16x8_narrow_i32x4(left[i], right[i]);
        let clamped = i16x8_min(i16x8_max(packed, i16x8_splat(0)), i16x8_splat(255));
        // SAFETY: i * stride + 8 <= 7 * stride + 8 <= out_vector.len(), checked above.
        unsafe { store(out_vector, i * stride, clamped) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator, so the test needs no dependency.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    fn same_as_scalar(coeff: [i32; 64], stride: usize) {
        let mut scalar = vec![0i16; stride * 8];
        let mut wasm = vec![0i16; stride * 8];
        let (mut scalar_in, mut wasm_in) = (coeff, coeff);
        idct_int(&mut scalar_in, &mut scalar, stride);
        idct_wasm(&mut wasm_in, &mut wasm, stride);
        assert_eq!(scalar, wasm, "{coeff:?}");
    }

    #[test]
    fn the_wasm_idct_is_the_scalar_idct() {
        // One AC term: the all-zero shortcut must see each of them.
        for k in 1..64 {
            let mut coeff = [0i32; 64];
            coeff[0] = 100;
            coeff[k] = -37;
            same_as_scalar(coeff, 8);
        }
        let mut state = 0x9e37_79b9_7f4a_7c15;
        for case in 0..20_000 {
            let mut coeff = [0i32; 64];
            // Sparse blocks like real ones, dense ones, DC-only ones and extreme ones.
            let density = [2, 8, 64, 0][case % 4];
            let range = [64, 1024, 4096, 32768][(case / 4) % 4];
            coeff[0] = (next(&mut state) % (2 * range) as u64) as i32 - range;
            for c in coeff.iter_mut().skip(1) {
                if density > 0 && next(&mut state) % 64 < density {
                    *c = (next(&mut state) % (2 * range) as u64) as i32 - range;
                }
            }
            same_as_scalar(coeff, 8 + (case % 3) * 8);
        }
    }
}
