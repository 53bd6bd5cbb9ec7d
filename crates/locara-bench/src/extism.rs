//! The Extism peer: `text.chunk`'s chunking as an Extism plugin (`extism-plugin/`, built from
//! source with `extism-pdk` by this crate's build script), hosted by the `extism` crate.
//!
//! The plugin is compiled once ([`extism::CompiledPlugin`], one Wasmtime engine and module); a
//! call then either makes a fresh `Plugin` from it, calls `chunk` and drops the plugin (a clean
//! instance per call, as Locara gives every call), or calls the one plugin kept for reuse (the
//! instance and its memory live on between calls, which Locara never does). WASI is on: the
//! plugin is a `wasm32-wasip1` module and its standard library imports `fd_write`, `environ_*` and
//! `proc_exit`. The on-disk compilation cache is off, so that nothing outside the process is read
//! or written. No `extism` or `wasmtime` type appears in this API.

use std::fmt;

use extism::{CompiledPlugin, Plugin, PluginBuilder};

/// Where the build script put the plugin's module.
pub const EXTISM_PLUGIN: &str = env!("LOCARA_BENCH_EXTISM_PLUGIN");

/// The exported function that chunks.
const FUNCTION: &str = "chunk";

/// The plugin, compiled once, and one instance of it kept for reuse.
pub struct ExtismChunker {
    compiled: CompiledPlugin,
    reused: Plugin,
}

impl fmt::Debug for ExtismChunker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExtismChunker").finish_non_exhaustive()
    }
}

impl ExtismChunker {
    /// Compiles `wasm` (the plugin's module) with WASI on and the cache off, and makes the plugin
    /// that [`ExtismChunker::call_reused`] calls.
    ///
    /// # Errors
    /// Extism's message when the module does not compile or link.
    pub fn new(wasm: &[u8]) -> Result<ExtismChunker, String> {
        let builder = PluginBuilder::new(wasm)
            .with_wasi(true)
            .with_cache_disabled();
        let compiled = CompiledPlugin::new(builder).map_err(|e| format!("{e:#}"))?;
        let reused = Plugin::new_from_compiled(&compiled).map_err(|e| format!("{e:#}"))?;
        Ok(ExtismChunker { compiled, reused })
    }

    /// A fresh plugin from the compiled one, one call of `chunk` with `input` (the arguments'
    /// JSON), then the plugin dropped: returns the output bytes.
    ///
    /// # Errors
    /// Extism's message when the plugin cannot be made or the call fails.
    pub fn call_fresh(&self, input: &[u8]) -> Result<Vec<u8>, String> {
        let mut plugin = Plugin::new_from_compiled(&self.compiled).map_err(|e| format!("{e:#}"))?;
        let output = plugin
            .call::<&[u8], &[u8]>(FUNCTION, input)
            .map(<[u8]>::to_vec)
            .map_err(|e| format!("{e:#}"));
        drop(plugin);
        output
    }

    /// One call of `chunk` with `input` on the plugin kept for reuse: returns the output bytes.
    ///
    /// # Errors
    /// Extism's message when the call fails.
    pub fn call_reused(&mut self, input: &[u8]) -> Result<Vec<u8>, String> {
        self.reused
            .call::<&[u8], &[u8]>(FUNCTION, input)
            .map(<[u8]>::to_vec)
            .map_err(|e| format!("{e:#}"))
    }
}
