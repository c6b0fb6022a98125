//! Enforce mode through the real proxy: a buffered violation becomes a 502 in the OpenAI error
//! shape, a streamed one ends the stream with an error event after whole events only; clean
//! traffic passes unchanged;
//! and the official OpenAI Python SDK raises on both, with the rule id in its message.

use std::time::Duration;

use serde_json::Value;

use crate::engine_support::{self, Fixture, fixture};
use crate::inspect::fixture_request;
use crate::inspect::{fixture_upstream, settle};
use crate::support::client::{Collected, exchange};
use crate::support::clients::{run_python, script_json};
use crate::support::metrics::assert_metric;
use crate::support::proxy;
use crate::support::within;
use tooltap::proxy::server::RunningProxy;

const LIMIT: Duration = Duration::from_secs(20);

async fn enforcing(fixtures: &[Fixture]) -> (RunningProxy, crate::support::upstream::Upstream) {
    let upstream = fixture_upstream(fixtures).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.enforce = Some(true);
    (proxy::start(raw).await, upstream)
}

/// An enforcing proxy in front of an upstream that answers every request with `events`, `gap`
/// apart.
async fn enforcing_sse(
    events: &[String],
    gap: Duration,
) -> (RunningProxy, crate::support::upstream::Upstream) {
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    let upstream = crate::support::upstream::Upstream::serving(
        crate::support::upstream::Script::sse(&events, gap),
    )
    .await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.enforce = Some(true);
    (proxy::start(raw).await, upstream)
}

pub(crate) async fn post_fixture(tooltap: &RunningProxy, fixture: &Fixture) -> Collected {
    let addr = tooltap.local_addr();
    within(LIMIT, exchange(addr, fixture_request(addr, fixture))).await
}

#[tokio::test]
async fn a_buffered_violation_becomes_a_502_naming_the_rule_and_clean_bodies_pass() {
    let broken = fixture("buffered_arguments_object");
    let clean = fixture("seed_forced_buffered");
    let (tooltap, _upstream) = enforcing(&[broken.clone(), clean.clone()]).await;

    let refused = post_fixture(&tooltap, &broken).await;
    assert_eq!(refused.status, 502);
    assert_eq!(refused.headers["x-should-retry"], "false");
    assert!(refused.headers.contains_key("x-tooltap-exchange"));
    let error = &refused.json()["error"];
    assert_eq!(error["code"], "contract_violation");
    assert_eq!(error["type"], "tooltap_contract_violation");
    let message = error["message"].as_str().expect("message");
    assert!(
        message.contains(
            "tool_call.arguments_not_string at /choices/0/message/tool_calls/0/function/arguments"
        ),
        "{message}"
    );

    let passed = post_fixture(&tooltap, &clean).await;
    assert_eq!(passed.status, 200);
    assert_eq!(
        passed.body, clean.body,
        "a clean body must pass byte for byte"
    );

    // The passive report still sees both exchanges, and the refusal is not a client gone.
    let text = settle(&tooltap, 2).await;
    assert_metric!(text, "tooltap_inspection_incomplete_total", [] == 0);
    assert_metric!(
        text,
        "tooltap_violations_total",
        ["tool_call.arguments_not_string"] >= 1
    );
}

#[tokio::test]
async fn a_streamed_violation_ends_the_stream_with_an_error_event() {
    let broken = fixture("stream_parallel_all_on_index_0");
    let clean = fixture("seed_required_stream");
    let (tooltap, _upstream) = enforcing(&[broken.clone(), clean.clone()]).await;

    let cut = post_fixture(&tooltap, &broken).await;
    assert_eq!(cut.status, 200, "the head was sent before the violation");
    let frames = engine_support::natural_frames(&broken);
    // delta.id_changed fires on frame 3: frames 0..3 pass, then the error event, nothing more.
    let (text, event) = cut.cut_after(&frames[..3].concat(), "data: ");
    assert_eq!(event["error"]["code"], "contract_violation");
    assert_eq!(event["error"]["param"], "delta.id_changed");
    assert!(!text.contains("[DONE]"));

    let passed = post_fixture(&tooltap, &clean).await;
    assert_eq!(
        passed.body, clean.body,
        "a clean stream must pass byte for byte"
    );
    let metrics = settle(&tooltap, 2).await;
    assert_metric!(
        metrics,
        "tooltap_inspection_incomplete_total",
        ["client_gone"] == 0
    );
}

/// Frames cut in the middle of every event: the violation completes in a frame that also holds
/// half of the next event, and the frame before ended half-way through the violating one.
#[tokio::test]
async fn a_cut_stream_never_gives_the_client_half_an_event() {
    let broken = fixture("stream_parallel_all_on_index_0");
    let events = engine_support::natural_frames(&broken);
    let mut chunks = Vec::new();
    let mut carried = Vec::new();
    for event in &events {
        let half = event.len() / 2;
        carried.extend_from_slice(&event[..half]);
        chunks.push(String::from_utf8(std::mem::take(&mut carried)).expect("utf-8"));
        carried.extend_from_slice(&event[half..]);
    }
    chunks.push(String::from_utf8(carried).expect("utf-8"));
    let (tooltap, _upstream) = enforcing_sse(&chunks, Duration::from_millis(20)).await;

    let cut = post_fixture(&tooltap, &broken).await;
    assert_eq!(cut.status, 200);
    // delta.id_changed is complete with event 3: events 0..3 reached the client whole, then
    // the error event, and not one byte of event 3 or 4 (every frame ended mid-event).
    let (_, event) = cut.cut_after(&events[..3].concat(), "data: ");
    assert_eq!(event["error"]["param"], "delta.id_changed");
}

/// Arguments that become impossible JSON at the third of 400 fragments: the stream is cut at
/// that fragment's event (not after the whole call), and the client never sees it.
#[tokio::test]
async fn a_chat_stream_is_cut_at_the_fragment_that_breaks_its_arguments() {
    let request = fixture("seed_required_stream");
    let event = |delta: Value| {
        let chunk = serde_json::json!({
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": null}]
        });
        format!("data: {chunk}\n\n")
    };
    let fragment = |arguments: &str| {
        event(
            serde_json::json!({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
        )
    };
    let mut events = vec![
        event(serde_json::json!({"role": "assistant", "content": null})),
        event(
            serde_json::json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": ""}}]}),
        ),
        fragment("{\"city\":"),
        fragment("\"Paris\""),
        fragment("}}"),
    ];
    events.extend(std::iter::repeat_n(fragment(" "), 397));
    events.push("data: [DONE]\n\n".to_owned());
    let (tooltap, _upstream) = enforcing_sse(&events, Duration::from_millis(1)).await;

    let cut = post_fixture(&tooltap, &request).await;
    assert_eq!(cut.status, 200);
    // Events 0..4 (the role, the call's opening, fragments 1 and 2) passed whole; fragment 3's
    // event was replaced by the error event, and nothing followed.
    let (_, error) = cut.cut_after(events[..4].concat().as_bytes(), "data: ");
    assert_eq!(error["error"]["code"], "contract_violation");
    assert_eq!(error["error"]["param"], "tool_call.arguments_not_json");
    let message = error["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("/choices/0/delta/tool_calls/0/function/arguments"),
        "{message}"
    );
}

#[tokio::test]
async fn a_responses_stream_violation_ends_with_a_responses_error_event() {
    let broken = fixture("responses_stream_item_done_mismatch");
    let clean = fixture("responses_pair_parallel_sse");
    let buffered = fixture("responses_output_arguments_invalid_json");
    let (tooltap, _upstream) = enforcing(&[broken.clone(), clean.clone(), buffered.clone()]).await;

    let cut = post_fixture(&tooltap, &broken).await;
    assert_eq!(cut.status, 200);
    let frames = engine_support::natural_frames(&broken);
    // The emptied name on output_item.done (frame 5, sequence_number 5) is the first error; the
    // error event is numbered after it.
    let (_, event) = cut.cut_after(&frames[..5].concat(), "event: error\ndata: ");
    assert_eq!(event["type"], "error");
    assert_eq!(event["code"], "contract_violation");
    assert_eq!(event["param"], "responses.stream.item_done_mismatch");
    assert_eq!(event["sequence_number"], 6);
    assert!(event["message"].as_str().is_some_and(|m| !m.is_empty()));

    let passed = post_fixture(&tooltap, &clean).await;
    assert_eq!(
        passed.body, clean.body,
        "a clean stream passes byte for byte"
    );
    let refused = post_fixture(&tooltap, &buffered).await;
    assert_eq!(refused.status, 502);
    assert_eq!(
        refused.json()["error"]["param"],
        "responses.output.arguments_invalid_json"
    );
}

/// One Anthropic `event: error` at the end of `got`, after `passed`: its error object.
fn anthropic_error_event(got: &Collected, passed: &[u8]) -> Value {
    let (_, event) = got.cut_after(passed, "event: error\ndata: ");
    assert_eq!(event["type"], "error", "{event}");
    assert_eq!(event["error"]["type"], "tooltap_contract_violation");
    event["error"].clone()
}

#[tokio::test]
async fn anthropic_violations_end_in_anthropic_errors() {
    let broken = fixture("anthropic_stream_delta_unknown_block");
    let unfinished = fixture("anthropic_stream_terminal_missing");
    let clean = fixture("anthropic_pair_single_sse");
    let buffered = fixture("anthropic_response_input_string");
    let all = [
        broken.clone(),
        unfinished.clone(),
        clean.clone(),
        buffered.clone(),
    ];
    let (tooltap, _upstream) = enforcing(&all).await;

    // The delta for a block never started (frame 1) is cut: only message_start got through.
    let cut = post_fixture(&tooltap, &broken).await;
    assert_eq!(cut.status, 200);
    let frames = engine_support::natural_frames(&broken);
    let error = anthropic_error_event(&cut, &frames[..1].concat());
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("anthropic.stream.delta_unknown_block"),
        "{message}"
    );

    // Judged at the end of the body: the whole upstream body, then the error event.
    let ended = post_fixture(&tooltap, &unfinished).await;
    let error = anthropic_error_event(&ended, &unfinished.body);
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("anthropic.stream.terminal_missing"),
        "{message}"
    );

    let passed = post_fixture(&tooltap, &clean).await;
    assert_eq!(
        passed.body, clean.body,
        "a clean stream passes byte for byte"
    );

    let refused = post_fixture(&tooltap, &buffered).await;
    assert_eq!(refused.status, 502);
    let body = refused.json();
    assert_eq!(body["type"], "error", "{body}");
    assert_eq!(body["error"]["type"], "tooltap_contract_violation");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("anthropic.response.tool_use_input_not_object at /content/0/input"),
        "{message}"
    );
}

#[tokio::test]
async fn the_openai_python_sdk_raises_on_enforced_violations() {
    let names = [
        "buffered_arguments_object",
        "seed_forced_buffered",
        "stream_parallel_all_on_index_0",
    ];
    let fixtures: Vec<Fixture> = names.iter().map(|n| fixture(n)).collect();
    let (tooltap, _upstream) = enforcing(&fixtures).await;
    let base_url = format!("http://{}/v1", tooltap.local_addr());
    let fixtures_dir = engine_support::fixtures_dir();
    let output = run_python(
        "enforce_check.py",
        &[base_url.as_ref(), fixtures_dir.as_os_str()],
        Duration::from_secs(60),
    )
    .await;
    let out = script_json(&output, "python", &base_url);

    assert_eq!(out["buffered"]["raised"], true, "{out}");
    assert_eq!(out["buffered"]["status"], 502);
    assert_eq!(out["buffered"]["code"], "contract_violation");
    let message = out["buffered"]["message"].as_str().expect("message");
    assert!(
        message.contains("tool_call.arguments_not_string"),
        "{message}"
    );

    assert_eq!(out["clean"]["finish_reason"], "tool_calls");
    assert_eq!(out["clean"]["name"], "get_weather");
    assert_eq!(out["clean"]["arguments_is_str"], true);

    assert_eq!(out["stream"]["raised"], true, "{out}");
    assert_eq!(out["stream"]["chunks_before"], 3, "{out}");
    let message = out["stream"]["message"].as_str().expect("message");
    assert!(message.contains("delta.id_changed"), "{message}");
}
