//! The inspector task: drains one exchange's taps into the contract engine and reports.
//!
//! Input: an [`InspectJob`] made by the service when it decides to inspect an exchange — the
//! request body's tap, and a oneshot on which the service later sends the response head and the
//! response body's tap (or nothing, when the upstream never answered). Output: one
//! [`engine::Report`] turned into log lines (a WARN per violation, an INFO summary), metrics and
//! lines in the violations file; the frames themselves go to the recorder when one is set.
//!
//! The analysis runs inside `catch_unwind`: a panic in the engine on a crafted input marks the
//! exchange `inspection_failed` and the process lives on. The client never waits for any of it:
//! the taps are fed by `try_send`, and this task only reads.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use tokio::sync::oneshot;

use crate::enforce::CutReceiver;
use crate::engine::{Dialect, EngineConfig, Exchange, Report, ResponseHead, SchemaCache};
use crate::jsonl_sink::JsonlSink;
use crate::metrics::Metrics;
use crate::record::{Recorder, RecordingEnd};
use crate::tee::{Ending, TapEnd, TapReceiver};

/// Everything an inspector needs that outlives one exchange; shared by all of them.
pub struct Inspection {
    pub engine: Arc<EngineConfig>,
    pub schemas: Arc<SchemaCache>,
    pub metrics: Arc<Metrics>,
    pub violations: Option<JsonlSink>,
    /// Writes recordings; `None` when `record.mode` is off.
    pub recorder: Option<Recorder>,
    /// Response bytes a held (`violations` mode) recording keeps in memory until the verdict.
    pub max_recording: u64,
    /// Request bodies larger than this are not inspected (the exchange is reported too_large).
    pub max_request_body: usize,
}

/// Who the exchange is, for reports.
#[derive(Debug, Clone)]
pub struct ExchangeLabel {
    pub id: Arc<str>,
    pub route: Arc<str>,
    pub started: Instant,
    /// The tool-calling API the request path names (Chat Completions unless `/responses`).
    pub dialect: Dialect,
}

/// The response half, sent by the service once the upstream's head arrived.
pub struct ResponsePart {
    pub head: ResponseHead,
    pub body: TapReceiver,
    /// Time from sending the request upstream to its response head.
    pub ttfb: Duration,
    /// The response headers as the client got them, when a recording wants them.
    pub headers: Option<http::HeaderMap>,
}

/// One exchange to inspect.
pub struct InspectJob {
    pub label: ExchangeLabel,
    pub request: TapReceiver,
    pub response: oneshot::Receiver<ResponsePart>,
    /// Enforce mode's verdict: an [`crate::enforce::EnforceCut`] when it cut the stream or refused the body on
    /// purpose (the end the tap then sees is tooltap's doing, not a client that went away);
    /// closed without one when it let the response pass or the route does not enforce.
    pub enforced: CutReceiver,
    /// What a recording needs, when a recorder is on.
    pub recording: Option<RecordingSeed>,
}

/// Run one inspection to its end. Spawned by the service; never awaited by the client path.
pub async fn run(shared: Arc<Inspection>, job: InspectJob) {
    let InspectJob {
        label,
        request,
        response,
        enforced,
        recording: seed,
    } = job;
    let mut recording = match (&shared.recorder, &seed) {
        (Some(recorder), Some(seed)) => Tape::start(recorder, &label, seed, shared.max_recording),
        _ => None,
    };
    let RequestCopy {
        body: request_body,
        end: request_end,
        too_large: request_too_large,
    } = collect_request(request, shared.max_request_body).await;
    if let Some(handle) = recording.as_mut() {
        handle.request_body(request_body.as_deref());
    }
    let Ok(mut part) = response.await else {
        // The upstream never answered (its error went to the client and the log): nothing to judge.
        return;
    };
    shared.metrics.upstream_ttfb(&label.route, part.ttfb);
    let head_at = Instant::now();
    let status = part.head.status;
    let headers = part.headers.take();
    if let (Some(tape), Some(headers)) = (recording.as_mut(), headers.as_ref()) {
        tape.response_head(status, headers);
    }
    let outcome = analyse(
        &shared,
        label.dialect,
        request_body.as_deref(),
        part,
        &mut recording,
    )
    .await;
    shared
        .metrics
        .response_duration(&label.route, head_at.elapsed());
    // Awaited, not read: the decision is final once the sender is used or dropped, which
    // happens when enforce mode judged the body (buffered) or the response is done (stream).
    let cut = enforced.await.ok();
    if let (Some(tape), Some(recorder), Some(seed), Outcome::Judged { report, end }) =
        (recording, &shared.recorder, &seed, &outcome)
    {
        tape.finish(Verdict {
            recorder,
            label: &label,
            seed,
            request_body: request_body.as_deref(),
            status,
            headers: headers.as_ref(),
            end: RecordingEnd {
                outcome: recording::outcome(end.as_ref(), cut.as_ref()),
                ended: end.as_ref().map_or_else(Instant::now, |end| end.at),
                dropped_frames: end.as_ref().map_or(0, |end| end.dropped_frames),
                completeness: report.completeness.clone(),
                violations: report.violations.clone(),
                enforced: cut.as_ref().map(recording::enforced_line),
            },
        });
    }
    let request = report::RequestSeen {
        end: request_end.as_ref(),
        too_large: request_too_large,
    };
    report::emit(&shared, &label, request, outcome, cut.is_some());
}

/// The inspector's copy of the request body.
struct RequestCopy {
    /// `None` when it was cut short, lossy or over the bound.
    body: Option<Vec<u8>>,
    end: Option<TapEnd>,
    /// Over `inspect.max_request_body`: forwarded whole, not judged.
    too_large: bool,
}

async fn collect_request(mut tap: TapReceiver, max: usize) -> RequestCopy {
    let mut body = BytesMut::new();
    let mut over = false;
    while let Some(event) = tap.data.recv().await {
        if body.len() + event.bytes.len() > max {
            over = true;
        } else if !over {
            body.extend_from_slice(&event.bytes);
        }
    }
    let end = tap.end.await.ok();
    let whole = !over
        && end
            .as_ref()
            .is_some_and(|e| !e.lossy && matches!(e.ending, Ending::Complete | Ending::Trailers));
    RequestCopy {
        body: whole.then(|| body.to_vec()),
        end,
        too_large: over,
    }
}

mod recording;
mod report;

pub use recording::RecordingSeed;
use recording::{Tape, Verdict};

/// What inspecting the response gave.
enum Outcome {
    Judged {
        report: Box<Report>,
        end: Option<TapEnd>,
    },
    Panicked,
}

async fn analyse(
    shared: &Inspection,
    dialect: Dialect,
    request_body: Option<&[u8]>,
    part: ResponsePart,
    recording: &mut Option<Tape>,
) -> Outcome {
    let ResponsePart { head, mut body, .. } = part;
    let mut exchange = match guarded(|| {
        let mut exchange = Exchange::with_dialect(
            &shared.engine,
            &shared.schemas,
            dialect,
            request_body.unwrap_or_default(),
        );
        exchange.response_head(head);
        exchange
    }) {
        Some(exchange) => exchange,
        None => return Outcome::Panicked,
    };
    while let Some(event) = body.data.recv().await {
        if let Some(handle) = recording.as_mut() {
            handle.frame(&event.bytes, event.at);
        }
        let fed = guarded(|| {
            #[cfg(test)]
            tests::panic_on_marker(&event.bytes);
            exchange.feed(&event.bytes)
        });
        if fed.is_none() {
            return Outcome::Panicked;
        }
    }
    let end = body.end.await.ok();
    // The recording's outcome is the one vocabulary for endings: the same translation into the
    // engine's `BodyEnd` as `tooltap check` makes from the file.
    let body_end = recording::outcome(end.as_ref(), None)
        .body_end(end.as_ref().map_or(0, |end| end.dropped_frames));
    match guarded(move || exchange.finish(body_end)) {
        Some(report) => Outcome::Judged {
            report: Box::new(report),
            end,
        },
        None => Outcome::Panicked,
    }
}

/// Run analysis code, turning a panic into `None` (the panic message is printed by the hook).
fn guarded<T>(f: impl FnOnce() -> T) -> Option<T> {
    catch_unwind(AssertUnwindSafe(f)).ok()
}

#[cfg(test)]
mod tests;
