//! A staged file whose bytes are made while the call runs ([`MadeBytes`]).

use std::{
    borrow::Cow,
    mem::MaybeUninit,
    sync::{
        Arc, OnceLock,
        atomic::{AtomicBool, Ordering},
    },
};

/// Makes chunk `i` of a [`MadeBytes`] into the slice given (the chunk's length, not
/// initialised) and returns it, every byte written; or says it cannot (`None`: its source is
/// damaged).
type MakeChunk =
    dyn for<'a> Fn(usize, &'a mut [MaybeUninit<u8>]) -> Option<&'a mut [u8]> + Send + Sync;

/// One chunk: not made yet, made (`Some`), or found impossible to make (`None`).
type Chunk = OnceLock<Option<Box<[u8]>>>;

/// A staged file's bytes, made chunk by chunk while the call runs, so that a host can start a
/// call before a large input is ready (a file argument still to be decoded from base64, for
/// one) and the guest reads its start while the rest is made. The host's producer
/// ([`MadeBytes::make_all`], on a thread of its own) makes the chunks in order and keeps them;
/// a read that needs a chunk nobody has started makes and keeps it itself (a guest that reads
/// the end of a file first waits for no other chunk), and one that needs a chunk the producer
/// is making makes its own copy rather than wait: the producer may have lost its core, and a
/// read never sleeps on it. The length is known from the start, for `stat` and seeks.
///
/// A chunk that cannot be made fails each read that needs it (`EIO`) and is remembered
/// ([`MadeBytes::failed`]): the host, which knows what the bytes were made from, then answers
/// the call with that error instead of the tool's answer. So a host stages bytes this way
/// only for a call that can change nothing outside its sandbox before it is answered; what
/// the guest could do with a prefix of a damaged input is then lost with its answer.
pub struct MadeBytes {
    len: usize,
    chunk: usize,
    chunks: Box<[Chunk]>,
    /// Whether someone (the producer or a read) has started making each chunk.
    claimed: Box<[AtomicBool]>,
    make: Box<MakeChunk>,
    failed: AtomicBool,
}

impl MadeBytes {
    /// `len` bytes in chunks of `chunk` bytes (the last one shorter when `chunk` does not
    /// divide `len`), chunk `i` made by `make(i, bytes)`: it writes every byte of `bytes`
    /// (not initialised, so a chunk costs no zeroing before it is written) and returns them as
    /// written (as `base64_simd`'s `decode` into `Out::from_uninit_slice` does), or `None`
    /// when it cannot. A chunk returned shorter, or as other bytes than the ones given, counts
    /// as one that could not be made.
    ///
    /// # Panics
    ///
    /// If `chunk` is 0.
    pub fn new(
        len: usize,
        chunk: usize,
        make: impl for<'a> Fn(usize, &'a mut [MaybeUninit<u8>]) -> Option<&'a mut [u8]>
        + Send
        + Sync
        + 'static,
    ) -> MadeBytes {
        assert!(chunk > 0, "a chunk holds at least one byte");
        let count = len.div_ceil(chunk);
        MadeBytes {
            len,
            chunk,
            chunks: (0..count).map(|_| OnceLock::new()).collect(),
            claimed: (0..count).map(|_| AtomicBool::new(false)).collect(),
            make: Box::new(make),
            failed: AtomicBool::new(false),
        }
    }

    /// The file's length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Makes chunk `i` into new bytes; `None` (and remembered) if it cannot be made.
    fn make(&self, i: usize) -> Option<Box<[u8]>> {
        let start = i * self.chunk;
        let mut bytes = Box::new_uninit_slice(self.chunk.min(self.len - start));
        let (at, len) = (bytes.as_ptr().cast::<u8>(), bytes.len());
        let whole =
            (self.make)(i, &mut bytes).is_some_and(|made| made.as_ptr() == at && made.len() == len);
        if !whole {
            self.failed.store(true, Ordering::Relaxed);
            return None;
        }
        // SAFETY: `make` returned an initialised `&mut [u8]` at the same address and of the
        // same length as `bytes`: every byte of `bytes` is initialised.
        #[allow(
            unsafe_code,
            reason = "a chunk is written once, with no zeroing before"
        )]
        Some(unsafe { bytes.assume_init() })
    }

    /// Claims chunk `i` (whether nobody had) and, if so, makes and keeps it.
    fn claim(&self, i: usize) -> bool {
        let claimed = !self.claimed[i].swap(true, Ordering::AcqRel);
        if claimed {
            self.chunks[i].get_or_init(|| self.make(i));
        }
        claimed
    }

    /// Chunk `i` for a read: kept, made and kept here if nobody had started it, or made here
    /// as a copy if someone is making it now; `None` if it cannot be made.
    fn chunk(&self, i: usize) -> Option<Cow<'_, [u8]>> {
        if self.chunks[i].get().is_none() && !self.claim(i) {
            if let Some(kept) = self.chunks[i].get() {
                return kept.as_deref().map(Cow::Borrowed);
            }
            return self.make(i).map(|bytes| Cow::Owned(bytes.into_vec()));
        }
        self.chunks[i].get()?.as_deref().map(Cow::Borrowed)
    }

    /// The producer's loop: makes and keeps, in order, every chunk nobody has started, and
    /// stops early once `this` is the last holder (the call ended, and no read will come).
    /// Whether every chunk it made could be made.
    pub fn make_all(this: &Arc<MadeBytes>) -> bool {
        (0..this.chunks.len()).all(|i| {
            Arc::strong_count(this) == 1
                || !this.claim(i)
                || this.chunks[i].get().is_some_and(Option::is_some)
        })
    }

    /// Makes and keeps every chunk nobody has made, here, waiting for those being made:
    /// whether all of them could be made. A host calls it when the call has ended, so that a
    /// damaged source is found even where the guest did not read all of it.
    pub fn finish(&self) -> bool {
        (0..self.chunks.len()).all(|i| {
            self.claimed[i].store(true, Ordering::Release);
            self.chunks[i].get_or_init(|| self.make(i)).is_some()
        })
    }

    /// Whether a chunk could not be made.
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Copies from `at` into `buf`, as much as fits: 0 at or past the end, `None` when a chunk
    /// it needs cannot be made.
    pub fn read_at(&self, buf: &mut [u8], at: u64) -> Option<usize> {
        let start = usize::try_from(at).unwrap_or(usize::MAX).min(self.len);
        let n = buf.len().min(self.len - start);
        let mut done = 0;
        while done < n {
            let at = start + done;
            let chunk = self.chunk(at / self.chunk)?;
            let from = at % self.chunk;
            let take = (chunk.len() - from).min(n - done);
            buf[done..done + take].copy_from_slice(&chunk[from..from + take]);
            done += take;
        }
        Some(n)
    }

    /// Every byte, made where needed; `None` when a chunk cannot be made.
    pub fn to_vec(&self) -> Option<Vec<u8>> {
        let mut bytes = Vec::with_capacity(self.len);
        for i in 0..self.chunks.len() {
            bytes.extend_from_slice(&self.chunk(i)?);
        }
        Some(bytes)
    }
}

impl std::fmt::Debug for MadeBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MadeBytes")
            .field("len", &self.len)
            .field("chunk", &self.chunk)
            .field("failed", &self.failed())
            .finish_non_exhaustive()
    }
}

/// A file's bytes in the in-memory temp dir: held whole (shared with whoever staged them, or
/// what the guest wrote), or made while the call runs (a staged file's only).
#[derive(Debug, Clone)]
pub(crate) enum FileBytes {
    Held(Arc<Vec<u8>>),
    Made(Arc<MadeBytes>),
}

impl PartialEq for FileBytes {
    fn eq(&self, other: &FileBytes) -> bool {
        match (self, other) {
            (FileBytes::Held(a), FileBytes::Held(b)) => a == b,
            (FileBytes::Made(a), FileBytes::Made(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for FileBytes {}

impl FileBytes {
    pub(crate) fn len(&self) -> usize {
        match self {
            FileBytes::Held(bytes) => bytes.len(),
            FileBytes::Made(made) => made.len(),
        }
    }

    /// Copies from `at` into `buf`, as much as fits; 0 at or past the end; `None` when made
    /// bytes it needs cannot be made.
    pub(crate) fn read_at(&self, buf: &mut [u8], at: u64) -> Option<usize> {
        match self {
            FileBytes::Held(bytes) => {
                let start = usize::try_from(at).unwrap_or(usize::MAX).min(bytes.len());
                let n = buf.len().min(bytes.len() - start);
                buf[..n].copy_from_slice(&bytes[start..start + n]);
                Some(n)
            }
            FileBytes::Made(made) => made.read_at(buf, at),
        }
    }

    /// The bytes, held: made bytes are made whole first (`None` when they cannot be).
    pub(crate) fn held(&self) -> Option<Arc<Vec<u8>>> {
        match self {
            FileBytes::Held(bytes) => Some(Arc::clone(bytes)),
            FileBytes::Made(made) => made.to_vec().map(Arc::new),
        }
    }

    /// The bytes, to change: made bytes are made whole first (empty when they cannot be: the
    /// host then answers the call with the source's error, whatever the guest did).
    pub(crate) fn held_mut(&mut self) -> &mut Vec<u8> {
        if let FileBytes::Made(made) = self {
            *self = FileBytes::Held(Arc::new(made.to_vec().unwrap_or_default()));
        }
        match self {
            FileBytes::Held(bytes) => Arc::make_mut(bytes),
            FileBytes::Made(_) => unreachable!("made bytes were just held"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// Bytes `0, 1, 2, …` (mod 251) made in chunks of 7, counting how many chunks were made,
    /// and failing chunk `bad` if given.
    fn counting(len: usize, bad: Option<usize>) -> (Arc<MadeBytes>, Arc<AtomicUsize>) {
        let made = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&made);
        let bytes = MadeBytes::new(len, 7, move |i, out| {
            count.fetch_add(1, Ordering::Relaxed);
            let made: Vec<u8> = (0..out.len()).map(|k| ((i * 7 + k) % 251) as u8).collect();
            (Some(i) != bad).then_some(out.write_copy_of_slice(&made))
        });
        (Arc::new(bytes), made)
    }

    fn expected(len: usize) -> Vec<u8> {
        (0..len).map(|k| (k % 251) as u8).collect()
    }

    #[test]
    fn reads_make_only_the_chunks_they_need_each_once() {
        let (bytes, made) = counting(100, None);
        assert_eq!(bytes.len(), 100);
        let mut buf = [0u8; 10];
        // The end first: the last two chunks (98..100 is chunk 14, 95..98 chunk 13).
        assert_eq!(bytes.read_at(&mut buf, 95), Some(5));
        assert_eq!(&buf[..5], &expected(100)[95..]);
        assert_eq!(made.load(Ordering::Relaxed), 2);
        // Across a chunk boundary, and past the end.
        assert_eq!(bytes.read_at(&mut buf, 3), Some(10));
        assert_eq!(&buf[..], &expected(100)[3..13]);
        assert_eq!(bytes.read_at(&mut buf, 100), Some(0));
        assert_eq!(bytes.read_at(&mut buf, u64::MAX), Some(0));
        assert_eq!(made.load(Ordering::Relaxed), 4);
        assert_eq!(bytes.to_vec(), Some(expected(100)));
        assert_eq!(made.load(Ordering::Relaxed), 15);
        assert!(bytes.finish() && !bytes.failed());
        assert_eq!(made.load(Ordering::Relaxed), 15);
    }

    #[test]
    fn a_chunk_that_cannot_be_made_fails_the_reads_that_need_it() {
        let (bytes, _) = counting(100, Some(3));
        let mut buf = [0u8; 7];
        assert_eq!(bytes.read_at(&mut buf, 14), Some(7));
        assert!(!bytes.failed());
        assert_eq!(bytes.read_at(&mut buf, 20), None);
        assert!(bytes.failed());
        assert_eq!(bytes.to_vec(), None);
        assert!(!bytes.finish());
        // Held whole for a write, what cannot be made is empty (the host answers with the
        // source's error).
        let mut staged = FileBytes::Made(bytes);
        assert!(staged.held_mut().is_empty());
    }

    /// A chunk is kept only when its maker returns the whole of the bytes it was given: one
    /// that returns less of them, or bytes of its own, has not written them all, and counts as
    /// a chunk that cannot be made (nothing unwritten is ever read).
    #[test]
    fn a_chunk_returned_short_or_elsewhere_is_not_kept() {
        let short = MadeBytes::new(10, 5, |_, out| {
            let made = out.write_copy_of_slice(&[7; 5]);
            Some(&mut made[..4])
        });
        let elsewhere = MadeBytes::new(10, 5, |_, _| {
            Some(Box::leak(Box::new([7u8; 5])).as_mut_slice())
        });
        for bytes in [short, elsewhere] {
            let mut buf = [0u8; 5];
            assert_eq!(bytes.read_at(&mut buf, 0), None);
            assert!(bytes.failed());
        }
        let whole = MadeBytes::new(10, 5, |_, out| Some(out.write_copy_of_slice(&[7; 5])));
        assert_eq!(whole.to_vec(), Some(vec![7; 10]));
        assert!(!whole.failed());
    }

    /// A read that finds a chunk being made by the producer makes its own copy rather than
    /// wait, so a chunk may be made twice; every chunk is kept once, by one or the other.
    #[test]
    fn a_producer_and_a_reader_keep_every_chunk_between_them() {
        for _ in 0..20 {
            let (bytes, made) = counting(10_000, None);
            let producer = {
                let bytes = Arc::clone(&bytes);
                std::thread::spawn(move || MadeBytes::make_all(&bytes))
            };
            let mut buf = vec![0u8; 333];
            let mut read = Vec::new();
            let mut at = 0u64;
            while let Some(n @ 1..) = bytes.read_at(&mut buf, at) {
                read.extend_from_slice(&buf[..n]);
                at += n as u64;
            }
            assert!(producer.join().expect("the producer"));
            assert_eq!(read, expected(10_000));
            let before = made.load(Ordering::Relaxed);
            assert!(before >= 10_000usize.div_ceil(7));
            assert!(bytes.finish() && !bytes.failed());
            assert_eq!(made.load(Ordering::Relaxed), before, "a chunk nobody kept");
        }
    }

    #[test]
    fn the_producer_stops_when_nobody_else_holds_the_bytes() {
        let (bytes, made) = counting(700, None);
        assert!(MadeBytes::make_all(&bytes));
        assert_eq!(made.load(Ordering::Relaxed), 0);
    }
}
