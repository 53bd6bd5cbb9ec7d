//! The Wasmtime backend: Cranelift-compiled code, a pooling allocator, an on-disk cache of
//! compiled modules, fuel, wall-clock deadlines and a memory limiter.
//!
//! With fuel metered (the default), a call yields every [`SLICE_FUEL`] and its deadline and
//! cancel token are checked there and in every host call, as on wasmi: the compiled code has
//! one interrupt check per loop header, fuel's. Wasmtime charges bulk memory operations by the
//! byte and splits long ones with checks between the parts, so a slice stays short whatever
//! the guest runs. Only without fuel metering is the engine compiled with epoch interruption,
//! advanced every [`TICK`] by a thread of the backend's, which then bounds the guest alone.
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
    PoolingAllocationConfig, Store, Trap, UpdateDeadline,
};

use crate::{
    CancelToken, Capabilities, EnforcedLimits, Enforcement, Error, Limits, RunArgs, RunFuture,
    RunOutcome, SLICE_FUEL, SandboxConfig,
    backend::{Backend, CompiledModule, ExportKind, MayBlock, check_interface, is_valid_cache_key},
    compiled_cache,
    run::{self, EngineEnd, MemoryLimiter},
    temp::TempDirs,
    wasi::{self, Stop, WasiCtx},
};

const BACKEND: &str = "wasmtime";
/// How often the epoch advances: the granularity of wall-clock deadlines.
pub(crate) const TICK: Duration = Duration::from_millis(10);
/// The most memory one instance may have with the pooling allocator.
const POOL_MEMORY_BYTES: usize = 1 << 30;
/// How much of each pooled memory stays mapped between calls.
const KEEP_RESIDENT_BYTES: usize = 16 << 20;
/// The native stack wasm code may use (Wasmtime's default is 512 KiB). An optimized
/// interpreter's main loop is one wasm function with thousands of locals, whose native frame
/// is large: code-exec.python's CPython, recursing through C (`__getattr__`, `map`, `yield
/// from`), ran out of 512 KiB before its own limit of 1000 levels raised `RecursionError`.
const MAX_WASM_STACK: usize = 4 << 20;
/// Each call's fiber stack: the wasm stack and room for the host functions it calls.
const ASYNC_STACK: usize = MAX_WASM_STACK + (1 << 20);

pub(crate) struct StoreData {
    pub(crate) wasi: WasiCtx,
    pub(crate) memory: MemoryLimiter,
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

/// Advances an engine's epoch every [`TICK`] on a thread of its own, so that the epoch deadline
/// callback ([`check_deadline_every_tick`]) runs. The thread stops within a tick of the ticker
/// or the engine being dropped, and is never joined: dropping a ticker does not wait. The
/// backend's ticker is shared by every module compiled by it, since a module that outlives its
/// [`Sandbox`](crate::Sandbox) still needs the ticks for its deadline and cancellation; the
/// pre-initializer holds one for its one run.
#[derive(Debug)]
pub(crate) struct Ticker {
    stop: Arc<AtomicBool>,
}

impl Ticker {
    /// Starts ticking `engine`, which must have been configured with epoch interruption.
    pub(crate) fn start(engine: &Engine) -> Result<Ticker, Error> {
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
        Ok(Ticker { stop })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// At every epoch tick (see [`Ticker`]), wherever the guest is, stops it if its call was
/// cancelled or is past its deadline; else it runs on for one more tick, going on as `next`
/// says (`UpdateDeadline::Yield` for an async call, `Continue` for a synchronous one).
pub(crate) fn check_deadline_every_tick(
    store: &mut Store<StoreData>,
    next: fn(u64) -> UpdateDeadline,
) {
    store.epoch_deadline_callback(move |mut store| {
        store
            .data_mut()
            .wasi
            .check_deadline()
            .map(|()| next(1))
            .map_err(wasmtime::Error::new)
    });
    store.set_epoch_deadline(1);
}

#[derive(Debug)]
pub(crate) struct WasmtimeBackend {
    engine: Engine,
    linker: Arc<Linker<StoreData>>,
    cache_dir: Option<PathBuf>,
    temp_dirs: Arc<TempDirs>,
    /// The epoch ticker, when the engine has epochs (no fuel metering).
    ticker: Option<Arc<Ticker>>,
    meter_fuel: bool,
}

/// What the workspace's patches change in the code Wasmtime compiles, which its own
/// compatibility hash (its version and configuration) does not see: part of a compiled
/// module's cache key, so that a module compiled before a patch is compiled again rather than
/// loaded. Change it with any patch to `vendor/wasmtime-internal-cranelift`.
const CODEGEN_REVISION: &str = "interrupt checks call PreserveAll trampolines, 2";

pub(crate) fn engine_error(error: impl std::fmt::Display) -> Error {
    Error::Engine {
        backend: BACKEND,
        message: error.to_string(),
    }
}

impl WasmtimeBackend {
    pub(crate) fn new(config: &SandboxConfig) -> Result<WasmtimeBackend, Error> {
        let mut wt = Config::new();
        // Epoch checks, as well as fuel's, at every loop header cost the image tools ~8% of
        // their time in the sandbox (`--bench media`); with fuel, its slices bound a call.
        wt.consume_fuel(config.meter_fuel)
            .epoch_interruption(!config.meter_fuel)
            .max_wasm_stack(MAX_WASM_STACK)
            .async_stack_size(ASYNC_STACK);
        if config.pooling {
            let n = config.max_concurrent_instances.max(1);
            let mut pool = PoolingAllocationConfig::default();
            // One fiber stack per instance that can be alive: calls run on fibers
            // (`call_async`). Wasmtime's default, 1000 stacks, makes the pool 1000 guard-page
            // `mprotect`s (and as many mappings) to set up and tear down: about half of
            // `Locara::new`, and so of a new process's first call.
            pool.total_core_instances(n)
                .total_stacks(n)
                .total_memories(n)
                .total_tables(n)
                .max_memory_size(POOL_MEMORY_BYTES)
                .table_elements(MemoryLimiter::TABLE_ELEMENTS)
                .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
                .table_keep_resident(KEEP_RESIDENT_BYTES)
                .pagemap_scan(wasmtime::Enabled::Auto);
            wt.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        }
        let engine = Engine::new(&wt).map_err(engine_error)?;
        let linker = Arc::new(linker(&engine, Calls::Async)?);

        let ticker = if config.meter_fuel {
            None
        } else {
            Some(Arc::new(Ticker::start(&engine)?))
        };

        Ok(WasmtimeBackend {
            engine,
            linker,
            cache_dir: config.cache_dir.clone(),
            temp_dirs: TempDirs::of(config),
            ticker,
            meter_fuel: config.meter_fuel,
        })
    }

    /// Loads the module from the disk cache, or compiles it and fills the cache.
    ///
    /// An entry is only ever written below, for bytes `key` names that compiled (and so were
    /// valid), so a module loaded from the cache is not validated again.
    fn load(&self, wasm: &[u8], cache_key: Option<&str>) -> Result<Module, Error> {
        let invalid = |e: wasmtime::Error| Error::InvalidModule {
            message: format!("{e:#}"),
        };
        let Some((dir, key)) = cache_key.and_then(|key| self.cache_dir_for(key)) else {
            return Module::new(&self.engine, wasm).map_err(invalid);
        };
        if let Some(module) = self.load_cached(dir, key) {
            return Ok(module);
        }
        let path = self.cache_path(dir, key);
        let compiled = self.engine.precompile_module(wasm).map_err(invalid)?;
        if let Err(error) = compiled_cache::write(dir, &path, &compiled_cache::seal(key, &compiled))
        {
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

    /// The disk cache's directory and `key`, when there is a disk cache and `key` may name an
    /// entry in it.
    fn cache_dir_for<'k>(&self, key: &'k str) -> Option<(&Path, &'k str)> {
        let dir = self.cache_dir.as_deref()?;
        is_valid_cache_key(key).then_some((dir, key))
    }

    /// Where the module `key` names is cached for this engine's configuration and
    /// [`CODEGEN_REVISION`].
    fn cache_path(&self, dir: &Path, key: &str) -> PathBuf {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.engine
            .precompile_compatibility_hash()
            .hash(&mut hasher);
        CODEGEN_REVISION.hash(&mut hasher);
        compiled_cache::path_of(dir, key, hasher.finish())
    }

    /// The module cached under `key` in `dir`, if there is a usable entry.
    fn load_cached(&self, dir: &Path, key: &str) -> Option<Module> {
        let path = self.cache_path(dir, key);
        match compiled_cache::open(&path, key) {
            Ok(file) => {
                // SAFETY: `deserialize_open_file` trusts the file to be `precompile_module`
                // output of a compatible engine, and to stay unchanged while the module lives.
                // This entry was written by `load`, by this engine configuration (its
                // compatibility hash is in the file name), for the bytes `key` names;
                // `compiled_cache::open` checked, through this very handle, that it was
                // written for `key` and that its code matches its checksum (or that this very
                // version of the file, whose ctime any change moves, did when it was hashed),
                // so a truncated, corrupted or misnamed entry (another module's code under
                // this key) is never loaded. Entries are replaced by renaming a new file into
                // place, never written in place, so the mapped file keeps the checked bytes.
                // The cache directory is the host's own, as trusted as its binary; Wasmtime
                // still checks the header and refuses another version or configuration.
                #[allow(
                    unsafe_code,
                    reason = "loading a precompiled module is unsafe by API; see SAFETY"
                )]
                let loaded = unsafe { Module::deserialize_open_file(&self.engine, file) };
                match loaded {
                    Ok(module) => return Some(module),
                    Err(error) => {
                        tracing::warn!(path = %path.display(), %error, "ignoring an unusable compiled-module cache entry")
                    }
                }
            }
            Err(compiled_cache::Miss::Absent) => {}
            Err(compiled_cache::Miss::Refused(problem)) => {
                tracing::warn!(path = %path.display(), %problem, "ignoring a compiled-module cache entry")
            }
        }
        None
    }

    /// A compiled module ready to run, from a checked `module`.
    fn ready(&self, module: &Module) -> Result<Box<dyn CompiledModule>, Error> {
        check_module_interface(module)?;
        let pre = self
            .linker
            .instantiate_pre(module)
            .map_err(|e| Error::Instantiate {
                message: format!("{e:#}"),
            })?;
        Ok(Box::new(WasmtimeModule {
            engine: self.engine.clone(),
            pre,
            temp_dirs: Arc::clone(&self.temp_dirs),
            _ticker: self.ticker.clone(),
            meter_fuel: self.meter_fuel,
        }))
    }
}

/// Pends once (waking its waker at once), then is ready: a yield point before a host
/// function that may block.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
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

/// How a [`linker`]'s host functions run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Calls {
    /// Driven as futures (`call_async`): the functions that may block for long yield first,
    /// so that the caller can move the call to a thread where blocking is fine.
    Async,
    /// Called synchronously (`call`), as the pre-initializer does.
    #[cfg_attr(
        not(feature = "preinit"),
        expect(dead_code, reason = "only the pre-initializer calls synchronously")
    )]
    Sync,
}

/// Whether, and how, a host function may block for long when the call is driven as a future.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Blocks {
    /// Never: it is called as is.
    Never,
    /// It may (a sleep): it yields first, so that the call moves to a thread where blocking
    /// is fine.
    Always,
    /// It may ask a host service (`locara_host::call`, or a write to the host channel): on a
    /// thread that must not block it is first run in place ([`WasiCtx::in_place`]), and yields
    /// then runs again only if the service declined to answer there.
    Service,
}

fn blocks(module: &str, name: &str) -> Blocks {
    match (module, name) {
        (wasi::MODULE, "poll_oneoff") => Blocks::Always,
        (wasi::host::MODULE, "call") | (wasi::MODULE, "fd_write") => Blocks::Service,
        _ => Blocks::Never,
    }
}

pub(crate) fn linker(engine: &Engine, calls: Calls) -> Result<Linker<StoreData>, Error> {
    let mut linker = Linker::new(engine);
    // One adapter for every host function: WASI's, then the host services' (`locara_host`).
    macro_rules! link {
        ($f:ident($($arg:ident: $ty:ty),*)) => {
            link!(@ wasi::MODULE, $f, wasi::$f, $($arg: $ty),*);
        };
        (@ $module:expr, $name:ident, $f:path, $($arg:ident: $ty:ty),*) => {
            let blocks = blocks($module, stringify!($name));
            if calls == Calls::Async && blocks != Blocks::Never {
                linker
                    .func_wrap_async(
                        $module,
                        stringify!($name),
                        move |mut caller: Caller<'_, StoreData>, ($($arg,)*): ($($ty,)*)| {
                            Box::new(async move {
                                if !MayBlock::now() {
                                    if blocks == Blocks::Service {
                                        let now = with_memory(&mut caller, |ctx, mem| {
                                            ctx.in_place = true;
                                            let result = $f(ctx, mem, $($arg),*);
                                            ctx.in_place = false;
                                            if std::mem::take(&mut ctx.declined) {
                                                return Ok(None);
                                            }
                                            wasi::finish(ctx, result).map(Some)
                                        })?;
                                        if let Some(errno) = now {
                                            return Ok(errno);
                                        }
                                    }
                                    YieldOnce(false).await;
                                }
                                with_memory(&mut caller, |ctx, mem| {
                                    let result = $f(ctx, mem, $($arg),*);
                                    wasi::finish(ctx, result)
                                })
                            })
                        },
                    )
                    .map_err(engine_error)?;
            } else {
                linker
                    .func_wrap($module, stringify!($name), |mut caller: Caller<'_, StoreData>, $($arg: $ty),*| {
                        with_memory(&mut caller, |ctx, mem| {
                            let result = $f(ctx, mem, $($arg),*);
                            wasi::finish(ctx, result)
                        })
                    })
                    .map_err(engine_error)?;
            }
        };
    }
    macro_rules! link_host {
        ($f:ident($($arg:ident: $ty:ty),*)) => {
            link!(@ wasi::host::MODULE, $f, wasi::host::$f, $($arg: $ty),*);
        };
    }
    wasi::for_each_function!(link);
    wasi::host::for_each_host_function!(link_host);
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
        // Compiling validates the module (before anything is cached); a cached one was valid.
        self.ready(&self.load(wasm, cache_key)?)
    }

    fn cached(&self, cache_key: &str) -> Result<Option<Box<dyn CompiledModule>>, Error> {
        let Some((dir, key)) = self.cache_dir_for(cache_key) else {
            return Ok(None);
        };
        self.load_cached(dir, key)
            .map(|module| self.ready(&module))
            .transpose()
    }
}

#[derive(Clone)]
struct WasmtimeModule {
    engine: Engine,
    pre: InstancePre<StoreData>,
    temp_dirs: Arc<TempDirs>,
    _ticker: Option<Arc<Ticker>>,
    /// Whether the engine meters fuel ([`SandboxConfig::meter_fuel`]).
    meter_fuel: bool,
}

impl std::fmt::Debug for WasmtimeModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmtimeModule").finish_non_exhaustive()
    }
}

/// [`check_interface`] for a Wasmtime module: only provided imports, a `_start` and a memory.
pub(crate) fn check_module_interface(module: &Module) -> Result<(), Error> {
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
    )
}

/// Polls `run` (guest code, which yields after every fuel slice) to its end, unless the call
/// is found cancelled or past its deadline (`stopper`) before one of its polls: then `None`,
/// and `run` is dropped, which unwinds the guest. Without a stopper (epochs stop the guest
/// themselves), only polls `run`.
async fn in_slices<F: Future>(run: F, stopper: Option<&wasi::Stopper>) -> Option<F::Output> {
    let mut run = std::pin::pin!(run);
    std::future::poll_fn(|cx| {
        if stopper.is_some_and(wasi::Stopper::should_stop) {
            return std::task::Poll::Ready(None);
        }
        run.as_mut().poll(cx).map(Some)
    })
    .await
}

/// The end of a call stopped between fuel slices, its stop recorded as a host function's is.
fn stopped(store: &mut Store<StoreData>) -> EngineEnd {
    // Cancelled or past its deadline: this records which, for the outcome.
    let _ = store.data_mut().wasi.check_deadline();
    EngineEnd::Stopped
}

/// Classifies an error that came out of instantiation or `_start`.
pub(crate) fn end_of(error: &wasmtime::Error) -> Option<EngineEnd> {
    if error.downcast_ref::<Stop>().is_some() {
        return Some(EngineEnd::Stopped);
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => Some(EngineEnd::OutOfFuel),
        Some(Trap::StackOverflow) => Some(EngineEnd::StackOverflow),
        Some(trap) => Some(EngineEnd::Trap(trap.to_string())),
        None => None,
    }
}

impl CompiledModule for WasmtimeModule {
    fn run(
        &self,
        input: &[u8],
        limits: &Limits,
        caps: &Capabilities,
        cancel: &CancelToken,
    ) -> Result<RunOutcome, Error> {
        // Some host functions are async (they yield before blocking), so every call is driven
        // as a future; here, to its end on this thread.
        crate::block_on(self.call(input, limits, caps, cancel))
    }

    fn start(&self, call: RunArgs) -> Result<RunFuture, Box<RunArgs>> {
        let module = self.clone();
        Ok(Box::pin(async move {
            let RunArgs {
                input,
                limits,
                caps,
                cancel,
            } = call;
            module.call(&input, &limits, &caps, &cancel).await
        }))
    }
}

impl WasmtimeModule {
    /// One call, from preparing the guest's world to the outcome. It yields every
    /// [`SLICE_FUEL`] of fuel (every epoch tick when fuel is not metered), and before a host
    /// function that may block (see [`linker`]).
    async fn call(
        &self,
        input: &[u8],
        limits: &Limits,
        caps: &Capabilities,
        cancel: &CancelToken,
    ) -> Result<RunOutcome, Error> {
        let (wasi, call) = run::prepare(input, limits, caps, &self.temp_dirs, cancel)?;
        let data = StoreData {
            wasi,
            memory: MemoryLimiter {
                limit: limits.memory_bytes,
                exceeded: false,
            },
        };
        let mut store = Store::new(&self.engine, data);
        store.limiter(|data| &mut data.memory);
        if self.meter_fuel {
            store.set_fuel(limits.fuel).map_err(engine_error)?;
            store
                .fuel_async_yield_interval(Some(SLICE_FUEL))
                .map_err(engine_error)?;
        }
        // Without fuel there are no slices: at every tick, wherever the guest is, stop it if
        // the call was cancelled or is past its deadline, else let it run one more tick (and
        // yield there). With fuel, the same is checked between slices (`in_slices`).
        let stopper = if self.meter_fuel {
            Some(store.data().wasi.stopper())
        } else {
            check_deadline_every_tick(&mut store, UpdateDeadline::Yield);
            None
        };

        let end = match in_slices(self.pre.instantiate_async(&mut store), stopper.as_ref()).await {
            Some(Ok(instance)) => {
                let start = instance
                    .get_typed_func::<(), ()>(&mut store, "_start")
                    .map_err(|e| Error::NotACommand {
                        message: format!("{e:#}"),
                    })?;
                match in_slices(start.call_async(&mut store, ()), stopper.as_ref()).await {
                    Some(Ok(())) => EngineEnd::Returned,
                    Some(Err(error)) => {
                        end_of(&error).unwrap_or_else(|| EngineEnd::Trap(format!("{error:#}")))
                    }
                    None => stopped(&mut store),
                }
            }
            Some(Err(error)) => match end_of(&error) {
                Some(end) => end,
                // Not a trap: the instance could not be created at all (e.g. the pool is full).
                None => {
                    return Err(Error::Instantiate {
                        message: format!("{error:#}"),
                    });
                }
            },
            // Stopped before the instance was made, or in its start function.
            None => stopped(&mut store),
        };
        let (fuel_consumed, fuel) = if self.meter_fuel {
            let left = store.get_fuel().unwrap_or(0);
            (limits.fuel.saturating_sub(left), Enforcement::Exact)
        } else {
            (0, Enforcement::NotEnforced)
        };
        let StoreData { wasi, memory } = store.into_data();
        let enforced = EnforcedLimits {
            memory: Enforcement::Exact,
            // Between fuel slices, or at every epoch tick.
            wall_time: if self.meter_fuel {
                Enforcement::Periodic
            } else {
                Enforcement::Exact
            },
            fuel,
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
