//! The memory scenarios of the benchmark: what one concurrent stream costs a proxy in resident
//! memory. One JSON object on stdout per run, read by `bench/bench.py`'s memory scenario.
//!
//! Input: a base URL (a proxy in front of `bench_upstream`), the proxy's `--pid`, and a mode:
//! - `streams`: `--streams` concurrent SSE streams of `--events` events each (about 250 bytes an
//!   event), read to their end as fast as they come; all are opened before the first one ends.
//!   With `--fragment B`, each event but the first two and the last carries `B` bytes of the
//!   call's arguments (a huge argument, as a coding agent streams a whole file).
//! - `slow`: `--streams` streams whose client reads the first frame, then one frame every
//!   `--read-every-ms` (0: never again) for `--hold-s` seconds, while the upstream sends as fast
//!   as the proxy takes.
//!
//! Output: the proxy's VmRSS before the load (after a warm-up) and its peak during it (sampled
//! every 20 ms from /proc/PID/status), the difference per stream, how many streams completed, the
//! CPU time the proxy used meanwhile (/proc/PID/stat) and the argument bytes the streams carried.
//! With `--admin`, the proxy's `tooltap_inspection_incomplete_total` by reason after the run.
//! Every wait is bounded in time. All traffic stays on loopback.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::{Parser, Subcommand};
use http::Request;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

// Shared with bench_client, another example crate: a path is the one way to share a file.
#[path = "bench_common/mod.rs"]
mod bench_common;

use bench_common::{Http, request_body, rss_kib};

#[derive(Debug, Parser)]
struct Args {
    /// Base URL of the proxy, e.g. http://127.0.0.1:8787.
    #[arg(long)]
    url: String,
    /// The proxy's process id: its VmRSS is sampled.
    #[arg(long)]
    pid: u32,
    /// The proxy's admin base URL, for its incomplete-inspection counters.
    #[arg(long)]
    admin: Option<String>,
    /// Streams opened at once while ramping up.
    #[arg(long, default_value_t = 64)]
    ramp: usize,
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Debug, Subcommand)]
enum Mode {
    Streams {
        #[arg(long)]
        streams: usize,
        #[arg(long)]
        events: u32,
        #[arg(long, default_value_t = 5_000)]
        interval_us: u64,
        /// Argument bytes per event (0: two).
        #[arg(long, default_value_t = 0)]
        fragment: usize,
    },
    Slow {
        #[arg(long)]
        streams: usize,
        #[arg(long, default_value_t = 20_000)]
        events: u32,
        #[arg(long, default_value_t = 0)]
        read_every_ms: u64,
        #[arg(long, default_value_t = 5.0)]
        hold_s: f64,
    },
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build();
    bench_common::report("bench_memory", runtime, run(args))
}

/// Samples a process's VmRSS every 20 ms on a thread of its own, keeping the highest.
struct Sampler {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start(pid: u32) -> Sampler {
        let (peak, stop) = (
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let (p, s) = (peak.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                if let Some(rss) = rss_kib(pid) {
                    p.fetch_max(rss, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Sampler {
            peak,
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.peak.load(Ordering::Relaxed)
    }
}

async fn open(client: &Http, uri: &str) -> Result<hyper::body::Incoming, String> {
    let request = Request::post(uri)
        .header("content-type", "application/json")
        .body(Full::new(request_body(true)))
        .map_err(|e| e.to_string())?;
    let response = client.request(request).await.map_err(|e| e.to_string())?;
    if response.status() != 200 {
        return Err(format!("status {}", response.status()));
    }
    Ok(response.into_body())
}

/// Opens a stream once `gate` lets it (it bounds how many open at once), within 30 s.
async fn open_gated(
    client: &Http,
    uri: &str,
    gate: &Semaphore,
) -> Result<hyper::body::Incoming, String> {
    let permit = gate.acquire().await;
    let body = tokio::time::timeout(Duration::from_secs(30), open(client, uri)).await;
    drop(permit);
    body.map_err(|_| "open timed out".to_string())?
}

/// Reads a stream to its end; its byte count and whether it ended with `[DONE]`.
async fn drain(mut body: hyper::body::Incoming) -> (u64, bool) {
    let (mut bytes, mut tail) = (0u64, Vec::new());
    while let Some(Ok(frame)) = body.frame().await {
        if let Some(data) = frame.data_ref() {
            bytes += data.len() as u64;
            tail.extend_from_slice(data);
            let keep = tail.len().saturating_sub(32);
            tail.drain(..keep);
        }
    }
    let done = tail.windows(12).any(|w| w == b"data: [DONE]");
    (bytes, done)
}

async fn run(args: Args) -> Result<Value, String> {
    let client = bench_common::client();
    let base = args.url.trim_end_matches('/').to_string();
    // Warm the proxy (its runtime, pools and first allocations) before the idle sample.
    for _ in 0..4 {
        let body = open(
            &client,
            &format!("{base}/v1/chat/completions?events=20&interval_us=0"),
        )
        .await?;
        drain(body).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle = rss_kib(args.pid).ok_or("cannot read the proxy's VmRSS")?;
    let sampler = Sampler::start(args.pid);
    let started = Instant::now();
    let cpu_before = cpu_ms(args.pid);
    let mut argument_bytes = 0u64;
    let (mode, streams, done, bytes, errors) = match args.mode {
        Mode::Streams {
            streams,
            events,
            interval_us,
            fragment,
        } => {
            let uri = format!(
                "{base}/v1/chat/completions?events={events}&interval_us={interval_us}\
                 &fragment={fragment}"
            );
            let (done, bytes, errors) = streams_mode(&client, &uri, streams, args.ramp).await;
            // Every event but the first two and the last carries one fragment.
            let per_stream = u64::from(events.saturating_sub(3)) * fragment.max(2) as u64;
            argument_bytes = per_stream * done as u64;
            ("streams", streams, done, bytes, errors)
        }
        Mode::Slow {
            streams,
            events,
            read_every_ms,
            hold_s,
        } => {
            let uri = format!("{base}/v1/chat/completions?events={events}&interval_us=0");
            let hold = Duration::from_secs_f64(hold_s);
            let (bytes, errors) =
                slow_mode(&client, &uri, streams, args.ramp, read_every_ms, hold).await;
            ("slow", streams, 0, bytes, errors)
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let cpu = cpu_ms(args.pid)
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    let peak = sampler.finish();
    let rss_after = rss_kib(args.pid);
    let incomplete = match &args.admin {
        Some(admin) => incomplete(&client, admin).await,
        None => Value::Null,
    };
    let per_stream = peak.saturating_sub(idle) as f64 * 1024.0 / streams.max(1) as f64;
    Ok(json!({
        "mode": mode, "streams": streams, "streams_done": done, "errors": errors.len(),
        "first_error": errors.first(), "bytes_received": bytes, "seconds": seconds,
        "rss_idle_kib": idle, "rss_peak_kib": peak, "rss_after_kib": rss_after,
        "bytes_per_stream": per_stream, "incomplete": incomplete,
        "cpu_ms": cpu, "argument_bytes": argument_bytes,
    }))
}

async fn streams_mode(
    client: &Http,
    uri: &str,
    streams: usize,
    ramp: usize,
) -> (usize, u64, Vec<String>) {
    let gate = Arc::new(Semaphore::new(ramp.max(1)));
    let mut tasks = Vec::new();
    for _ in 0..streams {
        let (client, uri, gate) = (client.clone(), uri.to_string(), gate.clone());
        tasks.push(tokio::spawn(async move {
            let body = open_gated(&client, &uri, &gate).await?;
            tokio::time::timeout(Duration::from_secs(300), drain(body))
                .await
                .map_err(|_| "stream timed out".to_string())
        }));
    }
    let (mut done, mut bytes, mut errors) = (0, 0, Vec::new());
    for task in tasks {
        match task.await {
            Ok(Ok((got, whole))) => {
                bytes += got;
                done += usize::from(whole);
            }
            Ok(Err(error)) => errors.push(error),
            Err(error) => errors.push(error.to_string()),
        }
    }
    (done, bytes, errors)
}

async fn slow_mode(
    client: &Http,
    uri: &str,
    streams: usize,
    ramp: usize,
    read_every_ms: u64,
    hold: Duration,
) -> (u64, Vec<String>) {
    let gate = Arc::new(Semaphore::new(ramp.max(1)));
    let until = Instant::now() + hold;
    let mut tasks = Vec::new();
    for _ in 0..streams {
        let (client, uri, gate) = (client.clone(), uri.to_string(), gate.clone());
        tasks.push(tokio::spawn(async move {
            let mut body = open_gated(&client, &uri, &gate).await?;
            let mut bytes = 0u64;
            loop {
                match tokio::time::timeout_at(until.into(), body.frame()).await {
                    Ok(Some(Ok(frame))) => {
                        bytes += frame.data_ref().map_or(0, |d| d.len() as u64);
                    }
                    Ok(_) | Err(_) => break,
                }
                let pause = if read_every_ms == 0 {
                    until.saturating_duration_since(Instant::now())
                } else {
                    Duration::from_millis(read_every_ms)
                };
                tokio::time::sleep_until((Instant::now() + pause).min(until).into()).await;
                if Instant::now() >= until {
                    break;
                }
            }
            Ok(bytes)
        }));
    }
    let (mut bytes, mut errors) = (0, Vec::new());
    for task in tasks {
        match task.await {
            Ok(Ok(got)) => bytes += got,
            Ok(Err(error)) => errors.push(error),
            Err(error) => errors.push(error.to_string()),
        }
    }
    (bytes, errors)
}

/// The CPU time (user and system) a process used so far, in ms (/proc/PID/stat; clock ticks are
/// 1/100 s on Linux).
fn cpu_ms(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command (which may hold spaces) start after its `)`.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some((user + system) * 10)
}

/// `tooltap_inspection_incomplete_total` summed by reason.
async fn incomplete(client: &Http, admin: &str) -> Value {
    let uri = format!("{}/metrics", admin.trim_end_matches('/'));
    let Ok(request) = Request::get(uri).body(Full::new(Bytes::new())) else {
        return Value::Null;
    };
    let Ok(Ok(response)) =
        tokio::time::timeout(Duration::from_secs(5), client.request(request)).await
    else {
        return Value::Null;
    };
    let Ok(body) = response.into_body().collect().await else {
        return Value::Null;
    };
    let text = String::from_utf8_lossy(&body.to_bytes()).into_owned();
    let mut out = serde_json::Map::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("tooltap_inspection_incomplete_total{") else {
            continue;
        };
        let reason = rest
            .split("reason=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap_or("?");
        let count: f64 = line
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0.0);
        let entry = out.entry(reason.to_string()).or_insert(json!(0.0));
        *entry = json!(entry.as_f64().unwrap_or(0.0) + count);
    }
    Value::Object(out)
}
