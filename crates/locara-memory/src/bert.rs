//! The BERT encoder all-MiniLM-L6-v2 is, written on candle-nn's layers.
//!
//! Only what this model uses: absolute position embeddings, post-norm layers, exact (erf)
//! GELU, no pooler (sentence-transformers pools the token vectors itself). Written here
//! rather than taken from `candle-transformers` because that crate carries a hundred other
//! models, and compiling them added about 218 s to a fresh clone's CLI build.
//!
//! The weight names are Hugging Face's (`embeddings.word_embeddings.weight`,
//! `encoder.layer.N.attention.self.query.weight`, …), with or without a `bert.` prefix.

use candle_core::{DType, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder, embedding, layer_norm, linear};

/// The shape of a BERT model (the few fields of its `config.json` the encoder needs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Config {
    pub(crate) vocab_size: usize,
    pub(crate) hidden_size: usize,
    pub(crate) layers: usize,
    pub(crate) heads: usize,
    pub(crate) intermediate_size: usize,
    pub(crate) max_positions: usize,
    pub(crate) token_types: usize,
    pub(crate) layer_norm_eps: f64,
}

/// A loaded encoder: token ids in, one vector per token out.
pub(crate) struct Bert {
    words: Embedding,
    positions: Embedding,
    token_types: Embedding,
    norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    out: Linear,
    out_norm: LayerNorm,
}

impl Bert {
    /// Loads the weights `vb` holds for a model shaped as `config`.
    pub(crate) fn load(vb: VarBuilder<'_>, config: &Config) -> Result<Bert> {
        let vb = if vb.contains_tensor("embeddings.word_embeddings.weight") {
            vb
        } else {
            vb.pp("bert")
        };
        let hidden = config.hidden_size;
        let eps = config.layer_norm_eps;
        let e = vb.pp("embeddings");
        let layers = (0..config.layers)
            .map(|i| {
                let l = vb.pp(format!("encoder.layer.{i}"));
                let attention = l.pp("attention");
                Ok(Layer {
                    query: linear(hidden, hidden, attention.pp("self.query"))?,
                    key: linear(hidden, hidden, attention.pp("self.key"))?,
                    value: linear(hidden, hidden, attention.pp("self.value"))?,
                    attention_out: linear(hidden, hidden, attention.pp("output.dense"))?,
                    attention_norm: layer_norm(hidden, eps, attention.pp("output.LayerNorm"))?,
                    intermediate: linear(
                        hidden,
                        config.intermediate_size,
                        l.pp("intermediate.dense"),
                    )?,
                    out: linear(config.intermediate_size, hidden, l.pp("output.dense"))?,
                    out_norm: layer_norm(hidden, eps, l.pp("output.LayerNorm"))?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Bert {
            words: embedding(config.vocab_size, hidden, e.pp("word_embeddings"))?,
            positions: embedding(config.max_positions, hidden, e.pp("position_embeddings"))?,
            token_types: embedding(config.token_types, hidden, e.pp("token_type_embeddings"))?,
            norm: layer_norm(hidden, eps, e.pp("LayerNorm"))?,
            layers,
            heads: config.heads,
        })
    }

    /// The last layer's token vectors, `(batch, tokens, hidden)`, for `ids` and `types`
    /// (`(batch, tokens)`, u32); `mask` is 1 for real tokens and 0 for padding.
    pub(crate) fn forward(&self, ids: &Tensor, types: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (_, tokens) = ids.dims2()?;
        let positions = Tensor::arange(0u32, tokens as u32, ids.device())?.unsqueeze(0)?;
        let mut x = self
            .words
            .forward(ids)?
            .add(&self.token_types.forward(types)?)?
            .broadcast_add(&self.positions.forward(&positions)?)?;
        x = self.norm.forward(&x)?;
        // Padding gets the lowest score before the softmax: `(batch, 1, 1, tokens)`.
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(1)?.unsqueeze(1)?;
        let bias = (mask.ones_like()? - &mask)?.affine(f64::from(f32::MIN), 0.0)?;
        for layer in &self.layers {
            x = layer.forward(&x, &bias, self.heads)?;
        }
        Ok(x)
    }
}

impl Layer {
    fn forward(&self, x: &Tensor, bias: &Tensor, heads: usize) -> Result<Tensor> {
        let (batch, tokens, hidden) = x.dims3()?;
        let head_size = hidden / heads;
        let split = |t: Tensor| {
            t.reshape((batch, tokens, heads, head_size))?
                .transpose(1, 2)?
                .contiguous()
        };
        let q = split(self.query.forward(x)?)?;
        let k = split(self.key.forward(x)?)?;
        let v = split(self.value.forward(x)?)?;
        let scores = (q.matmul(&k.t()?)? / (head_size as f64).sqrt())?.broadcast_add(bias)?;
        let weights = candle_nn::ops::softmax_last_dim(&scores)?;
        let context = weights
            .matmul(&v)?
            .transpose(1, 2)?
            .reshape((batch, tokens, hidden))?;
        let x = self
            .attention_norm
            .forward(&(self.attention_out.forward(&context)? + x)?)?;
        let h = self.intermediate.forward(&x)?.gelu_erf()?;
        self.out_norm.forward(&(self.out.forward(&h)? + x)?)
    }
}
