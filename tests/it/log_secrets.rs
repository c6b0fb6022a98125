//! The real binary's output never holds a credential it was handed: an `--upstream` URL with
//! user-info or a key in its query is refused naming the flag, not the secret (for `proxy` and
//! for `replay --on-miss forward`), and replay's miss warning shows the unmatched request body
//! redacted.

use std::time::Duration;

use tokio::io::AsyncReadExt;

use crate::layout::{start, stop};
use crate::support::TempDir;
use crate::support::client::{exchange, request};
use crate::support::within;

const SECRET: &str = "sk-planted-log-3f9a71";

/// Runs `tooltap <args>` to its exit; (success, stdout and stderr together).
async fn run(args: &[&str]) -> (bool, String) {
    let output = within(
        Duration::from_secs(20),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_tooltap"))
            .args(args)
            .env_remove("TOOLTAP_CONFIG")
            .env_remove("TOOLTAP_UPSTREAM")
            .output(),
    )
    .await
    .expect("runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[tokio::test]
async fn an_upstream_url_holding_a_credential_is_refused_without_printing_it() {
    let dir = TempDir::new("log-secrets");
    let recordings = dir.path().to_string_lossy().into_owned();
    let urls = [
        format!("https://user:{SECRET}@api.example.com/v1"),
        format!("https://api.example.com/v1?key={SECRET}"),
    ];
    for url in &urls {
        let proxy = [
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "off",
            "--record",
            "off",
            "--violations",
            "off",
            "--upstream",
            url.as_str(),
        ];
        let replay = [
            "replay",
            "--recordings",
            recordings.as_str(),
            "--listen",
            "127.0.0.1:0",
            "--on-miss",
            "forward",
            "--upstream",
            url.as_str(),
        ];
        for args in [&proxy[..], &replay[..]] {
            let (ok, text) = run(args).await;
            assert!(!ok, "{args:?} must not start: {text}");
            assert!(text.contains("--upstream"), "the flag is named: {text}");
            assert!(
                text.contains("api.example.com"),
                "the host is named: {text}"
            );
            assert!(
                !text.contains(SECRET),
                "{args:?} printed the credential: {text}"
            );
        }
    }
}

#[tokio::test]
async fn replays_miss_warning_shows_the_request_body_redacted() {
    let dir = TempDir::new("log-secrets-miss");
    let recordings = dir.path().to_string_lossy().into_owned();
    let (mut replay, mut lines, addr) = start(
        dir.path(),
        &[
            "replay",
            "--recordings",
            &recordings,
            "--listen",
            "127.0.0.1:0",
        ],
        "tooltap replay ready",
    )
    .await;
    let body = serde_json::json!({
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "api_key": SECRET,
        "metadata": {"hf_token": SECRET},
    });
    let got = exchange(
        addr,
        request(addr, "POST", "/v1/chat/completions", &body.to_string()),
    )
    .await;
    assert_eq!(got.status, 404);
    // The warning is logged before the 404 is answered: stop, then read everything.
    let err = replay.stderr.take();
    stop(replay).await;
    let mut log = Vec::new();
    while let Ok(Some(line)) = within(Duration::from_secs(10), lines.next_line()).await {
        log.push(line);
    }
    let mut stderr = String::new();
    if let Some(mut err) = err {
        let _ = err.read_to_string(&mut stderr).await;
    }
    let warning = log
        .iter()
        .find(|line| line.contains("no recording matches"))
        .unwrap_or_else(|| panic!("no miss warning in {log:?}"));
    assert!(
        warning.contains(r#"\"model\":\"m\""#),
        "the body is shown: {warning}"
    );
    assert!(warning.contains("[REDACTED]"), "{warning}");
    for line in log.iter().chain(std::iter::once(&stderr)) {
        assert!(
            !line.contains(SECRET),
            "a log line holds the planted key: {line}"
        );
    }
}
