//! One WASI preview 1 host implementation, shared by both engines.
//!
//! Every function here takes the call's [`WasiCtx`] and the guest's linear memory as a plain
//! `&mut [u8]`, so it is engine-agnostic and entirely safe code: a guest pointer out of bounds
//! is `EFAULT`, never a host fault. The engine backends only adapt calling conventions (see
//! [`for_each_function`]).
//!
//! Why not `wasmtime-wasi`: wasmi cannot use it, and the sandbox's promises (the fd limit, the
//! output limit, the deadline checked in host calls, no sockets, exactly the same semantics on
//! both engines) are easiest to keep, and to test, in one place. Path resolution, the part
//! that is hard to get right, is delegated to `cap-std`, the same library `wasmtime-wasi` uses.

mod errno;
pub(crate) mod host;
mod marshal;
mod memtemp;
pub use self::memtemp::MEM_TEMP_BYTES;

use std::{
    borrow::Cow,
    fs::File,
    io::{Read, Seek, SeekFrom, Write},
    os::unix::fs::FileExt,
    sync::Arc,
    time::{Duration, Instant, SystemTime},
};

use cap_fs_ext::{
    DirExt, FollowSymlinks, MetadataExt, OpenOptionsFollowExt, OpenOptionsMaybeDirExt,
};
use cap_std::fs::{Dir, Metadata, OpenOptions};

pub(crate) use self::errno::Errno;
use self::memtemp::{Lookup, MemDesc, MemTemp};
use crate::{CancelToken, LimitKind, temp::TempDirs};

/// A file's bytes, shared with whoever else holds them (a staged file's with the request).
type SharedBytes = Arc<Vec<u8>>;

/// Why a host function stopped the guest instead of returning an errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The guest called `proc_exit`.
    Exit(i32),
    /// The guest exceeded a limit the host enforces.
    Limit(LimitKind),
    /// The host cancelled the call.
    Cancelled,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Exit(code) => write!(f, "guest exited with code {code}"),
            Stop::Limit(limit) => write!(f, "guest exceeded the {limit} limit"),
            Stop::Cancelled => f.write_str("the host cancelled the call"),
        }
    }
}

impl std::error::Error for Stop {}

/// What each file, directory, symlink or hard link created in the temp dir counts towards the
/// temp limit, besides its contents: one filesystem block.
pub(crate) const TEMP_ENTRY_BYTES: u64 = 4096;

/// What a host function can fail with: an errno for the guest, or a stop.
#[derive(Debug)]
pub(crate) enum Fail {
    Errno(Errno),
    Stop(Stop),
}

impl From<Errno> for Fail {
    fn from(errno: Errno) -> Fail {
        Fail::Errno(errno)
    }
}

impl From<std::io::Error> for Fail {
    fn from(error: std::io::Error) -> Fail {
        Fail::Errno(error.into())
    }
}

type Res<T = ()> = Result<T, Fail>;

/// How much of stderr the host keeps for the outcome.
pub(crate) const STDERR_KEEP: usize = 64 << 10;

const FILETYPE_UNKNOWN: u8 = 0;
const FILETYPE_CHARACTER_DEVICE: u8 = 2;
const FILETYPE_DIRECTORY: u8 = 3;
const FILETYPE_REGULAR_FILE: u8 = 4;
const FILETYPE_SYMBOLIC_LINK: u8 = 7;

const OFLAGS_CREAT: i32 = 1;
const OFLAGS_DIRECTORY: i32 = 2;
const OFLAGS_EXCL: i32 = 4;
const OFLAGS_TRUNC: i32 = 8;
const FDFLAGS_APPEND: i32 = 1;
const LOOKUP_SYMLINK_FOLLOW: i32 = 1;

const RIGHT_FD_READ: i64 = 1 << 1;
const RIGHT_FD_WRITE: i64 = 1 << 6;
const RIGHT_FD_ALLOCATE: i64 = 1 << 8;
const RIGHT_FD_READDIR: i64 = 1 << 14;
const RIGHT_FD_FILESTAT_SET_SIZE: i64 = 1 << 22;
/// Every right preview 1 defines; rights are enforced by the descriptor's kind and
/// writability, not by these bits.
const ALL_RIGHTS: u64 = (1 << 29) - 1;

/// The state of one call as its guest sees it through WASI.
#[derive(Debug)]
pub(crate) struct WasiCtx {
    table: Vec<Option<Desc>>,
    open: u32,
    max_fds: u32,
    stdin: Vec<u8>,
    stdin_pos: usize,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
    pub(crate) stderr_truncated: bool,
    output_written: u64,
    output_limit: u64,
    /// What the temp dir holds, as the host counts it (see [`WasiCtx::charge_temp`]).
    temp_used: u64,
    temp_limit: u64,
    args: Vec<String>,
    start: Instant,
    deadline: Instant,
    cancel: CancelToken,
    /// Why the guest was stopped, if a host function stopped it.
    pub(crate) stop: Option<Stop>,
    /// Where the temp dir is made, and by whom it is removed.
    pub(crate) temp_dirs: Option<Arc<TempDirs>>,
    /// The temp dir, once created; removed by [`crate::run::finish`].
    pub(crate) temp: Option<tempfile::TempDir>,
    /// A handle on the temp dir, opened when the host created it: the only way the host
    /// reaches into it after the call ([`crate::run::finish`] collects files through it), so
    /// that no path the guest could have replaced by a link is ever resolved on the host.
    pub(crate) temp_handle: Option<Dir>,
    /// The directory under the temp dir whose files [`crate::run::finish`] collects.
    pub(crate) collect: Option<String>,
    /// The host services the guest may call ([`host`]).
    services: Option<crate::services::Services>,
    /// A service's answer, ready for [`host::response`].
    pending: Option<Vec<u8>>,
    /// Whether the host function running now runs on a thread that must not block, so that a
    /// service request is answered in place or declined ([`host`]'s `ask`).
    pub(crate) in_place: bool,
    /// Set when a request was declined in place: the host function is run again, with the
    /// same arguments, once the call is on a thread that may block.
    pub(crate) declined: bool,
    /// The answer a declined request started, which the host function's second run waits for.
    parked: Option<crate::services::PendingAnswer>,
    /// The call's random numbers when the host seeded them; `None` reads the OS's.
    rng: Option<rand_chacha::ChaCha20Rng>,
    /// The temp dir while it is held in memory ([`memtemp`]): the staged files and what the
    /// guest made there; written to a real temp dir by [`WasiCtx::make_temp`].
    mem: MemTemp,
    /// The in-memory temp dir's own listing, while a guest reads it in several calls.
    mem_root_entries: Vec<(String, u8, u64)>,
}

#[derive(Debug)]
enum Desc {
    Stdin,
    Stdout,
    Stderr,
    Dir(DirDesc),
    File(FileDesc),
    /// The call's temp dir while it is in memory ([`memtemp`]): it is preopened (the guest
    /// sees it), but created on disk only when the guest does something the memory form does
    /// not model. Most tools never do, and creating, filling, reading back and removing a
    /// directory was the largest per-call cost of the sandbox for the tools that write files.
    LazyTemp,
    /// The host services as a stream ([`host::Channel`]), opened at
    /// [`crate::services::HOST_CHANNEL_PATH`].
    Channel(host::Channel),
    /// A file of the in-memory temp dir. Reading, writing, seeking and `stat` are done in
    /// memory; anything else creates the temp dir first, which makes it a [`Desc::File`] on
    /// the written file at the same position, so the guest sees one file either way.
    Mem(MemDesc),
    /// A directory of the in-memory temp dir, opened: listed from memory, and a base for paths
    /// like the temp dir itself. Anything else moves the temp dir to disk, which makes it a
    /// [`Desc::Dir`] on the same directory.
    MemDir(MemDirDesc),
}

#[derive(Debug)]
struct MemDirDesc {
    /// Relative to the temp dir.
    path: String,
    /// The directory's entries, taken when a listing starts at cookie 0.
    entries: Vec<(String, u8, u64)>,
}

#[derive(Debug)]
struct DirDesc {
    dir: Dir,
    /// The guest path, for preopened directories only.
    preopen: Option<String>,
    writable: bool,
    /// Whether the directory is the call's temp dir or inside it: what is created under it
    /// counts towards the temp limit.
    in_temp: bool,
    /// The directory's entries, read when a listing starts at cookie 0.
    entries: Vec<(String, u8, u64)>,
}

#[derive(Debug)]
struct FileDesc {
    file: File,
    readable: bool,
    writable: bool,
    append: bool,
    /// Whether the file is in the call's temp dir: its growth counts towards the temp limit.
    in_temp: bool,
}

/// What [`WasiCtx::new`] needs.
#[derive(Debug)]
pub(crate) struct WasiSetup {
    pub(crate) stdin: Vec<u8>,
    pub(crate) args: Vec<String>,
    /// Where to create the call's temp dir (at fd 3, guest path `/tmp`) on first use; `None`
    /// gives the call no temp dir.
    pub(crate) temp_dirs: Option<Arc<TempDirs>>,
    /// Preopened directories, in fd order after the temp dir, as `(dir, guest path, writable)`.
    pub(crate) preopens: Vec<(Dir, String, bool)>,
    pub(crate) max_fds: u32,
    pub(crate) output_limit: u64,
    pub(crate) temp_limit: u64,
    pub(crate) deadline: Instant,
    pub(crate) cancel: CancelToken,
    pub(crate) collect: Option<String>,
    pub(crate) services: Option<crate::services::Services>,
    pub(crate) random_seed: Option<u64>,
}

impl WasiCtx {
    pub(crate) fn new(setup: WasiSetup) -> WasiCtx {
        let mut table = vec![Some(Desc::Stdin), Some(Desc::Stdout), Some(Desc::Stderr)];
        if setup.temp_dirs.is_some() {
            table.push(Some(Desc::LazyTemp));
        }
        for (dir, guest, writable) in setup.preopens {
            table.push(Some(Desc::Dir(DirDesc {
                dir,
                preopen: Some(guest),
                writable,
                in_temp: false,
                entries: Vec::new(),
            })));
        }
        WasiCtx {
            open: u32::try_from(table.len()).unwrap_or(u32::MAX),
            table,
            max_fds: setup.max_fds,
            stdin: setup.stdin,
            stdin_pos: 0,
            stdout: Vec::new(),
            stderr: Vec::new(),
            stderr_truncated: false,
            output_written: 0,
            output_limit: setup.output_limit,
            temp_used: 0,
            temp_limit: setup.temp_limit,
            args: setup.args,
            start: Instant::now(),
            deadline: setup.deadline,
            cancel: setup.cancel,
            stop: None,
            temp_dirs: setup.temp_dirs,
            temp: None,
            temp_handle: None,
            collect: setup.collect,
            services: setup.services,
            pending: None,
            in_place: false,
            declined: false,
            parked: None,
            rng: setup.random_seed.map(|seed| {
                use rand_chacha::rand_core::SeedableRng as _;
                rand_chacha::ChaCha20Rng::seed_from_u64(seed)
            }),
            mem: MemTemp::default(),
            mem_root_entries: Vec::new(),
        }
    }

    /// Stages `files` (paths relative to the temp dir, already checked to be plain) in the
    /// call's temp dir and charges them to the temp limit like guest writes. Nothing is
    /// written yet: they are files of the in-memory temp dir ([`memtemp`]), written when the
    /// temp dir is created on disk ([`WasiCtx::make_temp`]), if it ever is.
    pub(crate) fn stage(
        &mut self,
        files: &[(String, crate::made::FileBytes)],
    ) -> Result<(), crate::Error> {
        let mut charge = 0u64;
        for (path, bytes) in files {
            let entries = path.split('/').count() as u64;
            charge = charge
                .saturating_add(bytes.len() as u64)
                .saturating_add(entries * TEMP_ENTRY_BYTES);
        }
        if charge > self.temp_limit {
            return Err(crate::Error::InvalidLimit {
                limit: "temp_bytes",
                message: format!(
                    "the input files staged for the call take {charge} bytes, more than the temp dir's limit of {} bytes",
                    self.temp_limit
                ),
            });
        }
        // Unreachable: `run::prepare` refuses staged files for a call without a temp dir.
        let Some(dirs) = &self.temp_dirs else {
            return Err(crate::Error::InvalidLimit {
                limit: "temp_bytes",
                message: "files were staged for a call without a temp dir".to_owned(),
            });
        };
        let root = dirs.root().to_owned();
        self.temp_used = self.temp_used.saturating_add(charge);
        let now = now();
        for (path, bytes) in files {
            self.mem.insert_file(path.clone(), bytes.clone(), true, now);
        }
        if self.temp.is_some() {
            self.make_temp().map_err(|fail| crate::Error::TempDir {
                path: root,
                source: std::io::Error::other(format!("{fail:?}")),
            })?;
        }
        Ok(())
    }

    /// Creates the call's temp dir on disk if it is not yet: the lazy descriptor becomes the
    /// directory, the in-memory tree is written into it, and the descriptors open on its
    /// files become files open on the written ones, at the same position.
    fn make_temp(&mut self) -> Res<()> {
        if self.temp.is_none() {
            let temp = self.temp_dirs.as_ref().ok_or(Errno::BADF)?.create()?;
            let dir = Dir::open_ambient_dir(temp.path(), cap_std::ambient_authority())?;
            self.temp_handle = Some(dir);
            self.temp = Some(temp);
        }
        let Some(handle) = &self.temp_handle else {
            return Err(Errno::BADF.into());
        };
        for slot in &mut self.table {
            if let Some(Desc::LazyTemp) = slot {
                *slot = Some(Desc::Dir(DirDesc {
                    dir: handle.try_clone()?,
                    preopen: Some(crate::TEMP_GUEST_PATH.to_owned()),
                    writable: true,
                    in_temp: true,
                    entries: Vec::new(),
                }));
            }
        }
        if self.mem.is_empty() {
            return Ok(());
        }
        let tree = std::mem::take(&mut self.mem);
        // In path order, a directory comes before everything under it.
        for dir in &tree.dirs {
            handle.create_dir(dir)?;
        }
        for (path, file) in &tree.files {
            let bytes = file.bytes.held().ok_or(Errno::IO)?;
            handle.write(path, bytes.as_slice())?;
        }
        for slot in &mut self.table {
            if let Some(Desc::MemDir(open)) = slot {
                *slot = Some(Desc::Dir(DirDesc {
                    dir: match open.path.as_str() {
                        "" => handle.try_clone()?,
                        path => handle.open_dir_nofollow(path)?,
                    },
                    preopen: None,
                    writable: true,
                    in_temp: true,
                    entries: Vec::new(),
                }));
                continue;
            }
            if let Some(Desc::Mem(open)) = slot {
                let mut options = OpenOptions::new();
                options
                    .read(open.readable)
                    .write(open.writable && !open.append)
                    .append(open.append)
                    .follow(FollowSymlinks::No);
                let mut file = handle.open_with(&open.path, &options)?.into_std();
                file.seek(SeekFrom::Start(open.pos))?;
                *slot = Some(Desc::File(FileDesc {
                    file,
                    readable: open.readable,
                    writable: open.writable,
                    append: open.append,
                    in_temp: true,
                }));
            }
        }
        Ok(())
    }

    /// The regular files under `dir` (plain, relative to the temp dir) while the temp dir is
    /// in memory, taken out of it: `(path relative to dir, bytes)` in path order. `Err` names
    /// the component of `dir` (as `/a/b`) that is a file and not a directory.
    pub(crate) fn take_memory_files(
        &mut self,
        dir: &str,
    ) -> Result<Vec<(String, SharedBytes)>, String> {
        let file = memtemp::parents(dir)
            .chain([dir])
            .find(|walked| self.mem.files.contains_key(*walked));
        if let Some(file) = file {
            return Err(format!("/{file}"));
        }
        if !self.mem.dirs.contains(dir) {
            return Ok(Vec::new());
        }
        let prefix = format!("{dir}/");
        let paths: Vec<String> = self
            .mem
            .files
            .range(prefix.clone()..)
            .take_while(|(path, _)| path.starts_with(&prefix))
            .map(|(path, _)| path.clone())
            .collect();
        Ok(paths
            .into_iter()
            .filter_map(|path| {
                // A staged file's made bytes that cannot be made are no output: the host
                // answers the call with their source's error.
                let file = self.mem.files.remove(&path)?;
                Some((path[prefix.len()..].to_owned(), file.bytes.held()?))
            })
            .collect())
    }

    /// Opens `path` under `fd` (the in-memory temp dir or one of its directories) if the
    /// memory form can: `Ok(None)` when `fd` is not in memory or the open needs the disk (a
    /// path that is not plain, a directory opened with other flags, writing to a staged
    /// file).
    fn open_in_memory(
        &mut self,
        fd: i32,
        path: &str,
        oflags: i32,
        rights: i64,
        fdflags: i32,
    ) -> Res<Option<Desc>> {
        // Of the descriptor flags only append means anything here, as on disk (where the
        // others, `nonblock` that `opendir` passes among them, are not passed on either).
        let Some(full) = self.mem_path(fd, path) else {
            return Ok(None);
        };
        let path = full.as_str();
        if oflags & OFLAGS_DIRECTORY != 0 {
            if oflags != OFLAGS_DIRECTORY {
                return Ok(None);
            }
            return match self.mem.lookup(path) {
                Lookup::Dir => Ok(Some(mem_dir(full))),
                Lookup::File | Lookup::ParentNotDir => Err(Errno::NOTDIR.into()),
                Lookup::Missing | Lookup::NoParent => Err(Errno::NOENT.into()),
            };
        }
        let (read, write, append) = open_mode(oflags, rights, fdflags);
        match self.mem.lookup(path) {
            Lookup::Dir if write => return Err(Errno::ISDIR.into()),
            Lookup::Dir => return Ok(Some(mem_dir(full))),
            Lookup::NoParent => return Err(Errno::NOENT.into()),
            Lookup::ParentNotDir => return Err(Errno::NOTDIR.into()),
            Lookup::File => {
                if oflags & OFLAGS_CREAT != 0 && oflags & OFLAGS_EXCL != 0 {
                    return Err(Errno::EXIST.into());
                }
                let file = self.mem.file_mut(path)?;
                if write && file.staged {
                    return Ok(None);
                }
                if oflags & OFLAGS_TRUNC != 0 {
                    let freed = file.bytes.len() as u64;
                    file.set_len(0, now());
                    self.refund_temp(freed);
                }
            }
            Lookup::Missing if oflags & OFLAGS_CREAT == 0 => return Err(Errno::NOENT.into()),
            Lookup::Missing => {
                self.charge_temp(TEMP_ENTRY_BYTES)?;
                self.mem.insert_file(
                    path.to_owned(),
                    crate::made::FileBytes::Held(Arc::default()),
                    false,
                    now(),
                );
            }
        }
        Ok(Some(Desc::Mem(MemDesc {
            path: path.to_owned(),
            pos: 0,
            readable: read,
            writable: write,
            append,
        })))
    }

    /// Where `fd` is in the in-memory temp dir, if it is that dir (`""`) or one of its
    /// directories.
    fn mem_base(&self, fd: i32) -> Option<&str> {
        match usize::try_from(fd).ok().and_then(|fd| self.table.get(fd))? {
            Some(Desc::LazyTemp) => Some(""),
            Some(Desc::MemDir(dir)) => Some(&dir.path),
            _ => None,
        }
    }

    /// `path` under the in-memory directory `fd`, relative to the temp dir; `None` when `fd`
    /// is not in memory or `path` is not plain ([`memtemp::plain`]).
    fn mem_path(&self, fd: i32, path: &str) -> Option<String> {
        let base = self.mem_base(fd)?;
        if path == "." {
            return Some(base.to_owned());
        }
        let path = memtemp::plain(path)?;
        match base {
            "" => Some(path.to_owned()),
            base => Some(format!("{base}/{path}")),
        }
    }

    /// The in-memory file open at `fd`, with the tree it is in; `None` for any other
    /// descriptor.
    fn mem_desc(&mut self, fd: i32) -> Res<Option<(&mut MemDesc, &mut MemTemp)>> {
        let desc = usize::try_from(fd)
            .ok()
            .and_then(|fd| self.table.get_mut(fd))
            .and_then(Option::as_mut)
            .ok_or(Fail::Errno(Errno::BADF))?;
        Ok(match desc {
            Desc::Mem(open) => Some((open, &mut self.mem)),
            _ => None,
        })
    }

    /// Writes `data` to the in-memory file at `fd` (at `at`, or at its position; at its end
    /// when it appends), charging its growth: `Ok(false)` when `fd` is not such a file, or
    /// when the write would take the guest's writes in memory past
    /// [`memtemp::MEM_TEMP_BYTES`], in which case the temp dir has just been moved to disk
    /// and the caller writes there.
    fn mem_write(&mut self, fd: i32, at: Option<u64>, data: &[u8]) -> Res<bool> {
        let Some((open, tree)) = self.mem_desc(fd)? else {
            return Ok(false);
        };
        if !open.writable {
            return Err(Errno::BADF.into());
        }
        let size = tree.file(&open.path)?.bytes.len() as u64;
        let start = match at {
            _ if open.append => size,
            Some(at) => at,
            None => open.pos,
        };
        let end = start.checked_add(data.len() as u64).ok_or(Errno::FBIG)?;
        let growth = end.saturating_sub(size);
        self.mem_grow(growth)?;
        if self.temp.is_some() {
            return Ok(false);
        }
        let Some((open, tree)) = self.mem_desc(fd)? else {
            return Err(Errno::BADF.into());
        };
        let start = usize::try_from(start).map_err(|_| Errno::FBIG)?;
        tree.file_mut(&open.path)?.write_at(data, start, now());
        if at.is_none() {
            open.pos = end;
        }
        Ok(true)
    }

    /// Charges `growth` more bytes written into the in-memory temp dir, or, when that would
    /// pass [`memtemp::MEM_TEMP_BYTES`], moves the temp dir to disk (the caller checks
    /// `self.temp`) without charging.
    fn mem_grow(&mut self, growth: u64) -> Res<()> {
        let written = self.mem.written.saturating_add(growth);
        if written > memtemp::MEM_TEMP_BYTES {
            return self.make_temp();
        }
        self.charge_temp(growth)?;
        self.mem.written = written;
        Ok(())
    }

    /// How many more bytes of output (stdout, then collected files) the call may produce.
    pub(crate) fn output_left(&self) -> u64 {
        self.output_limit.saturating_sub(self.output_written)
    }

    /// The descriptors the guest opened and has not closed (neither stdio nor a preopen).
    #[cfg(feature = "preinit")]
    pub(crate) fn guest_opened_fds(&self) -> Vec<usize> {
        self.table
            .iter()
            .enumerate()
            .filter(|(_, desc)| {
                matches!(
                    desc,
                    Some(
                        Desc::File(_)
                            | Desc::Mem(_)
                            | Desc::MemDir(_)
                            | Desc::Dir(DirDesc { preopen: None, .. })
                    )
                )
            })
            .map(|(fd, _)| fd)
            .collect()
    }

    /// What stops this call (its cancel token and deadline), to be checked where the context
    /// is out of reach: between the fuel slices of a Wasmtime call, whose future holds the
    /// store. [`WasiCtx::check_deadline`] then records the stop.
    #[cfg(feature = "wasmtime")]
    pub(crate) fn stopper(&self) -> Stopper {
        Stopper {
            cancel: self.cancel.clone(),
            deadline: self.deadline,
        }
    }

    /// Ends the call if it was cancelled or its deadline has passed. Every host function calls
    /// this first, so a guest that spins in host calls is stopped on every engine; the engines
    /// also check between fuel slices (Wasmtime through [`WasiCtx::stopper`]), or, Wasmtime
    /// without fuel metering, at every epoch tick.
    pub(crate) fn check_deadline(&mut self) -> Result<(), Stop> {
        if self.cancel.is_cancelled() {
            return Err(self.stopped(Stop::Cancelled));
        }
        if Instant::now() >= self.deadline {
            return Err(self.stopped(Stop::Limit(LimitKind::WallTime)));
        }
        Ok(())
    }

    /// Sleeps until `wake`, or until the call is cancelled or reaches its deadline, whichever
    /// comes first; the last two stop the guest.
    fn sleep_until(&mut self, wake: Instant) -> Result<(), Stop> {
        /// How often a sleeping guest notices that its call was cancelled.
        const POLL: Duration = Duration::from_millis(10);
        loop {
            self.check_deadline()?;
            let now = Instant::now();
            if now >= wake {
                return Ok(());
            }
            let until = wake.min(self.deadline);
            std::thread::sleep(until.saturating_duration_since(now).min(POLL));
        }
    }

    /// Records why the guest is stopped and returns it.
    pub(crate) fn stopped(&mut self, stop: Stop) -> Stop {
        if self.stop.is_none() {
            self.stop = Some(stop);
        }
        stop
    }

    /// The descriptor at `fd`, as it is (a lazy temp dir stays lazy).
    fn raw_desc(&mut self, fd: i32) -> Res<&mut Desc> {
        usize::try_from(fd)
            .ok()
            .and_then(|fd| self.table.get_mut(fd))
            .and_then(Option::as_mut)
            .ok_or(Fail::Errno(Errno::BADF))
    }

    /// The descriptor at `fd`, moving the temp dir to disk if `fd` is it or one of its files
    /// while it is in memory: what the caller does next is done on disk.
    fn desc(&mut self, fd: i32) -> Res<&mut Desc> {
        if matches!(
            self.raw_desc(fd)?,
            Desc::LazyTemp | Desc::Mem(_) | Desc::MemDir(_)
        ) {
            self.make_temp()?;
        }
        self.raw_desc(fd)
    }

    /// Whether `fd` is the call's temp dir itself (`/tmp`), created or not.
    fn is_temp_root(&mut self, fd: i32) -> bool {
        match self.raw_desc(fd) {
            Ok(Desc::LazyTemp) => true,
            Ok(Desc::Dir(DirDesc {
                preopen: Some(path),
                ..
            })) => path == crate::TEMP_GUEST_PATH,
            _ => false,
        }
    }

    fn dir(&mut self, fd: i32) -> Res<&mut DirDesc> {
        match self.desc(fd)? {
            Desc::Dir(dir) => Ok(dir),
            _ => Err(Errno::NOTDIR.into()),
        }
    }

    fn file(&mut self, fd: i32) -> Res<&mut FileDesc> {
        match self.desc(fd)? {
            Desc::File(file) => Ok(file),
            Desc::Dir(_) => Err(Errno::ISDIR.into()),
            _ => Err(Errno::SPIPE.into()),
        }
    }

    fn writable_dir(&mut self, fd: i32) -> Res<&Dir> {
        let dir = self.dir(fd)?;
        if !dir.writable {
            return Err(Errno::ROFS.into());
        }
        Ok(&dir.dir)
    }

    /// Counts `bytes` more in the temp dir, or stops the guest at the temp limit.
    ///
    /// The host does every write, so the count is exact for file contents; each file,
    /// directory, symlink or link created counts [`TEMP_ENTRY_BYTES`] besides, so that a flood
    /// of empty files is bounded too. Space is given back when a file is truncated or its
    /// last link removed. One way to undercount remains, and it needs a writable workspace: a
    /// big workspace file linked or moved into the temp dir, then removed there, gives back
    /// space it never took.
    fn charge_temp(&mut self, bytes: u64) -> Res<()> {
        let used = self.temp_used.saturating_add(bytes);
        if used > self.temp_limit {
            return Err(Fail::Stop(self.stopped(Stop::Limit(LimitKind::TempBytes))));
        }
        self.temp_used = used;
        Ok(())
    }

    fn refund_temp(&mut self, bytes: u64) {
        self.temp_used = self.temp_used.saturating_sub(bytes);
    }

    /// Creates one entry under the directory `fd` with `create`, charging
    /// [`TEMP_ENTRY_BYTES`] for it when that directory is in the temp dir (and giving it back
    /// if the creation fails, so that retrying a failing call costs nothing).
    fn create_entry(&mut self, fd: i32, create: impl FnOnce(&Dir) -> std::io::Result<()>) -> Res {
        let charged = self.dir_in_temp(fd)?;
        if charged {
            self.charge_temp(TEMP_ENTRY_BYTES)?;
        }
        let result = create(self.writable_dir(fd)?);
        if result.is_err() && charged {
            self.refund_temp(TEMP_ENTRY_BYTES);
        }
        Ok(result?)
    }

    /// Whether `fd` is a directory in the temp dir (entries created in it are charged).
    fn dir_in_temp(&mut self, fd: i32) -> Res<bool> {
        Ok(self.dir(fd)?.in_temp)
    }

    /// How many bytes writing `len` bytes to the temp file at `fd` adds to it (at `at`, or at
    /// the file's position, or its end when it appends); 0 for any other descriptor.
    fn temp_growth(&mut self, fd: i32, at: Option<u64>, len: usize) -> Res<u64> {
        let Desc::File(file) = self.desc(fd)? else {
            return Ok(0);
        };
        if !file.in_temp || !file.writable {
            return Ok(0);
        }
        let size = file.file.metadata()?.len();
        // An append-mode file is written at its end whatever offset is given (Linux `pwrite`
        // ignores it under O_APPEND), so the offset must not hide the growth.
        let start = match at {
            _ if file.append => size,
            Some(at) => at,
            None => file.file.stream_position()?,
        };
        Ok(start.saturating_add(len as u64).saturating_sub(size))
    }

    fn insert(&mut self, desc: Desc) -> Res<u32> {
        if self.open >= self.max_fds {
            return Err(Fail::Stop(self.stopped(Stop::Limit(LimitKind::Fds))));
        }
        self.open += 1;
        let slot = match self.table.iter().position(Option::is_none) {
            Some(slot) => {
                self.table[slot] = Some(desc);
                slot
            }
            None => {
                self.table.push(Some(desc));
                self.table.len() - 1
            }
        };
        Ok(u32::try_from(slot).map_err(|_| Errno::OVERFLOW)?)
    }

    fn write_output(&mut self, fd: Desc2, bytes: &[u8]) -> Res<()> {
        let len = bytes.len() as u64;
        if self.output_written + len > self.output_limit {
            return Err(Fail::Stop(self.stopped(Stop::Limit(LimitKind::Output))));
        }
        self.output_written += len;
        match fd {
            Desc2::Stdout => self.stdout.extend_from_slice(bytes),
            Desc2::Stderr => {
                let room = STDERR_KEEP.saturating_sub(self.stderr.len());
                if bytes.len() > room {
                    self.stderr_truncated = true;
                }
                self.stderr
                    .extend_from_slice(&bytes[..bytes.len().min(room)]);
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy)]
enum Desc2 {
    Stdout,
    Stderr,
}

// ----- Guest memory access ------------------------------------------------------------------

fn range(mem: &[u8], ptr: i32, len: u32) -> Result<std::ops::Range<usize>, Errno> {
    let start = ptr as u32 as usize;
    let end = start.checked_add(len as usize).ok_or(Errno::FAULT)?;
    if end > mem.len() {
        return Err(Errno::FAULT);
    }
    Ok(start..end)
}

fn bytes(mem: &[u8], ptr: i32, len: u32) -> Result<&[u8], Errno> {
    Ok(&mem[range(mem, ptr, len)?])
}

fn bytes_mut(mem: &mut [u8], ptr: i32, len: u32) -> Result<&mut [u8], Errno> {
    let range = range(mem, ptr, len)?;
    Ok(&mut mem[range])
}

fn put(mem: &mut [u8], ptr: i32, value: &[u8]) -> Result<(), Errno> {
    bytes_mut(mem, ptr, value.len() as u32)?.copy_from_slice(value);
    Ok(())
}

fn put_u32(mem: &mut [u8], ptr: i32, value: u32) -> Result<(), Errno> {
    put(mem, ptr, &value.to_le_bytes())
}

fn put_u64(mem: &mut [u8], ptr: i32, value: u64) -> Result<(), Errno> {
    put(mem, ptr, &value.to_le_bytes())
}

fn path(mem: &[u8], ptr: i32, len: i32) -> Result<&str, Errno> {
    let raw = bytes(mem, ptr, len as u32)?;
    if raw.contains(&0) {
        return Err(Errno::ILSEQ);
    }
    std::str::from_utf8(raw).map_err(|_| Errno::ILSEQ)
}

/// How many iovecs [`iovecs`] copies to the stack: a libc passes one or two.
const INLINE_IOVECS: usize = 8;

/// The `(ptr, len)` pairs of an iovec array, copied out of the guest's memory before any of
/// it is read or written (the buffers may overlap the array): on the stack when there are at
/// most [`INLINE_IOVECS`], since every read and write of every call passes through here.
enum Iovecs {
    /// The first `.1` of the array.
    Inline([(i32, u32); INLINE_IOVECS], usize),
    Heap(Vec<(i32, u32)>),
}

impl std::ops::Deref for Iovecs {
    type Target = [(i32, u32)];

    fn deref(&self) -> &[(i32, u32)] {
        match self {
            Iovecs::Inline(iovecs, len) => &iovecs[..*len],
            Iovecs::Heap(iovecs) => iovecs,
        }
    }
}

fn iovecs(mem: &[u8], iovs: i32, count: i32) -> Result<Iovecs, Errno> {
    let count = u32::try_from(count).map_err(|_| Errno::INVAL)?;
    let table = bytes(mem, iovs, count.checked_mul(8).ok_or(Errno::FAULT)?)?;
    let entry = |c: &[u8]| {
        let ptr = u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i32;
        let len = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
        (ptr, len)
    };
    let count = count as usize;
    if count > INLINE_IOVECS {
        return Ok(Iovecs::Heap(table.chunks_exact(8).map(entry).collect()));
    }
    let mut inline = [(0, 0); INLINE_IOVECS];
    for (slot, c) in inline.iter_mut().zip(table.chunks_exact(8)) {
        *slot = entry(c);
    }
    Ok(Iovecs::Inline(inline, count))
}

/// The bytes of an iovec array as one buffer: borrowed from the guest's memory when at most
/// one of its iovecs is not empty (a libc's `write` of one buffer, or of an empty `FILE`
/// buffer and the new bytes), copied together otherwise.
fn gather(mem: &[u8], iovs: i32, count: i32) -> Result<Cow<'_, [u8]>, Errno> {
    let mut one: &[u8] = &[];
    let mut joined: Option<Vec<u8>> = None;
    for &(ptr, len) in iovecs(mem, iovs, count)?.iter() {
        // Every pointer is checked, empty or not.
        let piece = bytes(mem, ptr, len)?;
        if piece.is_empty() {
            continue;
        }
        match &mut joined {
            Some(joined) => joined.extend_from_slice(piece),
            None if one.is_empty() => one = piece,
            None => joined = Some([one, piece].concat()),
        }
    }
    Ok(joined.map_or(Cow::Borrowed(one), Cow::Owned))
}

/// Reads into an iovec array with `read`, which fills one buffer and returns how much it read.
fn scatter(
    mem: &mut [u8],
    iovs: i32,
    count: i32,
    mut read: impl FnMut(&mut [u8]) -> std::io::Result<usize>,
) -> Res<u32> {
    let mut total = 0u32;
    for &(ptr, len) in iovecs(mem, iovs, count)?.iter() {
        let buf = bytes_mut(mem, ptr, len)?;
        let n = read(buf)?;
        total += n as u32;
        if n < buf.len() {
            break;
        }
    }
    Ok(total)
}

// ----- Metadata ----------------------------------------------------------------------------

fn filetype(ty: cap_std::fs::FileType) -> u8 {
    if ty.is_dir() {
        FILETYPE_DIRECTORY
    } else if ty.is_file() {
        FILETYPE_REGULAR_FILE
    } else if ty.is_symlink() {
        FILETYPE_SYMBOLIC_LINK
    } else {
        FILETYPE_UNKNOWN
    }
}

/// How `path_open` opens a file, in memory or on disk alike: `(read, write, append)`. It
/// writes when asked for a writing right, or to create, truncate or append; it reads when
/// asked for a reading right, or when it does not write.
fn open_mode(oflags: i32, rights: i64, fdflags: i32) -> (bool, bool, bool) {
    let append = fdflags & FDFLAGS_APPEND != 0;
    let write = rights & (RIGHT_FD_WRITE | RIGHT_FD_ALLOCATE | RIGHT_FD_FILESTAT_SET_SIZE) != 0
        || oflags & (OFLAGS_CREAT | OFLAGS_TRUNC) != 0
        || append;
    let read = rights & (RIGHT_FD_READ | RIGHT_FD_READDIR) != 0 || !write;
    (read, write, append)
}

/// A descriptor on the in-memory directory `path`.
fn mem_dir(path: String) -> Desc {
    Desc::MemDir(MemDirDesc {
        path,
        entries: Vec::new(),
    })
}

/// Now, in nanoseconds since the epoch.
fn now() -> u64 {
    nanos(Ok(SystemTime::now()))
}

fn nanos(time: std::io::Result<SystemTime>) -> u64 {
    time.ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64)
}

fn put_filestat(mem: &mut [u8], ptr: i32, meta: &Metadata) -> Result<(), Errno> {
    let mut buf = [0u8; 64];
    buf[0..8].copy_from_slice(&meta.dev().to_le_bytes());
    buf[8..16].copy_from_slice(&meta.ino().to_le_bytes());
    buf[16] = filetype(meta.file_type());
    buf[24..32].copy_from_slice(&meta.nlink().to_le_bytes());
    buf[32..40].copy_from_slice(&meta.len().to_le_bytes());
    buf[40..48].copy_from_slice(&nanos(meta.accessed().map(|t| t.into_std())).to_le_bytes());
    buf[48..56].copy_from_slice(&nanos(meta.modified().map(|t| t.into_std())).to_le_bytes());
    buf[56..64].copy_from_slice(&nanos(meta.created().map(|t| t.into_std())).to_le_bytes());
    put(mem, ptr, &buf)
}

// ----- The functions -----------------------------------------------------------------------
//
// Each returns `Res`: `Ok` is errno 0, `Fail::Errno` is returned to the guest, `Fail::Stop`
// ends the call. Signatures follow `wasi_snapshot_preview1.witx`.

pub(crate) fn args_get(ctx: &mut WasiCtx, mem: &mut [u8], argv: i32, buf: i32) -> Res {
    strings_get(mem, &ctx.args, argv, buf)
}

pub(crate) fn args_sizes_get(ctx: &mut WasiCtx, mem: &mut [u8], count: i32, size: i32) -> Res {
    strings_sizes_get(mem, &ctx.args, count, size)
}

pub(crate) fn environ_get(_: &mut WasiCtx, mem: &mut [u8], env: i32, buf: i32) -> Res {
    strings_get(mem, &[], env, buf)
}

pub(crate) fn environ_sizes_get(_: &mut WasiCtx, mem: &mut [u8], count: i32, size: i32) -> Res {
    strings_sizes_get(mem, &[], count, size)
}

fn strings_get(mem: &mut [u8], strings: &[String], ptrs: i32, buf: i32) -> Res {
    let mut offset = buf as u32;
    for (i, s) in strings.iter().enumerate() {
        put_u32(mem, ptrs.wrapping_add(4 * i as i32), offset)?;
        put(mem, offset as i32, s.as_bytes())?;
        put(mem, offset.wrapping_add(s.len() as u32) as i32, &[0])?;
        offset = offset.wrapping_add(s.len() as u32 + 1);
    }
    Ok(())
}

fn strings_sizes_get(mem: &mut [u8], strings: &[String], count: i32, size: i32) -> Res {
    put_u32(mem, count, strings.len() as u32)?;
    put_u32(mem, size, strings.iter().map(|s| s.len() as u32 + 1).sum())?;
    Ok(())
}

pub(crate) fn clock_res_get(_: &mut WasiCtx, mem: &mut [u8], id: i32, out: i32) -> Res {
    if !(0..=3).contains(&id) {
        return Err(Errno::INVAL.into());
    }
    put_u64(mem, out, 1_000)?;
    Ok(())
}

pub(crate) fn clock_time_get(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    id: i32,
    _precision: i64,
    out: i32,
) -> Res {
    let now = match id {
        0 => nanos(Ok(SystemTime::now())),
        // Monotonic and CPU-time clocks all count from the call's start: the guest learns
        // nothing about the host's uptime.
        1..=3 => ctx.start.elapsed().as_nanos() as u64,
        _ => return Err(Errno::INVAL.into()),
    };
    put_u64(mem, out, now)?;
    Ok(())
}

pub(crate) fn random_get(ctx: &mut WasiCtx, mem: &mut [u8], buf: i32, len: i32) -> Res {
    let buf = bytes_mut(mem, buf, len as u32)?;
    match &mut ctx.rng {
        Some(rng) => rand_chacha::rand_core::RngCore::fill_bytes(rng, buf),
        None => getrandom::fill(buf).map_err(|_| Errno::IO)?,
    }
    Ok(())
}

pub(crate) fn sched_yield(_: &mut WasiCtx, _: &mut [u8]) -> Res {
    std::thread::yield_now();
    Ok(())
}

pub(crate) fn proc_raise(_: &mut WasiCtx, _: &mut [u8], _sig: i32) -> Res {
    Err(Errno::NOSYS.into())
}

/// The socket functions: no descriptor a guest can hold is ever a socket (preview 1 cannot open
/// one, and the host preopens none), so each fails with `EBADF` or `ENOTSOCK`. They exist so
/// that modules built with a libc that imports them (CPython's WASI build does) can load.
fn not_a_socket(ctx: &mut WasiCtx, fd: i32) -> Res {
    ctx.desc(fd)?;
    Err(Errno::NOTSOCK.into())
}

pub(crate) fn sock_accept(ctx: &mut WasiCtx, _: &mut [u8], fd: i32, _flags: i32, _out: i32) -> Res {
    not_a_socket(ctx, fd)
}

#[expect(clippy::too_many_arguments, reason = "the WASI signature")]
pub(crate) fn sock_recv(
    ctx: &mut WasiCtx,
    _: &mut [u8],
    fd: i32,
    _iovs: i32,
    _iovs_len: i32,
    _flags: i32,
    _out_len: i32,
    _out_flags: i32,
) -> Res {
    not_a_socket(ctx, fd)
}

pub(crate) fn sock_send(
    ctx: &mut WasiCtx,
    _: &mut [u8],
    fd: i32,
    _iovs: i32,
    _iovs_len: i32,
    _flags: i32,
    _out_len: i32,
) -> Res {
    not_a_socket(ctx, fd)
}

pub(crate) fn sock_shutdown(ctx: &mut WasiCtx, _: &mut [u8], fd: i32, _how: i32) -> Res {
    not_a_socket(ctx, fd)
}

pub(crate) fn fd_advise(
    ctx: &mut WasiCtx,
    _: &mut [u8],
    fd: i32,
    _off: i64,
    _len: i64,
    _advice: i32,
) -> Res {
    if let Desc::Mem(_) = ctx.raw_desc(fd)? {
        return Ok(());
    }
    ctx.file(fd)?;
    Ok(())
}

pub(crate) fn fd_allocate(ctx: &mut WasiCtx, _: &mut [u8], fd: i32, _off: i64, _len: i64) -> Res {
    ctx.file(fd)?;
    Err(Errno::NOTSUP.into())
}

pub(crate) fn fd_close(ctx: &mut WasiCtx, _: &mut [u8], fd: i32) -> Res {
    ctx.raw_desc(fd)?;
    ctx.table[fd as usize] = None;
    ctx.open -= 1;
    Ok(())
}

pub(crate) fn fd_datasync(ctx: &mut WasiCtx, _: &mut [u8], fd: i32) -> Res {
    // A file in memory has no disk to be synced to.
    if let Desc::Mem(_) = ctx.raw_desc(fd)? {
        return Ok(());
    }
    ctx.file(fd)?.file.sync_data()?;
    Ok(())
}

pub(crate) fn fd_sync(ctx: &mut WasiCtx, _: &mut [u8], fd: i32) -> Res {
    if let Desc::Mem(_) = ctx.raw_desc(fd)? {
        return Ok(());
    }
    ctx.file(fd)?.file.sync_all()?;
    Ok(())
}

pub(crate) fn fd_fdstat_get(ctx: &mut WasiCtx, mem: &mut [u8], fd: i32, out: i32) -> Res {
    let (filetype, flags) = match ctx.raw_desc(fd)? {
        Desc::Stdin | Desc::Stdout | Desc::Stderr | Desc::Channel(_) => {
            (FILETYPE_CHARACTER_DEVICE, 0u16)
        }
        Desc::LazyTemp | Desc::MemDir(_) => (FILETYPE_DIRECTORY, 0),
        Desc::Dir(_) => (FILETYPE_DIRECTORY, 0),
        Desc::File(f) => (
            FILETYPE_REGULAR_FILE,
            if f.append { FDFLAGS_APPEND as u16 } else { 0 },
        ),
        Desc::Mem(open) => (
            FILETYPE_REGULAR_FILE,
            if open.append {
                FDFLAGS_APPEND as u16
            } else {
                0
            },
        ),
    };
    let mut buf = [0u8; 24];
    buf[0] = filetype;
    buf[2..4].copy_from_slice(&flags.to_le_bytes());
    buf[8..16].copy_from_slice(&ALL_RIGHTS.to_le_bytes());
    buf[16..24].copy_from_slice(&ALL_RIGHTS.to_le_bytes());
    put(mem, out, &buf)?;
    Ok(())
}

pub(crate) fn fd_fdstat_set_flags(ctx: &mut WasiCtx, _: &mut [u8], fd: i32, flags: i32) -> Res {
    let file = ctx.file(fd)?;
    if flags & !FDFLAGS_APPEND != 0 {
        return Err(Errno::NOTSUP.into());
    }
    if !file.writable && flags & FDFLAGS_APPEND != 0 {
        return Err(Errno::BADF.into());
    }
    file.append = flags & FDFLAGS_APPEND != 0;
    Ok(())
}

pub(crate) fn fd_fdstat_set_rights(
    ctx: &mut WasiCtx,
    _: &mut [u8],
    fd: i32,
    _base: i64,
    _inh: i64,
) -> Res {
    ctx.desc(fd)?;
    Err(Errno::NOTSUP.into())
}

pub(crate) fn fd_filestat_get(ctx: &mut WasiCtx, mem: &mut [u8], fd: i32, out: i32) -> Res {
    if let Some((open, tree)) = ctx.mem_desc(fd)? {
        put(mem, out, &tree.file(&open.path)?.filestat())?;
        return Ok(());
    }
    if let Some(base) = ctx.mem_base(fd) {
        put(mem, out, &memtemp::dir_filestat(base, now()))?;
        return Ok(());
    }
    let meta = match ctx.desc(fd)? {
        Desc::Stdin | Desc::Stdout | Desc::Stderr | Desc::Channel(_) => {
            let mut buf = [0u8; 64];
            buf[16] = FILETYPE_CHARACTER_DEVICE;
            put(mem, out, &buf)?;
            return Ok(());
        }
        Desc::Dir(d) => d.dir.dir_metadata()?,
        Desc::File(f) => Metadata::from_file(&f.file)?,
        // `desc` has just moved the temp dir to disk; neither it nor a file in memory is
        // returned.
        Desc::LazyTemp | Desc::Mem(_) | Desc::MemDir(_) => return Err(Errno::BADF.into()),
    };
    put_filestat(mem, out, &meta)?;
    Ok(())
}

pub(crate) fn fd_filestat_set_size(ctx: &mut WasiCtx, _: &mut [u8], fd: i32, size: i64) -> Res {
    let size = u64::try_from(size).map_err(|_| Errno::INVAL)?;
    if let Some((open, tree)) = ctx.mem_desc(fd)? {
        if !open.writable {
            return Err(Errno::BADF.into());
        }
        let old = tree.file(&open.path)?.bytes.len() as u64;
        if size > old {
            ctx.mem_grow(size - old)?;
        } else {
            ctx.refund_temp(old - size);
        }
        if let Some((open, tree)) = ctx.mem_desc(fd)? {
            let size = usize::try_from(size).map_err(|_| Errno::FBIG)?;
            tree.file_mut(&open.path)?.set_len(size, now());
            return Ok(());
        }
        // Moved to disk: grown there, and charged, below.
    }
    let file = ctx.file(fd)?;
    if !file.writable {
        return Err(Errno::BADF.into());
    }
    let (in_temp, old) = (file.in_temp, file.file.metadata()?.len());
    if in_temp {
        if size > old {
            ctx.charge_temp(size - old)?;
        } else {
            ctx.refund_temp(old - size);
        }
    }
    ctx.file(fd)?.file.set_len(size)?;
    Ok(())
}

pub(crate) fn fd_filestat_set_times(
    ctx: &mut WasiCtx,
    _: &mut [u8],
    fd: i32,
    _a: i64,
    _m: i64,
    _f: i32,
) -> Res {
    ctx.desc(fd)?;
    Err(Errno::NOSYS.into())
}

pub(crate) fn fd_pread(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    fd: i32,
    iovs: i32,
    n: i32,
    off: i64,
    out: i32,
) -> Res {
    if let Some((open, tree)) = ctx.mem_desc(fd)? {
        if !open.readable {
            return Err(Errno::BADF.into());
        }
        let file = tree.file(&open.path)?;
        let mut offset = u64::try_from(off).map_err(|_| Errno::INVAL)?;
        let read = scatter(mem, iovs, n, |buf| {
            let n = file.read_at(buf, offset)?;
            offset += n as u64;
            Ok(n)
        })?;
        put_u32(mem, out, read)?;
        return Ok(());
    }
    let file = ctx.file(fd)?;
    if !file.readable {
        return Err(Errno::BADF.into());
    }
    let mut offset = u64::try_from(off).map_err(|_| Errno::INVAL)?;
    let read = scatter(mem, iovs, n, |buf| {
        let n = file.file.read_at(buf, offset)?;
        offset += n as u64;
        Ok(n)
    })?;
    put_u32(mem, out, read)?;
    Ok(())
}

pub(crate) fn fd_pwrite(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    fd: i32,
    iovs: i32,
    n: i32,
    off: i64,
    out: i32,
) -> Res {
    let data = gather(mem, iovs, n)?;
    let off = u64::try_from(off).map_err(|_| Errno::INVAL)?;
    if ctx.mem_write(fd, Some(off), &data)? {
        put_u32(mem, out, data.len() as u32)?;
        return Ok(());
    }
    let growth = ctx.temp_growth(fd, Some(off), data.len())?;
    ctx.charge_temp(growth)?;
    let file = ctx.file(fd)?;
    if !file.writable {
        return Err(Errno::BADF.into());
    }
    file.file.write_all_at(&data, off)?;
    put_u32(mem, out, data.len() as u32)?;
    Ok(())
}

pub(crate) fn fd_prestat_get(ctx: &mut WasiCtx, mem: &mut [u8], fd: i32, out: i32) -> Res {
    if matches!(ctx.raw_desc(fd)?, Desc::LazyTemp) {
        put(mem, out, &[0, 0, 0, 0])?;
        put_u32(
            mem,
            out.wrapping_add(4),
            crate::TEMP_GUEST_PATH.len() as u32,
        )?;
        return Ok(());
    }
    match ctx.desc(fd)? {
        Desc::Dir(DirDesc {
            preopen: Some(name),
            ..
        }) => {
            let len = name.len() as u32;
            put(mem, out, &[0, 0, 0, 0])?;
            put_u32(mem, out.wrapping_add(4), len)?;
            Ok(())
        }
        _ => Err(Errno::BADF.into()),
    }
}

pub(crate) fn fd_prestat_dir_name(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    fd: i32,
    buf: i32,
    len: i32,
) -> Res {
    if matches!(ctx.raw_desc(fd)?, Desc::LazyTemp) {
        if (len as u32 as usize) < crate::TEMP_GUEST_PATH.len() {
            return Err(Errno::NAMETOOLONG.into());
        }
        put(mem, buf, crate::TEMP_GUEST_PATH.as_bytes())?;
        return Ok(());
    }
    match ctx.desc(fd)? {
        Desc::Dir(DirDesc {
            preopen: Some(name),
            ..
        }) => {
            if (len as u32 as usize) < name.len() {
                return Err(Errno::NAMETOOLONG.into());
            }
            let name = name.clone();
            put(mem, buf, name.as_bytes())?;
            Ok(())
        }
        _ => Err(Errno::BADF.into()),
    }
}

pub(crate) fn fd_read(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    fd: i32,
    iovs: i32,
    n: i32,
    out: i32,
) -> Res {
    if let Some((open, tree)) = ctx.mem_desc(fd)? {
        if !open.readable {
            return Err(Errno::BADF.into());
        }
        let file = tree.file(&open.path)?;
        let read = scatter(mem, iovs, n, |buf| {
            let n = file.read_at(buf, open.pos)?;
            open.pos += n as u64;
            Ok(n)
        })?;
        put_u32(mem, out, read)?;
        return Ok(());
    }
    let read = match ctx.desc(fd)? {
        Desc::Stdin => {
            let (stdin, pos) = (&ctx.stdin, &mut ctx.stdin_pos);
            scatter(mem, iovs, n, |buf| {
                let rest = &stdin[*pos..];
                let k = rest.len().min(buf.len());
                buf[..k].copy_from_slice(&rest[..k]);
                *pos += k;
                Ok(k)
            })?
        }
        Desc::File(f) if f.readable => scatter(mem, iovs, n, |buf| f.file.read(buf))?,
        Desc::Channel(channel) => scatter(mem, iovs, n, |buf| Ok(channel.read(buf)))?,
        Desc::Dir(_) => return Err(Errno::ISDIR.into()),
        _ => return Err(Errno::BADF.into()),
    };
    put_u32(mem, out, read)?;
    Ok(())
}

pub(crate) fn fd_write(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    fd: i32,
    iovs: i32,
    n: i32,
    out: i32,
) -> Res {
    let data = gather(mem, iovs, n)?;
    if ctx.mem_write(fd, None, &data)? {
        put_u32(mem, out, data.len() as u32)?;
        return Ok(());
    }
    let growth = ctx.temp_growth(fd, None, data.len())?;
    ctx.charge_temp(growth)?;
    match ctx.desc(fd)? {
        Desc::Stdout => ctx.write_output(Desc2::Stdout, &data)?,
        Desc::Stderr => ctx.write_output(Desc2::Stderr, &data)?,
        Desc::File(f) if f.writable => {
            if f.append {
                f.file.seek(SeekFrom::End(0))?;
            }
            f.file.write_all(&data)?;
        }
        Desc::Channel(_) => host::channel_write(ctx, fd, &data)?,
        Desc::Dir(_) => return Err(Errno::ISDIR.into()),
        _ => return Err(Errno::BADF.into()),
    }
    put_u32(mem, out, data.len() as u32)?;
    Ok(())
}

pub(crate) fn fd_readdir(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    fd: i32,
    buf: i32,
    len: i32,
    cookie: i64,
    out: i32,
) -> Res {
    if let Some(base) = ctx.mem_base(fd).map(str::to_owned) {
        let WasiCtx {
            table,
            mem: tree,
            mem_root_entries,
            ..
        } = ctx;
        // `mem_base` found `fd` in the table: the temp dir itself, or a directory in it.
        let entries = match &mut table[fd as usize] {
            Some(Desc::MemDir(dir)) => &mut dir.entries,
            _ => mem_root_entries,
        };
        if cookie == 0 || entries.is_empty() {
            *entries = tree.list(&base);
        }
        return put_dirents(mem, entries, buf, len, cookie, out);
    }
    let dir = ctx.dir(fd)?;
    if cookie == 0 || dir.entries.is_empty() {
        let mut entries = vec![
            (".".to_owned(), FILETYPE_DIRECTORY, 0),
            ("..".to_owned(), FILETYPE_DIRECTORY, 0),
        ];
        for entry in dir.dir.entries()? {
            let entry = entry?;
            let ty = entry.file_type().map(filetype).unwrap_or(FILETYPE_UNKNOWN);
            let name = entry.file_name().to_string_lossy().into_owned();
            entries.push((name, ty, 0));
        }
        entries[2..].sort();
        dir.entries = entries;
    }
    put_dirents(mem, &dir.entries, buf, len, cookie, out)
}

/// Writes `entries` from `cookie` on into the guest's `buf` of `len` bytes as `dirent`s, and
/// how many bytes were written at `out`.
fn put_dirents(
    mem: &mut [u8],
    entries: &[(String, u8, u64)],
    buf: i32,
    len: i32,
    cookie: i64,
    out: i32,
) -> Res {
    let capacity = len as u32 as usize;
    let mut written = Vec::with_capacity(capacity.min(1 << 16));
    let start = usize::try_from(cookie).map_err(|_| Errno::INVAL)?;
    for (i, (name, ty, ino)) in entries.iter().enumerate().skip(start) {
        if written.len() >= capacity {
            break;
        }
        let mut entry = [0u8; 24];
        entry[0..8].copy_from_slice(&(i as u64 + 1).to_le_bytes());
        entry[8..16].copy_from_slice(&ino.to_le_bytes());
        entry[16..20].copy_from_slice(&(name.len() as u32).to_le_bytes());
        entry[20] = *ty;
        written.extend_from_slice(&entry);
        written.extend_from_slice(name.as_bytes());
    }
    // A full buffer tells the guest to call again from the last complete entry's cookie.
    written.truncate(capacity);
    put(mem, buf, &written)?;
    put_u32(mem, out, written.len() as u32)?;
    Ok(())
}

pub(crate) fn fd_renumber(ctx: &mut WasiCtx, _: &mut [u8], from: i32, to: i32) -> Res {
    ctx.desc(from)?;
    ctx.desc(to)?;
    if from != to {
        ctx.table[to as usize] = ctx.table[from as usize].take();
        ctx.open -= 1;
    }
    Ok(())
}

pub(crate) fn fd_seek(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    fd: i32,
    offset: i64,
    whence: i32,
    out: i32,
) -> Res {
    if let Some((open, tree)) = ctx.mem_desc(fd)? {
        // As `lseek`: any position at or after 0, past the end too; before 0 is invalid.
        let base = match whence {
            0 => 0,
            1 => open.pos,
            2 => tree.file(&open.path)?.bytes.len() as u64,
            _ => return Err(Errno::INVAL.into()),
        };
        let new = i64::try_from(base)
            .ok()
            .and_then(|base| base.checked_add(offset))
            .and_then(|new| u64::try_from(new).ok())
            .ok_or(Errno::INVAL)?;
        open.pos = new;
        put_u64(mem, out, new)?;
        return Ok(());
    }
    let file = ctx.file(fd)?;
    let pos = match whence {
        0 => SeekFrom::Start(u64::try_from(offset).map_err(|_| Errno::INVAL)?),
        1 => SeekFrom::Current(offset),
        2 => SeekFrom::End(offset),
        _ => return Err(Errno::INVAL.into()),
    };
    let new = file.file.seek(pos)?;
    put_u64(mem, out, new)?;
    Ok(())
}

pub(crate) fn fd_tell(ctx: &mut WasiCtx, mem: &mut [u8], fd: i32, out: i32) -> Res {
    if let Desc::Mem(open) = ctx.raw_desc(fd)? {
        let pos = open.pos;
        put_u64(mem, out, pos)?;
        return Ok(());
    }
    let pos = ctx.file(fd)?.file.stream_position()?;
    put_u64(mem, out, pos)?;
    Ok(())
}

pub(crate) fn path_create_directory(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    fd: i32,
    p: i32,
    len: i32,
) -> Res {
    let path = path(mem, p, len)?;
    if let Some(full) = ctx.mem_path(fd, path) {
        return match ctx.mem.lookup(&full) {
            Lookup::File | Lookup::Dir => Err(Errno::EXIST.into()),
            Lookup::NoParent => Err(Errno::NOENT.into()),
            Lookup::ParentNotDir => Err(Errno::NOTDIR.into()),
            Lookup::Missing => {
                ctx.charge_temp(TEMP_ENTRY_BYTES)?;
                ctx.mem.dirs.insert(full);
                Ok(())
            }
        };
    }
    ctx.writable_dir(fd)?;
    ctx.create_entry(fd, |dir| dir.create_dir(path))
}

pub(crate) fn path_filestat_get(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    fd: i32,
    flags: i32,
    p: i32,
    len: i32,
    out: i32,
) -> Res {
    let path = path(mem, p, len)?.to_owned();
    if let Some(full) = ctx.mem_path(fd, &path) {
        // Nothing in memory is a link, so following links or not is the same.
        let stat = match ctx.mem.lookup(&full) {
            Lookup::File => ctx.mem.file(&full)?.filestat(),
            Lookup::Dir => memtemp::dir_filestat(&full, now()),
            Lookup::Missing | Lookup::NoParent => return Err(Errno::NOENT.into()),
            Lookup::ParentNotDir => return Err(Errno::NOTDIR.into()),
        };
        put(mem, out, &stat)?;
        return Ok(());
    }
    let dir = &ctx.dir(fd)?.dir;
    let meta = if flags & LOOKUP_SYMLINK_FOLLOW != 0 {
        dir.metadata(&path)?
    } else {
        dir.symlink_metadata(&path)?
    };
    put_filestat(mem, out, &meta)?;
    Ok(())
}

#[expect(clippy::too_many_arguments, reason = "the WASI signature")]
pub(crate) fn path_filestat_set_times(
    ctx: &mut WasiCtx,
    _: &mut [u8],
    fd: i32,
    _flags: i32,
    _p: i32,
    _len: i32,
    _a: i64,
    _m: i64,
    _f: i32,
) -> Res {
    ctx.dir(fd)?;
    Err(Errno::NOSYS.into())
}

#[expect(clippy::too_many_arguments, reason = "the WASI signature")]
pub(crate) fn path_link(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    old_fd: i32,
    _flags: i32,
    old_p: i32,
    old_len: i32,
    new_fd: i32,
    new_p: i32,
    new_len: i32,
) -> Res {
    let old = path(mem, old_p, old_len)?.to_owned();
    let new = path(mem, new_p, new_len)?.to_owned();
    // The source must be writable too: a hard link shares the file, so linking a read-only
    // file into a writable directory would make it writable.
    let source = ctx.writable_dir(old_fd)?.try_clone()?;
    ctx.writable_dir(new_fd)?;
    ctx.create_entry(new_fd, |target| source.hard_link(old, target, new))
}

#[expect(clippy::too_many_arguments, reason = "the WASI signature")]
pub(crate) fn path_open(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    fd: i32,
    dirflags: i32,
    p: i32,
    len: i32,
    oflags: i32,
    rights: i64,
    _inheriting: i64,
    fdflags: i32,
    out: i32,
) -> Res {
    let path = path(mem, p, len)?.to_owned();
    if ctx.services.is_some() && path == host::CHANNEL_NAME && ctx.is_temp_root(fd) {
        let new = ctx.insert(Desc::Channel(host::Channel::default()))?;
        put_u32(mem, out, new)?;
        return Ok(());
    }
    if let Some(open) = ctx.open_in_memory(fd, &path, oflags, rights, fdflags)? {
        let new = ctx.insert(open)?;
        put_u32(mem, out, new)?;
        return Ok(());
    }
    // A file created (or truncated) in the temp dir changes what it holds.
    let mut temp_change = None;
    if ctx.dir_in_temp(fd)? && oflags & (OFLAGS_CREAT | OFLAGS_TRUNC) != 0 {
        let before = ctx.dir(fd)?.dir.symlink_metadata(&path).ok();
        let freed = match &before {
            Some(m) if m.is_file() && oflags & OFLAGS_TRUNC != 0 => m.len(),
            _ => 0,
        };
        let created = before.is_none() && oflags & OFLAGS_CREAT != 0;
        if created {
            ctx.charge_temp(TEMP_ENTRY_BYTES)?;
        }
        temp_change = Some((created, freed));
    }
    let parent = ctx.dir(fd)?;
    let in_temp = parent.in_temp;
    let follow = if dirflags & LOOKUP_SYMLINK_FOLLOW != 0 {
        FollowSymlinks::Yes
    } else {
        FollowSymlinks::No
    };
    let (read, write, append) = open_mode(oflags, rights, fdflags);
    if write && !parent.writable {
        return Err(Errno::ROFS.into());
    }
    let writable = parent.writable;
    let desc = if oflags & OFLAGS_DIRECTORY != 0 {
        let dir = match follow {
            FollowSymlinks::Yes => parent.dir.open_dir(&path)?,
            FollowSymlinks::No => parent.dir.open_dir_nofollow(&path)?,
        };
        Desc::Dir(DirDesc {
            dir,
            preopen: None,
            writable,
            in_temp,
            entries: Vec::new(),
        })
    } else {
        // Truncation waits until the file is known to have a single link (below).
        let truncate = oflags & OFLAGS_TRUNC != 0;
        let mut options = OpenOptions::new();
        options
            .read(read)
            .write(write && !append)
            .append(append)
            .create(oflags & OFLAGS_CREAT != 0)
            .create_new(oflags & OFLAGS_CREAT != 0 && oflags & OFLAGS_EXCL != 0)
            .follow(follow)
            .maybe_dir(true);
        let file = match parent.dir.open_with(&path, &options) {
            Ok(file) => file.into_std(),
            Err(error) => {
                // Nothing was created: give back what was charged for it.
                if let Some((true, _)) = temp_change {
                    ctx.refund_temp(TEMP_ENTRY_BYTES);
                }
                return Err(error.into());
            }
        };
        let meta = file.metadata()?;
        // A file with another hard link may be the same file as one outside every grant (a
        // link planted in a workspace before the call): writing through it would write there.
        // The guest only ever made single-link files, so refusing costs it nothing.
        if write && meta.is_file() && std::os::unix::fs::MetadataExt::nlink(&meta) > 1 {
            return Err(Errno::NOTCAPABLE.into());
        }
        if truncate && meta.is_file() {
            file.set_len(0)?;
        }
        if let Some((_, freed)) = temp_change {
            ctx.refund_temp(freed);
        }
        if meta.is_dir() {
            if write {
                return Err(Errno::ISDIR.into());
            }
            Desc::Dir(DirDesc {
                dir: Dir::from_std_file(file),
                preopen: None,
                writable,
                in_temp,
                entries: Vec::new(),
            })
        } else {
            Desc::File(FileDesc {
                file,
                readable: read,
                writable: write,
                append,
                in_temp,
            })
        }
    };
    let new = ctx.insert(desc)?;
    put_u32(mem, out, new)?;
    Ok(())
}

#[expect(clippy::too_many_arguments, reason = "the WASI signature")]
pub(crate) fn path_readlink(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    fd: i32,
    p: i32,
    len: i32,
    buf: i32,
    buf_len: i32,
    out: i32,
) -> Res {
    let path = path(mem, p, len)?.to_owned();
    let target = ctx.dir(fd)?.dir.read_link_contents(&path)?;
    let target = target.to_string_lossy();
    let n = target.len().min(buf_len as u32 as usize);
    put(mem, buf, &target.as_bytes()[..n])?;
    put_u32(mem, out, n as u32)?;
    Ok(())
}

pub(crate) fn path_remove_directory(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    fd: i32,
    p: i32,
    len: i32,
) -> Res {
    let path = path(mem, p, len)?;
    ctx.writable_dir(fd)?.remove_dir(path)?;
    if ctx.dir_in_temp(fd)? {
        ctx.refund_temp(TEMP_ENTRY_BYTES);
    }
    Ok(())
}

#[expect(clippy::too_many_arguments, reason = "the WASI signature")]
pub(crate) fn path_rename(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    fd: i32,
    old_p: i32,
    old_len: i32,
    new_fd: i32,
    new_p: i32,
    new_len: i32,
) -> Res {
    let old = path(mem, old_p, old_len)?.to_owned();
    let new = path(mem, new_p, new_len)?.to_owned();
    let target = ctx.writable_dir(new_fd)?.try_clone()?;
    ctx.writable_dir(fd)?.rename(old, &target, new)?;
    Ok(())
}

pub(crate) fn path_symlink(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    old_p: i32,
    old_len: i32,
    fd: i32,
    new_p: i32,
    new_len: i32,
) -> Res {
    let old = path(mem, old_p, old_len)?.to_owned();
    let new = path(mem, new_p, new_len)?.to_owned();
    // The link may point anywhere: following it is what cap-std jails.
    ctx.writable_dir(fd)?;
    ctx.create_entry(fd, |dir| DirExt::symlink(dir, old, new))
}

pub(crate) fn path_unlink_file(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    fd: i32,
    p: i32,
    len: i32,
) -> Res {
    let path = path(mem, p, len)?;
    let dir = ctx.writable_dir(fd)?;
    // A file's contents are freed with its last link.
    let freed = dir.symlink_metadata(path).map_or(0, |m| {
        if m.is_file() && m.nlink() == 1 {
            m.len()
        } else {
            0
        }
    });
    dir.remove_file_or_symlink(path)?;
    if ctx.dir_in_temp(fd)? {
        ctx.refund_temp(TEMP_ENTRY_BYTES.saturating_add(freed));
    }
    Ok(())
}

pub(crate) fn poll_oneoff(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    subs: i32,
    events: i32,
    n: i32,
    out: i32,
) -> Res {
    let count = u32::try_from(n).map_err(|_| Errno::INVAL)?;
    if count == 0 {
        return Err(Errno::INVAL.into());
    }
    let table = bytes(mem, subs, count.checked_mul(48).ok_or(Errno::FAULT)?)?.to_vec();
    let now_real = nanos(Ok(SystemTime::now()));
    let now_mono = ctx.start.elapsed().as_nanos() as u64;
    let mut ready = Vec::new();
    let mut clocks = Vec::new();
    for sub in table.chunks_exact(48) {
        let userdata = u64::from_le_bytes(sub[0..8].try_into().map_err(|_| Errno::FAULT)?);
        match sub[8] {
            0 => {
                let id = u32::from_le_bytes(sub[16..20].try_into().map_err(|_| Errno::FAULT)?);
                let timeout = u64::from_le_bytes(sub[24..32].try_into().map_err(|_| Errno::FAULT)?);
                let absolute =
                    u16::from_le_bytes(sub[40..42].try_into().map_err(|_| Errno::FAULT)?) & 1 != 0;
                let wait = if absolute {
                    let now = if id == 0 { now_real } else { now_mono };
                    timeout.saturating_sub(now)
                } else {
                    timeout
                };
                clocks.push((userdata, wait));
            }
            // Reads and writes on any descriptor are always ready: stdin is a buffer, stdout a
            // capture, and files never block.
            tag @ (1 | 2) => ready.push((userdata, tag)),
            _ => return Err(Errno::INVAL.into()),
        }
    }
    let mut out_events = Vec::new();
    if ready.is_empty() {
        let wait = clocks.iter().map(|&(_, w)| w).min().unwrap_or(0);
        // A wait past the deadline (or past what an `Instant` can hold) ends at the deadline.
        let wake = Instant::now()
            .checked_add(Duration::from_nanos(wait))
            .unwrap_or(ctx.deadline);
        ctx.sleep_until(wake).map_err(Fail::Stop)?;
        for (userdata, w) in clocks {
            if w <= wait {
                out_events.push((userdata, 0u8));
            }
        }
    } else {
        out_events = ready;
    }
    let mut buf = Vec::with_capacity(out_events.len() * 32);
    for (userdata, ty) in &out_events {
        let mut event = [0u8; 32];
        event[0..8].copy_from_slice(&userdata.to_le_bytes());
        event[10] = *ty;
        buf.extend_from_slice(&event);
    }
    put(mem, events, &buf)?;
    put_u32(mem, out, out_events.len() as u32)?;
    Ok(())
}

/// Calls `$m!(name(arg: type, ...))` for every WASI function the sandbox provides, except
/// `proc_exit`, which does not return and is linked by hand.
///
/// This is the one list of what a guest may import. The socket functions are present but can
/// never succeed: no descriptor is a socket.
macro_rules! for_each_function {
    ($m:ident) => {
        $m!(args_get(a: i32, b: i32));
        $m!(args_sizes_get(a: i32, b: i32));
        $m!(environ_get(a: i32, b: i32));
        $m!(environ_sizes_get(a: i32, b: i32));
        $m!(clock_res_get(a: i32, b: i32));
        $m!(clock_time_get(a: i32, b: i64, c: i32));
        $m!(random_get(a: i32, b: i32));
        $m!(sched_yield());
        $m!(proc_raise(a: i32));
        $m!(fd_advise(a: i32, b: i64, c: i64, d: i32));
        $m!(fd_allocate(a: i32, b: i64, c: i64));
        $m!(fd_close(a: i32));
        $m!(fd_datasync(a: i32));
        $m!(fd_sync(a: i32));
        $m!(fd_fdstat_get(a: i32, b: i32));
        $m!(fd_fdstat_set_flags(a: i32, b: i32));
        $m!(fd_fdstat_set_rights(a: i32, b: i64, c: i64));
        $m!(fd_filestat_get(a: i32, b: i32));
        $m!(fd_filestat_set_size(a: i32, b: i64));
        $m!(fd_filestat_set_times(a: i32, b: i64, c: i64, d: i32));
        $m!(fd_pread(a: i32, b: i32, c: i32, d: i64, e: i32));
        $m!(fd_pwrite(a: i32, b: i32, c: i32, d: i64, e: i32));
        $m!(fd_prestat_get(a: i32, b: i32));
        $m!(fd_prestat_dir_name(a: i32, b: i32, c: i32));
        $m!(fd_read(a: i32, b: i32, c: i32, d: i32));
        $m!(fd_write(a: i32, b: i32, c: i32, d: i32));
        $m!(fd_readdir(a: i32, b: i32, c: i32, d: i64, e: i32));
        $m!(fd_renumber(a: i32, b: i32));
        $m!(fd_seek(a: i32, b: i64, c: i32, d: i32));
        $m!(fd_tell(a: i32, b: i32));
        $m!(path_create_directory(a: i32, b: i32, c: i32));
        $m!(path_filestat_get(a: i32, b: i32, c: i32, d: i32, e: i32));
        $m!(path_filestat_set_times(a: i32, b: i32, c: i32, d: i32, e: i64, f: i64, g: i32));
        $m!(path_link(a: i32, b: i32, c: i32, d: i32, e: i32, f: i32, g: i32));
        $m!(path_open(a: i32, b: i32, c: i32, d: i32, e: i32, f: i64, g: i64, h: i32, i: i32));
        $m!(path_readlink(a: i32, b: i32, c: i32, d: i32, e: i32, f: i32));
        $m!(path_remove_directory(a: i32, b: i32, c: i32));
        $m!(path_rename(a: i32, b: i32, c: i32, d: i32, e: i32, f: i32));
        $m!(path_symlink(a: i32, b: i32, c: i32, d: i32, e: i32));
        $m!(path_unlink_file(a: i32, b: i32, c: i32));
        $m!(poll_oneoff(a: i32, b: i32, c: i32, d: i32));
        $m!(sock_accept(a: i32, b: i32, c: i32));
        $m!(sock_recv(a: i32, b: i32, c: i32, d: i32, e: i32, f: i32));
        $m!(sock_send(a: i32, b: i32, c: i32, d: i32, e: i32));
        $m!(sock_shutdown(a: i32, b: i32));
    };
}
pub(crate) use for_each_function;

/// The import module every WASI preview 1 function lives in.
pub(crate) const MODULE: &str = "wasi_snapshot_preview1";

/// Whether the sandbox provides `module::name`.
pub(crate) fn provides(module: &str, name: &str) -> bool {
    macro_rules! is {
        ($f:ident($($arg:ident: $ty:ty),*)) => {
            if name == stringify!($f) {
                return module == MODULE;
            }
        };
    }
    for_each_function!(is);
    (module == MODULE && name == "proc_exit") || (module == host::MODULE && host::provides(name))
}

/// Turns a host function's result into the errno the guest sees, or the stop that ends it.
pub(crate) fn finish(ctx: &mut WasiCtx, result: Res) -> Result<i32, Stop> {
    match result {
        Ok(()) => Ok(0),
        Err(Fail::Errno(errno)) => Ok(i32::from(errno.0)),
        Err(Fail::Stop(stop)) => Err(ctx.stopped(stop)),
    }
}

/// `proc_exit`: records the exit code and stops the guest.
pub(crate) fn proc_exit(ctx: &mut WasiCtx, code: i32) -> Stop {
    ctx.stopped(Stop::Exit(code))
}

/// A call's cancel token and deadline, apart from its context ([`WasiCtx::stopper`]).
#[cfg(feature = "wasmtime")]
#[derive(Debug, Clone)]
pub(crate) struct Stopper {
    cancel: CancelToken,
    deadline: Instant,
}

#[cfg(feature = "wasmtime")]
impl Stopper {
    /// Whether the call was cancelled or is past its deadline.
    pub(crate) fn should_stop(&self) -> bool {
        self.cancel.is_cancelled() || Instant::now() >= self.deadline
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::{Errno, INLINE_IOVECS, gather, scatter};

    /// A memory of 4 KiB whose iovec array (at 0) lists `pieces` as `(offset, len)`.
    fn memory(pieces: &[(u32, u32)]) -> Vec<u8> {
        let mut mem = vec![0u8; 4096];
        for (i, &(ptr, len)) in pieces.iter().enumerate() {
            mem[8 * i..8 * i + 4].copy_from_slice(&ptr.to_le_bytes());
            mem[8 * i + 4..8 * i + 8].copy_from_slice(&len.to_le_bytes());
        }
        for (i, byte) in mem.iter_mut().enumerate().skip(1024) {
            *byte = (i % 251) as u8;
        }
        mem
    }

    fn expected(mem: &[u8], pieces: &[(u32, u32)]) -> Vec<u8> {
        pieces
            .iter()
            .flat_map(|&(ptr, len)| mem[ptr as usize..(ptr + len) as usize].to_vec())
            .collect()
    }

    #[test]
    fn one_written_iovec_is_borrowed_and_several_are_joined_in_order() {
        for pieces in [
            vec![],
            vec![(1024, 0)],
            vec![(1024, 10)],
            vec![(1024, 0), (2000, 7)],
            vec![(2000, 7), (1024, 0)],
            vec![(1024, 5), (3000, 3)],
            vec![(1024, 5), (1100, 0), (3000, 3), (1500, 9)],
        ] {
            let mem = memory(&pieces);
            let n = pieces.len() as i32;
            let data = gather(&mem, 0, n).unwrap();
            assert_eq!(&*data, expected(&mem, &pieces), "{pieces:?}");
            let written = pieces.iter().filter(|(_, len)| *len > 0).count();
            assert_eq!(matches!(data, Cow::Borrowed(_)), written <= 1, "{pieces:?}");
        }
    }

    #[test]
    fn more_iovecs_than_fit_on_the_stack_are_read_alike() {
        let pieces: Vec<(u32, u32)> = (0..INLINE_IOVECS as u32 + 3)
            .map(|i| (1024 + 37 * i, 5 + i % 3))
            .collect();
        let mem = memory(&pieces);
        let data = gather(&mem, 0, pieces.len() as i32).unwrap();
        assert_eq!(&*data, expected(&mem, &pieces));

        let mut mem = memory(&pieces);
        let source: Vec<u8> = (0..200u8).collect();
        let mut at = 0;
        let read = scatter(&mut mem, 0, pieces.len() as i32, |buf| {
            let n = buf.len().min(source.len() - at);
            buf[..n].copy_from_slice(&source[at..at + n]);
            at += n;
            Ok(n)
        })
        .unwrap();
        let total: u32 = pieces.iter().map(|(_, len)| len).sum();
        assert_eq!(read, total);
        assert_eq!(expected(&mem, &pieces), source[..total as usize]);
    }

    #[test]
    fn every_iovec_is_checked_even_an_empty_one() {
        // An empty iovec past the memory's end, beside one that is fine.
        for pieces in [
            vec![(5000, 0)],
            vec![(1024, 4), (5000, 0)],
            vec![(5000, 0), (1024, 4)],
        ] {
            let mem = memory(&pieces);
            let error = gather(&mem, 0, pieces.len() as i32).unwrap_err();
            assert_eq!(error, Errno::FAULT, "{pieces:?}");
        }
        // The array itself past the end, and a negative count.
        let mem = memory(&[]);
        assert_eq!(gather(&mem, 4090, 1).unwrap_err(), Errno::FAULT);
        assert_eq!(gather(&mem, 0, -1).unwrap_err(), Errno::INVAL);
    }
}
