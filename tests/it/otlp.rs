//! OpenTelemetry export against a real receiver: otelsink (PyPI `oteltest`, which decodes
//! with the official protobuf runtime) receives one span per exchange with the GenAI
//! attributes, continuing the client's trace, and one `gen_ai.evaluation.result` event per
//! violation; with the collector refusing connections or never answering, clients get the same
//! bytes without waiting and every span that could not go is counted in `/metrics`.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::engine_support::{self, Fixture};
use crate::support::client::exchange;
use crate::support::fixtures::{exchange_unchanged, fixture_request, fixture_upstream};
use crate::support::metrics::{assert_metric, metric_sum, metrics};
use crate::support::otlp::{OtelSink, Received, id_hex, int, text};
use crate::support::proxy;
use crate::support::within;
use tooltap::config::{HumanDuration, RawConfig};
use tooltap::proxy::server::RunningProxy;

const LIMIT: Duration = Duration::from_secs(20);
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

fn fixture(name: &str) -> Fixture {
    engine_support::load(&engine_support::fixtures_dir().join(name))
}

/// The proxy's config exporting to `endpoint` with batches sent every 20 ms.
fn exporting(upstream: &str, endpoint: &str) -> RawConfig {
    let mut raw = proxy::raw_config(upstream);
    raw.otlp.endpoint = Some(endpoint.to_owned());
    raw.otlp.interval = Some(HumanDuration(Duration::from_millis(20)));
    raw.otlp.timeout = Some(HumanDuration(Duration::from_secs(5)));
    raw
}

/// Sends `fixture` through `tooltap` (with a `traceparent` when `traced`), checks the client
/// got the fixture's bytes, and returns the exchange id.
async fn send(tooltap: &RunningProxy, fixture: &Fixture, traced: bool) -> String {
    let addr: SocketAddr = tooltap.local_addr();
    let mut request = fixture_request(addr, fixture);
    if traced {
        let traceparent = format!("00-{TRACE_ID}-{PARENT_ID}-01");
        request
            .headers_mut()
            .insert("traceparent", traceparent.parse().expect("value"));
        request
            .headers_mut()
            .insert("tracestate", "vendor=abc".parse().expect("value"));
    }
    exchange_unchanged(addr, request, fixture).await
}

fn by_exchange<'a>(spans: &'a [Received], id: &str) -> Vec<&'a Received> {
    spans
        .iter()
        .filter(|received| text(&received.span["attributes"], "tooltap.exchange.id") == Some(id))
        .collect()
}

/// Polls `/metrics` until `done` holds for it, failing after [`LIMIT`].
async fn metrics_when(tooltap: &RunningProxy, done: impl Fn(&str) -> bool) -> String {
    within(LIMIT, async {
        loop {
            let text = metrics(tooltap).await;
            if done(&text) {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

/// A port nobody listens on: every export to it is refused.
fn refusing_endpoint() -> String {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let endpoint = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    endpoint
}

/// Sends `fixture` (traced) `count` times, then waits until `count` spans were dropped for
/// any reason; returns `/metrics` then.
async fn send_until_dropped(tooltap: &RunningProxy, fixture: &Fixture, count: u64) -> String {
    for _ in 0..count {
        send(tooltap, fixture, true).await;
    }
    metrics_when(tooltap, |text| {
        metric_sum(text, "tooltap_otlp_spans_dropped_total", &[]) >= count
    })
    .await
}

#[tokio::test]
async fn otelsink_receives_one_span_per_exchange_with_its_attributes_parent_and_violation_events() {
    let violating = fixture("stream_parallel_all_on_index_0");
    let clean = fixture("anthropic_pair_single_json");
    let mcp = fixture("mcp_buffered_content_fields");
    let upstream = fixture_upstream(&[violating.clone(), clean.clone(), mcp.clone()]).await;
    let sink = OtelSink::start().await;
    let mut raw = exporting(&upstream.url(), &sink.url());
    raw.otlp.headers = Some("x-collector-token=s3cret".into());
    raw.otlp.resource_attributes = Some("deployment.environment=staging".into());
    let tooltap = proxy::start(raw).await;

    let traced_id = send(&tooltap, &violating, true).await;
    let clean_id = send(&tooltap, &clean, false).await;
    let mcp_id = send(&tooltap, &mcp, false).await;
    let spans = sink.spans(3, LIMIT).await;
    let text_metrics = metrics_when(&tooltap, |text| {
        metric_sum(text, "tooltap_otlp_spans_exported_total", &[]) >= 3
    })
    .await;
    assert_metric!(text_metrics, "tooltap_otlp_spans_exported_total", [] == 3);
    assert_metric!(text_metrics, "tooltap_otlp_spans_dropped_total", [] == 0);

    // The violating stream: the child of the client's span, in the client's trace.
    let traced = by_exchange(&spans, &traced_id);
    assert_eq!(traced.len(), 1, "one span per exchange: {spans:#?}");
    let received = traced[0];
    let span = &received.span;
    let attributes = &span["attributes"];
    assert_eq!(
        id_hex(&span["traceId"]).as_deref(),
        Some(TRACE_ID),
        "{span}"
    );
    assert_eq!(
        id_hex(&span["parentSpanId"]).as_deref(),
        Some(PARENT_ID),
        "{span}"
    );
    assert_ne!(
        id_hex(&span["spanId"]).as_deref(),
        Some(PARENT_ID),
        "a span of its own"
    );
    assert_eq!(span["traceState"], "vendor=abc");
    assert_eq!(span["kind"], "SPAN_KIND_CLIENT");
    assert_eq!(span["name"], "chat gpt-4o-mini");
    assert_eq!(text(attributes, "gen_ai.operation.name"), Some("chat"));
    assert_eq!(text(attributes, "gen_ai.provider.name"), Some("openai"));
    assert_eq!(
        text(attributes, "gen_ai.request.model"),
        Some("gpt-4o-mini")
    );
    assert_eq!(
        crate::support::otlp::attribute(attributes, "gen_ai.request.stream"),
        Some(&serde_json::json!({"boolValue": true}))
    );
    assert_eq!(text(attributes, "tooltap.route"), Some("default"));
    assert_eq!(text(attributes, "tooltap.dialect"), Some("chat"));
    assert_eq!(int(attributes, "http.response.status_code"), Some(200));
    assert_eq!(int(attributes, "tooltap.violations"), Some(3));
    let first_chunk =
        crate::support::otlp::attribute(attributes, "gen_ai.response.time_to_first_chunk")
            .and_then(|value| value["doubleValue"].as_f64())
            .expect("time to first chunk on a stream");
    assert!(
        first_chunk > 0.0 && first_chunk < LIMIT.as_secs_f64(),
        "{first_chunk}"
    );
    let start: u64 = span["startTimeUnixNano"]
        .as_str()
        .expect("start")
        .parse()
        .expect("n");
    let end: u64 = span["endTimeUnixNano"]
        .as_str()
        .expect("end")
        .parse()
        .expect("n");
    assert!(
        start > 1_600_000_000_000_000_000 && end >= start,
        "{start} {end}"
    );
    assert!(
        text(attributes, "gen_ai.output.messages").is_none(),
        "content is never exported unless asked for"
    );
    // One event per violation, each naming its rule, severity, path and tool call.
    let events = span["events"].as_array().expect("events");
    let expected = engine_support::read_expected(&violating);
    assert_eq!(events.len(), expected.len(), "{events:#?}");
    let rules: BTreeSet<String> = events
        .iter()
        .map(|event| {
            assert_eq!(event["name"], "gen_ai.evaluation.result");
            let attributes = &event["attributes"];
            assert_eq!(
                text(attributes, "gen_ai.evaluation.score.label"),
                Some("fail")
            );
            assert!(
                text(attributes, "gen_ai.evaluation.explanation").is_some_and(|t| !t.is_empty())
            );
            assert_eq!(
                text(attributes, "gen_ai.tool.name"),
                Some("get_weather"),
                "{event}"
            );
            assert!(
                text(attributes, "gen_ai.tool.call.id").is_some_and(|id| id.starts_with("call_")),
                "{event}"
            );
            let rule = text(attributes, "gen_ai.evaluation.name").expect("rule");
            let found = expected
                .iter()
                .find(|line| {
                    format!("tooltap.{}", line["rule"].as_str().unwrap_or_default()) == rule
                })
                .unwrap_or_else(|| panic!("{rule} is not an expected violation"));
            assert_eq!(
                text(attributes, "tooltap.severity"),
                found["severity"].as_str()
            );
            assert_eq!(text(attributes, "tooltap.path"), found["path"].as_str());
            assert_eq!(text(attributes, "tooltap.stage"), found["stage"].as_str());
            rule.to_owned()
        })
        .collect();
    assert_eq!(rules.len(), expected.len(), "each violation once");
    // The resource and the configured headers.
    let resource = &received.resource["attributes"];
    assert_eq!(text(resource, "service.name"), Some("tooltap"));
    assert_eq!(text(resource, "deployment.environment"), Some("staging"));
    let token = received.headers.as_object().and_then(|headers| {
        headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("x-collector-token"))
            .map(|(_, value)| value.clone())
    });
    assert_eq!(token, Some(Value::from("s3cret")));

    // The clean exchange without a traceparent: a trace of its own, its usage, no events.
    let clean_spans = by_exchange(&spans, &clean_id);
    assert_eq!(clean_spans.len(), 1);
    let span = &clean_spans[0].span;
    assert!(
        span.get("parentSpanId").is_none_or(|parent| parent == ""),
        "{span}"
    );
    assert_ne!(id_hex(&span["traceId"]).as_deref(), Some(TRACE_ID));
    let attributes = &span["attributes"];
    assert_eq!(text(attributes, "gen_ai.provider.name"), Some("anthropic"));
    assert_eq!(int(attributes, "gen_ai.usage.input_tokens"), Some(377));
    assert_eq!(int(attributes, "gen_ai.usage.output_tokens"), Some(65));
    assert_eq!(int(attributes, "tooltap.violations"), Some(0));
    assert!(
        span.get("events")
            .is_none_or(|events| events == &serde_json::json!([]))
    );
    assert!(text(attributes, "error.type").is_none());

    // The MCP tools/call: the MCP conventions' method and tool, no GenAI operation.
    let mcp_spans = by_exchange(&spans, &mcp_id);
    assert_eq!(mcp_spans.len(), 1);
    let span = &mcp_spans[0].span;
    let attributes = &span["attributes"];
    assert_eq!(span["name"], "tools/call get_weather_data");
    assert_eq!(text(attributes, "mcp.method.name"), Some("tools/call"));
    assert_eq!(
        text(attributes, "gen_ai.tool.name"),
        Some("get_weather_data")
    );
    assert_eq!(text(attributes, "jsonrpc.request.id"), Some("4"));
    assert!(text(attributes, "gen_ai.operation.name").is_none());
    let events = span["events"].as_array().expect("events");
    assert_eq!(
        Some(events.len() as i64),
        int(attributes, "tooltap.violations"),
        "one event per violation"
    );
    assert!(events.iter().any(|event| {
        text(&event["attributes"], "gen_ai.evaluation.name") == Some("tooltap.mcp.content.fields")
    }));
}

#[tokio::test]
async fn events_past_max_events_are_counted_and_content_is_sent_only_when_asked() {
    let violating = fixture("stream_parallel_all_on_index_0");
    let upstream = fixture_upstream(std::slice::from_ref(&violating)).await;
    let sink = OtelSink::start().await;
    let mut raw = exporting(&upstream.url(), &sink.url());
    raw.otlp.max_events = Some(1);
    raw.otlp.content = Some(true);
    let tooltap = proxy::start(raw).await;
    let id = send(&tooltap, &violating, false).await;
    let spans = sink.spans(1, LIMIT).await;
    let span = &by_exchange(&spans, &id)[0].span;
    assert_eq!(span["events"].as_array().map(Vec::len), Some(1), "{span}");
    assert_eq!(span["droppedEventsCount"], 2, "{span}");
    assert_eq!(int(&span["attributes"], "tooltap.violations"), Some(3));
    let messages: Value = serde_json::from_str(
        text(&span["attributes"], "gen_ai.output.messages").expect("content asked for"),
    )
    .expect("JSON messages");
    let parts = messages[0]["parts"].as_array().expect("parts");
    assert!(
        parts
            .iter()
            .any(|part| part["type"] == "tool_call" && part["name"] == "get_weather"),
        "{messages}"
    );
    let text_metrics = metrics(&tooltap).await;
    assert_metric!(text_metrics, "tooltap_otlp_events_dropped_total", [] == 2);
}

#[tokio::test]
async fn with_the_collector_refusing_connections_clients_get_their_bytes_and_drops_are_counted() {
    let violating = fixture("stream_parallel_all_on_index_0");
    let upstream = fixture_upstream(std::slice::from_ref(&violating)).await;
    let tooltap = proxy::start(exporting(&upstream.url(), &refusing_endpoint())).await;
    const EXCHANGES: u64 = 20;
    let text_metrics = send_until_dropped(&tooltap, &violating, EXCHANGES).await;
    assert_metric!(
        text_metrics,
        "tooltap_otlp_spans_dropped_total",
        [] == EXCHANGES
    );
    assert_metric!(text_metrics, "tooltap_otlp_spans_exported_total", [] == 0);
    assert_metric!(
        text_metrics,
        "tooltap_otlp_export_failures_total",
        ["reason=\"transport\""] >= 1
    );
    // The inspection itself is untouched: every violation still counted.
    assert_metric!(
        text_metrics,
        "tooltap_violations_total",
        [] == 3 * EXCHANGES
    );
}

#[tokio::test]
async fn a_collector_that_never_answers_fills_the_bounded_queue_and_clients_never_wait() {
    let violating = fixture("stream_parallel_all_on_index_0");
    let upstream = fixture_upstream(std::slice::from_ref(&violating)).await;
    // Accepts connections and never answers: the exporter's first request hangs.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let endpoint = format!("http://{}", silent.local_addr().expect("addr"));
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            open.push(socket);
        }
    });
    let mut raw = exporting(&upstream.url(), &endpoint);
    raw.otlp.max_queue = Some(2);
    raw.otlp.max_batch = Some(1);
    raw.otlp.timeout = Some(HumanDuration(Duration::from_secs(60)));
    raw.otlp.content = Some(true);
    raw.otlp.max_content_bytes = Some(10);
    let tooltap = proxy::start(raw).await;
    const EXCHANGES: u64 = 12;
    let began = Instant::now();
    for _ in 0..EXCHANGES {
        send(&tooltap, &violating, true).await;
    }
    let elapsed = began.elapsed();
    // At most one span in the hung request and two in the queue; every other one dropped.
    let text_metrics = metrics_when(&tooltap, |text| {
        metric_sum(text, "tooltap_exchanges_inspected_total", &[]) >= EXCHANGES
            && metric_sum(text, "tooltap_otlp_spans_dropped_total", &["queue_full"])
                >= EXCHANGES - 3
    })
    .await;
    assert_metric!(
        text_metrics,
        "tooltap_otlp_spans_dropped_total",
        ["reason=\"queue_full\""] >= EXCHANGES - 3
    );
    assert_metric!(text_metrics, "tooltap_otlp_spans_exported_total", [] == 0);
    // Every span's content was over otlp.max_content_bytes: left out and counted.
    assert_metric!(
        text_metrics,
        "tooltap_limit_hits_total",
        ["limit=\"otlp_max_content_bytes\""] == EXCHANGES
    );
    assert!(
        elapsed < Duration::from_secs(10),
        "{EXCHANGES} exchanges took {elapsed:?} with a hung collector"
    );
    held.abort();
}

#[tokio::test]
async fn the_binary_reads_the_standard_otel_variables_and_sends_queued_spans_before_it_exits() {
    let violating = fixture("stream_parallel_all_on_index_0");
    let upstream = fixture_upstream(std::slice::from_ref(&violating)).await;
    let sink = OtelSink::start().await;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_tooltap"))
        .args(["proxy", "--listen", "127.0.0.1:0", "--admin-listen", "off"])
        .args([
            "--upstream",
            &upstream.url(),
            "--violations",
            "off",
            "--record",
            "off",
        ])
        .args(["--log-format", "json"])
        .env_remove("TOOLTAP_CONFIG")
        .env("RUST_LOG", "info")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", sink.url())
        .env("OTEL_SERVICE_NAME", "staging-gateway")
        .env("OTEL_RESOURCE_ATTRIBUTES", "k8s.pod.name=tooltap-0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the tooltap binary starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    let mut log = Vec::new();
    let (addr, _) = crate::support::binary::ready_line(&mut lines, &mut log)
        .await
        .expect("the proxy's ready line");
    let collected = within(LIMIT, exchange(addr, fixture_request(addr, &violating))).await;
    assert_eq!(collected.body, violating.body);
    // SIGTERM at once: the span waits in a batch (`otlp.interval`, 2 s by default) and is sent
    // by the shutdown drain, before the process exits.
    let mut running = crate::support::binary::Running {
        child,
        addr,
        admin: None,
        lines,
        log,
    };
    running.stop_and_drain().await;
    let spans = sink.spans(1, LIMIT).await;
    assert_eq!(spans.len(), 1, "{spans:#?}");
    let resource = &spans[0].resource["attributes"];
    assert_eq!(text(resource, "service.name"), Some("staging-gateway"));
    assert_eq!(text(resource, "k8s.pod.name"), Some("tooltap-0"));
    assert_eq!(
        int(&spans[0].span["attributes"], "tooltap.violations"),
        Some(3)
    );
}

#[tokio::test]
async fn spans_past_the_queue_byte_bound_are_dropped_and_counted_never_queued() {
    let violating = fixture("stream_parallel_all_on_index_0");
    let upstream = fixture_upstream(std::slice::from_ref(&violating)).await;
    // A collector that would refuse: nothing may even be tried, since no span fits.
    let mut raw = exporting(&upstream.url(), &refusing_endpoint());
    // Less than one span weighs (its structs alone take more).
    raw.otlp.max_queue_bytes = Some(64);
    let tooltap = proxy::start(raw).await;
    const EXCHANGES: u64 = 5;
    let text_metrics = send_until_dropped(&tooltap, &violating, EXCHANGES).await;
    assert_metric!(
        text_metrics,
        "tooltap_otlp_spans_dropped_total",
        ["reason=\"queue_bytes\""] == EXCHANGES
    );
    assert_metric!(text_metrics, "tooltap_otlp_export_failures_total", [] == 0);
}
