//! Client-side protocol handling: h2c clients are served (auto builder) and keep streaming
//! frame by frame to an HTTP/1.1 upstream; a client that never finishes its request head is
//! disconnected after `timeouts.header_read` (which only works with a timer wired in).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::client::connect;
use crate::support::upstream::{Script, Upstream};
use crate::support::{proxy, within};
use tooltap::config::HumanDuration;

/// Every data frame of one h2c (prior knowledge) request to `addr`.
async fn h2c_frames(addr: SocketAddr) -> Vec<Bytes> {
    let stream = within(Duration::from_secs(5), TcpStream::connect(addr))
        .await
        .expect("connect");
    let handshake =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream));
    let (mut sender, connection) = within(Duration::from_secs(5), handshake)
        .await
        .expect("h2 handshake");
    tokio::spawn(connection);
    let request = Request::post(format!("http://{addr}/v1/chat/completions?stream=true"))
        .header("authorization", "Bearer sk-h2")
        .body(Full::new(Bytes::from_static(b"{\"stream\":true}")))
        .expect("request");
    let response = within(Duration::from_secs(5), sender.send_request(request))
        .await
        .expect("response");
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut frames = Vec::new();
    while let Some(frame) = within(Duration::from_secs(5), body.frame()).await {
        if let Ok(data) = frame.expect("frame").into_data() {
            frames.push(data);
        }
    }
    frames
}

#[tokio::test]
async fn an_h2c_client_streams_through_to_an_http1_upstream() {
    let events = ["data: one\n\n", "data: two\n\n", "data: [DONE]\n\n"];
    let mut upstream = Upstream::serving(Script::sse(&events, Duration::from_millis(50))).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;

    let via = h2c_frames(tooltap.local_addr()).await;
    let seen = upstream.next_request().await;
    // The same request straight to the upstream (which also speaks h2c): HTTP/2 ends a body
    // whose end was not known in advance with an empty DATA frame, so compare with direct.
    let direct = h2c_frames(upstream.addr()).await;
    assert_eq!(via, direct);
    let non_empty: Vec<Bytes> = via.into_iter().filter(|frame| !frame.is_empty()).collect();
    assert_eq!(non_empty, events.map(|e| Bytes::from_static(e.as_bytes())));

    assert_eq!(
        seen.version,
        http::Version::HTTP_11,
        "tooltap → upstream is HTTP/1.1 here"
    );
    assert_eq!(seen.uri, "/v1/chat/completions?stream=true");
    assert_eq!(seen.headers["host"], upstream.addr().to_string());
    assert_eq!(seen.headers["authorization"], "Bearer sk-h2");
    assert_eq!(seen.body, "{\"stream\":true}");
}

#[tokio::test]
async fn a_client_that_never_finishes_its_head_is_cut_after_header_read() {
    let upstream = Upstream::serving(Script::full(200, "text/plain", "never")).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.timeouts.header_read = Some(HumanDuration(Duration::from_millis(300)));
    let tooltap = proxy::start(raw).await;

    let mut stream = connect(tooltap.local_addr()).await;
    let started = Instant::now();
    stream
        .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n")
        .await
        .expect("write partial head");
    let mut rest = Vec::new();
    // The server closes the connection (possibly after a 408); reading then hits EOF.
    let _ = within(Duration::from_secs(3), stream.read_to_end(&mut rest)).await;
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(250),
        "closed too early: {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(2),
        "closed too late: {waited:?}"
    );
    let text = String::from_utf8_lossy(&rest);
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 408"),
        "{text}"
    );
}
