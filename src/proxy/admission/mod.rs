//! The service's side of inspection: admit an exchange to inspection (or not), tee its bodies,
//! and start its inspector task.
//!
//! Input: each exchange's context and bodies from [`crate::proxy::service`]. Output: the same bodies,
//! wrapped in [`TeeBody`] when the exchange is inspected, and an [`inspect::run`] task that
//! drains the taps. A cap on concurrent inspections (a semaphore with `try_acquire`, never a
//! wait) keeps memory bounded under load: with no permit free the exchange is forwarded untapped
//! and counted as `skipped`. The permit lives in the inspector task, so it is returned when the
//! inspection (not the response) ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures_util::FutureExt;
use http::HeaderMap;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};
use tracing::Instrument;

use crate::config::Config;
use crate::engine::{EngineConfig, SchemaCache};
use crate::inspect::verdicts::{FinishGuard, Verdicts};
use crate::inspect::{
    self, ExchangeLabel, HoldSettings, InspectJob, Inspection, InspectionParts, RecordingSeed,
    RequestHead, ResponsePart, Spill,
};
use crate::metrics::{IncompleteReason, Metrics};
use crate::proxy::exchange::ExchangeCtx;
use crate::proxy::forward::body::{self, RequestBody};
use crate::record::{RecordMode, Recorder};
use crate::tap::detached::DetachedHeaders;
use crate::tap::framed::{self, ResponseCopy, ResponseSink};
use crate::tap::tee::{self, TeeBody};
use crate::tap::verdict::CutSender;
use crate::tap::whole::{self, WholeCopy};
use crate::violations_file::ViolationsFile;
use crew::Crew;

mod crew;
mod drain;
pub use drain::{Drained, deadline as drain_deadline};

/// [`crate::quirk::QUIRK_HEADER`] as a name: looking a `&str` up parses it on every response.
const QUIRK_HEADER_NAME: http::HeaderName =
    http::HeaderName::from_static(crate::quirk::QUIRK_HEADER);

/// Shared by every exchange of one proxy.
pub struct Admission {
    inspection: Arc<Inspection>,
    permits: Arc<Semaphore>,
    /// The semaphore's size: the inspections in flight are those it is short of.
    max_concurrent: usize,
    tap_frames: usize,
    tap_bytes: usize,
    /// Exchanges whose inspection began (counted on the request path, before the response):
    /// a signal a test can read the moment its response arrives, where the inspected count
    /// would still be racing the inspector.
    begun: AtomicU64,
    /// The last exchanges' verdicts, for `GET /__tooltap/verdicts`.
    verdicts: Arc<Verdicts>,
    /// The tasks the inspections run on, kept between exchanges.
    crew: Arc<Crew>,
}

/// An exchange admitted to inspection: the service hands it the upstream's response.
pub struct Admitted {
    response: oneshot::Sender<ResponsePart>,
    tap_frames: usize,
    tap_bytes: usize,
    /// Enforce mode's half of the verdict channel: it tells the inspector when it cuts the
    /// response on purpose. Taken by the service when the route enforces; a sender that tells
    /// nobody otherwise (no channel is made for an exchange that is not enforced).
    pub cut: CutSender,
    /// Whether a recording wants the response headers.
    records: bool,
}

impl Admission {
    pub fn new(config: &Config, metrics: Arc<Metrics>) -> Admission {
        let settings = &config.inspect;
        let engine = EngineConfig {
            severity: settings.severity.clone(),
            max_violations: settings.max_violations,
            max_reassembled: settings.max_reassembled,
            ..EngineConfig::default()
        };
        let violations = settings.violations.clone().map(|path| {
            ViolationsFile::spawn_with(path, "violations", metrics.clone(), config.violations_file)
        });
        let recorder = (config.record.mode != RecordMode::Off)
            .then(|| Recorder::spawn(config.record.clone(), metrics.clone()));
        let schemas = Arc::new(SchemaCache::new(256, settings.schema));
        let otlp = crate::tls::client_config(config.tls.extra_ca.as_deref())
            .ok()
            .and_then(|tls| {
                let collector = crate::upstream::collector::client(&config.otlp, tls);
                crate::otlp::Spans::start(&config.otlp, Box::new(collector), metrics.clone())
            });
        let inspection = Arc::new(Inspection::new(InspectionParts {
            engine,
            schemas,
            metrics,
            violations,
            recorder,
            hold: HoldSettings {
                max: config
                    .record
                    .max_bytes_per_recording
                    .min(settings.max_held_recording),
                in_memory: settings.held_in_memory,
                // Held frames exist only in `violations` mode; their spill lives (unlinked) in
                // the recordings folder, which is on disk where /tmp may be memory.
                spill: (config.record.mode == RecordMode::Violations && settings.max_spill > 0)
                    .then(|| Spill::new(config.record.dir.clone(), settings.max_spill)),
            },
            max_request_body: settings.max_request_body,
            max_memory: settings.max_memory,
            mcp: settings.mcp,
            credentials: crate::redact::Redactor::new(&config.record.redact),
            otlp,
        }));
        let mut admission =
            Admission::with(inspection, settings.max_concurrent, settings.tap_frames);
        admission.tap_bytes = settings.tap_bytes;
        admission
    }

    /// The one wiring of inspection, for the proxy and for `tooltap replay` alike: the shared
    /// outputs, the cap on concurrent inspections and the tap's size.
    pub fn with(
        inspection: Arc<Inspection>,
        max_concurrent: usize,
        tap_frames: usize,
    ) -> Admission {
        Admission {
            inspection,
            permits: Arc::new(Semaphore::new(max_concurrent)),
            max_concurrent,
            tap_frames,
            tap_bytes: tee::DEFAULT_TAP_BYTES,
            begun: AtomicU64::new(0),
            verdicts: Arc::default(),
            crew: Arc::default(),
        }
    }

    /// The verdict board of this server's inspections.
    pub fn verdicts(&self) -> &Arc<Verdicts> {
        &self.verdicts
    }

    pub fn inspection(&self) -> &Arc<Inspection> {
        &self.inspection
    }

    /// How many exchanges had their inspection begun (skipped ones not counted).
    pub fn begun(&self) -> u64 {
        self.begun.load(Ordering::Relaxed)
    }

    /// Admit: tee the request body and start the inspector, or forward untapped when no
    /// permit is free. Call inside the exchange's span; the inspector task inherits it.
    /// `enforce`: the route enforces, so the inspector waits for enforce mode's decision.
    pub fn begin(
        &self,
        ctx: &ExchangeCtx,
        head: &http::request::Parts,
        upstream: &str,
        request: Incoming,
        enforce: bool,
    ) -> (RequestBody, Option<Admitted>) {
        // Only a recorder needs the request's head; observe-only traffic copies nothing.
        let recording = (self.inspection.recorder.as_ref())
            .map(|_| RecordingSeed::of(SystemTime::now(), upstream, &ctx.path, head));
        let request_head = self.inspection.request_head(ctx.dialect, head);
        let trace = self.trace_parent(head);
        match self.start(ctx, request_head, trace, recording, enforce) {
            Some((tap, admitted)) => (
                body::from_client_tee(TeeBody::new(request, tap)),
                Some(admitted),
            ),
            None => (body::from_client(request), None),
        }
    }

    /// Admit an exchange whose request body was already read (`tooltap replay`): the
    /// body goes through the same tee, so the inspector sees it exactly as the proxy's would.
    /// `head`: the request's head, for the dialect (see [`RequestHead`]).
    pub async fn begin_read(
        &self,
        ctx: &ExchangeCtx,
        head: &http::request::Parts,
        recording: Option<RecordingSeed>,
        body: &Bytes,
    ) -> Option<Admitted> {
        let request_head = self.inspection.request_head(ctx.dialect, head);
        let trace = self.trace_parent(head);
        let (tap, admitted) = self.start(ctx, request_head, trace, recording, false)?;
        let copied = TeeBody::new(Full::new(body.clone()), tap).collect().await;
        if let Err(never) = copied {
            match never {}
        }
        Some(admitted)
    }

    /// The client's trace context, read only when OpenTelemetry export is on.
    fn trace_parent(&self, head: &http::request::Parts) -> Option<Box<crate::otlp::TraceParent>> {
        self.inspection.otlp.as_ref()?;
        crate::otlp::TraceParent::from_headers(&head.headers).map(Box::new)
    }

    /// Take a permit and start the inspector on a crew member's task; `None` (counted
    /// `skipped`) when none is free.
    fn start(
        &self,
        ctx: &ExchangeCtx,
        request_head: RequestHead,
        trace: Option<Box<crate::otlp::TraceParent>>,
        recording: Option<RecordingSeed>,
        enforce: bool,
    ) -> Option<(WholeCopy, Admitted)> {
        let Some(dialect) = ctx.dialect else {
            self.inspection
                .metrics
                .incomplete(&ctx.route, IncompleteReason::DialectUnknown);
            tracing::debug!(
                "inspection skipped: no dialect names this path (give its route a `dialect`)"
            );
            return None;
        };
        let Ok(permit) = self.permits.clone().try_acquire_owned() else {
            self.inspection
                .metrics
                .incomplete(&ctx.route, IncompleteReason::Skipped);
            tracing::debug!("inspection skipped: too many inspections at once");
            return None;
        };
        self.begun.fetch_add(1, Ordering::Relaxed);
        // The request is kept whole by its tee, charged as it is kept; the inspector takes the
        // charge over with the body.
        let (copy, request_rx) = whole::whole_copy(
            self.inspection.max_request_body,
            self.inspection.memory.empty_charge(),
        );
        let (response_tx, response_rx) = oneshot::channel();
        // Only an enforced exchange has a decision to tell its inspector.
        let (cut, cut_rx) = match enforce {
            true => {
                let (cut, cut_rx) = crate::tap::verdict::channel();
                (cut, Some(cut_rx))
            }
            false => (CutSender::none(), None),
        };
        let records = recording.is_some();
        let label = ExchangeLabel {
            id: ctx.id.shared(),
            route: ctx.route.clone(),
            started: ctx.started,
            dialect,
        };
        let mcp_turn = self
            .inspection
            .mcp_turn(&label, &request_head, recording.as_ref());
        let job = InspectJob {
            trace,
            recording,
            enforced: cut_rx,
            label,
            head: request_head,
            request: request_rx,
            response: response_rx,
            mcp_turn,
        };
        // On the board before the response goes out: a client holding the id finds it there.
        let verdict = FinishGuard::begin(self.verdicts.clone(), job.label.id.clone());
        start_inspection(&self.crew, self.inspection.clone(), job, permit, verdict);
        let admitted = Admitted {
            response: response_tx,
            tap_frames: self.tap_frames,
            tap_bytes: self.tap_bytes,
            cut,
            records,
        };
        Some((copy, admitted))
    }
}

/// The inspection of `job` on a crew member's task.
fn start_inspection(
    crew: &Arc<Crew>,
    inspection: Arc<Inspection>,
    job: InspectJob,
    permit: OwnedSemaphorePermit,
    verdict: FinishGuard,
) {
    // The inspection's future with its end mapped on, not an async block around it: captured
    // there, the job (or the future, awaited) would keep its room in the task's state beside
    // the future it was moved into.
    let task = inspect::run(inspection, job).map(move |findings| {
        drop(permit);
        verdict.judged(findings);
    });
    // Boxed where it is made: the inspector's future is large, and each move on the way to the
    // crew member's task would copy it whole (see docs/benchmarks.md#inspector-boxed).
    crew.run(Box::pin(task.instrument(tracing::Span::current())));
}

impl Admitted {
    /// Tee a response body (the upstream's, behind the quirks injected, or a replayed one) and
    /// tell the inspector about its head. A body of known, small length is copied framed and
    /// handed over at its end ([`framed`]); any other is streamed through a tap.
    pub fn tee<B: http_body::Body>(
        self,
        status: u16,
        headers: &HeaderMap,
        ttfb: Duration,
        body: B,
    ) -> TeeBody<B, ResponseSink> {
        let framed_length = (body.size_hint().exact())
            .and_then(|length| framed::framed_length(length, self.tap_bytes));
        let (tap, body_rx) = match framed_length {
            Some(length) => {
                let (copy, copied) = framed::framed_copy(length, self.tap_frames);
                (ResponseSink::Framed(copy), ResponseCopy::Framed(copied))
            }
            _ => {
                let (tap, receiver) = tee::tap_bounded(self.tap_frames, self.tap_bytes);
                (
                    ResponseSink::Streamed(tap),
                    ResponseCopy::Streamed(receiver),
                )
            }
        };
        // The inspector may have gone (it panicked): then nothing inspects it; forward anyway.
        let _ = self.response.send(ResponsePart {
            head: crate::inspect::head::response_head(status, headers),
            body: body_rx,
            ttfb,
            headers: self.records.then(|| DetachedHeaders::of(headers)),
            quirk: headers
                .get(QUIRK_HEADER_NAME)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned),
        });
        TeeBody::new(body, tap)
    }
}
