//! The inspector task: drains one exchange's taps into the contract engine and reports.
//!
//! Input: an [`InspectJob`] made by the service when it decides to inspect an exchange — the
//! request body's whole copy ([`crate::tap::whole`]), and a oneshot on which the service later
//! sends the response head and the response body's tap or framed copy ([`crate::tap::framed`])
//! (or nothing, when the upstream never answered). Output: one
//! [`Report`] turned into log lines (a WARN per violation, an INFO summary), metrics and
//! lines in the violations file; the frames themselves go to the recorder when one is set.
//!
//! The analysis runs inside `catch_unwind`: a panic in the engine on a crafted input marks the
//! exchange `inspection_failed` and the process lives on. The client never waits for any of it:
//! the taps are fed by `try_send`, the whole and framed copies by one oneshot at their end, and
//! this task only reads.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::oneshot;

use crate::config::mcp_state::McpStateSettings;
use crate::engine::{BodyEnd, Dialect, EngineConfig, Report, ResponseHead, SchemaCache};
use crate::metrics::{IncompleteReason, Metrics};
use crate::record::{Recorder, RecordingEnd};
use crate::redact::Redactor;
use crate::tap::framed::ResponseCopy;
use crate::tap::memory::{Charge, MemoryBudget};
use crate::tap::tee::TapEnd;
use crate::tap::verdict::CutReceiver;
use crate::tap::whole::WholeBody;
use crate::violations_file::ViolationsFile;

/// Everything an inspector needs that outlives one exchange; shared by all of them.
pub struct Inspection {
    pub engine: Arc<EngineConfig>,
    pub schemas: Arc<SchemaCache>,
    pub metrics: Arc<Metrics>,
    pub violations: Option<ViolationsFile>,
    /// Writes recordings; `None` when `record.mode` is off.
    pub recorder: Option<Recorder>,
    /// How a held (`violations` mode) recording keeps its frames until the verdict: at most
    /// `inspect.max_held_recording` bytes, `inspect.held_in_memory` of them in memory, the
    /// rest spilled.
    pub hold: HoldSettings,
    /// Request bodies larger than this are not inspected (the exchange is reported too_large).
    pub max_request_body: usize,
    /// Where the engine's CPU work runs: off the worker threads, a bounded number at a time.
    pub analysis: AnalysisPool,
    /// What all inspections together may hold.
    pub memory: MemoryBudget,
    /// The MCP conversation store and its settling order; `None`: MCP exchanges are judged one
    /// by one only.
    pub mcp: Option<Arc<mcp_order::McpSettle>>,
    /// OpenTelemetry export of one span per exchange (`[otlp]`); `None` when off.
    pub otlp: Option<crate::otlp::Spans>,
}

/// What the proxy's inspection and replay's differ in, each given explicitly;
/// [`Inspection::new`] assembles the rest the one way both use.
pub struct InspectionParts {
    /// Severity overrides and limits; the MCP conversation store judges with the same.
    pub engine: EngineConfig,
    pub schemas: Arc<SchemaCache>,
    pub metrics: Arc<Metrics>,
    pub violations: Option<ViolationsFile>,
    pub recorder: Option<Recorder>,
    pub hold: HoldSettings,
    pub max_request_body: usize,
    /// What all inspections together may hold (`inspect.max_memory`).
    pub max_memory: usize,
    /// The MCP conversation store's bounds (`[inspect.mcp]`).
    pub mcp: McpStateSettings,
    /// How the MCP conversation store names credentials: as the recorder does.
    pub credentials: Redactor,
    pub otlp: Option<crate::otlp::Spans>,
}

impl Inspection {
    /// The one assembly of inspection, for the proxy and for `tooltap replay`: the analysis
    /// pool, the memory budget and the MCP conversation store are made here from `parts`.
    pub fn new(parts: InspectionParts) -> Inspection {
        let InspectionParts {
            engine,
            schemas,
            metrics,
            violations,
            recorder,
            hold,
            max_request_body,
            max_memory,
            mcp,
            credentials,
            otlp,
        } = parts;
        let mcp = mcp_order::McpSettle::for_settings(
            mcp,
            Arc::clone(&schemas),
            engine.severity.clone(),
            engine.max_violations,
            credentials,
        );
        Inspection {
            engine: Arc::new(engine),
            schemas,
            metrics,
            violations,
            recorder,
            hold,
            max_request_body,
            analysis: AnalysisPool::default(),
            memory: MemoryBudget::new(max_memory),
            mcp: Some(mcp),
            otlp,
        }
    }

    /// An MCP exchange's place in the conversation store's order (`None` for other dialects,
    /// or with no store), taken as it is admitted, on the request path: tickets then follow
    /// the order the requests came in, whichever inspector's task runs first.
    pub fn mcp_turn(
        &self,
        label: &ExchangeLabel,
        head: &RequestHead,
        seed: Option<&RecordingSeed>,
    ) -> Option<McpTurn> {
        mcp_live::begin(self, label, head, seed)
    }

    /// The head of a request of `dialect` ([`RequestHead::of`]), with an MCP request's
    /// credential key when the conversation store is on.
    pub fn request_head(
        &self,
        dialect: Option<Dialect>,
        parts: &http::request::Parts,
    ) -> RequestHead {
        let mut head = RequestHead::of(dialect, parts);
        if let (Some(Dialect::Mcp), Some(mcp)) = (dialect, &self.mcp) {
            head.credential = mcp.credential_key(&parts.headers);
        }
        head
    }
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
    /// The body's copy: streamed through a tap, or (small, of known length) framed at its end.
    pub body: ResponseCopy,
    /// Time from sending the request upstream to its response head.
    pub ttfb: Duration,
    /// The response headers as the client got them, when a recording wants them.
    pub headers: Option<crate::tap::detached::DetachedHeaders>,
    /// The quirks `--inject` applied to this response (its `x-tooltap-quirk` header), so the
    /// violations it caused say where they came from.
    pub quirk: Option<String>,
}

/// What of the request's head the dialect is started from, besides its body.
#[derive(Debug, Clone, Default)]
pub struct RequestHead {
    /// The path with its query. The query can carry a credential (`?key=`): it goes to the
    /// engine only, never to a log, a report or a violation (the label and the recording keep
    /// the path without it, or redacted).
    pub target: Option<Arc<str>>,
    /// The method: MCP's exchanges are `POST`, `GET` and `DELETE`.
    pub method: Option<http::Method>,
    /// The headers the engine reads for the exchange's dialect
    /// ([`crate::engine::head::kept_request_headers`]: none but MCP's; never a credential).
    pub headers: Vec<(String, String)>,
    /// An MCP request's credential key ([`mcp_order::McpSettle::credential_key`]; `0` without a
    /// credential or for other dialects): 2026-07-28 conversations are keyed by it.
    pub credential: u64,
}

impl RequestHead {
    /// The head of a request of `dialect`: its target, method, and the headers the engine reads.
    pub fn of(dialect: Option<Dialect>, parts: &http::request::Parts) -> RequestHead {
        let headers = parts
            .headers
            .iter()
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)));
        RequestHead {
            target: parts
                .uri
                .path_and_query()
                .map(|target| Arc::from(target.as_str())),
            method: Some(parts.method.clone()),
            headers: dialect
                .map(|dialect| crate::engine::head::kept_request_headers(dialect, headers))
                .unwrap_or_default(),
            credential: 0,
        }
    }
}

/// One exchange to inspect.
pub struct InspectJob {
    pub label: ExchangeLabel,
    /// The request head the dialect is started from.
    pub head: RequestHead,
    /// The request body, kept whole by its tee (charged to the memory budget as it was kept).
    pub request: oneshot::Receiver<WholeBody>,
    pub response: oneshot::Receiver<ResponsePart>,
    /// Enforce mode's verdict: an [`crate::tap::verdict::EnforceCut`] when it cut the stream or refused the body on
    /// purpose (the end the tap then sees is tooltap's doing, not a client that went away);
    /// closed without one when it let the response pass. `None` when the exchange is not
    /// enforced (no channel is made for it).
    pub enforced: Option<CutReceiver>,
    /// What a recording needs, when a recorder is on.
    pub recording: Option<RecordingSeed>,
    /// The client's W3C trace context (`traceparent`, `tracestate`), when OpenTelemetry export
    /// is on and it sent a valid one: the exchange's span continues that trace.
    pub trace: Option<Box<crate::otlp::TraceParent>>,
    /// An MCP exchange's place in the conversation store's order ([`Inspection::mcp_turn`]).
    pub mcp_turn: Option<McpTurn>,
}

/// Run one inspection to its end. Started by the service on a crew member's task
/// (`proxy::admission`); never awaited by the client path.
/// Returns what it found for the verdict board, `None` when it judged nothing.
pub fn run(
    shared: Arc<Inspection>,
    job: InspectJob,
) -> impl Future<Output = Option<verdicts::Findings>> {
    let InspectJob {
        label,
        head: request_head,
        request,
        response,
        enforced,
        recording: seed,
        trace: trace_parent,
        mcp_turn,
    } = job;
    // The async block takes the job's parts, not the job: an `async fn` would keep its
    // arguments in its state beside what they are moved into, and this state is every
    // inspector's task.
    async move {
        let Some(mut charge) = shared.memory.charge() else {
            // Dropping the taps makes the tees stop copying; the client is not affected.
            shared
                .metrics
                .incomplete(&label.route, IncompleteReason::MemoryBudget);
            return None;
        };
        let mut recording = match (&shared.recorder, &seed) {
            (Some(recorder), Some(seed)) => {
                ExchangeRecording::start(recorder, &label, seed, &shared.hold)
            }
            _ => None,
        };
        let RequestCopy {
            body: request_body,
            end: request_end,
            too_large: request_too_large,
            over_memory,
        } = collect_request(request, &mut charge).await;
        if let Some(handle) = recording.as_mut() {
            handle.request_body(request_body.as_deref());
        }
        let mut trace = otlp_span::TraceSeed {
            parent: trace_parent,
            ..otlp_span::TraceSeed::default()
        };
        // Taken apart where it is received: a local holding the whole part would keep its room
        // in this future's state across every later await, its fields moved out or not.
        let ResponsePart {
            head,
            body,
            ttfb,
            headers,
            quirk,
        } = match response.await {
            Ok(part) => part,
            Err(_) => {
                // The upstream never answered (its error went to the client and the log):
                // nothing to judge.
                if let Some(spans) = &shared.otlp {
                    otlp_span::send_unjudged(spans, &label, &trace, "no_response");
                }
                return None;
            }
        };
        trace.ttfb = Some(ttfb);
        shared.metrics.upstream_ttfb(&label.route, ttfb);
        let head_at = Instant::now();
        let status = head.status;
        if let (Some(tape), Some(headers)) = (recording.as_mut(), headers.as_ref()) {
            tape.response_head(status, headers);
        }
        // The engine starts (the request parsed, its schemas compiled) on the first trip to
        // the pool, together with the first frames; a buffered response whose end is already
        // known then costs one trip in all (each trip is two cross-thread wake-ups, a large
        // part of the CPU per request; see docs/benchmarks.md#analysis-pool).
        let start = Start {
            engine: Arc::clone(&shared.engine),
            schemas: Arc::clone(&shared.schemas),
            dialect: label.dialect,
            request: StartRequest {
                body: request_body.clone(),
                head: request_head,
            },
            head,
        };
        // Boxed: with the response's analysis inline, this future (every inspector's task)
        // would be past what glibc serves from its per-thread cache (see
        // docs/benchmarks.md#inspector-boxed); both boxes are within it.
        let analysing = Box::pin(analyse(
            &shared,
            start,
            body,
            &mut recording,
            &mut charge,
            &mut trace.first_chunk,
        ));
        let (mut outcome, response_over_memory) = analysing.await;
        shared
            .metrics
            .response_duration(&label.route, head_at.elapsed());
        // Awaited, not read: the decision is final once the sender is used or dropped, which
        // happens when enforce mode judged the body (buffered) or the response is done (stream).
        let cut = match enforced {
            Some(enforced) => enforced.await.ok(),
            None => None,
        };
        if let Some(turn) = mcp_turn
            && let Inspected::Judged { report, end } = &mut outcome
        {
            // Boxed: MCP's exchanges alone settle, and inline its future would be the largest
            // part of every inspector's state.
            Box::pin(mcp_live::settle(
                &shared,
                &label,
                turn,
                report,
                end.as_ref(),
            ))
            .await;
        }
        if let Some(tape) = recording
            && let Some(recorder) = &shared.recorder
            && let Some(seed) = &seed
            && let Inspected::Judged { report, end } = &outcome
        {
            let finish = RecordingFinish {
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
            };
            trace.recorded = tape.finish(finish, &shared.analysis, &shared.metrics).await;
        }
        if let Inspected::Judged { end: Some(end), .. } = &outcome {
            trace.ended = Some(end.at);
        }
        let findings = match &outcome {
            Inspected::Judged { report, .. } => Some(verdicts::Findings::of(report)),
            Inspected::Panicked => None,
        };
        let request = report::RequestSeen {
            end: request_end.as_ref(),
            too_large: request_too_large,
            over_memory: over_memory || response_over_memory,
        };
        report::emit(
            &shared,
            &label,
            request,
            outcome,
            cut.is_some(),
            quirk.as_deref(),
            &trace,
        );
        findings
    }
}

/// The inspector's copy of the request body.
struct RequestCopy {
    /// `None` when it was cut short, lossy or over the bound.
    body: Option<Bytes>,
    end: Option<TapEnd>,
    /// Over `inspect.max_request_body`: forwarded whole, not judged.
    too_large: bool,
    /// Holding it would cross `inspect.max_memory`: forwarded whole, not judged.
    over_memory: bool,
}

/// The request body as its tee kept it; what it holds of the memory budget joins `charge`.
async fn collect_request(copy: oneshot::Receiver<WholeBody>, charge: &mut Charge) -> RequestCopy {
    match copy.await {
        Ok(WholeBody {
            body,
            end,
            too_large,
            over_memory,
            charge: kept,
        }) => {
            charge.absorb(kept);
            RequestCopy {
                body,
                end: Some(end),
                too_large,
                over_memory,
            }
        }
        // The tee always reports; only a body dropped with its runtime would not.
        Err(_) => RequestCopy {
            body: None,
            end: None,
            too_large: false,
            over_memory: false,
        },
    }
}

pub mod head;
mod gather;
mod held;
pub mod mcp_order;
mod mcp_live;
mod offload;
mod otlp_span;
mod recording;
mod report;
mod spill;
mod trip;
pub mod verdicts;
pub mod violation_line;

pub use mcp_live::Turn as McpTurn;
pub use offload::AnalysisPool;
use trip::{HERE_BYTES, LazyExchange, Start, StartRequest, feed, record_rest};

use recording::{ExchangeRecording, RecordingFinish};
pub use recording::{HoldSettings, RecordingSeed};
pub use spill::Spill;

/// What inspecting the response gave.
enum Inspected {
    Judged {
        report: Box<Report>,
        end: Option<TapEnd>,
    },
    Panicked,
}

impl Inspected {
    /// What a trip that ends in the verdict gave: the report (boxed where the engine made it,
    /// so that it travels back from the trip as a pointer), or `None` when the engine panicked.
    fn of(report: Option<Box<Report>>, end: Option<TapEnd>) -> Inspected {
        match report {
            Some(report) => Inspected::Judged { report, end },
            None => Inspected::Panicked,
        }
    }
}

fn analyse(
    shared: &Inspection,
    start: Start,
    body: ResponseCopy,
    recording: &mut Option<ExchangeRecording>,
    charge: &mut Charge,
    first_chunk: &mut Option<Instant>,
) -> impl Future<Output = (Inspected, bool)> {
    let mut exchange = LazyExchange::Pending(start);
    let mut body = gather::Batches::of(body);
    // Not an `async fn`, which would keep the engine's start and the body's copy in its state
    // beside the exchange and the batches they are moved into (as [`run`]).
    async move {
        let pool = &shared.analysis;
        // What this exchange holds of the response is charged, not the bytes it has seen: the held
        // recording's frames (what it took in, up to its in-memory bound) and what the engine holds
        // (framing buffers and reassembly, `LazyExchange::held_bytes`). Before each trip the batch is
        // reserved on top (`LazyExchange::reserve`), so the charge rises before the memory is taken; when
        // the trip is back the charge is set to what is then held, up or down. On top of what the
        // request body holds, charged already.
        let request_held = charge.held();
        let tape_bound = recording
            .as_ref()
            .map_or(0, ExchangeRecording::in_memory_bound);
        let mut seen = 0usize;
        let mut engine_held = 0usize;
        let mut closed = false;
        while !closed {
            // Kept frames count against the tap's byte bound until they are fed (released below):
            // a batch waiting for a pool thread is memory too.
            let Some((batch, over)) = body.next().await else {
                break;
            };
            closed = over;
            if first_chunk.is_none() {
                *first_chunk = batch.first().map(|event| event.at);
            }
            let bytes: usize = batch.iter().map(|event| event.bytes.len()).sum();
            seen = seen.saturating_add(bytes);
            let request_and_tape = request_held.saturating_add(seen.min(tape_bound));
            let reserved = engine_held.saturating_add(exchange.reserve(bytes));
            if !charge.try_set(request_and_tape.saturating_add(reserved)) {
                // All inspections together hold `inspect.max_memory`: this one stops here and
                // frees what it holds (its recording, its reassembly); the client is unaffected.
                *recording = None;
                drop(body);
                let report = pool
                    .run(move || Box::new(exchange.get().finish(BodyEnd::Lossy)))
                    .await;
                charge.release();
                return (Inspected::of(report, None), true);
            }
            // A small trip runs on this task's thread when it needs no schema compiled and its
            // schemas are plain; anything else goes to the pool (see `trip::HERE_BYTES`). Its
            // held frames are kept there too, unless a spill append would write (blocking I/O):
            // from that frame on they are kept on the pool (`trip::record_rest`).
            let small = bytes <= HERE_BYTES;
            if small && !closed {
                // The middle of a stream, whose trip may run right here: the frames that arrived
                // with this batch's wake-up (other streams' events, due at the same instants) are
                // forwarded first. Tokio wakes a yielded task after the tasks already queued and
                // the I/O that is ready (see docs/benchmarks.md#forwarding-first).
                tokio::task::yield_now().await;
            }
            if small {
                exchange = match exchange.start_here() {
                    Some(exchange) => exchange,
                    None => return (Inspected::Panicked, false),
                };
            }
            let here = small && exchange.plain();
            shared.metrics.analysis_trip(here);
            if closed {
                // The body's last frames: fed and judged in the same trip below.
                let end = body.end().await;
                return finish(shared, here, exchange, Some(batch), recording, end).await;
            }
            // The tape goes along: on the pool a held one may append to the spill, blocking I/O
            // like the engine's work is CPU, and both belong off the worker threads.
            let mut tape = recording.take();
            // Nothing will read the rest of this body once inspection stopped (a bound, or a body
            // it does not inspect) and the recording is full: `feed` stops the tee's copies then.
            let stop = body.copy_stop();
            let fed = pool.run_where(here, move || {
                let (mut exchange, plain) = exchange.started();
                let rest = feed(&mut exchange, batch, &mut tape, stop.as_ref(), here);
                let exchange = Box::new(exchange);
                (LazyExchange::Started { exchange, plain }, tape, rest)
            });
            let rest;
            (exchange, *recording, rest) = match fed.await {
                Some(fed) => fed,
                None => return (Inspected::Panicked, false),
            };
            if !record_rest_on(shared, recording, rest).await {
                return (Inspected::Panicked, false);
            }
            engine_held = exchange.held_bytes();
            charge.set(request_and_tape.saturating_add(engine_held));
            body.release(bytes);
        }
        // No frames left to feed: only the end-of-body checks.
        let here = exchange.plain();
        shared.metrics.analysis_trip(here);
        let end = body.end().await;
        finish(shared, here, exchange, None, recording, end).await
    }
}

/// The last trip: the remaining frames (if any), then the verdict; on this thread when `here`,
/// at once (the future is then ready but for the recording's rest).
fn finish<'a>(
    shared: &'a Inspection,
    here: bool,
    exchange: LazyExchange,
    batch: Option<Vec<crate::tap::tee::TapEvent>>,
    recording: &'a mut Option<ExchangeRecording>,
    end: Option<TapEnd>,
) -> impl Future<Output = (Inspected, bool)> + 'a {
    // The recording's outcome is the one vocabulary for endings: the same translation into the
    // engine's `BodyEnd` as `tooltap check` makes from the file.
    let body_end = recording::outcome(end.as_ref(), None)
        .body_end(end.as_ref().map_or(0, |end| end.dropped_frames));
    let mut tape = recording.take();
    // Not an `async fn` (see [`analyse`]): the exchange and the batch go straight into the
    // trip, and the future keeps only the way back.
    let judged = shared.analysis.run_where(here, move || {
        let mut exchange = exchange.get();
        // The body's last frames: nothing left to stop copying.
        let rest = batch.map(|batch| feed(&mut exchange, batch, &mut tape, None, here));
        let report = Box::new(exchange.finish(body_end));
        (report, tape, rest.unwrap_or_default())
    });
    async move {
        let Some((report, tape, rest)) = judged.await else {
            return (Inspected::Panicked, false);
        };
        *recording = tape;
        if !record_rest_on(shared, recording, rest).await {
            return (Inspected::Panicked, false);
        }
        (Inspected::of(Some(report), end), false)
    }
}

/// The frames a trip on this thread left to the recording, kept on the pool (see
/// [`trip::record_rest`]; counted as a trip there); `false` when that panicked (the recording
/// is then gone).
async fn record_rest_on(
    shared: &Inspection,
    recording: &mut Option<ExchangeRecording>,
    rest: Vec<crate::tap::tee::TapEvent>,
) -> bool {
    if rest.is_empty() {
        return true;
    }
    shared.metrics.analysis_trip(false);
    let mut tape = recording.take();
    let kept = shared.analysis.run(move || {
        record_rest(&mut tape, rest);
        tape
    });
    match kept.await {
        Some(tape) => {
            *recording = tape;
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests;
