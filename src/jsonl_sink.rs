//! An append-only JSON Lines file written off the client path: the violations file.
//!
//! Inspector tasks hand finished lines to [`JsonlSink::append`], which never blocks: lines go
//! through a bounded channel to one writer thread that owns the file (opened with `O_APPEND`,
//! created readable by its owner only, never truncated or rewritten). A full channel drops the
//! batch and counts it; a write error (full disk, read-only directory, a path that is a
//! directory) is counted in metrics and logged at most once a minute, and the thread keeps
//! trying on later batches, so a disk that comes back is used again. Traffic never waits on it.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use crate::metrics::Metrics;

/// Batches waiting for the writer thread before new ones are dropped.
const QUEUE: usize = 4096;
/// Write failures are logged at most this often.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// The sending side; cheap to clone.
#[derive(Clone, Debug)]
pub struct JsonlSink {
    tx: mpsc::Sender<Msg>,
}

impl JsonlSink {
    /// Start the writer thread for `path`. The file is opened lazily, on the first batch, so a
    /// path that is unwritable at start-up is reported the same way as one that becomes so.
    /// `target` names the sink in metrics and logs (e.g. `violations`).
    pub fn spawn(path: PathBuf, target: &'static str, metrics: Arc<Metrics>) -> JsonlSink {
        let (tx, rx) = mpsc::channel(QUEUE);
        let writer = Writer {
            path,
            target,
            metrics,
            file: None,
            last_logged: None,
        };
        let spawned = std::thread::Builder::new()
            .name(format!("tooltap-{target}"))
            .spawn(move || writer.run(rx));
        if let Err(error) = spawned {
            tracing::error!(target_file = target, %error, "could not start the writer thread; lines will be dropped");
        }
        JsonlSink { tx }
    }

    /// Queue whole lines (without their newline). Never blocks; drops and counts when full.
    pub fn append(&self, lines: Vec<String>) {
        if lines.is_empty() {
            return;
        }
        if self.tx.try_send(Msg::Lines(lines)).is_err() {
            tracing::debug!("jsonl sink queue full or closed; batch dropped");
        }
    }

    /// Wait until every batch queued so far is written (for shutdown and tests).
    pub async fn flush(&self) {
        let (done_tx, done_rx) = oneshot::channel();
        if self.tx.send(Msg::Flush(done_tx)).await.is_ok() {
            let _ = done_rx.await;
        }
    }
}

/// What the writer thread receives.
#[derive(Debug)]
enum Msg {
    Lines(Vec<String>),
    /// Answered once every message before it is written.
    Flush(oneshot::Sender<()>),
}

struct Writer {
    path: PathBuf,
    target: &'static str,
    metrics: Arc<Metrics>,
    file: Option<BufWriter<File>>,
    last_logged: Option<Instant>,
}

impl Writer {
    fn run(mut self, mut rx: mpsc::Receiver<Msg>) {
        while let Some(msg) = rx.blocking_recv() {
            match msg {
                Msg::Flush(done) => {
                    let _ = done.send(());
                }
                Msg::Lines(batch) => {
                    if let Err(error) = self.write(&batch) {
                        self.file = None; // reopen next time: the directory may come back
                        self.failed(&error);
                    }
                }
            }
        }
    }

    fn write(&mut self, batch: &[String]) -> std::io::Result<()> {
        if self.file.is_none() {
            self.file = Some(BufWriter::new(open_append(&self.path)?));
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        for line in batch {
            file.write_all(line.as_bytes())?;
            file.write_all(b"\n")?;
        }
        file.flush()
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

/// Open for appending, creating parent folders, with owner-only permissions on a new file.
fn open_append(path: &Path) -> std::io::Result<File> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

#[cfg(test)]
#[path = "jsonl_sink_tests.rs"]
mod tests;
