//! The exporter task: drains the span queue in batches and posts each batch to the collector.
//!
//! Input: the queue's receiving half. Output: one `POST` per batch (`Content-Type:
//! application/x-protobuf`, the configured headers), within `otlp.timeout`; counters for spans
//! exported and dropped and for failed requests. A failure is logged once at WARN until an
//! export succeeds again (then at DEBUG), so a collector that is down does not flood the log.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tokio::sync::mpsc;

use super::proto::{self, KeyValue, Scope, SpanData};
use super::{AnyValue, OtlpSettings, Queued};
use crate::metrics::Metrics;

type ExportClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// Bytes of a collector's answer read (and ignored) before the connection is reused.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

pub struct Exporter {
    client: ExportClient,
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
        tls: rustls::ClientConfig,
        metrics: Arc<Metrics>,
    ) -> Exporter {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(settings.timeout));
        let connector = HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_all_versions()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_max_idle_per_host(1)
            .build(connector);
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
            .body(Full::new(Bytes::from(body)))
            .map_err(|error| Failure::Transport(error.to_string()))?;
        for (name, value) in &self.headers {
            request.headers_mut().append(name.clone(), value.clone());
        }
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|error| Failure::Transport(error.to_string()))?;
            let status = response.status();
            // Read (a bounded part of) the answer so that the connection can be reused.
            let limited = http_body_util::Limited::new(response.into_body(), MAX_ANSWER_BYTES);
            let _ = limited.collect().await;
            if status.is_success() {
                Ok(())
            } else {
                Err(Failure::Status(status.as_u16()))
            }
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| Failure::Timeout)?
    }
}
