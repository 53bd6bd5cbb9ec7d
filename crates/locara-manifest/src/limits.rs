//! Resource limits: what a manifest asks for ([`LimitsSpec`]) and what a run gets ([`EffectiveLimits`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::Error;

const MIB: u64 = 1024 * 1024;

/// Resource limits as written in a manifest. Every field is optional; a missing field takes
/// its default. Values above the maximum are rejected, not clamped.
///
/// | field | default | maximum |
/// | --- | --- | --- |
/// | `memory_mb` | 256 | 1024 |
/// | `wall_time_ms` | 30 000 | 300 000 |
/// | `fuel` | 10⁹ | 10¹² |
/// | `output_bytes` | 10 MiB | 100 MiB |
/// | `max_fds` | 32 | 1024 |
/// | `temp_mb` | 256 | 4096 |
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct LimitsSpec {
    /// Linear memory limit in MiB (default 256, maximum 1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1, max = 1024)))]
    pub memory_mb: Option<u64>,
    /// Wall-clock limit per call in milliseconds (default 30000, maximum 300000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1, max = 300_000)))]
    pub wall_time_ms: Option<u64>,
    /// Fuel (roughly, wasm instructions) per call (default 1e9, maximum 1e12).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "json-schema",
        schemars(range(min = 1, max = 1_000_000_000_000_u64))
    )]
    pub fuel: Option<u64>,
    /// Most bytes the tool may write to stdout and stderr together (default 10 MiB, maximum 100 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1, max = 104_857_600)))]
    pub output_bytes: Option<u64>,
    /// Most file descriptors the tool may hold open at once (default 32, maximum 1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1, max = 1024)))]
    pub max_fds: Option<u32>,
    /// Most MiB the tool's temp dir may hold at once: file contents plus 4 KiB per file,
    /// directory or link created (default 256, maximum 4096).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1, max = 4096)))]
    pub temp_mb: Option<u64>,
}

impl LimitsSpec {
    /// Default `memory_mb`.
    pub const DEFAULT_MEMORY_MB: u64 = 256;
    /// Largest accepted `memory_mb`.
    pub const MAX_MEMORY_MB: u64 = 1024;
    /// Default `wall_time_ms` (30 s).
    pub const DEFAULT_WALL_TIME_MS: u64 = 30_000;
    /// Largest accepted `wall_time_ms` (5 min).
    pub const MAX_WALL_TIME_MS: u64 = 300_000;
    /// Default `fuel`.
    pub const DEFAULT_FUEL: u64 = 1_000_000_000;
    /// Largest accepted `fuel`: about two minutes of Wasmtime's time, within the largest wall
    /// time. It was 1e11 (~11 s), less than one dense page of `ocr` needs (~5e11).
    pub const MAX_FUEL: u64 = 1_000_000_000_000;
    /// Default `output_bytes` (10 MiB).
    pub const DEFAULT_OUTPUT_BYTES: u64 = 10 * MIB;
    /// Largest accepted `output_bytes` (100 MiB).
    pub const MAX_OUTPUT_BYTES: u64 = 100 * MIB;
    /// Default `max_fds`.
    pub const DEFAULT_MAX_FDS: u32 = 32;
    /// Largest accepted `max_fds`.
    pub const MAX_MAX_FDS: u32 = 1024;
    /// Default `temp_mb`.
    pub const DEFAULT_TEMP_MB: u64 = 256;
    /// Largest accepted `temp_mb`.
    pub const MAX_TEMP_MB: u64 = 4096;

    /// No explicit limits: every field takes its default.
    #[must_use]
    pub fn new() -> LimitsSpec {
        LimitsSpec::default()
    }

    /// Sets `memory_mb`.
    #[must_use]
    pub fn with_memory_mb(mut self, memory_mb: u64) -> LimitsSpec {
        self.memory_mb = Some(memory_mb);
        self
    }

    /// Sets `wall_time_ms`.
    #[must_use]
    pub fn with_wall_time_ms(mut self, wall_time_ms: u64) -> LimitsSpec {
        self.wall_time_ms = Some(wall_time_ms);
        self
    }

    /// Sets `fuel`.
    #[must_use]
    pub fn with_fuel(mut self, fuel: u64) -> LimitsSpec {
        self.fuel = Some(fuel);
        self
    }

    /// Sets `output_bytes`.
    #[must_use]
    pub fn with_output_bytes(mut self, output_bytes: u64) -> LimitsSpec {
        self.output_bytes = Some(output_bytes);
        self
    }

    /// Sets `max_fds`.
    #[must_use]
    pub fn with_max_fds(mut self, max_fds: u32) -> LimitsSpec {
        self.max_fds = Some(max_fds);
        self
    }

    /// Sets `temp_mb`.
    #[must_use]
    pub fn with_temp_mb(mut self, temp_mb: u64) -> LimitsSpec {
        self.temp_mb = Some(temp_mb);
        self
    }

    /// Checks every given value against its range `1..=MAX_*`.
    ///
    /// # Errors
    ///
    /// Returns [`Error::LimitTooHigh`] (naming the limit, the value and the maximum) or
    /// [`Error::LimitZero`] for the first value out of range, in field order.
    pub fn validate(&self) -> Result<(), Error> {
        for (limit, value, max) in self.entries() {
            match value {
                Some(0) => return Err(Error::LimitZero { limit }),
                Some(value) if value > max => {
                    return Err(Error::LimitTooHigh { limit, value, max });
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Fills in defaults and converts to the units a sandbox uses.
    ///
    /// # Errors
    ///
    /// Returns the same errors as [`LimitsSpec::validate`].
    pub fn resolve(&self) -> Result<EffectiveLimits, Error> {
        self.validate()?;
        Ok(self.resolve_clamped())
    }

    /// Like [`LimitsSpec::resolve`], but clamps out-of-range values into `1..=MAX_*` instead of
    /// failing.
    #[must_use]
    pub fn resolve_clamped(&self) -> EffectiveLimits {
        let pick =
            |value: Option<u64>, default: u64, max: u64| value.unwrap_or(default).clamp(1, max);
        EffectiveLimits {
            memory_bytes: pick(self.memory_mb, Self::DEFAULT_MEMORY_MB, Self::MAX_MEMORY_MB) * MIB,
            wall_time: Duration::from_millis(pick(
                self.wall_time_ms,
                Self::DEFAULT_WALL_TIME_MS,
                Self::MAX_WALL_TIME_MS,
            )),
            fuel: pick(self.fuel, Self::DEFAULT_FUEL, Self::MAX_FUEL),
            output_bytes: pick(
                self.output_bytes,
                Self::DEFAULT_OUTPUT_BYTES,
                Self::MAX_OUTPUT_BYTES,
            ),
            max_fds: self
                .max_fds
                .unwrap_or(Self::DEFAULT_MAX_FDS)
                .clamp(1, Self::MAX_MAX_FDS),
            temp_bytes: pick(self.temp_mb, Self::DEFAULT_TEMP_MB, Self::MAX_TEMP_MB) * MIB,
        }
    }

    fn entries(&self) -> [(&'static str, Option<u64>, u64); 6] {
        [
            ("memory_mb", self.memory_mb, Self::MAX_MEMORY_MB),
            ("wall_time_ms", self.wall_time_ms, Self::MAX_WALL_TIME_MS),
            ("fuel", self.fuel, Self::MAX_FUEL),
            ("output_bytes", self.output_bytes, Self::MAX_OUTPUT_BYTES),
            (
                "max_fds",
                self.max_fds.map(u64::from),
                u64::from(Self::MAX_MAX_FDS),
            ),
            ("temp_mb", self.temp_mb, Self::MAX_TEMP_MB),
        ]
    }
}

/// Limits with every default filled in, in the units a sandbox uses.
///
/// Built by [`LimitsSpec::resolve`] or [`ToolManifest::limits`](crate::ToolManifest::limits);
/// a host may lower these further before a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EffectiveLimits {
    /// Linear memory limit in bytes.
    pub memory_bytes: u64,
    /// Wall-clock limit per call.
    pub wall_time: Duration,
    /// Fuel per call.
    pub fuel: u64,
    /// Most bytes of stdout plus stderr.
    pub output_bytes: u64,
    /// Most open file descriptors.
    pub max_fds: u32,
    /// Most bytes the temp dir may hold.
    pub temp_bytes: u64,
}

impl EffectiveLimits {
    /// The limits of a manifest that sets none.
    pub const DEFAULT: EffectiveLimits = EffectiveLimits {
        memory_bytes: LimitsSpec::DEFAULT_MEMORY_MB * MIB,
        wall_time: Duration::from_millis(LimitsSpec::DEFAULT_WALL_TIME_MS),
        fuel: LimitsSpec::DEFAULT_FUEL,
        output_bytes: LimitsSpec::DEFAULT_OUTPUT_BYTES,
        max_fds: LimitsSpec::DEFAULT_MAX_FDS,
        temp_bytes: LimitsSpec::DEFAULT_TEMP_MB * MIB,
    };

    /// The largest limits a manifest may ask for.
    pub const MAX: EffectiveLimits = EffectiveLimits {
        memory_bytes: LimitsSpec::MAX_MEMORY_MB * MIB,
        wall_time: Duration::from_millis(LimitsSpec::MAX_WALL_TIME_MS),
        fuel: LimitsSpec::MAX_FUEL,
        output_bytes: LimitsSpec::MAX_OUTPUT_BYTES,
        max_fds: LimitsSpec::MAX_MAX_FDS,
        temp_bytes: LimitsSpec::MAX_TEMP_MB * MIB,
    };
}

impl Default for EffectiveLimits {
    fn default() -> EffectiveLimits {
        EffectiveLimits::DEFAULT
    }
}
