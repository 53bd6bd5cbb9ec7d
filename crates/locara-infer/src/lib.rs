//! The host side of the `models.run` service: runs the ONNX models a wasm tool's manifest pins
//! natively, with rten, on the machine's cores, and answers with their outputs.
//!
//! It knows how to load a verified model file once per process (checking its sha256 against the
//! manifest's before the first use, then keeping it under that hash, at most
//! [`MAX_CACHED_MODELS`] of them), how to feed it `f32` tensors and read all its outputs back,
//! how to run a request's independent runs at once on rten's pool (each run's operators then
//! share the cores with the others' rather than splitting small tensors across them), and
//! that a model which panics has failed rather than taken the host down. It deliberately
//! knows nothing of tools, grants, paths a guest chose or the wire format: `locara-exec`
//! decides which call may run which of its tool's models, checks every request's tensors
//! against their bytes, and enforces the call's deadline around [`RtenModels::run`]. Only
//! `f32` inputs and outputs are supported, which is what image and audio models take.
//!
//! It also multiplies matrices for a guest that runs its model itself ([`ModelRunner::matmul`]):
//! with `gemm`, the kernels candle uses natively, on rayon's pool, so a product comes out as
//! it would in the same model run natively. It knows nothing of which products are worth the
//! round trip; the guest decides.

use std::{
    collections::VecDeque,
    panic::AssertUnwindSafe,
    sync::{Arc, Mutex},
};

use locara_exec::{Matrix, ModelFile, ModelRunner, Tensor};
use rayon::prelude::*;
use rten::{Model, Value, ValueOrView};
use rten_tensor::Layout;
use sha2::{Digest, Sha256};

/// How many loaded models are kept; the oldest is dropped past it.
pub const MAX_CACHED_MODELS: usize = 8;

/// Runs models with rten, keeping the ones it loaded.
#[derive(Debug, Default)]
pub struct RtenModels {
    loaded: Mutex<VecDeque<(String, Arc<Model>)>>,
}

impl RtenModels {
    /// A runner with nothing loaded yet.
    pub fn new() -> RtenModels {
        RtenModels::default()
    }

    /// `file`'s model, from the cache or loaded (and its hash checked) now.
    fn model(&self, file: &ModelFile) -> Result<Arc<Model>, String> {
        if let Some((_, model)) = self.lock().iter().find(|(hash, _)| *hash == file.sha256) {
            return Ok(Arc::clone(model));
        }
        // Loaded outside the lock: two calls may both load a model the first time, and the
        // second one's copy is the one kept.
        let bytes = std::fs::read(&file.path)
            .map_err(|e| format!("cannot read {}: {e}", file.path.display()))?;
        let hash = hex::encode(Sha256::digest(&bytes));
        if hash != file.sha256 {
            return Err(format!(
                "{} has sha256 {hash}, not the {} its manifest pins",
                file.path.display(),
                file.sha256
            ));
        }
        let model = std::panic::catch_unwind(|| Model::load(bytes))
            .map_err(|_| "loading it panicked".to_owned())?
            .map_err(|e| format!("cannot load {}: {e}", file.path.display()))?;
        let model = Arc::new(model);
        let mut loaded = self.lock();
        loaded.retain(|(hash, _)| *hash != file.sha256);
        if loaded.len() == MAX_CACHED_MODELS {
            loaded.pop_front();
        }
        loaded.push_back((file.sha256.clone(), Arc::clone(&model)));
        Ok(model)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(String, Arc<Model>)>> {
        self.loaded.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ModelRunner for RtenModels {
    fn metadata(&self, file: &ModelFile, keys: &[String]) -> Result<Vec<(String, String)>, String> {
        let model = self.model(file)?;
        Ok(keys
            .iter()
            .filter_map(|key| Some((key.clone(), model.metadata().get(key)?.to_owned())))
            .collect())
    }

    fn run(&self, file: &ModelFile, inputs: Vec<Tensor>) -> Result<Vec<Tensor>, String> {
        let model = self.model(file)?;
        let ids = model.input_ids();
        if inputs.len() != ids.len() {
            return Err(format!(
                "it takes {} inputs, and was given {}",
                ids.len(),
                inputs.len()
            ));
        }
        let inputs: Vec<_> = ids
            .iter()
            .zip(inputs)
            .map(|(&id, t)| {
                let tensor = rten_tensor::Tensor::from_data(&t.shape, t.data);
                (id, ValueOrView::from(Value::from(tensor)))
            })
            .collect();
        // rten checks shapes against the graph and reports what does not fit as an error;
        // an operator that panics on a shape it did not expect is a failure of this request.
        let outputs = std::panic::catch_unwind(AssertUnwindSafe(|| {
            model.run(inputs, model.output_ids(), None)
        }))
        .map_err(|_| "running it panicked".to_owned())?
        .map_err(|e| e.to_string())?;
        outputs
            .into_iter()
            .enumerate()
            .map(|(i, value)| {
                let tensor: rten_tensor::Tensor<f32> = value
                    .try_into()
                    .map_err(|e| format!("its output {i} is not f32: {e}"))?;
                Ok(Tensor {
                    shape: tensor.shape().to_vec(),
                    data: tensor.into_data(),
                })
            })
            .collect()
    }

    fn matmul(
        &self,
        lhs: Matrix<'_>,
        rhs: Matrix<'_>,
        column_major: bool,
    ) -> Result<Vec<f32>, String> {
        let (m, k, n) = (lhs.rows, lhs.cols, rhs.cols);
        if rhs.rows != k {
            return Err(format!(
                "cannot multiply a {m}×{k} matrix by a {}×{n} one",
                rhs.rows
            ));
        }
        let elements = m.checked_mul(n).ok_or("the product's size overflows")?;
        if Some(lhs.data.len()) != m.checked_mul(k) || Some(rhs.data.len()) != k.checked_mul(n) {
            return Err("a matrix does not have its shape's elements".to_owned());
        }
        // Each matrix's (column stride, row stride), in elements.
        let strides = |rows: usize, cols: usize, column_major: bool| {
            let (cs, rs) = if column_major { (rows, 1) } else { (1, cols) };
            Ok::<_, String>((
                isize::try_from(cs).map_err(|e| e.to_string())?,
                isize::try_from(rs).map_err(|e| e.to_string())?,
            ))
        };
        let (lhs_cs, lhs_rs) = strides(m, k, lhs.column_major)?;
        let (rhs_cs, rhs_rs) = strides(k, n, rhs.column_major)?;
        let (dst_cs, dst_rs) = strides(m, n, column_major)?;
        let mut dst = vec![0f32; elements];
        let threads = rayon::current_num_threads();
        let parallelism = if threads > 1 {
            gemm::Parallelism::Rayon(threads)
        } else {
            gemm::Parallelism::None
        };
        // gemm computes dst := alpha·dst + beta·lhs·rhs; with `read_dst` false, dst is only
        // written.
        #[allow(
            unsafe_code,
            reason = "gemm's entry point takes raw pointers and strides"
        )]
        // SAFETY: each matrix's strides are those of its layout (column stride 1 and row
        // stride its width row by row; the other way round column by column), and each slice
        // holds exactly its rows × columns elements (checked above), so every element gemm
        // reaches from these pointers and strides is in bounds; `dst` is a distinct
        // allocation, borrowed mutably for the call only.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                dst.as_mut_ptr(),
                dst_cs,
                dst_rs,
                false,
                lhs.data.as_ptr(),
                lhs_cs,
                lhs_rs,
                rhs.data.as_ptr(),
                rhs_cs,
                rhs_rs,
                0.0,
                1.0,
                false,
                false,
                false,
                parallelism,
            );
        }
        Ok(dst)
    }

    fn run_each(
        &self,
        file: &ModelFile,
        runs: Vec<Vec<Tensor>>,
        finish: &(dyn Fn(Vec<Tensor>) -> Result<Vec<Tensor>, String> + Sync),
    ) -> Result<Vec<Vec<Tensor>>, String> {
        // Loaded (and its hash checked) once, before the runs share it.
        self.model(file)?;
        // On rten's pool, whose threads its operators already use: a run waiting on its own
        // operators' tasks takes up another run's, and no core is asked for twice.
        rten::thread_pool().run(|| {
            runs.into_par_iter()
                .map(|inputs| finish(self.run(file, inputs)?))
                .collect()
        })
    }
}

#[cfg(test)]
mod tests;
