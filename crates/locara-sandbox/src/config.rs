//! Engine-level configuration: which backend, where its caches and temp dirs live.

use std::{fmt, path::PathBuf, str::FromStr};

use crate::Error;

/// Which engine runs the modules.
///
/// Both are always named here so that configuration files and command lines parse the same way
/// whatever features a host compiled in; asking for a backend that was compiled out is an
/// [`Error::BackendUnavailable`] from [`Sandbox::new`](crate::Sandbox::new).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackendKind {
    /// Wasmtime: Cranelift-compiled code, pooling allocator, fuel, epoch deadlines.
    Wasmtime,
    /// wasmi: a pure-Rust interpreter with fuel metering; slower, but portable and small.
    Wasmi,
}

impl BackendKind {
    /// Every backend, in order of preference.
    pub const ALL: [BackendKind; 2] = [BackendKind::Wasmtime, BackendKind::Wasmi];

    /// The lower-case name used on command lines and in config files.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Wasmtime => "wasmtime",
            BackendKind::Wasmi => "wasmi",
        }
    }

    /// Whether this build of the crate includes this backend.
    pub fn is_available(self) -> bool {
        match self {
            BackendKind::Wasmtime => cfg!(feature = "wasmtime"),
            BackendKind::Wasmi => cfg!(feature = "wasmi"),
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BackendKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "wasmtime" => Ok(BackendKind::Wasmtime),
            "wasmi" => Ok(BackendKind::Wasmi),
            other => Err(Error::UnknownBackend {
                name: other.to_owned(),
            }),
        }
    }
}

/// How a [`Sandbox`](crate::Sandbox) is built.
///
/// Built with `&mut self` setters, like `wasmtime::Config`; nothing is validated until
/// [`Sandbox::new`](crate::Sandbox::new).
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    pub(crate) backend: BackendKind,
    pub(crate) cache_dir: Option<PathBuf>,
    pub(crate) temp_root: Option<PathBuf>,
    pub(crate) background_temp_removal: bool,
    pub(crate) pooling: bool,
    pub(crate) max_concurrent_instances: u32,
    pub(crate) meter_fuel: bool,
}

impl SandboxConfig {
    /// A configuration for `backend` with every other option at its default.
    pub fn new(backend: BackendKind) -> SandboxConfig {
        SandboxConfig {
            backend,
            cache_dir: None,
            temp_root: None,
            background_temp_removal: false,
            pooling: true,
            max_concurrent_instances: 32,
            meter_fuel: true,
        }
    }

    /// Where compiled modules are cached on disk, keyed by the caller's cache key and the
    /// engine's configuration.
    ///
    /// Only Wasmtime compiles ahead of time, so only Wasmtime uses it.
    /// By default there is no disk cache: every process compiles each module once.
    pub fn cache_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// The directory under which each call's fresh temp dir is created (and removed).
    ///
    /// By default this is the system temp dir.
    pub fn temp_root(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.temp_root = Some(dir.into());
        self
    }

    /// Whether a finished call's temp dir is removed by a cleaner thread instead of by the call.
    ///
    /// On a journaling disk, removing a temp dir is a large part of a short call that uses
    /// `/tmp` (about 0.3 ms of a Python call on ext4); in the background the call returns
    /// without waiting for it. The output files are read before the temp dir is handed over,
    /// and the removal is the same. A temp dir is then gone shortly after its call rather
    /// than when `run` returns; the cleaner's queue is short (a disk that falls behind makes
    /// calls remove their own), and dropping the sandbox and every module it compiled waits
    /// until the cleaner is done. By default this option is `false`.
    pub fn remove_temp_dirs_in_background(&mut self, enable: bool) -> &mut Self {
        self.background_temp_removal = enable;
        self
    }

    /// Whether Wasmtime meters fuel, so that a call's [`Limits::fuel`](crate::Limits::fuel) is
    /// enforced to the instruction.
    ///
    /// Metering is compiled into the guest's code: a counter updated in every basic block and
    /// checked at every loop and call, whose slices are also where the wall clock is checked.
    /// Without it, the engine checks an epoch at every loop and call instead, at about the same
    /// cost (`--bench media`: from 11% faster without fuel on `pdf.extract-text` to 1% slower
    /// on `image.format-convert`). A call's fuel limit is then not enforced
    /// ([`Enforcement::NotEnforced`](crate::Enforcement::NotEnforced), and no fuel is
    /// counted); the wall-clock deadline, enforced at every epoch tick (10 ms) wherever the
    /// guest is, is then what stops a guest that runs too long, and a call driven as a future
    /// yields at each tick instead of after each slice of fuel, so it may hold the thread that
    /// polls it for up to a tick instead of about a millisecond. Memory, output, temp and
    /// descriptor limits are unaffected, and so are the results of calls that stay within
    /// their fuel. It is a choice for hosts that bound calls by time: what a call may consume
    /// then depends on the machine and its load, not on the guest's code alone.
    ///
    /// wasmi always meters: fuel is how its deadline is checked while a guest runs. By default
    /// this option is `true`.
    pub fn meter_fuel(&mut self, enable: bool) -> &mut Self {
        self.meter_fuel = enable;
        self
    }

    /// Whether Wasmtime uses its pooling instance allocator.
    ///
    /// The pool reserves address space for [`max_concurrent_instances`](Self::max_concurrent_instances)
    /// memories of up to 1 GiB each up front, so that instantiation is a few microseconds.
    /// By default this option is `true`.
    pub fn pooling(&mut self, enable: bool) -> &mut Self {
        self.pooling = enable;
        self
    }

    /// How many instances may be alive at once with the pooling allocator (and so how many
    /// fiber stacks the pool holds: every Wasmtime call runs on one).
    ///
    /// A call beyond that waits for no slot: it fails with a backend error, so size the pool to
    /// the host's concurrency. By default this is 32.
    pub fn max_concurrent_instances(&mut self, count: u32) -> &mut Self {
        self.max_concurrent_instances = count;
        self
    }

    /// The backend this configuration selects.
    pub fn backend(&self) -> BackendKind {
        self.backend
    }
}
