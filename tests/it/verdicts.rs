//! Equal bytes, equal verdicts: for every fixture of the corpus and every way an exchange can
//! end, the live inspector's violations equal `tooltap check`'s on the recording it made.
//!
//! Endings: the body completes; the upstream breaks off after its last frame (the client got a
//! truncated body, judged as it is); the client leaves right after `data: [DONE]` (as the
//! official Python SDK does); the client leaves after its first frame. Each fixture is served
//! by a real upstream with its natural chunking, through the in-process proxy recording every
//! exchange, then the folder is re-judged by `tooltap check` and compared violation by
//! violation, `seq` included.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::BytesMut;
use http_body_util::BodyExt;
use serde_json::Value;
use tooltap::record::RecordMode;

use crate::engine_support;
use crate::support::TempDir;
use crate::support::check::check_json;
use crate::support::client::{request, send};
use crate::support::fixtures::fixture_request;
use crate::support::fixtures::{
    comparable, fixture_upstream_ending, settle, sorted, violations_by_exchange,
};
use crate::support::metrics::assert_metric;
use crate::support::{proxy, within};

const LIMIT: Duration = Duration::from_secs(10);

/// How each exchange of a run ends.
#[derive(Debug, Clone, Copy, PartialEq)]
enum End {
    Complete,
    UpstreamBreaks,
    ClientLeavesAfterDone,
    ClientLeavesAfterFirstFrame,
}

/// Reads the response as the ending says, then lets the connection go.
async fn read_as(addr: std::net::SocketAddr, fixture: &engine_support::Fixture, end: End) {
    // Each fixture at its dialect's path: Responses fixtures are judged as the Responses API.
    let (response, conn) = send(addr, fixture_request(addr, fixture)).await;
    let mut body = response.into_body();
    let mut got = BytesMut::new();
    while let Some(Ok(frame)) = within(LIMIT, body.frame()).await {
        if let Ok(data) = frame.into_data() {
            got.extend_from_slice(&data);
        }
        let leave = match end {
            End::ClientLeavesAfterFirstFrame => true,
            End::ClientLeavesAfterDone => got.windows(6).any(|w| w == b"[DONE]"),
            End::Complete | End::UpstreamBreaks => false,
        };
        if leave {
            break;
        }
    }
    drop(body);
    drop(conn);
}

/// Runs the corpus with one ending; returns (exchanges compared, violations compared, rules seen).
async fn live_equals_offline(end: End) -> (usize, usize, Vec<String>) {
    let fixtures = engine_support::load_all();
    let upstream = fixture_upstream_ending(&fixtures, end == End::UpstreamBreaks).await;
    let dir = TempDir::new(&format!("verdicts-{end:?}"));
    let recordings = dir.join("recordings");
    let violations = dir.join("violations.jsonl");
    let mut raw = proxy::raw_config(&upstream.url());
    raw.record.mode = Some(RecordMode::All);
    raw.record.dir = Some(recordings.clone());
    raw.inspect.violations = Some(violations.clone());
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    for fixture in &fixtures {
        read_as(addr, fixture, end).await;
    }
    settle(&tooltap, fixtures.len() as u64).await;
    if let Some(recorder) = &tooltap.state().admission.inspection().recorder {
        within(Duration::from_secs(20), recorder.flush()).await;
    }

    let checked = check_json(&recordings);
    assert!(checked.code <= 1, "check failed: {}", checked.stderr);
    let report = checked.report;
    let offline: BTreeMap<String, Vec<Value>> = report["exchanges"]
        .as_array()
        .expect("exchanges")
        .iter()
        .map(|e| {
            let id = e["id"].as_str().expect("id").to_string();
            let list = e["violations"].as_array().expect("list");
            (id, list.iter().map(|v| comparable(v, true)).collect())
        })
        .collect();
    assert_eq!(
        offline.len(),
        fixtures.len(),
        "{end:?}: one recording per exchange"
    );
    let live = violations_by_exchange(&violations);
    let mut compared = 0;
    let mut rules = Vec::new();
    for (id, judged) in &offline {
        let online: Vec<Value> = live
            .get(id)
            .map(|l| l.iter().map(|v| comparable(v, true)).collect())
            .unwrap_or_default();
        assert_eq!(
            sorted(judged.clone()),
            sorted(online),
            "{end:?}: exchange {id}"
        );
        compared += judged.len();
        rules.extend(
            judged
                .iter()
                .filter_map(|v| v["rule"].as_str().map(str::to_string)),
        );
    }
    (offline.len(), compared, rules)
}

#[tokio::test]
async fn complete_exchanges_get_equal_verdicts_live_and_offline() {
    let (exchanges, compared, _) = live_equals_offline(End::Complete).await;
    assert!(
        exchanges > 30 && compared > 50,
        "{exchanges} exchanges, {compared} violations"
    );
}

#[tokio::test]
async fn a_broken_upstream_is_judged_live_as_offline_with_the_stream_rules() {
    let (_, compared, rules) = live_equals_offline(End::UpstreamBreaks).await;
    assert!(compared > 50, "only {compared} violations compared");
    // Streams that ended well upstream now end broken: the client got no [DONE].
    assert!(
        rules.iter().any(|r| r == "sse.done_missing"),
        "a broken stream is judged live: {rules:?}"
    );
}

#[tokio::test]
async fn a_client_leaving_after_done_gets_equal_verdicts() {
    let (_, compared, _) = live_equals_offline(End::ClientLeavesAfterDone).await;
    assert!(compared > 50, "only {compared} violations compared");
}

#[tokio::test]
async fn a_client_leaving_mid_stream_gets_equal_verdicts() {
    let (exchanges, _, _) = live_equals_offline(End::ClientLeavesAfterFirstFrame).await;
    assert!(exchanges > 30);
}

#[tokio::test]
async fn an_empty_2xx_body_is_judged_not_reported_as_a_client_that_left() {
    let upstream = crate::support::upstream::Upstream::serving(
        crate::support::upstream::Script::full(200, "application/json", ""),
    )
    .await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let addr = tooltap.local_addr();
    let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
    let got =
        crate::support::client::exchange(addr, request(addr, "POST", "/v1/chat/completions", body))
            .await;
    assert_eq!((got.status.as_u16(), got.body.len()), (200, 0));
    let text = settle(&tooltap, 1).await;
    assert_metric!(
        text,
        "tooltap_violations_total",
        ["rule=\"response.not_json\""] == 1,
        "an empty body where JSON was due is a violation"
    );
    assert_metric!(text, "tooltap_inspection_incomplete_total", [] == 0);
}
