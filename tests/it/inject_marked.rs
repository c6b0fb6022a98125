//! A recording made with `proxy --inject` carries its mark end to end, with the real binary:
//! the exchange line's `injected` names the quirk, `tooltap check` says so in its text (a note on
//! the exchange), JSON (`injected`) and JUnit (the failure's message and body), and `tooltap
//! replay` logs it when it serves that recording, so CI does not blame the provider for a fault
//! tooltap put there.

use std::time::Duration;

use serde_json::Value;

use crate::engine_support;
use crate::layout::{start_proxy, start_replay, stop, wait_for_lines};
use crate::support::TempDir;
use crate::support::client::exchange;
use crate::support::fixtures::{fixture_request, fixture_upstream};
use crate::support::temp::files_under;
use crate::support::within;

const QUIRK: &str = "index-all-zero";
const NOTE: &str = "quirk injected by tooltap: index-all-zero";

/// `tooltap check recordings/ <extra>` in `cwd`: exit code and stdout.
fn check(cwd: &std::path::Path, extra: &[&str]) -> (Option<i32>, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tooltap"))
        .args(["check", "recordings/"])
        .args(extra)
        .current_dir(cwd)
        .env_remove("TOOLTAP_CONFIG")
        .output()
        .expect("check runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    (output.status.code(), stdout)
}

#[tokio::test]
async fn an_injected_recording_says_so_in_check_and_replay() {
    let fixture = engine_support::fixture("seed_required_stream");
    let upstream = fixture_upstream(std::slice::from_ref(&fixture)).await;
    let cwd = TempDir::new("inject-marked");
    let (proxy, mut lines, addr) = start_proxy(
        &cwd,
        &upstream.url(),
        &["--record", "all", "--inject", QUIRK],
    )
    .await;
    let got = exchange(addr, fixture_request(addr, &fixture)).await;
    assert_eq!(got.headers["x-tooltap-quirk"], QUIRK);
    wait_for_lines(&mut lines, "exchange inspected", 1).await;
    stop(proxy).await;

    // The recording's first line carries the mark.
    let files = files_under(&cwd.join("recordings"));
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).expect("recording");
    let first: Value = serde_json::from_str(text.lines().next().expect("a line")).expect("JSON");
    assert_eq!(first["injected"], serde_json::json!([QUIRK]), "{first}");

    // check: text, JSON and JUnit all say who broke it.
    let (code, human) = check(&cwd, &[]);
    assert_eq!(code, Some(1), "the quirk's violations still count: {human}");
    assert!(human.contains(&format!("note: {NOTE}")), "{human}");
    let (_, json) = check(&cwd, &["--format", "json"]);
    let report: Value = serde_json::from_str(&json).expect("JSON report");
    assert_eq!(
        report["exchanges"][0]["injected"],
        serde_json::json!([QUIRK]),
        "{report}"
    );
    let (_, junit) = check(&cwd, &["--format", "junit"]);
    let failure = junit
        .lines()
        .find(|line| line.contains("<failure"))
        .unwrap_or_else(|| panic!("no failure: {junit}"));
    assert!(failure.contains(NOTE), "{junit}");

    // replay logs the mark when it serves the recording.
    let (replay, mut lines, addr) = start_replay(&cwd).await;
    let replayed = exchange(addr, fixture_request(addr, &fixture)).await;
    assert_eq!(replayed.status, 200);
    assert_eq!(replayed.body, got.body, "replay serves what the client got");
    let marked = within(Duration::from_secs(20), async {
        while let Some(line) = lines.next_line().await.expect("read") {
            let value: Value = serde_json::from_str(&line).expect("JSON log line");
            if value["fields"]["injected"].is_string() {
                return value;
            }
        }
        panic!("replay exited without logging the mark");
    })
    .await;
    assert_eq!(marked["fields"]["injected"], QUIRK, "{marked}");
    assert!(
        marked["fields"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("altered on purpose")),
        "{marked}"
    );
    stop(replay).await;
}
