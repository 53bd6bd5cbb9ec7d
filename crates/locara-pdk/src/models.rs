//! Runs the models a tool's manifest pins on the host (the `models.run` service;
//! `docs/tool-abi.md` § Host services), at native speed, instead of inside the sandbox.
//!
//! ```no_run
//! # fn demo(pixels: &[f32]) -> Result<(), locara_pdk::ToolError> {
//! use locara_pdk::models;
//! let dictionary = models::metadata("rec.onnx", &["character"])?;
//! let outputs = models::run("det.onnx", &[(&[1, 3, 64, 96], pixels)])?;
//! let probabilities = &outputs[0];
//! # Ok(()) }
//! ```
//!
//! A model is named as the manifest's `model_dependencies` name it; tensors are `f32`. The tool
//! lists `models.run` in its `capability_requirements`. The app may not grant it, or the host
//! may not offer it: the call then fails with [`ErrorKind::BadArgs`](crate::ErrorKind), and
//! the tool should run the model itself (its files are at `/models`), as [`refused`] tells.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::{ErrorKind, ToolError, host};

/// The service's name.
pub const SERVICE: &str = "models.run";

/// A dense `f32` tensor: its shape, and its elements in row-major order.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// The dimensions.
    pub shape: Vec<usize>,
    /// The elements, as many as the product of `shape`.
    pub data: Vec<f32>,
}

/// Whether an error from [`run`] or [`metadata`] means the host will not run models for this
/// call (the app did not grant it, the host does not offer it, or this is not a sandbox), so
/// the tool should run them itself; `false` when the host tried and failed.
pub fn refused(error: &ToolError) -> bool {
    error.kind() == ErrorKind::BadArgs || !cfg!(target_os = "wasi")
}

/// The values of `keys` in `model`'s metadata, for those it has.
///
/// # Errors
/// The host refused (see [`refused`]) or failed.
pub fn metadata(model: &str, keys: &[&str]) -> Result<BTreeMap<String, String>, ToolError> {
    let mut request = json!({"op": "metadata", "model": model, "keys": keys})
        .to_string()
        .into_bytes();
    request.push(b'\n');
    let answer = host::call_bytes(SERVICE, &request)?;
    let (header, _) = split(&answer)?;
    let header: Value = serde_json::from_slice(header).map_err(malformed)?;
    header["metadata"]
        .as_object()
        .ok_or_else(|| malformed("no `metadata`"))?
        .iter()
        .map(|(k, v)| {
            Ok((
                k.clone(),
                v.as_str().ok_or_else(|| malformed(k))?.to_owned(),
            ))
        })
        .collect()
}

/// Runs `model` on `inputs` (shape and elements, in the order of the model's inputs), and
/// returns all its outputs.
///
/// # Errors
/// The host refused (see [`refused`]), the inputs do not fit the model, or it failed.
pub fn run(model: &str, inputs: &[(&[usize], &[f32])]) -> Result<Vec<Tensor>, ToolError> {
    for (i, (shape, data)) in inputs.iter().enumerate() {
        if shape.iter().product::<usize>() != data.len() {
            return Err(ToolError::failed(format!(
                "input {i} of {model} has shape {shape:?} but {} elements",
                data.len()
            )));
        }
    }
    let shapes: Vec<&[usize]> = inputs.iter().map(|(shape, _)| *shape).collect();
    let mut request = json!({"op": "run", "model": model, "inputs": shapes})
        .to_string()
        .into_bytes();
    request.push(b'\n');
    request.reserve(inputs.iter().map(|(_, d)| d.len() * 4).sum());
    for (_, data) in inputs {
        for v in *data {
            request.extend_from_slice(&v.to_le_bytes());
        }
    }
    let answer = host::call_bytes(SERVICE, &request)?;
    let (header, mut data) = split(&answer)?;
    let header: Value = serde_json::from_slice(header).map_err(malformed)?;
    let shapes = header["outputs"]
        .as_array()
        .ok_or_else(|| malformed("no `outputs`"))?;
    let mut outputs = Vec::with_capacity(shapes.len());
    for shape in shapes {
        let shape: Vec<usize> = serde_json::from_value(shape.clone()).map_err(malformed)?;
        let bytes = shape
            .iter()
            .try_fold(4usize, |n, &d| n.checked_mul(d))
            .filter(|&n| n <= data.len())
            .ok_or_else(|| malformed("an output's shape larger than its data"))?;
        let (these, rest) = data.split_at(bytes);
        data = rest;
        let values = these
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        outputs.push(Tensor {
            shape,
            data: values,
        });
    }
    if !data.is_empty() {
        return Err(malformed("data beyond its outputs' shapes"));
    }
    Ok(outputs)
}

/// The JSON header and the tensor bytes after its newline.
fn split(answer: &[u8]) -> Result<(&[u8], &[u8]), ToolError> {
    let at = answer
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| malformed("no header line"))?;
    Ok((&answer[..at], &answer[at + 1..]))
}

fn malformed(what: impl std::fmt::Display) -> ToolError {
    ToolError::failed(format!(
        "the host's `{SERVICE}` answer is malformed: {what}"
    ))
}
