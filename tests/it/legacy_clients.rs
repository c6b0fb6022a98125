//! Chat Completions' legacy `functions`/`function_call` through the real proxy: the official
//! `openai` Python SDK sends `functions=` (buffered and streamed) to a scripted upstream that
//! answers with fixtures of the corpus, once direct and once through tooltap, and must get the
//! same thing; clean exchanges get no error-severity violation, the broken ones are reported
//! live with their `chat_legacy.*` ids, `tooltap check` of the recordings gives the same ids,
//! and `tooltap replay` of them gives the SDK the same answers again. Enforce mode ends a broken
//! legacy stream the way it ends any Chat stream: one `data: {"error":...}` event.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use crate::engine_support::{self, Fixture, fixture};
use crate::record::flush;
use crate::support::check::check_json;
use crate::support::client::exchange;
use crate::support::clients::{run_python, script_json};
use crate::support::fixtures::{fixture_request, fixture_upstream, settle};
use crate::support::metrics::metric_sum;
use crate::support::proxy;
use crate::support::temp::json_lines;
use crate::support::temp::temp_file;
use crate::support::within;

const FIXTURES: [&str; 5] = [
    "pair_legacy_call_json",
    "pass_legacy_forced_stop",
    "pair_legacy_call_sse",
    "legacy_buffered_arguments_not_string",
    "legacy_stream_finish_reason_missing",
];

async fn run_sdk(base_url: &str) -> Value {
    let fixtures_dir = engine_support::fixtures_dir();
    let output = run_python(
        "legacy_check.py",
        &[base_url.as_ref(), fixtures_dir.as_os_str()],
        Duration::from_secs(60),
    )
    .await;
    script_json(&output, "python", base_url)
}

/// The error-severity rule ids among violations (violations-file lines or `check` entries).
fn error_rules<'a>(violations: impl Iterator<Item = &'a Value>) -> BTreeSet<String> {
    violations
        .filter(|v| v["severity"] == "error")
        .filter_map(|v| v["rule"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn the_openai_sdk_with_functions_gets_the_same_through_tooltap_and_check_agrees() {
    let fixtures: Vec<Fixture> = FIXTURES.iter().map(|n| fixture(n)).collect();
    let upstream = fixture_upstream(&fixtures).await;
    let violations = temp_file("legacy-clients-violations.jsonl");
    let recordings = temp_file("legacy-clients-recordings");
    let tooltap = proxy::start_recording(&upstream.url(), &violations, &recordings).await;

    let direct = run_sdk(&format!("{}/v1", upstream.url())).await;
    let through = run_sdk(&format!("http://{}/v1", tooltap.local_addr())).await;
    assert_eq!(
        direct, through,
        "the SDK got something else through tooltap"
    );
    // What it got is the legacy call, buffered and reassembled from the stream.
    assert_eq!(through["buffered"]["finish_reason"], "function_call");
    assert_eq!(through["buffered"]["function_call"]["name"], "get_weather");
    assert_eq!(
        through["buffered"]["function_call"]["arguments"],
        r#"{"location":"Paris"}"#
    );
    assert_eq!(through["forced"]["finish_reason"], "stop");
    assert_eq!(through["stream"]["name"], "get_weather");
    assert_eq!(through["stream"]["arguments"], r#"{"location":"Paris"}"#);
    assert_eq!(
        through["stream"]["finish_reasons"],
        serde_json::json!(["function_call"])
    );
    assert_eq!(
        through["broken_stream"]["finish_reasons"],
        serde_json::json!([])
    );

    let text = settle(&tooltap, 5).await;
    assert_eq!(
        metric_sum(
            &text,
            "tooltap_exchanges_inspected_total",
            &["dialect=\"chat\""]
        ),
        5,
        "{text}"
    );
    let lines = json_lines(&violations);
    assert!(lines.iter().all(|v| v["dialect"] == "chat"), "{lines:?}");
    let expected: BTreeSet<String> = [
        "chat_legacy.response.arguments_not_string",
        "chat_legacy.stream.finish_reason_missing",
    ]
    .map(str::to_owned)
    .into();
    // The clean exchanges add nothing: the only errors are the two broken answers' rules.
    assert_eq!(error_rules(lines.iter()), expected, "{lines:?}");

    // `tooltap check` re-judges the recordings to the same rule ids (exit 1: errors).
    flush(&tooltap).await;
    let checked = check_json(&recordings);
    assert_eq!(checked.code, 1, "{}", checked.stderr);
    let exchanges = checked.report["exchanges"].as_array().expect("exchanges");
    assert_eq!(exchanges.len(), 5, "{}", checked.report);
    let offline: Vec<Value> = exchanges
        .iter()
        .flat_map(|e| e["violations"].as_array().cloned().unwrap_or_default())
        .collect();
    assert_eq!(error_rules(offline.iter()), expected, "{offline:?}");

    // The recordings, replayed, give the SDK the same answers again.
    let replay = proxy::start_replay(recordings.clone(), None).await;
    let replayed = run_sdk(&format!("http://{}/v1", replay.local_addr())).await;
    assert_eq!(
        direct, replayed,
        "the SDK got something else from the replay"
    );
}

#[tokio::test]
async fn enforce_mode_ends_a_broken_legacy_stream_with_a_chat_error_event() {
    let broken = fixture("legacy_stream_mixed_with_tool_calls");
    let clean = fixture("pair_legacy_call_sse");
    let upstream = fixture_upstream(&[broken.clone(), clean.clone()]).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.enforce = Some(true);
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let limit = Duration::from_secs(20);

    let cut = within(limit, exchange(addr, fixture_request(addr, &broken))).await;
    assert_eq!(cut.status, 200, "the head was sent before the violation");
    // The tool_calls fragment mixed into the function_call stream is frame 2: frames 0 and 1
    // pass, then one error event, nothing more.
    let frames = engine_support::natural_frames(&broken);
    let (text, event) = cut.cut_after(&frames[..2].concat(), "data: ");
    assert_eq!(event["error"]["code"], "contract_violation");
    assert_eq!(
        event["error"]["param"],
        "chat_legacy.stream.mixed_with_tool_calls"
    );
    assert!(!text.contains("[DONE]"));

    let passed = within(limit, exchange(addr, fixture_request(addr, &clean))).await;
    assert_eq!(
        passed.body, clean.body,
        "a clean legacy stream passes byte for byte"
    );
}
