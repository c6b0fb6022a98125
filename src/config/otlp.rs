//! The `[otlp]` section: OpenTelemetry export of one span per inspected exchange (OTLP/HTTP,
//! protobuf), off unless an endpoint is given.
//!
//! Input: the raw section from the file, the standard `OTEL_*` variables (read by
//! [`read_env`]) and `--otlp-endpoint`/`--otlp-content`. Output: [`OtlpSettings`], with
//! `endpoint: None` when export is off. An endpoint with no path gets OTLP/HTTP's `/v1/traces`;
//! one with a path is used as written.

use std::time::Duration;

use serde::Deserialize;

use super::duration::HumanDuration;
use crate::otlp::OtlpSettings;

/// Spans waiting for the exporter, unless `otlp.max_queue` says otherwise.
pub const DEFAULT_MAX_QUEUE: usize = 2048;
/// Bytes the queued and in-flight spans may hold (as `SpanData::weight` counts them).
pub const DEFAULT_MAX_QUEUE_BYTES: usize = 16 * 1024 * 1024;
/// Spans sent in one request.
pub const DEFAULT_MAX_BATCH: usize = 512;
/// The longest a span waits for its batch to fill before the batch is sent.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(2);
/// One export request's deadline (connect, send, answer).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Violation events kept on one span.
pub const DEFAULT_MAX_EVENTS: usize = 128;
/// Bytes of message content on one span, when `otlp.content` asks for it.
pub const DEFAULT_MAX_CONTENT_BYTES: usize = 16 * 1024;
/// `service.name` unless `OTEL_SERVICE_NAME` or `otlp.service_name` says otherwise.
pub const DEFAULT_SERVICE_NAME: &str = "tooltap";

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOtlp {
    /// The collector's URL (`http://collector:4318`); `/v1/traces` is appended when it has no
    /// path. `off` (or `OTEL_SDK_DISABLED=true`) turns export off.
    pub endpoint: Option<String>,
    /// Headers sent with every export: `key=value,key2=value2` (percent-encoded values, as
    /// `OTEL_EXPORTER_OTLP_HEADERS` spells them).
    pub headers: Option<String>,
    pub service_name: Option<String>,
    /// `key=value,...` added to the resource (`OTEL_RESOURCE_ATTRIBUTES`).
    pub resource_attributes: Option<String>,
    pub max_queue: Option<usize>,
    pub max_queue_bytes: Option<usize>,
    pub max_batch: Option<usize>,
    pub interval: Option<HumanDuration>,
    pub timeout: Option<HumanDuration>,
    pub max_events: Option<usize>,
    /// Export the response's messages (`gen_ai.output.messages`); off by default.
    pub content: Option<bool>,
    pub max_content_bytes: Option<usize>,
    /// `OTEL_SDK_DISABLED=true`: no export whatever else says.
    #[serde(skip)]
    pub disabled: Option<bool>,
    /// `OTEL_EXPORTER_OTLP_PROTOCOL`/`_TRACES_PROTOCOL`: only `http/protobuf` is spoken.
    #[serde(skip)]
    pub protocol: Option<String>,
}

impl RawOtlp {
    pub fn overlay(self, higher: RawOtlp) -> RawOtlp {
        RawOtlp {
            endpoint: higher.endpoint.or(self.endpoint),
            headers: higher.headers.or(self.headers),
            service_name: higher.service_name.or(self.service_name),
            resource_attributes: higher.resource_attributes.or(self.resource_attributes),
            max_queue: higher.max_queue.or(self.max_queue),
            max_queue_bytes: higher.max_queue_bytes.or(self.max_queue_bytes),
            max_batch: higher.max_batch.or(self.max_batch),
            interval: higher.interval.or(self.interval),
            timeout: higher.timeout.or(self.timeout),
            max_events: higher.max_events.or(self.max_events),
            content: higher.content.or(self.content),
            max_content_bytes: higher.max_content_bytes.or(self.max_content_bytes),
            disabled: higher.disabled.or(self.disabled),
            protocol: higher.protocol.or(self.protocol),
        }
    }
}

/// The standard variables, as the OpenTelemetry SDKs read them: the traces-specific ones win
/// over the generic ones; `OTEL_EXPORTER_OTLP_ENDPOINT` is a base that `/v1/traces` is
/// appended to, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` a whole URL.
pub fn read_env(get: &impl Fn(&str) -> Option<String>) -> RawOtlp {
    let traces = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    let base = get("OTEL_EXPORTER_OTLP_ENDPOINT")
        .map(|base| format!("{}/v1/traces", base.trim().trim_end_matches('/')));
    RawOtlp {
        endpoint: traces.or(base),
        headers: get("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            .or_else(|| get("OTEL_EXPORTER_OTLP_HEADERS")),
        service_name: get("OTEL_SERVICE_NAME"),
        resource_attributes: get("OTEL_RESOURCE_ATTRIBUTES"),
        disabled: get("OTEL_SDK_DISABLED").map(|text| text.trim().eq_ignore_ascii_case("true")),
        protocol: get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| get("OTEL_EXPORTER_OTLP_PROTOCOL")),
        ..RawOtlp::default()
    }
}

/// What is wrong with an `[otlp]` value: the key and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct OtlpConfigError {
    pub key: &'static str,
    pub message: String,
}

fn error(key: &'static str, message: impl Into<String>) -> OtlpConfigError {
    OtlpConfigError {
        key,
        message: message.into(),
    }
}

pub fn validate(raw: RawOtlp) -> Result<OtlpSettings, OtlpConfigError> {
    let endpoint = match raw.endpoint.as_deref().map(str::trim) {
        _ if raw.disabled == Some(true) => None,
        None | Some("") | Some("off") => None,
        Some(url) => Some(traces_url(url)?),
    };
    if endpoint.is_some()
        && let Some(protocol) = raw.protocol.as_deref().map(str::trim)
        && !protocol.is_empty()
        && protocol != "http/protobuf"
    {
        return Err(error(
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            format!("`{protocol}`: tooltap exports OTLP/HTTP with protobuf only (`http/protobuf`)"),
        ));
    }
    let headers = pairs(raw.headers.as_deref().unwrap_or_default())
        .map_err(|message| error("otlp.headers (OTEL_EXPORTER_OTLP_HEADERS)", message))?;
    for (name, value) in &headers {
        http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| error("otlp.headers", format!("`{name}` is not a header name")))?;
        http::HeaderValue::from_str(value).map_err(|_| {
            error(
                "otlp.headers",
                format!("the value of `{name}` is not a header value"),
            )
        })?;
    }
    let resource =
        pairs(raw.resource_attributes.as_deref().unwrap_or_default()).map_err(|message| {
            error(
                "otlp.resource_attributes (OTEL_RESOURCE_ATTRIBUTES)",
                message,
            )
        })?;
    let positive = |value: Option<usize>, default: usize, key| match value {
        Some(0) => Err(error(key, "must be at least 1")),
        other => Ok(other.unwrap_or(default)),
    };
    let max_queue = positive(raw.max_queue, DEFAULT_MAX_QUEUE, "otlp.max_queue")?;
    Ok(OtlpSettings {
        endpoint,
        headers,
        service_name: raw
            .service_name
            .map(|name| name.trim().to_owned())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned()),
        resource,
        max_queue,
        max_queue_bytes: positive(
            raw.max_queue_bytes,
            DEFAULT_MAX_QUEUE_BYTES,
            "otlp.max_queue_bytes",
        )?,
        max_batch: positive(raw.max_batch, DEFAULT_MAX_BATCH, "otlp.max_batch")?.min(max_queue),
        interval: raw.interval.map_or(DEFAULT_INTERVAL, |d| d.0),
        timeout: raw.timeout.map_or(DEFAULT_TIMEOUT, |d| d.0),
        max_events: raw.max_events.unwrap_or(DEFAULT_MAX_EVENTS),
        content: raw.content.unwrap_or(false),
        max_content_bytes: raw.max_content_bytes.unwrap_or(DEFAULT_MAX_CONTENT_BYTES),
    })
}

/// An `http://` or `https://` URL; `/v1/traces` when it names no path.
fn traces_url(url: &str) -> Result<http::Uri, OtlpConfigError> {
    let key = "otlp.endpoint (--otlp-endpoint, OTEL_EXPORTER_OTLP_ENDPOINT)";
    let uri: http::Uri = url
        .parse()
        .map_err(|cause| error(key, format!("`{url}` is not a URL: {cause}")))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.authority().is_none() {
        return Err(error(
            key,
            format!("`{url}`: an http:// or https:// URL is wanted"),
        ));
    }
    if uri.path() != "/" || uri.query().is_some() {
        return Ok(uri);
    }
    format!("{}/v1/traces", url.trim_end_matches('/'))
        .parse()
        .map_err(|cause| error(key, format!("`{url}`: {cause}")))
}

/// `key=value,key2=value2` with percent-encoded values (W3C baggage's spelling, which the OTel
/// variables use); empty items are skipped.
fn pairs(text: &str) -> Result<Vec<(String, String)>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("`{item}` is not key=value"))?;
            let key = key.trim();
            if key.is_empty() {
                return Err(format!("`{item}` has no key"));
            }
            Ok((key.to_owned(), percent_decode(value.trim())))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let decoded = (bytes[at] == b'%')
            .then(|| text.get(at + 1..at + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match decoded {
            Some(byte) => {
                out.push(byte);
                at += 3;
            }
            None => {
                out.push(bytes[at]);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> RawOtlp {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        read_env(&|name: &str| map.get(name).cloned())
    }

    #[test]
    fn off_unless_an_endpoint_is_given() {
        let settings = validate(RawOtlp::default()).expect("valid");
        assert_eq!(settings.endpoint, None);
        assert_eq!(settings.max_queue, DEFAULT_MAX_QUEUE);
        assert!(!settings.content);
    }

    #[test]
    fn the_generic_variable_is_a_base_and_the_traces_one_a_whole_url() {
        let base = validate(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")])).expect("ok");
        assert_eq!(
            base.endpoint.expect("on").to_string(),
            "http://c:4318/v1/traces"
        );
        let whole = validate(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "https://t:443/custom/path",
            ),
        ]))
        .expect("ok");
        assert_eq!(
            whole.endpoint.expect("on").to_string(),
            "https://t:443/custom/path"
        );
        let plain = validate(RawOtlp {
            endpoint: Some("http://127.0.0.1:9".into()),
            ..RawOtlp::default()
        })
        .expect("ok");
        assert_eq!(plain.endpoint.expect("on").path(), "/v1/traces");
    }

    #[test]
    fn headers_resource_and_service_name_come_from_the_standard_variables() {
        let settings = validate(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b, x-team=ml"),
            ("OTEL_SERVICE_NAME", "gateway"),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=staging"),
        ]))
        .expect("ok");
        assert_eq!(
            settings.headers,
            vec![
                ("api-key".to_string(), "a b".to_string()),
                ("x-team".to_string(), "ml".to_string())
            ]
        );
        assert_eq!(settings.service_name, "gateway");
        assert_eq!(
            settings.resource,
            vec![("deployment.environment".to_string(), "staging".to_string())]
        );
    }

    #[test]
    fn disabled_sdk_grpc_and_bad_values_are_handled() {
        let disabled = validate(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_SDK_DISABLED", "true"),
        ]))
        .expect("ok");
        assert_eq!(disabled.endpoint, None);
        let grpc = validate(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]))
        .expect_err("grpc is refused");
        assert!(grpc.message.contains("http/protobuf"), "{grpc}");
        // Without an endpoint the protocol variable is someone else's business.
        assert!(validate(env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")])).is_ok());
        for bad in ["ftp://c", "not a url", "c:4318"] {
            let raw = RawOtlp {
                endpoint: Some(bad.into()),
                ..RawOtlp::default()
            };
            assert!(validate(raw).is_err(), "{bad}");
        }
        let zero = RawOtlp {
            max_queue: Some(0),
            ..RawOtlp::default()
        };
        assert_eq!(validate(zero).expect_err("zero").key, "otlp.max_queue");
        let header = RawOtlp {
            headers: Some("no-equals".into()),
            ..RawOtlp::default()
        };
        assert!(validate(header).is_err());
    }
}
