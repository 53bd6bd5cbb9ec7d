//! The Wasmtime backend: Cranelift-compiled code, a pooling allocator, an on-disk cache of
//! compiled modules, fuel, epoch deadlines and a memory limiter.
//!
//! Every `wasmtime` type stays in this file; errors are mapped to [`Error`] here.

use std::{
    hash::{Hash, Hasher},
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use wasmtime::{
    Caller, Config, Engine, InstanceAllocationStrategy, InstancePre, Linker, Module,
    PoolingAllocationConfig, Store, Trap,
};

use crate::{
    Capabilities, EnforcedLimits, Enforcement, Error, Limits, RunOutcome, SandboxConfig,
    backend::{Backend, CompiledModule, ExportKind, check_interface, is_valid_cache_key},
    run::{self, EngineEnd, MemoryLimiter},
    wasi::{self, Stop, WasiCtx},
};

const BACKEND: &str = "wasmtime";
/// How often the epoch advances: the granularity of wall-clock deadlines.
const TICK: Duration = Duration::from_millis(10);
/// The most memory one instance may have with the pooling allocator.
const POOL_MEMORY_BYTES: usize = 1 << 30;

struct StoreData {
    wasi: WasiCtx,
    memory: MemoryLimiter,
}

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(MemoryLimiter::memory_growing(self, desired))
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MemoryLimiter::TABLE_ELEMENTS)
    }
}

/// Stops the epoch ticker thread when the backend is dropped.
#[derive(Debug)]
struct Ticker {
    stop: Arc<AtomicBool>,
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[derive(Debug)]
pub(crate) struct WasmtimeBackend {
    engine: Engine,
    linker: Arc<Linker<StoreData>>,
    cache_dir: Option<PathBuf>,
    temp_root: PathBuf,
    _ticker: Ticker,
}

fn engine_error(error: impl std::fmt::Display) -> Error {
    Error::Engine {
        backend: BACKEND,
        message: error.to_string(),
    }
}

impl WasmtimeBackend {
    pub(crate) fn new(config: &SandboxConfig) -> Result<WasmtimeBackend, Error> {
        let mut wt = Config::new();
        wt.consume_fuel(true).epoch_interruption(true);
        if config.pooling {
            let n = config.max_concurrent_instances.max(1);
            let mut pool = PoolingAllocationConfig::default();
            pool.total_core_instances(n)
                .total_memories(n)
                .total_tables(n)
                .max_memory_size(POOL_MEMORY_BYTES)
                .table_elements(MemoryLimiter::TABLE_ELEMENTS);
            wt.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        }
        let engine = Engine::new(&wt).map_err(engine_error)?;
        let linker = Arc::new(linker(&engine)?);

        let stop = Arc::new(AtomicBool::new(false));
        let weak = engine.weak();
        let stop_flag = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("locara-epoch".to_owned())
            .spawn(move || {
                while !stop_flag.load(Ordering::Relaxed) {
                    std::thread::sleep(TICK);
                    match weak.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })
            .map_err(engine_error)?;

        Ok(WasmtimeBackend {
            engine,
            linker,
            cache_dir: config.cache_dir.clone(),
            temp_root: config.temp_root.clone().unwrap_or_else(std::env::temp_dir),
            _ticker: Ticker { stop },
        })
    }

    /// Loads the module from the disk cache, or compiles it and fills the cache.
    fn load(&self, wasm: &[u8], cache_key: Option<&str>) -> Result<Module, Error> {
        let invalid = |e: wasmtime::Error| Error::InvalidModule {
            message: format!("{e:#}"),
        };
        let (Some(dir), Some(key)) = (&self.cache_dir, cache_key.filter(|k| is_valid_cache_key(k)))
        else {
            return Module::new(&self.engine, wasm).map_err(invalid);
        };
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.engine
            .precompile_compatibility_hash()
            .hash(&mut hasher);
        let path = dir.join(format!("{key}-{:016x}.cwasm", hasher.finish()));
        if path.is_file() {
            // SAFETY: `deserialize_file` trusts the file to be `precompile_module` output of a
            // compatible engine. The file is only ever written below, by this engine
            // configuration (its compatibility hash is in the name), from bytes the caller
            // identified by `key`, and renamed into place atomically; the cache directory is
            // the host's own, as trusted as its binary. Wasmtime still checks the header and
            // refuses a file from another version or configuration.
            #[allow(
                unsafe_code,
                reason = "loading a precompiled module is unsafe by API; see SAFETY"
            )]
            let loaded = unsafe { Module::deserialize_file(&self.engine, &path) };
            match loaded {
                Ok(module) => return Ok(module),
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "ignoring an unusable compiled-module cache entry")
                }
            }
        }
        let compiled = self.engine.precompile_module(wasm).map_err(invalid)?;
        if let Err(error) = write_atomically(dir, &path, &compiled) {
            tracing::warn!(path = %path.display(), %error, "could not write the compiled-module cache");
        }
        // SAFETY: `compiled` was produced by `precompile_module` on this very engine just above.
        #[allow(
            unsafe_code,
            reason = "loading a precompiled module is unsafe by API; see SAFETY"
        )]
        let module = unsafe { Module::deserialize(&self.engine, &compiled) };
        module.map_err(invalid)
    }
}

fn write_atomically(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Calls `f` with the WASI state and the guest's memory.
fn with_memory<R>(
    caller: &mut Caller<'_, StoreData>,
    f: impl FnOnce(&mut WasiCtx, &mut [u8]) -> Result<R, Stop>,
) -> wasmtime::Result<R> {
    let memory = caller
        .get_export("memory")
        .and_then(wasmtime::Extern::into_memory)
        .ok_or_else(|| wasmtime::format_err!("the module exports no memory"))?;
    let (mem, data) = memory.data_and_store_mut(caller);
    if let Err(stop) = data.wasi.check_deadline() {
        return Err(wasmtime::Error::new(stop));
    }
    f(&mut data.wasi, mem).map_err(wasmtime::Error::new)
}

fn linker(engine: &Engine) -> Result<Linker<StoreData>, Error> {
    let mut linker = Linker::new(engine);
    macro_rules! link {
        ($f:ident($($arg:ident: $ty:ty),*)) => {
            linker
                .func_wrap(wasi::MODULE, stringify!($f), |mut caller: Caller<'_, StoreData>, $($arg: $ty),*| {
                    with_memory(&mut caller, |ctx, mem| {
                        let result = wasi::$f(ctx, mem, $($arg),*);
                        wasi::finish(ctx, result)
                    })
                })
                .map_err(engine_error)?;
        };
    }
    wasi::for_each_function!(link);
    linker
        .func_wrap(
            wasi::MODULE,
            "proc_exit",
            |mut caller: Caller<'_, StoreData>, code: i32| -> wasmtime::Result<()> {
                Err(wasmtime::Error::new(wasi::proc_exit(
                    &mut caller.data_mut().wasi,
                    code,
                )))
            },
        )
        .map_err(engine_error)?;
    Ok(linker)
}

impl Backend for WasmtimeBackend {
    fn compile(
        &self,
        wasm: &[u8],
        cache_key: Option<&str>,
    ) -> Result<Box<dyn CompiledModule>, Error> {
        // Validate before anything is compiled or cached.
        Module::validate(&self.engine, wasm).map_err(|e| Error::InvalidModule {
            message: format!("{e:#}"),
        })?;
        let module = self.load(wasm, cache_key)?;
        check_interface(
            module.imports().map(|i| (i.module(), i.name())),
            module.exports().map(|e| {
                let kind = match e.ty() {
                    wasmtime::ExternType::Func(_) => ExportKind::Func,
                    wasmtime::ExternType::Memory(_) => ExportKind::Memory,
                    _ => ExportKind::Other,
                };
                (e.name(), kind)
            }),
        )?;
        let pre = self
            .linker
            .instantiate_pre(&module)
            .map_err(|e| Error::Instantiate {
                message: format!("{e:#}"),
            })?;
        Ok(Box::new(WasmtimeModule {
            engine: self.engine.clone(),
            pre,
            temp_root: self.temp_root.clone(),
        }))
    }
}

struct WasmtimeModule {
    engine: Engine,
    pre: InstancePre<StoreData>,
    temp_root: PathBuf,
}

impl std::fmt::Debug for WasmtimeModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmtimeModule").finish_non_exhaustive()
    }
}

/// Classifies an error that came out of instantiation or `_start`.
fn end_of(error: &wasmtime::Error) -> Option<EngineEnd> {
    if error.downcast_ref::<Stop>().is_some() {
        return Some(EngineEnd::Stopped);
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => Some(EngineEnd::OutOfFuel),
        Some(Trap::Interrupt) => Some(EngineEnd::Deadline),
        Some(trap) => Some(EngineEnd::Trap(trap.to_string())),
        None => None,
    }
}

impl CompiledModule for WasmtimeModule {
    fn run(&self, input: &[u8], limits: &Limits, caps: &Capabilities) -> Result<RunOutcome, Error> {
        let (wasi, call) = run::prepare(input, limits, caps, &self.temp_root)?;
        let data = StoreData {
            wasi,
            memory: MemoryLimiter {
                limit: limits.memory_bytes,
                exceeded: false,
            },
        };
        let mut store = Store::new(&self.engine, data);
        store.limiter(|data| &mut data.memory);
        store.set_fuel(limits.fuel).map_err(engine_error)?;
        store.set_epoch_deadline(run::deadline_ticks(limits.wall_time, TICK));
        store.epoch_deadline_trap();

        let end = match self.pre.instantiate(&mut store) {
            Ok(instance) => {
                let start = instance
                    .get_typed_func::<(), ()>(&mut store, "_start")
                    .map_err(|e| Error::NotACommand {
                        message: format!("{e:#}"),
                    })?;
                match start.call(&mut store, ()) {
                    Ok(()) => EngineEnd::Returned,
                    Err(error) => {
                        end_of(&error).unwrap_or_else(|| EngineEnd::Trap(format!("{error:#}")))
                    }
                }
            }
            Err(error) => match end_of(&error) {
                Some(end) => end,
                // Not a trap: the instance could not be created at all (e.g. the pool is full).
                None => {
                    return Err(Error::Instantiate {
                        message: format!("{error:#}"),
                    });
                }
            },
        };
        let fuel_consumed = limits.fuel.saturating_sub(store.get_fuel().unwrap_or(0));
        let StoreData { wasi, memory } = store.into_data();
        let enforced = EnforcedLimits {
            memory: Enforcement::Exact,
            wall_time: Enforcement::Exact,
            fuel: Enforcement::Exact,
            output: Enforcement::Exact,
            fds: Enforcement::Exact,
        };
        Ok(run::finish(
            call,
            wasi,
            end,
            &memory,
            fuel_consumed,
            enforced,
        ))
    }
}
