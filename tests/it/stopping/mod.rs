//! Stopping the real binary loses nothing: a SIGTERM drains the inspections in flight and every
//! writer before the process exits (`sigterm`), a SIGKILL in the segments layout leaves every
//! finished recording readable (`sigkill`), and a start sweeps what a killed process left
//! (`sigkill`). Each test starts the binary itself: the promise is about the process.

mod replay;
mod sigkill;
mod sigterm;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::engine_support::{self, Fixture};
use crate::support::binary::{self, Running};
use crate::support::client::{Collected, exchange, request};
use crate::support::temp::{files_under, jsonl_under};
use crate::support::within;

/// A buffered response with one error-severity violation (`tool_call.arguments_not_string`).
fn violating() -> Fixture {
    engine_support::fixture("buffered_arguments_object")
}

/// The binary on ephemeral ports before `upstream`, one worker thread, recording under
/// `<dir>/rec` and writing violations to `<dir>/violations.jsonl`, with `extra` arguments.
async fn start(dir: &Path, upstream: &str, extra: &[&str]) -> Running {
    let recordings = dir.join("rec");
    let violations = dir.join("violations.jsonl");
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "--worker-threads".as_ref(),
        "1".as_ref(),
        "--upstream".as_ref(),
        upstream.as_ref(),
        "--recordings".as_ref(),
        recordings.as_os_str(),
        "--violations".as_ref(),
        violations.as_os_str(),
    ];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    // Each violation is a log line, and nobody reads the log while exchanges run: a full pipe
    // would stop the process, so the inspector's lines are left out.
    binary::start_proxy(&args, "info,tooltap::inspect=error").await
}

/// One violating exchange, read to its end.
async fn send_violating(running: &Running, fixture: &Fixture) -> Collected {
    let addr = running.addr;
    let body = String::from_utf8_lossy(&fixture.request).into_owned();
    let mut req = request(addr, "POST", "/v1/chat/completions", &body);
    req.headers_mut()
        .insert("x-fixture", fixture.name.parse().expect("value"));
    let got = exchange(addr, req).await;
    assert_eq!(got.body, fixture.body, "the client gets every byte");
    got
}

/// The exchange id tooltap gave a response.
fn id_of(got: &Collected) -> String {
    got.headers
        .get("x-tooltap-exchange")
        .and_then(|value| value.to_str().ok())
        .expect("exchange id header")
        .to_owned()
}

fn signal(child: &tokio::process::Child, name: &str) {
    let pid = child.id().expect("pid").to_string();
    let sent = std::process::Command::new("kill")
        .args([name, &pid])
        .status()
        .expect("kill runs");
    assert!(sent.success());
}

/// Runs `rounds` of `round`, `at_once` at a time; the failures, each saying what was lost.
async fn run_rounds<F>(rounds: usize, at_once: usize, round: impl Fn() -> F) -> Vec<String>
where
    F: std::future::Future<Output = Result<(), String>> + Send + 'static,
{
    let mut failures = Vec::new();
    for _ in 0..rounds / at_once {
        let batch: Vec<_> = (0..at_once).map(|_| tokio::spawn(round())).collect();
        for one in batch {
            if let Err(lost) = one.await.expect("round") {
                failures.push(lost);
            }
        }
    }
    failures
}

/// Waits for the process to exit; the rest of its log is read into `running.log`.
async fn exited(running: &mut Running) -> std::process::ExitStatus {
    let status = within(Duration::from_secs(20), running.child.wait())
        .await
        .expect("wait");
    while let Ok(Some(line)) = running.lines.next_line().await {
        running.log.push(line);
    }
    status
}

/// The exchange ids of the recordings under `dir`, whatever the layout (one per exchange line).
fn recorded_ids(dir: &Path) -> HashSet<String> {
    let mut ids = HashSet::new();
    for file in jsonl_under(dir) {
        for line in std::fs::read_to_string(&file).unwrap_or_default().lines() {
            if line.starts_with(r#"{"type":"exchange","#)
                && let Ok(value) = serde_json::from_str::<serde_json::Value>(line)
                && let Some(id) = value["id"].as_str()
            {
                ids.insert(id.to_owned());
            }
        }
    }
    ids
}

/// The exchange ids named by a violations file; every line must parse.
fn violation_ids(path: &Path) -> HashSet<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).expect("a whole JSON line");
            value["exchange"].as_str().unwrap_or_default().to_owned()
        })
        .collect()
}

/// Temporary files left under `dir`.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = files_under(dir);
    files.retain(|path| path.to_string_lossy().ends_with(".tmp"));
    files
}
