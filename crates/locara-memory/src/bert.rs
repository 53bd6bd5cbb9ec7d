//! The BERT encoder all-MiniLM-L6-v2 is: its matrix products on `rten-gemm` (the kernels the
//! host's `models.run` service runs tools' models with), the rest in plain loops.
//!
//! Only what this model uses: absolute position embeddings, post-norm layers, exact (erf)
//! GELU, no pooler (sentence-transformers pools the token vectors itself). It was written on
//! candle-nn's layers until the host gained rten: two sets of matrix kernels cost a fresh
//! clone's CLI build about 100 s of CPU more than one, and this encoder is six layers of
//! products, norms and a softmax.
//!
//! The weight names are Hugging Face's (`embeddings.word_embeddings.weight`,
//! `encoder.layer.N.attention.self.query.weight`, …), with or without a `bert.` prefix; the
//! weights must be `f32`.

use rten_gemm::{BiasVector, GemmExecutor, GemmInputA, GemmInputB, GemmOptions};
use rten_tensor::NdTensorView;
use safetensors::{Dtype, SafeTensors};

/// What went wrong, in words.
pub(crate) type Error = String;

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
    pub(crate) layer_norm_eps: f32,
}

/// A loaded encoder: token ids in, one vector per token out.
pub(crate) struct Bert {
    config: Config,
    words: Vec<f32>,
    positions: Vec<f32>,
    token_types: Vec<f32>,
    norm: LayerNorm,
    layers: Vec<Layer>,
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

/// `y = x Wᵀ + b`, with `Wᵀ` kept row-major (`inputs × outputs`).
struct Linear {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

struct LayerNorm {
    weight: Vec<f32>,
    bias: Vec<f32>,
    eps: f32,
}

/// The tensors of a safetensors file, under an optional name prefix.
struct Weights<'a> {
    file: SafeTensors<'a>,
    prefix: &'static str,
}

impl Weights<'_> {
    /// Tensor `name`, which must be `f32` and shaped `shape`.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, Error> {
        let name = format!("{}{name}", self.prefix);
        let tensor = self
            .file
            .tensor(&name)
            .map_err(|e| format!("tensor {name}: {e}"))?;
        if tensor.dtype() != Dtype::F32 {
            return Err(format!("tensor {name} is {:?}, not F32", tensor.dtype()));
        }
        if tensor.shape() != shape {
            return Err(format!(
                "tensor {name} has shape {:?}, not {shape:?}",
                tensor.shape()
            ));
        }
        Ok(tensor
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }

    fn linear(&self, name: &str, inputs: usize, outputs: usize) -> Result<Linear, Error> {
        let weight = self.get(&format!("{name}.weight"), &[outputs, inputs])?;
        // Transposed once here, so that every product reads it row by row.
        let mut transposed = vec![0.0; weight.len()];
        for (o, row) in weight.chunks_exact(inputs).enumerate() {
            for (i, &w) in row.iter().enumerate() {
                transposed[i * outputs + o] = w;
            }
        }
        Ok(Linear {
            weight: transposed,
            bias: self.get(&format!("{name}.bias"), &[outputs])?,
            inputs,
            outputs,
        })
    }

    fn layer_norm(&self, name: &str, size: usize, eps: f32) -> Result<LayerNorm, Error> {
        Ok(LayerNorm {
            weight: self.get(&format!("{name}.weight"), &[size])?,
            bias: self.get(&format!("{name}.bias"), &[size])?,
            eps,
        })
    }
}

impl Bert {
    /// Loads the weights in `safetensors` (the file's bytes) for a model shaped as `config`.
    pub(crate) fn load(safetensors: &[u8], config: &Config) -> Result<Bert, Error> {
        let file = SafeTensors::deserialize(safetensors).map_err(|e| e.to_string())?;
        let prefix = if file.tensor("embeddings.word_embeddings.weight").is_ok() {
            ""
        } else {
            "bert."
        };
        let w = Weights { file, prefix };
        let hidden = config.hidden_size;
        let eps = config.layer_norm_eps;
        let layers = (0..config.layers)
            .map(|i| {
                let l = format!("encoder.layer.{i}");
                let a = format!("{l}.attention");
                Ok(Layer {
                    query: w.linear(&format!("{a}.self.query"), hidden, hidden)?,
                    key: w.linear(&format!("{a}.self.key"), hidden, hidden)?,
                    value: w.linear(&format!("{a}.self.value"), hidden, hidden)?,
                    attention_out: w.linear(&format!("{a}.output.dense"), hidden, hidden)?,
                    attention_norm: w.layer_norm(&format!("{a}.output.LayerNorm"), hidden, eps)?,
                    intermediate: w.linear(
                        &format!("{l}.intermediate.dense"),
                        hidden,
                        config.intermediate_size,
                    )?,
                    out: w.linear(
                        &format!("{l}.output.dense"),
                        config.intermediate_size,
                        hidden,
                    )?,
                    out_norm: w.layer_norm(&format!("{l}.output.LayerNorm"), hidden, eps)?,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(Bert {
            config: *config,
            words: w.get(
                "embeddings.word_embeddings.weight",
                &[config.vocab_size, hidden],
            )?,
            positions: w.get(
                "embeddings.position_embeddings.weight",
                &[config.max_positions, hidden],
            )?,
            token_types: w.get(
                "embeddings.token_type_embeddings.weight",
                &[config.token_types, hidden],
            )?,
            norm: w.layer_norm("embeddings.LayerNorm", hidden, eps)?,
            layers,
        })
    }

    /// The last layer's token vectors, `batch × tokens × hidden` row-major, for `ids` and
    /// `types` (`batch × tokens`); `mask` is 1 for real tokens and 0 for padding.
    pub(crate) fn forward(
        &self,
        ids: &[u32],
        types: &[u32],
        mask: &[u32],
        tokens: usize,
    ) -> Result<Vec<f32>, Error> {
        let hidden = self.config.hidden_size;
        if tokens == 0 || !ids.len().is_multiple_of(tokens) || types.len() != ids.len() {
            return Err(format!(
                "{} ids and {} types are not rows of {tokens} tokens",
                ids.len(),
                types.len()
            ));
        }
        if mask.len() != ids.len() {
            return Err(format!("{} mask values for {} ids", mask.len(), ids.len()));
        }
        if tokens > self.config.max_positions {
            return Err(format!(
                "{tokens} tokens, more than the model's {} positions",
                self.config.max_positions
            ));
        }
        fn row<'t>(
            table: &'t [f32],
            hidden: usize,
            index: usize,
            size: usize,
            what: &str,
        ) -> Result<&'t [f32], Error> {
            table
                .get(index * hidden..(index + 1) * hidden)
                .ok_or_else(|| format!("{what} {index} is out of range (the model has {size})"))
        }
        let mut x = vec![0.0f32; ids.len() * hidden];
        for (t, out) in x.chunks_exact_mut(hidden).enumerate() {
            let word = row(
                &self.words,
                hidden,
                ids[t] as usize,
                self.config.vocab_size,
                "token id",
            )?;
            let kind = row(
                &self.token_types,
                hidden,
                types[t] as usize,
                self.config.token_types,
                "token type",
            )?;
            let position = row(
                &self.positions,
                hidden,
                t % tokens,
                self.config.max_positions,
                "position",
            )?;
            for (((o, w), k), p) in out.iter_mut().zip(word).zip(kind).zip(position) {
                *o = w + k + p;
            }
        }
        self.norm.apply(&mut x);
        // Padding gets the lowest score before the softmax.
        let bias: Vec<f32> = mask
            .iter()
            .map(|&m| if m == 0 { f32::MIN } else { 0.0 })
            .collect();
        let gemm = GemmExecutor::<f32>::default();
        for layer in &self.layers {
            x = layer.forward(&gemm, x, &bias, tokens, self.config.heads)?;
        }
        Ok(x)
    }
}

impl Layer {
    fn forward(
        &self,
        gemm: &GemmExecutor<f32>,
        x: Vec<f32>,
        bias: &[f32],
        tokens: usize,
        heads: usize,
    ) -> Result<Vec<f32>, Error> {
        let hidden = self.query.outputs;
        let rows = x.len() / hidden;
        let head_size = hidden / heads;
        let q = self.query.forward(gemm, &x)?;
        let k = self.key.forward(gemm, &x)?;
        let v = self.value.forward(gemm, &x)?;
        let q_all = NdTensorView::from_data([rows, hidden], &q[..]);
        let k_all = NdTensorView::from_data([rows, hidden], &k[..]);
        let v_all = NdTensorView::from_data([rows, hidden], &v[..]);
        let mut context = vec![0.0f32; rows * hidden];
        let mut scores = vec![0.0f32; tokens * tokens];
        let mut head_out = vec![0.0f32; tokens * head_size];
        let scale = 1.0 / (head_size as f32).sqrt();
        for start in (0..rows).step_by(tokens) {
            let tokens_of = start..start + tokens;
            for h in 0..heads {
                let cols = h * head_size..(h + 1) * head_size;
                let q = q_all.slice((tokens_of.clone(), cols.clone()));
                let k = k_all.slice((tokens_of.clone(), cols.clone()));
                let v = v_all.slice((tokens_of.clone(), cols.clone()));
                gemm.gemm(
                    &mut scores,
                    GemmInputA::Unpacked(q),
                    GemmInputB::Unpacked(k.transposed()),
                    GemmOptions {
                        alpha: scale,
                        bias: Some(BiasVector::Row(&bias[tokens_of.clone()])),
                        ..GemmOptions::default()
                    },
                )
                .map_err(|e| e.to_string())?;
                for row in scores.chunks_exact_mut(tokens) {
                    softmax(row);
                }
                gemm.gemm(
                    &mut head_out,
                    GemmInputA::Unpacked(NdTensorView::from_data([tokens, tokens], &scores[..])),
                    GemmInputB::Unpacked(v),
                    GemmOptions::default(),
                )
                .map_err(|e| e.to_string())?;
                for (t, values) in head_out.chunks_exact(head_size).enumerate() {
                    let at = (start + t) * hidden + cols.start;
                    context[at..at + head_size].copy_from_slice(values);
                }
            }
        }
        let mut x1 = self.attention_out.forward(gemm, &context)?;
        add(&mut x1, &x);
        self.attention_norm.apply(&mut x1);
        let mut h = self.intermediate.forward(gemm, &x1)?;
        for value in &mut h {
            *value = gelu_erf(*value);
        }
        let mut out = self.out.forward(gemm, &h)?;
        add(&mut out, &x1);
        self.out_norm.apply(&mut out);
        Ok(out)
    }
}

impl Linear {
    fn forward(&self, gemm: &GemmExecutor<f32>, x: &[f32]) -> Result<Vec<f32>, Error> {
        let rows = x.len() / self.inputs;
        let mut out = vec![0.0f32; rows * self.outputs];
        gemm.gemm(
            &mut out,
            GemmInputA::Unpacked(NdTensorView::from_data([rows, self.inputs], x)),
            GemmInputB::Unpacked(NdTensorView::from_data(
                [self.inputs, self.outputs],
                &self.weight[..],
            )),
            GemmOptions {
                bias: Some(BiasVector::Row(&self.bias)),
                ..GemmOptions::default()
            },
        )
        .map_err(|e| e.to_string())?;
        Ok(out)
    }
}

impl LayerNorm {
    /// Normalises each row of `x` in place (rows as long as the weights).
    fn apply(&self, x: &mut [f32]) {
        let size = self.weight.len();
        for row in x.chunks_exact_mut(size) {
            let mean = row.iter().sum::<f32>() / size as f32;
            let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / size as f32;
            let scale = 1.0 / (variance + self.eps).sqrt();
            for ((v, w), b) in row.iter_mut().zip(&self.weight).zip(&self.bias) {
                *v = (*v - mean) * scale * w + b;
            }
        }
    }
}

fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    for v in row.iter_mut() {
        *v /= sum;
    }
}

/// GELU with the exact error function, in `f64` as candle and PyTorch compute it.
fn gelu_erf(x: f32) -> f32 {
    let x = f64::from(x);
    (0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2))) as f32
}
