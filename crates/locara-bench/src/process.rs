//! What the load driver (`benches/load.rs`) watches in its own process: resident memory, open
//! file descriptors, threads, and the per-call temp dirs left in the sandbox's temp root.
//! Linux only: it reads `/proc/self`.

use std::{fmt::Write as _, io, path::Path};

/// How long [`ProcessSample::take`] waits for the temp root to empty.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// The process at one point of a load run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessSample {
    /// How many calls had completed.
    pub calls: usize,
    /// Resident memory (`VmRSS`), in KiB.
    pub rss_kib: u64,
    /// Its anonymous part (`RssAnon`: the heap, stacks, wasm memories; not mapped files), in
    /// KiB.
    pub anon_kib: u64,
    /// Peak resident memory so far (`VmHWM`), in KiB.
    pub peak_rss_kib: u64,
    /// Open file descriptors (entries of `/proc/self/fd`, less the one that lists them).
    pub fds: usize,
    /// Threads (`Threads`).
    pub threads: u64,
    /// Entries in the temp root: per-call temp dirs that exist at this moment.
    pub temp_dirs: usize,
}

impl ProcessSample {
    /// Samples this process after `calls` calls, counting the entries of `temp_root`.
    ///
    /// Call it with no call in flight. A finished call's temp dir may still be in the
    /// sandbox's cleaner queue (`LocaraConfig::background_temp_removal`), so the sample is
    /// taken once `temp_root` is empty, or after 2 s if it never empties: a temp dir
    /// still there then was left behind, and the fds the cleaner held are closed.
    ///
    /// # Errors
    /// When `/proc/self` or `temp_root` cannot be read, or `/proc/self/status` lacks a field.
    pub fn take(calls: usize, temp_root: &Path) -> io::Result<ProcessSample> {
        let settling = std::time::Instant::now();
        while std::fs::read_dir(temp_root)?.next().is_some() && settling.elapsed() < SETTLE {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let status = std::fs::read_to_string("/proc/self/status")?;
        let field = |name: &str| {
            status_field(&status, name).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("no `{name}` in /proc/self/status"),
                )
            })
        };
        let (rss_kib, anon_kib, peak_rss_kib, threads) = (
            field("VmRSS")?,
            field("RssAnon")?,
            field("VmHWM")?,
            field("Threads")?,
        );
        // Listing the directory opens one descriptor, which is counted too.
        let fds = std::fs::read_dir("/proc/self/fd")?
            .count()
            .saturating_sub(1);
        let temp_dirs = std::fs::read_dir(temp_root)?.count();
        Ok(ProcessSample {
            calls,
            rss_kib,
            anon_kib,
            peak_rss_kib,
            fds,
            threads,
            temp_dirs,
        })
    }
}

/// The number at the start of `name`'s value in a `/proc/<pid>/status` text (`VmRSS:  1234 kB`
/// gives 1234, in the file's unit).
pub fn status_field(status: &str, name: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix(':')?;
        value.split_whitespace().next()?.parse().ok()
    })
}

/// The CPU time this process's threads have run so far: the sum of the first field of
/// `/proc/self/task/*/schedstat` (nanoseconds). A thread that exits takes its time with it, so
/// the difference over an interval counts the threads alive at both ends.
///
/// Unlike wall time, it barely depends on what else the machine runs: on a loaded machine it is
/// what an interval would take on an idle one (the work of a call, not its wait for a core).
///
/// # Errors
/// When `/proc/self/task` cannot be read.
pub fn cpu_time() -> io::Result<std::time::Duration> {
    let mut nanos = 0u64;
    for task in std::fs::read_dir("/proc/self/task")? {
        // A thread that exited since the listing has no file any more.
        let Ok(text) = std::fs::read_to_string(task?.path().join("schedstat")) else {
            continue;
        };
        nanos += text
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Ok(std::time::Duration::from_nanos(nanos))
}

/// `part` as a percentage of `whole` (0 when `whole` is 0).
pub fn percent(part: f64, whole: f64) -> f64 {
    if whole == 0.0 {
        0.0
    } else {
        part / whole * 100.0
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

/// The table of samples: calls done, RSS, its anonymous part and peak RSS in MiB, open fds,
/// threads and temp dirs present; each sample is labelled (e.g. "start", "warm-up", "10%").
pub fn render_samples(samples: &[(String, ProcessSample)]) -> String {
    let width = samples
        .iter()
        .map(|(label, _)| label.chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<width$}  {:>7}  {:>8}  {:>9}  {:>9}  {:>4}  {:>7}  {:>9}",
        "point", "calls", "RSS MiB", "anon MiB", "peak MiB", "fds", "threads", "temp dirs"
    );
    for (label, s) in samples {
        let _ = writeln!(
            out,
            "{:<width$}  {:>7}  {:>8}  {:>9}  {:>9}  {:>4}  {:>7}  {:>9}",
            label,
            s.calls,
            mib(s.rss_kib),
            mib(s.anon_kib),
            mib(s.peak_rss_kib),
            s.fds,
            s.threads,
            s.temp_dirs
        );
    }
    out
}
