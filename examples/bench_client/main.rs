//! The benchmark's load generator: one JSON object on stdout per run, read by `bench/run`.
//!
//! Input: a base URL (`bench_upstream` directly, or a proxy in front of it) and a mode:
//! - `rate`: open loop at a fixed request rate. A pacer thread schedules send times; latency is
//!   measured from the *scheduled* time, so a stalled server is charged for the requests it
//!   delayed (coordinated-omission correction). A concurrency cap bounds in-flight requests.
//! - `max`: closed loop, `concurrency` workers back to back; the highest sustainable rate.
//! - `sse`: concurrent streams; time to first event and per-event delay (receive time minus the
//!   upstream's `sent_ns` stamp, both CLOCK_REALTIME on the same machine), events counted.
//! - `hold`: open many slow streams, wait until each has its first event, then read the target
//!   process's VmRSS: the memory a concurrent stream costs.
//!
//! With `--pid`, the target's utime+stime (/proc/PID/stat) is read around the measured window,
//! in `rate` and `max` once it stops growing after the load (see `stats::settled_cpu_time`).
//! Every run is bounded in count and time; requests failing or timing out are counted, not hidden.

// Test and bench code may stop loudly: the deny lints in Cargo.toml guard the product code.
#![allow(clippy::expect_used, clippy::panic, clippy::unreachable)]

use std::process::ExitCode;
use std::time::Duration;

use bytes::Bytes;
use clap::{Parser, Subcommand};
use http::Request;
use http_body_util::{BodyExt, Full};
use serde_json::Value;

// Shared with bench_memory, another example crate: a path is the one way to share a file.
#[path = "../bench_common/mod.rs"]
mod bench_common;
mod buffered;
mod stats;
mod stream;

use buffered::{max_mode, rate_mode};
use stream::{hold_mode, sse_mode};

use bench_common::{Http, request_body};

#[derive(Debug, Parser)]
struct Args {
    /// Base URL, e.g. http://127.0.0.1:8787 (the path /v1/chat/completions is appended).
    #[arg(long)]
    url: String,
    /// Process whose CPU time (and, in `hold`, RSS) is measured.
    #[arg(long)]
    pid: Option<u32>,
    /// Per-request timeout in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Debug, Subcommand)]
enum Mode {
    Rate {
        #[arg(long)]
        rate: u32,
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        #[arg(long, default_value_t = 1.0)]
        warmup: f64,
        #[arg(long, default_value_t = 256)]
        concurrency: usize,
    },
    Max {
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        #[arg(long, default_value_t = 1.0)]
        warmup: f64,
        #[arg(long, default_value_t = 32)]
        concurrency: usize,
    },
    Sse {
        #[arg(long, default_value_t = 8)]
        streams: usize,
        #[arg(long, default_value_t = 200)]
        events: u32,
        #[arg(long, default_value_t = 2000)]
        interval_us: u64,
        /// Waves of `streams` concurrent streams, one after the other on warm connections.
        #[arg(long, default_value_t = 1)]
        waves: usize,
    },
    Hold {
        #[arg(long)]
        streams: usize,
        /// Seconds between events: long, so the streams sit idle like a slow model's.
        #[arg(long, default_value_t = 5.0)]
        interval: f64,
        /// Connections opened at once while ramping up.
        #[arg(long, default_value_t = 200)]
        ramp: usize,
    },
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    bench_common::report("bench_client", runtime, run(args))
}

async fn run(args: Args) -> Result<Value, String> {
    let client = bench_common::client();
    let base = args.url.trim_end_matches('/').to_string();
    let timeout = Duration::from_millis(args.timeout_ms);
    let target = Target {
        client,
        uri: format!("{base}/v1/chat/completions"),
        timeout,
        pid: args.pid,
    };
    match args.mode {
        Mode::Rate {
            rate,
            seconds,
            warmup,
            concurrency,
        } => rate_mode(target, rate, seconds, warmup, concurrency).await,
        Mode::Max {
            seconds,
            warmup,
            concurrency,
        } => max_mode(target, seconds, warmup, concurrency).await,
        Mode::Sse {
            streams,
            events,
            interval_us,
            waves,
        } => sse_mode(target, streams, events, interval_us, waves).await,
        Mode::Hold {
            streams,
            interval,
            ramp,
        } => hold_mode(target, streams, interval, ramp).await,
    }
}

#[derive(Clone)]
struct Target {
    client: Http,
    uri: String,
    timeout: Duration,
    pid: Option<u32>,
}

impl Target {
    /// One buffered exchange, body read to the end; `Err` on a failure, timeout or non-200.
    async fn buffered(&self, body: Bytes) -> Result<(), String> {
        let request = Request::post(&self.uri)
            .header("content-type", "application/json")
            .body(Full::new(body))
            .map_err(|e| e.to_string())?;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| e.to_string())?;
            let status = response.status();
            response
                .into_body()
                .collect()
                .await
                .map_err(|e| e.to_string())?;
            if status == 200 {
                Ok(())
            } else {
                Err(format!("status {status}"))
            }
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| "timeout".to_string())?
    }

    fn cpu_time(&self) -> Option<stats::CpuTime> {
        self.pid.and_then(stats::cpu_time)
    }
}
