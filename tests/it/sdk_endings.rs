//! The official `openai` Python SDK closes a stream's connection right after `data: [DONE]`,
//! before the upstream's final chunk terminator. A stream whose content was whole is judged
//! complete whatever the transport did after: its end-of-stream rules are applied every time,
//! and it is not counted as a client that went away.

use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;

use crate::support::clients::run_python;
use crate::support::fixtures::settle;
use crate::support::metrics::assert_metric;
use crate::support::proxy;
use crate::support::upstream::{Script, Upstream};

/// A stream with no finish_reason (`stream.truncated` at its end), `[DONE]`, and then a keep-alive
/// comment 100 ms later, so the chunked terminator comes well after the SDK has closed.
fn stream_then_late_end() -> Script {
    let events = [
        r#"data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        r#"data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hello"},"finish_reason":null}]}"#,
        "data: [DONE]",
    ];
    let mut script = Script::sse(
        &events
            .map(|e| format!("{e}\n\n"))
            .each_ref()
            .map(String::as_str),
        Duration::ZERO,
    );
    script.chunks.push((
        Duration::from_millis(100),
        Bytes::from_static(b": late keep-alive\n\n"),
    ));
    script
}

#[tokio::test]
async fn a_stream_the_python_sdk_closes_after_done_is_judged_complete_every_time() {
    const STREAMS: u64 = 40;
    let upstream = Upstream::serving(stream_then_late_end()).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let base_url = format!("http://{}/v1", tooltap.local_addr());
    let output = run_python(
        "stream_after_done.py",
        &[base_url, STREAMS.to_string()],
        Duration::from_secs(120),
    )
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "python failed: {stderr}");
    let out: Value = serde_json::from_slice(&output.stdout).expect("script prints JSON");
    assert_eq!(out["streams"], STREAMS, "{out}");
    assert_eq!(out["chunks"], serde_json::json!([2]), "{out}");

    let text = settle(&tooltap, STREAMS).await;
    assert_metric!(
        text,
        "tooltap_violations_total",
        ["rule=\"stream.truncated\""] == STREAMS,
        "every stream's end-of-stream rules ran"
    );
    assert_metric!(
        text,
        "tooltap_inspection_incomplete_total",
        ["client_gone"] == 0,
        "a stream whose [DONE] arrived is not a client that went away"
    );
}
