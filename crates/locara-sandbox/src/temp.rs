//! Where calls' temp dirs come from and where they go: each is made fresh under the temp root
//! on the call's first use of `/tmp`, and removed when the call ends, either by the call itself
//! or, with [`SandboxConfig::remove_temp_dirs_in_background`](crate::SandboxConfig::remove_temp_dirs_in_background),
//! by a cleaner thread off the call's path.
//!
//! Removal is the costly half on a journaling disk (ext4 with `discard` charges a few hundred
//! microseconds for a temp dir with two subdirectories; a tmpfs, under ten), and nothing the
//! caller gets back depends on it: the output files were read through the temp dir's handle
//! before it is handed over. The cleaner removes exactly what an inline removal would
//! (`tempfile`'s removal, which deletes links and never follows them). Its queue is short, so
//! a disk that cannot keep up makes calls remove their own temp dirs again instead of letting
//! removed-to-be dirs pile up, and dropping the last handle (the sandbox and every module it
//! compiled) waits until every queued temp dir is gone.

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc, OnceLock,
        mpsc::{self, SyncSender, TrySendError},
    },
    thread::JoinHandle,
};

use tempfile::TempDir;

/// How many finished temp dirs may wait for the cleaner before calls remove their own.
const QUEUE: usize = 16;

/// Makes and removes the temp dirs of one sandbox's calls.
#[derive(Debug)]
pub(crate) struct TempDirs {
    root: PathBuf,
    background: bool,
    /// Started on the first removal handed over; `None` inside when the thread could not be
    /// spawned, and calls remove their own temp dirs.
    cleaner: OnceLock<Option<Cleaner>>,
}

#[derive(Debug)]
struct Cleaner {
    queue: SyncSender<TempDir>,
    thread: JoinHandle<()>,
}

impl TempDirs {
    /// Temp dirs under `root`, removed by the call that made them, or by a cleaner thread when
    /// `background` is set.
    pub(crate) fn new(root: PathBuf, background: bool) -> TempDirs {
        TempDirs {
            root,
            background,
            cleaner: OnceLock::new(),
        }
    }

    /// The temp dirs a sandbox built from `config` makes: under its temp root (the system's
    /// temp dir by default), removed as it says.
    pub(crate) fn of(config: &crate::SandboxConfig) -> Arc<TempDirs> {
        Arc::new(TempDirs::new(
            config.temp_root.clone().unwrap_or_else(std::env::temp_dir),
            config.background_temp_removal,
        ))
    }

    /// Where the temp dirs are made.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// A fresh, empty temp dir (mode 0700 on Unix, a random name starting `locara-call-`).
    pub(crate) fn create(&self) -> std::io::Result<TempDir> {
        tempfile::Builder::new()
            .prefix("locara-call-")
            .tempdir_in(&self.root)
    }

    /// Removes a finished call's temp dir: every descriptor into it must be closed. Handed to
    /// the cleaner when there is one and its queue has room, else removed here.
    pub(crate) fn remove(&self, temp: TempDir) {
        let temp = match self.cleaner() {
            Some(cleaner) => match cleaner.queue.try_send(temp) {
                Ok(()) => return,
                Err(TrySendError::Full(temp) | TrySendError::Disconnected(temp)) => temp,
            },
            None => temp,
        };
        close(temp);
    }

    fn cleaner(&self) -> Option<&Cleaner> {
        if !self.background {
            return None;
        }
        self.cleaner.get_or_init(Cleaner::spawn).as_ref()
    }
}

impl Drop for TempDirs {
    /// Waits for the cleaner to remove every temp dir handed to it.
    fn drop(&mut self) {
        if let Some(Some(cleaner)) = self.cleaner.take() {
            cleaner.stop();
        }
    }
}

impl Cleaner {
    fn spawn() -> Option<Cleaner> {
        let (queue, queued) = mpsc::sync_channel::<TempDir>(QUEUE);
        let thread = std::thread::Builder::new()
            .name("locara-temp-cleaner".to_owned())
            .spawn(move || {
                for temp in queued {
                    close(temp);
                }
            });
        match thread {
            Ok(thread) => Some(Cleaner { queue, thread }),
            Err(error) => {
                tracing::warn!(%error, "could not start the temp dir cleaner; calls remove their own temp dirs");
                None
            }
        }
    }

    /// Closes the queue and waits until the thread has removed what it holds.
    fn stop(self) {
        drop(self.queue);
        if self.thread.join().is_err() {
            tracing::warn!("the temp dir cleaner panicked");
        }
    }
}

/// Removes a temp dir, logging (not failing) when that is impossible: the call's result does
/// not depend on it.
fn close(temp: TempDir) {
    let path = temp.path().to_owned();
    if let Err(error) = temp.close() {
        tracing::warn!(path = %path.display(), %error, "could not remove a call's temp dir");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(root: &Path) -> usize {
        std::fs::read_dir(root).unwrap().count()
    }

    fn filled(dirs: &TempDirs) -> TempDir {
        let temp = dirs.create().unwrap();
        std::fs::create_dir_all(temp.path().join("work/out")).unwrap();
        std::fs::write(temp.path().join("work/out/result.txt"), b"x").unwrap();
        temp
    }

    #[test]
    fn inline_removal_is_done_when_remove_returns() {
        let root = tempfile::tempdir().unwrap();
        let dirs = TempDirs::new(root.path().to_owned(), false);
        let temp = filled(&dirs);
        assert_eq!(entries(root.path()), 1);
        dirs.remove(temp);
        assert_eq!(entries(root.path()), 0);
        assert!(dirs.cleaner.get().is_none(), "no thread for inline removal");
    }

    #[test]
    fn background_removal_is_done_when_the_last_handle_drops() {
        let root = tempfile::tempdir().unwrap();
        let dirs = TempDirs::new(root.path().to_owned(), true);
        // More than the queue holds: the calls that find it full remove their own.
        let made: Vec<TempDir> = (0..QUEUE * 4).map(|_| filled(&dirs)).collect();
        assert_eq!(entries(root.path()), QUEUE * 4);
        for temp in made {
            dirs.remove(temp);
        }
        assert!(
            matches!(dirs.cleaner.get(), Some(Some(_))),
            "the cleaner runs"
        );
        drop(dirs);
        assert_eq!(entries(root.path()), 0, "every temp dir was removed");
    }

    #[test]
    fn background_removal_deletes_links_not_their_targets() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), b"keep").unwrap();
        let dirs = TempDirs::new(root.path().join("tmp"), true);
        std::fs::create_dir(dirs.root()).unwrap();
        let temp = dirs.create().unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outside.path(), temp.path().join("out")).unwrap();
            std::os::unix::fs::symlink(outside.path().join("secret.txt"), temp.path().join("file"))
                .unwrap();
        }
        dirs.remove(temp);
        drop(dirs);
        assert_eq!(entries(&root.path().join("tmp")), 0);
        assert_eq!(
            std::fs::read(outside.path().join("secret.txt")).unwrap(),
            b"keep"
        );
    }
}
