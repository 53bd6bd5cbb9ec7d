//! A file's version as the kernel keeps it, so that a cached artifact hashed once need not be
//! hashed again by every new process while it stays the same file.
//!
//! A [`Stamp`] is the device, inode, size, modification and status-change times of an open
//! file. The status-change time (`ctime`) is set by the kernel to the current time on every
//! write, truncation, rename over, `chmod` or `utimes`, and no system call sets it to a chosen
//! value, so it cannot be forged by whoever writes the file (a guest can set `mtime` through
//! WASI; not `ctime`): a file written, replaced or touched since it was hashed has another
//! stamp. Timestamps are coarse (a clock tick), so a write in the same tick as the one the
//! stamp records could go unseen; a stamp is therefore only trusted, and only recorded, once
//! its `ctime` is [`SETTLE`] older than the moment the file was opened: any later change then
//! gets a later `ctime`.
//!
//! After hashing an entry, the registry records its stamp next to it (`<hex>.verified`); a
//! later load that finds the same stamp on the opened file skips the hash, and reads the bytes
//! only when they are needed, using them if the stamp is still the same before and after that
//! read (else it hashes them). The record is the home's, as the entry is: like the cache's other checks, it
//! catches corruption, mix-ups and any change made to the file since, not a malicious writer
//! of the home (SECURITY.md).

use std::{
    os::unix::fs::MetadataExt as _,
    path::Path,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use crate::{
    Digest,
    fs::{self, ReadLimit},
};

/// How long after a file's last change its stamp starts to be trusted: well above the
/// coarsest timestamp granularity of the file systems a home may be on (two seconds).
pub(crate) const SETTLE: Duration = Duration::from_secs(3);

const FORMAT: &str = "locara-verified/1";
const RECORD_LIMIT: ReadLimit = ReadLimit::new("verification record", 1024);

/// The version of an open file: device, inode, size, `mtime` and `ctime` (seconds and
/// nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp([i128; 7]);

impl Stamp {
    /// The stamp of the file `meta` describes (taken from an open handle).
    pub(crate) fn of(meta: &std::fs::Metadata) -> Stamp {
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
    pub(crate) fn settled_before(&self, opened: SystemTime) -> bool {
        let Ok(opened) = opened.duration_since(UNIX_EPOCH) else {
            return false;
        };
        let changed_ns = self.0[5] * 1_000_000_000 + self.0[6];
        changed_ns + (SETTLE.as_nanos() as i128) < opened.as_nanos() as i128
    }

    fn line(&self, digest: &Digest) -> String {
        let [dev, ino, size, mtime, mtime_ns, ctime, ctime_ns] = self.0;
        format!(
            "{FORMAT} sha256:{digest} dev:{dev} ino:{ino} size:{size} mtime:{mtime}.{mtime_ns:09} ctime:{ctime}.{ctime_ns:09}\n"
        )
    }
}

/// Whether `record` says that the file stamped `stamp` was hashed to `digest`.
pub(crate) fn recorded(record: &Path, digest: &Digest, stamp: &Stamp) -> bool {
    fs::read(record, RECORD_LIMIT).is_ok_and(|bytes| bytes == stamp.line(digest).as_bytes())
}

/// Records that the file stamped `stamp` hashed to `digest`. A record that cannot be written
/// only costs a hash next time.
pub(crate) fn record(record: &Path, digest: &Digest, stamp: &Stamp) {
    if let Err(error) = fs::write_atomic(record, stamp.line(digest).as_bytes()) {
        tracing::warn!(path = %record.display(), %error, "could not record a verification");
    }
}
