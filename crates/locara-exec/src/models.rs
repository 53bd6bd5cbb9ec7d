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
//!   SHAPE an array of dimensions, in the order of the model's inputs and outputs.

use std::{fmt, path::PathBuf, sync::Arc};

use locara_sandbox::ServiceError;
use serde_json::{Value, json};

/// The service that runs a tool's pinned models on the host.
pub const MODELS_RUN: &str = "models.run";

/// The most dimensions a tensor may have.
const MAX_RANK: usize = 8;
/// The most keys one metadata request may ask for.
const MAX_KEYS: usize = 64;

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

/// Runs models on the host for [`MODELS_RUN`]. Called on a thread that may block for as long
/// as the model takes; the call's deadline is enforced around it.
pub trait ModelRunner: Send + Sync + fmt::Debug {
    /// The values of `keys` in `model`'s metadata, for the keys it has.
    fn metadata(&self, model: &ModelFile, keys: &[String])
    -> Result<Vec<(String, String)>, String>;

    /// Runs `model` on `inputs` (in the order of its inputs) and returns all its outputs.
    fn run(&self, model: &ModelFile, inputs: Vec<Tensor>) -> Result<Vec<Tensor>, String>;
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
    Run(ModelFile, Vec<Tensor>),
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
                "has a malformed header: it must be {\"op\": \"metadata\", \"model\", \"keys\"} or {\"op\": \"run\", \"model\", \"inputs\"}",
            )
        };
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
                let inputs: Vec<Vec<usize>> = header["inputs"]
                    .as_array()
                    .ok_or_else(malformed)?
                    .iter()
                    .map(|shape| {
                        shape
                            .as_array()?
                            .iter()
                            .map(|d| usize::try_from(d.as_u64()?).ok())
                            .collect()
                    })
                    .collect::<Option<_>>()
                    .ok_or_else(malformed)?;
                let mut tensors = Vec::with_capacity(inputs.len());
                let mut rest = data;
                for (i, shape) in inputs.into_iter().enumerate() {
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
                    rest = after;
                    let data = these
                        .chunks_exact(4)
                        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .collect();
                    tensors.push(Tensor { shape, data });
                }
                if !rest.is_empty() {
                    return Err(failed(format_args!(
                        "has {} bytes of data beyond its inputs' shapes",
                        rest.len()
                    )));
                }
                Ok(Work::Run(file.clone(), tensors))
            }
            _ => Err(malformed()),
        }
    }
}

impl Work {
    /// Does the work on this thread, which may block; the answer on the wire.
    pub(crate) fn answer(self, runner: &dyn ModelRunner) -> Result<Vec<u8>, ServiceError> {
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
            Work::Run(file, inputs) => {
                let outputs = runner
                    .run(&file, inputs)
                    .map_err(|e| model_failed(&file, e))?;
                for (i, t) in outputs.iter().enumerate() {
                    if t.shape.iter().product::<usize>() != t.data.len() {
                        return Err(model_failed(
                            &file,
                            format!("output {i}'s shape {:?} does not match its data", t.shape),
                        ));
                    }
                }
                let shapes: Vec<&[usize]> = outputs.iter().map(|t| t.shape.as_slice()).collect();
                let mut answer = json!({"outputs": shapes}).to_string().into_bytes();
                answer.push(b'\n');
                let elements: usize = outputs.iter().map(|t| t.data.len()).sum();
                answer.reserve(elements * 4);
                for t in &outputs {
                    for v in &t.data {
                        answer.extend_from_slice(&v.to_le_bytes());
                    }
                }
                Ok(answer)
            }
        }
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
            .answer(models.runner.as_ref())
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
        ] {
            let error = answer(&request(header, values)).unwrap_err();
            let ServiceError::Failed(message) = &error else {
                panic!("{header}: {error:?}")
            };
            assert!(message.contains(says), "{header}: {message}");
        }
        // A request cut inside a value is refused, not read short.
        let mut cut = request(r#"{"op":"run","model":"det.onnx","inputs":[[1]]}"#, &[1.0]);
        cut.pop();
        assert!(matches!(answer(&cut), Err(ServiceError::Failed(_))));
    }
}
