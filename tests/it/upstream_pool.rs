//! tooltap's own upstream client (`upstream`), attacked with real loopback upstreams that
//! count their connections: sequential requests share one connection; an upstream that closes
//! idle connections, or answers `Connection: close`, costs no request; the idle timeout closes a
//! pooled connection; past `proxy.upstream_max_connections` requests wait for a connection to be
//! handed back, and past the wait get 503 `upstream_busy`; over TLS, ALPN h2 shares one
//! connection between requests.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::client::{exchange, request};
use crate::support::metrics::{metric_sum, metrics};
use crate::support::{proxy, within};
use tooltap::config::HumanDuration;

/// How the counting upstream ends each exchange.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// Keep the connection for the next request.
    KeepAlive,
    /// Answer with `Connection: close` and close.
    ConnectionClose,
    /// Answer, then half-close at once (as a server whose keep-alive timeout is tiny), and
    /// count the connection closed once tooltap has closed its side too.
    CloseWhenIdle,
}

/// Connections an upstream saw: accepted, open now, open at most, and closed by tooltap.
#[derive(Default)]
struct Counts {
    accepted: AtomicUsize,
    open: AtomicUsize,
    peak: AtomicUsize,
    closed_by_tooltap: AtomicUsize,
}

impl Counts {
    fn get(&self, which: fn(&Counts) -> &AtomicUsize) -> usize {
        which(self).load(Ordering::SeqCst)
    }
}

/// An HTTP/1.1 upstream answering every bodiless request `ok` after `delay`.
async fn counting_upstream(delay: Duration, ending: Ending) -> (SocketAddr, Arc<Counts>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let counts = Arc::new(Counts::default());
    let shared = counts.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            shared.accepted.fetch_add(1, Ordering::SeqCst);
            let now = shared.open.fetch_add(1, Ordering::SeqCst) + 1;
            shared.peak.fetch_max(now, Ordering::SeqCst);
            let counts = shared.clone();
            tokio::spawn(async move {
                serve(socket, delay, ending, &counts).await;
                counts.open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (addr, counts)
}

async fn serve(mut socket: TcpStream, delay: Duration, ending: Ending, counts: &Counts) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match socket.read(&mut buf).await {
            Ok(0) => {
                counts.closed_by_tooltap.fetch_add(1, Ordering::SeqCst);
                return;
            }
            Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if !head.windows(4).any(|w| w == b"\r\n\r\n") {
            continue;
        }
        head.clear();
        tokio::time::sleep(delay).await;
        let answer: &[u8] = match ending {
            Ending::ConnectionClose => {
                b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok"
            }
            _ => b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
        };
        if socket.write_all(answer).await.is_err() {
            return;
        }
        match ending {
            Ending::KeepAlive => {}
            Ending::ConnectionClose => return,
            Ending::CloseWhenIdle => {
                let _ = socket.shutdown().await;
            }
        }
    }
}

/// Wait until `done` holds, polling every 10 ms, or fail after `limit`.
async fn until(limit: Duration, what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn get_ok(addr: SocketAddr, path: &str) {
    let response = within(
        Duration::from_secs(10),
        exchange(addr, request(addr, "GET", path, "")),
    )
    .await;
    assert_eq!(response.status, 200, "{path}: {:?}", response.body);
    assert_eq!(response.body, "ok");
}

fn pool_metric(text: &str, name: &str) -> u64 {
    metric_sum(text, name, &[])
}

#[tokio::test]
async fn sequential_requests_share_one_upstream_connection() {
    let (upstream, counts) = counting_upstream(Duration::ZERO, Ending::KeepAlive).await;
    let tooltap = proxy::start(proxy::raw_config(&format!("http://{upstream}"))).await;
    let addr = tooltap.local_addr();
    for i in 0..5 {
        get_ok(addr, &format!("/v1/models/{i}")).await;
    }
    assert_eq!(
        counts.get(|c| &c.accepted),
        1,
        "one connection for five requests"
    );
    let text = metrics(&tooltap).await;
    assert_eq!(
        pool_metric(&text, "tooltap_upstream_connections_opened_total"),
        1
    );
    assert_eq!(
        pool_metric(&text, "tooltap_upstream_connections_reused_total"),
        4
    );
    assert_eq!(pool_metric(&text, "tooltap_upstream_connections_idle"), 1);
}

#[tokio::test]
async fn an_upstream_that_closes_idle_connections_costs_no_request() {
    let (upstream, counts) = counting_upstream(Duration::ZERO, Ending::CloseWhenIdle).await;
    let tooltap = proxy::start(proxy::raw_config(&format!("http://{upstream}"))).await;
    let addr = tooltap.local_addr();
    for round in 1..=3 {
        get_ok(addr, "/v1/models").await;
        // The upstream half-closed after answering; tooltap closes its side in turn.
        until(
            Duration::from_secs(5),
            "tooltap to close the upstream's connection",
            || counts.get(|c| &c.closed_by_tooltap) == round,
        )
        .await;
    }
    assert_eq!(
        counts.get(|c| &c.accepted),
        3,
        "a new connection for each request"
    );
    let text = metrics(&tooltap).await;
    assert_eq!(
        pool_metric(&text, "tooltap_upstream_connections_opened_total"),
        3
    );
    assert_eq!(
        pool_metric(&text, "tooltap_upstream_connections_reused_total"),
        0
    );
}

#[tokio::test]
async fn an_upstream_answering_connection_close_gets_a_new_connection_each_time() {
    let (upstream, counts) = counting_upstream(Duration::ZERO, Ending::ConnectionClose).await;
    let tooltap = proxy::start(proxy::raw_config(&format!("http://{upstream}"))).await;
    let addr = tooltap.local_addr();
    for _ in 0..3 {
        get_ok(addr, "/v1/models").await;
    }
    assert_eq!(counts.get(|c| &c.accepted), 3);
    let text = metrics(&tooltap).await;
    assert_eq!(
        pool_metric(&text, "tooltap_upstream_connections_reused_total"),
        0
    );
    assert_eq!(pool_metric(&text, "tooltap_upstream_connections_idle"), 0);
}

#[tokio::test]
async fn an_idle_pooled_connection_is_closed_after_the_pool_idle_timeout() {
    let (upstream, counts) = counting_upstream(Duration::ZERO, Ending::KeepAlive).await;
    let mut raw = proxy::raw_config(&format!("http://{upstream}"));
    raw.timeouts.pool_idle = Some(HumanDuration(Duration::from_millis(200)));
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let started = Instant::now();
    get_ok(addr, "/v1/models").await;
    until(
        Duration::from_secs(5),
        "the idle connection to be closed",
        || counts.get(|c| &c.closed_by_tooltap) == 1,
    )
    .await;
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "closed before its idle timeout"
    );
    let text = metrics(&tooltap).await;
    assert_eq!(
        metric_sum(
            &text,
            "tooltap_upstream_connections_closed_total",
            &["reason=\"idle_timeout\""]
        ),
        1
    );
    assert_eq!(pool_metric(&text, "tooltap_upstream_connections_idle"), 0);
    // The next request opens a new connection.
    get_ok(addr, "/v1/models").await;
    assert_eq!(counts.get(|c| &c.accepted), 2);
}

#[tokio::test]
async fn requests_past_the_connection_cap_wait_for_a_handed_back_connection() {
    let (upstream, counts) = counting_upstream(Duration::from_millis(150), Ending::KeepAlive).await;
    let mut raw = proxy::raw_config(&format!("http://{upstream}"));
    raw.proxy.upstream_max_connections = Some(2);
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let mut set = tokio::task::JoinSet::new();
    for i in 0..6 {
        set.spawn(async move { get_ok(addr, &format!("/v1/models/{i}")).await });
    }
    while let Some(done) = set.join_next().await {
        done.expect("request task");
    }
    assert_eq!(counts.get(|c| &c.peak), 2, "never more than the cap open");
    assert_eq!(
        counts.get(|c| &c.accepted),
        2,
        "the two connections were reused"
    );
    let text = metrics(&tooltap).await;
    let waited = metric_sum(
        &text,
        "tooltap_limit_hits_total",
        &["limit=\"upstream_connections_max\""],
    );
    assert!(
        waited >= 4,
        "{waited} requests counted as waiting, 4 had to"
    );
}

#[tokio::test]
async fn past_the_cap_and_the_wait_a_request_gets_503_upstream_busy() {
    let (upstream, counts) = counting_upstream(Duration::from_secs(2), Ending::KeepAlive).await;
    let mut raw = proxy::raw_config(&format!("http://{upstream}"));
    raw.proxy.upstream_max_connections = Some(1);
    raw.timeouts.connect = Some(HumanDuration(Duration::from_millis(300)));
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let slow = tokio::spawn(async move { get_ok(addr, "/v1/models/slow").await });
    until(
        Duration::from_secs(5),
        "the first request to reach the upstream",
        || counts.get(|c| &c.accepted) == 1,
    )
    .await;
    let started = Instant::now();
    let refused = within(
        Duration::from_secs(5),
        exchange(addr, request(addr, "GET", "/v1/models/refused", "")),
    )
    .await;
    let waited = started.elapsed();
    assert_eq!(refused.status, 503);
    assert_eq!(refused.json()["error"]["code"], "upstream_busy");
    assert!(
        waited >= Duration::from_millis(300),
        "gave up early: {waited:?}"
    );
    assert!(
        waited < Duration::from_millis(1800),
        "gave up late: {waited:?}"
    );
    within(Duration::from_secs(10), slow)
        .await
        .expect("slow request");
    assert_eq!(counts.get(|c| &c.accepted), 1);
    let text = metrics(&tooltap).await;
    let refused = metric_sum(
        &text,
        "tooltap_limit_hits_total",
        &["limit=\"upstream_connections_wait_timeout\""],
    );
    assert_eq!(refused, 1);
}

#[tokio::test]
async fn over_tls_alpn_h2_carries_every_request_on_one_connection() {
    let (_upstream, tooltap, ca_path) =
        crate::tls::private_ca_upstream_and_proxy("text/plain", "ok").await;
    let addr = tooltap.local_addr();
    let mut set = tokio::task::JoinSet::new();
    get_ok(addr, "/v1/models/first").await;
    for i in 0..4 {
        set.spawn(async move { get_ok(addr, &format!("/v1/models/{i}")).await });
    }
    while let Some(done) = set.join_next().await {
        done.expect("request task");
    }
    let text = metrics(&tooltap).await;
    assert_eq!(
        pool_metric(&text, "tooltap_upstream_connections_opened_total"),
        1
    );
    assert_eq!(
        pool_metric(&text, "tooltap_upstream_connections_reused_total"),
        4
    );
    std::fs::remove_file(ca_path).ok();
}
