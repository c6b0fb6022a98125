//! The uploader: finished recordings move from the local spool folder to object storage.
//!
//! Input: [`Notifier::ready`] from the recorder's writer thread for each recording it published
//! and each segment it closed (a path in the spool and its size), and a rescan of the spool
//! every [`RESCAN`] for what the notices missed: recordings a previous run left, and those the
//! queue had no room for. Output: one create-only `PUT` per file, at its path under the prefix;
//! the local file is deleted once stored.
//!
//! Nothing here is on the client path: the writer thread only `try_send`s a notice, and the
//! uploader runs on its own thread (`tooltap-uploader`, a current-thread runtime). Bounds:
//! - the upload queue (`record.s3.max_queued_bytes`): bytes of recordings accepted for upload,
//!   waiting or being sent (only those being sent are in memory). A recording that does not fit
//!   stays in the spool, counted `spilled`, and is taken up by a later rescan;
//! - the spool (`record.s3.max_spool_bytes`): when the store is down, recordings accumulate there;
//!   past the bound the oldest waiting ones are deleted, counted `dropped`.
//!
//! A failed upload (`failed`) leaves the file in the spool and pauses uploads for a backoff that
//! doubles from [`BACKOFF_MIN`] to [`BACKOFF_MAX`]; the first success resets it. A key already
//! taken (create-only: another replica's recording, never overwritten) is retried once under a
//! name with this process's random part (`renamed`); taken again, it is this process's own
//! earlier upload and the local copy is deleted. Counted in
//! `tooltap_recording_uploads_total{outcome}`.

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use object_store::{ObjectStore, PutMode, PutOptions, PutPayload};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

use super::{StoreConfig, StoreUrl};
use crate::metrics::Metrics;

/// Notices waiting for the uploader; past this many, a notice is dropped (the file stays in the
/// spool, counted `spilled`, and the next rescan finds it).
const NOTICES: usize = 4096;
/// Uploads in flight at once.
const CONCURRENCY: usize = 4;
/// How often the spool is walked for recordings the notices did not bring.
const RESCAN: Duration = Duration::from_secs(2);
/// How often the writer thread is woken to close segments that reached [`SEGMENT_AGE`].
const TICK: Duration = Duration::from_secs(1);
/// A segment is closed (and uploaded) once it is this old, however small it is.
pub const SEGMENT_AGE: Duration = Duration::from_secs(10);
/// A rescan takes only files unmodified for this long: a segment still open is written to at
/// least this often, or closed by age first.
const QUIET: Duration = Duration::from_secs(15);
/// One upload (reading the file and the `PUT`) gives up after this long.
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(30);
const BACKOFF_MIN: Duration = Duration::from_millis(500);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// What the writer thread and the recorder send.
enum Notice {
    Ready {
        path: PathBuf,
        size: u64,
    },
    /// Answered once everything noticed so far is stored, or an upload failed (the rest then
    /// waits in the spool for the next run).
    Flush(oneshot::Sender<()>),
}

/// The writer thread's side: a non-blocking notice per finished file.
#[derive(Clone)]
pub struct Notifier {
    tx: mpsc::Sender<Notice>,
    metrics: Arc<Metrics>,
}

impl Notifier {
    /// A file in the spool is complete and may be uploaded. Never blocks.
    pub fn ready(&self, path: PathBuf, size: u64) {
        if let Err(mpsc::error::TrySendError::Full(_)) =
            self.tx.try_send(Notice::Ready { path, size })
        {
            self.metrics.recording_upload("spilled");
        }
    }

    /// Waits until what was noticed so far is stored, or the store failed.
    pub async fn flush(&self) {
        let (done, flushed) = oneshot::channel();
        if self.tx.send(Notice::Flush(done)).await.is_ok() {
            let _ = flushed.await;
        }
    }
}

/// Starts the uploader thread; `tick` is called every [`TICK`] from it (the recorder wakes its
/// writer thread with it, to close segments by age). A store that cannot be set up is logged
/// and every recording then stays in the spool (bounded, counted).
pub fn spawn(
    config: StoreConfig,
    metrics: Arc<Metrics>,
    tick: impl Fn() + Send + 'static,
) -> Notifier {
    let (tx, rx) = mpsc::channel(NOTICES);
    let notifier = Notifier {
        tx,
        metrics: metrics.clone(),
    };
    let spawned = std::thread::Builder::new()
        .name("tooltap-uploader".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            let settings = config
                .settings
                .clone()
                .with_env(|name| std::env::var(name).ok());
            let store = super::open(&config.url, &settings);
            match (runtime, store) {
                (Ok(runtime), Ok(store)) => {
                    let uploader = Uploader::new(config, store, metrics);
                    runtime.block_on(uploader.run(rx, tick));
                }
                (Err(error), _) => {
                    tracing::error!(%error, "cannot start the uploader's runtime; recordings stay in the spool");
                }
                (_, Err(error)) => {
                    tracing::error!(%error, "cannot set up object storage; recordings stay in the spool");
                }
            }
        });
    if let Err(error) = spawned {
        tracing::error!(%error, "cannot start the uploader thread; recordings stay in the spool");
    }
    notifier
}

/// How one upload ended.
enum Uploaded {
    Stored,
    /// Stored under another key: the first was taken by another writer.
    Renamed,
    /// The key and this process's variant were both taken: an earlier upload of this file.
    AlreadyStored,
}

struct Uploader {
    url: StoreUrl,
    spool: PathBuf,
    store: Arc<dyn ObjectStore>,
    metrics: Arc<Metrics>,
    max_queued: u64,
    max_spool: u64,
    /// Accepted, not yet sent: oldest first.
    waiting: VecDeque<(PathBuf, u64)>,
    /// Waiting or in flight, so a rescan does not take them twice.
    known: HashSet<PathBuf>,
    /// Bytes of `waiting` and in-flight uploads together.
    queued: u64,
    paused_until: Option<Instant>,
    backoff: Duration,
    flushes: Vec<oneshot::Sender<()>>,
}

type Finished = (PathBuf, u64, Result<Uploaded, String>);

impl Uploader {
    fn new(config: StoreConfig, store: Arc<dyn ObjectStore>, metrics: Arc<Metrics>) -> Uploader {
        Uploader {
            url: config.url,
            spool: config.spool,
            store,
            metrics,
            max_queued: config.max_queued_bytes,
            max_spool: config.max_spool_bytes,
            waiting: VecDeque::new(),
            known: HashSet::new(),
            queued: 0,
            paused_until: None,
            backoff: BACKOFF_MIN,
            flushes: Vec::new(),
        }
    }

    async fn run(mut self, mut rx: mpsc::Receiver<Notice>, tick: impl Fn()) {
        let mut in_flight: JoinSet<Finished> = JoinSet::new();
        let mut ticks = tokio::time::interval(TICK);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first rescan is at once: what a previous run left goes first.
        let mut next_rescan = Instant::now();
        loop {
            tokio::select! {
                notice = rx.recv() => match notice {
                    Some(Notice::Ready { path, size }) => {
                        self.accept(path, size, true);
                    }
                    Some(Notice::Flush(done)) => self.flushes.push(done),
                    None => break,
                },
                Some(finished) = in_flight.join_next(), if !in_flight.is_empty() => {
                    if let Ok(finished) = finished {
                        self.finished(finished);
                    }
                }
                _ = ticks.tick() => {
                    tick();
                    if Instant::now() >= next_rescan {
                        self.rescan();
                        next_rescan = Instant::now() + RESCAN;
                    }
                }
            }
            self.start_uploads(&mut in_flight);
            let paused = self
                .paused_until
                .is_some_and(|until| Instant::now() < until);
            if (self.waiting.is_empty() && in_flight.is_empty()) || paused {
                for done in self.flushes.drain(..) {
                    let _ = done.send(());
                }
            }
        }
        // Every sender is gone (the process is ending): what is in flight may finish.
        while let Some(finished) = in_flight.join_next().await {
            if let Ok(finished) = finished {
                self.finished(finished);
            }
        }
    }

    /// Takes a file into the queue when it fits (one file always fits an empty queue); else it
    /// stays in the spool for a later rescan, counted `spilled` when it came by notice.
    fn accept(&mut self, path: PathBuf, size: u64, noticed: bool) -> bool {
        if self.known.contains(&path) {
            return true;
        }
        if self.queued > 0 && self.queued + size > self.max_queued {
            if noticed {
                self.metrics.recording_upload("spilled");
            }
            return false;
        }
        self.queued += size;
        self.known.insert(path.clone());
        self.waiting.push_back((path, size));
        true
    }

    fn start_uploads(&mut self, in_flight: &mut JoinSet<Finished>) {
        if self
            .paused_until
            .is_some_and(|until| Instant::now() < until)
        {
            return;
        }
        while in_flight.len() < CONCURRENCY {
            let Some((path, size)) = self.waiting.pop_front() else {
                return;
            };
            let Some(key) = self.key_of(&path) else {
                // Not under the spool (cannot happen: the writer writes only there).
                self.forget(&path, size);
                continue;
            };
            let store = self.store.clone();
            in_flight.spawn(async move {
                let result = tokio::time::timeout(UPLOAD_TIMEOUT, upload(&*store, &path, &key))
                    .await
                    .unwrap_or_else(|_| Err("timed out".to_string()));
                (path, size, result)
            });
        }
    }

    fn finished(&mut self, (path, size, result): Finished) {
        self.forget(&path, size);
        match result {
            Ok(outcome) => {
                self.metrics.recording_upload(match outcome {
                    Uploaded::Stored | Uploaded::AlreadyStored => "uploaded",
                    Uploaded::Renamed => "renamed",
                });
                self.paused_until = None;
                self.backoff = BACKOFF_MIN;
                let _ = std::fs::remove_file(&path);
            }
            // Gone from the spool (deleted by hand): nothing left to store.
            Err(_) if !path.exists() => {}
            Err(error) => {
                self.metrics.recording_upload("failed");
                self.metrics.recording_failure("recordings_upload");
                if self.paused_until.is_none() {
                    tracing::warn!(
                        path = %path.display(),
                        %error,
                        retry_in = ?self.backoff,
                        "cannot upload a recording; it waits in the spool (traffic is unaffected)"
                    );
                }
                self.paused_until = Some(Instant::now() + self.backoff);
                self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
                // Back to the queue's head: it goes first once the store answers again.
                if self.known.insert(path.clone()) {
                    self.queued += size;
                    self.waiting.push_front((path, size));
                }
            }
        }
    }

    fn forget(&mut self, path: &Path, size: u64) {
        self.known.remove(path);
        self.queued = self.queued.saturating_sub(size);
    }

    /// Walks the spool: takes what fits of the files no notice brought (oldest first), and
    /// deletes the oldest waiting files while the spool is over its bound.
    fn rescan(&mut self) {
        let found = crate::record::prune::recordings_under(&self.spool, 0);
        let now = SystemTime::now();
        let mut total: u64 = found.iter().map(|(_, _, size)| size).sum();
        let mut kept = Vec::new();
        for (modified, path, size) in found {
            if total > self.max_spool && !self.known.contains(&path) {
                if std::fs::remove_file(&path).is_ok() {
                    self.metrics.recording_upload("dropped");
                    self.metrics.limit_hit("recordings_spool", "recordings");
                }
                total = total.saturating_sub(size);
                continue;
            }
            kept.push((modified, path, size));
        }
        for (modified, path, size) in kept {
            let quiet = now.duration_since(modified).is_ok_and(|age| age >= QUIET);
            if quiet && !self.accept(path, size, false) {
                break;
            }
        }
    }

    fn key_of(&self, path: &Path) -> Option<object_store::path::Path> {
        let relative = path.strip_prefix(&self.spool).ok()?;
        let parts: Vec<&str> = relative
            .components()
            .map(|part| part.as_os_str().to_str())
            .collect::<Option<_>>()?;
        Some(self.url.key(&parts.join("/")))
    }
}

/// Reads one file and stores it create-only; a taken key is retried once under this process's
/// variant of the name.
async fn upload(
    store: &dyn ObjectStore,
    path: &Path,
    key: &object_store::path::Path,
) -> Result<Uploaded, String> {
    let bytes = tokio::fs::read(path)
        .await
        .map_err(|error| format!("reading {}: {error}", path.display()))?;
    let bytes = Bytes::from(bytes);
    match put_new(store, key, bytes.clone()).await {
        Ok(true) => return Ok(Uploaded::Stored),
        Ok(false) => {}
        Err(error) => return Err(error),
    }
    let variant = variant_key(key);
    match put_new(store, &variant, bytes).await {
        Ok(true) => Ok(Uploaded::Renamed),
        Ok(false) => Ok(Uploaded::AlreadyStored),
        Err(error) => Err(error),
    }
}

/// `Ok(false)` when the key is taken.
async fn put_new(
    store: &dyn ObjectStore,
    key: &object_store::path::Path,
    bytes: Bytes,
) -> Result<bool, String> {
    let options = PutOptions {
        mode: PutMode::Create,
        ..PutOptions::default()
    };
    match store
        .put_opts(key, PutPayload::from_bytes(bytes), options)
        .await
    {
        Ok(_) => Ok(true),
        Err(
            object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. },
        ) => Ok(false),
        Err(error) => Err(error.to_string()),
    }
}

/// `<stem>-p<process random>.jsonl`: a name no other process picks for the same recording.
fn variant_key(key: &object_store::path::Path) -> object_store::path::Path {
    let text = key.as_ref();
    let stem = text.strip_suffix(".jsonl").unwrap_or(text);
    object_store::path::Path::from(format!(
        "{stem}-p{}.jsonl",
        crate::record::layout::process_random()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;
    use object_store::memory::InMemory;

    #[tokio::test]
    async fn a_taken_key_is_never_overwritten() {
        let dir = crate::test_dir::TestDir::new("upload-taken");
        let file = dir.join("t1.jsonl");
        std::fs::write(&file, "ours").expect("write");
        let store = InMemory::new();
        let key = object_store::path::Path::from("p/r/2026-12-06/t1.jsonl");
        store
            .put(&key, PutPayload::from_static(b"theirs"))
            .await
            .expect("put");
        let outcome = upload(&store, &file, &key).await;
        assert!(matches!(outcome, Ok(Uploaded::Renamed)));
        let kept = store.get(&key).await.expect("get").bytes().await;
        assert_eq!(kept.expect("bytes").as_ref(), b"theirs", "not replaced");
        let variant = variant_key(&key);
        assert!(variant.as_ref().starts_with("p/r/2026-12-06/t1-p"));
        let ours = store.get(&variant).await.expect("get").bytes().await;
        assert_eq!(ours.expect("bytes").as_ref(), b"ours");
        // Uploaded again (a crash before the local copy was deleted): nothing is replaced.
        let again = upload(&store, &file, &key).await;
        assert!(matches!(again, Ok(Uploaded::AlreadyStored)));
    }
}
