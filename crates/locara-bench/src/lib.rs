//! Locara's benchmarks: what one tool call costs end to end, next to what it could cost, and
//! how the runtime holds up under sustained load.
//!
//! The benchmark itself is `benches/pipeline.rs`. Run it, in release, with:
//!
//! ```text
//! cargo bench -p locara-bench --features floor --bench pipeline
//! ```
//!
//! From one process it measures `text.chunk` on a small input through the whole
//! `locara-facade` pipeline on each engine, a hand-rolled `wasmtime` + `wasmtime-wasi` embedder
//! running the same module (the floor), and spawning `/bin/true`. It prints p50, p99 and mean
//! per call, and the issue's targets as ratios measured in that same run: the Wasmtime pipeline
//! at most 3× the raw floor, and at least 50× faster than the spawn.
//! With `--features extism` it also runs the same chunking as an Extism plugin (built from
//! `extism-plugin/` by the build script) under the `extism` host SDK, a fresh plugin per call and
//! one plugin reused, and prints Locara's Wasmtime pipeline p50 over each.
//! Without `--features floor` (`extism`) the floor (Extism) rows are skipped, so that
//! `cargo test --workspace` never compiles `wasmtime-wasi` or a second Wasmtime; under
//! `cargo test` (no `--bench` argument) it runs a few calls of each as a smoke test.
//!
//! `benches/stages.rs` (`--bench stages`) breaks a call down: the same call at each depth of the
//! stack, the pieces around the wasm run alone, and raw-Wasmtime variants one setting at a time.
//!
//! `benches/load.rs` is the load and soak driver, a report rather than a timed test:
//!
//! ```text
//! cargo bench -p locara-bench --bench load
//! ```
//!
//! It makes 100,000 calls (`LOCARA_LOAD_CALLS=n` for another count) of a fixed mix of tools
//! through one `Locara` on Wasmtime, two in flight at a time, with calls that fail on purpose
//! (invalid input, invalid output, a panic, a non-zero exit) among them, and checks every
//! result. It prints calls/s, p50/p99/max latency overall and per call, and the process
//! (RSS, peak RSS, open fds, threads, per-call temp dirs) after the warm-up and after each
//! tenth of the run. It fails when a result is wrong, when fds grow after the warm-up, when a
//! temp dir is left behind, or when RSS grows by more than 50% after the warm-up (the target
//! is under 10%, and is reported). Under `cargo test` it makes 60 calls.
//!
//! This library holds what the benchmarks need besides Locara: percentiles, the output check
//! (so that a failing call is never what gets measured), the tables, the `/proc` sampling of
//! the load driver, with the `floor` feature the raw embedder, and with the `extism` feature the
//! Extism host of the peer plugin. Unlike every runtime crate but `locara-sandbox`, it names
//! `wasmtime`, on purpose: the floor is what an embedder gets without Locara. No `wasmtime` or
//! `extism` type appears in its API.

mod check;
#[cfg(feature = "extism")]
mod extism;
#[cfg(feature = "floor")]
mod floor;
mod process;
mod report;

#[cfg(test)]
mod tests;

/// The input both benches chunk: two short paragraphs, about 300 characters.
pub const TEXT: &str = "Locara runs each tool call in a fresh WebAssembly instance. \
The instance sees only its stdin, its stdout and a temp dir, and it stops at its limits.\n\n\
Chunking this text is cheap, so what the benchmark measures is the cost around the call: \
resolving the tool, checking its schemas, creating the instance and reading the output.";
/// The `max_chars` argument both benches pass.
pub const MAX_CHARS: usize = 80;
/// The tool both benches call.
pub const TOOL: &str = "text.chunk";

#[cfg(feature = "extism")]
pub use crate::extism::{EXTISM_PLUGIN, ExtismChunker};
#[cfg(feature = "floor")]
pub use crate::floor::{FloorConfig, RawFloor};
pub use crate::{
    check::check_chunks,
    process::{ProcessSample, cpu_time, percent, render_samples, status_field},
    report::{Ratio, Row, Summary, Target, render, render_latencies},
};
