//! Redaction by pattern through the live proxy: credential headers outside the built-in list,
//! weak query parameter names, credential-named body fields and a key echoed back in the
//! upstream's response headers never reach a file under the recordings folder.

use std::time::Duration;

use crate::support::TempDir;
use crate::support::client::{exchange, request};
use crate::support::temp::files_under;
use crate::support::upstream::{Script, Upstream};
use crate::support::{proxy, within};
use tooltap::record::RecordMode;

/// Planted values, each distinct so a leak names its source.
pub const PLANTED_HEADERS: &[(&str, &str)] = &[
    ("x-goog-api-key", "planted-goog-0a1b"),
    ("X-Auth-Token", "planted-auth-token-2c3d"),
    ("Ocp-Apim-Subscription-Key", "planted-apim-4e5f"),
    ("Helicone-Auth", "Bearer planted-helicone-6a7b"),
    ("x-portkey-api-key", "planted-portkey-8c9d"),
    ("X-Amz-Security-Token", "planted-amz-0e1f"),
];
pub const PLANTED_QUERY: &str = "pwd=planted-pwd-11&pass=planted-pass-22&jwt=planted-jwt-33&bearer=planted-bearer-44&sessionid=planted-session-55&api-version=2024";
pub const PLANTED_BODY: &str = "planted-body-key-66";
/// Echoed by the upstream in a header whose name says nothing.
pub const ECHOED: &str = "planted-goog-0a1b";

pub fn planted_request_body() -> String {
    serde_json::json!({
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}],
        "api_key": PLANTED_BODY,
        "metadata": {"client_secret": PLANTED_BODY},
    })
    .to_string()
}

pub fn every_planted_value() -> Vec<&'static str> {
    let mut values: Vec<&str> = PLANTED_HEADERS.iter().map(|(_, v)| *v).collect();
    values.extend(
        PLANTED_QUERY
            .split('&')
            .filter_map(|pair| pair.split_once('=').map(|(_, v)| v))
            .filter(|v| v.starts_with("planted")),
    );
    values.push("planted-helicone-6a7b");
    values.push(PLANTED_BODY);
    values
}

#[tokio::test]
async fn credentials_named_by_pattern_never_reach_a_recording() {
    let body = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}"#;
    let upstream = Upstream::serving(
        Script::full(200, "application/json", body)
            .header("x-debug-caller", &format!("key={ECHOED}"))
            .header("x-upstream-session", "planted-upstream-session-77")
            .header("x-ratelimit-remaining-tokens", "9000"),
    )
    .await;
    let dir = TempDir::new("redaction");
    let mut raw = proxy::raw_config(&upstream.url());
    raw.record.mode = Some(RecordMode::All);
    raw.record.dir = Some(dir.to_path_buf());
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let path = format!("/v1/chat/completions?{PLANTED_QUERY}");
    let mut req = request(addr, "POST", &path, &planted_request_body());
    for (name, value) in PLANTED_HEADERS {
        req.headers_mut()
            .insert(*name, value.parse().expect("header value"));
    }
    let got = exchange(addr, req).await;
    assert_eq!(got.status, 200);
    assert_eq!(
        got.body,
        body.as_bytes(),
        "the client's bytes are untouched"
    );

    let recording = within(Duration::from_secs(10), async {
        loop {
            if let Some(recorder) = &tooltap.state().watch.inspection().recorder {
                recorder.flush().await;
            }
            if let Some(file) = files_under(&dir)
                .into_iter()
                .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
            {
                return file;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    for file in files_under(&dir) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).expect("read")).into_owned();
        for planted in every_planted_value()
            .into_iter()
            .chain(["planted-upstream-session-77"])
        {
            assert!(
                !text.contains(planted),
                "{} holds {planted}",
                file.display()
            );
        }
    }
    let text = std::fs::read_to_string(&recording).expect("read");
    assert!(
        text.contains("\"x-ratelimit-remaining-tokens\",\"9000\""),
        "{text}"
    );
    assert!(text.contains("api-version=2024"), "{text}");
    assert!(text.contains("header:x-debug-caller"), "{text}");
    assert!(text.contains("body:/api_key"), "{text}");
}
