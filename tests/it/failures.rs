//! tooltap's own errors: OpenAI-shaped JSON with a stable code and the right status.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::Empty;

use crate::support::client::{Collected, collect, exchange, request, send};
use crate::support::metrics::{metric_sum, metrics};
use crate::support::proxy;
use crate::support::upstream::{Script, Upstream};
use tooltap::config::HumanDuration;

fn assert_tooltap_error(response: &Collected, status: u16, code: &str) -> String {
    assert_eq!(response.status.as_u16(), status);
    assert_eq!(response.headers["content-type"], "application/json");
    let body = response.json();
    assert_eq!(body["error"]["type"], "tooltap_error");
    assert_eq!(body["error"]["code"], code);
    body["error"]["message"]
        .as_str()
        .expect("message")
        .to_owned()
}

#[tokio::test]
async fn an_upstream_that_refuses_connections_gives_502_upstream_unreachable() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr")
    };
    let tooltap = proxy::start(proxy::raw_config(&format!("http://{closed}"))).await;
    let addr = tooltap.local_addr();
    let response = exchange(addr, request(addr, "POST", "/v1/chat/completions", "{}")).await;
    let message = assert_tooltap_error(&response, 502, "upstream_unreachable");
    assert!(message.contains(&closed.to_string()), "{message}");
}

#[tokio::test]
async fn a_silent_upstream_gives_504_after_the_first_byte_timeout() {
    let upstream = Upstream::serving(Script::silent()).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.timeouts.first_byte = Some(HumanDuration(Duration::from_millis(300)));
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();

    let started = Instant::now();
    let response = exchange(addr, request(addr, "POST", "/v1/chat/completions", "{}")).await;
    let waited = started.elapsed();
    assert_tooltap_error(&response, 504, "upstream_timeout");
    assert!(
        waited >= Duration::from_millis(300),
        "gave up early: {waited:?}"
    );
    assert!(waited < Duration::from_secs(2), "gave up late: {waited:?}");
}

/// The first-byte timeout is each request's own, not its pooled connection's: quick answers on
/// one reused upstream connection, spread over more than the timeout, all pass, and a silent one
/// after them waits its own whole timeout, not what an earlier request left of one.
#[tokio::test]
async fn on_a_reused_connection_each_request_gets_its_own_whole_first_byte_timeout() {
    let upstream = Upstream::start(
        |received| match received.uri.as_str() {
            "/v1/silent" => Script::silent(),
            _ => Script::full(200, "application/json", "{}"),
        },
        None,
    )
    .await;
    let mut raw = proxy::raw_config(&upstream.url());
    let timeout = Duration::from_millis(400);
    raw.timeouts.first_byte = Some(HumanDuration(timeout));
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();

    for _ in 0..4 {
        let response = exchange(addr, request(addr, "POST", "/v1/quick", "{}")).await;
        assert_eq!(response.status.as_u16(), 200, "a quick answer passes");
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    let started = Instant::now();
    let response = exchange(addr, request(addr, "POST", "/v1/silent", "{}")).await;
    let waited = started.elapsed();
    assert_tooltap_error(&response, 504, "upstream_timeout");
    assert!(waited >= timeout, "gave up early: {waited:?}");
    assert!(waited < Duration::from_secs(2), "gave up late: {waited:?}");
    let text = metrics(&tooltap).await;
    assert_eq!(
        (
            metric_sum(&text, "tooltap_upstream_connections_opened_total", &[]),
            metric_sum(&text, "tooltap_upstream_connections_reused_total", &[]),
        ),
        (1, 4),
        "the quick answers and the silent one shared one pooled connection"
    );
}

#[tokio::test]
async fn connect_requests_are_rejected_as_bad_requests() {
    let upstream = Upstream::serving(Script::full(200, "text/plain", "never")).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let addr = tooltap.local_addr();
    let connect = Request::builder()
        .method("CONNECT")
        .uri("example.com:443")
        .header("host", "example.com:443")
        .body(Empty::<Bytes>::new())
        .expect("request");
    let (response, _conn) = send(addr, connect).await;
    let response = collect(response).await;
    assert_tooltap_error(&response, 400, "bad_request");
}

#[tokio::test]
async fn an_upstream_that_never_accepts_gives_504_after_the_connect_timeout() {
    // A listener whose accept queue is full: the kernel drops further SYNs, so a connect
    // neither succeeds nor fails until the connect timeout ends it.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind("127.0.0.1:0".parse().expect("addr"))
        .expect("bind");
    let listener = socket.listen(1).expect("listen");
    let addr = listener.local_addr().expect("addr");
    let mut fillers = Vec::new();
    for _ in 0..8 {
        match tokio::time::timeout(
            Duration::from_millis(200),
            tokio::net::TcpStream::connect(addr),
        )
        .await
        {
            Ok(Ok(stream)) => fillers.push(stream),
            _ => break,
        }
    }
    let mut raw = proxy::raw_config(&format!("http://{addr}"));
    raw.timeouts.connect = Some(HumanDuration(Duration::from_millis(300)));
    let tooltap = proxy::start(raw).await;
    let proxy_addr = tooltap.local_addr();

    let started = Instant::now();
    let response = exchange(proxy_addr, request(proxy_addr, "GET", "/v1/models", "")).await;
    let waited = started.elapsed();
    let message = assert_tooltap_error(&response, 504, "upstream_timeout");
    assert!(message.contains("accept a connection"), "{message}");
    assert!(
        waited >= Duration::from_millis(300),
        "gave up early: {waited:?}"
    );
    assert!(waited < Duration::from_secs(2), "gave up late: {waited:?}");
    drop((listener, fillers));
}

#[tokio::test]
async fn an_upstream_that_hangs_up_before_answering_gives_502_upstream_protocol() {
    // Accepts, reads the request, closes without a response head.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let upstream_addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buffer = vec![0u8; 16 * 1024];
            let _ = stream.read(&mut buffer).await;
        }
    });
    let tooltap = proxy::start(proxy::raw_config(&format!("http://{upstream_addr}"))).await;
    let addr = tooltap.local_addr();
    let response = exchange(addr, request(addr, "POST", "/v1/chat/completions", "{}")).await;
    let message = assert_tooltap_error(&response, 502, "upstream_protocol");
    assert!(message.contains(&upstream_addr.to_string()), "{message}");
}
