//! Per-call limits and the report of how each was enforced.

use std::{fmt, time::Duration};

/// The resources one call may use.
///
/// Every limit applies to every call; exceeding one ends the call with
/// [`RunStatus::LimitExceeded`](crate::RunStatus::LimitExceeded) and the instance is dropped,
/// so no state survives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// The most linear memory the module may have, in bytes.
    ///
    /// Enforced exactly on both engines (a `memory.grow` past it fails and the call ends).
    /// Default 256 MiB.
    pub memory_bytes: u64,
    /// The most wall-clock time the call may take.
    ///
    /// Metering fuel, both engines check it whenever the guest's fuel slice runs out (every
    /// few million instructions; bulk memory operations are charged by the byte) and in every
    /// host call, so it overshoots by at most one slice. Wasmtime without fuel metering
    /// enforces it with epoch interruption instead, every 10 ms tick, wherever the guest is.
    /// Default 30 s.
    pub wall_time: Duration,
    /// The most fuel (roughly, wasm instructions) the call may consume. Default 1e9.
    pub fuel: u64,
    /// The most bytes the guest may write to stdout and stderr together. Default 10 MiB.
    pub output_bytes: u64,
    /// The most file descriptors the guest may hold open at once, stdio and preopens included.
    /// Default 32.
    pub max_fds: u32,
    /// The most bytes the call's temp dir (`/tmp`) may hold at once: file contents, plus 4 KiB
    /// for each file, directory or link created. Exact (the host makes every write). Default
    /// 256 MiB; the space is freed when the call ends.
    pub temp_bytes: u64,
}

impl Limits {
    /// 256 MiB.
    pub const DEFAULT_MEMORY_BYTES: u64 = 256 << 20;
    /// 1 GiB: the most memory any call may be given.
    pub const MAX_MEMORY_BYTES: u64 = 1 << 30;
    /// 30 s.
    pub const DEFAULT_WALL_TIME: Duration = Duration::from_secs(30);
    /// 1e9.
    pub const DEFAULT_FUEL: u64 = 1_000_000_000;
    /// 10 MiB.
    pub const DEFAULT_OUTPUT_BYTES: u64 = 10 << 20;
    /// 32.
    pub const DEFAULT_MAX_FDS: u32 = 32;
    /// 256 MiB.
    pub const DEFAULT_TEMP_BYTES: u64 = 256 << 20;

    pub(crate) fn validate(&self) -> Result<(), crate::Error> {
        let invalid = |limit, message: String| Err(crate::Error::InvalidLimit { limit, message });
        if self.memory_bytes > Self::MAX_MEMORY_BYTES {
            return invalid(
                "memory",
                format!(
                    "{} bytes is above the maximum of {} bytes",
                    self.memory_bytes,
                    Self::MAX_MEMORY_BYTES
                ),
            );
        }
        if self.max_fds < 4 {
            return invalid(
                "fds",
                format!(
                    "{} is below 4 (stdin, stdout, stderr and /tmp)",
                    self.max_fds
                ),
            );
        }
        if self.wall_time.is_zero() {
            return invalid("wall_time", "must be positive".to_owned());
        }
        Ok(())
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            memory_bytes: Self::DEFAULT_MEMORY_BYTES,
            wall_time: Self::DEFAULT_WALL_TIME,
            fuel: Self::DEFAULT_FUEL,
            output_bytes: Self::DEFAULT_OUTPUT_BYTES,
            max_fds: Self::DEFAULT_MAX_FDS,
            temp_bytes: Self::DEFAULT_TEMP_BYTES,
        }
    }
}

/// Which limit a call exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LimitKind {
    /// [`Limits::memory_bytes`].
    Memory,
    /// [`Limits::wall_time`].
    WallTime,
    /// [`Limits::fuel`].
    Fuel,
    /// [`Limits::output_bytes`].
    Output,
    /// [`Limits::max_fds`].
    Fds,
    /// [`Limits::temp_bytes`].
    TempBytes,
    /// The engine's call stack (the nesting depth of calls): the guest recursed too deep. Not
    /// a field of [`Limits`]: each engine has its own fixed stack.
    Stack,
}

impl LimitKind {
    /// A stable snake_case name, used in structured errors.
    pub fn name(self) -> &'static str {
        match self {
            LimitKind::Memory => "memory",
            LimitKind::WallTime => "wall_time",
            LimitKind::Fuel => "fuel",
            LimitKind::Output => "output_bytes",
            LimitKind::Fds => "max_fds",
            LimitKind::TempBytes => "temp_bytes",
            LimitKind::Stack => "stack",
        }
    }
}

impl fmt::Display for LimitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a limit was enforced on the engine that ran the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Enforcement {
    /// Enforced wherever the guest is, to the instruction (fuel, memory) or the tick (epochs:
    /// the wall clock on Wasmtime without fuel metering).
    Exact,
    /// Checked periodically: at host calls and between fuel slices; the guest can overshoot by
    /// one slice.
    Periodic,
    /// Not enforced on this run: fuel when Wasmtime does not meter it
    /// ([`SandboxConfig::meter_fuel`](crate::SandboxConfig::meter_fuel)), where the wall-clock
    /// deadline is what bounds the guest.
    NotEnforced,
}

/// For each limit, how it was enforced on this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnforcedLimits {
    /// Linear memory.
    pub memory: Enforcement,
    /// Wall-clock time.
    pub wall_time: Enforcement,
    /// Fuel.
    pub fuel: Enforcement,
    /// Output bytes (always exact: the host writes the guest's output).
    pub output: Enforcement,
    /// File descriptors (always exact: the host owns the fd table).
    pub fds: Enforcement,
}

impl EnforcedLimits {
    /// Every limit exact.
    pub const EXACT: EnforcedLimits = EnforcedLimits {
        memory: Enforcement::Exact,
        wall_time: Enforcement::Exact,
        fuel: Enforcement::Exact,
        output: Enforcement::Exact,
        fds: Enforcement::Exact,
    };
}
