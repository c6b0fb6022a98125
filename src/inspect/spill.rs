//! Where held recording frames go once an exchange holds more than a few KiB: one append-only
//! segment file shared by every exchange, so that what a `violations`-mode exchange keeps in
//! memory until its verdict does not grow with the length of its stream.
//!
//! Input: blocks of encoded frames from each exchange's held tape (`inspect::held`), appended
//! from the analysis pool (never a worker thread, never the client path). Output: an
//! [`Extent`] per block (the segment, an offset, a length: all an exchange keeps of it), read
//! back only when the exchange turned out to have violations.
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
use std::sync::{Arc, Mutex};

/// A segment is closed to new appends past this size.
pub const SEGMENT_BYTES: u64 = 32 * 1024 * 1024;

/// Bytes of spill segments on disk, unless configured otherwise.
pub const DEFAULT_MAX_SPILL: u64 = 1024 * 1024 * 1024;

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
    /// The segment new blocks go to. Locked only to pick an offset (never across I/O).
    current: Mutex<Option<Arc<Segment>>>,
    /// Bytes of every segment still referred to.
    live: Arc<AtomicU64>,
    created: AtomicU64,
    /// Set by the first failed write: the folder is not writable, say so once and stop trying.
    failed: AtomicBool,
}

#[derive(Debug)]
struct Segment {
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
        self.write(block).inspect_err(|error| {
            if matches!(error, SpillError::Io { .. })
                && !self.inner.failed.swap(true, Ordering::Relaxed)
            {
                tracing::warn!(%error, "held frames stay in memory from now on (inspect.max_held_recording bounds them)");
            }
        })
    }

    fn write(&self, block: &[u8]) -> Result<Extent, SpillError> {
        let store = &self.inner;
        let len = block.len() as u64;
        let (segment, offset) = {
            let mut current = store.current.lock().unwrap_or_else(|p| p.into_inner());
            let full = current
                .as_ref()
                .is_none_or(|s| s.len.load(Ordering::Relaxed) + len > store.segment_bytes);
            if store.live.load(Ordering::Relaxed) + len > store.max {
                return Err(SpillError::Full { max: store.max });
            }
            if full {
                *current = Some(Arc::new(self.segment()?));
            }
            let Some(segment) = current.as_ref() else {
                return Err(self.io(std::io::Error::other("no segment")));
            };
            let offset = segment.len.fetch_add(len, Ordering::Relaxed);
            store.live.fetch_add(len, Ordering::Relaxed);
            (Arc::clone(segment), offset)
        };
        segment
            .file
            .write_all_at(block, offset)
            .map_err(|e| self.io(e))?;
        Ok(Extent {
            segment,
            offset,
            len: block.len(),
        })
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
    /// The block as it was appended; blocking I/O.
    pub fn read(&self) -> std::io::Result<Vec<u8>> {
        let mut block = vec![0; self.len];
        self.segment.file.read_exact_at(&mut block, self.offset)?;
        Ok(block)
    }

    pub fn len(&self) -> usize {
        self.len
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
        assert_eq!(a.read().expect("read a"), b"hello");
        assert_eq!(b.read().expect("read b"), b"world!");
        assert_eq!(c.read().expect("read c"), b"again");
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
}
