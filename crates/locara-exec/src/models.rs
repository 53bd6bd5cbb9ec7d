//! [`MODELS_RUN`]: a tool runs the models its manifest pins on the host, at native speed, as
//! WASI-NN lets a guest do, instead of interpreting them inside the sandbox.
//!
//! The tool names a model by its `model_dependencies` name, never by a path: the host loads
//! only a file of the call's verified model directory that the signed manifest pins by
//! sha256. What crosses the boundary is data, f32 tensors in and out; the model's graph and the
//! code that runs it are the host's ([`ModelRunner`], in Locara `locara-infer`). The app must
//! grant the service; a tool that declares it runs without the grant, and then runs its models
//! itself (the service refuses, and the tool's helper falls back).
//!
//! The wire format (`docs/tool-abi.md` § Host services), both ways: a compact JSON header, a
//! newline, then the tensors' elements as little-endian `f32`, one tensor after another.
//! - `{"op": "metadata", "model": NAME, "keys": [KEY, …]}` → `{"metadata": {KEY: VALUE}}`
//!   (keys the model does not have are left out), and no tensor bytes;
//! - `{"op": "run", "model": NAME, "inputs": [SHAPE, …]}` → `{"outputs": [SHAPE, …]}`, each
//!   SHAPE an array of dimensions, in the order of the model's inputs and outputs;
//! - `{"op": "run", "model": NAME, "runs": [[SHAPE, …], …]}` → `{"runs": [[SHAPE, …], …]}`:
//!   the model run once per entry, independently, the runs' tensors one after another. The
//!   runner may run them concurrently ([`ModelRunner::run_each`]): `ocr` sends a page's lines;
//! - either may add `"argmax": {}` or `"argmax": {"among": [CLASS, …]}`: every output of shape
//!   `[…, C]` is answered as `[…, 2]`, each row of its last axis reduced to the index of its
//!   largest element (the first such, among the listed classes only when `among` is given;
//!   `0` with `-inf` when none is larger than `-inf`) and that element's value, the index an
//!   `f32` (exact: `C` may not exceed 2^24). A recognizer's per-step class scores then cross
//!   the boundary as two numbers per step instead of thousands.
//! - `{"op": "matmul", "inputs": [[M, K], [K, N]]}` → `{"outputs": [[M, N]]}`: the product of
//!   two matrices, by the runner's matrix kernels ([`ModelRunner::matmul`]), for a tool that
//!   runs a model itself (its weights in the guest) and hands the host its large products. An
//!   optional `"column_major": [LHS, RHS, PRODUCT]` (booleans, `false` when absent) says which
//!   of the three are laid out column by column instead of row by row (a transposed view, as
//!   a model's weights often are), so that neither side copies a matrix element by element.
//!   No model is named: the host computes on the tool's data, and runs no code or graph of
//!   the tool's. Every dimension is at least 1 and the product has at most
//!   [`MAX_PRODUCT_ELEMENTS`] elements, which bounds what the host allocates for its answer
//!   (the inputs, which the guest's memory held, bound the rest).

use std::{
    fmt,
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use locara_sandbox::ServiceError;
use serde_json::{Value, json};

/// The service that runs a tool's pinned models on the host.
pub const MODELS_RUN: &str = "models.run";

/// The most dimensions a tensor may have.
const MAX_RANK: usize = 8;
/// The most keys one metadata request may ask for.
const MAX_KEYS: usize = 64;
/// The most runs one request may ask for.
const MAX_RUNS: usize = 256;
/// The most elements a `matmul` answer may have (256 MiB of `f32`): its inputs bound the
/// host's work, and this bounds what the host allocates for its answer.
pub(crate) const MAX_PRODUCT_ELEMENTS: usize = 1 << 26;
/// The most classes an arg-max may reduce: its index crosses as an `f32`, exact up to 2^24.
const MAX_ARGMAX_CLASSES: usize = 1 << 24;

/// One of a tool's models, as its manifest pins it and the registry verified it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelFile {
    /// The name the manifest gives it (`det.onnx`).
    pub name: String,
    /// Its sha256, lowercase hex: the same bytes wherever they are, so the key of a cache.
    pub sha256: String,
    /// The verified file.
    pub path: PathBuf,
}

impl ModelFile {
    /// Model `name`, pinned by `sha256`, at `path`.
    pub fn new(name: impl Into<String>, sha256: impl Into<String>, path: PathBuf) -> ModelFile {
        ModelFile {
            name: name.into(),
            sha256: sha256.into(),
            path,
        }
    }
}

/// A dense `f32` tensor: its shape and its elements in row-major order.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// The dimensions.
    pub shape: Vec<usize>,
    /// The elements; as many as the product of `shape`.
    pub data: Vec<f32>,
}

/// A matrix of a `matmul` request: its shape, and its elements row by row, or column by
/// column when `column_major`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Matrix<'a> {
    /// How many rows it has.
    pub rows: usize,
    /// How many columns it has.
    pub cols: usize,
    /// Its `rows × cols` elements.
    pub data: &'a [f32],
    /// Whether `data` holds it column by column (its transpose's rows).
    pub column_major: bool,
}

impl Matrix<'_> {
    /// The element at row `i`, column `j`.
    pub fn at(&self, i: usize, j: usize) -> f32 {
        if self.column_major {
            self.data[j * self.rows + i]
        } else {
            self.data[i * self.cols + j]
        }
    }
}

/// Runs models on the host for [`MODELS_RUN`]. Called on a thread that may block for as long
/// as the model takes; the call's deadline is enforced around it.
pub trait ModelRunner: Send + Sync + fmt::Debug {
    /// The values of `keys` in `model`'s metadata, for the keys it has.
    fn metadata(&self, model: &ModelFile, keys: &[String])
    -> Result<Vec<(String, String)>, String>;

    /// Runs `model` on `inputs` (in the order of its inputs) and returns all its outputs.
    fn run(&self, model: &ModelFile, inputs: Vec<Tensor>) -> Result<Vec<Tensor>, String>;

    /// Runs `model` once per entry of `runs`, each independent of the others, and returns
    /// each run's outputs passed through `finish`, in the order of `runs`. `finish` is called
    /// as each run ends, so that a reduction (an arg-max) need not wait for the other runs'
    /// full outputs; an error from it or from a run stops the runs not yet started. The
    /// default runs them one after another; a runner with cores to spare runs them at once.
    ///
    /// # Errors
    /// A run (or `finish`) that failed, as [`run`](Self::run) reports it: the first in the
    /// order of `runs` when they run one after another, whichever failed first when at once.
    fn run_each(
        &self,
        model: &ModelFile,
        runs: Vec<Vec<Tensor>>,
        finish: &(dyn Fn(Vec<Tensor>) -> Result<Vec<Tensor>, String> + Sync),
    ) -> Result<Vec<Vec<Tensor>>, String> {
        runs.into_iter()
            .map(|inputs| finish(self.run(model, inputs)?))
            .collect()
    }

    /// The product of `lhs` (`[m, k]`) and `rhs` (`[k, n]`), its `m × n` elements laid out
    /// column by column when `column_major`, row by row otherwise. The shapes are checked
    /// before the call (inner dimensions that agree, none zero, the data the shapes say); the
    /// runner computes each element with its own matrix kernels.
    fn matmul(
        &self,
        lhs: Matrix<'_>,
        rhs: Matrix<'_>,
        column_major: bool,
    ) -> Result<Vec<f32>, String>;
}

/// What one call may run: its tool's verified models, through the host's runner.
#[derive(Debug, Clone)]
pub(crate) struct CallModels {
    pub(crate) runner: Arc<dyn ModelRunner>,
    pub(crate) files: Vec<ModelFile>,
}

/// A request, checked: which model, and what to do with it.
pub(crate) enum Work {
    Metadata(ModelFile, Vec<String>),
    Run(Runs),
    /// `lhs` · `rhs`, their shapes checked, and the three layouts (lhs, rhs, product): column
    /// by column where `true`.
    Matmul(Tensor, Tensor, [bool; 3]),
}

/// A checked `run` request.
pub(crate) struct Runs {
    file: ModelFile,
    /// Each run's inputs.
    inputs: Vec<Vec<Tensor>>,
    /// Asked as `runs` (answered as `runs`), not `inputs`.
    several: bool,
    argmax: Option<ArgMax>,
}

/// `"argmax"`: each output's last axis reduced to its largest element's index and value.
#[derive(Debug, Clone, PartialEq)]
struct ArgMax {
    /// The classes that may win, in increasing order; every class when `None`.
    among: Option<Vec<usize>>,
}

impl ArgMax {
    /// `tensor` of shape `[…, C]` as `[…, 2]`: each row's (index, value) of its largest
    /// element among the candidates, the first one on a tie; `(0, -inf)` when no candidate
    /// is larger than `-inf` (a NaN never wins).
    fn reduce(&self, tensor: Tensor) -> Result<Tensor, String> {
        let Some((&classes, rows)) = tensor.shape.split_last() else {
            return Err("an output is a scalar, which has no axis to reduce".to_owned());
        };
        if classes == 0 || classes > MAX_ARGMAX_CLASSES {
            return Err(format!(
                "an output's last axis has {classes} classes; an arg-max reduces 1 to {MAX_ARGMAX_CLASSES}"
            ));
        }
        if let Some(&last) = self.among.as_ref().and_then(|among| among.last())
            && last >= classes
        {
            return Err(format!(
                "`argmax.among` names class {last}, but the output has {classes} classes"
            ));
        }
        let mut data = Vec::with_capacity(tensor.data.len() / classes * 2);
        for row in tensor.data.chunks_exact(classes) {
            let mut best = (0usize, f32::NEG_INFINITY);
            let mut consider = |class: usize, value: f32| {
                if value > best.1 {
                    best = (class, value);
                }
            };
            match &self.among {
                Some(among) => among.iter().for_each(|&c| consider(c, row[c])),
                None => row.iter().enumerate().for_each(|(c, &v)| consider(c, v)),
            }
            data.extend([best.0 as f32, best.1]);
        }
        let mut shape = rows.to_vec();
        shape.push(2);
        Ok(Tensor { shape, data })
    }
}

fn failed(message: impl fmt::Display) -> ServiceError {
    ServiceError::Failed(format!("a `{MODELS_RUN}` request {message}"))
}

impl CallModels {
    /// Reads and checks `request`: a model of this tool, and tensors whose bytes match their
    /// shapes exactly.
    pub(crate) fn parse(&self, tool: &str, request: &[u8]) -> Result<Work, ServiceError> {
        let split = request
            .iter()
            .position(|&b| b == b'\n')
            .unwrap_or(request.len());
        let (header, data) = request.split_at(split);
        let data = data.get(1..).unwrap_or_default();
        let header: Value = serde_json::from_slice(header)
            .map_err(|e| failed(format_args!("has a header that is not JSON ({e})")))?;
        let malformed = || {
            failed(
                "has a malformed header: it must be {\"op\": \"metadata\", \"model\", \"keys\"}, {\"op\": \"run\", \"model\", \"inputs\"} or {\"op\": \"matmul\", \"inputs\"}",
            )
        };
        if header["op"] == "matmul" {
            return parse_matmul(&header, data);
        }
        let name = header["model"].as_str().ok_or_else(malformed)?;
        let Some(file) = self.files.iter().find(|f| f.name == name) else {
            let names: Vec<&str> = self.files.iter().map(|f| f.name.as_str()).collect();
            return Err(ServiceError::Denied(format!(
                "{tool} has no model `{name}`: a tool runs only the models its manifest's `model_dependencies` pin ({})",
                names.join(", ")
            )));
        };
        match header["op"].as_str() {
            Some("metadata") => {
                let keys: Vec<String> = header["keys"]
                    .as_array()
                    .ok_or_else(malformed)?
                    .iter()
                    .map(|k| k.as_str().map(str::to_owned))
                    .collect::<Option<_>>()
                    .ok_or_else(malformed)?;
                if keys.len() > MAX_KEYS {
                    return Err(failed(format_args!("asks for more than {MAX_KEYS} keys")));
                }
                if !data.is_empty() {
                    return Err(failed("for metadata carries tensor bytes"));
                }
                Ok(Work::Metadata(file.clone(), keys))
            }
            Some("run") => {
                let (runs, several) = match (header.get("inputs"), header.get("runs")) {
                    (Some(inputs), None) => (vec![shapes(inputs).ok_or_else(malformed)?], false),
                    (None, Some(runs)) => {
                        let runs = runs.as_array().ok_or_else(malformed)?;
                        if runs.len() > MAX_RUNS {
                            return Err(failed(format_args!(
                                "asks for {} runs, more than {MAX_RUNS}",
                                runs.len()
                            )));
                        }
                        let runs = runs.iter().map(shapes).collect::<Option<_>>();
                        (runs.ok_or_else(malformed)?, true)
                    }
                    _ => {
                        return Err(failed(
                            "to `run` must have either `inputs` (one run) or `runs` (several)",
                        ));
                    }
                };
                let argmax = match header.get("argmax") {
                    None | Some(Value::Null) => None,
                    Some(argmax) => Some(parse_argmax(argmax)?),
                };
                let mut rest = data;
                let mut inputs = Vec::with_capacity(runs.len());
                for shapes in runs {
                    inputs.push(take_tensors(shapes, &mut rest)?);
                }
                if !rest.is_empty() {
                    return Err(failed(format_args!(
                        "has {} bytes of data beyond its inputs' shapes",
                        rest.len()
                    )));
                }
                Ok(Work::Run(Runs {
                    file: file.clone(),
                    inputs,
                    several,
                    argmax,
                }))
            }
            _ => Err(malformed()),
        }
    }
}

/// A JSON array of shapes, each an array of dimensions; `None` if it is anything else.
fn shapes(list: &Value) -> Option<Vec<Vec<usize>>> {
    list.as_array()?
        .iter()
        .map(|shape| {
            shape
                .as_array()?
                .iter()
                .map(|d| usize::try_from(d.as_u64()?).ok())
                .collect()
        })
        .collect()
}

/// A `matmul` request: two matrices, `[M, K]` and `[K, N]`, every dimension at least 1, whose
/// product has at most [`MAX_PRODUCT_ELEMENTS`] elements, and exactly their bytes.
fn parse_matmul(header: &Value, data: &[u8]) -> Result<Work, ServiceError> {
    let (m, k, n) = match shapes(&header["inputs"]).as_deref() {
        Some([lhs, rhs]) => match (lhs.as_slice(), rhs.as_slice()) {
            (&[m, k], &[k2, n]) if k == k2 => (m, k, n),
            _ => {
                return Err(failed(format_args!(
                    "to `matmul` multiplies a {lhs:?} matrix by a {rhs:?} one: it takes [M, K] and [K, N]"
                )));
            }
        },
        _ => {
            return Err(failed(
                "to `matmul` must have `inputs`: two shapes, [M, K] and [K, N]",
            ));
        }
    };
    if m == 0 || k == 0 || n == 0 {
        return Err(failed(format_args!(
            "to `matmul` has a dimension of 0 ({m}×{k} by {k}×{n})"
        )));
    }
    if m.checked_mul(n).is_none_or(|e| e > MAX_PRODUCT_ELEMENTS) {
        return Err(failed(format_args!(
            "to `matmul` asks for a {m}×{n} product, more than {MAX_PRODUCT_ELEMENTS} elements"
        )));
    }
    let column_major = match header.get("column_major") {
        None | Some(Value::Null) => [false; 3],
        Some(layouts) => layouts
            .as_array()
            .and_then(|l| {
                let flags: Vec<bool> = l.iter().map(Value::as_bool).collect::<Option<_>>()?;
                <[bool; 3]>::try_from(flags).ok()
            })
            .ok_or_else(|| {
                failed(
                    "to `matmul` has a `column_major` that is not [LHS, RHS, PRODUCT] (booleans)",
                )
            })?,
    };
    let mut rest = data;
    let mut inputs = take_tensors(vec![vec![m, k], vec![k, n]], &mut rest)?.into_iter();
    if !rest.is_empty() {
        return Err(failed(format_args!(
            "has {} bytes of data beyond its matrices' shapes",
            rest.len()
        )));
    }
    match (inputs.next(), inputs.next()) {
        (Some(lhs), Some(rhs)) => Ok(Work::Matmul(lhs, rhs, column_major)),
        _ => Err(failed("to `matmul` lost a matrix")),
    }
}

/// `"argmax"`: `{}`, or `{"among": [CLASS, …]}` (sorted and deduplicated here).
fn parse_argmax(argmax: &Value) -> Result<ArgMax, ServiceError> {
    let bad = || failed("has an `argmax` that is not {} or {\"among\": [CLASS, …]}");
    let fields = argmax.as_object().ok_or_else(bad)?;
    if fields.keys().any(|k| k != "among") {
        return Err(bad());
    }
    let among = match fields.get("among") {
        None => None,
        Some(among) => {
            let among = among.as_array().ok_or_else(bad)?;
            if among.len() > MAX_ARGMAX_CLASSES {
                return Err(bad());
            }
            let mut classes = among
                .iter()
                .map(|c| usize::try_from(c.as_u64()?).ok())
                .collect::<Option<Vec<_>>>()
                .ok_or_else(bad)?;
            classes.sort_unstable();
            classes.dedup();
            Some(classes)
        }
    };
    Ok(ArgMax { among })
}

/// Reads the tensors of `shapes` off the front of `rest`; their bytes must be there.
fn take_tensors(shapes: Vec<Vec<usize>>, rest: &mut &[u8]) -> Result<Vec<Tensor>, ServiceError> {
    let mut tensors = Vec::with_capacity(shapes.len());
    for (i, shape) in shapes.into_iter().enumerate() {
        if shape.len() > MAX_RANK {
            return Err(failed(format_args!(
                "has input {i} of {} dimensions, more than {MAX_RANK}",
                shape.len()
            )));
        }
        let bytes = shape
            .iter()
            .try_fold(4usize, |n, &d| n.checked_mul(d))
            .filter(|&n| n <= rest.len())
            .ok_or_else(|| {
                failed(format_args!(
                    "has input {i} of shape {shape:?}, more elements than its {} bytes of data hold",
                    rest.len()
                ))
            })?;
        let (these, after) = rest.split_at(bytes);
        *rest = after;
        let data = these
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        tensors.push(Tensor { shape, data });
    }
    Ok(tensors)
}

impl Work {
    /// Does the work on this thread, which may block; the answer on the wire.
    /// `stop`, once set, stops the runs not yet finished: the call no longer waits for them.
    pub(crate) fn answer(
        self,
        runner: &dyn ModelRunner,
        stop: &AtomicBool,
    ) -> Result<Vec<u8>, ServiceError> {
        match self {
            Work::Metadata(file, keys) => {
                let found = runner
                    .metadata(&file, &keys)
                    .map_err(|e| model_failed(&file, e))?;
                let map: serde_json::Map<String, serde_json::Value> =
                    found.into_iter().map(|(k, v)| (k, v.into())).collect();
                let mut answer = json!({"metadata": map}).to_string().into_bytes();
                answer.push(b'\n');
                Ok(answer)
            }
            Work::Run(runs) => runs.answer(runner, stop),
            Work::Matmul(lhs, rhs, [lhs_columns, rhs_columns, columns]) => {
                let (m, k, n) = (lhs.shape[0], lhs.shape[1], rhs.shape[1]);
                let product = runner
                    .matmul(
                        Matrix {
                            rows: m,
                            cols: k,
                            data: &lhs.data,
                            column_major: lhs_columns,
                        },
                        Matrix {
                            rows: k,
                            cols: n,
                            data: &rhs.data,
                            column_major: rhs_columns,
                        },
                        columns,
                    )
                    .map_err(|e| {
                        ServiceError::Failed(format!("the host's matrix product failed: {e}"))
                    })?;
                if product.len() != m * n {
                    return Err(ServiceError::Failed(format!(
                        "the host's matrix product has {} elements, not the {m}×{n} asked",
                        product.len()
                    )));
                }
                let mut answer = json!({"outputs": [[m, n]]}).to_string().into_bytes();
                answer.push(b'\n');
                put_floats(&mut answer, &product);
                Ok(answer)
            }
        }
    }
}

impl Runs {
    fn answer(self, runner: &dyn ModelRunner, stop: &AtomicBool) -> Result<Vec<u8>, ServiceError> {
        let Runs {
            file,
            inputs,
            several,
            argmax,
        } = self;
        let asked = inputs.len();
        let finish = |outputs: Vec<Tensor>| -> Result<Vec<Tensor>, String> {
            if stop.load(Ordering::Relaxed) {
                return Err("the call stopped waiting for it".to_owned());
            }
            for (i, t) in outputs.iter().enumerate() {
                if t.shape.iter().product::<usize>() != t.data.len() {
                    return Err(format!(
                        "output {i}'s shape {:?} does not match its data",
                        t.shape
                    ));
                }
            }
            match &argmax {
                Some(argmax) => outputs.into_iter().map(|t| argmax.reduce(t)).collect(),
                None => Ok(outputs),
            }
        };
        let runs = if several {
            runner.run_each(&file, inputs, &finish)
        } else {
            let inputs = inputs.into_iter().next().unwrap_or_default();
            runner
                .run(&file, inputs)
                .and_then(|outputs| Ok(vec![finish(outputs)?]))
        }
        .map_err(|e| model_failed(&file, e))?;
        if runs.len() != asked {
            return Err(model_failed(
                &file,
                format!("{asked} runs were asked and {} answered", runs.len()),
            ));
        }
        let shapes: Vec<Vec<&[usize]>> = runs
            .iter()
            .map(|outputs| outputs.iter().map(|t| t.shape.as_slice()).collect())
            .collect();
        let header = if several {
            json!({"runs": shapes})
        } else {
            json!({"outputs": shapes.first()})
        };
        let mut answer = header.to_string().into_bytes();
        answer.push(b'\n');
        let elements: usize = runs.iter().flatten().map(|t| t.data.len()).sum();
        answer.reserve(elements * 4);
        for t in runs.iter().flatten() {
            put_floats(&mut answer, &t.data);
        }
        Ok(answer)
    }
}

/// Appends `values` to an answer as little-endian `f32`s.
fn put_floats(answer: &mut Vec<u8>, values: &[f32]) {
    answer.reserve(values.len() * 4);
    for v in values {
        answer.extend_from_slice(&v.to_le_bytes());
    }
}

fn model_failed(file: &ModelFile, message: String) -> ServiceError {
    ServiceError::Failed(format!("the model `{}` failed: {message}", file.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Doubler;

    impl ModelRunner for Doubler {
        fn metadata(
            &self,
            _: &ModelFile,
            keys: &[String],
        ) -> Result<Vec<(String, String)>, String> {
            Ok(keys
                .iter()
                .filter(|k| k.as_str() == "character")
                .map(|k| (k.clone(), "abc".to_owned()))
                .collect())
        }

        fn run(&self, _: &ModelFile, inputs: Vec<Tensor>) -> Result<Vec<Tensor>, String> {
            Ok(inputs
                .into_iter()
                .map(|t| Tensor {
                    shape: t.shape,
                    data: t.data.iter().map(|v| v * 2.0).collect(),
                })
                .collect())
        }

        /// The schoolbook product, in `f64`.
        fn matmul(
            &self,
            lhs: Matrix<'_>,
            rhs: Matrix<'_>,
            column_major: bool,
        ) -> Result<Vec<f32>, String> {
            let (m, k, n) = (lhs.rows, lhs.cols, rhs.cols);
            Ok((0..m * n)
                .map(|at| {
                    let (i, j) = if column_major {
                        (at % m, at / m)
                    } else {
                        (at / n, at % n)
                    };
                    (0..k)
                        .map(|p| f64::from(lhs.at(i, p)) * f64::from(rhs.at(p, j)))
                        .sum::<f64>() as f32
                })
                .collect())
        }
    }

    fn models() -> CallModels {
        CallModels {
            runner: Arc::new(Doubler),
            files: vec![ModelFile {
                name: "det.onnx".to_owned(),
                sha256: "00".repeat(32),
                path: PathBuf::from("/nowhere/det.onnx"),
            }],
        }
    }

    fn request(header: &str, values: &[f32]) -> Vec<u8> {
        let mut bytes = header.as_bytes().to_vec();
        bytes.push(b'\n');
        for v in values {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        bytes
    }

    fn answer(request: &[u8]) -> Result<Vec<u8>, ServiceError> {
        let models = models();
        models
            .parse("ocr@0.1.0", request)?
            .answer(models.runner.as_ref(), &AtomicBool::new(false))
    }

    #[test]
    fn runs_a_pinned_model_on_the_tensors_sent() {
        let got = answer(&request(
            r#"{"op":"run","model":"det.onnx","inputs":[[2,2],[1]]}"#,
            &[1.0, 2.0, 3.0, 4.0, -0.5],
        ))
        .unwrap();
        assert_eq!(
            got,
            request(r#"{"outputs":[[2,2],[1]]}"#, &[2.0, 4.0, 6.0, 8.0, -1.0])
        );
        let got = answer(&request(
            r#"{"op":"metadata","model":"det.onnx","keys":["character","other"]}"#,
            &[],
        ))
        .unwrap();
        assert_eq!(got, b"{\"metadata\":{\"character\":\"abc\"}}\n");
    }

    #[test]
    fn runs_several_and_reduces_each_row_to_its_arg_max() {
        // Two runs, each answered in order after the other's tensors.
        let got = answer(&request(
            r#"{"op":"run","model":"det.onnx","runs":[[[2]],[[1],[3]]]}"#,
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        ))
        .unwrap();
        assert_eq!(
            got,
            request(
                r#"{"runs":[[[2]],[[1],[3]]]}"#,
                &[2.0, 4.0, 6.0, 8.0, 10.0, 12.0]
            )
        );
        // Rows of 4 classes (doubled by the model): the largest's index and value; the first
        // on a tie; a NaN never wins; a row with nothing above -inf is (0, -inf).
        let rows = [
            1.0,
            3.0,
            2.0,
            0.0, //
            5.0,
            1.0,
            5.0,
            4.0, //
            f32::NAN,
            -1.0,
            f32::NAN,
            -3.0, //
            f32::NEG_INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::NEG_INFINITY,
        ];
        let got = answer(&request(
            r#"{"op":"run","model":"det.onnx","inputs":[[2,2,4]],"argmax":{}}"#,
            &rows,
        ))
        .unwrap();
        let expected = [1.0, 6.0, 0.0, 10.0, 1.0, -2.0, 0.0, f32::NEG_INFINITY];
        assert_eq!(got, request(r#"{"outputs":[[2,2,2]]}"#, &expected));
        // Only the classes listed may win, in any order, repeated or not.
        let got = answer(&request(
            r#"{"op":"run","model":"det.onnx","runs":[[[2,4]]],"argmax":{"among":[3,0,3]}}"#,
            &rows[..8],
        ))
        .unwrap();
        assert_eq!(
            got,
            request(r#"{"runs":[[[2,2]]]}"#, &[0.0, 2.0, 0.0, 10.0])
        );
    }

    #[test]
    fn multiplies_two_matrices_without_naming_a_model() {
        // [[1, 2, 3], [4, 5, 6]] · [[1, 0], [0, 1], [2, -1]]
        let got = answer(&request(
            r#"{"op":"matmul","inputs":[[2,3],[3,2]]}"#,
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 1.0, 0.0, 0.0, 1.0, 2.0, -1.0],
        ))
        .unwrap();
        assert_eq!(
            got,
            request(r#"{"outputs":[[2,2]]}"#, &[7.0, -1.0, 16.0, -1.0])
        );
        // The same matrices, the left one sent column by column, the product asked that way.
        let got = answer(&request(
            r#"{"op":"matmul","inputs":[[2,3],[3,2]],"column_major":[true,false,true]}"#,
            &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0, 1.0, 0.0, 0.0, 1.0, 2.0, -1.0],
        ))
        .unwrap();
        assert_eq!(
            got,
            request(r#"{"outputs":[[2,2]]}"#, &[7.0, 16.0, -1.0, -1.0])
        );
    }

    #[test]
    fn refuses_matrix_products_of_the_wrong_shapes_or_bytes() {
        for (header, values, says) in [
            (
                r#"{"op":"matmul","inputs":[[2,3],[2,2]]}"#,
                &[0.0f32; 10][..],
                "multiplies a [2, 3] matrix by a [2, 2] one",
            ),
            (
                r#"{"op":"matmul","inputs":[[2,3,1],[3,2]]}"#,
                &[0.0; 12][..],
                "takes [M, K] and [K, N]",
            ),
            (
                r#"{"op":"matmul","inputs":[[1,1]]}"#,
                &[0.0][..],
                "two shapes",
            ),
            (r#"{"op":"matmul"}"#, &[][..], "two shapes"),
            (
                r#"{"op":"matmul","inputs":[[1,1],[1,1],[1,1]]}"#,
                &[0.0; 3][..],
                "two shapes",
            ),
            // No elements sent, and yet a product of a billion: refused before allocating it.
            (
                r#"{"op":"matmul","inputs":[[100000,0],[0,100000]]}"#,
                &[][..],
                "dimension of 0",
            ),
            (
                r#"{"op":"matmul","inputs":[[10000,1],[1,10000]]}"#,
                &[0.0; 20000][..],
                "more than 67108864 elements",
            ),
            (
                r#"{"op":"matmul","inputs":[[2,2],[2,2]]}"#,
                &[0.0; 7][..],
                "more elements",
            ),
            (
                r#"{"op":"matmul","inputs":[[1,1],[1,1]]}"#,
                &[0.0; 3][..],
                "beyond its matrices",
            ),
            (
                r#"{"op":"matmul","inputs":[[1,1],[1,1]],"column_major":[true,false]}"#,
                &[0.0; 2][..],
                "[LHS, RHS, PRODUCT]",
            ),
        ] {
            let error = answer(&request(header, values)).unwrap_err();
            let ServiceError::Failed(message) = &error else {
                panic!("{header}: {error:?}")
            };
            assert!(message.contains(says), "{header}: {message}");
        }
    }

    #[test]
    fn a_stopped_call_starts_no_more_runs() {
        let models = models();
        let work = models
            .parse(
                "ocr@0.1.0",
                &request(
                    r#"{"op":"run","model":"det.onnx","runs":[[[1]],[[1]]]}"#,
                    &[1.0, 2.0],
                ),
            )
            .unwrap();
        let error = work
            .answer(models.runner.as_ref(), &AtomicBool::new(true))
            .unwrap_err();
        let ServiceError::Failed(message) = &error else {
            panic!("{error:?}")
        };
        assert!(message.contains("stopped waiting"), "{message}");
    }

    #[test]
    fn refuses_other_models_and_tensors_that_do_not_match_their_bytes() {
        let denied = answer(&request(
            r#"{"op":"run","model":"../../keys/receipt.key","inputs":[]}"#,
            &[],
        ))
        .unwrap_err();
        let ServiceError::Denied(message) = denied else {
            panic!("{denied:?}")
        };
        assert!(
            message.contains("only the models its manifest"),
            "{message}"
        );
        assert!(message.contains("det.onnx"), "{message}");
        for (header, values, says) in [
            (
                r#"{"op":"run","model":"det.onnx","inputs":[[2,2]]}"#,
                &[1.0f32; 3][..],
                "more elements",
            ),
            (
                r#"{"op":"run","model":"det.onnx","inputs":[[1]]}"#,
                &[1.0, 2.0][..],
                "beyond",
            ),
            (
                r#"{"op":"run","model":"det.onnx","inputs":[[4294967296,4294967296,4294967296]]}"#,
                &[][..],
                "more elements",
            ),
            (
                r#"{"op":"run","model":"det.onnx","inputs":[[1,1,1,1,1,1,1,1,1]]}"#,
                &[1.0][..],
                "dimensions",
            ),
            (
                r#"{"op":"train","model":"det.onnx"}"#,
                &[][..],
                "malformed header",
            ),
            (
                r#"{"op":"metadata","model":"det.onnx","keys":[]}"#,
                &[1.0][..],
                "tensor bytes",
            ),
            (
                r#"{"op":"run","model":"det.onnx","inputs":[[1]],"runs":[[[1]]]}"#,
                &[1.0][..],
                "either `inputs`",
            ),
            (
                r#"{"op":"run","model":"det.onnx","runs":[[[1]],[[2]]]}"#,
                &[1.0, 2.0][..],
                "more elements",
            ),
            (
                r#"{"op":"run","model":"det.onnx","inputs":[[1,2]],"argmax":{"among":[2]}}"#,
                &[1.0, 2.0][..],
                "names class 2, but the output has 2 classes",
            ),
            (
                r#"{"op":"run","model":"det.onnx","inputs":[[1,2]],"argmax":{"among":[-1]}}"#,
                &[1.0, 2.0][..],
                "`argmax` that is not",
            ),
            (
                r#"{"op":"run","model":"det.onnx","inputs":[[1,2]],"argmax":{"top":3}}"#,
                &[1.0, 2.0][..],
                "`argmax` that is not",
            ),
            (
                r#"{"op":"run","model":"det.onnx","inputs":[[1,0]],"argmax":{}}"#,
                &[][..],
                "last axis has 0 classes",
            ),
            (
                r#"{"op":"run","model":"det.onnx","inputs":[[]],"argmax":{}}"#,
                &[1.0][..],
                "scalar",
            ),
        ] {
            let error = answer(&request(header, values)).unwrap_err();
            let ServiceError::Failed(message) = &error else {
                panic!("{header}: {error:?}")
            };
            assert!(message.contains(says), "{header}: {message}");
        }
        let too_many = format!(
            r#"{{"op":"run","model":"det.onnx","runs":[{}]}}"#,
            vec!["[]"; MAX_RUNS + 1].join(",")
        );
        let error = answer(&request(&too_many, &[])).unwrap_err();
        assert!(
            matches!(&error, ServiceError::Failed(m) if m.contains("more than 256")),
            "{error:?}"
        );
        // A request cut inside a value is refused, not read short.
        let mut cut = request(r#"{"op":"run","model":"det.onnx","inputs":[[1]]}"#, &[1.0]);
        cut.pop();
        assert!(matches!(answer(&cut), Err(ServiceError::Failed(_))));
    }
}
