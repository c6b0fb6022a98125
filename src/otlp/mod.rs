//! OpenTelemetry export: one span per inspected exchange, sent to an OTLP/HTTP collector in
//! protobuf, off the client path.
//!
//! Input: [`SpanData`] from the inspector tasks ([`crate::inspect`] builds them when an
//! exchange's verdict is known). Output: `POST <endpoint>` requests carrying
//! `ExportTraceServiceRequest`s, and counters on `/metrics`. [`Spans::send`] never waits: the
//! span goes into a bounded queue (`otlp.max_queue` spans) or, when that is full, is dropped and
//! counted; one task drains the queue in batches (`otlp.max_batch` spans, or what arrived within
//! `otlp.interval`) and sends each batch once, within `otlp.timeout`. The queue is bounded in
//! bytes too (`otlp.max_queue_bytes`, the spans' [`SpanData::weight`] until their batch was
//! posted), since one span may carry up to `otlp.max_events` events of bounded texts. A batch the collector
//! refuses, or cannot be reached for, is dropped and counted: no retry, so a collector that is
//! down costs one bounded request per batch and nothing else.
//!
//! Why no `opentelemetry-otlp`: the messages tooltap sends are a fixed, small subset of OTLP,
//! encoded in [`proto`] in ~150 lines with no new crate (the SDK, its exporter, prost and
//! opentelemetry-proto would add their build to every build and put the queue's bounds and the
//! export's failure handling in someone else's code); the HTTP client is the proxy's own hyper
//! client with the same rustls/ring TLS (no second crypto provider).

pub mod export;
pub mod proto;
pub mod trace_context;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::metrics::Metrics;
pub use proto::{AnyValue, KeyValue, SpanData, SpanEvent};
pub use trace_context::TraceParent;

/// The validated `[otlp]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpSettings {
    /// Where spans are posted; `None`: export is off.
    pub endpoint: Option<http::Uri>,
    pub headers: Vec<(String, String)>,
    pub service_name: String,
    /// Resource attributes besides `service.name` and `service.version`.
    pub resource: Vec<(String, String)>,
    pub max_queue: usize,
    /// Bytes the queued and in-flight spans may hold together, as [`SpanData::weight`] counts.
    pub max_queue_bytes: usize,
    pub max_batch: usize,
    pub interval: Duration,
    pub timeout: Duration,
    /// Violation events kept on one span; more are counted, not sent.
    pub max_events: usize,
    /// Export the response's messages (`gen_ai.output.messages`).
    pub content: bool,
    /// Bytes of content one span may carry; larger content is left out and counted.
    pub max_content_bytes: usize,
}

/// What an inspector needs to build a span within the bounds.
#[derive(Debug, Clone, Copy)]
pub struct SpanLimits {
    pub max_events: usize,
    pub content: bool,
    pub max_content_bytes: usize,
}

/// What goes through the exporter's queue.
pub enum Queued {
    /// A span and its weight, charged to the queue's byte bound until its batch was posted.
    Span(SpanData, usize),
    /// Send what is batched now, then answer (the shutdown drain).
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// The inspectors' handle on the exporter: a bounded queue.
pub struct Spans {
    queue: mpsc::Sender<Queued>,
    /// What the queued and in-flight spans weigh; the exporter gives it back after each post.
    held: Arc<AtomicUsize>,
    max_bytes: usize,
    pub limits: SpanLimits,
    metrics: Arc<Metrics>,
}

impl Spans {
    /// Start the exporter task on the current Tokio runtime; `None` when export is off, or when
    /// there is no runtime to run it on (said in the log).
    pub fn start(
        settings: &OtlpSettings,
        collector: Box<dyn export::Collector>,
        metrics: Arc<Metrics>,
    ) -> Option<Spans> {
        let endpoint = settings.endpoint.clone()?;
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("OTLP export is configured but no runtime runs it: no spans are sent");
            return None;
        };
        let (queue, receiver) = mpsc::channel(settings.max_queue);
        let held = Arc::new(AtomicUsize::new(0));
        let exporter = export::Exporter::new(settings, endpoint, collector, metrics.clone());
        runtime.spawn(exporter.run(receiver, held.clone()));
        Some(Spans {
            queue,
            held,
            max_bytes: settings.max_queue_bytes,
            limits: SpanLimits {
                max_events: settings.max_events,
                content: settings.content,
                max_content_bytes: settings.max_content_bytes,
            },
            metrics,
        })
    }

    /// Queue one span for export, or drop and count it when the queue is full (by count:
    /// `queue_full`; by bytes: `queue_bytes`). Never waits.
    pub fn send(&self, span: SpanData) {
        let weight = span.weight();
        let before = self.held.fetch_add(weight, Ordering::Relaxed);
        if before.saturating_add(weight) > self.max_bytes {
            self.held.fetch_sub(weight, Ordering::Relaxed);
            self.metrics.otlp_spans_dropped("queue_bytes", 1);
            return;
        }
        if let Err(refused) = self.queue.try_send(Queued::Span(span, weight)) {
            self.held.fetch_sub(weight, Ordering::Relaxed);
            let reason = match refused {
                mpsc::error::TrySendError::Full(_) => "queue_full",
                mpsc::error::TrySendError::Closed(_) => "exporter_gone",
            };
            self.metrics.otlp_spans_dropped(reason, 1);
        }
    }

    /// Wait until every span queued before this call was sent (or failed): the shutdown
    /// drain calls it under its deadline.
    pub async fn flush(&self) {
        let (done, sent) = tokio::sync::oneshot::channel();
        if self.queue.send(Queued::Flush(done)).await.is_ok() {
            let _ = sent.await;
        }
    }

    /// Count events left out of a span (past `otlp.max_events`).
    pub fn events_dropped(&self, count: u64) {
        self.metrics.otlp_events_dropped(count);
    }

    /// Count content left out of a span (past `otlp.max_content_bytes`).
    pub fn content_cut(&self) {
        self.metrics.limit_hit("otlp_max_content_bytes", "otlp");
    }
}
