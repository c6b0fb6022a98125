//! The recorder's caller side: [`Recorder`] and the per-exchange [`RecordingHandle`].
//!
//! Input: calls from an inspector task (async or not: no method blocks or awaits, except
//! [`Recorder::flush`]). Output: [`Msg`]s to the writer thread in `disk.rs`.
//!
//! Calling order for one exchange, as the inspector sees it:
//!
//! ```text
//! let mut rec = recorder.begin(RecordingStart { id, started, origin, route, upstream, method,
//!                                               path, dialect, query, request_headers })?;  // None: off
//! rec.request_body(Some(&body));            // or None when the body was not captured
//! rec.response_head(status, &headers);      // the file is opened here (the first line is whole)
//! for (frame, at) in tap { rec.frame(&frame, at); }
//! rec.finish(RecordingEnd { outcome, ended, dropped_frames, completeness, violations, enforced });
//! ```
//!
//! Redaction happens in `begin`/`request_body`/`response_head`, before anything is queued.
//! The queue is a [`WriterThread`] bounded by bytes, not by messages: frames are sent only while
//! fewer than `max_queued_bytes` wait (else that recording stops taking frames and ends
//! `lossy`), while `Open` and `Finish` always go through, so every recording that began is
//! closed (kept or deleted) even when the queue was full. Dropping a handle without `finish`
//! ends the recording as `truncated` (kept only in `all` mode).
//!
//! In `violations` mode a handle holds its messages until `finish` knows the verdict, and sends
//! them only when the exchange has violations: writing every exchange to a temporary file and
//! deleting the clean ones would cost far more CPU per request (see
//! docs/benchmarks.md#violations-mode-holds).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime};

use http::HeaderMap;

use super::config::{RecordMode, RecorderConfig};
use super::disk::{Disk, FAILURE_TARGET, GATHER, MSG_OVERHEAD, Msg};
use super::format::{
    EnforcedLine, Meta, Outcome, RecordedBody, RequestPart, ResponsePart, VERSION,
};
use super::layout::RecordingPaths;
use super::prune::{PruneLimits, Pruner};
use super::store::upload::Notifier;
use crate::engine::{Completeness, Violation};
use crate::metrics::Metrics;
use crate::redact::{self, Redactor};
use crate::writer_thread::WriterThread;

/// Metrics target counting frames dropped because the writer queue was full.
pub const QUEUE_FULL_TARGET: &str = "recordings_queue";

/// Shared by the recorder and its handles.
struct Shared {
    dir: std::path::PathBuf,
    mode: RecordMode,
    max_bytes: u64,
    redactor: Redactor,
    metrics: Arc<Metrics>,
    next_key: AtomicU64,
}

/// Starts recordings; cheap to clone, `Send + Sync`.
#[derive(Clone)]
pub struct Recorder {
    shared: Arc<Shared>,
    thread: WriterThread<Msg>,
    /// Recording to object storage: the uploader's side.
    upload: Option<Notifier>,
    /// The writer's sender as the uploader's ticks reach it (weakly; see `spawn`).
    _ticked: Arc<std::sync::OnceLock<WriterThread<Msg>>>,
}

/// Who the exchange is and what was asked: everything known when the request head arrives.
#[derive(Debug, Clone, Copy)]
pub struct RecordingStart<'a> {
    pub id: &'a str,
    /// Wall-clock time of the request head (the `started` field and the date folder).
    pub started: SystemTime,
    /// The same moment on the monotonic clock: frames' `t_us` count from here.
    pub origin: Instant,
    pub route: &'a str,
    pub upstream: &'a str,
    pub method: &'a str,
    pub path: &'a str,
    /// The dialect the exchange is judged as (the `dialect` field).
    pub dialect: crate::engine::Dialect,
    pub query: Option<&'a str>,
    pub request_headers: &'a HeaderMap,
}

/// How an exchange ended, as the inspector knows it.
#[derive(Debug, Clone)]
pub struct RecordingEnd {
    /// `complete`, `client_gone`, `upstream_error` or `lossy`; the recorder replaces it with
    /// `lossy`/`truncated` when its own queue or size limit cut the file short.
    pub outcome: Outcome,
    /// When the body ended.
    pub ended: Instant,
    /// Frames the tap dropped before the inspector saw them.
    pub dropped_frames: u64,
    pub completeness: Completeness,
    pub violations: Vec<Violation>,
    /// What enforce mode sent instead, with outcome `enforced`.
    pub enforced: Option<EnforcedLine>,
}

impl Recorder {
    /// Starts the writer thread. A thread that cannot start makes every recording fail (and
    /// be counted); traffic is unaffected either way.
    pub fn spawn(config: RecorderConfig, metrics: Arc<Metrics>) -> Recorder {
        let RecorderConfig {
            dir,
            mode,
            layout,
            segment_bytes,
            max_bytes_per_recording,
            max_total_bytes,
            max_files,
            max_queued_bytes,
            redact,
            store,
        } = config;
        // Before anything is written: what a killed process left under temporary names.
        let swept = super::sweep::stale_temps(&dir);
        if swept > 0 {
            tracing::info!(
                swept,
                dir = %dir.display(),
                "deleted temporary recording files a stopped tooltap left unfinished"
            );
        }
        // Uploading, the spool is bounded by the uploader and the store by the bucket's own
        // lifecycle rules (docs/deploy.md): the folder's limits do not apply.
        let limits = match store {
            Some(_) => PruneLimits {
                max_total_bytes: None,
                max_files: None,
            },
            None => PruneLimits {
                max_total_bytes,
                max_files,
            },
        };
        let pruner = Pruner::new(dir.clone(), limits);
        // The uploader wakes the writer thread every second (closing segments by age); the
        // writer tells it of every finished file. The writer's sender is handed over once the
        // thread exists.
        let writer: Arc<std::sync::OnceLock<WriterThread<Msg>>> = Arc::default();
        // It holds the sender weakly: once every `Recorder` is gone, the writer thread can end,
        // and with it the notifier that keeps the uploader going.
        let upload = store.map(|store| {
            let writer = Arc::downgrade(&writer);
            super::store::upload::spawn(store, metrics.clone(), move || {
                if let Some(thread) = writer.upgrade().as_deref().and_then(|lock| lock.get()) {
                    thread.try_send(Msg::Tick, MSG_OVERHEAD);
                }
            })
        });
        let disk = Disk::new(
            metrics.clone(),
            pruner,
            layout,
            segment_bytes,
            upload.clone(),
        );
        let thread = WriterThread::spawn("recorder", max_queued_bytes, GATHER, disk);
        let _ = writer.set(thread.clone());
        let shared = Shared {
            dir,
            mode,
            max_bytes: max_bytes_per_recording,
            redactor: Redactor::new(&redact),
            metrics,
            next_key: AtomicU64::new(0),
        };
        Recorder {
            shared: Arc::new(shared),
            thread,
            upload,
            _ticked: writer,
        }
    }

    pub fn mode(&self) -> RecordMode {
        self.shared.mode
    }

    /// The redaction in use, for callers that log request data.
    pub fn redactor(&self) -> &Redactor {
        &self.shared.redactor
    }

    /// Starts recording one exchange; `None` in `off` mode.
    pub fn begin(&self, start: RecordingStart<'_>) -> Option<RecordingHandle> {
        if self.shared.mode == RecordMode::Off {
            return None;
        }
        let RecordingStart {
            id,
            started,
            origin,
            route,
            upstream,
            method,
            path,
            dialect,
            query,
            request_headers,
        } = start;
        let mut redacted = Vec::new();
        let headers = self.shared.redactor.headers(request_headers, &mut redacted);
        let upstream = redact::url(upstream, &mut redacted);
        let raw_query = query;
        let query = query.map(|q| self.shared.redactor.query(q, &mut redacted));
        let pseudonyms = self.shared.redactor.pseudonyms(request_headers);
        let mut secrets = self.shared.redactor.secret_values(request_headers);
        let echoed = raw_query.map(|q| self.shared.redactor.query_secret_values(q));
        for value in echoed.into_iter().flatten() {
            if !secrets.contains(&value) {
                secrets.push(value);
            }
        }
        let meta = Meta {
            v: VERSION,
            id: id.to_string(),
            started: humantime::format_rfc3339_micros(started).to_string(),
            route: route.to_string(),
            upstream,
            method: method.to_string(),
            path: path.to_string(),
            dialect: Some(dialect),
            query,
            request: RequestPart {
                headers,
                body: RecordedBody::Missing,
            },
            response: ResponsePart {
                status: 0,
                headers: Vec::new(),
            },
            redacted,
            injected: Vec::new(),
            credential: is_mcp(dialect)
                .then(|| self.shared.redactor.credential_digest(request_headers))
                .flatten(),
        };
        // A test's recordings go to its cassette's folder; the header is recorded with the rest.
        let paths = match super::cassette::of_request(request_headers) {
            Some(cassette) => RecordingPaths::in_cassette(&self.shared.dir, &cassette, id),
            None => RecordingPaths::new(&self.shared.dir, route, started, id),
        };
        Some(RecordingHandle {
            paths,
            key: self.shared.next_key.fetch_add(1, Ordering::Relaxed),
            shared: self.shared.clone(),
            thread: self.thread.clone(),
            origin,
            pending: Some(Box::new(meta)),
            used: 0,
            next_seq: 0,
            frames_lost: false,
            lossy: false,
            own_dropped: 0,
            finished: false,
            held: (self.shared.mode == RecordMode::Violations).then(Vec::new),
            secrets,
            pseudonyms,
        })
    }

    /// Waits until everything queued so far is on disk (buffers flushed; unfinished recordings
    /// stay under their temporary names) and, recording to object storage, uploaded (or left in
    /// the spool when the store fails).
    pub async fn flush(&self) {
        self.thread.flush().await;
        if let Some(upload) = &self.upload {
            upload.flush().await;
        }
    }
}

/// MCP recordings keep a credential digest (the conversation key of the 2026-07-28 era).
fn is_mcp(dialect: crate::engine::Dialect) -> bool {
    dialect == crate::engine::Dialect::Mcp
}

/// One exchange being recorded. Not `Clone`: one owner feeds it in order.
pub struct RecordingHandle {
    shared: Arc<Shared>,
    thread: WriterThread<Msg>,
    key: u64,
    paths: RecordingPaths,
    origin: Instant,
    /// The first line until the response head completes it; `None` once the file is open.
    pending: Option<Box<Meta>>,
    /// Request body and frame bytes counted against `max_bytes_per_recording`.
    used: u64,
    next_seq: u64,
    frames_lost: bool,
    lossy: bool,
    own_dropped: u64,
    finished: bool,
    /// In `violations` mode, the messages held in memory until the verdict: a clean exchange
    /// (the common case) then costs no file, no write and no delete. Bounded like the file by
    /// `max_bytes_per_recording`. `None` in `all` mode, where messages go straight to the writer.
    held: Option<Vec<Msg>>,
    /// The request's credential values, redacted wherever a response header repeats them.
    secrets: Vec<String>,
    /// The session ids of the request and response with their pseudonyms
    /// ([`Redactor::pseudonyms`]): the end line's verdicts quote them by pseudonym too.
    pseudonyms: Vec<(String, String)>,
}

mod handle;
