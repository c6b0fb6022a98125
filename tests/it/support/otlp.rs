//! otelsink, the OTLP receiver of PyPI's `oteltest`, as the collector of the OpenTelemetry
//! tests (`tests/clients/python/otel_sink.py` runs its HTTP sink on an ephemeral port).
//!
//! Input: none (the interpreter of [`super::clients::python`], with `oteltest` installed from
//! tests/clients/python/requirements.txt). Output: an [`OtelSink`] whose [`OtelSink::spans`]
//! waits for the spans it received, each as protobuf's JSON mapping (`traceId` in base64,
//! `intValue` as a string, `kind` by name), with the resource's attributes and the request's
//! headers beside it. The process is killed when the handle is dropped.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Notify;

use super::clients::{python, python_script};
use super::within;

/// One span as received, with what came with it.
#[derive(Debug, Clone)]
pub struct Received {
    pub span: Value,
    /// The `ResourceSpans.resource` it was sent under.
    pub resource: Value,
    /// The HTTP request's headers, names as sent.
    pub headers: Value,
}

pub struct OtelSink {
    _child: Child,
    pub port: u16,
    received: Arc<Mutex<Vec<Received>>>,
    arrived: Arc<Notify>,
}

impl OtelSink {
    pub async fn start() -> OtelSink {
        let mut child = Command::new(python())
            .arg(python_script("otel_sink.py"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("otel_sink.py starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let port = within(Duration::from_secs(60), async {
            let line = lines
                .next_line()
                .await
                .expect("read otelsink's stdout")
                .expect(
                    "otelsink exited before listening: is `oteltest` installed \
                     (tests/clients/python/requirements.txt)?",
                );
            let value: Value = serde_json::from_str(&line).expect("the port line");
            u16::try_from(value["port"].as_u64().expect("a port")).expect("a port")
        })
        .await;
        let received = Arc::new(Mutex::new(Vec::new()));
        let arrived = Arc::new(Notify::new());
        let (store, notify) = (received.clone(), arrived.clone());
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let value: Value = serde_json::from_str(&line).expect("a JSON line");
                let mut spans = Vec::new();
                for resource_spans in value["trace"]["resourceSpans"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    for scope_spans in resource_spans["scopeSpans"]
                        .as_array()
                        .into_iter()
                        .flatten()
                    {
                        for span in scope_spans["spans"].as_array().into_iter().flatten() {
                            spans.push(Received {
                                span: span.clone(),
                                resource: resource_spans["resource"].clone(),
                                headers: value["headers"].clone(),
                            });
                        }
                    }
                }
                store.lock().expect("lock").extend(spans);
                notify.notify_waiters();
            }
        });
        OtelSink {
            _child: child,
            port,
            received,
            arrived,
        }
    }

    /// `http://127.0.0.1:<port>`: a base URL (tooltap appends `/v1/traces`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Waits until at least `count` spans arrived (failing after `limit`); returns all so far.
    pub async fn spans(&self, count: usize, limit: Duration) -> Vec<Received> {
        within(limit, async {
            loop {
                let notified = self.arrived.notified();
                {
                    let received = self.received.lock().expect("lock");
                    if received.len() >= count {
                        return received.clone();
                    }
                }
                notified.await;
            }
        })
        .await
    }
}

/// The value of attribute `key` in an OTLP JSON attribute list, as its `AnyValue` object
/// (`{"stringValue": ...}`, `{"intValue": "3"}`...).
pub fn attribute<'a>(attributes: &'a Value, key: &str) -> Option<&'a Value> {
    attributes
        .as_array()?
        .iter()
        .find(|pair| pair["key"] == key)
        .map(|pair| &pair["value"])
}

/// A string attribute's value.
pub fn text<'a>(attributes: &'a Value, key: &str) -> Option<&'a str> {
    attribute(attributes, key)?["stringValue"].as_str()
}

/// An int attribute's value (protobuf's JSON mapping writes int64 as a string).
pub fn int(attributes: &Value, key: &str) -> Option<i64> {
    attribute(attributes, key)?["intValue"]
        .as_str()?
        .parse()
        .ok()
}

/// Bytes (a trace or span id) from their base64 JSON spelling, as lower-case hex.
pub fn id_hex(value: &Value) -> Option<String> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(value.as_str()?)
        .ok()?;
    Some(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}
