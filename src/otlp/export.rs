//! The exporter task: drains the span queue in batches and posts each batch to the collector.
//!
//! Input: the queue's receiving half. Output: one `POST` per batch (`Content-Type:
//! application/x-protobuf`, the configured headers), within `otlp.timeout`; counters for spans
//! exported and dropped and for failed requests. The request goes out through a [`Collector`]
//! the caller hands in (the proxy's own upstream client, `upstream::collector`), so this
//! room holds no HTTP client of its own. A failure is logged once at WARN until an
//! export succeeds again (then at DEBUG), so a collector that is down does not flood the log.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;

use super::proto::{self, KeyValue, Scope, SpanData};
use super::{AnyValue, OtlpSettings, Queued};
use crate::metrics::Metrics;

/// What a [`Collector`] answers: the collector's status, or why there was none.
pub type Answer = Pin<Box<dyn Future<Output = Result<http::StatusCode, String>> + Send>>;

/// Sends one export request (an absolute `http`/`https` URI) and reads the answer's status,
/// reading (a bounded part of) its body so that the connection can be reused. The exporter puts
/// its own `otlp.timeout` around it.
pub trait Collector: Send + Sync + 'static {
    fn post(&self, request: http::Request<Bytes>) -> Answer;
}

pub struct Exporter {
    client: Box<dyn Collector>,
    endpoint: http::Uri,
    headers: Vec<(http::HeaderName, http::HeaderValue)>,
    resource: Vec<KeyValue>,
    max_batch: usize,
    interval: Duration,
    timeout: Duration,
    metrics: Arc<Metrics>,
}

/// Why a batch was not delivered.
#[derive(Debug)]
enum Failure {
    /// The collector answered with this non-2xx status.
    Status(u16),
    /// No answer: connect refused, reset, TLS failure.
    Transport(String),
    Timeout,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Status(status) => write!(f, "the collector answered {status}"),
            Failure::Transport(error) => write!(f, "no answer: {error}"),
            Failure::Timeout => f.write_str("no answer within otlp.timeout"),
        }
    }
}

impl Failure {
    fn reason(&self) -> &'static str {
        match self {
            Failure::Status(_) => "status",
            Failure::Transport(_) => "transport",
            Failure::Timeout => "timeout",
        }
    }
}

impl Exporter {
    pub fn new(
        settings: &OtlpSettings,
        endpoint: http::Uri,
        client: Box<dyn Collector>,
        metrics: Arc<Metrics>,
    ) -> Exporter {
        // Validated with the config; a pair that fails here is skipped.
        let headers = settings
            .headers
            .iter()
            .filter_map(|(name, value)| {
                Some((
                    http::HeaderName::from_bytes(name.as_bytes()).ok()?,
                    http::HeaderValue::from_str(value).ok()?,
                ))
            })
            .collect();
        let mut resource = vec![
            KeyValue::new("service.name", AnyValue::Str(settings.service_name.clone())),
            KeyValue::new(
                "service.version",
                AnyValue::Str(env!("CARGO_PKG_VERSION").to_owned()),
            ),
        ];
        for (key, value) in &settings.resource {
            if key != "service.name" {
                resource.push(KeyValue::new(key.clone(), AnyValue::Str(value.clone())));
            }
        }
        Exporter {
            client,
            endpoint,
            headers,
            resource,
            max_batch: settings.max_batch,
            interval: settings.interval,
            timeout: settings.timeout,
            metrics,
        }
    }

    /// Until every sender is gone: wait for a span, gather more for up to `interval` (or until
    /// `max_batch`, or a flush), send the batch, repeat.
    /// `held`: what queued spans weigh; each batch's weight is given back once it was posted.
    pub async fn run(self, mut queue: mpsc::Receiver<Queued>, held: Arc<AtomicUsize>) {
        let mut failing = false;
        let mut batch = Vec::with_capacity(self.max_batch);
        while let Some(first) = queue.recv().await {
            let mut weight = 0usize;
            let mut flush = match first {
                Queued::Span(span, bytes) => {
                    batch.push(span);
                    weight += bytes;
                    None
                }
                Queued::Flush(done) => Some(done),
            };
            let deadline = tokio::time::Instant::now() + self.interval;
            while flush.is_none() && batch.len() < self.max_batch {
                match tokio::time::timeout_at(deadline, queue.recv()).await {
                    Ok(Some(Queued::Span(span, bytes))) => {
                        batch.push(span);
                        weight += bytes;
                    }
                    Ok(Some(Queued::Flush(done))) => flush = Some(done),
                    Ok(None) | Err(_) => break,
                }
            }
            if !batch.is_empty() {
                failing = self.deliver(&batch, failing).await;
                batch.clear();
                held.fetch_sub(weight, Ordering::Relaxed);
            }
            if let Some(done) = flush {
                let _ = done.send(());
            }
        }
    }

    /// Post one batch and count it; returns whether exports are failing now.
    async fn deliver(&self, batch: &[SpanData], failing: bool) -> bool {
        let count = batch.len() as u64;
        match self.post(batch).await {
            Ok(()) => {
                self.metrics.otlp_spans_exported(count);
                if failing {
                    tracing::info!(endpoint = %self.endpoint, "OTLP export works again");
                }
                false
            }
            Err(failure) => {
                self.metrics.otlp_export_failure(failure.reason());
                self.metrics.otlp_spans_dropped("export_failed", count);
                if failing {
                    tracing::debug!(endpoint = %self.endpoint, %failure, spans = count, "OTLP export failed");
                } else {
                    tracing::warn!(
                        endpoint = %self.endpoint,
                        %failure,
                        spans = count,
                        "OTLP export failed: these spans are dropped (counted in \
                         tooltap_otlp_spans_dropped_total); traffic is not affected"
                    );
                }
                true
            }
        }
    }

    async fn post(&self, batch: &[SpanData]) -> Result<(), Failure> {
        let scope = Scope {
            name: "tooltap",
            version: env!("CARGO_PKG_VERSION"),
        };
        let body = proto::export_request(&self.resource, &scope, batch);
        let mut request = http::Request::post(self.endpoint.clone())
            .header(http::header::CONTENT_TYPE, "application/x-protobuf")
            .body(Bytes::from(body))
            .map_err(|error| Failure::Transport(error.to_string()))?;
        for (name, value) in &self.headers {
            request.headers_mut().append(name.clone(), value.clone());
        }
        let status = tokio::time::timeout(self.timeout, self.client.post(request))
            .await
            .map_err(|_| Failure::Timeout)?
            .map_err(Failure::Transport)?;
        if status.is_success() {
            Ok(())
        } else {
            Err(Failure::Status(status.as_u16()))
        }
    }
}
