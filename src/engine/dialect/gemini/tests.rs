//! The Gemini dialect through the engine's `Exchange`: the framing the path and head choose,
//! a `key=` in the query that never reaches the report, the reassembly bound, and events that
//! one `feed` completes together.

use std::sync::Arc;

use crate::engine::report::{BodyKind, Completeness, LimitKind};
use crate::engine::{
    BodyEnd, Dialect, EngineConfig, Exchange, Report, RequestParts, ResponseHead, RuleId,
    SchemaCache,
};

const REQUEST: &str = r#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"OBJECT","properties":{"a":{"type":"STRING"}}}}]}]}"#;

fn head(content_type: Option<&str>) -> ResponseHead {
    ResponseHead {
        status: 200,
        content_type: content_type.map(str::to_owned),
        content_encoding: None,
        headers: Vec::new(),
    }
}

fn run(config: EngineConfig, path: &str, head: ResponseHead, frames: &[&[u8]]) -> Report {
    let config = Arc::new(config);
    let cache = SchemaCache::default();
    let request = RequestParts {
        body: REQUEST.as_bytes(),
        path: Some(path),
        ..RequestParts::default()
    };
    let mut exchange = Exchange::start(&config, &cache, Dialect::Gemini, request);
    exchange.response_head(head);
    for frame in frames {
        exchange.feed(frame);
    }
    exchange.finish(BodyEnd::Complete)
}

fn rules(report: &Report) -> Vec<RuleId> {
    report.violations.iter().map(|v| v.rule).collect()
}

const CALL: &str = r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"c1","name":"f","args":{"a":"x"}}}]},"finishReason":"STOP","index":0}]}"#;

#[test]
fn the_path_and_the_head_choose_the_framing() {
    let stream = "/v1beta/models/m:streamGenerateContent";
    let cases = [
        (
            "/v1beta/models/m:generateContent",
            Some("application/json"),
            BodyKind::Json,
        ),
        (stream, Some("application/json"), BodyKind::JsonArray),
        (stream, None, BodyKind::JsonArray),
        (
            "/v1beta/models/m:streamGenerateContent?alt=sse",
            None,
            BodyKind::Sse,
        ),
        (
            "/v1beta/models/m:streamGenerateContent?alt=sse",
            Some("text/event-stream"),
            BodyKind::Sse,
        ),
        (
            stream,
            Some("text/event-stream; charset=utf-8"),
            BodyKind::Sse,
        ),
    ];
    for (path, content_type, kind) in cases {
        let report = run(EngineConfig::default(), path, head(content_type), &[]);
        assert_eq!(report.body_kind, kind, "{path} {content_type:?}");
    }
    let array = format!("[{CALL}]");
    let report = run(
        EngineConfig::default(),
        stream,
        head(Some("application/json")),
        &[array.as_bytes()],
    );
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert_eq!(report.choices[0].tool_calls.len(), 1);
}

#[test]
fn a_key_in_the_query_never_reaches_the_report() {
    let path = "/v1beta/models/gemini-3-flash:streamGenerateContent?key=AIzaSECRET123&alt=sse";
    let body = format!(
        "data: {}\r\n\r\ndata: [DONE]\r\n\r\n",
        CALL.replace("STOP", "FUNCTION_CALL")
    );
    let report = run(
        EngineConfig::default(),
        path,
        head(Some("text/event-stream")),
        &[body.as_bytes()],
    );
    assert_eq!(
        rules(&report),
        [
            RuleId::GeminiResponseFinishReasonUnknown,
            RuleId::GeminiStreamDoneSentinel
        ]
    );
    assert_eq!(report.request.model.as_deref(), Some("gemini-3-flash"));
    let text = serde_json::to_string(&report).expect("serializes");
    assert!(
        !text.contains("SECRET123") && !text.contains("key="),
        "{text}"
    );
}

#[test]
fn one_event_stops_adding_past_the_reassembly_bound() {
    let calls: Vec<String> = (0..2_000)
        .map(|i| format!(r#"{{"functionCall":{{"id":"c{i}","name":"f","args":{{"a":"x"}}}}}}"#))
        .collect();
    let event = format!(
        r#"{{"candidates":[{{"content":{{"parts":[{}]}},"finishReason":"STOP"}}]}}"#,
        calls.join(",")
    );
    let body = format!("data: {event}\n\n");
    let config = EngineConfig {
        max_reassembled: 1 << 20,
        ..EngineConfig::default()
    };
    let report = run(
        config,
        "/v1beta/models/m:streamGenerateContent?alt=sse",
        head(Some("text/event-stream")),
        &[body.as_bytes()],
    );
    assert_eq!(
        report.completeness,
        Completeness::TooLarge {
            limit: LimitKind::Reassembled,
            bytes: 1 << 20
        }
    );
    let kept: usize = report.choices.iter().map(|c| c.tool_calls.len()).sum();
    assert!(
        kept < 2_000 && kept * crate::engine::weigh::ENTRY <= 2 << 20,
        "{kept}"
    );
}

#[test]
fn a_call_re_sent_in_an_event_the_same_feed_completes_is_a_repeat() {
    let first = CALL.replace(r#","finishReason":"STOP""#, "");
    let again = CALL.replace(r#""a":"x""#, r#""a":"xy""#);
    let body = format!("data: {first}\n\ndata: {again}\n\n");
    let report = run(
        EngineConfig::default(),
        "/v1beta/models/m:streamGenerateContent?alt=sse",
        head(Some("text/event-stream")),
        &[body.as_bytes()],
    );
    assert_eq!(rules(&report), [RuleId::GeminiStreamFunctionCallRepeated]);
    let calls = &report.choices[0].tool_calls;
    assert_eq!(calls.len(), 1, "kept once");
    assert_eq!(calls[0].arguments, Some(serde_json::json!({"a": "xy"})));
}

#[test]
fn alt_sse_answered_without_an_event_is_not_sse_whatever_the_framing() {
    let path = "/v1beta/models/m:streamGenerateContent?alt=sse";
    for (content_type, body) in [
        ("application/json", "[]"),
        ("text/event-stream", ": ping\n\n"),
    ] {
        let report = run(
            EngineConfig::default(),
            path,
            head(Some(content_type)),
            &[body.as_bytes()],
        );
        assert_eq!(
            rules(&report),
            [
                RuleId::GeminiStreamNotSse,
                RuleId::GeminiResponseNoCandidatesWithoutBlock
            ],
            "{content_type}"
        );
    }
}

#[test]
fn a_call_against_a_request_that_declares_nothing_is_not_judged_undeclared() {
    let config = Arc::new(EngineConfig::default());
    let cache = SchemaCache::default();
    let request = RequestParts {
        body: br#"{"cachedContent":"cachedContents/abc","contents":[]}"#,
        path: Some("/v1beta/models/m:generateContent"),
        ..RequestParts::default()
    };
    let mut exchange = Exchange::start(&config, &cache, Dialect::Gemini, request);
    exchange.response_head(head(Some("application/json")));
    exchange.feed(CALL.as_bytes());
    let report = exchange.finish(BodyEnd::Complete);
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert_eq!(report.choices[0].tool_calls[0].name.as_deref(), Some("f"));
}
