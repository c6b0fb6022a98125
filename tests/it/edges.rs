//! The smaller bounds of issue 11, each attacked: a request body trickled at a few bytes a
//! second is cut (the upstream request aborted), and an upstream answering with ~100 headers or
//! one 500 KiB header passes through as it would directly. And issue 33's head that frames its
//! body twice (`Content-Length` and `Transfer-Encoding: chunked`): the client gets the whole
//! chunked body, never one cut to the claimed length.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::broken_upstream::read_request;
use crate::support::client::{connect, exchange, request};
use crate::support::metrics::{assert_metric, metrics};
use crate::support::upstream::{Script, Upstream};
use crate::support::{proxy, within};
use tooltap::config::HumanDuration;

#[tokio::test]
async fn a_request_body_trickled_byte_by_byte_is_cut_and_the_upstream_request_aborted() {
    let mut upstream = Upstream::serving(Script::full(200, "application/json", "{}")).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.timeouts.request_body = Some(HumanDuration(Duration::from_millis(800)));
    let tooltap = proxy::start(raw).await;
    let admin = tooltap.admin_addr().expect("admin");

    let mut stream = connect(tooltap.local_addr()).await;
    stream
        .write_all(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n",
        )
        .await
        .expect("head");
    let started = Instant::now();
    let (mut reader, mut writer) = stream.into_split();
    let trickle = tokio::spawn(async move {
        for _ in 0..100 {
            if writer.write_all(b" ").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    let mut answer = Vec::new();
    let _ = within(Duration::from_secs(5), reader.read_to_end(&mut answer)).await;
    let waited = started.elapsed();
    trickle.abort();
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 400"), "{text}");
    assert!(text.contains("request body too slowly"), "{text}");
    assert!(
        waited >= Duration::from_millis(700),
        "cut too early: {waited:?}"
    );
    assert!(waited < Duration::from_secs(3), "cut too late: {waited:?}");
    let seen = upstream.next_request().await;
    assert!(
        seen.body.len() < 100,
        "the upstream got the whole body: {}",
        seen.body.len()
    );
    let metrics = exchange(admin, request(admin, "GET", "/metrics", "")).await;
    let metrics = String::from_utf8_lossy(&metrics.body).into_owned();
    assert!(
        metrics.contains("tooltap_limit_hits_total{limit=\"request_body_slow\",scope=\"proxy\"} 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_large_body_sent_at_a_fair_rate_is_not_cut() {
    let mut upstream = Upstream::serving(Script::full(200, "application/json", "{}")).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.timeouts.request_body = Some(HumanDuration(Duration::from_millis(300)));
    let tooltap = proxy::start(raw).await;
    let mut stream = connect(tooltap.local_addr()).await;
    // 20 chunks of 1,000 bytes, 50 ms apart: 1 s in all, far past the initial 300 ms, but
    // each chunk earns 2 s at the default 500 bytes/s.
    stream
        .write_all(b"POST /v1/x HTTP/1.1\r\nhost: x\r\ncontent-length: 20000\r\n\r\n")
        .await
        .expect("head");
    for _ in 0..20 {
        stream.write_all(&[b'a'; 1000]).await.expect("chunk");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut head = [0u8; 12];
    within(Duration::from_secs(5), stream.read_exact(&mut head))
        .await
        .expect("answer");
    assert_eq!(&head, b"HTTP/1.1 200");
    assert_eq!(upstream.next_request().await.body.len(), 20_000);
}

/// A raw HTTP/1.1 GET with `connection: close`; everything the server sent.
async fn raw_get(addr: std::net::SocketAddr) -> String {
    let mut stream = within(Duration::from_secs(5), TcpStream::connect(addr))
        .await
        .expect("connect");
    stream
        .write_all(b"GET /v1/models HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .expect("request");
    let mut answer = Vec::new();
    within(Duration::from_secs(5), stream.read_to_end(&mut answer))
        .await
        .expect("read");
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn an_upstream_with_many_headers_or_one_huge_header_passes_through_like_direct() {
    let mut many = Script::full(200, "text/plain", "many");
    for n in 0..120 {
        many = many.header(&format!("x-h-{n}"), &format!("v{n}"));
    }
    let huge = "b".repeat(500 * 1024);
    let cases = [
        ("120 headers", many, "x-h-119: v119".to_string()),
        (
            "one 500 KiB header",
            Script::full(200, "text/plain", "huge").header("x-huge", &huge),
            format!("x-huge: {huge}"),
        ),
    ];
    for (name, script, expected) in cases {
        let upstream = Upstream::serving(script).await;
        let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
        let direct = raw_get(upstream.addr()).await;
        let via = raw_get(tooltap.local_addr()).await;
        assert!(direct.starts_with("HTTP/1.1 200"), "{name}: direct");
        assert!(
            via.starts_with("HTTP/1.1 200"),
            "{name}: {:?}",
            &via[..via.len().min(120)]
        );
        assert!(via.contains(&expected), "{name}: header lost");
        assert_eq!(
            via.lines().filter(|l| l.starts_with("x-")).count(),
            direct.lines().filter(|l| l.starts_with("x-")).count() + 1, // x-tooltap-exchange
            "{name}"
        );
    }
}

#[tokio::test]
async fn an_upstream_past_the_header_bound_gets_a_502_that_says_it_is_the_upstreams_fault() {
    let mut too_many = Script::full(200, "text/plain", "too many");
    for n in 0..=tooltap::proxy::forward::UPSTREAM_MAX_HEADERS {
        too_many = too_many.header(&format!("x-h-{n}"), "v");
    }
    let upstream = Upstream::serving(too_many).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let via = raw_get(tooltap.local_addr()).await;
    assert!(
        via.starts_with("HTTP/1.1 502"),
        "{:?}",
        &via[..via.len().min(120)]
    );
    assert!(via.contains("upstream_protocol"), "{via}");
}

/// The chat completion a raw upstream sends chunked under a head that also claims
/// `content-length: 5`: 1,774 bytes, as in the issue.
fn twice_framed_body() -> String {
    let start = r#"{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":""#;
    let end = r#""},"finish_reason":"stop"}]}"#;
    let pad = 1774 - start.len() - end.len();
    format!("{start}{}{end}", "x".repeat(pad))
}

/// A raw TCP upstream (no HTTP library, which would refuse to write such a head) answering every
/// request on every connection with [`twice_framed_body`] in 500-byte chunks under a head with
/// both `content-length: 5` and `transfer-encoding: chunked`.
async fn twice_framed_upstream() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let body = twice_framed_body();
                let mut answer = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                    content-length: 5\r\ntransfer-encoding: chunked\r\n\r\n"
                    .to_vec();
                for chunk in body.as_bytes().chunks(500) {
                    answer.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                    answer.extend_from_slice(chunk);
                    answer.extend_from_slice(b"\r\n");
                }
                answer.extend_from_slice(b"0\r\n\r\n");
                while read_request(&mut socket).await.is_some() {
                    if socket.write_all(&answer).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// The same request over h2c: (status, content-length if any, body).
async fn over_h2c(addr: std::net::SocketAddr, body: &'static str) -> (u16, Option<String>, String) {
    use http_body_util::BodyExt;
    let stream = connect(addr).await;
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .expect("h2c handshake");
    let driver = tokio::spawn(connection);
    let req = http::Request::post(format!("http://{addr}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(bytes::Bytes::from_static(
            body.as_bytes(),
        )))
        .expect("request");
    let response = within(Duration::from_secs(5), sender.send_request(req))
        .await
        .expect("h2 response");
    let status = response.status().as_u16();
    let length = response
        .headers()
        .get("content-length")
        .map(|v| v.to_str().unwrap_or("?").to_owned());
    let got = within(Duration::from_secs(5), response.into_body().collect())
        .await
        .expect("the h2 body ends cleanly")
        .to_bytes();
    driver.abort();
    (status, length, String::from_utf8_lossy(&got).into_owned())
}

#[tokio::test]
async fn an_upstream_head_with_content_length_and_chunked_reaches_the_client_whole() {
    const CHAT: &str = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
    let upstream = twice_framed_upstream().await;
    let expected = twice_framed_body();
    let direct = exchange(
        upstream,
        request(upstream, "POST", "/v1/chat/completions", CHAT),
    )
    .await;
    assert_eq!(
        direct.body.len(),
        expected.len(),
        "a direct hyper client reads by the transfer coding"
    );
    let tooltap = proxy::start(proxy::raw_config(&format!("http://{upstream}"))).await;
    let addr = tooltap.local_addr();
    for round in 0..3 {
        let via = exchange(addr, request(addr, "POST", "/v1/chat/completions", CHAT)).await;
        assert_eq!(via.status, 200);
        assert_eq!(
            via.body.len(),
            expected.len(),
            "round {round}: the client must get the whole chunked body, not the claimed 5 bytes"
        );
        assert_eq!(
            String::from_utf8_lossy(&via.body),
            expected,
            "round {round}"
        );
        assert!(
            via.headers
                .get("content-length")
                .is_none_or(|v| v == "1774"),
            "round {round}: {:?}",
            via.headers
        );
    }
    let (status, length, body) = over_h2c(addr, CHAT).await;
    assert_eq!(status, 200);
    assert!(
        length.as_deref().is_none_or(|v| v == "1774"),
        "h2c: {length:?}"
    );
    assert_eq!(body, expected, "h2c");
    let text = metrics(&tooltap).await;
    assert_metric!(
        text,
        "tooltap_limit_hits_total",
        ["limit=\"upstream_length_conflict\"", "scope=\"proxy\""] == 4
    );
}
