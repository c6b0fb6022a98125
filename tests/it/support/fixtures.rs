//! The engine's fixture corpus through the real proxy: an upstream serving each fixture by
//! name, the fixture's request, an exchange whose bytes must arrive unchanged, and the
//! verdicts read back (the metrics settled, the violations file grouped and made comparable).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use serde_json::Value;

use super::client::{exchange, request};
use super::metrics::{metric_sum, metrics};
use super::upstream::{Script, Upstream};
use super::within;
use crate::engine_support::{self, Fixture};
use tooltap::proxy::server::RunningProxy;

const LIMIT: Duration = Duration::from_secs(20);

/// The script that serves a fixture: its head, and its body in its natural frames.
fn fixture_script(fixture: &Fixture) -> Script {
    let mut headers = Vec::new();
    if let Some(content_type) = &fixture.head.content_type {
        headers.push(("content-type".to_string(), content_type.clone()));
    }
    if let Some(encoding) = &fixture.head.content_encoding {
        headers.push(("content-encoding".to_string(), encoding.clone()));
    }
    // The other headers the engine keeps (MCP's session id, `X-Accel-Buffering`).
    headers.extend(fixture.head.headers.iter().cloned());
    Script {
        status: fixture.head.status,
        headers,
        chunks: engine_support::natural_frames(fixture)
            .into_iter()
            .map(|frame| (Duration::ZERO, Bytes::copy_from_slice(frame)))
            .collect(),
        silent: false,
        abort: false,
    }
}

/// The fixture's request, sent with its method and request headers (`head.json`: MCP's) to its
/// dialect's path and naming the fixture in `x-fixture`, so [`fixture_upstream`] answers it
/// with the fixture's response.
pub fn fixture_request(addr: SocketAddr, fixture: &Fixture) -> Request<Full<Bytes>> {
    let body = String::from_utf8_lossy(&fixture.request).into_owned();
    let mut req = request(addr, &fixture.method, fixture.path(), &body);
    for (name, value) in &fixture.request_headers {
        let name = http::HeaderName::from_bytes(name.as_bytes()).expect("header name");
        req.headers_mut()
            .append(name, value.parse().expect("header value"));
    }
    req.headers_mut()
        .insert("x-fixture", fixture.name.parse().expect("header value"));
    req
}

/// Sends `request` (a request for `fixture`) to `addr`, asserts the client got the fixture's
/// status and bytes unchanged, and returns the exchange id tooltap gave it.
pub async fn exchange_unchanged(
    addr: SocketAddr,
    request: Request<Full<Bytes>>,
    fixture: &Fixture,
) -> String {
    let collected = within(LIMIT, exchange(addr, request)).await;
    assert_eq!(
        collected.status.as_u16(),
        fixture.head.status,
        "{}",
        fixture.name
    );
    assert_eq!(
        collected.body, fixture.body,
        "{}: bytes changed",
        fixture.name
    );
    collected.headers["x-tooltap-exchange"]
        .to_str()
        .expect("id")
        .to_string()
}

/// An upstream that answers each request with the fixture named in its `x-fixture` header.
pub async fn fixture_upstream(fixtures: &[Fixture]) -> Upstream {
    fixture_upstream_ending(fixtures, false).await
}

/// The same, with every body broken off after its last frame when `abort` is set.
pub async fn fixture_upstream_ending(fixtures: &[Fixture], abort: bool) -> Upstream {
    let scripts: BTreeMap<String, Script> = fixtures
        .iter()
        .map(|f| {
            let script = fixture_script(f);
            (
                f.name.clone(),
                if abort { script.aborted() } else { script },
            )
        })
        .collect();
    Upstream::start(
        move |received| {
            let name = received
                .headers
                .get("x-fixture")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            scripts
                .get(name)
                .cloned()
                .unwrap_or_else(|| Script::full(404, "text/plain", "no such fixture"))
        },
        None,
    )
    .await
}

/// Wait until `count` exchanges were inspected, then until the violations file is written.
pub async fn settle(tooltap: &RunningProxy, count: u64) -> String {
    let text = within(LIMIT, async {
        loop {
            let text = metrics(tooltap).await;
            if metric_sum(&text, "tooltap_exchanges_inspected_total", &[]) >= count {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    if let Some(sink) = &tooltap.state().admission.inspection().violations {
        within(LIMIT, sink.flush()).await;
    }
    text
}

/// Violations-file lines grouped by exchange id.
pub fn violations_by_exchange(path: &PathBuf) -> BTreeMap<String, Vec<Value>> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut grouped: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for line in text.lines() {
        let value: Value = serde_json::from_str(line).expect("violations line is JSON");
        let id = value["exchange"].as_str().expect("exchange id").to_string();
        grouped.entry(id).or_default().push(value);
    }
    grouped
}

/// The comparable part of a violation (every field but `detail`). Without `seq` where the
/// proxy's chunking is not the corpus' natural split; with it where the frames are the same
/// (a recording re-judged against the live verdicts).
pub fn comparable(value: &Value, keep_seq: bool) -> Value {
    let keys = [
        "rule",
        "severity",
        "stage",
        "choice",
        "tool_call",
        "path",
        "seq",
        "schema_path",
    ];
    Value::Object(
        keys.iter()
            .filter(|k| keep_seq || **k != "seq")
            .map(|k| (k.to_string(), value.get(*k).cloned().unwrap_or(Value::Null)))
            .collect(),
    )
}

pub fn sorted(mut values: Vec<Value>) -> Vec<Value> {
    values.sort_by_key(|v| v.to_string());
    values
}
