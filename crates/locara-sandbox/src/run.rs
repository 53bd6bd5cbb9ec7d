//! What both engines do around a call: prepare the guest's world, then turn how the engine
//! stopped into a [`RunOutcome`].

use std::{ffi::OsStr, sync::Arc, time::Instant};

use cap_std::{ambient_authority, fs::Dir};

use crate::{
    CancelToken, Capabilities, DirPerms, EnforcedLimits, Error, LimitKind, Limits, RunOutcome,
    RunStatus,
    beneath::Walk,
    temp::TempDirs,
    wasi::{Stop, WasiCtx, WasiSetup},
};

/// A call in progress: when it started. Its temp dir, if the guest made one, is in its
/// [`WasiCtx`], and [`finish`] removes it (as does dropping the `WasiCtx`, should the engine fail
/// before the call ends).
#[derive(Debug)]
pub(crate) struct Call {
    started: Instant,
}

/// Validates the limits and opens the call's preopens. The temp dir is preopened but only
/// created on disk when the guest first uses it.
pub(crate) fn prepare(
    input: &[u8],
    limits: &Limits,
    caps: &Capabilities,
    temp_dirs: &Arc<TempDirs>,
    cancel: &CancelToken,
) -> Result<(WasiCtx, Call), Error> {
    limits.validate()?;
    let started = Instant::now();
    let mut preopens = Vec::new();
    for preopen in &caps.preopens {
        let dir = open_preopen(preopen).map_err(|source| Error::Preopen {
            path: preopen.host.clone(),
            source,
        })?;
        preopens.push((
            dir,
            preopen.guest.clone(),
            preopen.perms == DirPerms::ReadWrite,
        ));
    }
    let max_fds = limits.max_fds;
    let dirs = preopens.len() + usize::from(caps.temp_dir);
    if dirs + 3 > max_fds as usize {
        return Err(Error::InvalidLimit {
            limit: "fds",
            message: format!("{max_fds} cannot hold stdio and {dirs} preopened directories"),
        });
    }
    if !caps.staged.is_empty() && !caps.temp_dir {
        return Err(Error::InvalidLimit {
            limit: "temp_bytes",
            message: "files can only be staged for a call that has a temp dir".to_owned(),
        });
    }
    for (path, _) in &caps.staged {
        check_relative("staged file", path)?;
    }
    if let Some(dir) = &caps.collect {
        check_relative("collected directory", dir)?;
    }
    let mut args = vec![caps.program_name.clone()];
    args.extend(caps.args.iter().cloned());
    let wasi = WasiCtx::new(WasiSetup {
        stdin: input.to_vec(),
        args,
        temp_dirs: caps.temp_dir.then(|| Arc::clone(temp_dirs)),
        preopens,
        max_fds,
        output_limit: limits.output_bytes,
        temp_limit: limits.temp_bytes,
        deadline: started + limits.wall_time,
        cancel: cancel.clone(),
        collect: caps.collect.clone(),
        services: caps.services.clone(),
        random_seed: caps.random_seed,
    });
    let mut wasi = wasi;
    if !caps.staged.is_empty() {
        wasi.stage(&caps.staged)?;
    }
    Ok((wasi, Call { started }))
}

/// Opens a preopened directory: by its path, or, for one given with a trusted root, from that
/// root down without following a link ([`crate::open_dir_beneath`]).
fn open_preopen(preopen: &crate::Preopen) -> std::io::Result<Dir> {
    match &preopen.beneath {
        Some(root) => crate::open_dir_beneath(root, &preopen.host),
        None => Dir::open_ambient_dir(&preopen.host, ambient_authority()),
    }
}

/// Refuses a temp-dir path that is not relative and made of plain components.
fn check_relative(what: &str, path: &str) -> Result<(), Error> {
    let plain = !path.is_empty()
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains('\0'));
    if plain {
        Ok(())
    } else {
        Err(Error::InvalidLimit {
            limit: "temp_bytes",
            message: format!("the {what} path {path:?} must be relative, without `.` or `..`"),
        })
    }
}

/// Why the host collected no files from a call that succeeded.
#[derive(Debug)]
enum Collect {
    /// The files exceed the output budget.
    OverBudget,
    /// The collected directory, or one of its parents, is not a real directory.
    Refused(String),
    /// Reading what the guest left failed.
    Io(std::io::Error),
}

impl From<std::io::Error> for Collect {
    fn from(error: std::io::Error) -> Collect {
        Collect::Io(error)
    }
}

/// Opens `path` (relative to `root`, plain `/`-separated components) with
/// [`beneath::walk`](crate::beneath::walk): `Ok(None)` when a component does not exist, and
/// [`Collect::Refused`] naming the component (as the guest sees it, below `shown`) when it is
/// a link or not a directory. Nothing the guest planted can make the host open a directory
/// outside the temp dir.
fn open_collected(root: &Dir, path: &str, shown: &str) -> Result<Option<Dir>, Collect> {
    let names = path.split('/').filter(|c| !c.is_empty()).map(OsStr::new);
    match crate::beneath::walk(root, names) {
        Ok(dir) => Ok(Some(dir)),
        Err(Walk::Missing) => Ok(None),
        Err(Walk::NotADirectory { walked, link }) => {
            let what = if link {
                "a symbolic link"
            } else {
                "not a directory"
            };
            Err(Collect::Refused(format!(
                "the tool left {shown}{walked} as {what}: the host collects output files only from a real directory inside the call's temp dir and follows no links"
            )))
        }
        Err(Walk::Io(e)) => Err(Collect::Io(e)),
    }
}

/// Reads the regular files under `dir` (relative to the temp dir `temp`) in path order,
/// refusing more than `budget` bytes in all.
///
/// Everything goes through handles below `temp`, opened without following links: `dir` and
/// its parents must be real directories (else [`Collect::Refused`]), subdirectories that are
/// links are not entered, and files that are links, devices or FIFOs are skipped. Only what
/// the guest wrote is returned, never what a link points at.
fn collect_files(temp: &Dir, dir: &str, budget: u64) -> Result<Vec<crate::OutputFile>, Collect> {
    let Some(root) = open_collected(temp, dir, crate::TEMP_GUEST_PATH)? else {
        return Ok(Vec::new());
    };
    let mut files = Vec::new();
    let mut left = budget;
    let mut pending = vec![String::new()];
    while let Some(prefix) = pending.pop() {
        // Reopened from the collected root, one component at a time: no descriptor is held
        // per pending directory, however wide the tree.
        let shown = format!("{}/{dir}", crate::TEMP_GUEST_PATH);
        let Some(here) = open_collected(&root, &prefix, &shown)? else {
            continue;
        };
        let mut names: Vec<String> = here
            .entries()?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        names.sort();
        for name in names {
            let path = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}/{name}")
            };
            let meta = here.symlink_metadata(&name)?;
            if meta.is_dir() {
                pending.push(path);
            } else if meta.is_file() {
                if meta.len() > left {
                    return Err(Collect::OverBudget);
                }
                let Some(bytes) = read_regular_file(&here, &name, left)? else {
                    continue;
                };
                left = left.saturating_sub(bytes.len() as u64);
                files.push(crate::OutputFile { path, bytes });
            }
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// [`collect_files`] for a temp dir still in memory: the files under `dir`, in path order,
/// refusing more than `budget` bytes in all, and refusing a `dir` that is a file.
fn collect_from_memory(
    wasi: &mut WasiCtx,
    dir: &str,
    budget: u64,
) -> Result<Vec<crate::OutputFile>, Collect> {
    let taken = wasi.take_memory_files(dir).map_err(|walked| {
        Collect::Refused(format!(
            "the tool left {}{walked} as not a directory: the host collects output files only from a real directory inside the call's temp dir and follows no links",
            crate::TEMP_GUEST_PATH
        ))
    })?;
    let mut left = budget;
    let mut files = Vec::with_capacity(taken.len());
    for (path, bytes) in taken {
        let len = bytes.len() as u64;
        if len > left {
            return Err(Collect::OverBudget);
        }
        left -= len;
        // A staged input under `dir` is still shared with the request: copied, as reading
        // it back from disk would.
        let bytes = Arc::try_unwrap(bytes).unwrap_or_else(|shared| shared.as_ref().clone());
        files.push(crate::OutputFile { path, bytes });
    }
    Ok(files)
}

/// Reads `name` in `dir` if it is a regular file, opened without following a link: `Ok(None)`
/// for anything else. More than `budget` bytes is
/// [`Collect::OverBudget`].
fn read_regular_file(dir: &Dir, name: &str, budget: u64) -> Result<Option<Vec<u8>>, Collect> {
    use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt as _};
    use std::io::Read as _;

    let mut options = cap_std::fs::OpenOptions::new();
    options.read(true).follow(FollowSymlinks::No);
    // The guest no longer runs, so the entry is still the regular file just looked at; were
    // it a link now, `nofollow` makes the open fail instead of following it.
    let file = dir.open_with(name, &options)?;
    if !file.metadata()?.is_file() {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    file.take(budget.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > budget {
        return Err(Collect::OverBudget);
    }
    Ok(Some(bytes))
}

/// How the engine's call into `_start` ended, before classification.
#[derive(Debug)]
pub(crate) enum EngineEnd {
    /// `_start` returned.
    Returned,
    /// A host function stopped the guest; the reason is in the WASI state.
    Stopped,
    /// The engine ran out of fuel.
    OutOfFuel,
    /// The engine's call stack overflowed.
    StackOverflow,
    /// Any other trap.
    Trap(String),
}

/// The memory limiter both engines install: it refuses growth past the limit and remembers
/// that it did, so that the trap that usually follows is reported as the memory limit.
#[derive(Debug)]
pub(crate) struct MemoryLimiter {
    pub(crate) limit: u64,
    pub(crate) exceeded: bool,
}

impl MemoryLimiter {
    pub(crate) const TABLE_ELEMENTS: usize = 100_000;

    pub(crate) fn memory_growing(&mut self, desired: usize) -> bool {
        let ok = desired as u64 <= self.limit;
        if !ok {
            self.exceeded = true;
        }
        ok
    }
}

/// Builds the outcome, and removes the call's temp dir.
pub(crate) fn finish(
    call: Call,
    mut wasi: WasiCtx,
    end: EngineEnd,
    memory: &MemoryLimiter,
    fuel_consumed: u64,
    enforced: EnforcedLimits,
) -> RunOutcome {
    let Call { started } = call;
    let temp = wasi.temp.take();
    let temp_dirs = wasi.temp_dirs.take();
    let mut status = match (wasi.stop, end) {
        (Some(Stop::Limit(limit)), _) => RunStatus::LimitExceeded(limit),
        (Some(Stop::Cancelled), _) => RunStatus::Cancelled,
        (_, EngineEnd::OutOfFuel) => RunStatus::LimitExceeded(LimitKind::Fuel),
        (_, EngineEnd::StackOverflow) => RunStatus::LimitExceeded(LimitKind::Stack),
        // A refused `memory.grow` usually ends in an abort (Rust's allocation failure handler)
        // or a non-zero exit; either way the memory limit is what the caller needs to know.
        (Some(Stop::Exit(code)), _) if memory.exceeded && code != 0 => {
            RunStatus::LimitExceeded(LimitKind::Memory)
        }
        (_, EngineEnd::Trap(_)) if memory.exceeded => RunStatus::LimitExceeded(LimitKind::Memory),
        (Some(Stop::Exit(code)), _) => RunStatus::Exited(code),
        (None, EngineEnd::Returned) => RunStatus::Exited(0),
        (None, EngineEnd::Trap(message)) => RunStatus::Trapped(message),
        (None, EngineEnd::Stopped) => RunStatus::Trapped("the host stopped the guest".to_owned()),
    };
    let elapsed = started.elapsed();
    let stdout = std::mem::take(&mut wasi.stdout);
    let stderr = std::mem::take(&mut wasi.stderr);
    let stderr_truncated = wasi.stderr_truncated;
    let mut files = Vec::new();
    if let (true, Some(dir)) = (status.is_success(), wasi.collect.clone()) {
        let budget = wasi.output_left();
        // A temp dir never moved to disk gives its files from memory.
        let collected = match &wasi.temp_handle {
            Some(handle) => collect_files(handle, &dir, budget),
            None => collect_from_memory(&mut wasi, &dir, budget),
        };
        match collected {
            Ok(collected) => files = collected,
            Err(Collect::OverBudget) => status = RunStatus::LimitExceeded(LimitKind::Output),
            Err(Collect::Refused(why)) => status = RunStatus::OutputRefused(why),
            Err(Collect::Io(error)) => {
                status = RunStatus::Trapped(format!(
                    "the host could not collect the output files: {error}"
                ));
            }
        }
    }
    // Close every descriptor before removing the directory they point into.
    drop(wasi);
    if let (Some(temp), Some(dirs)) = (temp, temp_dirs) {
        dirs.remove(temp);
    }
    RunOutcome {
        status,
        stdout,
        stderr,
        stderr_truncated,
        fuel_consumed,
        elapsed,
        enforced,
        files,
    }
}
