//! The files a tool produced: returned inline, or written to a granted output directory.

use std::{
    fs,
    io::Write as _,
    path::{Path, PathBuf},
};

use base64::Engine as _;
use cap_fs_ext::{DirExt as _, FollowSymlinks, OpenOptionsFollowExt as _};
use cap_std::fs::{Dir, OpenOptions};
use locara_exec::OutputFile;
use locara_manifest::Grants;
use locara_registry::Digest;

use crate::{Error, FileReport};

/// The files as reports carrying their bytes in base64.
pub(crate) fn inline(files: Vec<OutputFile>) -> Vec<FileReport> {
    files
        .into_iter()
        .map(|file| FileReport {
            size_bytes: file.bytes.len() as u64,
            sha256: Digest::of(&file.bytes).to_hex(),
            base64: Some(base64::engine::general_purpose::STANDARD.encode(&file.bytes)),
            path: None,
            name: file.path,
        })
        .collect()
}

/// An output directory the app granted, opened once, when the call was accepted: the files
/// are written beneath this handle, so the directory checked is the directory written, and no
/// link below it (one already there, or one a tool planted in an earlier call) is followed.
#[derive(Debug)]
pub(crate) struct OutputDir {
    /// The directory's canonical path, for reports.
    path: PathBuf,
    dir: Dir,
}

/// Writes the files into `dir`, or returns them inline when there is none.
///
/// An existing file is never overwritten: `page.pdf` becomes `page-1.pdf`, `page-2.pdf`, …
pub(crate) fn deliver(
    files: Vec<OutputFile>,
    dir: Option<&OutputDir>,
) -> Result<Vec<FileReport>, Error> {
    let Some(out) = dir else {
        return Ok(inline(files));
    };
    let mut reports = Vec::with_capacity(files.len());
    for file in files {
        let path = write_new(out, &file.path, &file.bytes).map_err(|e| {
            Error::new(
                "output_dir",
                format!(
                    "cannot write the output file {} into {}: {e}",
                    file.path,
                    out.path.display()
                ),
                "check that the output directory is writable, has space and holds no symbolic link where the tool's files go, then call again",
            )
        })?;
        reports.push(FileReport {
            size_bytes: file.bytes.len() as u64,
            sha256: Digest::of(&file.bytes).to_hex(),
            base64: None,
            path: Some(path),
            name: file.path,
        });
    }
    Ok(reports)
}

/// Opens the directory `name` in `dir` without following a link, creating it when missing; a
/// link or a file there is an error naming it.
fn open_or_create_dir(dir: &Dir, name: &str, shown: &Path) -> std::io::Result<Dir> {
    match dir.symlink_metadata(name) {
        Ok(meta) if meta.is_dir() => {}
        Ok(meta) => {
            let what = if meta.is_symlink() {
                "a symbolic link"
            } else {
                "not a directory"
            };
            return Err(std::io::Error::other(format!(
                "{} is {what}: Locara writes output files only into real directories below the output directory and follows no links",
                shown.display()
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match dir.create_dir(name) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        },
        Err(e) => return Err(e),
    }
    // `nofollow`: a link that appeared since the look above makes the open fail.
    dir.open_dir_nofollow(name)
}

/// Creates `name` (a `/`-separated relative path) under `out`, or a suffixed sibling if it
/// exists. Every directory below `out` is opened (or created) without following a link, and
/// the file is created new, never opened through a link.
fn write_new(out: &OutputDir, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let components: Vec<&str> = name.split('/').collect();
    if components
        .iter()
        .any(|c| c.is_empty() || *c == "." || *c == ".." || c.contains('\0'))
    {
        return Err(std::io::Error::other(format!(
            "{name:?} is not a plain relative path"
        )));
    }
    let (file_name, parents) = components.split_last().unwrap_or((&"", &[]));
    let mut dir = out.dir.try_clone()?;
    let mut shown = out.path.clone();
    for parent in parents {
        shown.push(parent);
        dir = open_or_create_dir(&dir, parent, &shown)?;
    }
    let target = Path::new(file_name);
    let stem = target
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = target
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()));
    let mut options = OpenOptions::new();
    options
        .write(true)
        .create_new(true)
        .follow(FollowSymlinks::No);
    for n in 0..10_000u32 {
        let candidate = if n == 0 {
            (*file_name).to_owned()
        } else {
            format!("{stem}-{n}{}", ext.as_deref().unwrap_or(""))
        };
        match dir.open_with(&candidate, &options) {
            Ok(mut file) => {
                file.write_all(bytes)?;
                return Ok(shown.join(candidate));
            }
            // An existing entry, a link included, is never written through: the next name.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(
        "10,000 files of that name already exist",
    ))
}

/// `dir`, opened, if it is an existing directory inside a directory the app granted
/// read-write.
///
/// `dir` is resolved once, to its canonical path, and must lie inside the canonical path of a
/// read-write grant. The grant's directory is then opened and every component from it down to
/// `dir` opened without following a link, so what is written is below the grant even if a
/// path component is replaced by a link after the check.
pub(crate) fn granted_output_dir(dir: &Path, grants: &Grants) -> Result<OutputDir, Error> {
    let denied = |reason: String| {
        Error::new(
            "capability_denied",
            format!("cannot write output files to {}: {reason}", dir.display()),
            "choose an output directory inside a directory the app granted read-write (`grants.fs` in locara.json, or `--out` on the command line)",
        )
    };
    let canonical = fs::canonicalize(dir)
        .ok()
        .filter(|d| d.is_dir())
        .ok_or_else(|| denied("it is not an existing directory".to_owned()))?;
    let root = grants
        .fs
        .iter()
        .filter(|g| g.write)
        .filter_map(|g| fs::canonicalize(&g.path).ok())
        .find(|root| canonical.starts_with(root))
        .ok_or_else(|| {
            denied("it is not inside any directory the app granted read-write".to_owned())
        })?;
    let opened = locara_sandbox::open_dir_beneath(&root, &canonical)
        .map_err(|e| denied(format!("it cannot be opened below its grant: {e}")))?;
    Ok(OutputDir {
        path: canonical,
        dir: opened,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output_dir(path: &Path) -> OutputDir {
        let mut grants = Grants::default();
        grants.fs = vec![locara_manifest::FsGrant::new(path).with_write(true)];
        granted_output_dir(path, &grants).unwrap()
    }

    #[test]
    fn existing_files_are_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("page.pdf"), b"precious").unwrap();
        let out = output_dir(dir.path());
        let root = fs::canonicalize(dir.path()).unwrap();
        let first = write_new(&out, "page.pdf", b"new").unwrap();
        let second = write_new(&out, "page.pdf", b"newer").unwrap();
        assert_eq!(first, root.join("page-1.pdf"));
        assert_eq!(second, root.join("page-2.pdf"));
        assert_eq!(fs::read(dir.path().join("page.pdf")).unwrap(), b"precious");
        assert_eq!(fs::read(&second).unwrap(), b"newer");
        let nested = write_new(&out, "a/b/c.txt", b"deep").unwrap();
        assert_eq!(nested, root.join("a/b/c.txt"));
        assert_eq!(fs::read(&nested).unwrap(), b"deep");
    }

    #[test]
    fn links_below_the_output_dir_are_never_written_through() {
        let scratch = tempfile::tempdir().unwrap();
        let outside = scratch.path().join("outside");
        let dir = scratch.path().join("out");
        fs::create_dir_all(&outside).unwrap();
        fs::create_dir_all(&dir).unwrap();
        fs::write(outside.join("victim.txt"), b"precious").unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("sub")).unwrap();
        std::os::unix::fs::symlink(outside.join("victim.txt"), dir.join("file.txt")).unwrap();
        std::os::unix::fs::symlink("../outside/nowhere.txt", dir.join("dangling.txt")).unwrap();
        let out = output_dir(&dir);
        // A symlinked directory in the way: refused, nothing written where it points.
        let error = write_new(&out, "sub/x.txt", b"escaped").unwrap_err();
        assert!(error.to_string().contains("is a symbolic link"), "{error}");
        assert!(!outside.join("x.txt").exists());
        // A link at the file's own name, to a file or to nowhere: a new name instead.
        let written = write_new(&out, "file.txt", b"new").unwrap();
        assert!(written.ends_with("file-1.txt"), "{}", written.display());
        let written = write_new(&out, "dangling.txt", b"new").unwrap();
        assert!(written.ends_with("dangling-1.txt"), "{}", written.display());
        assert_eq!(fs::read(outside.join("victim.txt")).unwrap(), b"precious");
        assert!(!outside.join("nowhere.txt").exists());
        assert_eq!(
            fs::read_dir(&outside).unwrap().count(),
            1,
            "nothing new outside"
        );
    }

    #[test]
    fn an_output_dir_outside_the_write_grants_is_refused() {
        let scratch = tempfile::tempdir().unwrap();
        let granted = scratch.path().join("granted");
        let other = scratch.path().join("other");
        fs::create_dir_all(&granted).unwrap();
        fs::create_dir_all(&other).unwrap();
        // A link inside the grant that leads out resolves to `other`: not granted.
        std::os::unix::fs::symlink(&other, granted.join("link")).unwrap();
        let mut grants = Grants::default();
        grants.fs = vec![locara_manifest::FsGrant::new(&granted).with_write(true)];
        let error = granted_output_dir(&granted.join("link"), &grants).unwrap_err();
        assert_eq!(error.code(), "capability_denied", "{error:?}");
        assert!(granted_output_dir(&granted, &grants).is_ok());
    }

    /// Every entry below `root` (links not followed), with what it is.
    fn snapshot(root: &Path) -> std::collections::BTreeMap<PathBuf, String> {
        let mut out = std::collections::BTreeMap::new();
        let mut pending = vec![root.to_owned()];
        while let Some(dir) = pending.pop() {
            for entry in fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let meta = fs::symlink_metadata(&path).unwrap();
                let what = if meta.is_symlink() {
                    format!("link {}", fs::read_link(&path).unwrap().display())
                } else if meta.is_dir() {
                    pending.push(path.clone());
                    "dir".to_owned()
                } else {
                    format!("file {:?}", fs::read(&path).unwrap())
                };
                out.insert(path, what);
            }
        }
        out
    }

    mod generated {
        use super::*;
        use proptest::prelude::*;

        /// A relative path below the output directory, 1 to 3 components.
        fn rel() -> impl Strategy<Value = String> {
            prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "x.txt"]), 1..4)
                .prop_map(|parts| parts.join("/"))
        }

        /// A link target: out of the output directory (relative, absolute, dangling), inside
        /// it, or a chain.
        fn target() -> impl Strategy<Value = String> {
            prop::sample::select(vec![
                "@outside",
                "@outside/victim.txt",
                "@outside/missing.txt",
                "../outside",
                "../../outside",
                "../../../outside/victim.txt",
                "a",
                "b",
                "../a",
                ".",
                "..",
                "x.txt",
            ])
            .prop_map(str::to_owned)
        }

        #[derive(Debug, Clone)]
        enum Entry {
            Dir(String),
            File(String),
            Link(String, String),
        }

        fn entry() -> impl Strategy<Value = Entry> {
            prop_oneof![
                2 => rel().prop_map(Entry::Dir),
                1 => rel().prop_map(Entry::File),
                3 => (target(), rel()).prop_map(|(t, l)| Entry::Link(t, l)),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig {
                cases: 128,
                failure_persistence: None,
                ..ProptestConfig::default()
            })]

            /// Whatever links the output directory holds (planted by an earlier call with
            /// write access, or anyone else), writing a tool's files never writes outside it,
            /// never changes a file that was there, and refuses only because of a link or a
            /// non-directory in the way.
            #[test]
            fn output_files_never_leave_the_output_dir(
                entries in prop::collection::vec(entry(), 0..10),
                names in prop::collection::vec(rel(), 1..6),
            ) {
                let scratch = tempfile::tempdir().unwrap();
                let outside = scratch.path().join("outside");
                let dir = scratch.path().join("out");
                fs::create_dir_all(&outside).unwrap();
                fs::create_dir_all(&dir).unwrap();
                fs::write(outside.join("victim.txt"), b"precious").unwrap();
                for entry in &entries {
                    // Building the tree may fail (a parent is a file or a link): skip that entry.
                    let _ = match entry {
                        Entry::Dir(p) => fs::create_dir_all(dir.join(p)),
                        Entry::File(p) => fs::write(dir.join(p), b"was here"),
                        Entry::Link(t, l) => {
                            let t = match t.strip_prefix('@') {
                                Some(below) => scratch.path().join(below),
                                None => PathBuf::from(t),
                            };
                            std::os::unix::fs::symlink(t, dir.join(l))
                        }
                    };
                }
                let outside_before = snapshot(&outside);
                let out_before = snapshot(&dir);
                let out = output_dir(&dir);
                let root = fs::canonicalize(&dir).unwrap();
                for (i, name) in names.iter().enumerate() {
                    let bytes = format!("tool file {i}");
                    match write_new(&out, name, bytes.as_bytes()) {
                        Ok(path) => {
                            prop_assert!(path.starts_with(&root), "{}", path.display());
                            // Every directory from the output dir down, and the file, are real.
                            let mut walked = root.clone();
                            for component in path.strip_prefix(&root).unwrap() {
                                walked.push(component);
                                let meta = fs::symlink_metadata(&walked).unwrap();
                                prop_assert!(!meta.is_symlink(), "{}", walked.display());
                            }
                            prop_assert_eq!(fs::read(&path).unwrap(), bytes.as_bytes());
                        }
                        Err(e) => {
                            let message = e.to_string();
                            prop_assert!(
                                message.contains("is a symbolic link")
                                    || message.contains("not a directory"),
                                "{}: {}", name, message
                            );
                        }
                    }
                }
                prop_assert_eq!(snapshot(&outside), outside_before, "outside changed");
                let out_after = snapshot(&dir);
                for (path, what) in &out_before {
                    prop_assert_eq!(out_after.get(path), Some(what), "{} changed", path.display());
                }
            }
        }
    }
}
