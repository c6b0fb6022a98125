//! Faults through the real proxy: the client sees what it would see direct, the exchange is
//! reported for what happened, and nothing hangs.

use std::time::{Duration, Instant};

use http_body_util::BodyExt;

use crate::support::TempDir;
use crate::support::client::{request, send};
use crate::support::fixtures::settle;
use crate::support::metrics::assert_metric;
use crate::support::proxy;
use crate::support::upstream::{Script, Upstream};
use crate::support::within;
use tooltap::config::{HumanDuration, RawConfig};
use tooltap::proxy::server::RunningProxy;
use tooltap::record::{Outcome, RecordMode};

/// A proxy config that records every exchange into `dir`.
fn recording_all(upstream: &str, dir: &std::path::Path) -> RawConfig {
    let mut raw = proxy::raw_config(upstream);
    raw.record.mode = Some(RecordMode::All);
    raw.record.dir = Some(dir.to_path_buf());
    raw
}

/// The outcome written in the one recording under `dir`, once the inspector is done.
async fn recorded_outcome(tooltap: &RunningProxy, dir: &std::path::Path) -> Outcome {
    settle(tooltap, 1).await;
    if let Some(recorder) = &tooltap.state().admission.inspection().recorder {
        within(Duration::from_secs(10), recorder.flush()).await;
    }
    let mut stack = vec![dir.to_path_buf()];
    let mut files = Vec::new();
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder)
            .expect("recordings folder")
            .flatten()
        {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                files.push(path);
            }
        }
    }
    assert_eq!(files.len(), 1, "{files:?}");
    let recording = tooltap::record::read_file(&files[0]).expect("readable");
    recording.end.expect("an end line").outcome
}

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
    assert_metric!(
        text,
        "tooltap_inspection_incomplete_total",
        ["reason=\"upstream_error\""] == 1
    );
}

#[tokio::test]
async fn an_upstream_that_breaks_off_mid_stream_is_judged_reported_and_recorded_by_default() {
    let events = ["data: {\"choices\":[]}\n\n"; 3];
    let script = Script::sse(&events, Duration::from_millis(10)).aborted();
    let upstream = Upstream::serving(script).await;
    let recordings = TempDir::new("faults-upstream-error");
    // The default record mode: only exchanges with violations are kept.
    let mut raw = recording_all(&upstream.url(), &recordings);
    raw.record.mode = Some(RecordMode::Violations);
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let (response, _conn) = send(addr, request(addr, "POST", "/v1/chat/completions", BODY)).await;
    let outcome = within(Duration::from_secs(10), read_to_end(response.into_body())).await;
    assert!(
        outcome.is_err(),
        "the client must see the break: {outcome:?}"
    );
    // The client got a stream with no end: judged as such live, so it is recorded for replay.
    assert_eq!(
        recorded_outcome(&tooltap, &recordings).await,
        Outcome::UpstreamBroke
    );
    let text = settle(&tooltap, 1).await;
    assert_metric!(
        text,
        "tooltap_inspection_incomplete_total",
        ["reason=\"upstream_error\""] == 1
    );
    assert_metric!(
        text,
        "tooltap_violations_total",
        ["rule=\"sse.done_missing\""] == 1,
        "sse.done_missing is reported live for a broken stream"
    );
}

#[tokio::test]
async fn a_client_that_aborts_mid_stream_is_recorded_client_gone() {
    let events = ["data: {\"choices\":[]}\n\n"; 40];
    let upstream = Upstream::serving(Script::sse(&events, Duration::from_millis(50))).await;
    let recordings = TempDir::new("faults-client-gone");
    let tooltap = proxy::start(recording_all(&upstream.url(), &recordings)).await;
    let addr = tooltap.local_addr();
    let (response, conn) = send(addr, request(addr, "POST", "/v1/chat/completions", BODY)).await;
    let mut body = response.into_body();
    let first = within(Duration::from_secs(10), body.frame()).await;
    assert!(first.is_some_and(|f| f.is_ok()));
    drop(body);
    drop(conn);
    assert_eq!(
        recorded_outcome(&tooltap, &recordings).await,
        Outcome::ReaderGone
    );
}
