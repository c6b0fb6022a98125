//! Faults through the real proxy: the client sees what it would see direct, the exchange is
//! reported for what happened, and nothing hangs.

use std::time::{Duration, Instant};

use http_body_util::BodyExt;

use crate::inspect::{metric_sum, settle};
use crate::support::client::{request, send};
use crate::support::proxy;
use crate::support::upstream::{Script, Upstream};
use crate::support::within;
use tooltap::config::HumanDuration;

const BODY: &str = r#"{"model":"m","stream":true,"messages":[]}"#;

/// Read a response body to its end; `Err` when it broke off.
async fn read_to_end(body: hyper::body::Incoming) -> Result<usize, String> {
    let mut body = body;
    let mut total = 0;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| e.to_string())?;
        total += frame.into_data().map_or(0, |d| d.len());
    }
    Ok(total)
}

#[tokio::test]
async fn an_upstream_that_goes_silent_mid_stream_is_cut_after_the_idle_timeout_and_reported() {
    let events = ["data: {\"choices\":[]}\n\n", "data: [DONE]\n\n"];
    // The second event would come after a minute: the idle timeout must cut well before.
    let upstream = Upstream::serving(Script::sse(&events, Duration::from_secs(60))).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.timeouts.stream_idle = Some(HumanDuration(Duration::from_millis(300)));
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let started = Instant::now();
    let (response, _conn) = send(addr, request(addr, "POST", "/v1/chat/completions", BODY)).await;
    assert_eq!(response.status(), 200);
    let outcome = within(Duration::from_secs(10), read_to_end(response.into_body())).await;
    let elapsed = started.elapsed();
    assert!(
        outcome.is_err(),
        "a cut stream must not look complete: {outcome:?}"
    );
    assert!(
        elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(5),
        "{elapsed:?}"
    );
    let text = settle(&tooltap, 1).await;
    assert_eq!(
        metric_sum(
            &text,
            "tooltap_inspection_incomplete_total",
            &["reason=\"upstream_error\""]
        ),
        1
    );
}

#[tokio::test]
async fn an_upstream_that_breaks_off_mid_stream_is_reported_as_upstream_error() {
    let events = ["data: {\"choices\":[]}\n\n"; 3];
    let script = Script::sse(&events, Duration::from_millis(10)).aborted();
    let upstream = Upstream::serving(script).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let addr = tooltap.local_addr();
    let (response, _conn) = send(addr, request(addr, "POST", "/v1/chat/completions", BODY)).await;
    let outcome = within(Duration::from_secs(10), read_to_end(response.into_body())).await;
    assert!(
        outcome.is_err(),
        "the client must see the break: {outcome:?}"
    );
    let text = settle(&tooltap, 1).await;
    assert_eq!(
        metric_sum(
            &text,
            "tooltap_inspection_incomplete_total",
            &["reason=\"upstream_error\""]
        ),
        1
    );
    // The engine does not judge a body that was cut: no stream.truncated blamed on the upstream's
    // contract for a transport failure.
    assert_eq!(metric_sum(&text, "tooltap_violations_total", &[]), 0);
}
