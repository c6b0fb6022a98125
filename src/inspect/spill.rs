//! Where held recording frames go once an exchange holds more than a few KiB: one append-only
//! segment file shared by every exchange, so that what a `violations`-mode exchange keeps in
//! memory until its verdict does not grow with the length of its stream.
//!
//! Input: blocks of encoded frames from each exchange's held frames (`inspect::held`), never
//! from the client path. An append that writes (the tail is full, or a new segment is needed)
//! runs on the analysis pool; one that only joins the tail in memory may run on the
//! inspector's own thread ([`Spill::append_in_memory`], which refuses the others). Output: an
//! [`Extent`] per block (the segment, an offset, a length: all an exchange keeps of it), read
//! back only when the exchange turned out to have violations.
//!
//! Appends are small (an exchange spills every `inspect.held_in_memory` bytes, 1 KiB by
//! default), so they are not written one by one: they gather in one shared tail of at most
//! [`PENDING_BYTES`] in memory, written to the segment with one `pwrite` when it fills. A block
//! still in that tail is read back from it.
//!
//! A segment is created in the recordings folder and unlinked at once: nothing is left on disk
//! after a crash, and nothing in the folder is ever seen by `check`, `replay` or pruning. A new
//! segment starts when the current one reaches [`SEGMENT_BYTES`]; an old one is freed (by the
//! kernel, when its last handle closes) once no exchange refers to it. The bytes of all live
//! segments are bounded by `inspect.max_spill`; past it an append is refused and the exchange's
//! recording ends `truncated` (counted as `tooltap_limit_hits_total{limit="held_spill"}`), while
//! its verdict is still computed from the whole stream.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, TryLockError};

/// A segment is closed to new appends past this size.
pub const SEGMENT_BYTES: u64 = 32 * 1024 * 1024;

/// Bytes of appended blocks gathered in memory (shared by all exchanges) before one write.
pub const PENDING_BYTES: usize = 64 * 1024;

/// Why an append did not happen.
#[derive(Debug, thiserror::Error)]
pub enum SpillError {
    #[error("spill segments hold {max} bytes already (inspect.max_spill)")]
    Full { max: u64 },
    /// An earlier write failed: spilling is off until restart (logged once, then).
    #[error("spilling is off after an earlier failure")]
    Off,
    #[error("cannot write a spill segment in {dir}: {source}")]
    Io {
        dir: String,
        #[source]
        source: std::io::Error,
    },
}

/// The shared store; cheap to clone.
#[derive(Debug, Clone)]
pub struct Spill {
    inner: Arc<Store>,
}

#[derive(Debug)]
struct Store {
    dir: PathBuf,
    max: u64,
    segment_bytes: u64,
    /// The segment new blocks go to, with the tail not written yet. Locked to append, to read
    /// from the tail and to write it out (one `pwrite` per [`PENDING_BYTES`]).
    current: Mutex<Option<Current>>,
    /// Bytes of every segment still referred to.
    live: Arc<AtomicU64>,
    created: AtomicU64,
    /// Set by the first failed write: the folder is not writable, say so once and stop trying.
    failed: AtomicBool,
}

#[derive(Debug)]
struct Current {
    segment: Arc<Segment>,
    /// Blocks appended to `segment` and not written yet, from offset `pending_at` on.
    pending: Vec<u8>,
    pending_at: u64,
}

impl Current {
    /// Writes the tail out; on failure it stays, so what it holds can still be read.
    fn flush(&mut self) -> std::io::Result<()> {
        if !self.pending.is_empty() {
            self.segment
                .file
                .write_all_at(&self.pending, self.pending_at)?;
            self.pending_at += self.pending.len() as u64;
            self.pending.clear();
        }
        Ok(())
    }
}

#[derive(Debug)]
struct Segment {
    /// Which segment of this store it is (the first is 0): how a chain of blocks names it.
    number: u64,
    file: File,
    /// Bytes reserved so far (the next block's offset).
    len: AtomicU64,
    live: Arc<AtomicU64>,
}

impl Drop for Segment {
    fn drop(&mut self) {
        // The file was unlinked when made: closing it frees its blocks.
        self.live
            .fetch_sub(self.len.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

/// One block of one exchange's frames, on disk.
#[derive(Debug)]
pub struct Extent {
    segment: Arc<Segment>,
    offset: u64,
    len: usize,
}

impl Spill {
    /// A store whose segments live in `dir` (created when missing), at most `max` bytes.
    pub fn new(dir: PathBuf, max: u64) -> Spill {
        Spill::with_segment_bytes(dir, max, SEGMENT_BYTES)
    }

    pub fn with_segment_bytes(dir: PathBuf, max: u64, segment_bytes: u64) -> Spill {
        Spill {
            inner: Arc::new(Store {
                dir,
                max,
                segment_bytes: segment_bytes.max(1),
                current: Mutex::new(None),
                live: Arc::new(AtomicU64::new(0)),
                created: AtomicU64::new(0),
                failed: AtomicBool::new(false),
            }),
        }
    }

    /// Bytes of segments on disk now (what `inspect.max_spill` bounds).
    pub fn live_bytes(&self) -> u64 {
        self.inner.live.load(Ordering::Relaxed)
    }

    /// Appends `block`; blocking I/O, so called from the analysis pool.
    pub fn append(&self, block: &[u8]) -> Result<Extent, SpillError> {
        if self.inner.failed.load(Ordering::Relaxed) {
            return Err(SpillError::Off);
        }
        let written = self.write(block, true);
        let written = written.unwrap_or_else(|| Err(self.io(std::io::Error::other("no segment"))));
        written.inspect_err(|error| {
            if matches!(error, SpillError::Io { .. })
                && !self.inner.failed.swap(true, Ordering::Relaxed)
            {
                tracing::warn!(%error, "held frames stay in memory from now on (inspect.max_held_recording bounds them)");
            }
        })
    }

    /// Appends `block` when that only joins the shared tail in memory; `None`, with nothing
    /// appended, when it would write (the tail is full, the segment is, or there is none yet)
    /// or wait for another append (which may be writing): the caller then appends it from the
    /// analysis pool ([`Spill::append`]). The refusals without I/O (`Full`, `Off`) are
    /// answered here.
    pub fn append_in_memory(&self, block: &[u8]) -> Option<Result<Extent, SpillError>> {
        if self.inner.failed.load(Ordering::Relaxed) {
            return Some(Err(SpillError::Off));
        }
        self.write(block, false)
    }

    /// The one append: with `io`, writing the tail or a new segment as needed (never `None`);
    /// without, `None` where it would have to.
    fn write(&self, block: &[u8], io: bool) -> Option<Result<Extent, SpillError>> {
        let store = &self.inner;
        let len = block.len() as u64;
        // Without I/O, without waiting either: the lock's holder may be writing the tail.
        let mut current = if io {
            store.current.lock().unwrap_or_else(|p| p.into_inner())
        } else {
            match store.current.try_lock() {
                Ok(current) => current,
                Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                Err(TryLockError::WouldBlock) => return None,
            }
        };
        if store.live.load(Ordering::Relaxed) + len > store.max {
            return Some(Err(SpillError::Full { max: store.max }));
        }
        let full = current
            .as_ref()
            .is_none_or(|c| c.segment.len.load(Ordering::Relaxed) + len > store.segment_bytes);
        let gathers = current.as_ref().is_some_and(|tail| {
            block.len() < PENDING_BYTES && tail.pending.len() + block.len() <= PENDING_BYTES
        });
        if !io && (full || !gathers) {
            return None;
        }
        if full {
            if let Some(old) = current.as_mut()
                && let Err(error) = old.flush()
            {
                return Some(Err(self.io(error)));
            }
            let segment = match self.segment() {
                Ok(segment) => segment,
                Err(error) => return Some(Err(error)),
            };
            *current = Some(Current {
                segment: Arc::new(segment),
                pending: Vec::new(),
                pending_at: 0,
            });
        }
        let tail = current.as_mut()?;
        if tail.pending.len() + block.len() > PENDING_BYTES
            && let Err(error) = tail.flush()
        {
            return Some(Err(self.io(error)));
        }
        let offset = tail.segment.len.fetch_add(len, Ordering::Relaxed);
        store.live.fetch_add(len, Ordering::Relaxed);
        if block.len() >= PENDING_BYTES {
            // Too big to gather: written at once (the tail is empty, so order is kept).
            let written = tail.segment.file.write_all_at(block, offset);
            tail.pending_at = offset + len;
            if let Err(error) = written {
                return Some(Err(self.io(error)));
            }
        } else {
            if tail.pending.capacity() == 0 {
                tail.pending.reserve_exact(PENDING_BYTES);
            }
            tail.pending.extend_from_slice(block);
        }
        Some(Ok(Extent {
            segment: Arc::clone(&tail.segment),
            offset,
            len: block.len(),
        }))
    }

    /// The block `extent` names, as appended: from the tail when not written yet, else from its
    /// segment (blocking I/O).
    pub fn read(&self, extent: &Extent) -> std::io::Result<Vec<u8>> {
        {
            let current = self.inner.current.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(tail) = current.as_ref()
                && Arc::ptr_eq(&tail.segment, &extent.segment)
                && extent.offset >= tail.pending_at
            {
                let start = usize::try_from(extent.offset - tail.pending_at)
                    .map_err(std::io::Error::other)?;
                return tail
                    .pending
                    .get(start..start + extent.len)
                    .map(<[u8]>::to_vec)
                    .ok_or_else(|| std::io::Error::other("block past the spill's tail"));
            }
        }
        let mut block = vec![0; extent.len];
        extent
            .segment
            .file
            .read_exact_at(&mut block, extent.offset)?;
        Ok(block)
    }

    fn segment(&self) -> Result<Segment, SpillError> {
        let store = &self.inner;
        std::fs::create_dir_all(&store.dir).map_err(|e| self.io(e))?;
        let n = store.created.fetch_add(1, Ordering::Relaxed);
        let path = store
            .dir
            .join(format!(".tooltap-spill-{}-{n}", std::process::id()));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| self.io(e))?;
        // Unlinked at once: the open handle is all that keeps it.
        std::fs::remove_file(&path).map_err(|e| self.io(e))?;
        Ok(Segment {
            number: n,
            file,
            len: AtomicU64::new(0),
            live: Arc::clone(&store.live),
        })
    }

    fn io(&self, source: std::io::Error) -> SpillError {
        SpillError::Io {
            dir: self.inner.dir.display().to_string(),
            source,
        }
    }
}

impl Extent {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The number of its segment (see [`Extent::sibling`]).
    pub fn segment_number(&self) -> u64 {
        self.segment.number
    }

    /// Another block of the same segment, named by its place.
    pub fn sibling(&self, offset: u64, len: usize) -> Extent {
        Extent {
            segment: Arc::clone(&self.segment),
            offset,
            len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> crate::test_dir::TestDir {
        crate::test_dir::TestDir::new(&format!("spill-{name}"))
    }

    #[test]
    fn blocks_come_back_as_appended_and_leave_no_file() {
        let dir = dir("back");
        let spill = Spill::with_segment_bytes(dir.to_path_buf(), 1 << 20, 10);
        let a = spill.append(b"hello").expect("a");
        let b = spill.append(b"world!").expect("b");
        let c = spill.append(b"again").expect("c");
        assert_eq!(spill.read(&a).expect("read a"), b"hello");
        assert_eq!(spill.read(&b).expect("read b"), b"world!");
        assert_eq!(spill.read(&c).expect("read c"), b"again");
        assert_eq!(spill.live_bytes(), 16);
        let names: Vec<_> = std::fs::read_dir(&dir).expect("dir").flatten().collect();
        assert!(names.is_empty(), "segments are unlinked: {names:?}");
        drop((a, b));
        // "hello" + "world!" filled the first segment: freed once nothing refers to it.
        assert_eq!(spill.live_bytes(), 5);
        drop(c);
        // The current segment is still held by the store for the next append.
        assert_eq!(spill.live_bytes(), 5);
    }

    #[test]
    fn past_the_bound_appends_are_refused() {
        let dir = dir("full");
        let spill = Spill::new(dir.to_path_buf(), 8);
        let kept = spill.append(b"12345678").expect("fits");
        assert!(matches!(
            spill.append(b"9"),
            Err(SpillError::Full { max: 8 })
        ));
        drop(kept);
    }

    #[test]
    fn in_memory_appends_join_the_tail_and_refuse_whatever_would_write_or_wait() {
        let dir = dir("in-memory");
        let spill = Spill::new(dir.to_path_buf(), 1 << 30);
        let block = vec![3u8; 1000];
        assert!(
            spill.append_in_memory(&block).is_none(),
            "no segment yet: making one is I/O"
        );
        assert_eq!(spill.live_bytes(), 0, "a refusal appends nothing");
        let mut extents = vec![spill.append(&block).expect("made on the pool")];
        while let Some(appended) = spill.append_in_memory(&block) {
            extents.push(appended.expect("joins the tail"));
        }
        // The tail holds PENDING_BYTES at most: the next block would write it out.
        assert_eq!(extents.len(), PENDING_BYTES / block.len());
        extents.push(spill.append(&block).expect("writes the tail, on the pool"));
        extents.push(
            spill
                .append_in_memory(&block)
                .expect("the new tail has room")
                .expect("appended"),
        );
        assert!(
            spill.append_in_memory(&vec![0; PENDING_BYTES]).is_none(),
            "written at once"
        );
        // Another append holding the lock may be writing: no waiting for it.
        let held = spill.inner.current.lock().expect("lock");
        assert!(spill.append_in_memory(&block).is_none());
        drop(held);
        for extent in &extents {
            assert_eq!(spill.read(extent).expect("read"), block);
        }
        assert_eq!(spill.live_bytes(), (extents.len() * block.len()) as u64);
        // Full and off are answered without I/O.
        let small = Spill::new(dir.join("small"), 10);
        drop(small.append(b"0123456789").expect("fits"));
        assert!(matches!(
            small.append_in_memory(b"x"),
            Some(Err(SpillError::Full { max: 10 }))
        ));
    }

    #[test]
    fn blocks_come_back_from_the_shared_tail_and_from_disk_alike() {
        let dir = dir("tail");
        let spill = Spill::new(dir.to_path_buf(), 1 << 30);
        let blocks: Vec<Vec<u8>> = (0..300usize)
            .map(|i| vec![(i % 251) as u8; 1 + (i * 37) % 2_000])
            .collect();
        let total: usize = blocks.iter().map(Vec::len).sum();
        assert!(
            total > 3 * PENDING_BYTES,
            "most blocks must have been written out"
        );
        let big = vec![7u8; PENDING_BYTES + 5];
        let mut extents: Vec<Extent> = blocks
            .iter()
            .map(|block| spill.append(block).expect("append"))
            .collect();
        extents.push(spill.append(&big).expect("a block larger than the tail"));
        let after = spill.append(b"after").expect("after");
        for (n, (extent, block)) in extents.iter().zip(blocks.iter().chain([&big])).enumerate() {
            assert_eq!(&spill.read(extent).expect("read"), block, "block {n}");
        }
        assert_eq!(spill.read(&after).expect("read after"), b"after");
        assert_eq!(spill.live_bytes(), (total + big.len() + 5) as u64);
    }
}
