//! The backend trait, and the cheap handles hosts use.

use std::{fmt, future::Future, pin::Pin, sync::Arc};

use crate::{BackendKind, CancelToken, Capabilities, Error, Limits, RunOutcome, SandboxConfig};

/// An engine that compiles modules.
///
/// Locara ships two ([`BackendKind`]); the trait is public so that a host or a test can bring
/// its own and hand it to [`Sandbox::from_backend`].
/// It has one required method; keep it that way (add defaulted methods with a documented
/// contract).
pub trait Backend: Send + Sync + fmt::Debug {
    /// Compiles (or loads from a cache) a WASI preview 1 command module.
    ///
    /// `cache_key`, when given, must identify `wasm` uniquely (Locara passes the artifact's
    /// sha256, computed by the registry on these very bytes); a backend may use it to cache
    /// compiled code on disk, and then use what it cached under that key without compiling
    /// or validating `wasm` again. It must be made of ASCII letters, digits, `-`, `_` and `.`.
    ///
    /// ## Return value
    /// A module that can be run any number of times, concurrently, each run in a fresh
    /// instance.
    ///
    /// # Errors
    /// [`Error::InvalidModule`] for bytes that are not valid wasm,
    /// [`Error::UnsupportedImport`] for a module that imports anything the sandbox does not
    /// provide (checked here, before anything runs), and [`Error::NotACommand`] for a module
    /// without `_start` or without an exported memory.
    fn compile(
        &self,
        wasm: &[u8],
        cache_key: Option<&str>,
    ) -> Result<Box<dyn CompiledModule>, Error>;

    /// The module this backend compiled and cached under `cache_key` before (see
    /// [`compile`](Self::compile)), without its bytes; `None` if there is none to use, which
    /// the default says always.
    ///
    /// A host that must read or fetch a module's bytes asks this first, and reads them only
    /// on `None` to call [`compile`](Self::compile). The module returned is the one
    /// [`compile`](Self::compile) would return for the bytes `cache_key` names.
    ///
    /// # Errors
    /// As [`compile`](Self::compile), for a cached module this engine cannot run.
    fn cached(&self, cache_key: &str) -> Result<Option<Box<dyn CompiledModule>>, Error> {
        let _ = cache_key;
        Ok(None)
    }
}

/// A compiled module, ready to run.
pub trait CompiledModule: Send + Sync + fmt::Debug {
    /// Runs the module once in a fresh instance: `input` is its stdin.
    ///
    /// ## Return value
    /// The outcome of a call that ran, however it ended: a trap, an exceeded limit or a
    /// non-zero exit is a [`RunOutcome`], not an error.
    ///
    /// When `cancel` is cancelled, the call must end soon after with
    /// [`RunStatus::Cancelled`](crate::RunStatus::Cancelled), cleaned up as after any other end.
    ///
    /// # Errors
    /// Only when the call could not start: invalid limits, a preopen that cannot be opened,
    /// no temp dir, or an engine that cannot create the instance.
    fn run(
        &self,
        input: &[u8],
        limits: &Limits,
        caps: &Capabilities,
        cancel: &CancelToken,
    ) -> Result<RunOutcome, Error>;

    /// Starts a call to be driven as a future, if this engine can; the default gives the call
    /// back, for engines that can only run a call to completion ([`run`](Self::run)).
    ///
    /// The call behaves as with [`run`](Self::run). The future runs the guest only while it
    /// is polled, and a poll returns (having woken its waker) after at most one slice of
    /// guest execution ([`SLICE_FUEL`] fuel, or one epoch tick when Wasmtime does not meter
    /// fuel: [`SandboxConfig::meter_fuel`](crate::SandboxConfig::meter_fuel)) and before any
    /// host function that may block for
    /// long (a sleep in `poll_oneoff`, a host service that cannot answer at once): a host may
    /// poll it once on an async runtime's own thread, where a short call ends with no thread
    /// hop, and move it to a blocking thread if it is still pending. Within [`IN_PLACE`] of
    /// its start, a service request made on such a thread is first offered to
    /// [`HostServices::call_now`](crate::HostServices::call_now), and only pends the future if
    /// the service needs a thread that may block. It is `Send` and may be polled to completion
    /// anywhere, e.g. with [`block_on`] (where every host function may block). Dropping it
    /// before it ends stops the guest and removes its temp dir as after any other end.
    ///
    /// # Errors
    /// Gives `call` back when this engine cannot drive a call as a future.
    fn start(&self, call: RunArgs) -> Result<RunFuture, Box<RunArgs>> {
        Err(Box::new(call))
    }
}

/// What one call is given, owned, for [`CompiledModule::start`]: the same as the arguments of
/// [`CompiledModule::run`].
#[derive(Debug, Clone)]
pub struct RunArgs {
    /// The guest's stdin.
    pub input: Vec<u8>,
    /// The call's limits.
    pub limits: Limits,
    /// What the guest may see and use.
    pub caps: Capabilities,
    /// Stops the call when cancelled.
    pub cancel: CancelToken,
}

/// A call in progress, driven by polling: see [`CompiledModule::start`].
pub type RunFuture = Pin<Box<dyn Future<Output = Result<RunOutcome, Error>> + Send + 'static>>;

/// How much fuel a [`RunFuture`] consumes at most between two returns from `poll`: about a
/// millisecond of guest code.
pub const SLICE_FUEL: u64 = 2_000_000;

/// How long after its start a call polled on an async runtime's thread may still have its
/// service requests answered there ([`HostServices::call_now`](crate::HostServices::call_now)):
/// about two slices, so that a program making many quick tool calls holds the runtime's thread
/// no longer than a slice or two before it moves to a blocking thread like any longer call.
pub const IN_PLACE: std::time::Duration = std::time::Duration::from_millis(2);

/// Drives `future` to completion on the calling thread, parking it while the future is
/// pending. This is not an async runtime: it polls one future and knows nothing of timers or
/// I/O, which is all a [`RunFuture`] needs (it only ever pends to yield, having woken itself).
/// Unlike a runtime's `block_on`, it may be used on any thread, including inside a runtime's
/// blocking pool while a host service blocks on that runtime.
pub fn block_on<F: Future>(future: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};

    // What the future does on this thread may block it: a host service is answered here.
    let _may_block = MayBlock::here(true);

    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }

    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(output) => return output,
            Poll::Pending => std::thread::park(),
        }
    }
}

thread_local! {
    /// Whether a host function run on this thread may block it: only under [`block_on`], never
    /// on an async runtime's thread (where a call's first slice runs) and never while a host
    /// service runs (an inner call it polls here is started by that service, and the service
    /// is already blocking this thread on its runtime).
    static MAY_BLOCK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Sets whether host functions may block this thread, until dropped.
pub(crate) struct MayBlock(bool);

impl MayBlock {
    pub(crate) fn here(may: bool) -> MayBlock {
        MayBlock(MAY_BLOCK.replace(may))
    }

    /// Whether host functions may block this thread now.
    #[cfg_attr(
        all(feature = "wasmi", not(feature = "wasmtime")),
        expect(dead_code, reason = "only Wasmtime starts calls as futures")
    )]
    pub(crate) fn now() -> bool {
        MAY_BLOCK.get()
    }
}

impl Drop for MayBlock {
    fn drop(&mut self) {
        MAY_BLOCK.set(self.0);
    }
}

/// A handle to an engine. Cheap to clone; clones share the engine and its caches.
#[derive(Clone, Debug)]
pub struct Sandbox {
    inner: Arc<dyn Backend>,
    kind: Option<BackendKind>,
}

impl Sandbox {
    /// Starts the engine `config` selects.
    ///
    /// # Errors
    /// [`Error::BackendUnavailable`] when that engine is not compiled in, and
    /// [`Error::Engine`] when it rejects the configuration (for example, when the pooling
    /// allocator cannot reserve its address space).
    pub fn new(config: &SandboxConfig) -> Result<Sandbox, Error> {
        let inner: Arc<dyn Backend> = match config.backend {
            #[cfg(feature = "wasmtime")]
            BackendKind::Wasmtime => {
                Arc::new(crate::wasmtime_backend::WasmtimeBackend::new(config)?)
            }
            #[cfg(feature = "wasmi")]
            BackendKind::Wasmi => Arc::new(crate::wasmi_backend::WasmiBackend::new(config)?),
            #[allow(
                unreachable_patterns,
                reason = "reachable when a backend feature is off"
            )]
            other => {
                return Err(Error::BackendUnavailable {
                    backend: other.name(),
                });
            }
        };
        Ok(Sandbox {
            inner,
            kind: Some(config.backend),
        })
    }

    /// Wraps a backend a host brings itself.
    pub fn from_backend(backend: Arc<dyn Backend>) -> Sandbox {
        Sandbox {
            inner: backend,
            kind: None,
        }
    }

    /// Which built-in backend this is, or `None` for one brought with [`Sandbox::from_backend`].
    pub fn kind(&self) -> Option<BackendKind> {
        self.kind
    }

    /// Compiles a module; see [`Backend::compile`].
    ///
    /// # Errors
    /// As [`Backend::compile`].
    pub fn compile(&self, wasm: &[u8], cache_key: Option<&str>) -> Result<Compiled, Error> {
        Ok(Compiled {
            inner: Arc::from(self.inner.compile(wasm, cache_key)?),
        })
    }

    /// The module compiled and cached under `cache_key` before, if any; see
    /// [`Backend::cached`].
    ///
    /// # Errors
    /// As [`Backend::cached`].
    pub fn cached(&self, cache_key: &str) -> Result<Option<Compiled>, Error> {
        Ok(self.inner.cached(cache_key)?.map(|inner| Compiled {
            inner: Arc::from(inner),
        }))
    }

    /// The module `cache_key` names: the one cached before ([`Sandbox::cached`]) if there is
    /// one, else `wasm()`'s bytes compiled ([`Sandbox::compile`]). `wasm` is called only then,
    /// so a host need not read or fetch a module whose compiled code is cached.
    ///
    /// # Errors
    /// `wasm()`'s error, or [`Backend::cached`]'s and [`Backend::compile`]'s as `E`.
    pub fn compile_unless_cached<B, E>(
        &self,
        cache_key: &str,
        wasm: impl FnOnce() -> Result<B, E>,
    ) -> Result<Compiled, E>
    where
        B: AsRef<[u8]>,
        E: From<Error>,
    {
        if let Some(compiled) = self.cached(cache_key)? {
            return Ok(compiled);
        }
        Ok(self.compile(wasm()?.as_ref(), Some(cache_key))?)
    }
}

/// A compiled module. Cheap to clone; run it as often as needed.
#[derive(Clone, Debug)]
pub struct Compiled {
    inner: Arc<dyn CompiledModule>,
}

impl Compiled {
    /// Runs the module once; see [`CompiledModule::run`].
    ///
    /// # Errors
    /// As [`CompiledModule::run`].
    pub fn run(
        &self,
        input: &[u8],
        limits: &Limits,
        caps: &Capabilities,
    ) -> Result<RunOutcome, Error> {
        self.inner.run(input, limits, caps, &CancelToken::new())
    }

    /// Runs the module once, stopping early if `cancel` is cancelled; see
    /// [`CompiledModule::run`] and [`CancelToken`].
    ///
    /// # Errors
    /// As [`CompiledModule::run`].
    pub fn run_cancellable(
        &self,
        input: &[u8],
        limits: &Limits,
        caps: &Capabilities,
        cancel: &CancelToken,
    ) -> Result<RunOutcome, Error> {
        self.inner.run(input, limits, caps, cancel)
    }

    /// Starts a call to be driven as a future, if the engine can; see
    /// [`CompiledModule::start`].
    ///
    /// # Errors
    /// Gives `call` back when the engine cannot drive a call as a future; run it with
    /// [`run_cancellable`](Self::run_cancellable) instead.
    pub fn start(&self, call: RunArgs) -> Result<RunFuture, Box<RunArgs>> {
        self.inner.start(call)
    }
}

/// Checks a module's imports and exports against what the sandbox provides.
pub(crate) fn check_interface<'a>(
    imports: impl Iterator<Item = (&'a str, &'a str)>,
    exports: impl Iterator<Item = (&'a str, ExportKind)>,
) -> Result<(), Error> {
    for (module, name) in imports {
        if !crate::wasi::provides(module, name) {
            return Err(Error::UnsupportedImport {
                module: module.to_owned(),
                name: name.to_owned(),
            });
        }
    }
    let (mut start, mut memory) = (false, false);
    for (name, kind) in exports {
        start |= name == "_start" && kind == ExportKind::Func;
        memory |= name == "memory" && kind == ExportKind::Memory;
    }
    match (start, memory) {
        (true, true) => Ok(()),
        (false, _) => Err(Error::NotACommand {
            message: "no exported `_start` function".to_owned(),
        }),
        (_, false) => Err(Error::NotACommand {
            message: "no exported `memory`".to_owned(),
        }),
    }
}

/// The kinds of export [`check_interface`] cares about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExportKind {
    Func,
    Memory,
    Other,
}

/// Whether `key` is safe to use as part of a file name.
#[cfg(feature = "wasmtime")]
pub(crate) fn is_valid_cache_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 128
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && !key.starts_with('.')
}
