//! What the benchmark's clients (`bench_client`, `bench_memory`) share: the pooled HTTP client,
//! the tool-calling request they send, a process's VmRSS from /proc, and `main`'s ending (one
//! JSON report on stdout, or the error on stderr).
//!
//! Input: a tokio runtime and the run's future, a pid. Output: an exit code, bytes, kibibytes.

use std::fmt::Display;
use std::future::Future;
use std::io::Write;
use std::process::ExitCode;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::json;

pub type Http = Client<HttpConnector, Full<Bytes>>;

/// A client with `TCP_NODELAY` and no bound on idle pooled connections.
pub fn client() -> Http {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(usize::MAX)
        .build(connector)
}

/// The benchmark's request: one declared tool, forced.
pub fn request_body(stream: bool) -> Bytes {
    let text = json!({
        "model": "bench-model", "stream": stream,
        "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"], "additionalProperties": false}}}],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}}
    })
    .to_string();
    Bytes::from(text)
}

/// A process's resident memory in KiB (`VmRSS` of /proc/PID/status).
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs `run` on `runtime`: its report on stdout and success, or `name: error` on stderr.
pub fn report<R: Display>(
    name: &str,
    runtime: std::io::Result<tokio::runtime::Runtime>,
    run: impl Future<Output = Result<R, String>>,
) -> ExitCode {
    let outcome = match runtime {
        Ok(runtime) => runtime.block_on(run),
        Err(error) => Err(error.to_string()),
    };
    match outcome {
        Ok(report) => {
            let _ = writeln!(std::io::stdout(), "{report}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("{name}: {error}");
            ExitCode::FAILURE
        }
    }
}
