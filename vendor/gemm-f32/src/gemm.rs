pub mod f32 {
    type T = f32;
    gemm_common::gemm_def!(f32, 2);

    // LOCARA-PATCH: the signature of every `f32` matrix product, public so that a program can
    // name it in `replace_gemm_fn`.
    /// The function [`get_gemm_fn`] returns: `(m, n, k, dst, dst_cs, dst_rs, read_dst, lhs,
    /// lhs_cs, lhs_rs, rhs, rhs_cs, rhs_rs, alpha, beta, conj_dst, conj_lhs, conj_rhs,
    /// parallelism)`, as `gemm::gemm` takes them.
    pub type GemmFn = GemmTy;

    // LOCARA-PATCH: lets a program route the matrix products elsewhere (a WebAssembly tool
    // asks its host to compute the large ones); not in the published crate.
    /// Makes [`get_gemm_fn`] (and so `gemm::gemm` for `f32`, and candle's CPU matrix products)
    /// return `gemm_fn` from now on. `gemm_fn` may call [`kernels`] for the products it does
    /// not handle itself.
    ///
    /// # Safety
    /// `gemm_fn` must compute what the kernels compute (`dst := alpha·dst + beta·lhs·rhs`,
    /// `dst` read only when `read_dst`) for every argument they accept, reading and writing
    /// only the elements the arguments' strides reach, as callers of `gemm::gemm` rely on it.
    pub unsafe fn replace_gemm_fn(gemm_fn: GemmFn) {
        GEMM_PTR.store(gemm_fn as *mut (), ::core::sync::atomic::Ordering::Relaxed);
    }

    // LOCARA-PATCH: not in the published crate either.
    /// This machine's kernels: what [`get_gemm_fn`] returns unless [`replace_gemm_fn`] was
    /// called.
    pub fn kernels() -> GemmFn {
        init_gemm_fn()
    }
}
