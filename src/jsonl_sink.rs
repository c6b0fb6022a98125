//! An append-only JSON Lines file written off the client path: the violations file.
//!
//! Inspector tasks hand finished lines to [`JsonlSink::append`], which never blocks: lines go
//! to one writer thread ([`WriterThread`], bounded by queued batches) that owns the file (opened with `O_APPEND`,
//! created readable by its owner only, never truncated or rewritten). A full channel drops the
//! batch and counts it; a write error (full disk, read-only directory, a path that is a
//! directory) is counted in metrics and logged at most once a minute, and the thread keeps
//! trying on later batches, so a disk that comes back is used again. Traffic never waits on it.
//!
//! The file is bounded by [`Rotation`]: once a batch would take it past `max_bytes` it is
//! renamed `<path>.1` (older ones shift to `.2` ... `.keep`, the oldest beyond `keep` is
//! deleted and counted in `tooltap_limit_hits_total{limit="violations_rotated"}`) and a new
//! file is started. Before every batch the writer checks that `<path>` is still the file it
//! holds open; when something else deleted, renamed or replaced it (logrotate, a cleanup job,
//! a hand), the path is reopened, so no line is ever written to a deleted inode.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::metrics::Metrics;
use crate::writer_thread::{Drain, WriterThread};

/// Batches waiting for the writer thread before new ones are dropped.
const QUEUE: usize = 4096;
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
pub struct JsonlSink {
    thread: WriterThread<Vec<String>>,
}

impl JsonlSink {
    /// Start the writer thread for `path`. The file is opened lazily, on the first batch, so a
    /// path that is unwritable at start-up is reported the same way as one that becomes so.
    /// `target` names the sink in metrics and logs (e.g. `violations`).
    pub fn spawn(path: PathBuf, target: &'static str, metrics: Arc<Metrics>) -> JsonlSink {
        JsonlSink::spawn_with(path, target, metrics, Rotation::default())
    }

    /// [`JsonlSink::spawn`] with an explicit size bound.
    pub fn spawn_with(
        path: PathBuf,
        target: &'static str,
        metrics: Arc<Metrics>,
        rotation: Rotation,
    ) -> JsonlSink {
        let writer = Writer {
            path,
            target,
            metrics,
            rotation,
            file: None,
            last_logged: None,
        };
        JsonlSink {
            thread: WriterThread::spawn(target, QUEUE, Duration::ZERO, writer),
        }
    }

    /// Queue whole lines (without their newline). Never blocks; drops and counts when full.
    pub fn append(&self, lines: Vec<String>) {
        if lines.is_empty() {
            return;
        }
        if !self.thread.try_send(lines, 1) {
            tracing::debug!("jsonl sink queue full or closed; batch dropped");
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
}

/// The file being appended to, its identity and how many bytes it holds.
struct Open {
    writer: BufWriter<File>,
    id: FileId,
    len: u64,
}

impl Drain for Writer {
    type Msg = Vec<String>;

    fn take(&mut self, batch: Vec<String>) {
        if let Err(error) = self.write(&batch) {
            self.file = None; // reopen next time: the directory may come back
            self.failed(&error);
        }
    }

    /// Every batch is flushed as it is written.
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
        for line in batch {
            open.writer.write_all(line.as_bytes())?;
            open.writer.write_all(b"\n")?;
        }
        open.len += size;
        open.writer.flush()
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
        writer: BufWriter::new(file),
    })
}

/// Open for appending, creating parent folders, with owner-only permissions on a new file.
fn open_append(path: &Path) -> std::io::Result<File> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    crate::record::layout::owner_only()
        .create(true)
        .append(true)
        .open(path)
}

#[cfg(test)]
mod tests;
