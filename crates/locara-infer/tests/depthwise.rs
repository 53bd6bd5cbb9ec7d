//! rten's depthwise convolution, as patched in `vendor/rten` (`LOCARA-PATCH.md`), against the
//! definition computed in rten's own order, bit for bit: the patch changes how the sums are
//! scheduled, never what is added or in which order, so `ocr` reads the same text natively and
//! in the guest as with the published crate.

use rten::BufferPool;
use rten::ops::{Padding, conv};
use rten_tensor::prelude::*;
use rten_tensor::{NdTensor, Tensor};

/// A small deterministic generator: the same cases on every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % n
    }

    /// A value in about [-1, 1] with low bits set, so that rounding differs with the order.
    fn value(&mut self) -> f32 {
        self.below(2001) as f32 / 1000.0 - 1.0 + self.below(7) as f32 * 1e-7
    }
}

struct Case {
    channels: usize,
    in_hw: [usize; 2],
    kernel_hw: [usize; 2],
    /// Top, left, bottom, right.
    padding: [usize; 4],
    strides: [usize; 2],
    dilations: [usize; 2],
}

/// Each output element: the bias, then `input × weight` added for the kernel's rows and, within
/// each, its columns, skipping taps that fall on padding; a multiply, then an add.
fn reference(
    case: &Case,
    input: &NdTensor<f32, 4>,
    kernel: &NdTensor<f32, 4>,
    bias: &[f32],
) -> Vec<f32> {
    let [in_h, in_w] = case.in_hw;
    let [k_h, k_w] = case.kernel_hw;
    let [top, left, bottom, right] = case.padding;
    let [s_y, s_x] = case.strides;
    let [d_y, d_x] = case.dilations;
    let out_h = (in_h + top + bottom - (d_y * (k_h - 1) + 1)) / s_y + 1;
    let out_w = (in_w + left + right - (d_x * (k_w - 1) + 1)) / s_x + 1;
    let mut out = Vec::with_capacity(case.channels * out_h * out_w);
    for c in 0..case.channels {
        for y in 0..out_h {
            for x in 0..out_w {
                let mut sum = bias[c];
                for ky in 0..k_h {
                    let Some(iy) = (y * s_y + ky * d_y)
                        .checked_sub(top)
                        .filter(|&iy| iy < in_h)
                    else {
                        continue;
                    };
                    for kx in 0..k_w {
                        let Some(ix) = (x * s_x + kx * d_x)
                            .checked_sub(left)
                            .filter(|&ix| ix < in_w)
                        else {
                            continue;
                        };
                        sum += input[[0, c, iy, ix]] * kernel[[c, 0, ky, kx]];
                    }
                }
                out.push(sum);
            }
        }
    }
    out
}

#[test]
fn depthwise_convolution_equals_its_definition_bit_for_bit() {
    let mut rng = Lcg(0x10ca7a);
    let pool = BufferPool::new();
    let mut cases = vec![
        // The shapes of PP-OCRv4's recognition model: 3×3 and 5×5, stride 1 and (2, 1), on rows
        // wide enough for the patch's blocks of columns.
        Case {
            channels: 4,
            in_hw: [12, 330],
            kernel_hw: [5, 5],
            padding: [2, 2, 2, 2],
            strides: [1, 1],
            dilations: [1, 1],
        },
        Case {
            channels: 3,
            in_hw: [24, 161],
            kernel_hw: [3, 3],
            padding: [1, 1, 1, 1],
            strides: [2, 1],
            dilations: [1, 1],
        },
    ];
    while cases.len() < 402 {
        let (k_h, k_w) = (1 + rng.below(7), 1 + rng.below(7));
        let dilations = [1 + rng.below(2), 1 + rng.below(3)];
        let padding = [rng.below(4), rng.below(4), rng.below(4), rng.below(4)];
        let in_hw = [1 + rng.below(8), 1 + rng.below(300)];
        if in_hw[0] + padding[0] + padding[2] < dilations[0] * (k_h - 1) + 1
            || in_hw[1] + padding[1] + padding[3] < dilations[1] * (k_w - 1) + 1
        {
            continue;
        }
        cases.push(Case {
            channels: 1 + rng.below(3),
            in_hw,
            kernel_hw: [k_h, k_w],
            padding,
            // Mostly unit horizontal stride, the patched path; the other path keeps rten's loop.
            strides: [1 + rng.below(2), 1 + usize::from(rng.below(4) == 0)],
            dilations,
        });
    }
    let mut checked = 0;
    for case in &cases {
        let [in_h, in_w] = case.in_hw;
        let [k_h, k_w] = case.kernel_hw;
        let input = NdTensor::from_data(
            [1, case.channels, in_h, in_w],
            (0..case.channels * in_h * in_w)
                .map(|_| rng.value())
                .collect::<Vec<_>>(),
        );
        let kernel = NdTensor::from_data(
            [case.channels, 1, k_h, k_w],
            (0..case.channels * k_h * k_w)
                .map(|_| rng.value())
                .collect::<Vec<_>>(),
        );
        let bias: Vec<f32> = (0..case.channels).map(|_| rng.value()).collect();
        let bias_tensor = NdTensor::from_data([case.channels], bias.clone());
        let output: Tensor<f32> = conv(
            &pool,
            input.as_dyn(),
            kernel.as_dyn(),
            Some(bias_tensor.view()),
            Padding::Fixed(case.padding.into()),
            case.channels,
            &case.strides,
            &case.dilations,
        )
        .expect("a valid depthwise convolution");
        let expected = reference(case, &input, &kernel, &bias);
        let got = output.to_vec();
        assert_eq!(got.len(), expected.len(), "output size");
        if let Some(i) = got
            .iter()
            .zip(&expected)
            .position(|(g, e)| g.to_bits() != e.to_bits())
        {
            panic!(
                "kernel {k_h}x{k_w}, input {in_h}x{in_w}, padding {:?}, strides {:?}, dilations {:?}: element {i} is {} but {} by definition",
                case.padding, case.strides, case.dilations, got[i], expected[i],
            );
        }
        checked += got.len();
    }
    // 402 convolutions, about 400,000 outputs: the random cases are not all degenerate.
    assert!(
        checked > 100_000,
        "only {checked} output elements were compared"
    );
}
