//! The default file layout, with the real binary: the violations file lands beside
//! `recordings/`, never in it, so after violations were written `tooltap check recordings/
//! --format junit` (the README's CI line) judges the recordings and `tooltap replay
//! --recordings recordings` starts and serves them, all with the defaults.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use crate::engine_support;
use crate::support::TempDir;
use crate::support::client::exchange;
use crate::support::fixtures::fixture_request;
use crate::support::fixtures::fixture_upstream;
use crate::support::within;

/// Start `tooltap <args>` in `cwd` with JSON logs; returns the child, its log lines and the
/// `listen` field of the line whose message is `ready`.
pub(crate) async fn start(
    cwd: &Path,
    args: &[&str],
    ready: &str,
) -> (Child, Lines<BufReader<ChildStdout>>, SocketAddr) {
    start_logging(cwd, args, ready, None).await
}

/// [`start`] with `RUST_LOG` set to `rust_log` (the test's own otherwise).
pub(crate) async fn start_logging(
    cwd: &Path,
    args: &[&str],
    ready: &str,
    rust_log: Option<&str>,
) -> (Child, Lines<BufReader<ChildStdout>>, SocketAddr) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tooltap"));
    if let Some(level) = rust_log {
        command.env("RUST_LOG", level);
    }
    let mut child = command
        .args(args)
        .args(["--log-format", "json"])
        .current_dir(cwd)
        .env_remove("TOOLTAP_CONFIG")
        .env_remove("TOOLTAP_VIOLATIONS")
        .env_remove("TOOLTAP_RECORDINGS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the tooltap binary starts");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let addr = within(Duration::from_secs(20), async {
        loop {
            let Some(line) = lines.next_line().await.expect("read") else {
                let mut stderr = String::new();
                if let Some(mut err) = child.stderr.take() {
                    let _ = tokio::io::AsyncReadExt::read_to_string(&mut err, &mut stderr).await;
                }
                panic!("tooltap {args:?} exited before `{ready}`: {stderr}");
            };
            let value: serde_json::Value = serde_json::from_str(&line).expect("JSON log line");
            if value["fields"]["message"] == ready {
                let listen = value["fields"]["listen"].as_str().expect("listen field");
                return listen.parse().expect("address");
            }
        }
    })
    .await;
    (child, lines, addr)
}

/// `tooltap proxy` in `cwd` on an ephemeral port, no admin listener, to `upstream`, with `extra`
/// arguments; everything else default.
pub(crate) async fn start_proxy(
    cwd: &Path,
    upstream: &str,
    extra: &[&str],
) -> (Child, Lines<BufReader<ChildStdout>>, SocketAddr) {
    let mut args = vec![
        "proxy",
        "--listen",
        "127.0.0.1:0",
        "--admin-listen",
        "off",
        "--upstream",
        upstream,
    ];
    args.extend_from_slice(extra);
    start(cwd, &args, "tooltap proxy ready").await
}

/// `tooltap replay` in `cwd` over its `recordings/` folder, on an ephemeral port.
pub(crate) async fn start_replay(cwd: &Path) -> (Child, Lines<BufReader<ChildStdout>>, SocketAddr) {
    let args = [
        "replay",
        "--recordings",
        "recordings",
        "--listen",
        "127.0.0.1:0",
    ];
    start(cwd, &args, "tooltap replay ready").await
}

/// Reads `lines` until `count` of them contain `needle`.
pub(crate) async fn wait_for_lines(
    lines: &mut Lines<BufReader<ChildStdout>>,
    needle: &str,
    count: usize,
) {
    within(Duration::from_secs(20), async {
        let mut seen = 0;
        while seen < count {
            let line = lines
                .next_line()
                .await
                .expect("read")
                .expect("tooltap exited early");
            seen += usize::from(line.contains(needle));
        }
    })
    .await;
}

pub(crate) async fn stop(mut child: Child) {
    let pid = child.id().expect("pid").to_string();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    let status = within(Duration::from_secs(20), child.wait())
        .await
        .expect("wait");
    assert!(status.success(), "exited with {status}");
}

#[tokio::test]
async fn with_the_default_layout_check_and_replay_work_after_violations_were_written() {
    let fixture = engine_support::fixture("buffered_arguments_object");
    let upstream = fixture_upstream(std::slice::from_ref(&fixture)).await;
    let cwd = TempDir::new("layout");

    // The proxy with every file default: violations file and recordings folder.
    let (proxy, mut lines, addr) = start_proxy(&cwd, &upstream.url(), &[]).await;
    let send = |addr| fixture_request(addr, &fixture);
    for _ in 0..3 {
        let got = exchange(addr, send(addr)).await;
        assert_eq!(got.body, fixture.body);
    }
    wait_for_lines(&mut lines, "exchange inspected", 3).await;
    stop(proxy).await;

    let violations = std::fs::read_to_string(cwd.join("violations.jsonl"))
        .expect("violations file beside recordings/");
    assert!(violations.lines().count() >= 3, "{violations}");
    assert!(violations.contains("tool_call.arguments_not_string"));
    assert!(!cwd.join("recordings/violations.jsonl").exists());

    // The README's CI line: exit 1 (violations found), never 2 (unreadable input).
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_tooltap"))
        .args(["check", "recordings/", "--format", "junit"])
        .current_dir(&cwd)
        .output()
        .expect("check runs");
    let junit = String::from_utf8_lossy(&check.stdout);
    assert_eq!(
        check.status.code(),
        Some(1),
        "{junit}\n{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(junit.contains("tool_call.arguments_not_string"), "{junit}");
    assert!(
        !junit.contains("<error"),
        "an input was unreadable: {junit}"
    );

    // Replay starts on the same folder and serves the recorded answer.
    let (replay, _lines, addr) = start_replay(&cwd).await;
    let got = exchange(addr, send(addr)).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.body, fixture.body);
    stop(replay).await;
}
