//! Bad input through the real proxy: each case gets a clear error or a reported finding, the
//! client's bytes are never altered, and the next exchange is served as usual.

use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::client::{exchange, request};
use crate::support::fixtures::settle;
use crate::support::metrics::assert_metric;
use crate::support::oversized::{
    self, CONVERSE_REQUEST, CONVERSE_STREAM, EVENT_STREAM, NDJSON, OLLAMA_REQUEST,
};
use crate::support::proxy;
use crate::support::upstream::{Script, Upstream};
use crate::support::within;
use tooltap::proxy::server::RunningProxy;

const LIMIT: Duration = Duration::from_secs(20);
const REQUEST: &str = r#"{"model":"m","stream":true,"messages":[]}"#;

/// Send raw bytes and read what comes back until the server closes or 2 s pass.
async fn raw_exchange(addr: std::net::SocketAddr, bytes: &[u8]) -> String {
    let mut stream = within(LIMIT, TcpStream::connect(addr))
        .await
        .expect("connect");
    stream.write_all(bytes).await.expect("write");
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(2), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Err(_) | Ok(Err(_)) => break,
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn still_serves(tooltap: &RunningProxy) {
    let addr = tooltap.local_addr();
    let ok = within(
        LIMIT,
        exchange(addr, request(addr, "GET", "/v1/models", "")),
    )
    .await;
    assert_eq!(ok.status, 200, "tooltap stopped serving after bad input");
}

#[tokio::test]
async fn smuggling_and_absurd_heads_are_refused_without_reaching_the_upstream() {
    let mut upstream = Upstream::serving(Script::full(200, "application/json", "{}")).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let addr = tooltap.local_addr();

    let smuggle = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\
Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
    let answer = raw_exchange(addr, smuggle).await;
    // RFC 9112 §6.3: Transfer-Encoding wins over Content-Length, and the connection must close
    // after the response, so the bytes after the chunked body are never read as a request.
    assert_eq!(answer.matches("HTTP/1.1 ").count(), 1, "{answer:?}");
    assert!(
        answer.starts_with("HTTP/1.1 400") || answer.contains("connection: close"),
        "conflicting framing must be refused or end the connection: {answer:?}"
    );
    let first = within(LIMIT, upstream.next_request()).await;
    assert_eq!(first.uri, "/v1/chat/completions");
    assert!(
        first.body.is_empty(),
        "the chunked body was empty: {:?}",
        first.body
    );

    let mut many = String::from("GET /v1/models HTTP/1.1\r\nHost: x\r\n");
    for i in 0..500 {
        many.push_str(&format!("x-h{i}: v\r\n"));
    }
    many.push_str("\r\n");
    let answer = raw_exchange(addr, many.as_bytes()).await;
    assert!(
        answer.starts_with("HTTP/1.1 431"),
        "500 headers: {answer:?}"
    );

    let huge = format!(
        "GET /v1/models HTTP/1.1\r\nHost: x\r\nx-big: {}\r\n\r\n",
        "a".repeat(1 << 20)
    );
    let answer = raw_exchange(addr, huge.as_bytes()).await;
    assert!(
        answer.starts_with("HTTP/1.1 431"),
        "a 1 MiB header: {:?}",
        &answer[..answer.len().min(80)]
    );

    still_serves(&tooltap).await;
    // Then only the health request reached the upstream: nothing smuggled through.
    let received = within(LIMIT, upstream.next_request()).await;
    assert_eq!(received.uri, "/v1/models");
    assert!(
        tokio::time::timeout(Duration::from_millis(200), upstream.next_request())
            .await
            .is_err()
    );
}

/// An SSE upstream whose single event is `payload`.
async fn sse_upstream(payload: Bytes, encoding: Option<&str>) -> Upstream {
    let mut headers = vec![("content-type".to_string(), "text/event-stream".to_string())];
    if let Some(encoding) = encoding {
        headers.push(("content-encoding".into(), encoding.into()));
    }
    Upstream::serving(Script {
        status: 200,
        headers,
        chunks: vec![(Duration::ZERO, payload)],
        silent: false,
        abort: false,
    })
    .await
}

/// Serve `payload`, check the client gets it byte for byte, and return `/metrics`.
async fn through(payload: Bytes, encoding: Option<&str>) -> String {
    let upstream = sse_upstream(payload.clone(), encoding).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let addr = tooltap.local_addr();
    let got = within(
        LIMIT,
        exchange(addr, request(addr, "POST", "/v1/chat/completions", REQUEST)),
    )
    .await;
    assert_eq!(got.body, payload, "the client's bytes changed");
    let text = settle(&tooltap, 1).await;
    still_serves(&tooltap).await;
    text
}

#[tokio::test]
async fn non_utf8_bytes_in_a_stream_are_a_finding_not_a_failure() {
    let text = through(
        Bytes::from_static(b"data: \xff\xfe{\n\ndata: [DONE]\n\n"),
        None,
    )
    .await;
    assert_metric!(
        text,
        "tooltap_violations_total",
        ["rule=\"sse.data_not_json\""] == 1
    );
}

#[tokio::test]
async fn a_ten_megabyte_sse_line_is_bounded_and_reported_too_large() {
    let mut line = b"data: ".to_vec();
    line.extend(std::iter::repeat_n(b'a', 10 << 20));
    line.extend_from_slice(b"\n\n");
    let text = through(Bytes::from(line), None).await;
    assert_metric!(
        text,
        "tooltap_inspection_incomplete_total",
        ["reason=\"too_large\""] == 1
    );
    assert_metric!(text, "tooltap_violations_total", [] == 0);
}

#[tokio::test]
async fn deeply_nested_json_is_rejected_by_the_parser_not_the_stack() {
    let depth = 100_000;
    let mut event = b"data: ".to_vec();
    event.extend(std::iter::repeat_n(b'[', depth));
    event.extend(std::iter::repeat_n(b']', depth));
    event.extend_from_slice(b"\n\ndata: [DONE]\n\n");
    let text = through(Bytes::from(event), None).await;
    assert_metric!(
        text,
        "tooltap_violations_total",
        ["rule=\"sse.data_not_json\""] == 1
    );
}

#[tokio::test]
async fn an_unknown_content_encoding_passes_untouched_and_is_not_judged() {
    let text = through(
        Bytes::from_static(b"\x00\x01compressed?"),
        Some("x-unknown"),
    )
    .await;
    assert_metric!(text, "tooltap_violations_total", [] == 0);
    assert_metric!(text, "tooltap_exchanges_inspected_total", [] == 1);
}

#[tokio::test]
async fn a_request_body_over_the_inspection_bound_is_forwarded_whole_and_reported_too_large() {
    let mut upstream = Upstream::serving(Script::full(200, "application/json", "{}")).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.max_request_body = Some(1024);
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let big = format!(
        r#"{{"model":"m","messages":[{{"role":"user","content":"{}"}}]}}"#,
        "x".repeat(8192)
    );
    let got = within(
        LIMIT,
        exchange(addr, request(addr, "POST", "/v1/chat/completions", &big)),
    )
    .await;
    assert_eq!(got.status, 200);
    let received = within(LIMIT, upstream.next_request()).await;
    assert_eq!(
        received.body,
        big.as_bytes(),
        "the upstream got the body whole"
    );
    let text = settle(&tooltap, 1).await;
    assert_metric!(
        text,
        "tooltap_inspection_incomplete_total",
        ["reason=\"too_large\""] == 1
    );
}

/// What one framing attack left: `/metrics`, and the most bytes inspection accounted for
/// (`inspect.max_memory`'s count, sampled every millisecond while the exchange ran).
struct Attacked {
    metrics: String,
    accounted_peak: usize,
}

/// Serves `payload` as `content_type` to a `path` request of `body`, in 64 KiB frames; checks
/// the client gets it byte for byte and that tooltap still serves after.
async fn attack(path: &str, body: &str, content_type: &str, payload: Bytes) -> Attacked {
    let chunks = payload
        .chunks(64 * 1024)
        .map(|chunk| (Duration::ZERO, Bytes::copy_from_slice(chunk)))
        .collect();
    let upstream = Upstream::serving(Script {
        status: 200,
        headers: vec![("content-type".into(), content_type.into())],
        chunks,
        silent: false,
        abort: false,
    })
    .await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let memory = tooltap.state().admission.inspection().memory.clone();
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = tokio::spawn({
        let (memory, sampling) = (memory.clone(), sampling.clone());
        async move {
            let mut peak = 0;
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(memory.used());
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            peak
        }
    });
    let addr = tooltap.local_addr();
    let got = within(LIMIT, exchange(addr, request(addr, "POST", path, body))).await;
    assert_eq!(got.status, 200);
    assert!(got.body == payload, "the client's bytes changed");
    let metrics = settle(&tooltap, 1).await;
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    let accounted_peak = within(LIMIT, sampler).await.expect("sampler");
    within(LIMIT, async {
        while memory.used() > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    still_serves(&tooltap).await;
    Attacked {
        metrics,
        accounted_peak,
    }
}

/// What one exchange may account for with the default bounds and no recording: the larger of
/// `inspect.max_json_body` and `inspect.max_reassembled` (16 MiB each), and its request.
const ACCOUNTED_BOUND: usize = 16 * 1024 * 1024 + 64 * 1024;

/// Inspection stopped on a framing bound: `too_large` counted once, no violation at all.
fn assert_cut_too_large(attacked: &Attacked) {
    let text = &attacked.metrics;
    assert_metric!(
        text,
        "tooltap_inspection_incomplete_total",
        ["reason=\"too_large\""] == 1
    );
    assert_metric!(text, "tooltap_violations_total", [] == 0);
    assert!(
        attacked.accounted_peak <= ACCOUNTED_BOUND,
        "accounted {} bytes",
        attacked.accounted_peak
    );
}

/// An Ollama NDJSON line of 12 MiB, past the line bound (`max_sse_line`, 8 MiB) and within
/// `inspect.max_reassembled` (16 MiB), so only the line bound can cut it: the framer stops there
/// (`limit: ndjson_line`).
#[tokio::test]
async fn a_12_mib_ndjson_line_is_forwarded_whole_and_its_inspection_stops_too_large() {
    let body = oversized::ndjson_line(12 << 20);
    let attacked = attack("/api/chat", OLLAMA_REQUEST, NDJSON, body.into()).await;
    assert_cut_too_large(&attacked);
}

/// A Bedrock event-stream prelude (its CRC right) announcing a 12 MiB message, past the
/// message bound (`max_sse_line`, 8 MiB), within the protocol's limits and within
/// `inspect.max_reassembled`, then 1 MiB of the message and the end: decoding stops at the
/// prelude, holding none of it (`limit: event_stream_message`), and the cut message is not
/// reported as truncated.
#[tokio::test]
async fn an_event_stream_prelude_announcing_past_the_bound_stops_inspection_too_large() {
    let body = oversized::event_stream_announcing(12 << 20, 1 << 20);
    let attacked = attack(CONVERSE_STREAM, CONVERSE_REQUEST, EVENT_STREAM, body.into()).await;
    assert_cut_too_large(&attacked);
}

/// A whole, valid 12 MiB `contentBlockDelta` message (both CRCs right), then the stream's
/// usual end: the same stop at its prelude; the client gets every byte and the messages after
/// it.
#[tokio::test]
async fn a_real_12_mib_event_stream_message_is_forwarded_whole_and_stops_inspection_too_large() {
    let body = oversized::event_stream_message(12 << 20);
    let attacked = attack(CONVERSE_STREAM, CONVERSE_REQUEST, EVENT_STREAM, body.into()).await;
    assert_cut_too_large(&attacked);
}
