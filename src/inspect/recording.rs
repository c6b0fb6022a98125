//! The inspector's side of recording: what the service hands over for a recording to start, and
//! how a tapped body's ending becomes a recording's outcome.
//!
//! Input: a [`RecordingSeed`] captured on admission at request time (only when a recorder is on,
//! so observe-only traffic pays nothing), the tap's [`TapEnd`]. Output: calls on the
//! [`RecordingHandle`] of [`crate::record`], which never block.

use std::time::{Instant, SystemTime};

use bytes::Bytes;
use futures_util::future::Either;

use super::ExchangeLabel;
use super::held::{Cut, HeldFrames};
use super::offload::AnalysisPool;
use super::spill::Spill;
use crate::metrics::Metrics;
use crate::record::{
    EnforcedLine, FrameData, Outcome, RecordMode, Recorder, RecordingEnd, RecordingHandle,
    RecordingStart,
};
use crate::tap::detached::DetachedHeaders;
use crate::tap::tee::{Ending, TapEnd};
use crate::tap::verdict::EnforceCut;

/// The request facts a recording's first line needs.
#[derive(Debug, Clone)]
pub struct RecordingSeed {
    pub started: SystemTime,
    pub upstream: String,
    pub method: http::Method,
    pub path: String,
    pub query: Option<String>,
    /// Copied, so it pins none of hyper's read buffer (see [`DetachedHeaders`]).
    pub headers: DetachedHeaders,
}

impl RecordingSeed {
    /// The seed of an exchange that began at `started`, sent to `upstream`: the request's
    /// method, `path` (without the query: the caller's, as logged) and query, and its headers
    /// copied.
    pub fn of(
        started: SystemTime,
        upstream: &str,
        path: &str,
        head: &http::request::Parts,
    ) -> RecordingSeed {
        RecordingSeed {
            started,
            upstream: upstream.to_owned(),
            method: head.method.clone(),
            path: path.to_owned(),
            query: head.uri.query().map(str::to_owned),
            headers: DetachedHeaders::of(&head.headers),
        }
    }
}

fn begin(
    recorder: &Recorder,
    label: &ExchangeLabel,
    seed: &RecordingSeed,
) -> Option<RecordingHandle> {
    let request_headers = seed.headers.to_map();
    recorder.begin(RecordingStart {
        id: &label.id,
        started: seed.started,
        origin: label.started,
        route: &label.route,
        upstream: &seed.upstream,
        method: seed.method.as_str(),
        path: &seed.path,
        dialect: label.dialect,
        query: seed.query.as_deref(),
        request_headers: &request_headers,
    })
}

/// How the recorded body ended. A response enforce mode cut on purpose is `enforced`, whatever
/// the tap saw after the cut (enforce mode stops reading, so the tap sees a drop).
pub(super) fn outcome(end: Option<&TapEnd>, cut: Option<&EnforceCut>) -> Outcome {
    match (end, cut) {
        (_, Some(_)) => Outcome::Enforced,
        (None, None) => Outcome::FramesLost,
        (Some(end), None) if end.lossy => Outcome::Lossy,
        (Some(end), None) => match &end.ending {
            Ending::Complete | Ending::Trailers => Outcome::Complete,
            Ending::UpstreamBroke(_) => Outcome::UpstreamBroke,
            Ending::ReaderGone => Outcome::ReaderGone,
        },
    }
}

/// The end line's account of what enforce mode sent instead.
pub(super) fn enforced_line(cut: &EnforceCut) -> EnforcedLine {
    EnforcedLine {
        status: cut.status,
        data: FrameData::from_bytes(&cut.replacement),
        replaced_last: cut.replaced_last,
        kept_bytes: cut.kept,
    }
}

/// One exchange's recording as the inspector keeps it.
pub(super) enum ExchangeRecording {
    /// `all` mode: every part goes to the recorder as it arrives.
    Live(Box<RecordingHandle>),
    /// `violations` mode: frames stay here until the verdict, and the recording is made only
    /// when the exchange has violations. A clean exchange (the common case) then costs no
    /// redaction, no JSON re-parse of the request, no file. [`HeldFrames`] keeps them compactly
    /// (a small block in memory, the rest spilled); past its bounds the rest is not kept, the
    /// recording ends `truncated`, and the verdict is still computed from the whole stream.
    Held(Box<HeldFrames>),
}

/// What a held recording needs at the end, besides its frames.
pub(super) struct RecordingFinish<'a> {
    pub recorder: &'a Recorder,
    pub label: &'a ExchangeLabel,
    pub seed: &'a RecordingSeed,
    pub request_body: Option<&'a [u8]>,
    pub status: u16,
    pub headers: Option<&'a DetachedHeaders>,
    pub end: RecordingEnd,
}

/// How a held recording keeps its frames: the bounds and the shared spill.
#[derive(Debug, Clone)]
pub struct HoldSettings {
    /// `inspect.max_held_recording` (at most `record.max_bytes_per_recording`).
    pub max: u64,
    /// `inspect.held_in_memory`: bytes kept in memory before spilling.
    pub in_memory: usize,
    /// `None` when spilling is off (`inspect.max_spill = 0`) or there is no folder for it.
    pub spill: Option<Spill>,
}

impl HoldSettings {
    /// Held frames kept in memory only, up to `max` bytes (no spill).
    pub fn in_memory(max: u64) -> HoldSettings {
        HoldSettings {
            max,
            in_memory: crate::config::inspect::DEFAULT_HELD_IN_MEMORY,
            spill: None,
        }
    }
}

impl ExchangeRecording {
    pub(super) fn start(
        recorder: &Recorder,
        label: &ExchangeLabel,
        seed: &RecordingSeed,
        hold: &HoldSettings,
    ) -> Option<ExchangeRecording> {
        match recorder.mode() {
            RecordMode::Off => None,
            RecordMode::All => {
                begin(recorder, label, seed).map(|handle| ExchangeRecording::Live(Box::new(handle)))
            }
            RecordMode::Violations => Some(ExchangeRecording::Held(Box::new(HeldFrames::new(
                hold.max,
                hold.in_memory,
                hold.spill.clone(),
            )))),
        }
    }

    pub(super) fn request_body(&mut self, body: Option<&[u8]>) {
        if let ExchangeRecording::Live(handle) = self {
            handle.request_body(body);
        }
    }

    pub(super) fn response_head(&mut self, status: u16, headers: &DetachedHeaders) {
        if let ExchangeRecording::Live(handle) = self {
            handle.response_head(status, &headers.to_map());
        }
    }

    /// One response frame; may append to the spill (blocking I/O: call it off the workers).
    pub(super) fn frame(&mut self, bytes: &Bytes, at: Instant) {
        match self {
            ExchangeRecording::Live(handle) => handle.frame(bytes, at),
            ExchangeRecording::Held(held) => held.push(bytes, at),
        }
    }

    /// One response frame without blocking I/O, for the inspector's own thread: `false`, with
    /// the frame not taken, when a held recording could keep it only by writing to the spill
    /// (see [`HeldFrames::push_in_memory`]); a live one only queues it for the writer thread.
    pub(super) fn frame_in_memory(&mut self, bytes: &Bytes, at: Instant) -> bool {
        match self {
            ExchangeRecording::Live(handle) => {
                handle.frame(bytes, at);
                true
            }
            ExchangeRecording::Held(held) => held.push_in_memory(bytes, at),
        }
    }

    /// Whether a next frame would still be kept: `false` past the recording's bounds.
    pub(super) fn takes_frames(&self) -> bool {
        match self {
            ExchangeRecording::Live(handle) => handle.takes_frames(),
            ExchangeRecording::Held(held) => held.takes_frames(),
        }
    }

    /// The most this recording holds in memory, for the memory budget.
    pub(super) fn in_memory_bound(&self) -> usize {
        match self {
            ExchangeRecording::Live(_) => 0,
            ExchangeRecording::Held(held) => held.in_memory_bound(),
        }
    }

    /// Finish: a live recording ends; a held one is written only when there are violations,
    /// its spilled frames read back on the analysis pool. The future is ready at once but for
    /// that write, which alone is boxed: inline, its future would be the largest part of every
    /// inspector's state, and a clean exchange (the common case) never takes it.
    pub(super) fn finish<'a>(
        self,
        finish: RecordingFinish<'a>,
        pool: &'a AnalysisPool,
        metrics: &'a Metrics,
    ) -> impl Future<Output = bool> + 'a {
        match self {
            ExchangeRecording::Live(handle) => {
                handle.finish(finish.end);
                Either::Left(std::future::ready(true))
            }
            ExchangeRecording::Held(_) if finish.end.violations.is_empty() => {
                Either::Left(std::future::ready(false))
            }
            ExchangeRecording::Held(held) => {
                Either::Right(Box::pin(write_held(held, finish, pool, metrics)))
            }
        }
    }
}

/// A held recording's frames written as a recording, its spilled ones read back on the pool;
/// `false` when nothing could be written.
async fn write_held(
    held: Box<HeldFrames>,
    mut finish: RecordingFinish<'_>,
    pool: &AnalysisPool,
    metrics: &Metrics,
) -> bool {
    let cut = held.cut();
    if cut == Some(Cut::SpillFull) {
        metrics.limit_hit("held_spill", "inspect");
    }
    let Some((frames, failed)) = pool.run(move || held.load()).await else {
        return false;
    };
    if let Some(error) = &failed {
        tracing::warn!(
            exchange = &*finish.label.id,
            route = &*finish.label.route,
            %error,
            "held frames could not be read back; the recording is truncated"
        );
    }
    let Some(mut handle) = begin(finish.recorder, finish.label, finish.seed) else {
        return false;
    };
    handle.request_body(finish.request_body);
    let headers = finish
        .headers
        .map(DetachedHeaders::to_map)
        .unwrap_or_default();
    handle.response_head(finish.status, &headers);
    for (bytes, at) in &frames {
        handle.frame(bytes, *at);
    }
    if cut.is_some() || failed.is_some() {
        finish.end.outcome = Outcome::FramesLost;
    }
    handle.finish(finish.end);
    true
}
