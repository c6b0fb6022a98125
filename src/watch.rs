//! The service's side of inspection: decide whether an exchange is watched, tee its bodies, and
//! start its inspector task.
//!
//! Input: each exchange's context and bodies from [`crate::service`]. Output: the same bodies,
//! wrapped in [`TeeBody`] when the exchange is inspected, and an [`inspect::run`] task that
//! drains the taps. A cap on concurrent inspections (a semaphore with `try_acquire`, never a
//! wait) keeps memory bounded under load: with no permit free the exchange is forwarded untapped
//! and counted as `skipped`. The permit lives in the inspector task, so it is returned when the
//! inspection (not the response) ends.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

use http::{HeaderMap, Response, header};
use hyper::body::Incoming;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};
use tracing::Instrument;

use crate::config::Config;
use crate::engine::{EngineConfig, ResponseHead, SchemaCache};
use crate::exchange::ExchangeCtx;
use crate::forward::UpstreamBody;
use crate::forward::body::{self, ProxyBody, RequestBody};
use crate::inspect::{self, ExchangeLabel, InspectJob, Inspection, RecordingSeed, ResponsePart};
use crate::jsonl_sink::JsonlSink;
use crate::metrics::{IncompleteReason, Metrics};
use crate::record::{RecordMode, Recorder};
use crate::tee::{self, TeeBody};

/// Shared by every exchange of one proxy.
pub struct Watch {
    inspection: Arc<Inspection>,
    permits: Arc<Semaphore>,
    tap_frames: usize,
}

/// An exchange being watched: the service hands it the upstream's response.
pub struct Watching {
    response: oneshot::Sender<ResponsePart>,
    tap_frames: usize,
    /// Shared with the inspector: enforce mode sets it when it cuts the response on purpose.
    pub enforced: Arc<AtomicBool>,
    /// Whether a recording wants the response headers.
    records: bool,
}

impl Watch {
    pub fn new(config: &Config, metrics: Arc<Metrics>) -> Watch {
        let settings = &config.inspect;
        let engine = EngineConfig {
            severity: settings.severity.clone(),
            max_violations: settings.max_violations,
            max_reassembled: settings.max_reassembled,
            ..EngineConfig::default()
        };
        let violations = settings
            .violations
            .clone()
            .map(|path| JsonlSink::spawn(path, "violations", metrics.clone()));
        let recorder = (config.record.mode != RecordMode::Off)
            .then(|| Recorder::spawn(config.record.clone(), metrics.clone()));
        Watch {
            inspection: Arc::new(Inspection {
                recorder,
                max_recording: config
                    .record
                    .max_bytes_per_recording
                    .min(settings.max_held_recording),
                engine: Arc::new(engine),
                schemas: Arc::new(SchemaCache::new(256, settings.schema)),
                metrics,
                violations,
                max_request_body: settings.max_request_body,
                analysis: crate::inspect::AnalysisPool::default(),
                memory: crate::inspect::MemoryBudget::new(settings.max_memory),
            }),
            permits: Arc::new(Semaphore::new(settings.max_concurrent)),
            tap_frames: settings.tap_frames,
        }
    }

    pub fn inspection(&self) -> &Arc<Inspection> {
        &self.inspection
    }

    /// Start watching: tee the request body and spawn the inspector, or forward untapped when no
    /// permit is free. Call inside the exchange's span; the inspector task inherits it.
    pub fn begin(
        &self,
        ctx: &ExchangeCtx,
        head: &http::request::Parts,
        upstream: &str,
        request: Incoming,
    ) -> (RequestBody, Option<Watching>) {
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                self.inspection
                    .metrics
                    .incomplete(&ctx.route, IncompleteReason::Skipped);
                tracing::debug!("inspection skipped: too many inspections at once");
                return (body::from_client(request), None);
            }
        };
        let (tap, request_rx) = tee::tap(self.tap_frames);
        let (response_tx, response_rx) = oneshot::channel();
        let enforced = Arc::new(AtomicBool::new(false));
        // Only a recorder needs the request's head; observe-only traffic copies nothing.
        let recording = self.inspection.recorder.as_ref().map(|_| RecordingSeed {
            started: SystemTime::now(),
            upstream: upstream.to_string(),
            method: head.method.to_string(),
            path: ctx.path.clone(),
            query: head.uri.query().map(str::to_string),
            headers: head.headers.clone(),
        });
        let records = recording.is_some();
        let job = InspectJob {
            recording,
            enforced: enforced.clone(),
            label: ExchangeLabel {
                id: Arc::from(ctx.id.as_str()),
                route: ctx.route.clone(),
                started: ctx.started,
            },
            request: request_rx,
            response: response_rx,
        };
        spawn(self.inspection.clone(), job, permit);
        let watching = Watching {
            response: response_tx,
            tap_frames: self.tap_frames,
            enforced,
            records,
        };
        (
            body::from_client_tee(TeeBody::new(request, tap)),
            Some(watching),
        )
    }
}

fn spawn(inspection: Arc<Inspection>, job: InspectJob, permit: OwnedSemaphorePermit) {
    let task = async move {
        inspect::run(inspection, job).await;
        drop(permit);
    };
    tokio::spawn(task.instrument(tracing::Span::current()));
}

impl Watching {
    /// Tee the response body and tell the inspector about the head.
    pub fn response(self, response: Response<UpstreamBody>, ttfb: Duration) -> Response<ProxyBody> {
        let (tap, body_rx) = tee::tap(self.tap_frames);
        let head = response_head(response.status().as_u16(), response.headers());
        // The inspector may have gone (it panicked): then nothing is watching; forward anyway.
        let _ = self.response.send(ResponsePart {
            head,
            body: body_rx,
            ttfb,
            headers: self.records.then(|| response.headers().clone()),
        });
        response.map(|incoming| body::from_upstream_tee(TeeBody::new(incoming, tap)))
    }
}

/// What the engine needs of a response head.
pub fn response_head(status: u16, headers: &HeaderMap) -> ResponseHead {
    let text = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_string)
    };
    ResponseHead {
        status,
        content_type: text(header::CONTENT_TYPE),
        content_encoding: text(header::CONTENT_ENCODING),
    }
}
