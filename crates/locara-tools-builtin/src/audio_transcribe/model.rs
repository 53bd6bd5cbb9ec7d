//! Whisper, loaded straight from a CTranslate2 model: the encoder on candle, the decoder in
//! plain Rust.
//!
//! Written here rather than taken from `candle-transformers`, whose decoder recomputes the
//! whole token sequence at every step (it caches only the cross-attention keys and values).
//! This decoder keeps a self-attention cache and feeds one token per step, so every step is
//! a handful of matrix-vector products; those are plain loops over contiguous weight rows,
//! because candle's matrix multiplication (`gemm`) repacks the whole weight matrix at every
//! call, which for a single row costs more than the product itself (and in wasm, without
//! SIMD, that doubled the fuel a window costs). CTranslate2's fused projections (q, k and v
//! stacked) are kept as they are. Batch size is always 1: encoder activations are
//! `[time, width]` matrices.

use candle_core::{Device, Tensor};
use candle_nn::{Conv1d, Conv1dConfig, LayerNorm, Linear, Module};

use super::ct2::{self, WhisperDims};

type Result<T> = std::result::Result<T, String>;

fn err(e: candle_core::Error) -> String {
    e.to_string()
}

struct Loader<'a> {
    model: &'a ct2::Model,
    bytes: &'a [u8],
}

impl Loader<'_> {
    fn tensor(&self, name: &str) -> Result<Tensor> {
        self.model.tensor(self.bytes, name)
    }

    fn linear(&self, prefix: &str) -> Result<Linear> {
        Ok(Linear::new(
            self.tensor(&format!("{prefix}/weight"))?,
            Some(self.tensor(&format!("{prefix}/bias"))?),
        ))
    }

    fn layer_norm(&self, prefix: &str) -> Result<LayerNorm> {
        Ok(LayerNorm::new(
            self.tensor(&format!("{prefix}/gamma"))?,
            self.tensor(&format!("{prefix}/beta"))?,
            1e-5,
        ))
    }

    fn conv(&self, prefix: &str, stride: usize) -> Result<Conv1d> {
        let config = Conv1dConfig {
            padding: 1,
            stride,
            dilation: 1,
            groups: 1,
            cudnn_fwd_algo: None,
        };
        Ok(Conv1d::new(
            self.tensor(&format!("{prefix}/weight"))?,
            Some(self.tensor(&format!("{prefix}/bias"))?),
            config,
        ))
    }

    fn block(&self, prefix: &str, n_head: usize) -> Result<Block> {
        Ok(Block {
            attn_ln: self.layer_norm(&format!("{prefix}/self_attention/layer_norm"))?,
            qkv: self.linear(&format!("{prefix}/self_attention/linear_0"))?,
            attn_out: self.linear(&format!("{prefix}/self_attention/linear_1"))?,
            mlp_ln: self.layer_norm(&format!("{prefix}/ffn/layer_norm"))?,
            fc1: self.linear(&format!("{prefix}/ffn/linear_0"))?,
            fc2: self.linear(&format!("{prefix}/ffn/linear_1"))?,
            n_head,
        })
    }

    fn floats(&self, name: &str) -> Result<Vec<f32>> {
        Ok(self.model.floats(self.bytes, name)?.1)
    }

    fn dense(&self, prefix: &str) -> Result<Dense> {
        let (shape, weight) = self.model.floats(self.bytes, &format!("{prefix}/weight"))?;
        let bias = self.floats(&format!("{prefix}/bias"))?;
        match shape.as_slice() {
            &[rows, cols] if bias.len() == rows => Ok(Dense { weight, bias, cols }),
            _ => Err(format!("{prefix} has an unexpected shape {shape:?}")),
        }
    }

    fn norm(&self, prefix: &str) -> Result<Norm> {
        Ok(Norm {
            gamma: self.floats(&format!("{prefix}/gamma"))?,
            beta: self.floats(&format!("{prefix}/beta"))?,
        })
    }

    fn dec_block(&self, prefix: &str) -> Result<DecBlock> {
        Ok(DecBlock {
            attn_ln: self.norm(&format!("{prefix}/self_attention/layer_norm"))?,
            qkv: self.dense(&format!("{prefix}/self_attention/linear_0"))?,
            attn_out: self.dense(&format!("{prefix}/self_attention/linear_1"))?,
            cross_ln: self.norm(&format!("{prefix}/attention/layer_norm"))?,
            cross_q: self.dense(&format!("{prefix}/attention/linear_0"))?,
            cross_kv: self.linear(&format!("{prefix}/attention/linear_1"))?,
            cross_out: self.dense(&format!("{prefix}/attention/linear_2"))?,
            mlp_ln: self.norm(&format!("{prefix}/ffn/layer_norm"))?,
            fc1: self.dense(&format!("{prefix}/ffn/linear_0"))?,
            fc2: self.dense(&format!("{prefix}/ffn/linear_1"))?,
        })
    }
}

/// An encoder block (candle).
struct Block {
    attn_ln: LayerNorm,
    /// q, k and v stacked (k's bias is zero).
    qkv: Linear,
    attn_out: Linear,
    mlp_ln: LayerNorm,
    fc1: Linear,
    fc2: Linear,
    n_head: usize,
}

impl Block {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let width = x.dim(1)?;
        let qkv = self.qkv.forward(&self.attn_ln.forward(x)?)?;
        let (tq, n_head) = (x.dim(0)?, self.n_head);
        let hd = width / n_head;
        let heads = |i: usize| -> candle_core::Result<Tensor> {
            qkv.narrow(1, i * width, width)?
                .reshape((tq, n_head, hd))?
                .transpose(0, 1)?
                .contiguous()
        };
        let scale = 1.0 / (hd as f64).sqrt();
        let (q, k, v) = ((heads(0)? * scale)?, heads(1)?, heads(2)?);
        let weights = candle_nn::ops::softmax_last_dim(&q.matmul(&k.t()?)?)?;
        let a = weights.matmul(&v)?.transpose(0, 1)?.reshape((tq, width))?;
        let x = (x + self.attn_out.forward(&a)?)?;
        let h = self.fc1.forward(&self.mlp_ln.forward(&x)?)?.gelu_erf()?;
        x + self.fc2.forward(&h)?
    }
}

/// A dense layer for single vectors: `weight` is `[rows, cols]`, row-major.
struct Dense {
    weight: Vec<f32>,
    bias: Vec<f32>,
    cols: usize,
}

impl Dense {
    fn forward(&self, x: &[f32]) -> Vec<f32> {
        self.weight
            .chunks_exact(self.cols)
            .zip(&self.bias)
            .map(|(row, b)| dot(row, x) + b)
            .collect()
    }
}

/// A dot product with four accumulators (fewer dependent additions; vectorisable).
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 4];
    let (ac, ar) = a.split_at(a.len() / 4 * 4);
    let (bc, br) = b.split_at(ac.len().min(b.len()));
    for (x, y) in ac.chunks_exact(4).zip(bc.chunks_exact(4)) {
        acc[0] += x[0] * y[0];
        acc[1] += x[1] * y[1];
        acc[2] += x[2] * y[2];
        acc[3] += x[3] * y[3];
    }
    let tail: f32 = ar.iter().zip(br).map(|(x, y)| x * y).sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

impl Norm {
    fn forward(&self, x: &[f32]) -> Vec<f32> {
        let n = x.len() as f32;
        let mean = x.iter().sum::<f32>() / n;
        let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
        let inv = 1.0 / (var + 1e-5).sqrt();
        x.iter()
            .zip(self.gamma.iter().zip(&self.beta))
            .map(|(v, (g, b))| (v - mean) * inv * g + b)
            .collect()
    }
}

/// `erf`, Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7).
pub(crate) fn erf(x: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let y = 1.0 - poly * (-x * x).exp();
    if x < 0.0 { -y } else { y }
}

fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// Attention of one query over `len` keys and values, stored as rows of `width` in `keys`
/// and `values`, head by head.
fn attend(q: &[f32], keys: &[f32], values: &[f32], n_head: usize) -> Vec<f32> {
    let width = q.len();
    let hd = width / n_head;
    let len = keys.len() / width;
    let scale = 1.0 / (hd as f32).sqrt();
    let mut out = vec![0.0f32; width];
    let mut scores = vec![0.0f32; len];
    for h in 0..n_head {
        let qh = &q[h * hd..(h + 1) * hd];
        for (t, s) in scores.iter_mut().enumerate() {
            *s = dot(qh, &keys[t * width + h * hd..t * width + (h + 1) * hd]) * scale;
        }
        let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut sum = 0.0;
        for s in &mut scores {
            *s = (*s - max).exp();
            sum += *s;
        }
        let oh = &mut out[h * hd..(h + 1) * hd];
        for (t, s) in scores.iter().enumerate() {
            let w = s / sum;
            for (o, v) in oh
                .iter_mut()
                .zip(&values[t * width + h * hd..t * width + (h + 1) * hd])
            {
                *o += w * v;
            }
        }
    }
    out
}

/// A decoder block (plain Rust, one token at a time).
struct DecBlock {
    attn_ln: Norm,
    /// q, k and v stacked (k's bias is zero).
    qkv: Dense,
    attn_out: Dense,
    cross_ln: Norm,
    cross_q: Dense,
    /// k and v stacked, applied once per window to the encoder output (candle).
    cross_kv: Linear,
    cross_out: Dense,
    mlp_ln: Norm,
    fc1: Dense,
    fc2: Dense,
}

/// A decoder block's state in one window.
struct BlockState {
    /// Self-attention keys and values of the tokens so far, one row each.
    keys: Vec<f32>,
    values: Vec<f32>,
    /// Cross-attention keys and values of the encoder output, one row per audio position.
    cross_keys: Vec<f32>,
    cross_values: Vec<f32>,
}

fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

impl DecBlock {
    fn forward(&self, x: &mut [f32], st: &mut BlockState, n_head: usize) {
        let width = x.len();
        let qkv = self.qkv.forward(&self.attn_ln.forward(x));
        st.keys.extend_from_slice(&qkv[width..2 * width]);
        st.values.extend_from_slice(&qkv[2 * width..]);
        let a = attend(&qkv[..width], &st.keys, &st.values, n_head);
        add(x, &self.attn_out.forward(&a));
        let q = self.cross_q.forward(&self.cross_ln.forward(x));
        let a = attend(&q, &st.cross_keys, &st.cross_values, n_head);
        add(x, &self.cross_out.forward(&a));
        let mut h = self.fc1.forward(&self.mlp_ln.forward(x));
        for v in &mut h {
            *v = gelu(*v);
        }
        add(x, &self.fc2.forward(&h));
    }
}

/// A Whisper model.
pub(crate) struct Whisper {
    pub(crate) dims: WhisperDims,
    conv1: Conv1d,
    conv2: Conv1d,
    enc_pos: Tensor,
    enc_blocks: Vec<Block>,
    enc_ln: LayerNorm,
    /// Token embeddings, `[n_vocab, width]`; also the output projection.
    embeddings: Vec<f32>,
    dec_pos: Vec<f32>,
    dec_blocks: Vec<DecBlock>,
    dec_ln: Norm,
}

impl std::fmt::Debug for Whisper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Whisper")
            .field("dims", &self.dims)
            .finish_non_exhaustive()
    }
}

/// The decoder's state for one 30-second window.
pub(crate) struct DecoderState {
    blocks: Vec<BlockState>,
    position: usize,
}

impl Whisper {
    /// Loads a Whisper model from a CTranslate2 `model.bin`.
    ///
    /// # Errors
    /// A message saying what is missing or malformed.
    pub(crate) fn load(bytes: &[u8]) -> Result<Whisper> {
        let model = ct2::parse(bytes)?;
        let dims = ct2::whisper_dims(&model, bytes)?;
        let l = Loader {
            model: &model,
            bytes,
        };
        let enc_blocks = (0..dims.n_audio_layer)
            .map(|i| l.block(&format!("encoder/layer_{i}"), dims.n_audio_head))
            .collect::<Result<Vec<_>>>()?;
        let dec_blocks = (0..dims.n_text_layer)
            .map(|i| l.dec_block(&format!("decoder/layer_{i}")))
            .collect::<Result<Vec<_>>>()?;
        Ok(Whisper {
            conv1: l.conv("encoder/conv1", 1)?,
            conv2: l.conv("encoder/conv2", 2)?,
            enc_pos: l.tensor("encoder/position_encodings/encodings")?,
            enc_blocks,
            enc_ln: l.layer_norm("encoder/layer_norm")?,
            embeddings: l.floats("decoder/embeddings/weight")?,
            dec_pos: l.floats("decoder/position_encodings/encodings")?,
            dec_blocks,
            dec_ln: l.norm("decoder/layer_norm")?,
            dims,
        })
    }

    /// Encodes a log-mel window (`n_mels` rows of `2 × n_audio_ctx` frames, row-major) and
    /// prepares a decoder state for it.
    pub(crate) fn encode(&self, mel: Vec<f32>) -> Result<DecoderState> {
        let frames = self.dims.n_audio_ctx * 2;
        let width = self.dims.n_state;
        let inner = || -> candle_core::Result<Vec<BlockState>> {
            let x = Tensor::from_vec(mel, (1, self.dims.n_mels, frames), &Device::Cpu)?;
            let x = self.conv1.forward(&x)?.gelu_erf()?;
            let x = self.conv2.forward(&x)?.gelu_erf()?;
            // [1, width, ctx] → [ctx, width]
            let mut x = (x.squeeze(0)?.t()? + &self.enc_pos)?;
            for block in &self.enc_blocks {
                x = block.forward(&x)?;
            }
            let audio = self.enc_ln.forward(&x)?;
            self.dec_blocks
                .iter()
                .map(|b| {
                    let kv = b.cross_kv.forward(&audio)?;
                    let part = |i: usize| {
                        kv.narrow(1, i * width, width)?
                            .contiguous()?
                            .flatten_all()?
                            .to_vec1::<f32>()
                    };
                    Ok(BlockState {
                        keys: Vec::new(),
                        values: Vec::new(),
                        cross_keys: part(0)?,
                        cross_values: part(1)?,
                    })
                })
                .collect()
        };
        Ok(DecoderState {
            blocks: inner().map_err(err)?,
            position: 0,
        })
    }

    /// Feeds the next token and returns the logits for the one after it.
    pub(crate) fn decode(&self, state: &mut DecoderState, token: u32) -> Result<Vec<f32>> {
        let width = self.dims.n_state;
        if state.position >= self.dims.n_text_ctx {
            return Err(format!(
                "the transcript of a window exceeds the model's {} tokens",
                self.dims.n_text_ctx
            ));
        }
        let t = token as usize;
        let emb = self
            .embeddings
            .get(t * width..(t + 1) * width)
            .ok_or_else(|| format!("token {token} is outside the vocabulary"))?;
        let pos = &self.dec_pos[state.position * width..(state.position + 1) * width];
        let mut x: Vec<f32> = emb.iter().zip(pos).map(|(a, b)| a + b).collect();
        for (block, st) in self.dec_blocks.iter().zip(&mut state.blocks) {
            block.forward(&mut x, st, self.dims.n_text_head);
        }
        state.position += 1;
        let x = self.dec_ln.forward(&x);
        Ok(self
            .embeddings
            .chunks_exact(width)
            .map(|row| dot(row, &x))
            .collect())
    }
}

/// `softmax` over the last dimension of a plain slice, as log-probabilities.
pub(crate) fn log_softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f32 = logits.iter().map(|&l| (l - max).exp()).sum();
    let log_sum = max + sum.ln();
    logits.iter().map(|&l| l - log_sum).collect()
}
