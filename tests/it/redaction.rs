//! Redaction by pattern through the live proxy: credential headers outside the built-in list,
//! weak query parameter names, credential-named body fields and a key echoed back in the
//! upstream's response headers never reach a file under the recordings folder; nor does a
//! credential nested 40 levels deep, or one in a body nested past what the parser takes (that
//! body is left out whole, and the recording says so).

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
    ("x-bearer", "planted-x-bearer-1a2b"),
    ("x-jwt", "planted-x-jwt-3c4d"),
    ("x-pass", "planted-x-pass-5e6f"),
    ("x-pwd", "planted-x-pwd-7a8b"),
];
/// Body fields named like credentials, each with its planted value.
pub const PLANTED_FIELDS: &[(&str, &str)] = &[
    ("api_token", "planted-api-token-81"),
    ("hf_token", "planted-hf-token-82"),
    ("openai_key", "planted-openai-key-83"),
    ("access_key", "planted-access-key-84"),
    ("auth", "planted-auth-85"),
    ("sessionid", "planted-sessionid-86"),
    ("openaiKey", "planted-camel-key-87"),
];
/// Nested 40 levels deep in the request body (the walk once stopped at 32).
pub const PLANTED_DEEP: &str = "planted-deep-key-88";
/// In a body nested 200 levels deep, past serde_json's 128.
pub const PLANTED_TOO_DEEP: &str = "planted-too-deep-key-89";
pub const PLANTED_QUERY: &str = "pwd=planted-pwd-11&pass=planted-pass-22&jwt=planted-jwt-33&bearer=planted-bearer-44&sessionid=planted-session-55&api-version=2024";
pub const PLANTED_BODY: &str = "planted-body-key-66";
/// Echoed by the upstream in a header whose name says nothing.
pub const ECHOED: &str = "planted-goog-0a1b";

pub fn planted_request_body() -> String {
    let mut deep = serde_json::json!({ "api_key": PLANTED_DEEP });
    for _ in 0..40 {
        deep = serde_json::json!({ "inner": deep });
    }
    let mut body = serde_json::json!({
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}],
        "api_key": PLANTED_BODY,
        "metadata": {"client_secret": PLANTED_BODY, "deep": deep},
    });
    for (name, value) in PLANTED_FIELDS {
        body["metadata"][*name] = (*value).into();
    }
    body.to_string()
}

/// A JSON body nested 200 levels deep with a credential at the bottom: no parser walk reaches
/// it, so the recording must leave the body out.
pub fn too_deep_request_body() -> String {
    let mut body = String::from(r#"{"model":"gpt-4o-mini","extra":"#);
    body.push_str(&"[".repeat(200));
    body.push_str(&format!(r#"{{"api_key":"{PLANTED_TOO_DEEP}"}}"#));
    body.push_str(&"]".repeat(200));
    body.push('}');
    body
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
    values.extend(PLANTED_FIELDS.iter().map(|(_, v)| *v));
    values.extend([PLANTED_DEEP, PLANTED_TOO_DEEP]);
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
    // The upstream echoes the goog key whatever is asked: this request carries it too.
    let mut too_deep = request(
        addr,
        "POST",
        "/v1/chat/completions",
        &too_deep_request_body(),
    );
    too_deep.headers_mut().insert(
        PLANTED_HEADERS[0].0,
        PLANTED_HEADERS[0].1.parse().expect("header value"),
    );
    assert_eq!(exchange(addr, too_deep).await.status, 200);

    let recordings = within(Duration::from_secs(10), async {
        loop {
            if let Some(recorder) = &tooltap.state().admission.inspection().recorder {
                recorder.flush().await;
            }
            let files: Vec<_> = files_under(&dir)
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .collect();
            if files.len() == 2 {
                return files;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let texts: Vec<String> = recordings
        .iter()
        .map(|file| std::fs::read_to_string(file).expect("read"))
        .collect();
    // The first exchange's recording is the one with the planted headers.
    let (recording, too_deep) = match texts[0].contains("x-goog-api-key") {
        true => (&texts[0], &texts[1]),
        false => (&texts[1], &texts[0]),
    };
    assert!(
        too_deep.contains(r#""body":"missing""#) && too_deep.contains(r#""body","#),
        "the too-deep body is left out whole and said so: {too_deep}"
    );
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
    let text = recording;
    assert!(
        text.contains("\"x-ratelimit-remaining-tokens\",\"9000\""),
        "{text}"
    );
    assert!(text.contains("api-version=2024"), "{text}");
    assert!(text.contains("header:x-debug-caller"), "{text}");
    assert!(text.contains("body:/api_key"), "{text}");
    for (name, _) in PLANTED_FIELDS {
        assert!(
            text.contains(&format!("body:/metadata/{name}")),
            "{name}: {text}"
        );
    }
    for (name, _) in &PLANTED_HEADERS[6..] {
        assert!(text.contains(&format!("header:{name}")), "{name}: {text}");
    }
    assert!(
        text.contains(&format!(
            "body:/metadata/deep{}/api_key",
            "/inner".repeat(40)
        )),
        "{text}"
    );
}
