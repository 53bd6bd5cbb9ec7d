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
//! A tool that runs a model itself (its weights in the guest) may still have the host compute
//! its large matrix products, [`matmul`], refused in the same cases.

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
    let header = json!({"op": "run", "model": model, "inputs": shapes_of(model, inputs)?});
    let answer = host::call_bytes(SERVICE, &encode(header, &[inputs]))?;
    let (header, mut data) = split(&answer)?;
    let header: Value = serde_json::from_slice(header).map_err(malformed)?;
    let outputs = take_tensors(&header["outputs"], &mut data)?;
    if !data.is_empty() {
        return Err(malformed("data beyond its outputs' shapes"));
    }
    Ok(outputs)
}

/// What the host does to each output of [`run_each`] before answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduce<'a> {
    /// Nothing: the outputs as the model computed them.
    Nothing,
    /// Each output of shape `[…, C]` comes back as `[…, 2]`: for each row of its last axis,
    /// the index of its largest element (an `f32`, exact: `C` is at most 2^24) and that
    /// element, the first one on a tie, among the classes `among` lists when it is given;
    /// `(0, -inf)` for a row with no candidate above `-inf`. A greedy decoder then receives
    /// two numbers per step instead of a score for every class.
    ArgMax {
        /// The only classes that may win, or every class.
        among: Option<&'a [usize]>,
    },
}

/// Runs `model` once per entry of `runs` (each as [`run`] takes its inputs), independently,
/// and returns each run's outputs, reduced as `reduce` says, in the order of `runs`. The host
/// may run them at once on its cores: a page's text lines through a recognizer, say, in one
/// request rather than one round trip and one core each.
///
/// # Errors
/// As [`run`]'s, for a run that failed (the host stops the others).
pub fn run_each(
    model: &str,
    runs: &[&[(&[usize], &[f32])]],
    reduce: Reduce<'_>,
) -> Result<Vec<Vec<Tensor>>, ToolError> {
    let shapes = runs
        .iter()
        .map(|inputs| shapes_of(model, inputs))
        .collect::<Result<Vec<_>, _>>()?;
    let mut header = json!({"op": "run", "model": model, "runs": shapes});
    if let Reduce::ArgMax { among } = reduce {
        header["argmax"] = match among {
            Some(among) => json!({"among": among}),
            None => json!({}),
        };
    }
    let answer = host::call_bytes(SERVICE, &encode(header, runs))?;
    let (header, mut data) = split(&answer)?;
    let header: Value = serde_json::from_slice(header).map_err(malformed)?;
    let answered = header["runs"]
        .as_array()
        .ok_or_else(|| malformed("no `runs`"))?;
    if answered.len() != runs.len() {
        return Err(malformed(format_args!(
            "{} runs answered for {} asked",
            answered.len(),
            runs.len()
        )));
    }
    let outputs = answered
        .iter()
        .map(|shapes| take_tensors(shapes, &mut data))
        .collect::<Result<Vec<_>, _>>()?;
    if !data.is_empty() {
        return Err(malformed("data beyond its outputs' shapes"));
    }
    Ok(outputs)
}

/// A matrix for [`matmul`]: its shape, and its elements row by row, or column by column when
/// `column_major` (a transposed view, as a model's weights often are, sent as it lies).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Matrix<'a> {
    /// How many rows it has.
    pub rows: usize,
    /// How many columns it has.
    pub cols: usize,
    /// Its `rows × cols` elements.
    pub data: &'a [f32],
    /// Whether `data` holds it column by column.
    pub column_major: bool,
}

/// Writes the product of `lhs` (`m × k`) and `rhs` (`k × n`) into `out` (`m × n` elements,
/// column by column when `column_major`), computed by the host at native speed: the matrix
/// products of a model the tool runs itself (its weights in the guest), without a model file.
/// The host computes each element as its own matrix kernels do, so a product may differ from
/// the guest's in the last bits of a sum. Worth a round trip only for large products: the
/// matrices cross the boundary both ways (as they lie, copied whole, never element by
/// element).
///
/// # Errors
/// The host refused (see [`refused`]), or the shapes do not fit (`out` included).
pub fn matmul(
    lhs: Matrix<'_>,
    rhs: Matrix<'_>,
    out: &mut [f32],
    column_major: bool,
) -> Result<(), ToolError> {
    let (m, k, n) = (lhs.rows, lhs.cols, rhs.cols);
    if rhs.rows != k
        || Some(lhs.data.len()) != m.checked_mul(k)
        || Some(rhs.data.len()) != k.checked_mul(n)
        || Some(out.len()) != m.checked_mul(n)
    {
        return Err(ToolError::failed(format!(
            "a matrix product of {m}×{k} ({} elements) by {}×{n} ({} elements) into {} elements does not fit",
            lhs.data.len(),
            rhs.rows,
            rhs.data.len(),
            out.len()
        )));
    }
    let header = json!({
        "op": "matmul",
        "inputs": [[m, k], [k, n]],
        "column_major": [lhs.column_major, rhs.column_major, column_major],
    });
    let inputs: [(&[usize], &[f32]); 2] = [(&[m, k], lhs.data), (&[k, n], rhs.data)];
    let answer = host::call_bytes(SERVICE, &encode(header, &[&inputs]))?;
    let (header, data) = split(&answer)?;
    let header: Value = serde_json::from_slice(header).map_err(malformed)?;
    if header["outputs"] != json!([[m, n]]) || data.len() != out.len() * 4 {
        return Err(malformed(format_args!("not one {m}×{n} product as asked")));
    }
    get_floats(data, out);
    Ok(())
}

/// Appends `values` as little-endian `f32`s: one copy where the machine is little-endian
/// (WebAssembly is).
fn put_floats(out: &mut Vec<u8>, values: &[f32]) {
    if cfg!(target_endian = "little") {
        out.extend_from_slice(bytemuck::cast_slice(values));
    } else {
        values
            .iter()
            .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    }
}

/// Reads `out.len()` little-endian `f32`s from `bytes` (exactly as many bytes) into `out`.
fn get_floats(bytes: &[u8], out: &mut [f32]) {
    if cfg!(target_endian = "little") {
        bytemuck::cast_slice_mut(out).copy_from_slice(bytes);
    } else {
        for (value, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
            *value = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
    }
}

/// The shapes of `inputs`, each checked against its number of elements.
fn shapes_of<'a>(
    model: &str,
    inputs: &[(&'a [usize], &[f32])],
) -> Result<Vec<&'a [usize]>, ToolError> {
    inputs
        .iter()
        .enumerate()
        .map(|(i, (shape, data))| {
            if shape.iter().product::<usize>() == data.len() {
                Ok(*shape)
            } else {
                Err(ToolError::failed(format!(
                    "input {i} of {model} has shape {shape:?} but {} elements",
                    data.len()
                )))
            }
        })
        .collect()
}

/// `header`, a newline, then the runs' tensors' elements, one after another.
fn encode(header: Value, runs: &[&[(&[usize], &[f32])]]) -> Vec<u8> {
    let mut request = header.to_string().into_bytes();
    request.push(b'\n');
    let elements: usize = runs
        .iter()
        .flat_map(|r| r.iter())
        .map(|(_, d)| d.len())
        .sum();
    request.reserve(elements * 4);
    for (_, data) in runs.iter().flat_map(|r| r.iter()) {
        put_floats(&mut request, data);
    }
    request
}

/// The tensors of the answer's `shapes` (a JSON array of shapes), read off the front of `data`.
fn take_tensors(shapes: &Value, data: &mut &[u8]) -> Result<Vec<Tensor>, ToolError> {
    let shapes = shapes
        .as_array()
        .ok_or_else(|| malformed("no output shapes"))?;
    let mut outputs = Vec::with_capacity(shapes.len());
    for shape in shapes {
        let shape: Vec<usize> = serde_json::from_value(shape.clone()).map_err(malformed)?;
        let bytes = shape
            .iter()
            .try_fold(4usize, |n, &d| n.checked_mul(d))
            .filter(|&n| n <= data.len())
            .ok_or_else(|| malformed("an output's shape larger than its data"))?;
        let (these, rest) = data.split_at(bytes);
        *data = rest;
        let mut values = vec![0.0; bytes / 4];
        get_floats(these, &mut values);
        outputs.push(Tensor {
            shape,
            data: values,
        });
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
