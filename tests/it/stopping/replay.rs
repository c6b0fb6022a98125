//! `tooltap replay --on-miss forward`: a forwarded miss is recorded by an inspector; a SIGTERM
//! the moment its body ends still leaves its recording and its violations line on disk.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use super::*;
use crate::support::TempDir;
use crate::support::fixtures::fixture_upstream;

const ROUNDS: usize = 10;
const AT_ONCE: usize = 5;

/// One round: a replay server with no recordings forwards one violating miss, and is stopped as
/// the client reads the body's end.
async fn forward_one_then_sigterm(upstream: String) -> Result<(), String> {
    let dir = TempDir::new("stop-replay");
    let fixture = violating();
    let violations = dir.join("violations.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tooltap"))
        .args(["replay", "--listen", "127.0.0.1:0", "--log-format", "json"])
        .args(["--on-miss", "forward", "--upstream", &upstream])
        .arg("--recordings")
        .arg(dir.path())
        .arg("--violations")
        .arg(&violations)
        .env("RUST_LOG", "info,tooltap::inspect=error")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the tooltap binary starts");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let addr: std::net::SocketAddr = within(Duration::from_secs(20), async {
        loop {
            let line = lines
                .next_line()
                .await
                .expect("read")
                .expect("replay exited early");
            let value: serde_json::Value = serde_json::from_str(&line).expect("JSON log line");
            if value["fields"]["message"] == "tooltap replay ready" {
                let listen = value["fields"]["listen"].as_str().expect("listen");
                return listen.parse().expect("address");
            }
        }
    })
    .await;
    let body = String::from_utf8_lossy(&fixture.request).into_owned();
    let mut req = request(addr, "POST", "/v1/chat/completions", &body);
    req.headers_mut()
        .insert("x-fixture", fixture.name.parse().expect("value"));
    let got = exchange(addr, req).await;
    signal(&child, "-TERM");
    let status = within(Duration::from_secs(20), child.wait())
        .await
        .expect("wait");
    let id = id_of(&got);
    let mut lost = Vec::new();
    if !status.success() {
        lost.push(format!("exit {status}"));
    }
    if !recorded_ids(&dir.join("replay")).contains(&id) {
        lost.push("capture".to_owned());
    }
    if !violation_ids(&violations).contains(&id) {
        lost.push("violations line".to_owned());
    }
    if lost.is_empty() {
        Ok(())
    } else {
        Err(lost.join(", "))
    }
}

#[tokio::test]
async fn a_forwarded_miss_is_kept_when_replay_is_stopped_the_moment_its_body_ends() {
    let fixture = violating();
    let upstream = fixture_upstream(std::slice::from_ref(&fixture)).await;
    let url = upstream.url();
    let failures = run_rounds(ROUNDS, AT_ONCE, || forward_one_then_sigterm(url.clone())).await;
    assert!(
        failures.is_empty(),
        "{} of {ROUNDS} rounds lost something: {failures:?}",
        failures.len()
    );
}
