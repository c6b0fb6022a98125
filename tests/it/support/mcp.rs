//! The real MCP parts the acceptance tests drive (issue 35): servers on the official Python SDK
//! (`tests/clients/python/mcp_servers/weather.py`, `mcp` 2.x) and TypeScript SDK 1.x
//! (`tests/clients/mcp/weather_server.mjs`), the conformance suite's own test server
//! (`conformance_server.ts`), the clients (the Python SDK's `Client` in legacy and auto modes,
//! the OpenAI Agents SDK's `MCPServerStreamableHttp`, the TypeScript SDK's `Client`) and the
//! conformance suite (`@modelcontextprotocol/conformance`, run through `conformance.mjs`).
//!
//! Input: `TOOLTAP_TEST_MCP_NODE` (else `tests/clients/mcp`) and `TOOLTAP_TEST_PYTHON`, which
//! `scripts/test` installs and exports. Output: running servers bound to 127.0.0.1 on the
//! ephemeral port they print, and each client's printed JSON. Every child runs under a timeout
//! and is killed when dropped; a missing install fails the test with a message naming
//! `scripts/test`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::clients::{python, python_script, run_python, script_json};
use super::temp::TempDir;
use super::within;

/// How long a client may run before the test fails.
const CLIENT_LIMIT: Duration = Duration::from_secs(120);

/// How long one run of the conformance suite may take: about 2 s on an idle machine, 10 s on a
/// loaded one; a scenario whose server request went unanswered would wait for the SDK client's
/// 60 s request timeout (see `mcp_acceptance::conformance`), and the limit leaves room for that
/// failure to be reported with the suite's own output.
const SUITE_LIMIT: Duration = Duration::from_secs(300);

/// The node package `scripts/test` installs the TypeScript SDK, the conformance suite and tsx
/// into (`npm ci` in tests/clients/mcp).
pub fn mcp_node_dir() -> PathBuf {
    let dir = std::env::var_os("TOOLTAP_TEST_MCP_NODE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/mcp"));
    for package in [
        "@modelcontextprotocol/sdk",
        "@modelcontextprotocol/conformance",
        "tsx",
    ] {
        let manifest = dir.join("node_modules").join(package).join("package.json");
        assert!(
            manifest.exists(),
            "{} is missing: run scripts/test, which installs {package} (npm ci in \
             tests/clients/mcp) and sets TOOLTAP_TEST_MCP_NODE",
            manifest.display()
        );
    }
    dir
}

/// A running MCP server: its child (killed on drop), its loopback port and the file it appends
/// `METHOD PATH STATUS` to for every request it answered (when it keeps one).
pub struct McpServer {
    _child: Child,
    pub port: u16,
    access_log: PathBuf,
    _dir: TempDir,
}

impl McpServer {
    /// The server's MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// The origin tooltap forwards to.
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests the server answered so far, in the order their answers finished.
    pub fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.access_log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// Spawns `command` (a server that prints `{"port": N}` first) and waits for that line.
pub async fn spawn_server(mut command: Command, dir: TempDir, access_log: PathBuf) -> McpServer {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the MCP server starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let port = within(Duration::from_secs(60), async {
        loop {
            let line = lines
                .next_line()
                .await
                .expect("read the server's stdout")
                .expect("the MCP server exited before printing its port");
            if let Ok(value) = serde_json::from_str::<Value>(&line)
                && let Some(port) = value["port"].as_u64()
            {
                return u16::try_from(port).expect("a port");
            }
        }
    })
    .await;
    // Keep draining stdout so that the server never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    McpServer {
        _child: child,
        port,
        access_log,
        _dir: dir,
    }
}

/// The Python SDK server (`mcp_servers/weather.py`) answering in `body` (`json` or `sse`)
/// mode, `state`ful (`stateful`) or not (`stateless`).
pub async fn start_python_server(body: &str, state: &str) -> McpServer {
    let dir = TempDir::new(&format!("mcp-py-{body}-{state}"));
    let access_log = dir.join("access.log");
    let mut command = Command::new(python());
    command
        .arg(python_script("mcp_servers/weather.py"))
        .args([body, state])
        .arg(&access_log);
    spawn_server(command, dir, access_log).await
}

/// The TypeScript SDK 1.x server (`weather_server.mjs`, sessionful) in `body` mode.
pub async fn start_ts_server(body: &str) -> McpServer {
    let dir = TempDir::new(&format!("mcp-ts-{body}"));
    let access_log = dir.join("access.log");
    let mut command = Command::new("node");
    command
        .current_dir(mcp_node_dir())
        .args(["weather_server.mjs", body])
        .arg(&access_log);
    spawn_server(command, dir, access_log).await
}

/// The conformance suite's own test server (`conformance_server.ts`, run by tsx); it keeps no
/// access log.
pub async fn start_conformance_server() -> McpServer {
    let dir = TempDir::new("mcp-conformance-server");
    let access_log = dir.join("access.log");
    let mut command = Command::new("node");
    command
        .current_dir(mcp_node_dir())
        .args(["--import", "tsx", "conformance_server.ts"])
        .env("PORT", "0");
    spawn_server(command, dir, access_log).await
}

/// What a Python client (`legacy`, `auto` or `agents`, see `mcp_check.py`) got from `url`.
pub async fn python_client(url: &str, client: &str) -> Value {
    let output = run_python("mcp_check.py", &[url, client], CLIENT_LIMIT).await;
    script_json(&output, &format!("the {client} Python MCP client"), url)
}

/// What the TypeScript SDK client (`weather_client.mjs`) got from `url`.
pub async fn ts_client(url: &str) -> Value {
    let mut command = Command::new("node");
    command
        .current_dir(mcp_node_dir())
        .args(["weather_client.mjs", url]);
    let output = within(CLIENT_LIMIT, command.output())
        .await
        .expect("node runs the TypeScript MCP client");
    script_json(&output, "the TypeScript MCP client", url)
}

/// One run of the conformance suite's server scenarios: each scenario's `(passed, failed)`
/// checks from its summary, and its whole output (with the failed checks' messages) for
/// failure messages.
pub struct Conformance {
    pub scenarios: BTreeMap<String, (u32, u32)>,
    pub output: String,
}

/// Runs `conformance server --url url` with `extra` arguments (`--scenario`, `--suite`,
/// `--spec-version`) in a folder of its own.
pub async fn conformance(url: &str, extra: &[&str]) -> Conformance {
    let dir = TempDir::new("mcp-conformance-run");
    let script = mcp_node_dir().join("conformance.mjs");
    let mut command = Command::new("node");
    command
        .current_dir(&dir)
        .arg(script)
        .args(["server", "--url", url])
        .arg("--output-dir")
        .arg(dir.join("results"))
        .args(extra)
        .kill_on_drop(true);
    let output = within(SUITE_LIMIT, command.output())
        .await
        .expect("node runs the conformance suite");
    let text = format!(
        "{}{}\nfailed checks: {:#?}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        failed_checks(&dir.join("results"))
    );
    Conformance {
        scenarios: summary(&text),
        output: text,
    }
}

/// Every failed check the suite saved under `results` (`<scenario>/checks.json`), for failure
/// messages: the suite's summary names the scenario only.
fn failed_checks(results: &Path) -> Vec<Value> {
    super::temp::files_under(results)
        .iter()
        .filter_map(|file| std::fs::read(file).ok())
        .filter_map(|bytes| serde_json::from_slice::<Vec<Value>>(&bytes).ok())
        .flatten()
        .filter(|check| check["status"] == "FAILURE")
        .collect()
}

/// The suite's verdicts: its summary lines after a full run, `✓ name: 1 passed, 0 failed` (or
/// `✗ …`), or after a `--scenario` run the scenario's name and its `Passed: 1/1, 0 failed`.
fn summary(text: &str) -> BTreeMap<String, (u32, u32)> {
    let Some(after) = text.split("=== SUMMARY ===").nth(1) else {
        return single_scenario(text).into_iter().collect();
    };
    after
        .lines()
        .filter_map(|line| {
            let line = line.trim_start_matches(['✓', '✗', '⚠', ' ']);
            let (name, counts) = line.split_once(": ")?;
            if name == "Total" {
                return None;
            }
            let mut numbers = counts
                .split(", ")
                .filter_map(|part| part.split(' ').next()?.parse::<u32>().ok());
            Some((name.to_owned(), (numbers.next()?, numbers.next()?)))
        })
        .collect()
}

/// A `--scenario` run's verdict: `Running client scenario 'name' …`, then `Passed: p/n, f
/// failed`.
fn single_scenario(text: &str) -> Option<(String, (u32, u32))> {
    let name = text
        .split("Running client scenario '")
        .nth(1)?
        .split('\'')
        .next()?;
    let counts = text.split("Passed: ").nth(1)?.lines().next()?;
    let (passed, rest) = counts.split_once('/')?;
    let failed = rest.split(", ").nth(1)?.split(' ').next()?;
    Some((
        name.to_owned(),
        (passed.parse().ok()?, failed.parse().ok()?),
    ))
}
