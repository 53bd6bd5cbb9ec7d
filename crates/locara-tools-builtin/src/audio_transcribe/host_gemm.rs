//! The model's large matrix products, computed by the host where the app grants `models.run`
//! (its `matmul`), at native speed, instead of by gemm's WebAssembly kernels.
//!
//! The model stays the guest's: its weights are read and its layers run here, and only a
//! product's two matrices cross to the host and its result back. [`install`] replaces gemm's
//! `f32` entry point (candle's CPU backend multiplies through it) with [`multiply`], which
//! sends a product to the host when it is worth the round trip and computes it with gemm's
//! own kernels otherwise: a small one, one whose result is added to the destination, or any
//! once the host has refused (the app did not grant `models.run`, or this is not a sandbox).
//! A product the host failed to compute is computed here instead, so the result is never
//! missing; the host computes each element as its kernels do natively, so a transcript is the
//! one the model gives natively.

use std::sync::{
    Once,
    atomic::{AtomicBool, Ordering},
};

use gemm::Parallelism;
use gemm_f32::gemm::f32::{kernels, replace_gemm_fn};
use locara_pdk::models;

/// Set once the host refused a product: the rest are computed here, without asking.
static REFUSED: AtomicBool = AtomicBool::new(false);

/// The fewest multiply-adds a product must have to be sent: below it, the round trip (the
/// matrices copied into the request and out of it on the host, the product back, and a
/// thread hop on the host) costs more than it saves.
const MIN_MULTIPLY_ADDS: usize = 1 << 22;
/// The fewest multiply-adds per element sent or received: a product whose matrices are large
/// for the work they carry (the vocabulary projection of one token: one multiply-add per
/// weight) is cheaper to compute here than to copy. Whisper's attention products (59 per
/// element: each head's 1500 × 1500 scores from 64-wide queries and keys) are worth sending:
/// with the matrices copied whole, the media bench's window went from 1.57× native (the
/// threshold at 128, the attention in the guest) to 1.43–1.52×.
const MIN_MULTIPLY_ADDS_PER_ELEMENT: usize = 48;

/// Routes gemm's `f32` products through [`multiply`] from now on. Idempotent.
pub(crate) fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        #[allow(
            unsafe_code,
            reason = "replacing gemm's entry point is unsafe by its contract"
        )]
        // SAFETY: `multiply` computes what the kernels compute for every argument (it calls
        // them, or writes the host's product of the same matrices into the same elements).
        unsafe {
            replace_gemm_fn(multiply);
        }
    });
}

/// Whether an `m`×`k` by `k`×`n` product is worth sending to the host.
fn worth_sending(m: usize, n: usize, k: usize) -> bool {
    let multiply_adds = m.saturating_mul(n).saturating_mul(k);
    let elements = m
        .saturating_mul(k)
        .saturating_add(k.saturating_mul(n))
        .saturating_add(m.saturating_mul(n));
    multiply_adds >= MIN_MULTIPLY_ADDS
        && multiply_adds / elements.max(1) >= MIN_MULTIPLY_ADDS_PER_ELEMENT
}

/// gemm's `f32` entry point: `dst := alpha·dst + beta·lhs·rhs` (`dst` read only when
/// `read_dst`), each matrix given by a pointer to its first element and its column and row
/// strides in elements.
#[allow(
    clippy::too_many_arguments,
    reason = "gemm's entry point, whose signature this must have"
)]
#[allow(
    unsafe_code,
    reason = "gemm's entry point takes raw pointers and strides"
)]
unsafe fn multiply(
    m: usize,
    n: usize,
    k: usize,
    dst: *mut f32,
    dst_cs: isize,
    dst_rs: isize,
    read_dst: bool,
    lhs: *const f32,
    lhs_cs: isize,
    lhs_rs: isize,
    rhs: *const f32,
    rhs_cs: isize,
    rhs_rs: isize,
    alpha: f32,
    beta: f32,
    conj_dst: bool,
    conj_lhs: bool,
    conj_rhs: bool,
    parallelism: Parallelism,
) {
    // A plain product (what candle asks), large enough, while the host has not refused.
    if !read_dst && beta == 1.0 && worth_sending(m, n, k) && !REFUSED.load(Ordering::Relaxed) {
        // SAFETY: the caller's pointers and strides reach `m`×`k`, `k`×`n` and `m`×`n`
        // elements, as gemm's contract requires of it, and `dst` is written only by this call.
        match unsafe {
            send(
                m, n, k, dst, dst_cs, dst_rs, lhs, lhs_cs, lhs_rs, rhs, rhs_cs, rhs_rs,
            )
        } {
            Ok(()) => return,
            Err(error) if models::refused(&error) => REFUSED.store(true, Ordering::Relaxed),
            // The host tried and failed (it ran out of time, say): computed here instead.
            Err(_) => {}
        }
    }
    // SAFETY: the caller's arguments, as gemm's kernels take them.
    unsafe {
        kernels()(
            m,
            n,
            k,
            dst,
            dst_cs,
            dst_rs,
            read_dst,
            lhs,
            lhs_cs,
            lhs_rs,
            rhs,
            rhs_cs,
            rhs_rs,
            alpha,
            beta,
            conj_dst,
            conj_lhs,
            conj_rhs,
            parallelism,
        );
    }
}

/// How a matrix given by gemm's pointer and strides lies in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lies {
    /// Row by row, with no gap: its elements are one slice, in row-major order.
    Rows,
    /// Column by column, with no gap: one slice, in column-major order.
    Columns,
    /// Anything else (a view with gaps, reversed strides): it is gathered row by row.
    Scattered,
}

fn lies(rows: usize, cols: usize, rs: isize, cs: isize) -> Lies {
    let width = |n: usize| isize::try_from(n).unwrap_or(-1);
    if cs == 1 && rs == width(cols) {
        Lies::Rows
    } else if rs == 1 && cs == width(rows) {
        Lies::Columns
    } else {
        Lies::Scattered
    }
}

/// Asks the host for `dst := lhs·rhs`, each matrix sent (and the product received) as it lies
/// when it is one slice, gathered (scattered) element by element only otherwise.
///
/// # Safety
/// As [`multiply`]'s caller: the pointers and strides reach the matrices' elements, and
/// nothing else reads or writes `dst` during the call.
#[allow(
    clippy::too_many_arguments,
    reason = "gemm's matrices, as its entry point gives them"
)]
#[allow(
    unsafe_code,
    reason = "reads and writes matrices given by gemm's pointers and strides"
)]
unsafe fn send(
    m: usize,
    n: usize,
    k: usize,
    dst: *mut f32,
    dst_cs: isize,
    dst_rs: isize,
    lhs: *const f32,
    lhs_cs: isize,
    lhs_rs: isize,
    rhs: *const f32,
    rhs_cs: isize,
    rhs_rs: isize,
) -> Result<(), locara_pdk::ToolError> {
    let (mut lhs_rows, mut rhs_rows) = (Vec::new(), Vec::new());
    // SAFETY: the caller's matrices (this function's contract).
    let (lhs, rhs) = unsafe {
        (
            operand(lhs, m, k, lhs_rs, lhs_cs, &mut lhs_rows),
            operand(rhs, k, n, rhs_rs, rhs_cs, &mut rhs_rows),
        )
    };
    match lies(m, n, dst_rs, dst_cs) {
        layout @ (Lies::Rows | Lies::Columns) => {
            // SAFETY: `dst` lies as one slice of `m`×`n` elements, which nothing else touches.
            let out = unsafe { std::slice::from_raw_parts_mut(dst, m * n) };
            models::matmul(lhs, rhs, out, layout == Lies::Columns)
        }
        Lies::Scattered => {
            let mut product = vec![0.0; m * n];
            models::matmul(lhs, rhs, &mut product, false)?;
            for (i, row) in product.chunks_exact(n).enumerate() {
                for (j, &value) in row.iter().enumerate() {
                    // SAFETY: (i, j) is inside the `m`×`n` destination.
                    unsafe { *dst.offset(i as isize * dst_rs + j as isize * dst_cs) = value };
                }
            }
            Ok(())
        }
    }
}

/// The `rows`×`cols` matrix at `at` (row stride `rs`, column stride `cs`) as the host takes
/// it: the slice it lies in, or its elements gathered row by row into `gathered`.
///
/// # Safety
/// Every element `at + i·rs + j·cs` (`i < rows`, `j < cols`) must be readable for as long as
/// the matrix returned is used.
#[allow(
    unsafe_code,
    reason = "reads a matrix given by gemm's pointer and strides"
)]
unsafe fn operand<'a>(
    at: *const f32,
    rows: usize,
    cols: usize,
    rs: isize,
    cs: isize,
    gathered: &'a mut Vec<f32>,
) -> models::Matrix<'a> {
    let layout = lies(rows, cols, rs, cs);
    let data: &'a [f32] = match layout {
        // SAFETY: the matrix is one slice of `rows`×`cols` readable elements.
        Lies::Rows | Lies::Columns => unsafe { std::slice::from_raw_parts(at, rows * cols) },
        Lies::Scattered => {
            // SAFETY: the contract.
            *gathered = unsafe { gather(at, rows, cols, rs, cs) };
            gathered
        }
    };
    models::Matrix {
        rows,
        cols,
        data,
        column_major: layout == Lies::Columns,
    }
}

/// The `rows`×`cols` matrix at `at` (row stride `rs`, column stride `cs`), row-major.
///
/// # Safety
/// Every element `at + i·rs + j·cs` (`i < rows`, `j < cols`) must be readable.
#[allow(
    unsafe_code,
    reason = "reads a matrix given by gemm's pointer and strides"
)]
unsafe fn gather(at: *const f32, rows: usize, cols: usize, rs: isize, cs: isize) -> Vec<f32> {
    let mut out = Vec::with_capacity(rows * cols);
    for i in 0..rows {
        let row = i as isize * rs;
        if cs == 1 {
            // SAFETY: the row's `cols` elements are contiguous and readable (the contract).
            out.extend_from_slice(unsafe { std::slice::from_raw_parts(at.offset(row), cols) });
        } else {
            // SAFETY: each element is readable (the contract).
            out.extend((0..cols).map(|j| unsafe { *at.offset(row + j as isize * cs) }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_the_encoders_dense_products_and_keeps_the_rest() {
        // Whisper tiny's encoder on a 30 s window: 1500 frames of width 384, 1536 wide in the
        // MLP; its second convolution's unfolded input (1500 × 384·3).
        assert!(worth_sending(1500, 384, 384));
        assert!(worth_sending(1500, 1536, 384));
        assert!(worth_sending(1500, 384, 1536));
        assert!(worth_sending(1500, 384, 1152));
        // Attention, per head: scores (64 multiply-adds for each element of a 1500 × 1500
        // result) and their product with the values.
        assert!(worth_sending(1500, 1500, 64));
        assert!(worth_sending(1500, 64, 1500));
        // The decoder, one token at a time: the vocabulary projection and a layer's product.
        assert!(!worth_sending(1, 51864, 384));
        assert!(!worth_sending(1, 384, 384));
        assert!(!worth_sending(0, 0, 0));
    }

    #[test]
    fn tells_how_a_matrix_lies() {
        assert_eq!(lies(3, 2, 2, 1), Lies::Rows);
        assert_eq!(lies(3, 2, 1, 3), Lies::Columns);
        // A view of two columns of a wider matrix, and a reversed one.
        assert_eq!(lies(3, 2, 4, 1), Lies::Scattered);
        assert_eq!(lies(3, 2, -2, 1), Lies::Scattered);
    }

    #[test]
    fn gathers_a_strided_matrix_row_major() {
        // A 3×2 matrix stored transposed (column-major): element (i, j) at i + 3·j.
        let stored = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        #[allow(unsafe_code, reason = "the function under test reads through strides")]
        // SAFETY: every (i, j) with i < 3, j < 2 reaches i + 3·j < 6.
        let rows = unsafe { gather(stored.as_ptr(), 3, 2, 1, 3) };
        assert_eq!(rows, [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        // Row-major with a row stride wider than the row (a view of the first two columns).
        // SAFETY: (i, j) with i < 2, j < 2 reaches 3·i + j < 6.
        #[allow(unsafe_code, reason = "as above")]
        let view = unsafe { gather(stored.as_ptr(), 2, 2, 3, 1) };
        assert_eq!(view, [1.0, 2.0, 4.0, 5.0]);
    }
}
