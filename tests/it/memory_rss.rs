//! Memory per stream in the real binary, read from its /proc/PID/status: long streams and slow
//! readers against a stated bound, with default settings (full inspection, `--record violations`).
//! Every client still gets every byte, and the one violating stream's recording holds its whole
//! body (spilled frames read back).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use serde_json::json;

use crate::support::binary::{self, Running};
use crate::support::client::{exchange, request};
use crate::support::oversized;
use crate::support::temp::jsonl_under;
use crate::support::upstream::{Received, Script, Upstream};
use crate::support::within;

mod arguments;

const LIMIT: Duration = Duration::from_secs(20);

/// A tool-call stream of `events` chunks calling `name`, each about 2 KB: padded with an
/// `obfuscation` field as OpenAI's streams are, which no rule reads and reassembly does not keep.
fn tool_stream(events: usize, name: &str) -> Vec<String> {
    stream_of(events, name, false)
}

/// The same stream with its 1,800 bytes of padding in the arguments instead, which
/// reassembly keeps: the worst case for what a stream costs the inspector.
fn kept_stream(events: usize, name: &str) -> Vec<String> {
    stream_of(events, name, true)
}

fn stream_of(events: usize, name: &str, kept: bool) -> Vec<String> {
    let padding = if kept {
        String::new()
    } else {
        "x".repeat(1800)
    };
    let piece = if kept {
        "x".repeat(1800)
    } else {
        "ab".to_owned()
    };
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        format!(
            "data: {}\n\n",
            json!({"id":"chatcmpl-m","object":"chat.completion.chunk","created":1,"model":"m",
                "choices":[{"index":0,"delta":delta,"finish_reason":finish}],
                "obfuscation":padding})
        )
    };
    let mut out = vec![chunk(
        json!({"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function",
            "function":{"name":name,"arguments":""}}]}),
        json!(null),
    )];
    out.push(chunk(
        json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":\""}}]}),
        json!(null),
    ));
    for _ in 2..events.saturating_sub(1) {
        out.push(chunk(
            json!({"tool_calls":[{"index":0,"function":{"arguments":piece}}]}),
            json!(null),
        ));
    }
    out.push(chunk(
        json!({"tool_calls":[{"index":0,"function":{"arguments":"\"}"}}]}),
        json!(null),
    ));
    out.push(chunk(json!({}), json!("tool_calls")));
    out.push("data: [DONE]\n\n".to_owned());
    out
}

fn request_body(tool: &str) -> String {
    json!({"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],
        "tools":[{"type":"function","function":{"name":tool,"parameters":{"type":"object",
            "properties":{"city":{"type":"string"}}}}}]})
    .to_string()
}

/// The upstream: a `get_weather` stream of `?events=N` events (`default` without the query),
/// `gap` between events.
async fn upstream(lengths: &[usize], default: usize, gap: Duration) -> (Upstream, Vec<Bytes>) {
    upstream_of(lengths, default, gap, tool_stream).await
}

/// [`upstream`] serving the streams `stream` makes.
async fn upstream_of(
    lengths: &[usize],
    default: usize,
    gap: Duration,
    stream: fn(usize, &str) -> Vec<String>,
) -> (Upstream, Vec<Bytes>) {
    let scripts: Vec<(usize, Script, Bytes)> = lengths
        .iter()
        .map(|&n| {
            let events = stream(n, "get_weather");
            let refs: Vec<&str> = events.iter().map(String::as_str).collect();
            (n, Script::sse(&refs, gap), events.concat().into())
        })
        .collect();
    let bodies = scripts.iter().map(|(_, _, body)| body.clone()).collect();
    let upstream = Upstream::start(
        move |received: &Received| {
            let n = received
                .uri
                .split("events=")
                .nth(1)
                .and_then(|n| n.parse().ok())
                .unwrap_or(default);
            let found = scripts.iter().find(|(len, _, _)| *len == n);
            found.expect("a scripted length").1.clone()
        },
        None,
    )
    .await;
    (upstream, bodies)
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .expect("VmRSS")
}

/// Samples `pid`'s VmRSS every 10 ms until stopped; the highest seen.
struct Peak {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Peak {
    fn start(pid: u32) -> Peak {
        let (stop, peak) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
        );
        let (s, p) = (stop.clone(), peak.clone());
        let task = tokio::spawn(async move {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(rss_kib(pid), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        Peak { stop, peak, task }
    }

    async fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.task.await;
        self.peak.load(Ordering::Relaxed)
    }
}

struct Proxy {
    _child: tokio::process::Child,
    addr: SocketAddr,
    pid: u32,
    dir: PathBuf,
}

/// The real binary with default settings, its recordings and violations in a fresh folder.
async fn start(name: &str, upstream: &Upstream) -> Proxy {
    let dir = std::env::temp_dir().join(format!("tooltap-it-rss-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (recordings, violations) = (dir.join("rec"), dir.join("violations.jsonl"));
    let url = upstream.url();
    let args: Vec<&std::ffi::OsStr> = vec![
        "--upstream".as_ref(),
        url.as_ref(),
        "--recordings".as_ref(),
        recordings.as_os_str(),
        "--violations".as_ref(),
        violations.as_os_str(),
    ];
    let Running {
        child,
        addr,
        mut lines,
        ..
    } = binary::start_proxy(&args, "info").await;
    // Its log is read (and dropped) as it comes: a full pipe would stall the proxy.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let pid = child.id().expect("pid");
    Proxy {
        _child: child,
        addr,
        pid,
        dir,
    }
}

fn recordings(dir: &Path) -> Vec<PathBuf> {
    jsonl_under(&dir.join("rec"))
}

/// The first recording under `dir` that has its end line (written after its verdict).
async fn finished_recording(dir: &Path) -> tooltap::record::Recording {
    within(LIMIT, async {
        loop {
            if let Some(file) = recordings(dir).pop()
                && let Ok(recording) = tooltap::record::read_file(&file)
                && recording.end.is_some()
            {
                return recording;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

/// Warms the proxy with a few whole exchanges, then its resident memory at rest.
async fn idle_rss(addr: SocketAddr, pid: u32, path: &str, expected: &[u8]) -> u64 {
    for _ in 0..2 {
        let got = exchange(
            addr,
            request(addr, "POST", path, &request_body("get_weather")),
        )
        .await;
        assert_eq!(got.body, expected);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    rss_kib(pid)
}

/// `STREAMS` concurrent streams on `path`, the first declaring `first_tool`; the peak VmRSS
/// while they run. Every client must get `expected` whole.
async fn concurrent(
    addr: SocketAddr,
    pid: u32,
    path: &str,
    first_tool: &str,
    expected: &Bytes,
) -> u64 {
    let peak = Peak::start(pid);
    let clients: Vec<_> = (0..STREAMS)
        .map(|i| {
            let tool = if i == 0 { first_tool } else { "get_weather" };
            tokio::spawn(exchange(
                addr,
                request(addr, "POST", path, &request_body(tool)),
            ))
        })
        .collect();
    for client in clients {
        let got = within(LIMIT, client).await.expect("client");
        assert_eq!(&got.body, expected, "the client gets every byte");
    }
    peak.finish().await
}

const STREAMS: usize = 32;

/// What the proxy holds per stream does not grow with the stream's length: 32 concurrent
/// streams of 50 events (about 100 KB each), then 32 of 200 (about 400 KB each, one of them
/// violating: its tool is not declared), paced 5 ms apart like a model's tokens. Held frames
/// kept whole added 366 KiB a stream between the two (measured, debug build); the bound allows
/// 176 KiB (the rest is the inspector lagging on a loaded debug build: the tap, bounded), and
/// the first figure has an absolute bound too. Every client gets every byte, and the violating
/// stream is recorded whole from its spilled frames.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_per_stream_does_not_grow_with_the_stream_in_the_real_binary() {
    const BOUND_KIB: u64 = 256;
    const GROWTH_KIB: u64 = 176;
    let (upstream, bodies) = upstream(&[10, 50, 200], 10, Duration::from_millis(5)).await;
    let (warm, short, long) = (&bodies[0], &bodies[1], &bodies[2]);
    let proxy = start("long", &upstream).await;
    let (addr, pid) = (proxy.addr, proxy.pid);
    let path = "/v1/chat/completions";
    let idle = within(LIMIT, idle_rss(addr, pid, path, warm)).await;
    let short_peak = concurrent(
        addr,
        pid,
        &format!("{path}?events=50"),
        "get_weather",
        short,
    )
    .await;
    let long_peak = concurrent(addr, pid, &format!("{path}?events=200"), "other", long).await;
    let per_stream = short_peak.saturating_sub(idle) / STREAMS as u64;
    let growth = long_peak.saturating_sub(short_peak) / STREAMS as u64;
    eprintln!(
        "idle {idle} KiB; 50 events: peak {short_peak} KiB, {per_stream} KiB per stream; \
         200 events: peak {long_peak} KiB, {growth} KiB more per stream"
    );
    assert!(
        per_stream <= BOUND_KIB,
        "{per_stream} KiB per stream is over {BOUND_KIB} KiB"
    );
    assert!(
        growth <= GROWTH_KIB,
        "4x longer streams cost {growth} KiB more per stream"
    );
    // The violating exchange's recording: written after its verdict, holding the whole body.
    let file = finished_recording(&proxy.dir).await;
    assert_eq!(
        recordings(&proxy.dir).len(),
        1,
        "only the violating exchange"
    );
    assert_eq!(
        &file.body(),
        long,
        "its frames came back from the spill whole"
    );
    let end = file.end.expect("end line");
    assert_eq!(end.outcome, tooltap::record::Outcome::Complete);
    assert!(
        end.violations
            .iter()
            .any(|v| v.rule.as_str() == "tool_call.name_undeclared")
    );
    let _ = std::fs::remove_dir_all(&proxy.dir);
}

/// Opens a stream on a connection whose receive buffer is a few KiB (so the kernel absorbs
/// little of what the proxy sends) and reads its first frame.
async fn stalled(
    addr: SocketAddr,
) -> (BytesMut, hyper::body::Incoming, tokio::task::JoinHandle<()>) {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("rcvbuf");
    let stream = within(LIMIT, socket.connect(addr)).await.expect("connect");
    let (mut sender, connection) = within(
        LIMIT,
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)),
    )
    .await
    .expect("handshake");
    let conn = tokio::spawn(async move {
        let _ = connection.await;
    });
    let req = request(
        addr,
        "POST",
        "/v1/chat/completions",
        &request_body("get_weather"),
    );
    let response = within(LIMIT, sender.send_request(req)).await.expect("head");
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let first = within(LIMIT, body.frame())
        .await
        .expect("a first frame")
        .expect("frame")
        .into_data()
        .expect("data");
    (BytesMut::from(first.as_ref()), body, conn)
}

/// 32 streams of 400 events (about 800 KB each) whose clients read the first frame and then
/// stop, while the upstream sends as fast as the proxy takes: the proxy's memory per stream
/// stays under a stated bound (what a stalled client can make it hold is bounded by bytes:
/// hyper's buffers, the tap's bytes, the held block). Then two of the clients read on and get
/// every byte; the others leave.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_readers_cost_a_bounded_resident_memory_each_in_the_real_binary() {
    slow_readers("slow", 400, tool_stream, STREAMS, 1_024).await;
}

/// The same with streams of 2,000 events (about 4 MB each) whose arguments reassembly keeps:
/// a stalled client's stream costs what the kernel's socket buffers took from it on its way
/// (forwarded, so teed and reassembled) plus the bounds above, more than an 800 KB stream's,
/// and still not the stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_readers_of_multi_megabyte_streams_cost_a_bounded_resident_memory_each() {
    // What a socket's send buffer may grow to (`tcp_wmem`'s maximum), and 2 MiB for the rest.
    let send_buffer_kib = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem")
        .ok()
        .and_then(|text| text.split_whitespace().nth(2)?.parse::<u64>().ok())
        .map_or(4_096, |bytes| bytes / 1024);
    // 16 streams: each takes what the kernel buffers, 4 MB to reassemble in a debug build.
    slow_readers("slow-long", 2_000, kept_stream, 16, send_buffer_kib + 2_048).await;
}

/// `count` stalled clients of streams of `events` events made by `stream`; fails past
/// `bound_kib` per stream.
async fn slow_readers(
    name: &str,
    events: usize,
    stream: fn(usize, &str) -> Vec<String>,
    count: usize,
    bound_kib: u64,
) {
    let (upstream, bodies) = upstream_of(&[events], events, Duration::ZERO, stream).await;
    let expected = bodies[0].clone();
    let proxy = start(name, &upstream).await;
    let (addr, pid) = (proxy.addr, proxy.pid);
    let started = std::time::Instant::now();
    let idle = within(
        LIMIT,
        idle_rss(addr, pid, "/v1/chat/completions", &expected),
    )
    .await;
    eprintln!("slow readers: warm after {:?}", started.elapsed());
    let peak = Peak::start(pid);
    let mut streams = Vec::new();
    for _ in 0..count {
        streams.push(stalled(addr).await);
    }
    // The streams sit stalled: whatever the proxy took in meanwhile, it holds now.
    let mut last = 0;
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let now = rss_kib(pid);
        if now.abs_diff(last) < 128 {
            break;
        }
        last = now;
    }
    let peak = peak.finish().await;
    eprintln!("slow readers: stalled after {:?}", started.elapsed());
    let per_stream = peak.saturating_sub(idle) / count as u64;
    eprintln!(
        "slow readers of {events} events: idle {idle} KiB, peak {peak} KiB, {per_stream} KiB per stream"
    );
    for (mut got, mut body, conn) in streams.drain(..2) {
        within(LIMIT, async {
            while let Some(frame) = body.frame().await {
                if let Ok(data) = frame.expect("frame").into_data() {
                    got.extend_from_slice(&data);
                }
            }
        })
        .await;
        conn.abort();
        assert_eq!(got.freeze(), expected, "the client gets every byte");
    }
    eprintln!("slow readers: read after {:?}", started.elapsed());
    drop(streams);
    assert!(
        per_stream <= bound_kib,
        "{per_stream} KiB per stream (idle {idle} KiB, peak {peak} KiB) is over {bound_kib} KiB"
    );
    let _ = std::fs::remove_dir_all(&proxy.dir);
}

/// The upstream of the framing attacks: `/api/chat?mib=N` answers an NDJSON stream whose first
/// line carries N MiB, `converse-stream?mib=N` an event stream whose one text message does.
async fn oversized_upstream() -> Upstream {
    Upstream::start(
        |received: &Received| {
            let mib: usize = received
                .uri
                .split("mib=")
                .nth(1)
                .and_then(|n| n.parse().ok())
                .unwrap_or(1);
            let (content_type, body) = oversized_body(&received.uri, mib);
            Script {
                status: 200,
                headers: vec![("content-type".into(), content_type.into())],
                chunks: body
                    .chunks(64 * 1024)
                    .map(|chunk| (Duration::ZERO, Bytes::copy_from_slice(chunk)))
                    .collect(),
                silent: false,
                abort: false,
            }
        },
        None,
    )
    .await
}

/// The content type and body `oversized_upstream` answers `uri` with.
fn oversized_body(uri: &str, mib: usize) -> (&'static str, Vec<u8>) {
    if uri.starts_with("/api/chat") {
        (oversized::NDJSON, oversized::ndjson_line(mib << 20))
    } else {
        (
            oversized::EVENT_STREAM,
            oversized::event_stream_message(mib << 20),
        )
    }
}

/// One attack on the real binary: the client gets every byte; the resident peak meanwhile.
async fn oversized_peak(proxy: &Proxy, path: &str, mib: usize) -> u64 {
    let (addr, pid) = (proxy.addr, proxy.pid);
    let uri = format!("{path}?mib={mib}");
    let request_body = if path == "/api/chat" {
        oversized::OLLAMA_REQUEST
    } else {
        oversized::CONVERSE_REQUEST
    };
    let peak = Peak::start(pid);
    let got = within(
        LIMIT,
        exchange(addr, request(addr, "POST", &uri, request_body)),
    )
    .await;
    assert!(
        got.body == oversized_body(&uri, mib).1,
        "{uri}: the client's bytes changed"
    );
    peak.finish().await
}

/// What a line or a message past the framing bound may cost above idle: the bound (8 MiB) the
/// framer fills before it stops, the forwarding path's and the held recording's buffers.
const OVERSIZED_BOUND_KIB: u64 = 24 * 1024;
/// What a 4x (NDJSON) or 1.7x (event stream) larger one may cost more. A line the framer holds
/// in one doubling buffer fails it now and then (see `engine::framing::line_buffer`); what the
/// code would hold or copy per byte (36 MiB more for the NDJSON pair) fails it every time.
const OVERSIZED_GROWTH_KIB: u64 = 4 * 1024;

/// The NDJSON line bound and the event-stream message bound (`max_sse_line`, 8 MiB) in the real
/// binary, default settings: an Ollama line and a Bedrock message past the bound, then larger
/// ones, reach the client whole, and tooltap's resident memory above idle stays bounded and does
/// not grow with the line or the message (what the framer held stops at the bound; past it the
/// bytes are forwarded and counted, not kept).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlong_ndjson_lines_and_event_stream_messages_cost_bounded_resident_memory() {
    let upstream = oversized_upstream().await;
    // An event-stream payload may not pass 24 MiB (the protocol's limit).
    for (path, small, large) in [("/api/chat", 12, 48), (oversized::CONVERSE_STREAM, 12, 20)] {
        let (proxy, idle) = warmed_oversized_proxy(&upstream).await;
        let small_peak = oversized_peak(&proxy, path, small).await;
        let large_peak = oversized_peak(&proxy, path, large).await;
        let _ = std::fs::remove_dir_all(&proxy.dir);
        eprintln!(
            "{path}: idle {idle} KiB; {small} MiB: peak {small_peak} KiB; {large} MiB: peak \
             {large_peak} KiB"
        );
        let above = large_peak.max(small_peak).saturating_sub(idle);
        assert!(
            above <= OVERSIZED_BOUND_KIB,
            "{path}: {above} KiB above idle"
        );
        let growth = large_peak.saturating_sub(small_peak);
        assert!(
            growth <= OVERSIZED_GROWTH_KIB,
            "{path}: {large} MiB cost {growth} KiB more than {small} MiB"
        );
    }
}

/// A fresh proxy after one small attack on each oversized path, and its resident memory then.
async fn warmed_oversized_proxy(upstream: &Upstream) -> (Proxy, u64) {
    let proxy = start("oversized", upstream).await;
    for path in ["/api/chat", oversized::CONVERSE_STREAM] {
        oversized_peak(&proxy, path, 1).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let idle = rss_kib(proxy.pid);
    (proxy, idle)
}
