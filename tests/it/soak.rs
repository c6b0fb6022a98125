//! A bounded soak: 1,000 concurrent streams through the inspecting proxy. Every stream
//! completes byte for byte, every exchange is inspected or reported skipped, and the process's
//! resident memory stays bounded while they run.

use std::time::Duration;

use crate::support::client::{exchange, request};
use crate::support::metrics::assert_metric;
use crate::support::metrics::metric_sum;
use crate::support::proxy;
use crate::support::upstream::{Script, Upstream};
use crate::support::within;

const STREAMS: usize = 1000;

/// Resident set size of this test process (client, proxy and upstream together), in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_streams_all_complete_and_are_all_accounted_for() {
    let event = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n";
    let last = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let mut events = vec![event; 9];
    events.push(last);
    let expected = events.concat();
    let upstream = Upstream::serving(Script::sse(&events, Duration::from_millis(30))).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let addr = tooltap.local_addr();
    let body = r#"{"model":"m","stream":true,"messages":[]}"#;
    let before = rss_kib();
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(before));
    let sampler = {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                peak.fetch_max(rss_kib(), std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..STREAMS {
        tasks.spawn(async move {
            within(
                Duration::from_secs(60),
                exchange(addr, request(addr, "POST", "/v1/chat/completions", body)),
            )
            .await
        });
    }
    let mut completed = 0;
    while let Some(result) = within(Duration::from_secs(90), tasks.join_next()).await {
        let got = result.expect("client task");
        assert_eq!(got.body, expected.as_bytes());
        completed += 1;
    }
    sampler.abort();
    assert_eq!(completed, STREAMS);
    let growth_kib = peak
        .load(std::sync::atomic::Ordering::Relaxed)
        .saturating_sub(before);
    eprintln!("soak: {STREAMS} streams, RSS {before} KiB before, +{growth_kib} KiB at peak");
    // Client, proxy and upstream together, debug build: well under 256 KiB per stream.
    assert!(growth_kib < 256 * 1024, "RSS grew by {growth_kib} KiB");

    let text = within(Duration::from_secs(30), async {
        loop {
            let text = crate::support::metrics::metrics(&tooltap).await;
            let done = metric_sum(&text, "tooltap_exchanges_inspected_total", &[])
                + metric_sum(
                    &text,
                    "tooltap_inspection_incomplete_total",
                    &["reason=\"skipped\""],
                );
            if done >= STREAMS as u64 {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert_eq!(
        metric_sum(&text, "tooltap_exchanges_inspected_total", &[])
            + metric_sum(
                &text,
                "tooltap_inspection_incomplete_total",
                &["reason=\"skipped\""]
            ),
        STREAMS as u64,
        "every exchange inspected or reported skipped"
    );
    assert_metric!(text, "tooltap_violations_total", [] == 0);
    assert_metric!(
        text,
        "tooltap_requests_total",
        ["status=\"200\""] == STREAMS as u64
    );
}
