//! Live inspection through the real proxy: the engine's fixture corpus served by the scripted
//! upstream, judged in flight, reported in the violations file and on `/metrics` — while the
//! client still receives every byte unchanged.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::Value;

use crate::engine_support;
use crate::support::client::{collect, exchange, request, send};
use crate::support::fixtures::{
    comparable, exchange_unchanged, fixture_request, fixture_upstream, settle, sorted,
    violations_by_exchange,
};
use crate::support::metrics::{assert_metric, metric_sum, metrics};
use crate::support::proxy;
use crate::support::temp::temp_file;
use crate::support::upstream::{Script, Upstream};
use crate::support::{quiescent, within};

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn every_fixture_through_the_proxy_reports_exactly_its_expected_violations() {
    let fixtures = engine_support::load_all();
    assert!(fixtures.len() > 30, "the corpus is missing");
    let upstream = fixture_upstream(&fixtures).await;
    let violations = temp_file("fixtures-violations.jsonl");
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.violations = Some(violations.clone());
    // The corpus is single exchanges that share MCP session ids: the conversation rules,
    // which would link them, are judged by `mcp_conversation_fixtures`.
    raw.inspect.severity = Some(
        tooltap::engine::mcp_conversation::RULES
            .iter()
            .filter(|rule| tooltap::engine::mcp_conversation::only_across_exchanges(**rule))
            .map(|rule| (rule.as_str().to_owned(), "off".to_owned()))
            .collect(),
    );
    let tooltap = proxy::start(raw).await;

    let mut ids = BTreeMap::new();
    for fixture in &fixtures {
        let addr = tooltap.local_addr();
        let id = exchange_unchanged(addr, fixture_request(addr, fixture), fixture).await;
        ids.insert(fixture.name.clone(), id);
    }
    let text = settle(&tooltap, fixtures.len() as u64).await;
    let found = violations_by_exchange(&violations);
    let mut expected_total = 0;
    for fixture in &fixtures {
        let expected: Vec<Value> = engine_support::read_expected(fixture)
            .iter()
            .map(|v| comparable(v, false))
            .collect();
        expected_total += expected.len() as u64;
        let id = &ids[&fixture.name];
        let lines = found.get(id).cloned().unwrap_or_default();
        for line in &lines {
            assert_eq!(line["route"], "default");
            assert_eq!(
                line["dialect"],
                fixture.dialect.as_str(),
                "{}",
                fixture.name
            );
            assert!(line["ts"].as_str().is_some_and(|ts| ts.ends_with('Z')));
            assert!(line["detail"].as_str().is_some_and(|d| !d.is_empty()));
        }
        let got: Vec<Value> = lines.iter().map(|v| comparable(v, false)).collect();
        assert_eq!(sorted(got), sorted(expected), "{}", fixture.name);
    }
    assert_metric!(
        text,
        "tooltap_violations_total",
        [] == expected_total,
        "/metrics disagrees with the violations file"
    );
    assert_metric!(
        text,
        "tooltap_exchanges_inspected_total",
        [] == fixtures.len() as u64
    );
    // The tee's cost is measured: one sample per exchange with a response body.
    let with_body = fixtures.iter().filter(|f| !f.body.is_empty()).count() as u64;
    assert_metric!(
        text,
        "tooltap_frame_overhead_seconds_count",
        [] == with_body
    );
    // One precise sample: the helpful reimplementation's signature rule.
    assert_metric!(
        text,
        "tooltap_violations_total",
        [
            "rule=\"tool_call.arguments_not_string\"",
            "severity=\"error\""
        ] >= 1
    );
    // The path decided the dialect: every responses_* case was judged as the Responses API.
    let responses = fixtures
        .iter()
        .filter(|f| f.dialect == tooltap::engine::Dialect::Responses)
        .count() as u64;
    assert!(responses >= 40, "the Responses corpus is missing");
    assert_metric!(
        text,
        "tooltap_exchanges_inspected_total",
        ["dialect=\"responses\""] == responses
    );
    // And every anthropic_* case, posted to /v1/messages, as Anthropic Messages.
    let anthropic = fixtures
        .iter()
        .filter(|f| f.dialect == tooltap::engine::Dialect::Anthropic)
        .count() as u64;
    assert!(anthropic >= 43, "the Anthropic corpus is missing");
    assert_eq!(
        metric_sum(
            &text,
            "tooltap_exchanges_inspected_total",
            &["dialect=\"anthropic\""]
        ),
        anthropic
    );
    assert!(
        metric_sum(
            &text,
            "tooltap_violations_total",
            &[
                "rule=\"anthropic.stream.delta_unknown_block\"",
                "dialect=\"anthropic\""
            ]
        ) >= 1
    );
}

#[tokio::test]
async fn two_hundred_concurrent_streams_all_complete_and_all_are_inspected() {
    let fixtures = engine_support::load_all();
    let seed = fixtures
        .iter()
        .find(|f| f.name == "seed_required_stream")
        .expect("seed stream fixture")
        .clone();
    let upstream = fixture_upstream(std::slice::from_ref(&seed)).await;
    let violations = temp_file("concurrent-violations.jsonl");
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.violations = Some(violations.clone());
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let body = String::from_utf8_lossy(&seed.request).into_owned();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..200 {
        let body = body.clone();
        tasks.spawn(async move {
            let mut req = request(addr, "POST", "/v1/chat/completions", &body);
            req.headers_mut()
                .insert("x-fixture", "seed_required_stream".parse().expect("value"));
            within(LIMIT, exchange(addr, req)).await
        });
    }
    let mut completed = 0;
    while let Some(result) = tasks.join_next().await {
        let collected = result.expect("client task");
        assert_eq!(collected.body, seed.body);
        completed += 1;
    }
    assert_eq!(completed, 200);
    let text = settle(&tooltap, 200).await;
    assert_metric!(
        text,
        "tooltap_exchanges_inspected_total",
        ["stream=\"true\""] == 200
    );
    assert_metric!(text, "tooltap_inspection_incomplete_total", [] == 0);
    assert_metric!(text, "tooltap_violations_total", [] == 0);
    assert!(violations_by_exchange(&violations).is_empty());
}

#[tokio::test]
async fn with_no_inspection_permit_free_the_exchange_is_forwarded_untapped_and_counted_skipped() {
    let events = [
        "data: {\"choices\":[]}\n\n",
        "data: {\"choices\":[]}\n\n",
        "data: [DONE]\n\n",
    ];
    let upstream = Upstream::serving(Script::sse(&events, Duration::from_millis(300))).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.max_concurrent = Some(1);
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let body = r#"{"model":"m","stream":true,"messages":[]}"#;
    // The first exchange holds the only permit while its stream is slow...
    let (first, _conn1) = send(addr, request(addr, "POST", "/v1/chat/completions", body)).await;
    // ...so the second is forwarded untapped, and still gets every byte.
    let second = within(
        LIMIT,
        exchange(addr, request(addr, "POST", "/v1/chat/completions", body)),
    )
    .await;
    assert_eq!(second.body, events.concat().as_bytes());
    let first = within(LIMIT, collect(first)).await;
    assert_eq!(first.body, events.concat().as_bytes());
    let text = settle(&tooltap, 1).await;
    assert_metric!(
        text,
        "tooltap_inspection_incomplete_total",
        ["reason=\"skipped\""] == 1
    );
    assert_metric!(text, "tooltap_exchanges_inspected_total", [] == 1);
}

#[tokio::test]
async fn a_client_that_leaves_mid_stream_is_reported_client_gone() {
    let events = ["data: {\"choices\":[]}\n\n"; 50];
    let upstream = Upstream::serving(Script::sse(&events, Duration::from_millis(50))).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let addr = tooltap.local_addr();
    let body = r#"{"model":"m","stream":true,"messages":[]}"#;
    let (response, conn) = send(addr, request(addr, "POST", "/v1/chat/completions", body)).await;
    let mut incoming = response.into_body();
    let first = within(LIMIT, incoming.frame())
        .await
        .expect("a frame")
        .expect("ok");
    assert!(first.is_data());
    drop(incoming);
    drop(conn);
    let text = settle(&tooltap, 1).await;
    assert_metric!(
        text,
        "tooltap_inspection_incomplete_total",
        ["reason=\"client_gone\""] == 1
    );
}

#[tokio::test]
async fn traffic_that_does_not_match_is_not_inspected_and_inspection_can_be_turned_off() {
    let upstream = Upstream::serving(Script::full(200, "application/json", "{\"data\":[]}")).await;
    let mut raw = proxy::raw_config(&upstream.url());
    let tooltap = proxy::start(raw.clone()).await;
    let addr = tooltap.local_addr();
    let got = exchange(addr, request(addr, "GET", "/v1/models", "")).await;
    assert_eq!(got.body, "{\"data\":[]}");
    let text = metrics(&tooltap).await;
    assert_metric!(text, "tooltap_requests_total", ["status=\"200\""] == 1);
    assert_metric!(text, "tooltap_exchanges_inspected_total", [] == 0);

    // The control: a matching request begins an inspection before its response arrives.
    exchange(addr, request(addr, "POST", "/v1/chat/completions", "{}")).await;
    assert_eq!(
        tooltap.state().admission.begun(),
        1,
        "a matching request is inspected"
    );

    raw.inspect.enabled = Some(false);
    let plain = proxy::start(raw).await;
    let addr = plain.local_addr();
    exchange(addr, request(addr, "POST", "/v1/chat/completions", "{}")).await;
    let text = metrics(&plain).await;
    assert_metric!(text, "tooltap_requests_total", [] == 1);
    assert_eq!(
        plain.state().admission.begun(),
        0,
        "inspection off: nothing begun"
    );
}

#[tokio::test]
async fn health_and_readiness_answer_on_the_admin_listener() {
    let upstream = Upstream::serving(Script::full(200, "application/json", "{}")).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let admin = tooltap.admin_addr().expect("admin");
    assert_eq!(
        exchange(admin, request(admin, "GET", "/healthz", ""))
            .await
            .status,
        200
    );
    assert_eq!(
        exchange(admin, request(admin, "GET", "/readyz", ""))
            .await
            .status,
        200
    );
    assert_eq!(
        exchange(admin, request(admin, "GET", "/nope", ""))
            .await
            .status,
        404
    );
    let text = metrics(&tooltap).await;
    assert!(text.contains("# TYPE tooltap_violations_total counter"));
}

#[tokio::test]
async fn a_client_that_stops_reading_holds_the_upstream_back_and_blocks_no_one_else() {
    const CHUNK: usize = 16 * 1024;
    const CHUNKS: usize = 8192; // 128 MiB offered: far more than every socket buffer on the path
    let chunk = Bytes::from(vec![b'x'; CHUNK]);
    let big = Script {
        status: 200,
        headers: vec![("content-type".into(), "application/octet-stream".into())],
        chunks: vec![(Duration::ZERO, chunk); CHUNKS],
        silent: false,
        abort: false,
    };
    let small = Script::full(200, "application/json", "{\"ok\":true}");
    let upstream = Upstream::start(
        move |received| {
            if received.uri.ends_with("/big/chat/completions") {
                big.clone()
            } else {
                small.clone()
            }
        },
        None,
    )
    .await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let addr = tooltap.local_addr();
    let (stalled, _conn) = send(addr, request(addr, "POST", "/big/chat/completions", "{}")).await;
    // The upstream writes until every buffer on the way to the stalled client is full.
    let handed_over = quiescent(Duration::from_secs(10), || upstream.chunk_times().len()).await;
    assert!(handed_over > 0, "the stalled exchange got going");

    // Another exchange goes through while the first client reads nothing.
    let other = within(
        Duration::from_secs(5),
        exchange(addr, request(addr, "POST", "/v1/chat/completions", "{}")),
    )
    .await;
    assert_eq!(other.body, "{\"ok\":true}");

    // Backpressure, not buffering: the upstream could hand over only what the socket buffers
    // and tooltap's bounded per-connection buffers hold.
    let handed_over = upstream.chunk_times().len() * CHUNK;
    assert!(
        handed_over < 48 * 1024 * 1024,
        "the upstream sent {handed_over} bytes to a client that reads nothing"
    );

    // The stalled client then gets every byte.
    let mut body = stalled.into_body();
    let mut total = 0;
    while let Some(frame) = within(Duration::from_secs(30), body.frame()).await {
        total += frame.expect("frame").into_data().map_or(0, |d| d.len());
    }
    assert_eq!(total, CHUNK * CHUNKS);
}
