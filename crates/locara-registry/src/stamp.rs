//! The registry's records of artifact versions that hashed correctly, so that a cached
//! artifact hashed once need not be hashed again by every new process while it stays the same
//! file. What a version is ([`Stamp`]: device, inode, size, `mtime`, `ctime`) and when it may
//! be trusted ([`locara_stamp::SETTLE`]) is `locara-stamp`'s rule, which the sandbox's
//! compiled-module cache shares: the kernel moves `ctime` on every change and nothing sets it
//! back, and a stamp is only trusted, and only recorded, once its `ctime` is `SETTLE` older
//! than the open.
//!
//! After hashing an entry, the registry records its stamp next to it (`<hex>.verified`); a
//! later load that finds the same stamp on the opened file skips the hash, and reads the bytes
//! only when they are needed, using them if the stamp is still the same before and after that
//! read (else it hashes them). The record is the home's, as the entry is: like the cache's other checks, it
//! catches corruption, mix-ups and any change made to the file since, not a malicious writer
//! of the home (SECURITY.md).

use std::path::Path;

pub(crate) use locara_stamp::Stamp;

use crate::{
    Digest,
    fs::{self, ReadLimit},
};

const RECORD_LIMIT: ReadLimit = ReadLimit::new("verification record", 1024);

/// The record of the file stamped `stamp` whose bytes hashed to `digest`.
fn line(stamp: &Stamp, digest: &Digest) -> String {
    stamp.record(&format!("sha256:{digest}"))
}

/// Whether `record` says that the file stamped `stamp` was hashed to `digest`.
pub(crate) fn recorded(record: &Path, digest: &Digest, stamp: &Stamp) -> bool {
    fs::read(record, RECORD_LIMIT).is_ok_and(|bytes| bytes == line(stamp, digest).as_bytes())
}

/// Records that the file stamped `stamp` hashed to `digest`. A record that cannot be written
/// only costs a hash next time.
pub(crate) fn record(record: &Path, digest: &Digest, stamp: &Stamp) {
    if let Err(error) = fs::write_atomic(record, line(stamp, digest).as_bytes()) {
        tracing::warn!(path = %record.display(), %error, "could not record a verification");
    }
}
