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
    PoolingAllocationConfig, Store, Trap, UpdateDeadline,
};

use crate::{
    CancelToken, Capabilities, EnforcedLimits, Enforcement, Error, Limits, RunArgs, RunFuture,
    RunOutcome, SLICE_FUEL, SandboxConfig,
    backend::{Backend, CompiledModule, ExportKind, check_interface, is_valid_cache_key},
    run::{self, EngineEnd, MemoryLimiter},
    wasi::{self, Stop, WasiCtx},
};

const BACKEND: &str = "wasmtime";
/// How often the epoch advances: the granularity of wall-clock deadlines.
pub(crate) const TICK: Duration = Duration::from_millis(10);
/// The most memory one instance may have with the pooling allocator.
const POOL_MEMORY_BYTES: usize = 1 << 30;
/// How much of each pooled memory stays mapped between calls.
const KEEP_RESIDENT_BYTES: usize = 16 << 20;

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

/// Stops the epoch ticker thread when the backend and every module compiled by it are dropped:
/// a module that outlives its [`Sandbox`](crate::Sandbox) still needs the ticks for its
/// deadline and cancellation.
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
    ticker: Arc<Ticker>,
}

pub(crate) fn engine_error(error: impl std::fmt::Display) -> Error {
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
                .table_elements(MemoryLimiter::TABLE_ELEMENTS)
                .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
                .table_keep_resident(KEEP_RESIDENT_BYTES)
                .pagemap_scan(wasmtime::Enabled::Auto);
            wt.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        }
        let engine = Engine::new(&wt).map_err(engine_error)?;
        let linker = Arc::new(linker(&engine, Calls::Async)?);

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
            ticker: Arc::new(Ticker { stop }),
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
        match read_cache_entry(&path) {
            Ok(file) => match cache_entry::open(&file, key) {
                Ok(compiled) => {
                    // SAFETY: `deserialize` trusts its input to be `precompile_module` output of
                    // a compatible engine. This entry was written below, by this engine
                    // configuration (its compatibility hash is in the file name), for the bytes
                    // `key` names; `cache_entry::open` checked that it was written for `key`
                    // and that its checksum matches, so a truncated, corrupted or misnamed
                    // entry (another module's code under this key) is never loaded. The cache
                    // directory is the host's own, as trusted as its binary; Wasmtime still
                    // checks the header and refuses another version or configuration.
                    #[allow(
                        unsafe_code,
                        reason = "loading a precompiled module is unsafe by API; see SAFETY"
                    )]
                    let loaded = unsafe { Module::deserialize(&self.engine, compiled) };
                    match loaded {
                        Ok(module) => return Ok(module),
                        Err(error) => {
                            tracing::warn!(path = %path.display(), %error, "ignoring an unusable compiled-module cache entry")
                        }
                    }
                }
                Err(problem) => {
                    tracing::warn!(path = %path.display(), %problem, "ignoring a compiled-module cache entry")
                }
            },
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "cannot read the compiled-module cache")
            }
        }
        let compiled = self.engine.precompile_module(wasm).map_err(invalid)?;
        if let Err(error) = write_atomically(dir, &path, &cache_entry::seal(key, &compiled)) {
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

/// The on-disk format of a compiled-module cache entry: a header that names the key it was
/// written for and a SHA-256 of the compiled code, then the code.
///
/// `magic (8) | key length (1) | key | sha256(code) (32) | code`
mod cache_entry {
    use sha2::{Digest as _, Sha256};

    const MAGIC: &[u8; 8] = b"LCWASM01";

    /// The entry for `code`, compiled from the module `key` names.
    pub(super) fn seal(key: &str, code: &[u8]) -> Vec<u8> {
        let mut entry = Vec::with_capacity(MAGIC.len() + 1 + key.len() + 32 + code.len());
        entry.extend_from_slice(MAGIC);
        // Keys are at most 128 bytes (`is_valid_cache_key`).
        entry.push(u8::try_from(key.len()).unwrap_or(u8::MAX));
        entry.extend_from_slice(key.as_bytes());
        entry.extend_from_slice(&Sha256::digest(code));
        entry.extend_from_slice(code);
        entry
    }

    /// The compiled code in `entry`, if it was written for `key` and is intact.
    pub(super) fn open<'a>(entry: &'a [u8], key: &str) -> Result<&'a [u8], String> {
        let rest = entry
            .strip_prefix(MAGIC)
            .ok_or("not a Locara cache entry (bad magic)")?;
        let (&len, rest) = rest.split_first().ok_or("truncated header")?;
        let (written_for, rest) = rest
            .split_at_checked(usize::from(len))
            .ok_or("truncated header")?;
        if written_for != key.as_bytes() {
            return Err(format!(
                "written for `{}`, not `{key}`",
                String::from_utf8_lossy(written_for)
            ));
        }
        let (checksum, code) = rest.split_at_checked(32).ok_or("truncated header")?;
        if Sha256::digest(code).as_slice() != checksum {
            return Err("checksum mismatch: the entry is corrupt or truncated".to_owned());
        }
        Ok(code)
    }
}

fn write_atomically(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
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

/// Whether a host function may block for long: a sleep, or a host service (a network call).
fn may_block(module: &str, name: &str) -> bool {
    (module == wasi::MODULE && name == "poll_oneoff")
        || (module == wasi::host::MODULE && name == "call")
}

pub(crate) fn linker(engine: &Engine, calls: Calls) -> Result<Linker<StoreData>, Error> {
    let mut linker = Linker::new(engine);
    // One adapter for every host function: WASI's, then the host services' (`locara_host`).
    macro_rules! link {
        ($f:ident($($arg:ident: $ty:ty),*)) => {
            link!(@ wasi::MODULE, $f, wasi::$f, $($arg: $ty),*);
        };
        (@ $module:expr, $name:ident, $f:path, $($arg:ident: $ty:ty),*) => {
            if calls == Calls::Async && may_block($module, stringify!($name)) {
                linker
                    .func_wrap_async(
                        $module,
                        stringify!($name),
                        |mut caller: Caller<'_, StoreData>, ($($arg,)*): ($($ty,)*)| {
                            Box::new(async move {
                                YieldOnce(false).await;
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
        // Validate before anything is compiled or cached.
        Module::validate(&self.engine, wasm).map_err(|e| Error::InvalidModule {
            message: format!("{e:#}"),
        })?;
        let module = self.load(wasm, cache_key)?;
        check_module_interface(&module)?;
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
            _ticker: Arc::clone(&self.ticker),
        }))
    }
}

#[derive(Clone)]
struct WasmtimeModule {
    engine: Engine,
    pre: InstancePre<StoreData>,
    temp_root: PathBuf,
    _ticker: Arc<Ticker>,
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
    /// [`SLICE_FUEL`] of fuel, and before a host function that may block (see [`linker`]).
    async fn call(
        &self,
        input: &[u8],
        limits: &Limits,
        caps: &Capabilities,
        cancel: &CancelToken,
    ) -> Result<RunOutcome, Error> {
        let (wasi, call) = run::prepare(input, limits, caps, &self.temp_root, cancel)?;
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
        store
            .fuel_async_yield_interval(Some(SLICE_FUEL))
            .map_err(engine_error)?;
        // At every tick, wherever the guest is: stop it if the call was cancelled or is past
        // its deadline, else let it run one more tick.
        store.epoch_deadline_callback(|mut store| {
            store
                .data_mut()
                .wasi
                .check_deadline()
                .map(|()| UpdateDeadline::Continue(1))
                .map_err(wasmtime::Error::new)
        });
        store.set_epoch_deadline(1);

        let end = match self.pre.instantiate_async(&mut store).await {
            Ok(instance) => {
                let start = instance
                    .get_typed_func::<(), ()>(&mut store, "_start")
                    .map_err(|e| Error::NotACommand {
                        message: format!("{e:#}"),
                    })?;
                match start.call_async(&mut store, ()).await {
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

/// The most bytes a compiled-module cache entry may hold (CPython's is about 60 MiB).
const MAX_CACHE_ENTRY_BYTES: u64 = 2 << 30;

/// Reads a cache entry if it is a regular file of at most [`MAX_CACHE_ENTRY_BYTES`]: a FIFO,
/// a device or a link to one in the cache directory is an error (the entry is then ignored and
/// rewritten), never a read that blocks or exhausts memory.
fn read_cache_entry(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let file = std::fs::File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_CACHE_ENTRY_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CACHE_ENTRY_BYTES {
        return Err(std::io::Error::other("larger than any compiled module"));
    }
    Ok(bytes)
}
