//! The wasmi backend: a pure-Rust interpreter with fuel metering and a memory limiter.
//!
//! wasmi has no epoch interruption, so the wall-clock limit is enforced by running the guest
//! in fuel slices (resumable calls) and checking the clock between slices and in every host
//! call. Every `wasmi` type stays in this file; errors are mapped to [`Error`] here.

use std::sync::Arc;

use wasmi::{Caller, Config, Engine, Linker, Module, ResumableCall, Store};

use crate::{
    CancelToken, Capabilities, EnforcedLimits, Enforcement, Error, Limits, RunOutcome,
    SandboxConfig,
    backend::{Backend, CompiledModule, ExportKind, check_interface},
    run::{self, EngineEnd, MemoryLimiter},
    start_export,
    temp::TempDirs,
    wasi::{self, Stop, WasiCtx},
};

const BACKEND: &str = "wasmi";
/// Fuel per slice: the wall clock is checked at least this often (a few milliseconds of
/// interpretation).
const SLICE: u64 = 2_000_000;

struct StoreData {
    wasi: WasiCtx,
    memory: MemoryLimiter,
}

impl wasmi::errors::HostError for Stop {}

impl wasmi::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> Result<bool, wasmi_core::LimiterError> {
        Ok(MemoryLimiter::memory_growing(self, desired))
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> Result<bool, wasmi_core::LimiterError> {
        Ok(desired <= MemoryLimiter::TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        1
    }

    fn tables(&self) -> usize {
        1
    }

    fn memories(&self) -> usize {
        1
    }
}

#[derive(Debug)]
pub(crate) struct WasmiBackend {
    engine: Engine,
    temp_dirs: Arc<TempDirs>,
}

impl WasmiBackend {
    pub(crate) fn new(config: &SandboxConfig) -> Result<WasmiBackend, Error> {
        let mut wc = Config::default();
        wc.consume_fuel(true);
        // Eager: wasmi's default compiles each function on its first call and charges the call
        // fuel for it; when a fuel slice ran out in the middle of that, the error was not
        // resumable and the call ended as out of fuel with most of its budget left. Compiling
        // up front (once per module per process) also makes a call's fuel independent of
        // which calls came before it.
        wc.compilation_mode(wasmi::CompilationMode::Eager);
        Ok(WasmiBackend {
            engine: Engine::new(&wc),
            temp_dirs: TempDirs::of(config),
        })
    }
}

/// Calls `f` with the WASI state and the guest's memory.
fn with_memory<R>(
    caller: &mut Caller<'_, StoreData>,
    f: impl FnOnce(&mut WasiCtx, &mut [u8]) -> Result<R, Stop>,
) -> Result<R, wasmi::Error> {
    let memory = caller
        .get_export("memory")
        .and_then(wasmi::Extern::into_memory)
        .ok_or_else(|| wasmi::Error::new("the module exports no memory"))?;
    let (mem, data) = memory.data_and_store_mut(caller);
    if let Err(stop) = data.wasi.check_deadline() {
        return Err(wasmi::Error::host(stop));
    }
    f(&mut data.wasi, mem).map_err(wasmi::Error::host)
}

fn linker(engine: &Engine) -> Result<Linker<StoreData>, Error> {
    let engine_error = |e: wasmi::Error| Error::Engine {
        backend: BACKEND,
        message: e.to_string(),
    };
    let mut linker = Linker::new(engine);
    // One adapter for every host function: WASI's, then the host services' (`locara_host`).
    macro_rules! link {
        ($f:ident($($arg:ident: $ty:ty),*)) => {
            link!(@ wasi::MODULE, $f, wasi::$f, $($arg: $ty),*);
        };
        (@ $module:expr, $name:ident, $f:path, $($arg:ident: $ty:ty),*) => {
            linker
                .func_wrap($module, stringify!($name), |mut caller: Caller<'_, StoreData>, $($arg: $ty),*| {
                    with_memory(&mut caller, |ctx, mem| {
                        let result = $f(ctx, mem, $($arg),*);
                        wasi::finish(ctx, result)
                    })
                })
                .map_err(|e| engine_error(e.into()))?;
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
            |mut caller: Caller<'_, StoreData>, code: i32| -> Result<(), wasmi::Error> {
                Err(wasmi::Error::host(wasi::proc_exit(
                    &mut caller.data_mut().wasi,
                    code,
                )))
            },
        )
        .map_err(|e| engine_error(e.into()))?;
    Ok(linker)
}

impl Backend for WasmiBackend {
    fn compile(
        &self,
        wasm: &[u8],
        _cache_key: Option<&str>,
    ) -> Result<Box<dyn CompiledModule>, Error> {
        let invalid = |e: wasmi::Error| Error::InvalidModule {
            message: e.to_string(),
        };
        let mut module = Module::new(&self.engine, wasm).map_err(invalid)?;
        check_interface(
            module.imports().map(|i| (i.module(), i.name())),
            module.exports().map(|e| {
                let kind = match e.ty() {
                    wasmi::ExternType::Func(_) => ExportKind::Func,
                    wasmi::ExternType::Memory(_) => ExportKind::Memory,
                    _ => ExportKind::Other,
                };
                (e.name(), kind)
            }),
        )?;
        // A start function would run inside instantiation, out of reach of the deadline:
        // export it and call it in slices like `_start` (see `start_export`).
        let has_start = match start_export::export_start(wasm) {
            Some(rewritten) => {
                module = Module::new(&self.engine, &rewritten).map_err(invalid)?;
                true
            }
            None => false,
        };
        let linker = linker(&self.engine)?;
        Ok(Box::new(WasmiModule {
            engine: self.engine.clone(),
            module,
            linker,
            has_start,
            temp_dirs: Arc::clone(&self.temp_dirs),
        }))
    }
}

struct WasmiModule {
    engine: Engine,
    module: Module,
    linker: Linker<StoreData>,
    /// Whether the module's start function was moved to [`start_export::START_EXPORT`].
    has_start: bool,
    temp_dirs: Arc<TempDirs>,
}

impl std::fmt::Debug for WasmiModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmiModule").finish_non_exhaustive()
    }
}

/// Classifies an error that came out of instantiation or `_start`.
fn end_of(error: &wasmi::Error) -> EngineEnd {
    if error.downcast_ref::<Stop>().is_some() {
        return EngineEnd::Stopped;
    }
    match error.as_trap_code() {
        Some(wasmi::TrapCode::OutOfFuel) => EngineEnd::OutOfFuel,
        Some(wasmi::TrapCode::StackOverflow) => EngineEnd::StackOverflow,
        _ => EngineEnd::Trap(error.to_string()),
    }
}

/// Calls `func` in fuel slices taken from `budget` until it ends; between slices, a cancelled
/// call or a passed deadline stops it.
fn drive(
    store: &mut Store<StoreData>,
    func: wasmi::Func,
    budget: &mut u64,
) -> Result<EngineEnd, wasmi::Error> {
    let first = (*budget).min(SLICE);
    *budget -= first;
    let left = store.get_fuel()?;
    store.set_fuel(left + first)?;
    let mut state = func.call_resumable(&mut *store, &[], &mut []);
    loop {
        match state {
            Ok(ResumableCall::Finished) => return Ok(EngineEnd::Returned),
            Ok(ResumableCall::HostTrap(trap)) => return Ok(end_of(&trap.into_host_error())),
            Err(error) => return Ok(end_of(&error)),
            Ok(ResumableCall::OutOfFuel(out)) => {
                if store.data_mut().wasi.check_deadline().is_err() {
                    return Ok(EngineEnd::Stopped);
                }
                let left = store.get_fuel()?;
                let slice = (*budget).min(SLICE).max(out.required_fuel());
                if slice > *budget || *budget == 0 {
                    return Ok(EngineEnd::OutOfFuel);
                }
                *budget -= slice;
                store.set_fuel(left + slice)?;
                state = out.resume(&mut *store, &mut []);
            }
        }
    }
}

impl CompiledModule for WasmiModule {
    fn run(
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
        let engine_error = |e: wasmi::Error| Error::Engine {
            backend: BACKEND,
            message: e.to_string(),
        };

        // Instantiation (data segments; never a start function, see `has_start`) takes its
        // fuel from the whole budget; the calls then get it in slices.
        store.set_fuel(limits.fuel).map_err(engine_error)?;
        // Fuel not yet handed to the store.
        let mut budget = 0;
        let end = match self.linker.instantiate_and_start(&mut store, &self.module) {
            Err(error) => end_of(&error),
            Ok(instance) => {
                let func = |name: &str| {
                    instance
                        .get_func(&store, name)
                        .ok_or_else(|| Error::NotACommand {
                            message: format!("no exported `{name}` function"),
                        })
                };
                let mut calls = Vec::new();
                if self.has_start {
                    calls.push(func(start_export::START_EXPORT)?);
                }
                calls.push(func("_start")?);
                budget = store.get_fuel().map_err(engine_error)?;
                store.set_fuel(0).map_err(engine_error)?;
                let mut end = EngineEnd::Returned;
                for func in calls {
                    end = drive(&mut store, func, &mut budget).map_err(engine_error)?;
                    if !matches!(end, EngineEnd::Returned) {
                        break;
                    }
                }
                end
            }
        };
        // What is left is the fuel in the store plus the slices never handed out.
        let left = store.get_fuel().unwrap_or(0);
        let data = store.into_data();
        let fuel_consumed = limits.fuel.saturating_sub(left + budget);
        let enforced = EnforcedLimits {
            memory: Enforcement::Exact,
            wall_time: Enforcement::Periodic,
            fuel: Enforcement::Exact,
            output: Enforcement::Exact,
            fds: Enforcement::Exact,
        };
        Ok(run::finish(
            call,
            data.wasi,
            end,
            &data.memory,
            fuel_consumed,
            enforced,
        ))
    }
}
