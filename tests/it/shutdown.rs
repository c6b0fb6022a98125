//! Graceful shutdown: new connections are refused at once, in-flight streams finish within the
//! grace period, and streams still running when it ends are cut.

use std::time::Duration;

use http_body_util::BodyExt;
use tokio::net::TcpStream;

use crate::support::client::{request, send};
use crate::support::upstream::{Script, Upstream};
use crate::support::{proxy, within};
use tooltap::config::HumanDuration;

fn events(count: usize) -> Vec<String> {
    (0..count).map(|i| format!("data: {i}\n\n")).collect()
}

async fn wait_until_refused(addr: std::net::SocketAddr) {
    within(Duration::from_secs(3), async {
        while TcpStream::connect(addr).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn an_in_flight_stream_finishes_after_shutdown_starts() {
    let events = events(6);
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let upstream = Upstream::serving(Script::sse(&refs, Duration::from_millis(100))).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let addr = tooltap.local_addr();

    let (response, _conn) = send(addr, request(addr, "POST", "/v1/chat/completions", "{}")).await;
    let mut body = response.into_body();
    let first = within(Duration::from_secs(5), body.frame()).await;
    assert!(first.is_some_and(|frame| frame.is_ok()));
    let stopping = tokio::spawn(tooltap.shutdown());
    wait_until_refused(addr).await;

    let mut received = 1;
    while let Some(frame) = within(Duration::from_secs(5), body.frame()).await {
        frame.expect("stream cut during graceful shutdown");
        received += 1;
    }
    assert_eq!(received, events.len());
    let report = within(Duration::from_secs(5), stopping)
        .await
        .expect("task")
        .expect("serve");
    assert_eq!(report.connections_cut, 0);
}

#[tokio::test]
async fn streams_still_running_after_the_grace_period_are_cut() {
    let events = events(30);
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let upstream = Upstream::serving(Script::sse(&refs, Duration::from_millis(100))).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.shutdown.grace = Some(HumanDuration(Duration::from_millis(200)));
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();

    let (response, _conn) = send(addr, request(addr, "POST", "/v1/chat/completions", "{}")).await;
    let mut body = response.into_body();
    assert!(within(Duration::from_secs(5), body.frame()).await.is_some());
    let report = within(Duration::from_secs(3), tooltap.shutdown())
        .await
        .expect("serve");
    assert_eq!(report.connections_cut, 1);

    let mut received = 1;
    while let Some(Ok(_)) = within(Duration::from_secs(5), body.frame()).await {
        received += 1;
    }
    assert!(
        received < events.len(),
        "stream was not cut: {received} events"
    );
}
