//! Walking down into a directory that something untrusted could have changed (a guest's temp
//! dir, a workspace, an output directory): from a handle, one component at a time, never
//! following a link. Every host-side path below such a directory is opened through here.

use std::{
    ffi::OsStr,
    path::{Component, Path, PathBuf},
};

use cap_fs_ext::DirExt as _;
use cap_std::{ambient_authority, fs::Dir};

/// Why [`walk`] stopped before the end.
#[derive(Debug)]
pub(crate) enum Walk {
    /// A component does not exist.
    Missing,
    /// A component is a symbolic link (`link`) or another non-directory; `walked` is the path
    /// from the start of the walk down to it, `/`-separated and starting with `/`.
    NotADirectory { walked: String, link: bool },
    /// Looking at or opening a component failed.
    Io(std::io::Error),
}

/// Opens `names` below `root`, one at a time: each must be a real directory (looked at without
/// following it, then opened `nofollow`, so that one turned into a link in between makes the
/// open fail rather than follow it).
pub(crate) fn walk<'a>(
    root: &Dir,
    names: impl IntoIterator<Item = &'a OsStr>,
) -> Result<Dir, Walk> {
    let mut dir = root.try_clone().map_err(Walk::Io)?;
    let mut walked = String::new();
    for name in names {
        walked.push('/');
        walked.push_str(&name.to_string_lossy());
        let meta = match dir.symlink_metadata(name) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Walk::Missing),
            Err(e) => return Err(Walk::Io(e)),
        };
        if !meta.is_dir() {
            return Err(Walk::NotADirectory {
                walked,
                link: meta.is_symlink(),
            });
        }
        dir = dir.open_dir_nofollow(name).map_err(Walk::Io)?;
    }
    Ok(dir)
}

/// Opens `dir`, a directory inside the trusted directory `root` (both as the host resolved
/// them, typically canonical), from `root` down without following a link.
///
/// `root` itself is opened by path: it is the trust anchor (a directory the app granted).
/// Below it, a component that is a link or not a directory is refused with an error naming it,
/// so a directory replaced by a link after it was checked is never opened through the link.
///
/// # Errors
/// When `dir` is not a plain path below `root`, a component is missing, a link or not a
/// directory, or an open fails.
pub fn open_dir_beneath(root: &Path, dir: &Path) -> std::io::Result<Dir> {
    let plain = |why: &str| {
        std::io::Error::other(format!("{} is not {why} {}", dir.display(), root.display()))
    };
    let below = dir.strip_prefix(root).map_err(|_| plain("inside"))?;
    let mut names = Vec::new();
    for component in below.components() {
        let Component::Normal(name) = component else {
            return Err(plain("a plain path below"));
        };
        names.push(name);
    }
    let anchor = Dir::open_ambient_dir(root, ambient_authority())?;
    walk(&anchor, names).map_err(|stop| match stop {
        Walk::Missing => std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{} does not exist", dir.display()),
        ),
        Walk::NotADirectory { walked, .. } => std::io::Error::other(format!(
            "{} is a symbolic link or not a directory (it was a directory when it was checked): a link or `..` leads out of {}",
            join(root, &walked).display(),
            root.display()
        )),
        Walk::Io(e) => e,
    })
}

/// `root` joined with a `/`-separated walked path.
fn join(root: &Path, walked: &str) -> PathBuf {
    root.join(walked.trim_start_matches('/'))
}
