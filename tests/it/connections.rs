//! Connection bounds, attacked with real sockets: silent connections are closed after the
//! header-read timeout on the proxy and admin listeners, the per-listener cap holds new
//! connections back until a slot frees (a normal request then completes), and the real binary
//! started with a tiny `ulimit -n` backs off on accept errors, logs them a bounded number of
//! times and answers `/metrics` once the silent sockets are gone. Idle pooled upstream
//! connections beyond `proxy.upstream_max_idle` are closed when their exchange ends.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use crate::support::TempDir;
use crate::support::binary::start_proxy_under;
use crate::support::client::{exchange, request};
use crate::support::metrics::{assert_metric, metric_sum};
use crate::support::upstream::{Script, Upstream};
use crate::support::{proxy, within};
use tooltap::config::HumanDuration;

/// Open `n` connections to `addr` that never send a byte.
async fn silent(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    let mut sockets = Vec::with_capacity(n);
    for _ in 0..n {
        let socket = within(Duration::from_secs(5), TcpStream::connect(addr))
            .await
            .expect("connect");
        sockets.push(socket);
    }
    sockets
}

/// How many of `sockets` the server closed (EOF or reset) within `limit`.
async fn closed_within(sockets: Vec<TcpStream>, limit: Duration) -> usize {
    let mut set = tokio::task::JoinSet::new();
    for mut socket in sockets {
        set.spawn(async move {
            let mut buf = [0u8; 64];
            matches!(
                tokio::time::timeout(limit, socket.read(&mut buf)).await,
                Ok(Ok(0) | Err(_))
            )
        });
    }
    let mut closed = 0;
    while let Some(done) = set.join_next().await {
        closed += usize::from(done.unwrap_or(false));
    }
    closed
}

async fn metrics(admin: SocketAddr) -> String {
    let got = exchange(admin, request(admin, "GET", "/metrics", "")).await;
    String::from_utf8_lossy(&got.body).into_owned()
}

/// `tooltap_limit_hits_total` for one limit on one listener.
fn counter(text: &str, limit: &str, scope: &str) -> u64 {
    let (limit, scope) = (format!("limit=\"{limit}\""), format!("scope=\"{scope}\""));
    metric_sum(text, "tooltap_limit_hits_total", &[&limit, &scope])
}

#[tokio::test]
async fn silent_sockets_are_closed_after_header_read_on_the_proxy_and_admin_ports() {
    let upstream = Upstream::serving(Script::full(200, "text/plain", "ok")).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.timeouts.header_read = Some(HumanDuration(Duration::from_millis(300)));
    let tooltap = proxy::start(raw).await;
    let admin = tooltap.admin_addr().expect("admin");

    let started = Instant::now();
    let on_proxy = silent(tooltap.local_addr(), 60).await;
    let on_admin = silent(admin, 20).await;
    // Normal requests while the silent sockets are open: p50 under 100 ms.
    let addr = tooltap.local_addr();
    let mut latencies = Vec::new();
    for _ in 0..9 {
        let sent = Instant::now();
        let got = exchange(addr, request(addr, "GET", "/x", "")).await;
        assert_eq!(got.status, 200);
        latencies.push(sent.elapsed());
    }
    latencies.sort();
    assert!(
        latencies[4] < Duration::from_millis(100),
        "p50 {:?} during the attack",
        latencies[4]
    );
    let (proxy_closed, admin_closed) = tokio::join!(
        closed_within(on_proxy, Duration::from_secs(3)),
        closed_within(on_admin, Duration::from_secs(3)),
    );
    let waited = started.elapsed();
    assert_eq!(proxy_closed, 60, "silent proxy sockets left open");
    assert_eq!(admin_closed, 20, "silent admin sockets left open");
    assert!(
        waited >= Duration::from_millis(250),
        "closed too early: {waited:?}"
    );

    let text = metrics(admin).await;
    assert_metric!(
        text,
        "tooltap_limit_hits_total",
        ["limit=\"header_read_timeout\"", "scope=\"proxy\""] == 60
    );
    assert_metric!(
        text,
        "tooltap_limit_hits_total",
        ["limit=\"header_read_timeout\"", "scope=\"admin\""] == 20
    );
    // The proxy still serves.
    let got = exchange(
        tooltap.local_addr(),
        request(tooltap.local_addr(), "GET", "/x", ""),
    )
    .await;
    assert_eq!(got.status, 200);
}

#[tokio::test]
async fn at_the_connection_cap_a_request_waits_for_a_slot_and_then_completes() {
    let upstream = Upstream::serving(Script::full(200, "text/plain", "ok")).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.timeouts.header_read = Some(HumanDuration(Duration::from_millis(600)));
    raw.proxy.max_connections = Some(4);
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();

    let hogs = silent(addr, 4).await;
    // Wait until the accept loop holds all four slots: it counts the cap once it is reached.
    let admin = tooltap.admin_addr().expect("admin");
    within(Duration::from_secs(5), async {
        while counter(&metrics(admin).await, "connections_max", "proxy") == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let started = Instant::now();
    let got = within(
        Duration::from_secs(5),
        exchange(addr, request(addr, "GET", "/x", "")),
    )
    .await;
    let waited = started.elapsed();
    assert_eq!(got.status, 200);
    assert!(
        waited >= Duration::from_millis(300),
        "the fifth connection was served before a slot freed: {waited:?}"
    );
    // The fifth was served once the first hog timed out; the other three time out about then
    // too, but a busy machine may count them later: they are kept open until they have been
    // (dropping one first would close it without a timeout).
    within(Duration::from_secs(5), async {
        while counter(&metrics(admin).await, "header_read_timeout", "proxy") < 4 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    drop(hogs);
    let text = metrics(admin).await;
    assert_metric!(
        text,
        "tooltap_limit_hits_total",
        ["limit=\"connections_max\"", "scope=\"proxy\""] >= 1
    );
    assert_metric!(
        text,
        "tooltap_limit_hits_total",
        ["limit=\"header_read_timeout\"", "scope=\"proxy\""] == 4
    );
}

/// An HTTP/1.1 keep-alive upstream that answers every request after `delay` and counts the
/// connections open on it now and at most.
async fn counting_upstream(
    delay: Duration,
) -> (
    SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let open = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (open_count, peak_count) = (open.clone(), peak.clone());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let now = open_count.fetch_add(1, Ordering::SeqCst) + 1;
            peak_count.fetch_max(now, Ordering::SeqCst);
            let open_count = open_count.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                    if head.windows(4).any(|w| w == b"\r\n\r\n") {
                        head.clear();
                        tokio::time::sleep(delay).await;
                        let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                        if socket.write_all(answer).await.is_err() {
                            break;
                        }
                    }
                }
                open_count.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (addr, open, peak)
}

#[tokio::test]
async fn idle_upstream_connections_beyond_the_pool_cap_are_closed() {
    use std::sync::atomic::Ordering;
    let (upstream, open, peak) = counting_upstream(Duration::from_millis(300)).await;
    let mut raw = proxy::raw_config(&format!("http://{upstream}"));
    raw.proxy.upstream_max_idle = Some(2);
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    // Eight requests at once need eight upstream connections.
    let mut set = tokio::task::JoinSet::new();
    for i in 0..8 {
        set.spawn(async move {
            let path = format!("/v1/models/{i}");
            exchange(addr, request(addr, "GET", &path, "")).await.status
        });
    }
    while let Some(status) = set.join_next().await {
        assert_eq!(status.expect("joined"), 200);
    }
    assert_eq!(peak.load(Ordering::SeqCst), 8, "the requests overlapped");
    // Once they are done, at most two stay open in the pool (the idle timeout is 90 s).
    let settled = Instant::now();
    while open.load(Ordering::SeqCst) > 2 && settled.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let left = open.load(Ordering::SeqCst);
    assert!(left <= 2, "{left} upstream connections left open");
    assert!(left >= 1, "the pool keeps connections for reuse: {left}");
}

/// The real binary under `prlimit --nofile=64`, with a connection cap above what 64 descriptors
/// allow, so accept fails with EMFILE while 150 silent sockets wait.
#[tokio::test]
async fn with_few_descriptors_accept_errors_back_off_are_logged_rarely_and_metrics_answer_after() {
    if std::process::Command::new("prlimit")
        .arg("--version")
        .output()
        .is_err()
    {
        panic!("prlimit (util-linux) is needed for this test");
    }
    let upstream = Upstream::serving(Script::full(200, "text/plain", "ok")).await;
    let dir = TempDir::new("fds");
    let config = dir.join("tooltap.toml");
    std::fs::write(
        &config,
        "[proxy]\nmax_connections = 1000\n[timeouts]\nheader_read = \"1s\"\n",
    )
    .expect("config");
    let upstream_url = upstream.url();
    let flags = [
        "--upstream",
        &upstream_url,
        "--worker-threads",
        "1",
        "--record",
        "off",
        "--violations",
        "off",
        "--config",
    ];
    let extra: Vec<&std::ffi::OsStr> = flags
        .iter()
        .map(std::ffi::OsStr::new)
        .chain([config.as_os_str()])
        .collect();
    let running = start_proxy_under(Some(("prlimit", &["--nofile=64:64"])), &extra, "info").await;
    let (mut child, addr, mut lines) = (running.child, running.addr, running.lines);
    let admin = running.admin.expect("admin address logged");
    let log = tokio::spawn(async move {
        let mut all = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            all.push(line);
        }
        all
    });

    let hogs = silent(addr, 150).await;
    // Accept runs out of descriptors; the silent sockets go after 1 s each, the backlog drains,
    // and the admin port answers with the accept errors counted.
    let started = Instant::now();
    let text = within(Duration::from_secs(20), async {
        loop {
            let attempt = tokio::time::timeout(Duration::from_secs(2), async {
                let stream = TcpStream::connect(admin).await.ok()?;
                drop(stream);
                Some(metrics(admin).await)
            });
            if let Ok(Some(text)) = attempt.await
                && counter(&text, "accept_error", "proxy") >= 1
            {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let recovered = started.elapsed();
    assert_metric!(
        text,
        "tooltap_limit_hits_total",
        ["limit=\"accept_error\"", "scope=\"proxy\""] >= 1,
        "no EMFILE was hit"
    );
    let got = exchange(addr, request(addr, "GET", "/x", "")).await;
    assert_eq!(got.status, 200);
    drop(hogs);

    let pid = child.id().expect("pid").to_string();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    let _ = within(Duration::from_secs(20), child.wait()).await;
    let log = log.await.expect("log reader");
    let accept_lines = log.iter().filter(|l| l.contains("accept failed")).count();
    println!(
        "fds=64: {} accept errors counted, {accept_lines} log lines, {} lines in all, /metrics back after {recovered:?}",
        counter(&text, "accept_error", "proxy"),
        log.len()
    );
    // At most once a minute per listener (proxy and admin) during a test far shorter than that.
    assert!(
        accept_lines <= 2,
        "accept errors logged {accept_lines} times"
    );
    assert!(log.len() < 50, "{} log lines", log.len());
}
