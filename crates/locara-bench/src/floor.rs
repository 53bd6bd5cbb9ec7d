//! The raw Wasmtime floor: the best case for a hand-rolled embedder of a WASI preview 1 command.
//!
//! The module is compiled and pre-linked once; each call then makes a fresh `Store` with a
//! `WasiP1Ctx` whose stdin is the input and whose stdout is a memory pipe, instantiates, calls
//! `_start` and reads stdout. Nothing else: no manifest, no schema, no registry, no limits
//! beyond what the configuration asks for.

use std::fmt;

use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, InstancePre, Linker, Module,
    PoolingAllocationConfig, Store,
};
use wasmtime_wasi::{
    I32Exit, WasiCtxBuilder,
    p1::{self, WasiP1Ctx},
    p2::pipe::{MemoryInputPipe, MemoryOutputPipe},
};

/// How the floor's engine is set up. [`FloorConfig::default`] is `Config::new()` unchanged,
/// as an embedder gets it: the on-demand allocator, no fuel, no epochs, wasm backtraces on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FloorConfig {
    /// Use the pooling allocator (sized as `locara-sandbox` sizes it: 32 instances of up to
    /// 1 GiB), instead of the on-demand one.
    pub pooling: bool,
    /// Meter fuel, as `locara-sandbox` does (with a budget too large to be reached; the
    /// sandbox checks its deadline between fuel slices, and has no epochs when it meters fuel).
    pub fuel: bool,
    /// Capture no wasm backtraces (`Config::wasm_backtrace_max_frames(None)`). By default
    /// Wasmtime captures one, with frame info, for every error out of wasm, and a WASI
    /// command's `proc_exit` is such an error.
    pub no_wasm_backtraces: bool,
    /// With pooling: how many bytes of each linear memory and table to keep resident when an
    /// instance is freed (`linear_memory_keep_resident`, `table_keep_resident`), resetting only
    /// the pages the call dirtied (found with Linux's `PAGEMAP_SCAN`, `pagemap_scan`, where the
    /// kernel has it) instead of `madvise`-ing them away. 0 is Wasmtime's default; the sandbox
    /// keeps 16 MiB.
    pub keep_resident: usize,
}

impl FloorConfig {
    /// A short description, for the table.
    pub fn describe(self) -> String {
        let mut parts = vec![
            if self.pooling {
                "pooling alloc"
            } else {
                "on-demand alloc"
            }
            .to_owned(),
        ];
        if !self.pooling && !self.fuel && !self.no_wasm_backtraces {
            parts[0] = "default Config, on-demand alloc".to_owned();
        }
        if self.fuel {
            parts.push("fuel".to_owned());
        }
        if self.no_wasm_backtraces {
            parts.push("no wasm backtraces".to_owned());
        }
        if self.pooling && self.keep_resident > 0 {
            parts.push(format!(
                "keep {} KiB resident (pagemap scan)",
                self.keep_resident >> 10
            ));
        }
        parts.join(" + ")
    }
}

/// A module compiled and linked once, ready to be instantiated and called per call.
pub struct RawFloor {
    engine: Engine,
    pre: InstancePre<WasiP1Ctx>,
    config: FloorConfig,
}

impl fmt::Debug for RawFloor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawFloor")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn message(error: impl fmt::Display) -> String {
    format!("{error:#}")
}

impl RawFloor {
    /// Compiles `wasm` and links it against `wasmtime-wasi`'s preview 1.
    ///
    /// # Errors
    /// When the engine cannot start, or the module does not compile or link.
    pub fn new(wasm: &[u8], config: FloorConfig) -> Result<RawFloor, String> {
        let mut wt = Config::new();
        if config.pooling {
            let mut pool = PoolingAllocationConfig::default();
            pool.total_core_instances(32)
                .total_memories(32)
                .total_tables(32)
                .max_memory_size(1 << 30);
            if config.keep_resident > 0 {
                pool.linear_memory_keep_resident(config.keep_resident)
                    .table_keep_resident(config.keep_resident)
                    .pagemap_scan(wasmtime::Enabled::Auto);
            }
            wt.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        }
        if config.fuel {
            wt.consume_fuel(true);
        }
        if config.no_wasm_backtraces {
            wt.wasm_backtrace_max_frames(None);
        }
        let engine = Engine::new(&wt).map_err(message)?;
        let module = Module::new(&engine, wasm).map_err(message)?;
        let mut linker = Linker::new(&engine);
        p1::add_to_linker_sync(&mut linker, |ctx| ctx).map_err(message)?;
        let pre = linker.instantiate_pre(&module).map_err(message)?;
        Ok(RawFloor {
            engine,
            pre,
            config,
        })
    }

    /// Runs the module once in a fresh instance with `stdin`, and returns its stdout.
    ///
    /// # Errors
    /// When it cannot be instantiated, traps, or exits with a non-zero code.
    pub fn call(&self, stdin: &[u8]) -> Result<Vec<u8>, String> {
        let stdout = MemoryOutputPipe::new(usize::MAX);
        let wasi = WasiCtxBuilder::new()
            .stdin(MemoryInputPipe::new(stdin.to_vec()))
            .stdout(stdout.clone())
            .build_p1();
        let mut store = Store::new(&self.engine, wasi);
        if self.config.fuel {
            store.set_fuel(u64::MAX).map_err(message)?;
        }
        let instance = self.pre.instantiate(&mut store).map_err(message)?;
        let start = instance
            .get_typed_func::<(), ()>(&mut store, "_start")
            .map_err(message)?;
        if let Err(error) = start.call(&mut store, ()) {
            match error.downcast_ref::<I32Exit>() {
                Some(I32Exit(0)) => {}
                _ => return Err(message(error)),
            }
        }
        drop(store);
        Ok(stdout.contents().to_vec())
    }
}
