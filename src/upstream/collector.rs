//! The OTLP exporter's HTTP client: an [`UpstreamClient`] with its own small pool (never the
//! forwarder's, so export can neither take the forwarder's connections nor count into its pool
//! metrics), implementing [`crate::otlp::export::Collector`].
//!
//! Input: one export request with an absolute `http`/`https` URI. Output: the collector's status
//! after reading at most [`MAX_ANSWER_BYTES`] of its answer, or the error with its causes.
//! Connecting has `otlp.timeout`; the exporter bounds the whole exchange by it too.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};

use super::{PoolSettings, UpstreamClient, absolute_upstream};
use crate::otlp::OtlpSettings;
use crate::otlp::export::{Answer, Collector};

/// Bytes of a collector's answer read (and ignored) before the connection is reused.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// The exporter posts one batch at a time: one connection is kept idle, and a second may open
/// while the first is being handed back.
const MAX_CONNECTIONS: usize = 2;
const MAX_IDLE: usize = 1;
/// An idle connection to the collector is closed after this long.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The exporter's client, its TLS connections verified by `tls`.
pub fn client(settings: &OtlpSettings, tls: rustls::ClientConfig) -> UpstreamClient {
    UpstreamClient::new(
        PoolSettings {
            connect_timeout: settings.timeout,
            idle_timeout: IDLE_TIMEOUT,
            max_idle: MAX_IDLE,
            max_connections: MAX_CONNECTIONS,
        },
        tls,
    )
}

impl Collector for UpstreamClient {
    fn post(&self, request: http::Request<Bytes>) -> Answer {
        let client = self.clone();
        Box::pin(async move {
            let mut request = request.map(|body| {
                Full::new(body)
                    .map_err(|never| match never {})
                    .boxed_unsync()
            });
            let upstream = absolute_upstream(&mut request)
                .ok_or_else(|| format!("{} is not an http or https URL", request.uri()))?;
            let response = client
                .send(&upstream, request)
                .await
                .map_err(|error| with_causes(&error))?;
            let status = response.status();
            let limited = http_body_util::Limited::new(response.into_body(), MAX_ANSWER_BYTES);
            let _ = limited.collect().await;
            Ok(status)
        })
    }
}

/// `error`'s message followed by each of its causes (the client's errors name only the step
/// that failed).
fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}
