//! Pre-initialization: a module's init export run once under the sandbox's own WASI host, and
//! the instance it leaves written out as a new module (Wizer's technique).
//!
//! `wasmtime-wizer` does the module surgery: [`Wizer::instrument`] exports every memory and
//! mutable global under a known name, and [`Wizer::snapshot`] turns their contents into data
//! segments and initial values of a copy of the module, without the init export. Between the
//! two, this file instantiates the instrumented module on Wasmtime with the same WASI host,
//! limits and descriptor layout as a real call, and calls the init export. Wizer's own driver
//! (its `wasmtime` feature) refuses imported functions during init and would bring its own
//! WASI; the guest's libc must instead see what it will see when the result runs (the preopens
//! at the same descriptors), or the tables it built during init would be wrong.
//!
//! Built only with the `preinit` feature: it is for build tools (`locara-upstream`), never
//! needed to run a module.

use std::{
    future::Future,
    pin::pin,
    sync::Arc,
    task::{Context, Poll, Waker},
};

use wasmtime::{Config, Engine, Instance, Module, Store, UpdateDeadline, Val};
use wasmtime_wizer::{InstanceState, SnapshotVal, ValType, Wizer};

use crate::{
    CancelToken, Capabilities, EnforcedLimits, Enforcement, Error, Limits, RunStatus, Sandbox,
    run::{self, EngineEnd, MemoryLimiter},
    temp::TempDirs,
    wasmtime_backend::{
        Calls, StoreData, Ticker, check_deadline_every_tick, check_module_interface, end_of,
        engine_error, linker,
    },
};

/// At most this much of the guest's stderr goes into the error of a failed initialization.
const STDERR_IN_ERROR: usize = 4 << 10;

impl Sandbox {
    /// Runs the export `init_export` of the command module `wasm` once, and returns a module
    /// that starts where it left off: the same module, with its memory and mutable globals as
    /// the init export left them, and without that export.
    ///
    /// The init runs on Wasmtime, whatever this sandbox's engine, with the sandbox's own WASI
    /// host: `caps` (its arguments, and the preopens at the same descriptors as in the calls
    /// that will run the result — the guest's libc keeps the preopen table it read), `limits`,
    /// empty stdin, and a temp dir that is removed afterwards. `init_export` must have type
    /// `[] -> []`, return normally (not exit, trap or exceed a limit) and leave no descriptor
    /// open but stdio and the preopens: a file it left open would not exist in a later run.
    /// Whatever the guest computed during init from its arguments, the clocks or random bytes
    /// is frozen into the result, the same in every run; resetting it is the guest's job.
    ///
    /// The result is a module like any other: compile it with [`Sandbox::compile`], on either
    /// engine, and run its `_start`.
    ///
    /// # Errors
    /// [`Error::InvalidModule`] for bytes that are not a valid module (or use what a snapshot
    /// cannot hold, such as table mutations), [`Error::UnsupportedImport`] and
    /// [`Error::NotACommand`] as for [`Sandbox::compile`], [`Error::InvalidLimit`] and
    /// [`Error::Preopen`] as for a run, and [`Error::Instantiate`] when the module cannot be
    /// instantiated, has no such export, or the init did not return normally (with the guest's
    /// stderr).
    pub fn preinitialize(
        &self,
        wasm: &[u8],
        init_export: &str,
        caps: &Capabilities,
        limits: &Limits,
    ) -> Result<Vec<u8>, Error> {
        let invalid = |error: wasmtime::Error| Error::InvalidModule {
            message: format!("{error:#}"),
        };
        let mut wizer = Wizer::new();
        wizer.init_func(init_export);
        let (context, instrumented) = wizer.instrument(wasm).map_err(invalid)?;

        let mut config = Config::new();
        config.consume_fuel(true).epoch_interruption(true);
        let engine = Engine::new(&config).map_err(engine_error)?;
        let module = Module::new(&engine, &instrumented).map_err(invalid)?;
        check_module_interface(&module)?;
        let linker = linker(&engine, Calls::Sync)?;

        let cancel = CancelToken::new();
        let (wasi, call) = run::prepare(
            b"",
            limits,
            caps,
            &Arc::new(TempDirs::new(std::env::temp_dir(), false)),
            &cancel,
        )?;
        let data = StoreData {
            wasi,
            memory: MemoryLimiter {
                limit: limits.memory_bytes,
                exceeded: false,
            },
        };
        let mut store = Store::new(&engine, data);
        store.limiter(|data| &mut data.memory);
        store.set_fuel(limits.fuel).map_err(engine_error)?;
        check_deadline_every_tick(&mut store, UpdateDeadline::Continue);
        let ticker = Ticker::start(&engine)?;

        let initialized = linker
            .instantiate(&mut store, &module)
            .and_then(|instance| {
                let init = instance.get_typed_func::<(), ()>(&mut store, init_export)?;
                init.call(&mut store, ())?;
                Ok(instance)
            });
        drop(ticker);
        let fuel_consumed = limits.fuel.saturating_sub(store.get_fuel().unwrap_or(0));
        let enforced = EnforcedLimits {
            memory: Enforcement::Exact,
            wall_time: Enforcement::Exact,
            fuel: Enforcement::Exact,
            output: Enforcement::Exact,
            fds: Enforcement::Exact,
        };
        let failed = |message: String| Error::Instantiate {
            message: format!("pre-initialization with `{init_export}` failed: {message}"),
        };

        let instance = match initialized {
            Ok(instance) => instance,
            Err(error) => {
                let end = end_of(&error).unwrap_or_else(|| EngineEnd::Trap(format!("{error:#}")));
                let StoreData { wasi, memory } = store.into_data();
                let outcome = run::finish(call, wasi, end, &memory, fuel_consumed, enforced);
                let status = match outcome.status {
                    RunStatus::Exited(code) => format!("the guest exited with code {code}"),
                    RunStatus::LimitExceeded(limit) => {
                        format!("the guest exceeded the {limit} limit")
                    }
                    RunStatus::Trapped(trap) => format!("the guest trapped: {trap}"),
                    RunStatus::Cancelled => "cancelled".to_owned(),
                    RunStatus::OutputRefused(why) => why,
                };
                let stderr = String::from_utf8_lossy(&outcome.stderr);
                let tail: String = {
                    let skip = stderr.chars().count().saturating_sub(STDERR_IN_ERROR);
                    stderr.chars().skip(skip).collect()
                };
                return Err(failed(if tail.trim().is_empty() {
                    status
                } else {
                    format!("{status}; its stderr ends with:\n{}", tail.trim_end())
                }));
            }
        };

        let left_open = store.data().wasi.guest_opened_fds();
        let snapshot = if left_open.is_empty() {
            let mut state = Snapshotter {
                store: &mut store,
                instance,
            };
            block_on(wizer.snapshot(&context, &mut state))
                .map_err(|error| failed(format!("snapshot: {error:#}")))
        } else {
            Err(failed(format!(
                "the init left descriptors {left_open:?} open; a snapshot cannot hold them"
            )))
        };
        // Removes the call's temp dir, as after a run.
        let StoreData { wasi, memory } = store.into_data();
        run::finish(
            call,
            wasi,
            EngineEnd::Returned,
            &memory,
            fuel_consumed,
            enforced,
        );
        let snapshot = snapshot?;
        Module::validate(&engine, &snapshot)
            .map_err(|error| failed(format!("the snapshot is not a valid module: {error:#}")))?;
        Ok(snapshot)
    }
}

/// Wizer's view of the initialized instance.
struct Snapshotter<'a> {
    store: &'a mut Store<StoreData>,
    instance: Instance,
}

impl InstanceState for Snapshotter<'_> {
    async fn global_get(&mut self, name: &str, _type_hint: ValType) -> SnapshotVal {
        let global = self
            .instance
            .get_global(&mut *self.store, name)
            .expect("the instrumented module exports each mutable global it names");
        match global.get(&mut *self.store) {
            Val::I32(x) => SnapshotVal::I32(x),
            Val::I64(x) => SnapshotVal::I64(x),
            Val::F32(x) => SnapshotVal::F32(x),
            Val::F64(x) => SnapshotVal::F64(x),
            Val::V128(x) => SnapshotVal::V128(x.as_u128()),
            // `Wizer::instrument` refuses modules with mutable reference-typed globals.
            other => unreachable!("a mutable global holding {other:?}"),
        }
    }

    async fn memory_contents(&mut self, name: &str, contents: impl FnOnce(&[u8]) + Send) {
        let memory = self
            .instance
            .get_memory(&mut *self.store, name)
            .expect("the instrumented module exports each memory it names");
        contents(memory.data(&*self.store));
    }
}

/// Runs a future that never waits: [`Wizer::snapshot`] is `async` only so that an
/// [`InstanceState`] may be, and [`Snapshotter`]'s methods complete at once.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut context = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::yield_now();
    }
}
