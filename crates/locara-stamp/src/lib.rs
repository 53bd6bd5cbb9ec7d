//! A file's version as the kernel keeps it ([`Stamp`]: device, inode, size, `mtime`, `ctime`),
//! when that version may be trusted ([`SETTLE`]), and the one line that records it
//! ([`Stamp::record`]), so that a cache entry hashed once need not be hashed again by every new
//! process while it stays the same file. The kernel sets `ctime` to the current time on every
//! write, truncation, rename over, `chmod` or `utimes`, and no system call sets it to a chosen
//! value, so whoever writes a file cannot give it the stamp of an earlier version (a guest can
//! set `mtime` through WASI, not `ctime`). Timestamps are coarse (a clock tick), so a write in
//! the tick a stamp records could go unseen: a stamp is only trusted, and only recorded, once
//! its `ctime` is [`SETTLE`] older than the moment the file was opened, after which any change
//! gets a later `ctime`. The registry's artifact cache and the sandbox's compiled-module cache
//! both rely on this rule, and neither may depend on the other, so it lives here. What this
//! crate deliberately does not know: which file holds a record, how records are read and
//! written (each cache keeps its own rules: bounded reads, atomic writes, no blocking on a
//! FIFO), and what was hashed, with which hash.

use std::{
    os::unix::fs::MetadataExt as _,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

/// How long after a file's last change its stamp starts to be trusted: well above the
/// coarsest timestamp granularity of the file systems a home or a cache may be on (two
/// seconds).
pub const SETTLE: Duration = Duration::from_secs(3);

/// The first word of every record line, naming its format.
const FORMAT: &str = "locara-verified/1";

/// The version of an open file: device, inode, size, `mtime` and `ctime` (seconds and
/// nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp([i128; 7]);

impl Stamp {
    /// The stamp of the file `meta` describes (taken from an open handle, so that the stamp
    /// and the bytes read are the same file's).
    pub fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp([
            i128::from(meta.dev()),
            i128::from(meta.ino()),
            i128::from(meta.size()),
            i128::from(meta.mtime()),
            i128::from(meta.mtime_nsec()),
            i128::from(meta.ctime()),
            i128::from(meta.ctime_nsec()),
        ])
    }

    /// Whether the file's last change was at least [`SETTLE`] before `opened`.
    pub fn settled_before(&self, opened: SystemTime) -> bool {
        let Ok(opened) = opened.duration_since(UNIX_EPOCH) else {
            return false;
        };
        let changed_ns = self.0[5] * 1_000_000_000 + self.0[6];
        changed_ns + (SETTLE.as_nanos() as i128) < opened.as_nanos() as i128
    }

    /// The record of this version, whose bytes hashed to `checksum` (`algorithm:hex`, e.g.
    /// `sha256:…`): one line, equal for equal stamps and checksums and different otherwise.
    pub fn record(&self, checksum: &str) -> String {
        let [dev, ino, size, mtime, mtime_ns, ctime, ctime_ns] = self.0;
        format!(
            "{FORMAT} {checksum} dev:{dev} ino:{ino} size:{size} mtime:{mtime}.{mtime_ns:09} ctime:{ctime}.{ctime_ns:09}\n"
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::{SETTLE, Stamp};

    fn stamp_of(file: &std::fs::File) -> Stamp {
        Stamp::of(&file.metadata().unwrap())
    }

    #[test]
    fn a_change_to_the_file_changes_its_stamp_and_its_record() {
        let mut file = tempfile::tempfile().unwrap();
        let before = stamp_of(&file);
        assert_eq!(stamp_of(&file), before, "the same version, the same stamp");
        std::io::Write::write_all(&mut file, b"x").unwrap();
        let after = stamp_of(&file);
        assert_ne!(after, before);
        assert_ne!(after.record("sha256:00"), before.record("sha256:00"));
        assert_ne!(before.record("sha256:00"), before.record("sha256:01"));
        let line = before.record("blake3:ab");
        assert!(
            line.starts_with("locara-verified/1 blake3:ab dev:"),
            "{line}"
        );
        assert_eq!(line.matches('\n').count(), 1);
        assert!(line.ends_with('\n'));
    }

    #[test]
    fn a_stamp_is_trusted_only_once_its_change_has_settled() {
        let file = tempfile::tempfile().unwrap();
        let stamp = stamp_of(&file);
        let now = SystemTime::now();
        assert!(!stamp.settled_before(now), "changed just now");
        assert!(!stamp.settled_before(now + SETTLE - Duration::from_millis(500)));
        assert!(stamp.settled_before(now + SETTLE + Duration::from_millis(500)));
        assert!(!stamp.settled_before(SystemTime::UNIX_EPOCH - Duration::from_secs(1)));
    }
}
