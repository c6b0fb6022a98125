//! Bodies stream both ways: each upstream chunk reaches the client before the next is sent,
//! frame boundaries survive, request bodies flow before they are complete, and a client that
//! leaves mid-stream makes tooltap drop the upstream request.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::BodyExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::support::body::channel;
use crate::support::client::{collect, request, send};
use crate::support::upstream::{Script, StreamEnd, Upstream};
use crate::support::{proxy, within};

const GAP: Duration = Duration::from_millis(100);

fn sse_events(count: usize) -> Vec<String> {
    (0..count)
        .map(|i| {
            format!(
                "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"part {i}\"}}}}]}}\n\n"
            )
        })
        .collect()
}

#[tokio::test]
async fn sse_events_reach_the_client_before_the_next_is_sent_and_keep_their_framing() {
    let events = sse_events(4);
    let event_refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let upstream = Upstream::serving(Script::sse(&event_refs, GAP)).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let addr = tooltap.local_addr();

    let (response, _conn) = send(addr, request(addr, "POST", "/v1/chat/completions", "{}")).await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body();
    let mut arrivals = Vec::new();
    let mut frames = Vec::new();
    while let Some(frame) = within(Duration::from_secs(5), body.frame()).await {
        if let Ok(data) = frame.expect("frame").into_data() {
            arrivals.push(Instant::now());
            frames.push(data);
        }
    }
    let sent = upstream.chunk_times();
    assert_eq!(
        frames.len(),
        events.len(),
        "chunk count changed: {frames:?}"
    );
    for (frame, event) in frames.iter().zip(&events) {
        assert_eq!(frame, event.as_bytes());
    }
    let mut worst = Duration::ZERO;
    for index in 0..frames.len() {
        worst = worst.max(arrivals[index] - sent[index]);
        if index + 1 < sent.len() {
            assert!(
                arrivals[index] < sent[index + 1],
                "event {index} arrived after event {} was sent: buffered",
                index + 1
            );
        }
    }
    eprintln!("worst upstream-send → client-receive latency: {worst:?}");
}

#[tokio::test]
async fn a_client_leaving_mid_stream_makes_tooltap_drop_the_upstream() {
    let events = sse_events(40);
    let event_refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let mut upstream = Upstream::serving(Script::sse(&event_refs, Duration::from_millis(50))).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let addr = tooltap.local_addr();

    let left = read_one_frame_then_leave(addr).await;

    match upstream.next_end(Duration::from_secs(3)).await {
        StreamEnd::PeerGone { chunks_sent } => {
            eprintln!(
                "upstream saw the drop {:?} after the client left",
                left.elapsed()
            );
            assert!(
                chunks_sent < 10,
                "upstream kept streaming: {chunks_sent} chunks"
            );
        }
        StreamEnd::Completed => panic!("upstream streamed to the end for a client that left"),
    }
}

#[tokio::test]
async fn tooltap_closes_the_upstream_connection_at_once_even_while_the_upstream_is_idle() {
    // A bare-TCP upstream: it sends a head and one chunk, then only reads, so it learns of the
    // close the moment tooltap closes the socket, not at its next write (a hyper server only
    // notices on its next write, which is what the scripted upstream above measures).
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let upstream_addr = listener.local_addr().expect("addr");
    let (closed_tx, closed_rx) = oneshot::channel::<Instant>();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.expect("accept");
        let mut buffer = vec![0u8; 64 * 1024];
        let _request = stream.read(&mut buffer).await.expect("read request");
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                    transfer-encoding: chunked\r\n\r\n8\r\ndata: 1\n\r\n";
        stream.write_all(head.as_bytes()).await.expect("write head");
        while let Ok(read) = stream.read(&mut buffer).await {
            if read == 0 {
                break;
            }
        }
        let _ = closed_tx.send(Instant::now());
    });
    let tooltap = proxy::start(proxy::raw_config(&format!("http://{upstream_addr}"))).await;
    let addr = tooltap.local_addr();

    let left = read_one_frame_then_leave(addr).await;
    let closed = within(Duration::from_secs(5), closed_rx)
        .await
        .expect("closed");
    let after = closed.saturating_duration_since(left);
    eprintln!("upstream connection closed {after:?} after the client left");
    assert!(after < Duration::from_millis(500), "took {after:?}");
}

#[tokio::test]
async fn a_large_request_body_streams_to_the_upstream_before_it_is_complete() {
    const TOTAL: usize = 8 * 1024 * 1024;
    const PIECE: usize = 64 * 1024;
    let mut upstream = Upstream::serving(Script::full(200, "text/plain", "stored")).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let addr = tooltap.local_addr();
    let pattern: Vec<u8> = (0..TOTAL).map(|i| (i % 251) as u8).collect();

    let (sender, body) = channel(4);
    let upload = Request::builder()
        .method("POST")
        .uri("/v1/files")
        .header("host", addr.to_string())
        .header("content-length", TOTAL.to_string())
        .body(body)
        .expect("request");
    let exchange = tokio::spawn(async move { collect(send(addr, upload).await.0).await });

    // Send the first MiB, then wait until the upstream holds it: a proxy that buffered the whole
    // body would never forward it, and this wait would time out.
    let mut progress = upstream.body_progress();
    let first_mib = 1024 * 1024;
    for piece in pattern[..first_mib].chunks(PIECE) {
        within(
            Duration::from_secs(5),
            sender.send(Ok(Bytes::copy_from_slice(piece))),
        )
        .await
        .expect("send");
    }
    within(
        Duration::from_secs(5),
        progress.wait_for(|&n| n >= first_mib as u64),
    )
    .await
    .expect("progress");
    for piece in pattern[first_mib..].chunks(PIECE) {
        within(
            Duration::from_secs(5),
            sender.send(Ok(Bytes::copy_from_slice(piece))),
        )
        .await
        .expect("send");
    }
    drop(sender);

    let response = within(Duration::from_secs(10), exchange)
        .await
        .expect("task");
    assert_eq!(
        (response.status.as_u16(), &response.body[..]),
        (200, &b"stored"[..])
    );
    let seen = upstream.next_request().await;
    assert_eq!(seen.headers["content-length"], TOTAL.to_string());
    assert_eq!(seen.body.len(), TOTAL);
    assert!(
        seen.body == pattern,
        "request body bytes changed on the way"
    );
}

#[tokio::test]
async fn an_upstream_breaking_off_mid_stream_is_a_broken_stream_for_the_client_too() {
    let events = sse_events(3);
    let event_refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let script = Script::sse(&event_refs, Duration::from_millis(20)).aborted();
    let upstream = Upstream::serving(script).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;

    let direct = frames_until_end(upstream.addr()).await;
    assert_eq!(
        direct,
        (3, true),
        "the test upstream should break the stream off"
    );
    // A proxy that ended the stream cleanly would make a truncated answer look complete.
    assert_eq!(frames_until_end(tooltap.local_addr()).await, direct);
}

/// Data frames of one streamed response, and whether it ended with an error.
async fn frames_until_end(addr: std::net::SocketAddr) -> (usize, bool) {
    let (response, _conn) = send(addr, request(addr, "POST", "/v1/chat/completions", "{}")).await;
    let mut body = response.into_body();
    let mut frames = 0;
    loop {
        match within(Duration::from_secs(5), body.frame()).await {
            None => return (frames, false),
            Some(Err(_)) => return (frames, true),
            Some(Ok(_)) => frames += 1,
        }
    }
}

/// Start a stream through `addr`, read its first frame, then close the connection; returns when
/// the client left.
async fn read_one_frame_then_leave(addr: std::net::SocketAddr) -> Instant {
    let (response, conn) = send(addr, request(addr, "POST", "/v1/chat/completions", "{}")).await;
    let mut body = response.into_body();
    let first = within(Duration::from_secs(5), body.frame()).await;
    assert!(first.is_some_and(|frame| frame.is_ok()));
    let left = Instant::now();
    drop(body);
    drop(conn);
    left
}

/// How soon a response head must reach the client when the upstream has sent it with no body
/// byte yet (far less than the upstream's wait before its first event).
const HEAD_BOUND: Duration = Duration::from_secs(3);

/// An event stream is open for the client the moment the upstream answers its head: an MCP
/// client's standalone `GET /mcp` stream (inspected as MCP) and a streamed completion alike get
/// the head at once, not with the first event, which may come minutes later (an MCP server sends
/// on its GET stream only when it has something to say).
#[tokio::test]
async fn an_event_stream_head_reaches_the_client_before_the_first_event() {
    let first_event_after = Duration::from_secs(30);
    let upstream = Upstream::serving(Script {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        chunks: vec![(first_event_after, Bytes::from_static(b": late\n\n"))],
        silent: false,
        abort: false,
    })
    .await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let addr = tooltap.local_addr();
    for (method, path) in [("GET", "/mcp"), ("POST", "/v1/chat/completions")] {
        let mut request = request(addr, method, path, "");
        request.headers_mut().insert(
            http::header::ACCEPT,
            http::HeaderValue::from_static("text/event-stream"),
        );
        let started = Instant::now();
        let (response, _conn) = send(addr, request).await;
        let waited = started.elapsed();
        assert!(
            waited < HEAD_BOUND,
            "{method} {path}: the head took {waited:?}, held back until a body byte"
        );
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let mut body = response.into_body();
        assert!(
            tokio::time::timeout(Duration::from_millis(200), body.frame())
                .await
                .is_err(),
            "{method} {path}: a body frame arrived although the upstream sent none yet"
        );
    }
}
