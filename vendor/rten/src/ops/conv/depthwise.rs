use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use rten_base::unroll::unroll_loop;
use rten_tensor::prelude::*;
use rten_tensor::{AssumeInit, NdTensor, NdTensorView, NdTensorViewMut};
use smallvec::SmallVec;

use crate::buffer_pool::{AutoReturn, BufferPool};

/// Calculate the output coordinate range for which all input / output
/// coordinates are valid when updating a row of output using:
///
/// ```text
/// for out_x in min_out_x..max_out_x {
///   out_row[out_x] += in_row[out_x * stride + k_x * dilation - pad_left] * kernel_row[k_x]
/// }
/// ```
///
/// Where `in_row` is the un-padded input row of width `in_w` and `out_row` is
/// an output row of width `out_w`.
///
/// In other words, we want to find the minimum and maximum values of `out_x`
/// such that:
///
/// - out_x * stride + k_x * dilation - pad_left >= 0
/// - out_x * stride + k_x * dilation - pad_left <= in_w
/// - out_x >= 0
/// - out_x <= out_w
fn min_max_out_x_coords(
    k_x: usize,
    in_w: usize,
    pad_left: usize,
    stride: usize,
    dilation: usize,
    out_w: usize,
) -> (usize, usize) {
    let min_out_x = pad_left
        .saturating_sub(k_x * dilation)
        .div_ceil(stride)
        .min(out_w);
    let max_out_x = (in_w + pad_left)
        .saturating_sub(k_x * dilation)
        .div_ceil(stride)
        .min(out_w);
    (min_out_x, max_out_x)
}

/// Convolution parameters passed to the kernel which are constant across
/// all calls within a single depthwise conv operation.
struct ConvParams<'a> {
    kernel_h: usize,
    stride_h: usize,
    stride_w: usize,
    dilation_y: usize,
    pad_top: usize,
    in_h: usize,
    in_row_len: usize,
    in_row_stride: usize,

    /// Precomputed map of kernel X coordinate to input and output row
    /// range.
    col_range_for_kernel_x: &'a [(Range<usize>, Range<usize>)],
}

/// Trait for architecture and data-type specific kernels for depthwise
/// convolution.
trait DepthwiseConvKernel<X, W, Y> {
    /// Compute one output row of the depthwise convolution.
    ///
    /// `image_chan` and `kernel_chan` contain the input data and weights for
    /// the channel that corresponds to the output row.
    fn compute_row(
        &self,
        params: &ConvParams,
        out_row: &mut [MaybeUninit<Y>],
        out_y: usize,
        out_init: Y,
        image_chan: &[X],
        kernel_chan: NdTensorView<W, 2>,
        input_zero: X,
        kernel_zero: W,
    );
}

struct GenericDepthwiseConvKernel {}

impl DepthwiseConvKernel<f32, f32, f32> for GenericDepthwiseConvKernel {
    fn compute_row(
        &self,
        params: &ConvParams,
        out_row: &mut [MaybeUninit<f32>],
        out_y: usize,
        out_init: f32,
        image_chan: &[f32],
        kernel_chan: NdTensorView<f32, 2>,
        _input_zero: f32,
        _kernel_zero: f32,
    ) {
        let kernel_view = kernel_chan.weakly_checked_view();

        // Initialize output row.
        for x in out_row.iter_mut() {
            x.write(out_init);
        }
        let out_row: &mut [f32] = unsafe { out_row.assume_init() };

        // LOCARA-PATCH: unit stride has its own kernel (below).
        if params.stride_w == 1 {
            unit_stride::compute_row(params, out_row, out_y, image_chan, &kernel_chan);
            return;
        }

        for k_y in 0..params.kernel_h {
            let in_y = out_y * params.stride_h + k_y * params.dilation_y;
            if in_y < params.pad_top || in_y >= params.in_h + params.pad_top {
                continue;
            }

            let in_row_y = in_y - params.pad_top;
            let in_row = &image_chan[in_row_y * params.in_row_stride..][..params.in_row_len];

            for (k_x, (in_range, out_range)) in params.col_range_for_kernel_x.iter().enumerate() {
                let dest = &mut out_row[out_range.clone()];
                let src = &in_row[in_range.clone()];
                let scale = kernel_view[[k_y, k_x]];

                let src_els = src.len().div_ceil(params.stride_w);
                debug_assert!(src_els == dest.len());

                unroll_loop!(0..src_els, i, 4, {
                    unsafe {
                        *dest.get_unchecked_mut(i) +=
                            *src.get_unchecked(i * params.stride_w) * scale;
                    }
                });
            }
        }
    }
}

impl DepthwiseConvKernel<i8, u8, i32> for GenericDepthwiseConvKernel {
    fn compute_row(
        &self,
        params: &ConvParams,
        out_row: &mut [MaybeUninit<i32>],
        out_y: usize,
        out_init: i32,
        image_chan: &[i8],
        kernel_chan: NdTensorView<u8, 2>,
        input_zero: i8,
        kernel_zero: u8,
    ) {
        let kernel_view = kernel_chan.weakly_checked_view();
        let input_zero = input_zero as i32;
        let kernel_zero = kernel_zero as i32;

        // Initialize output row.
        for x in out_row.iter_mut() {
            x.write(out_init);
        }
        let out_row: &mut [i32] = unsafe { out_row.assume_init() };

        for k_y in 0..params.kernel_h {
            let in_y = out_y * params.stride_h + k_y * params.dilation_y;
            if in_y < params.pad_top || in_y >= params.in_h + params.pad_top {
                continue;
            }

            let in_row_y = in_y - params.pad_top;
            let in_row = &image_chan[in_row_y * params.in_row_stride..][..params.in_row_len];

            for (k_x, (in_range, out_range)) in params.col_range_for_kernel_x.iter().enumerate() {
                let dest = &mut out_row[out_range.clone()];
                let src = &in_row[in_range.clone()];
                let scale = kernel_view[[k_y, k_x]] as i32 - kernel_zero;

                let src_els = src.len().div_ceil(params.stride_w);
                debug_assert!(src_els == dest.len());

                unroll_loop!(0..src_els, i, 4, {
                    unsafe {
                        *dest.get_unchecked_mut(i) +=
                            (*src.get_unchecked(i * params.stride_w) as i32 - input_zero) * scale;
                    }
                });
            }
        }
    }
}

/// Compute depthwise convolution for the block of channels from `input`
/// specified by `chan_range` into `output`.
///
/// Convolutions where the group count is equal to the input and output
/// channel count are referred to as _depthwise_. These use a different
/// implementation than general convolutions for efficiency.
///
/// `X`, `W` and `Y` are the input, weight and output data types respectively.
pub struct DepthwiseConvExecutor<X: Copy, W, Y: Copy + Default> {
    kernel: Box<dyn DepthwiseConvKernel<X, W, Y> + Sync>,
}

impl<X: Copy + Default + Sync, W: Copy + Default + Sync, Y: Copy + Default>
    DepthwiseConvExecutor<X, W, Y>
{
    /// Compute depthwise convolution for the block of channels from `input`
    /// specified by `chan_range` into `output`.
    ///
    /// `col_range_for_kernel_x` is a precomputed map of kernel X coordinate to
    /// `(in_range, out_range)` of column ranges that are valid for the input and
    /// output.
    ///
    /// When this function returns, all elements of `output` will have been
    /// initialized.
    fn depthwise_conv_2d_block(
        &self,
        mut output: NdTensorViewMut<MaybeUninit<Y>, 3>, // C, H, W
        chan_range: Range<usize>,
        input: NdTensorView<X, 3>,  // C, H, W
        kernel: NdTensorView<W, 4>, // C, _, Kh, Kw
        bias: Option<NdTensorView<Y, 1>>,
        padding: [usize; 4],
        strides: [usize; 2],
        dilations: [usize; 2],
        col_range_for_kernel_x: &[(Range<usize>, Range<usize>)],
        input_zero: Option<X>,
        kernel_zero: Option<&[W]>,
    ) {
        debug_assert_eq!(input.stride(2), 1, "last dim of input is not contiguous");
        debug_assert_eq!(output.stride(2), 1, "last dim of output is not contiguous");

        let [_, out_h, _out_w] = output.shape();
        let [_, _, k_h, _k_w] = kernel.shape();
        let [_, in_h, _in_w] = input.shape();
        let [stride_h, stride_w] = strides;
        let [pad_top, _pad_left, _pad_bottom, _pad_right] = padding;
        let [dilation_y, _dilation_x] = dilations;

        let conv_params = ConvParams {
            stride_h,
            stride_w,
            kernel_h: k_h,
            pad_top,
            dilation_y,
            in_h,
            in_row_stride: input.stride(1),
            in_row_len: input.size(2),
            col_range_for_kernel_x,
        };

        let input_zero = input_zero.unwrap_or_default();
        for c in chan_range.clone() {
            let kernel_view = kernel.slice([c, 0]);

            let mut out_chan = output.slice_mut([c - chan_range.start]);
            let out_row_stride = out_chan.stride(0);
            let out_row_len = out_chan.size(1);
            let out_chan_data = out_chan.data_mut().unwrap();

            let in_chan = input.slice([c]);
            let in_chan_data = in_chan.data().unwrap();

            let init_value = if let Some(bias) = bias {
                bias[c]
            } else {
                Y::default()
            };

            let kernel_zero = kernel_zero.map(|kz| kz[c]).unwrap_or_default();

            for out_y in 0..out_h {
                // Here and in the `compute_row` implementation we use manual
                // slicing of the input data rather than tensor `slice` methods
                // for efficiency.
                let out_row = &mut out_chan_data[out_y * out_row_stride..][..out_row_len];
                self.kernel.compute_row(
                    &conv_params,
                    out_row,
                    out_y,
                    init_value,
                    in_chan_data,
                    kernel_view,
                    input_zero,
                    kernel_zero,
                );
            }
        }
    }

    /// Compute a depthwise convolution of a 2D image.
    pub fn depthwise_conv_2d(
        &self,
        pool: &BufferPool,
        input: &NdTensorView<X, 4>,
        kernel: &NdTensorView<W, 4>,
        bias: Option<NdTensorView<Y, 1>>,
        padding: [usize; 4],
        strides: [usize; 2],
        dilations: [usize; 2],
        out_hw: [usize; 2],
        input_zero: Option<X>,
        kernel_zero: Option<&[W]>,
    ) -> NdTensor<Y, 4> {
        let [batch, _in_c, _in_h, in_w]: [usize; 4] = input.shape();
        let [out_c, _, _k_h, k_w]: [usize; 4] = kernel.shape();
        let [_pad_top, pad_left, _pad_bottom, _pad_right] = padding;
        let [_stride_h, stride_w] = strides;
        let [_dilation_y, dilation_x] = dilations;
        let [out_h, out_w] = out_hw;

        let mut output = NdTensor::uninit_in(pool, [batch, out_c, out_h, out_w]);

        // `conv_2d_depthwise_block` assumes contiguous last dimension.
        let input = input.to_contiguous_in(pool).auto_return(pool);

        // Map of kernel X position to `(in_range, out_range)` of column ranges that
        // are used in the inner loop.
        let col_range_for_kernel_x: SmallVec<[_; 7]> = (0..k_w)
            .map(|k_x| {
                let (min_out_x, max_out_x) =
                    min_max_out_x_coords(k_x, in_w, pad_left, stride_w, dilation_x, out_w);

                // If the output range is empty, the input range must be too. Exit
                // early in case `max_out_x` is zero.
                //
                // This can happen if all the input coordinates which this kernel
                // column would be multiplied with are part of the padding region.
                if min_out_x == max_out_x {
                    return (0..0, 0..0);
                }

                let min_in_x = min_out_x * stride_w + k_x * dilation_x - pad_left;
                let max_in_x = (max_out_x - 1) * stride_w + k_x * dilation_x - pad_left + 1;

                (min_in_x..max_in_x, min_out_x..max_out_x)
            })
            .collect();

        let n_init = AtomicUsize::new(0);
        for n in 0..batch {
            let mut out_chans = output.slice_mut(n);
            let input = input.slice(n);

            out_chans
                .axis_iter_mut(0)
                .into_par_iter()
                .enumerate()
                .for_each(|(out_chan, mut out_chans)| {
                    let mut out_chans = out_chans
                        .reshaped_mut([1, out_chans.size(0), out_chans.size(1)])
                        .unwrap();
                    self.depthwise_conv_2d_block(
                        out_chans.view_mut(),
                        out_chan..out_chan + 1,
                        input,
                        kernel.view(),
                        bias,
                        padding,
                        strides,
                        dilations,
                        &col_range_for_kernel_x,
                        input_zero,
                        kernel_zero,
                    );

                    n_init.fetch_add(out_chans.len(), Ordering::SeqCst);
                });
        }

        // Safety: We initialized all output rows
        assert!(n_init.load(Ordering::SeqCst) == output.len());
        unsafe { output.assume_init() }
    }
}

impl Default for DepthwiseConvExecutor<f32, f32, f32> {
    fn default() -> Self {
        DepthwiseConvExecutor {
            kernel: Box::new(GenericDepthwiseConvKernel {}),
        }
    }
}

impl Default for DepthwiseConvExecutor<i8, u8, i32> {
    fn default() -> Self {
        DepthwiseConvExecutor {
            kernel: Box::new(GenericDepthwiseConvKernel {}),
        }
    }
}

/// LOCARA-PATCH: one output row of an `f32` depthwise convolution with a horizontal stride of 1.
///
/// rten 0.27 adds each tap of the kernel to the whole output row in turn: for a 5×5 kernel,
/// 25 passes over the row, each loading and storing it. Here the row's interior (the columns
/// every tap reaches) is computed a block of columns at a time, the block's sums held in
/// vector registers across all the taps and stored once; natively the blocks are as wide as
/// the widest vectors the CPU has (AVX-512 or AVX, found at run time, with no fused
/// multiply-add). The interior's last block overlaps the one before it rather than leaving a
/// remainder. The few columns at the edges, where padding leaves some taps out, are summed
/// one by one. Every element still starts from the row's initial value and adds
/// `input × weight` for the taps in rten's order (the kernel's rows, then its columns), as a
/// multiply and then an add, so the output is bit for bit rten's.
mod unit_stride {
    use std::borrow::Cow;

    use rten_tensor::NdTensorView;
    use rten_tensor::prelude::*;
    use smallvec::SmallVec;

    use super::ConvParams;

    /// A column of the kernel that meets the input somewhere: its index, and the output
    /// columns it reaches, `out_start..out_end`; output column `x` reads input column
    /// `x - out_start + in_start`.
    #[derive(Clone, Copy)]
    struct Tap {
        k_x: usize,
        in_start: usize,
        out_start: usize,
        out_end: usize,
    }

    /// What one row needs: the input rows the kernel's rows fall on (the others are padding),
    /// each with that kernel row's weights, and the kernel's columns that meet the input.
    struct Row<'a> {
        rows: SmallVec<[(&'a [f32], &'a [f32]); 8]>,
        taps: SmallVec<[Tap; 8]>,
    }

    /// Computes `out_row`, already filled with the row's initial value.
    pub(super) fn compute_row(
        params: &ConvParams,
        out_row: &mut [f32],
        out_y: usize,
        image_chan: &[f32],
        kernel: &NdTensorView<f32, 2>,
    ) {
        debug_assert_eq!(params.stride_w, 1);
        let k_w = kernel.size(1);
        let weights: Cow<[f32]> = match kernel.data() {
            Some(data) => Cow::Borrowed(data),
            None => Cow::Owned(kernel.iter().copied().collect()),
        };
        let mut row = Row {
            rows: SmallVec::new(),
            taps: SmallVec::new(),
        };
        for k_y in 0..params.kernel_h {
            let in_y = out_y * params.stride_h + k_y * params.dilation_y;
            if in_y < params.pad_top || in_y >= params.in_h + params.pad_top {
                continue;
            }
            let in_row_y = in_y - params.pad_top;
            let in_row = &image_chan[in_row_y * params.in_row_stride..][..params.in_row_len];
            row.rows.push((in_row, &weights[k_y * k_w..][..k_w]));
        }
        // A kernel column that only ever meets padding adds nothing anywhere; every other one
        // reaches the columns `lo..hi`.
        let (mut lo, mut hi) = (0, out_row.len());
        for (k_x, (in_range, out_range)) in params.col_range_for_kernel_x.iter().enumerate() {
            if out_range.is_empty() {
                continue;
            }
            debug_assert_eq!(in_range.len(), out_range.len());
            lo = lo.max(out_range.start);
            hi = hi.min(out_range.end);
            row.taps.push(Tap {
                k_x,
                in_start: in_range.start,
                out_start: out_range.start,
                out_end: out_range.end,
            });
        }
        if row.rows.is_empty() || row.taps.is_empty() {
            return;
        }
        let len = out_row.len();
        let alone = if lo < hi && row.interior(lo, &mut out_row[..hi]) {
            (0..lo).chain(hi..len)
        } else {
            (0..len).chain(len..len)
        };
        for x in alone {
            row.element(x, out_row);
        }
    }

    impl Row<'_> {
        /// Column `x` on its own, skipping the taps that do not reach it.
        fn element(&self, x: usize, out_row: &mut [f32]) {
            let mut sum = out_row[x];
            for &(in_row, weights) in &self.rows {
                for tap in &self.taps {
                    if (tap.out_start..tap.out_end).contains(&x) {
                        sum += in_row[x - tap.out_start + tap.in_start] * weights[tap.k_x];
                    }
                }
            }
            out_row[x] = sum;
        }

        /// The columns `lo..` of `out_row`, which every tap reaches, in blocks when there are
        /// enough of them; false, computing nothing, when there are too few.
        fn interior(&self, lo: usize, out_row: &mut [f32]) -> bool {
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has AVX-512F.
                    return unsafe { self.blocks_avx512(lo, out_row) };
                }
                if std::arch::is_x86_feature_detected!("avx") {
                    // SAFETY: the CPU has AVX.
                    return unsafe { self.blocks_avx(lo, out_row) };
                }
            }
            self.blocks::<16>(lo, out_row) || self.blocks::<4>(lo, out_row)
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f")]
        unsafe fn blocks_avx512(&self, lo: usize, out_row: &mut [f32]) -> bool {
            self.blocks::<64>(lo, out_row) || self.blocks::<16>(lo, out_row)
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx")]
        unsafe fn blocks_avx(&self, lo: usize, out_row: &mut [f32]) -> bool {
            self.blocks::<32>(lo, out_row) || self.blocks::<8>(lo, out_row)
        }

        /// The columns `lo..` in blocks of `B` (four vectors of sums at the widths above, and
        /// `simd128` in wasm), the last block overlapping the one before it; false, computing
        /// nothing, when there are fewer than `B`.
        #[inline(always)]
        fn blocks<const B: usize>(&self, lo: usize, out_row: &mut [f32]) -> bool {
            let hi = out_row.len();
            if hi - lo < B {
                return false;
            }
            // The last block first, while its columns still hold their initial value: every
            // block reads its columns' initial values, and a column two blocks compute gets
            // the same sum from both.
            let last = hi - B;
            let tail = self.block::<B>(last, out_row);
            let mut x0 = lo;
            while x0 < last {
                let sums = self.block::<B>(x0, out_row);
                out_row[x0..x0 + B].copy_from_slice(&sums);
                x0 += B;
            }
            out_row[last..].copy_from_slice(&tail);
            true
        }

        /// The sums of columns `x0..x0 + B`.
        #[inline(always)]
        fn block<const B: usize>(&self, x0: usize, out_row: &[f32]) -> [f32; B] {
            let mut sums: [f32; B] = out_row[x0..x0 + B].try_into().unwrap();
            for &(in_row, weights) in &self.rows {
                for tap in &self.taps {
                    let scale = weights[tap.k_x];
                    let src: &[f32; B] = in_row[x0 - tap.out_start + tap.in_start..][..B]
                        .try_into()
                        .unwrap();
                    for j in 0..B {
                        sums[j] += src[j] * scale;
                    }
                }
            }
            sums
        }
    }
}

// nb. Tests for depthwise conv are implemented in the main `conv.rs` module.
