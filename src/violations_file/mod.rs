//! An append-only JSON Lines file written off the client path: the violations file.
//!
//! Inspector tasks hand finished lines to [`ViolationsFile::append`], which never blocks: lines go to
//! one writer thread ([`WriterThread`], bounded by queued batches) that owns the file (opened with
//! `O_APPEND`, created readable by its owner only, never truncated or rewritten). A full channel
//! drops the batch (logged at `debug`; no metric counts it); a write error (full disk, read-only
//! directory, a path that is a directory) is counted in metrics and logged at most once a minute,
//! and the thread keeps trying on later batches, so a disk that comes back is used again. Traffic
//! never waits on it.
//! Each batch is one write; one that fails part-way (a full disk) is cut back to the last whole
//! line, or, failing that, the next batch starts with a newline: the file stays JSON Lines
//! (the part-written line and the next one are never glued together).
//!
//! The file is bounded by [`Rotation`]: once a batch would take it past `max_bytes` it is
//! renamed `<path>.1` (older ones shift to `.2` ... `.keep`, the oldest beyond `keep` is
//! deleted and counted in `tooltap_limit_hits_total{limit="violations_rotated"}`) and a new
//! file is started. Before every batch the writer checks that `<path>` is still the file it
//! holds open; when something else deleted, renamed or replaced it (logrotate, a cleanup job,
//! a hand), the path is reopened, so no line is ever written to a deleted inode.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::metrics::Metrics;
use crate::writer_thread::{Drain, WriterThread};

/// Batches waiting for the writer thread before new ones are dropped.
const QUEUE: usize = 4096;
/// A batch buffer that grew past this is given back.
const KEPT_SCRATCH: usize = 64 * 1024;
/// Write failures are logged at most this often.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// How large the file may grow and how many rotated files are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    /// Bytes after which the file is rotated (a batch is never split across files).
    pub max_bytes: u64,
    /// Rotated files kept (`<path>.1` newest ... `<path>.<keep>` oldest); 0 keeps none.
    pub keep: usize,
}

impl Default for Rotation {
    /// 64 MiB × (1 + 4): at most ~320 MiB of violations on disk.
    fn default() -> Self {
        Rotation {
            max_bytes: 64 * 1024 * 1024,
            keep: 4,
        }
    }
}

/// The sending side; cheap to clone.
#[derive(Clone, Debug)]
pub struct ViolationsFile {
    thread: WriterThread<Vec<String>>,
    /// The writer's test seam (see `Writer::fail_after`).
    #[cfg(test)]
    fail_after: Arc<std::sync::Mutex<Option<usize>>>,
}

impl ViolationsFile {
    /// Start the writer thread for `path`. The file is opened lazily, on the first batch, so a
    /// path that is unwritable at start-up is reported the same way as one that becomes so.
    /// `target` names the file in metrics and logs (e.g. `violations`).
    pub fn spawn(path: PathBuf, target: &'static str, metrics: Arc<Metrics>) -> ViolationsFile {
        ViolationsFile::spawn_with(path, target, metrics, Rotation::default())
    }

    /// [`ViolationsFile::spawn`] with an explicit size bound.
    pub fn spawn_with(
        path: PathBuf,
        target: &'static str,
        metrics: Arc<Metrics>,
        rotation: Rotation,
    ) -> ViolationsFile {
        #[cfg(test)]
        let fail_after = Arc::default();
        let writer = Writer {
            path,
            target,
            metrics,
            rotation,
            file: None,
            last_logged: None,
            scratch: Vec::new(),
            #[cfg(test)]
            fail_after: Arc::clone(&fail_after),
        };
        ViolationsFile {
            thread: WriterThread::spawn(target, QUEUE, Duration::ZERO, writer),
            #[cfg(test)]
            fail_after,
        }
    }

    /// Queue whole lines (without their newline). Never blocks; drops the batch when full.
    pub fn append(&self, lines: Vec<String>) {
        if lines.is_empty() {
            return;
        }
        if !self.thread.try_send(lines, 1) {
            tracing::debug!("violations file queue full or closed; batch dropped");
        }
    }

    /// Wait until every batch queued so far is written (for shutdown and tests).
    pub async fn flush(&self) {
        self.thread.flush().await;
    }
}

struct Writer {
    path: PathBuf,
    target: &'static str,
    metrics: Arc<Metrics>,
    rotation: Rotation,
    file: Option<Open>,
    last_logged: Option<Instant>,
    /// Each batch's bytes, assembled before its one write.
    scratch: Vec<u8>,
    /// Test seam: the next write stops after this many bytes with `ENOSPC` (a full disk).
    #[cfg(test)]
    fail_after: Arc<std::sync::Mutex<Option<usize>>>,
}

/// The file being appended to, its identity and how many bytes it holds.
struct Open {
    file: File,
    id: FileId,
    len: u64,
    /// Whether the file ends with a newline (or is empty); when not (a partial line that could
    /// not be cut back), the next batch starts with one.
    ends_whole: bool,
}

impl Drain for Writer {
    type Msg = Vec<String>;

    fn take(&mut self, batch: Vec<String>) {
        if let Err(error) = self.write(&batch) {
            self.file = None; // reopen next time: the directory may come back
            self.failed(&error);
        }
        if self.scratch.capacity() > KEPT_SCRATCH {
            self.scratch = Vec::new();
        }
    }

    /// Every batch is written whole as it comes.
    fn flush(&mut self) {}
}

impl Writer {
    fn write(&mut self, batch: &[String]) -> std::io::Result<()> {
        let size: u64 = batch.iter().map(|line| line.len() as u64 + 1).sum();
        if self
            .file
            .as_ref()
            .is_some_and(|open| file_id(&self.path).ok() != Some(open.id))
        {
            // Deleted, renamed or replaced under us: never keep writing to a lost inode.
            self.file = None;
            self.metrics.limit_hit("file_reopened", self.target);
        }
        if self.file.is_none() {
            self.file = Some(open(&self.path)?);
        }
        if self
            .file
            .as_ref()
            .is_some_and(|open| open.len > 0 && open.len + size > self.rotation.max_bytes)
        {
            self.file = None;
            self.rotate()?;
            self.file = Some(open(&self.path)?);
        }
        let Some(open) = self.file.as_mut() else {
            return Ok(());
        };
        self.scratch.clear();
        if !open.ends_whole {
            self.scratch.push(b'\n');
            self.metrics.limit_hit("partial_line", self.target);
        }
        for line in batch {
            self.scratch.extend_from_slice(line.as_bytes());
            self.scratch.push(b'\n');
        }
        #[cfg(test)]
        let written = injected(&self.fail_after, &mut open.file, &self.scratch);
        #[cfg(not(test))]
        let written = open.file.write_all(&self.scratch);
        match written {
            Ok(()) => {
                open.len += self.scratch.len() as u64;
                open.ends_whole = true;
                Ok(())
            }
            Err(error) => {
                repair(open, &self.metrics, self.target);
                Err(error)
            }
        }
    }

    /// `<path>` → `<path>.1` → ... → `<path>.<keep>`; what falls off the end is deleted.
    fn rotate(&mut self) -> std::io::Result<()> {
        let numbered = |n: usize| {
            let mut name = self.path.clone().into_os_string();
            name.push(format!(".{n}"));
            PathBuf::from(name)
        };
        if self.rotation.keep == 0 {
            std::fs::remove_file(&self.path)?;
        } else {
            for n in (1..self.rotation.keep).rev() {
                match std::fs::rename(numbered(n), numbered(n + 1)) {
                    Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                        return Err(error);
                    }
                    _ => {}
                }
            }
            std::fs::rename(&self.path, numbered(1))?;
        }
        self.metrics.limit_hit("violations_rotated", self.target);
        Ok(())
    }

    fn failed(&mut self, error: &std::io::Error) {
        self.metrics.recording_failure(self.target);
        let due = self.last_logged.is_none_or(|t| t.elapsed() >= LOG_EVERY);
        if due {
            self.last_logged = Some(Instant::now());
            tracing::error!(
                target_file = self.target,
                path = %self.path.display(),
                %error,
                "cannot write; traffic is unaffected, lines are dropped (logged at most once a minute)"
            );
        }
    }
}

/// Which file a path names: device and inode where the platform has them.
type FileId = (u64, u64);

#[cfg(unix)]
fn id_of(meta: &std::fs::Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn id_of(meta: &std::fs::Metadata) -> FileId {
    (0, 0)
}

fn file_id(path: &Path) -> std::io::Result<FileId> {
    std::fs::metadata(path).map(|meta| id_of(&meta))
}

fn open(path: &Path) -> std::io::Result<Open> {
    let file = open_append(path)?;
    let meta = file.metadata()?;
    Ok(Open {
        id: id_of(&meta),
        len: meta.len(),
        ends_whole: ends_whole(&file, meta.len()),
        file,
    })
}

/// After a failed write (a full disk): the part of the batch that reached the file is cut
/// back, so the file ends where the last whole batch did; when that cannot be done, the file is
/// marked to start its next batch with a newline. Either way every line in it stays whole JSON.
/// Counted as `limit="partial_line"` (once here when cut back, once at the newline otherwise).
fn repair(open: &mut Open, metrics: &Metrics, target: &'static str) {
    let now = open.file.metadata().map(|meta| meta.len());
    match now {
        Ok(len) if len == open.len => {}
        Ok(len) if len > open.len && open.file.set_len(open.len).is_ok() => {
            metrics.limit_hit("partial_line", target);
        }
        Ok(len) => {
            open.len = len;
            open.ends_whole = ends_whole(&open.file, len);
        }
        Err(_) => open.ends_whole = false,
    }
}

/// Whether the file's last byte is a newline (an empty file is whole).
#[cfg(unix)]
fn ends_whole(file: &File, len: u64) -> bool {
    use std::os::unix::fs::FileExt;
    if len == 0 {
        return true;
    }
    let mut last = [0u8];
    file.read_at(&mut last, len - 1)
        .is_ok_and(|read| read == 1 && last[0] == b'\n')
}

/// Without positioned reads the file is assumed whole.
#[cfg(not(unix))]
fn ends_whole(_file: &File, _len: u64) -> bool {
    true
}

/// The test seam's write: with `fail_after` set, writes that many bytes of `bytes`, then fails
/// as a full disk does.
#[cfg(test)]
fn injected(
    fail_after: &std::sync::Mutex<Option<usize>>,
    file: &mut File,
    bytes: &[u8],
) -> std::io::Result<()> {
    let cut = fail_after.lock().map(|mut cut| cut.take()).unwrap_or(None);
    match cut {
        Some(cut) => {
            file.write_all(&bytes[..cut.min(bytes.len())])?;
            Err(std::io::Error::from_raw_os_error(28)) // ENOSPC
        }
        None => file.write_all(bytes),
    }
}

/// Open for appending, creating parent folders, with owner-only permissions on a new file.
fn open_append(path: &Path) -> std::io::Result<File> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    // Readable too: whether the file ends in a whole line is read from its last byte.
    crate::record::layout::owner_only()
        .create(true)
        .read(true)
        .append(true)
        .open(path)
}

#[cfg(test)]
mod tests;
