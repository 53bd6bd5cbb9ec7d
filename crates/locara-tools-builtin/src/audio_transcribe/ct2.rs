//! Reading a CTranslate2 `model.bin` (binary format version 6) into candle tensors.
//!
//! The format, as written by `ctranslate2.specs.ModelSpec.save`, little-endian:
//! `u32 version`, `string spec_name`, `u32 revision`, `u32 count`, then `count` variables
//! (`string name`, `u8 rank`, `rank × u32 dims`, `u8 dtype`, `u32 byte_len`, the bytes), then
//! `u32 alias_count` and that many `(string alias, string target)` pairs. A `string` is a
//! `u16` length that counts a trailing NUL, then the bytes including that NUL.
//! dtype ids: 0 f32, 1 i8, 2 i16, 3 i32, 4 f16, 5 bf16.

use std::collections::HashMap;

use candle_core::{Device, Tensor};

/// One variable of a CTranslate2 model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Variable {
    pub(crate) shape: Vec<usize>,
    pub(crate) dtype: u8,
    /// Byte range of the data in the file.
    pub(crate) data: std::ops::Range<usize>,
}

/// A parsed CTranslate2 model: the spec's name and its variables (aliases resolved).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Model {
    pub(crate) spec: String,
    pub(crate) revision: u32,
    pub(crate) variables: HashMap<String, Variable>,
}

pub(crate) const DTYPE_F32: u8 = 0;
pub(crate) const DTYPE_I8: u8 = 1;
pub(crate) const DTYPE_I16: u8 = 2;
pub(crate) const DTYPE_I32: u8 = 3;
pub(crate) const DTYPE_F16: u8 = 4;
pub(crate) const DTYPE_BF16: u8 = 5;

fn dtype_size(dtype: u8) -> Option<usize> {
    match dtype {
        DTYPE_I8 => Some(1),
        DTYPE_I16 | DTYPE_F16 | DTYPE_BF16 => Some(2),
        DTYPE_F32 | DTYPE_I32 => Some(4),
        _ => None,
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| format!("truncated at byte {} (wanted {n} more bytes)", self.pos))?;
        let slice = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, String> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn string(&mut self) -> Result<String, String> {
        let len = usize::from(self.u16()?);
        let raw = self.take(len)?;
        let raw = raw.strip_suffix(&[0]).unwrap_or(raw);
        String::from_utf8(raw.to_vec())
            .map_err(|_| format!("a name before byte {} is not UTF-8", self.pos))
    }
}

/// Parses the header and the variable table of a CTranslate2 model (the data stays in `bytes`).
///
/// # Errors
/// A message saying what is wrong: an unsupported version, a truncated file, an unknown dtype
/// or a size that does not match the shape.
pub(crate) fn parse(bytes: &[u8]) -> Result<Model, String> {
    let mut r = Reader { bytes, pos: 0 };
    let version = r.u32()?;
    if !(5..=6).contains(&version) {
        return Err(format!(
            "unsupported CTranslate2 binary version {version} (this reader handles 5 and 6)"
        ));
    }
    let spec = r.string()?;
    let revision = r.u32()?;
    let count = r.u32()? as usize;
    let mut variables = HashMap::with_capacity(count.min(4096));
    for _ in 0..count {
        let name = r.string()?;
        let rank = usize::from(r.u8()?);
        let shape = (0..rank)
            .map(|_| r.u32().map(|d| d as usize))
            .collect::<Result<Vec<_>, _>>()?;
        let dtype = r.u8()?;
        let byte_len = r.u32()? as usize;
        let size = dtype_size(dtype)
            .ok_or_else(|| format!("variable {name} has an unknown dtype id {dtype}"))?;
        let elements: usize = shape.iter().product();
        if elements.checked_mul(size) != Some(byte_len) {
            return Err(format!(
                "variable {name} has shape {shape:?} but {byte_len} bytes of dtype id {dtype}"
            ));
        }
        let start = r.pos;
        r.take(byte_len)?;
        variables.insert(
            name,
            Variable {
                shape,
                dtype,
                data: start..start + byte_len,
            },
        );
    }
    // Aliases (e.g. the output projection sharing the token embeddings); absent before v5 only.
    if r.pos < bytes.len() {
        let aliases = r.u32()?;
        for _ in 0..aliases {
            let alias = r.string()?;
            let target = r.string()?;
            if let Some(v) = variables.get(&target).cloned() {
                variables.insert(alias, v);
            }
        }
    }
    Ok(Model {
        spec,
        revision,
        variables,
    })
}

/// Converts IEEE 754 half-precision bits to an `f32`.
pub(crate) fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits >> 15) << 31;
    let exp = u32::from((bits >> 10) & 0x1f);
    let mant = u32::from(bits & 0x3ff);
    let out = match (exp, mant) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: value = mant × 2^-24.
            let v = mant as f32 * f32::from_bits(0x3380_0000); // 2^-24
            return if sign != 0 { -v } else { v };
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, _) => sign | 0x7fc0_0000 | (mant << 13),
        _ => sign | ((exp + 112) << 23) | (mant << 13),
    };
    f32::from_bits(out)
}

impl Model {
    fn var(&self, name: &str) -> Result<&Variable, String> {
        self.variables
            .get(name)
            .ok_or_else(|| format!("the model has no variable {name}; is it a Whisper model?"))
    }

    /// A variable's values as `f32` (from f32, f16 or bf16 storage).
    pub(crate) fn floats(
        &self,
        bytes: &[u8],
        name: &str,
    ) -> Result<(Vec<usize>, Vec<f32>), String> {
        let v = self.var(name)?;
        let data = &bytes[v.data.clone()];
        let values = match v.dtype {
            DTYPE_F32 => data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            DTYPE_F16 => data
                .chunks_exact(2)
                .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
                .collect(),
            DTYPE_BF16 => data
                .chunks_exact(2)
                .map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16))
                .collect(),
            other => {
                return Err(format!(
                    "variable {name} is stored as dtype id {other}, not a float (quantized models are not supported)"
                ));
            }
        };
        Ok((v.shape.clone(), values))
    }

    /// A variable as an `f32` candle tensor on the CPU.
    pub(crate) fn tensor(&self, bytes: &[u8], name: &str) -> Result<Tensor, String> {
        let (shape, values) = self.floats(bytes, name)?;
        Tensor::from_vec(values, shape, &Device::Cpu).map_err(|e| format!("{name}: {e}"))
    }

    /// A scalar integer variable (e.g. `encoder/num_heads`).
    pub(crate) fn int(&self, bytes: &[u8], name: &str) -> Result<i64, String> {
        let v = self.var(name)?;
        let data = &bytes[v.data.clone()];
        match (v.dtype, data) {
            (DTYPE_I8, [a]) => Ok(i64::from(*a as i8)),
            (DTYPE_I16, [a, b]) => Ok(i64::from(i16::from_le_bytes([*a, *b]))),
            (DTYPE_I32, [a, b, c, d]) => Ok(i64::from(i32::from_le_bytes([*a, *b, *c, *d]))),
            _ => Err(format!("variable {name} is not a scalar integer")),
        }
    }

    /// How many `prefix/layer_N/` blocks the model has.
    pub(crate) fn layer_count(&self, prefix: &str) -> usize {
        (0..)
            .take_while(|i| {
                let p = format!("{prefix}/layer_{i}/");
                self.variables.keys().any(|k| k.starts_with(&p))
            })
            .count()
    }
}

/// The shapes of a Whisper model, read from its variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WhisperDims {
    pub(crate) n_mels: usize,
    pub(crate) n_audio_ctx: usize,
    pub(crate) n_state: usize,
    pub(crate) n_audio_head: usize,
    pub(crate) n_audio_layer: usize,
    pub(crate) n_vocab: usize,
    pub(crate) n_text_ctx: usize,
    pub(crate) n_text_head: usize,
    pub(crate) n_text_layer: usize,
}

/// Reads a Whisper model's dimensions.
pub(crate) fn whisper_dims(model: &Model, bytes: &[u8]) -> Result<WhisperDims, String> {
    if model.spec != "WhisperSpec" {
        return Err(format!(
            "the model is a CTranslate2 {} model, not a Whisper model",
            model.spec
        ));
    }
    let shape = |name: &str| model.var(name).map(|v| v.shape.clone());
    let conv1 = shape("encoder/conv1/weight")?;
    let emb = shape("decoder/embeddings/weight")?;
    let enc_pos = shape("encoder/position_encodings/encodings")?;
    let dec_pos = shape("decoder/position_encodings/encodings")?;
    let (&[n_state, n_mels, 3], &[n_vocab, _], &[n_audio_ctx, _], &[n_text_ctx, _]) = (
        conv1.as_slice(),
        emb.as_slice(),
        enc_pos.as_slice(),
        dec_pos.as_slice(),
    ) else {
        return Err("the model's Whisper variables have unexpected shapes".to_owned());
    };
    let heads = |name: &str| -> Result<usize, String> {
        let n = model.int(bytes, name)?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n > 0 && n_state % n == 0)
            .ok_or_else(|| format!("{name} is {n}, which does not divide the width {n_state}"))
    };
    Ok(WhisperDims {
        n_mels,
        n_audio_ctx,
        n_state,
        n_audio_head: heads("encoder/num_heads")?,
        n_audio_layer: model.layer_count("encoder"),
        n_vocab,
        n_text_ctx,
        n_text_head: heads("decoder/num_heads")?,
        n_text_layer: model.layer_count("decoder"),
    })
}
