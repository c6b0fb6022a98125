//! MCP acceptance with real parts (issue 35): real MCP servers and clients on loopback, direct
//! and through the `tooltap proxy` binary, must get exactly the same; the conformance suite
//! gives the same verdict through tooltap as direct.
//!
//! * `clients`: the Python SDK server (`mcp` 2.x; JSON and SSE answers, stateful and
//!   stateless) and the TypeScript SDK 1.x server (JSON and SSE), each listed and called by
//!   the Python `Client` (legacy and auto modes), the OpenAI Agents SDK's
//!   `MCPServerStreamableHttp` and the TypeScript `Client`: the printed tool lists and results
//!   equal as JSON direct, through tooltap and from `tooltap replay` of the recordings, and
//!   the server answered the same requests (GET streams and DELETE included) with the same
//!   statuses; every exchange judged as `mcp` with no error-severity violation.
//! * `judged`: the same servers with a quirk injected into their answers (`structuredContent`
//!   dropped, or off its `outputSchema`): the rule that needs the tool catalog of the live
//!   `tools/list` fires, live and by `tooltap check`, and the SDK client rejects the answer.
//! * `conformance`: `@modelcontextprotocol/conformance` 0.1.16's server scenarios against the
//!   suite's own test server, direct and through tooltap.
//!
//! The parts are installed by `scripts/test` (`TOOLTAP_TEST_PYTHON`, `TOOLTAP_TEST_MCP_NODE`);
//! see `support::mcp`.

mod clients;
mod conformance;
mod judged;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::support::binary::{Running, recording_args, start_proxy};
use crate::support::check::{check_json, error_lines, live_verdicts, offline_verdicts};
use crate::support::client::{exchange, request};
use crate::support::mcp::{McpServer, python_client, ts_client};
use crate::support::metrics::metric_sum;
use crate::support::proxy::start_replay;
use crate::support::temp::{TempDir, json_lines, jsonl_under};
use crate::support::{quiescent, within};

/// A client the tests drive.
#[derive(Clone, Copy, Debug)]
pub enum McpClient {
    /// The Python SDK's `Client` in `mode="legacy"`.
    PythonLegacy,
    /// The Python SDK's `Client` in its default `mode="auto"`.
    PythonAuto,
    /// The OpenAI Agents SDK's `MCPServerStreamableHttp`.
    Agents,
    /// The TypeScript SDK 1.x `Client`.
    TypeScript,
}

/// Every client, in the order the tests run them.
pub const ALL_CLIENTS: [McpClient; 4] = [
    McpClient::PythonLegacy,
    McpClient::PythonAuto,
    McpClient::Agents,
    McpClient::TypeScript,
];

impl McpClient {
    /// What the client got from the MCP endpoint `url`.
    pub async fn run(self, url: &str) -> Value {
        match self {
            McpClient::PythonLegacy => python_client(url, "legacy").await,
            McpClient::PythonAuto => python_client(url, "auto").await,
            McpClient::Agents => python_client(url, "agents").await,
            McpClient::TypeScript => ts_client(url).await,
        }
    }
}

/// `tooltap proxy` (the binary) before `server`, recording every exchange and writing its
/// violations into a folder of its own.
pub struct Tap {
    pub running: Running,
    pub dir: TempDir,
}

impl Tap {
    pub async fn start(server: &McpServer) -> Tap {
        Tap::start_with(server, &[]).await
    }

    /// [`Tap::start`] with `extra` command-line arguments (e.g. `--inject`).
    pub async fn start_with(server: &McpServer, extra: &[&str]) -> Tap {
        let dir = TempDir::new("mcp-tap");
        let mut args = recording_args(
            &server.origin(),
            &dir.join("recordings"),
            &dir.join("violations.jsonl"),
        );
        args.extend(extra.iter().map(std::ffi::OsString::from));
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let running = start_proxy(&args, "info").await;
        Tap { running, dir }
    }

    /// The MCP endpoint clients point at.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.running.addr)
    }

    pub fn recordings(&self) -> std::path::PathBuf {
        self.dir.join("recordings")
    }

    pub fn violations(&self) -> std::path::PathBuf {
        self.dir.join("violations.jsonl")
    }

    /// `/metrics` once tooltap has inspected `count` exchanges as `mcp` (inspection runs beside
    /// the client path and may finish just after the client).
    pub async fn metrics_after(&self, count: u64) -> String {
        let admin = self
            .running
            .admin
            .expect("the admin listener's address is logged");
        within(Duration::from_secs(20), async {
            loop {
                let collected = exchange(admin, request(admin, "GET", "/metrics", "")).await;
                let text = String::from_utf8_lossy(&collected.body).into_owned();
                if metric_sum(&text, INSPECTED, &[MCP_LABEL]) >= count {
                    return text;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
    }

    /// Stops tooltap, then asserts that it recorded `count` exchanges (or any number, with
    /// `None`), each labelled `mcp`, that no violation it logged has error severity, and that
    /// `tooltap check` of the recordings gives every exchange its live verdict. Returns how
    /// many it recorded.
    pub async fn stop_and_check(&mut self, count: Option<usize>) -> usize {
        self.stop_and_compare_with_check().await;
        let errors = error_lines(&self.violations());
        assert!(errors.is_empty(), "errors on good MCP traffic: {errors:#?}");
        let recordings = jsonl_under(&self.recordings());
        if let Some(count) = count {
            assert_eq!(
                recordings.len(),
                count,
                "tooltap recorded another number of exchanges than the server answered"
            );
        }
        for file in &recordings {
            let exchange = &json_lines(file)[0];
            assert_eq!(exchange["dialect"], "mcp", "{}", file.display());
        }
        recordings.len()
    }
}

impl Tap {
    /// Stops tooltap and asserts that `tooltap check` of its recordings gives each exchange the
    /// rule ids it had live; returns the live verdicts.
    pub async fn stop_and_compare_with_check(&mut self) -> BTreeMap<String, Vec<String>> {
        self.running.stop_and_drain().await;
        let live = live_verdicts(&self.violations(), "mcp");
        let checked = check_json(&self.recordings());
        assert_eq!(
            offline_verdicts(&checked.report),
            live,
            "tooltap check judged the recordings otherwise than live: {}",
            checked.stderr
        );
        live
    }
}

/// The inspected-exchanges counter and the label of MCP exchanges on it.
const INSPECTED: &str = "tooltap_exchanges_inspected_total";
const MCP_LABEL: &str = "dialect=\"mcp\"";

/// `tooltap replay` of what `tap` recorded serves each of `clients` what it `got` direct, with
/// no error-severity violation (the replay judges what it serves).
async fn replay_gives_the_same(tap: &Tap, clients: &[McpClient], got: &[Value]) {
    let violations = tap.dir.join("replay-violations.jsonl");
    let replay = start_replay(tap.recordings(), Some(violations.clone())).await;
    let url = format!("http://{}/mcp", replay.local_addr());
    for (client, direct_got) in clients.iter().zip(got) {
        let replayed = client.run(&url).await;
        assert_eq!(
            &replayed, direct_got,
            "{client:?} got something else from tooltap replay"
        );
    }
    within(Duration::from_secs(20), replay.shutdown())
        .await
        .expect("replay stops");
    let errors = error_lines(&violations);
    assert!(
        errors.is_empty(),
        "errors on replayed MCP traffic: {errors:#?}"
    );
}

/// The server's requests once its log stopped growing (a GET stream's line is written when
/// the stream ends, which may be just after the client exits).
async fn settled_requests(server: &McpServer) -> Vec<String> {
    quiescent(Duration::from_secs(10), || server.requests()).await
}

fn sorted(mut lines: Vec<String>) -> Vec<String> {
    lines.sort();
    lines
}

/// What one round trip saw: each client's output (direct, equal through tooltap) and the
/// requests the server answered through tooltap.
pub struct RoundTrip {
    pub got: Vec<Value>,
    pub requests: Vec<String>,
}

/// Runs `clients` against `server` direct, then through tooltap: each client's output must be
/// the same both ways, and the server must have answered the same requests with the same
/// statuses. Every exchange was inspected and recorded as `mcp`, with no error-severity
/// violation, and `tooltap replay` of the recordings serves every client the same again.
pub async fn round_trip(server: &McpServer, clients: &[McpClient]) -> RoundTrip {
    let mut got = Vec::new();
    for client in clients {
        got.push(client.run(&server.url()).await);
    }
    let direct = settled_requests(server).await;

    let mut tap = Tap::start(server).await;
    for (client, direct_got) in clients.iter().zip(&got) {
        let through = client.run(&tap.url()).await;
        assert_eq!(
            &through, direct_got,
            "{client:?} got something else through tooltap"
        );
    }
    let all = settled_requests(server).await;
    let requests = all[direct.len()..].to_vec();
    assert_eq!(
        sorted(requests.clone()),
        sorted(direct),
        "the server answered other requests through tooltap"
    );
    let metrics = tap.metrics_after(requests.len() as u64).await;
    assert_eq!(
        metric_sum(&metrics, INSPECTED, &[MCP_LABEL]),
        requests.len() as u64,
        "every exchange inspected as mcp: {metrics}"
    );
    tap.stop_and_check(Some(requests.len())).await;
    replay_gives_the_same(&tap, clients, &got).await;
    RoundTrip { got, requests }
}
