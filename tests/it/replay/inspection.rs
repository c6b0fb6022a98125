//! Replayed traffic goes through the proxy's inspector: a fixture's violations reach the
//! violations file, tagged with the replay's exchange id.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::replay::support::{TempDir, post_json, repo, settings, start, within};

/// The recorded request body of a bundled example.
pub fn example_request(name: &str) -> Value {
    let path = repo().join("recordings/examples").join(name);
    let recording = tooltap::record::read_file(&path).expect("example parses");
    let body = &recording.meta.request.body;
    body.to_value()
        .unwrap_or_else(|| panic!("{name}: request body is not JSON: {body:?}"))
}

/// Wait until the violations file holds a line for `exchange`, and return that exchange's lines.
pub async fn violations_for(path: &Path, exchange: &str) -> Vec<Value> {
    within(Duration::from_secs(10), async {
        loop {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let lines: Vec<Value> = text
                .lines()
                .map(|line| serde_json::from_str(line).expect("violation line is JSON"))
                .filter(|line: &Value| line["exchange"] == exchange)
                .collect();
            if !lines.is_empty() {
                return lines;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

#[tokio::test]
async fn violations_in_a_replayed_fixture_reach_the_violations_file() {
    let out = TempDir::new("violations");
    let file = out.path().join("violations.jsonl");
    let mut settings = settings(&repo().join("recordings/examples"));
    settings.violations = Some(file.clone());
    let replay = start(&settings).await;

    let received = post_json(
        replay.local_addr(),
        &example_request("failures/arguments-object.jsonl"),
    )
    .await;
    assert_eq!(received.status, 200);
    assert_eq!(
        received.header("x-tooltap-recording"),
        "failures/arguments-object.jsonl"
    );
    let exchange = received.header("x-tooltap-exchange").to_owned();

    let lines = violations_for(&file, &exchange).await;
    let rules: Vec<&str> = lines.iter().filter_map(|l| l["rule"].as_str()).collect();
    assert_eq!(rules, ["tool_call.arguments_not_string"]);
    assert_eq!(lines[0]["route"], "replay");
    assert_eq!(lines[0]["model"], "gpt-4o-mini");
    assert_eq!(
        lines[0]["path"],
        "/choices/0/message/tool_calls/0/function/arguments"
    );

    // A clean fixture adds nothing: replay it, then a failing one, and only the latter shows.
    let clean = post_json(
        replay.local_addr(),
        &example_request("seed/required-stream.jsonl"),
    )
    .await;
    assert_eq!(clean.status, 200);
    let clean_id = clean.header("x-tooltap-exchange").to_owned();
    let stop = post_json(
        replay.local_addr(),
        &example_request("failures/finish-stop-with-calls.jsonl"),
    )
    .await;
    let stop_lines = violations_for(&file, stop.header("x-tooltap-exchange")).await;
    assert!(
        stop_lines
            .iter()
            .any(|l| l["rule"] == "finish_reason.not_tool_calls"),
        "{stop_lines:?}"
    );
    let text = std::fs::read_to_string(&file).expect("violations file");
    assert!(
        !text.contains(&format!("\"exchange\":\"{clean_id}\"")),
        "clean stream reported: {text}"
    );
}

/// Replay's inspection is the proxy's wiring: severity overrides apply to it.
#[tokio::test]
async fn severity_overrides_apply_to_replayed_traffic() {
    let out = TempDir::new("severity");
    let file = out.path().join("violations.jsonl");
    let mut settings = settings(&repo().join("recordings/examples"));
    settings.violations = Some(file.clone());
    settings.severity =
        tooltap::engine::SeverityOverrides::parse_list("finish_reason.not_tool_calls=warning")
            .expect("overrides");
    let replay = start(&settings).await;
    let received = post_json(
        replay.local_addr(),
        &example_request("failures/finish-stop-with-calls.jsonl"),
    )
    .await;
    let exchange = received.header("x-tooltap-exchange").to_owned();
    let lines = violations_for(&file, &exchange).await;
    let finish: Vec<&Value> = lines
        .iter()
        .filter(|l| l["rule"] == "finish_reason.not_tool_calls")
        .collect();
    assert_eq!(finish.len(), 1, "{lines:?}");
    assert_eq!(finish[0]["severity"], "warning", "the override applies");
}

/// A recording says which dialect it was judged as; replay judges it so even on a path no dialect
/// names, and reads the old label (`anthropic_messages`) too.
#[tokio::test]
async fn a_recording_is_judged_as_the_dialect_it_names_whatever_its_path() {
    let fixture = repo().join("tests/fixtures/anthropic_response_tool_use_name_unknown");
    let request: Value = serde_json::from_slice(
        &std::fs::read(fixture.join("request.json")).expect("request fixture"),
    )
    .expect("json");
    let response: Value = serde_json::from_slice(
        &std::fs::read(fixture.join("response.json")).expect("response fixture"),
    )
    .expect("json");
    let dir = TempDir::new("replay-dialect");
    let recordings = dir.path().join("recordings");
    crate::replay::support::Fixture::json(request.clone(), &response).write_at(
        &recordings,
        "custom.jsonl",
        "/v1/generate",
    );
    let path = recordings.join("custom.jsonl");
    let text = std::fs::read_to_string(&path).expect("written");
    let text = text.replacen(
        r#""path":"/v1/generate","#,
        r#""path":"/v1/generate","dialect":"anthropic_messages","#,
        1,
    );
    assert!(text.contains("anthropic_messages"), "{text}");
    std::fs::write(&path, text).expect("rewrite");
    let file = dir.path().join("violations.jsonl");
    let mut settings = settings(&recordings);
    settings.violations = Some(file.clone());
    let replay = start(&settings).await;

    let body = request.to_string();
    let received =
        crate::replay::support::post(replay.local_addr(), "/v1/generate", body.as_bytes()).await;
    assert_eq!(received.status, 200);
    assert_eq!(received.header("x-tooltap-recording"), "custom.jsonl");
    let exchange = received.header("x-tooltap-exchange").to_owned();
    let lines = violations_for(&file, &exchange).await;
    let seen: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["dialect"].as_str().unwrap_or_default(),
                l["rule"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [("anthropic", "anthropic.response.tool_use_name_unknown")]
    );
}
