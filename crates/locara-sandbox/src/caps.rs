//! What a guest may touch.

use std::{path::PathBuf, sync::Arc};

use crate::{
    made::{FileBytes, MadeBytes},
    services::{HostServices, Services},
};

/// Where the per-call temp dir appears inside the guest.
pub const TEMP_GUEST_PATH: &str = "/tmp";

/// Whether a preopened directory may be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DirPerms {
    /// Files may be read and directories listed; every write, create, rename, unlink or
    /// symlink is refused with `EROFS`/`ENOTCAPABLE`.
    ReadOnly,
    /// Everything below the directory may be read and written.
    ReadWrite,
}

/// A host directory made visible to the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preopen {
    /// The directory on the host.
    pub host: PathBuf,
    /// Where the guest sees it, e.g. `/workspace`.
    pub guest: String,
    /// What the guest may do in it.
    pub perms: DirPerms,
    /// A trusted directory `host` lies in (see [`Capabilities::preopened_dir_beneath`]): when
    /// set, `host` is reached from it one component at a time, never through a link.
    pub beneath: Option<PathBuf>,
}

/// The capabilities a call is given.
///
/// Everything is denied unless it is listed here. [`Capabilities::new`] gives, and only gives:
/// - stdin (the call's input), stdout and stderr (captured by the host);
/// - a fresh, empty temp dir at [`TEMP_GUEST_PATH`], read-write, removed after the call;
/// - the realtime and monotonic clocks, and random bytes;
/// - `argv[0]` only (see [`Capabilities::program_name`]);
/// - no environment variables, no other directories, no sockets, no processes, and no host
///   services (see [`Capabilities::with_services`]).
///
/// Paths are jailed: `..`, absolute paths and symlinks cannot leave a preopened directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    pub(crate) preopens: Vec<Preopen>,
    pub(crate) temp_dir: bool,
    pub(crate) program_name: String,
    pub(crate) args: Vec<String>,
    pub(crate) staged: Vec<(String, FileBytes)>,
    pub(crate) collect: Option<String>,
    pub(crate) services: Option<Services>,
    pub(crate) random_seed: Option<u64>,
}

impl Capabilities {
    /// The default capabilities: stdio, a fresh temp dir, clocks and random; nothing else.
    pub fn new() -> Capabilities {
        Capabilities {
            preopens: Vec::new(),
            temp_dir: true,
            program_name: "tool".to_owned(),
            args: Vec::new(),
            staged: Vec::new(),
            collect: None,
            services: None,
            random_seed: None,
        }
    }

    /// Makes `host` visible to the guest at `guest` with `perms`.
    ///
    /// The directory is opened when the call starts; a missing directory is an
    /// [`Error::Preopen`](crate::Error::Preopen) then.
    pub fn preopened_dir(
        mut self,
        host: impl Into<PathBuf>,
        guest: impl Into<String>,
        perms: DirPerms,
    ) -> Self {
        self.preopens.push(Preopen {
            host: host.into(),
            guest: guest.into(),
            perms,
            beneath: None,
        });
        self
    }

    /// Makes `host`, a directory inside the trusted directory `root`, visible to the guest at
    /// `guest` with `perms`; `host` is typically the canonical path of a directory a user
    /// selected inside a directory the app granted.
    ///
    /// When the call starts, `root` is opened and every component from it down to `host` is
    /// opened without following a link: should one of them have been replaced by a link since
    /// `host` was checked (by an earlier call with write access, or another process), the
    /// call fails with [`Error::Preopen`](crate::Error::Preopen) instead of preopening where
    /// the link points. `host` outside `root` is refused the same way.
    pub fn preopened_dir_beneath(
        mut self,
        root: impl Into<PathBuf>,
        host: impl Into<PathBuf>,
        guest: impl Into<String>,
        perms: DirPerms,
    ) -> Self {
        self.preopens.push(Preopen {
            host: host.into(),
            guest: guest.into(),
            perms,
            beneath: Some(root.into()),
        });
        self
    }

    /// Whether the call gets a fresh temp dir at [`TEMP_GUEST_PATH`]. By default this is `true`.
    pub fn with_temp_dir(mut self, enable: bool) -> Self {
        self.temp_dir = enable;
        self
    }

    /// `argv[0]` as the guest sees it. By default this is `tool`.
    pub fn program_name(mut self, name: impl Into<String>) -> Self {
        self.program_name = name.into();
        self
    }

    /// Extra arguments after `argv[0]`. By default there are none.
    pub fn with_args(mut self, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// Puts a file at `path` (relative to the temp dir, e.g. `in/source`) before the call
    /// starts, for the guest to read: how a host hands a tool a large input without passing
    /// it through stdin. Staged bytes count towards the temp dir's limit; a call whose staged
    /// files alone exceed it is refused with [`Error::InvalidLimit`](crate::Error::InvalidLimit).
    /// The path must be relative and made of plain components; the call needs its temp dir.
    ///
    /// The bytes are shared, not copied, when given as an `Arc` (a host that stages the same
    /// file for many calls). A guest that only reads a staged file reads it from the host's
    /// memory: it is written to disk only if the call's temp dir is (see the crate's docs).
    pub fn with_temp_file(
        mut self,
        path: impl Into<String>,
        bytes: impl Into<Arc<Vec<u8>>>,
    ) -> Self {
        self.staged
            .push((path.into(), FileBytes::Held(bytes.into())));
        self
    }

    /// Like [`with_temp_file`](Self::with_temp_file), with bytes made while the call runs
    /// ([`MadeBytes`]): the guest reads what is made, and a read that needs a chunk not made
    /// yet makes it. A chunk that cannot be made fails the guest's read with `EIO`; the host,
    /// which holds the same `Arc`, sees it in [`MadeBytes::failed`] and must then answer the
    /// call with its own error: stage bytes this way only for a call that can change nothing
    /// outside its sandbox.
    pub fn with_made_temp_file(mut self, path: impl Into<String>, bytes: Arc<MadeBytes>) -> Self {
        self.staged.push((path.into(), FileBytes::Made(bytes)));
        self
    }

    /// Collects the regular files under `dir` (relative to the temp dir, e.g. `out`) into
    /// [`RunOutcome::files`](crate::RunOutcome::files) when the guest exits with code 0, before
    /// the temp dir is removed. They count towards the output limit with stdout; a call whose
    /// files exceed it ends with [`LimitKind::Output`](crate::LimitKind::Output).
    ///
    /// While the temp dir is still in memory the files are taken from there. Once it is on
    /// disk, the host reaches the files only through the handle it opened on the temp dir when
    /// it made it, one component at a time and never following a link: when `dir` or one of its
    /// parents is a symbolic link or not a directory, the call ends with
    /// [`RunStatus::OutputRefused`](crate::RunStatus::OutputRefused) and returns no files;
    /// links, devices and FIFOs inside it are skipped.
    pub fn collecting(mut self, dir: impl Into<String>) -> Self {
        self.collect = Some(dir.into());
        self
    }

    /// Makes the guest's random numbers (`random_get`) the ChaCha20 stream of `seed` instead of
    /// the operating system's, so a call can be repeated exactly, on either engine. Without it
    /// they are cryptographically random.
    pub fn with_random_seed(mut self, seed: u64) -> Self {
        self.random_seed = Some(seed);
        self
    }

    /// Lets the guest call `services` through the `locara_host` import module (see
    /// [`HostServices`]). Without it, every service call is refused with `ENOTCAPABLE`.
    pub fn with_services(mut self, services: Arc<dyn HostServices>) -> Self {
        self.services = Some(Services(services));
        self
    }

    /// The directories this call preopens (the temp dir excluded).
    pub fn preopens(&self) -> &[Preopen] {
        &self.preopens
    }

    /// The files staged in the temp dir ([`with_temp_file`](Self::with_temp_file),
    /// [`with_made_temp_file`](Self::with_made_temp_file)): each path and its length.
    pub fn staged_files(&self) -> impl Iterator<Item = (&str, usize)> {
        self.staged.iter().map(|(p, b)| (p.as_str(), b.len()))
    }
}

impl Default for Capabilities {
    fn default() -> Capabilities {
        Capabilities::new()
    }
}
