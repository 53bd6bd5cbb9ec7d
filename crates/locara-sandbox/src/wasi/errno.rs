//! WASI preview 1 error numbers and the mapping from host I/O errors.

use std::io;

/// A WASI preview 1 `errno` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Errno(pub(crate) u16);

impl Errno {
    /// Only as a placeholder: a request declined in place is made again, never answered with
    /// it (see `host::ask`).
    pub(crate) const AGAIN: Errno = Errno(6);
    pub(crate) const BADF: Errno = Errno(8);
    pub(crate) const EXIST: Errno = Errno(20);
    pub(crate) const FAULT: Errno = Errno(21);
    pub(crate) const FBIG: Errno = Errno(22);
    pub(crate) const ILSEQ: Errno = Errno(25);
    pub(crate) const INVAL: Errno = Errno(28);
    pub(crate) const IO: Errno = Errno(29);
    pub(crate) const ISDIR: Errno = Errno(31);
    pub(crate) const NAMETOOLONG: Errno = Errno(37);
    pub(crate) const NOENT: Errno = Errno(44);
    pub(crate) const NOSPC: Errno = Errno(51);
    pub(crate) const NOSYS: Errno = Errno(52);
    pub(crate) const NOTDIR: Errno = Errno(54);
    pub(crate) const NOTEMPTY: Errno = Errno(55);
    pub(crate) const NOTSOCK: Errno = Errno(57);
    pub(crate) const NOTSUP: Errno = Errno(58);
    pub(crate) const OVERFLOW: Errno = Errno(61);
    pub(crate) const ROFS: Errno = Errno(69);
    pub(crate) const SPIPE: Errno = Errno(70);
    pub(crate) const NOTCAPABLE: Errno = Errno(76);
}

impl From<io::Error> for Errno {
    fn from(error: io::Error) -> Errno {
        if let Some(code) = error.raw_os_error() {
            return from_raw_os_error(code);
        }
        match error.kind() {
            io::ErrorKind::NotFound => Errno::NOENT,
            // cap-std reports an attempt to leave the preopened directory (through `..`, an
            // absolute path or a symlink) as `PermissionDenied` without an OS code.
            io::ErrorKind::PermissionDenied => Errno::NOTCAPABLE,
            io::ErrorKind::AlreadyExists => Errno::EXIST,
            io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData => Errno::INVAL,
            io::ErrorKind::NotADirectory => Errno::NOTDIR,
            io::ErrorKind::IsADirectory => Errno::ISDIR,
            io::ErrorKind::DirectoryNotEmpty => Errno::NOTEMPTY,
            io::ErrorKind::ReadOnlyFilesystem => Errno::ROFS,
            io::ErrorKind::StorageFull => Errno::NOSPC,
            io::ErrorKind::Unsupported => Errno::NOTSUP,
            _ => Errno::IO,
        }
    }
}

/// Maps a Linux `errno` to its WASI preview 1 number.
fn from_raw_os_error(code: i32) -> Errno {
    Errno(match code {
        1 => 63,   // EPERM
        2 => 44,   // ENOENT
        5 => 29,   // EIO
        9 => 8,    // EBADF
        11 => 6,   // EAGAIN
        12 => 48,  // ENOMEM
        13 => 2,   // EACCES
        16 => 10,  // EBUSY
        17 => 20,  // EEXIST
        18 => 75,  // EXDEV
        20 => 54,  // ENOTDIR
        21 => 31,  // EISDIR
        22 => 28,  // EINVAL
        23 => 41,  // ENFILE
        24 => 33,  // EMFILE
        26 => 74,  // ETXTBSY
        27 => 22,  // EFBIG
        28 => 51,  // ENOSPC
        29 => 70,  // ESPIPE
        30 => 69,  // EROFS
        31 => 34,  // EMLINK
        36 => 37,  // ENAMETOOLONG
        38 => 52,  // ENOSYS
        39 => 55,  // ENOTEMPTY
        40 => 32,  // ELOOP
        75 => 61,  // EOVERFLOW
        84 => 25,  // EILSEQ
        95 => 58,  // EOPNOTSUPP
        122 => 19, // EDQUOT
        _ => 29,   // EIO
    })
}
