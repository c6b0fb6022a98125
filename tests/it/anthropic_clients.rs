//! Acceptance with real clients and a real third-party upstream, for Anthropic Messages:
//! `@copilotkit/aimock` (npm) serves `tool_use` answers at `/v1/messages`; the official
//! `anthropic` Python SDK (`messages.create` buffered and `stream=True`, `messages.stream` with
//! `get_final_message()`, a second turn with the tool result) and the `@anthropic-ai/sdk` Node SDK
//! run once direct and once through tooltap and must get the same thing, every exchange judged as
//! Anthropic Messages with no error-severity violation; `tooltap check` re-judges the recordings
//! to the same and `tooltap replay` of them gives the SDKs the same again. A broken answer (a tool
//! the request never declared) is reported with its rule id live and by `tooltap check`, and in
//! enforce mode both SDKs raise an error naming the rule.

use std::time::Duration;

use serde_json::Value;

use crate::record::flush;
use crate::support::aimock::start_aimock;
use crate::support::check::check_json;
use crate::support::clients::run_sdk_script;
use crate::support::fixtures::settle;
use crate::support::metrics::metric_sum;
use crate::support::proxy;
use crate::support::temp::temp_file;
use crate::support::temp::{files_under, json_lines};
use crate::support::within;
use tooltap::record::RecordMode;

/// The rule the broken answer breaks: aimock answers with `get_time`, only `get_weather` is
/// declared.
const BROKEN_RULE: &str = "anthropic.response.tool_use_name_unknown";

/// Runs one SDK script (`python` or `node`) against `base_url` in `mode`; its JSON output.
async fn run(sdk: &str, base_url: &str, mode: &str) -> Value {
    run_sdk_script(sdk, "anthropic_check", "@anthropic-ai/sdk", base_url, mode).await
}

#[tokio::test]
async fn the_anthropic_python_sdk_gets_the_same_messages_through_tooltap_and_its_replay() {
    let (_aimock, port) = start_aimock().await;
    let upstream = format!("http://127.0.0.1:{port}");
    let violations = temp_file("anthropic-python-violations.jsonl");
    let recordings = temp_file("anthropic-python-recordings");
    let tooltap = proxy::start_recording(&upstream, &violations, &recordings).await;
    let through_url = format!("http://{}", tooltap.local_addr());

    let direct = run("python", &upstream, "clean").await;
    let through = run("python", &through_url, "clean").await;
    assert_eq!(
        direct, through,
        "the SDK got something else through tooltap"
    );
    // What it got is the tool-calling answer, not an error.
    assert_eq!(through["buffered"]["stop_reason"], "tool_use", "{through}");
    assert_eq!(through["helper"]["blocks"][1]["input"]["location"], "Oslo");
    assert_eq!(through["stream"]["input_json"], r#"{"location":"Paris"}"#);
    assert_eq!(through["second_turn"]["stop_reason"], "end_turn");

    // buffered, stream, helper and the two turns: five exchanges, all Anthropic, none broken.
    let text = settle(&tooltap, 5).await;
    let inspected = &["dialect=\"anthropic\""];
    assert_eq!(
        metric_sum(&text, "tooltap_exchanges_inspected_total", inspected),
        5,
        "{text}"
    );
    let found = json_lines(&violations);
    assert!(found.is_empty(), "violations on clean traffic: {found:?}");

    flush(&tooltap).await;
    let checked = check_json(&recordings);
    assert_eq!(checked.code, 0, "{}", checked.stderr);
    assert_eq!(
        checked.report["exchanges"].as_array().map(Vec::len),
        Some(5)
    );
    for file in files_under(&recordings) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(
            !text.contains("sk-ant-test"),
            "{} holds the key",
            file.display()
        );
    }

    let replay_violations = temp_file("anthropic-python-replay-violations.jsonl");
    let replay = proxy::start_replay(recordings.clone(), Some(replay_violations.clone())).await;
    let replayed = run(
        "python",
        &format!("http://{}", replay.local_addr()),
        "clean",
    )
    .await;
    assert_eq!(
        direct, replayed,
        "the SDK got something else from the replay"
    );
    drop(replay);
    let found = json_lines(&replay_violations);
    assert!(
        found.is_empty(),
        "violations on replayed traffic: {found:?}"
    );
}

#[tokio::test]
async fn a_broken_answer_is_reported_live_and_by_check_and_both_sdks_raise_in_enforce_mode() {
    let (_aimock, port) = start_aimock().await;
    let upstream = format!("http://127.0.0.1:{port}");

    // Observe mode: the SDK gets the broken answer as direct; tooltap names the rule for each of
    // the three calls, live and again offline.
    let violations = temp_file("anthropic-broken-violations.jsonl");
    let recordings = temp_file("anthropic-broken-recordings");
    let tooltap = proxy::start_recording(&upstream, &violations, &recordings).await;
    let direct = run("python", &upstream, "broken").await;
    let through = run(
        "python",
        &format!("http://{}", tooltap.local_addr()),
        "broken",
    )
    .await;
    assert_eq!(direct, through);
    assert_eq!(
        through["buffered"]["blocks"][0]["name"], "get_time",
        "{through}"
    );
    settle(&tooltap, 3).await;
    let live: Vec<Value> = json_lines(&violations);
    assert_eq!(live.len(), 3, "{live:?}");
    for line in &live {
        assert_eq!(line["rule"], BROKEN_RULE, "{line}");
        assert_eq!(line["dialect"], "anthropic");
        assert_eq!(line["severity"], "error");
    }
    flush(&tooltap).await;
    let checked = check_json(&recordings);
    assert_eq!(checked.code, 1, "{}", checked.stderr);
    let offline: Vec<&Value> = checked.report["exchanges"]
        .as_array()
        .expect("exchanges")
        .iter()
        .flat_map(|e| e["violations"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(offline.len(), 3, "{}", checked.report);
    assert!(offline.iter().all(|v| v["rule"] == BROKEN_RULE));
    drop(tooltap);

    // Enforce mode: each call raises, and the error names the rule.
    let enforcing = proxy::start_enforcing(&upstream).await;
    let base_url = format!("http://{}", enforcing.local_addr());
    for sdk in ["python", "node"] {
        let got = run(sdk, &base_url, "broken").await;
        for call in ["buffered", "stream", "helper"] {
            let message = got[call]["message"].as_str().unwrap_or_default();
            assert!(
                got[call]["error"].is_string() && message.contains(BROKEN_RULE),
                "{sdk} {call} did not raise naming the rule: {got}"
            );
        }
        // The buffered answer is a 502, which the SDKs raise as a server error.
        assert_eq!(
            got["buffered"]["error"], "InternalServerError",
            "{sdk}: {got}"
        );
    }
}

#[tokio::test]
async fn the_anthropic_node_sdk_gets_the_same_messages_through_tooltap() {
    let (_aimock, port) = start_aimock().await;
    let upstream = format!("http://127.0.0.1:{port}");
    let violations = temp_file("anthropic-node-violations.jsonl");
    let recordings = temp_file("anthropic-node-recordings");
    let tooltap = proxy::start_recording(&upstream, &violations, &recordings).await;

    let direct = run("node", &upstream, "clean").await;
    let through = run("node", &format!("http://{}", tooltap.local_addr()), "clean").await;
    assert_eq!(
        direct, through,
        "the Node SDK got something else through tooltap"
    );
    assert_eq!(
        through["buffered"]["blocks"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(through["helper"]["blocks"][0]["input"]["location"], "Paris");
    let text = settle(&tooltap, 3).await;
    assert_eq!(
        metric_sum(
            &text,
            "tooltap_exchanges_inspected_total",
            &["dialect=\"anthropic\""]
        ),
        3
    );
    let found = json_lines(&violations);
    assert!(found.is_empty(), "violations on clean traffic: {found:?}");

    // The Node SDK gets the same again from tooltap replay of the recordings.
    flush(&tooltap).await;
    let replay = proxy::start_replay(recordings.clone(), None).await;
    let replayed = run("node", &format!("http://{}", replay.local_addr()), "clean").await;
    assert_eq!(
        direct, replayed,
        "the Node SDK got something else from the replay"
    );
}

#[tokio::test]
async fn x_api_key_and_anthropic_version_reach_the_upstream_untouched_and_the_key_is_redacted() {
    use crate::support::client::{exchange, request};
    use crate::support::upstream::{Script, Upstream};
    const KEY: &str = "sk-ant-api03-planted-key";
    let body = r#"{"type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}"#;
    let mut upstream = Upstream::serving(Script::full(200, "application/json", body)).await;
    let recordings = temp_file("anthropic-headers-recordings");
    let mut raw = proxy::raw_config(&upstream.url());
    raw.record.mode = Some(RecordMode::All);
    raw.record.dir = Some(recordings.clone());
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let mut sent = request(
        addr,
        "POST",
        "/v1/messages",
        r#"{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}"#,
    );
    for (name, value) in [
        ("x-api-key", KEY),
        ("anthropic-version", "2023-06-01"),
        ("anthropic-beta", "fine-grained-tool-streaming-2025-05-14"),
        ("content-type", "application/json"),
    ] {
        sent.headers_mut()
            .insert(name, value.parse().expect("value"));
    }
    let got = within(Duration::from_secs(20), exchange(addr, sent)).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.body, body);
    let seen = within(Duration::from_secs(20), upstream.next_request()).await;
    assert_eq!(seen.headers["x-api-key"], KEY);
    assert_eq!(seen.headers["anthropic-version"], "2023-06-01");
    assert_eq!(
        seen.headers["anthropic-beta"],
        "fine-grained-tool-streaming-2025-05-14"
    );
    assert_eq!(seen.uri, "/v1/messages");

    settle(&tooltap, 1).await;
    flush(&tooltap).await;
    let files = files_under(&recordings);
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).expect("recording");
    assert!(!text.contains(KEY), "the key was recorded: {text}");
    assert!(
        text.contains("2023-06-01"),
        "anthropic-version is kept: {text}"
    );
    assert!(text.contains("\"dialect\":\"anthropic\""), "{text}");
}
