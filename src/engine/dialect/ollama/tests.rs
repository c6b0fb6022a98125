//! The Ollama dialect's reading, judged through an exchange: request facts, body kinds,
//! buffered and streamed turns, the stream rules and enforce's error shapes.

use std::sync::Arc;

use serde_json::Value;

use crate::engine::Dialect;
use crate::engine::dialect::EnforceError;
use crate::engine::report::{BodyKind, Report};
use crate::engine::schema::SchemaCache;
use crate::engine::{BodyEnd, EngineConfig, Exchange, ResponseHead};

const TOOLS: &str = r#"[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}}}}]"#;

fn request(extra: &str) -> String {
    format!(
        r#"{{"model":"qwen3","messages":[{{"role":"user","content":"Tokyo?"}}],"tools":{TOOLS}{extra}}}"#
    )
}

fn run(request: &str, content_type: Option<&str>, chunks: &[&[u8]], end: BodyEnd) -> Report {
    let config = Arc::new(EngineConfig::default());
    let cache = SchemaCache::with_capacity(8);
    let mut exchange = Exchange::with_dialect(&config, &cache, Dialect::Ollama, request.as_bytes());
    exchange.response_head(ResponseHead {
        status: 200,
        content_type: content_type.map(str::to_owned),
        content_encoding: None,
        headers: Vec::new(),
    });
    for chunk in chunks {
        exchange.feed(chunk);
    }
    exchange.finish(end)
}

fn rules(report: &Report) -> Vec<&'static str> {
    report.violations.iter().map(|v| v.rule.as_str()).collect()
}

const CALL: &str = r#"{"model":"qwen3","message":{"role":"assistant","content":"","tool_calls":[{"id":"call_k3v9x2ab","function":{"index":0,"name":"get_weather","arguments":{"city":"Tokyo"}}}]},"done":false}"#;
const DONE: &str = r#"{"model":"qwen3","message":{"role":"assistant","content":""},"done_reason":"stop","done":true,"eval_count":15}"#;

#[test]
fn stream_is_the_default_and_a_faithful_stream_passes() {
    let body = format!("{CALL}\n{DONE}\n");
    let report = run(
        &request(""),
        Some("application/x-ndjson"),
        &[body.as_bytes()],
        BodyEnd::Complete,
    );
    assert!(report.request.stream, "stream defaults to true");
    assert_eq!(report.body_kind, BodyKind::Ndjson);
    assert_eq!(
        rules(&report),
        Vec::<&str>::new(),
        "{:?}",
        report.violations
    );
    let call = &report.choices[0].tool_calls[0];
    assert_eq!(call.name.as_deref(), Some("get_weather"));
    assert_eq!(call.arguments, Some(serde_json::json!({"city":"Tokyo"})));
    assert_eq!(report.choices[0].finish_reason.as_deref(), Some("stop"));
    assert_eq!(
        report
            .usage
            .as_ref()
            .and_then(|u| u.value().get("eval_count").cloned()),
        Some(Value::from(15))
    );
}

#[test]
fn buffered_and_streamed_turns_read_alike() {
    let buffered = r#"{"model":"qwen3","message":{"role":"assistant","content":"","tool_calls":[{"id":"call_k3v9x2ab","function":{"index":0,"name":"get_weather","arguments":{"city":"Tokyo"}}}]},"done":true,"done_reason":"stop","eval_count":15}"#;
    let one = run(
        &request(r#","stream":false"#),
        Some("application/json; charset=utf-8"),
        &[buffered.as_bytes()],
        BodyEnd::Complete,
    );
    let body = format!("{CALL}\n{DONE}\n");
    let two = run(
        &request(""),
        Some("application/x-ndjson"),
        &[body.as_bytes()],
        BodyEnd::Complete,
    );
    assert_eq!(one.body_kind, BodyKind::Json);
    assert_eq!(one.choices, two.choices);
    assert!(one.violations.is_empty(), "{:?}", one.violations);
}

#[test]
fn string_arguments_are_the_violation_here() {
    let call = CALL.replace(r#"{"city":"Tokyo"}"#, r#""{\"city\":\"Tokyo\"}""#);
    let body = format!("{call}\n{DONE}\n");
    let report = run(
        &request(""),
        Some("application/x-ndjson"),
        &[body.as_bytes()],
        BodyEnd::Complete,
    );
    assert_eq!(rules(&report), ["ollama.response.arguments_not_object"]);
}

#[test]
fn stream_line_rules_fire_where_they_should() {
    let tool_calls_done = DONE.replace(
        r#""content":""}"#,
        r#""content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Oslo"}}}]}"#,
    ).replace(r#""stop""#, r#""tool_calls""#);
    let body =
        format!("data: {CALL}\n\n{CALL}\n{tool_calls_done}\n{DONE}\n{{\"error\":\"boom\"}}\n");
    let report = run(
        &request(""),
        Some("text/event-stream"),
        &[body.as_bytes()],
        BodyEnd::Complete,
    );
    let mut found = rules(&report);
    found.sort_unstable();
    assert_eq!(
        found,
        [
            "ollama.response.done_reason_unknown",
            "ollama.stream.after_done",
            "ollama.stream.after_done",
            "ollama.stream.content_type",
            "ollama.stream.error_line",
            "ollama.stream.line_not_json",
            "ollama.stream.line_not_json",
            "ollama.stream.tool_calls_on_done",
        ]
    );
}

#[test]
fn a_stream_without_done_and_a_repeated_call() {
    let body = format!("{CALL}\n{CALL}\n");
    let report = run(
        &request(""),
        Some("application/x-ndjson"),
        &[body.as_bytes()],
        BodyEnd::Complete,
    );
    assert_eq!(
        rules(&report),
        ["ollama.stream.tool_call_repeated", "ollama.stream.no_done"]
    );
    assert_eq!(
        report.choices[0].tool_calls.len(),
        1,
        "the repeat is not kept twice"
    );
}

#[test]
fn request_rules_read_the_history_and_the_declarations() {
    let body = r#"{"model":"m","tool_choice":"auto","messages":[
        {"role":"user","content":[{"type":"text","text":"hi"}]},
        {"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]},
        {"role":"tool","tool_call_id":"call_1","content":"42"}],
        "tools":[{"type":"custom","function":{"name":"f"}}]}"#;
    let report = run(
        body,
        Some("application/x-ndjson"),
        &[DONE.as_bytes(), b"\n"],
        BodyEnd::Complete,
    );
    let mut found = rules(&report);
    found.sort_unstable();
    assert_eq!(
        found,
        [
            "ollama.request.arguments_not_object",
            "ollama.request.content_not_string",
            "ollama.request.tool_choice_ignored",
            "ollama.request.tool_missing_parameters",
            "ollama.request.tool_result_unnamed",
            "ollama.request.tool_type_not_function",
        ]
    );
}

#[test]
fn enforce_errors_are_ollamas_shape_and_one_ndjson_line() {
    let error = EnforceError {
        message: "tooltap enforce: refused",
        kind: "k",
        code: "c",
        param: None,
    };
    let body = Dialect::Ollama.error_body(&error);
    assert_eq!(
        body,
        serde_json::json!({"error": "tooltap enforce: refused"})
    );
    let line = String::from_utf8(Dialect::Ollama.error_event(&error, None)).expect("text");
    assert!(
        line.ends_with('\n') && line.matches('\n').count() == 1,
        "{line:?}"
    );
    let parsed: Value = serde_json::from_str(&line).expect("one JSON line");
    assert_eq!(parsed, body);
}
