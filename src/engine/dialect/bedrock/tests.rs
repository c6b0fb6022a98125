//! Bedrock through the whole exchange: the event-stream message bound degrades inspection
//! (never a violation), and a stream split anywhere reads as one message at a time.

use std::sync::Arc;

use crate::engine::framing::event_stream::encode;
use crate::engine::report::{Completeness, LimitKind};
use crate::engine::schema::SchemaCache;
use crate::engine::{BodyEnd, Dialect, EngineConfig, Exchange, RequestParts, ResponseHead};

fn event(kind: &str, payload: &str) -> Vec<u8> {
    encode(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.as_bytes(),
    )
}

fn run(config: EngineConfig, body: &[u8]) -> crate::engine::Report {
    let config = Arc::new(config);
    let request = RequestParts {
        body: br#"{"messages":[]}"#,
        path: Some("/model/m/converse-stream"),
        ..RequestParts::default()
    };
    let mut exchange = Exchange::start(&config, &SchemaCache::default(), Dialect::Bedrock, request);
    exchange.response_head(ResponseHead {
        status: 200,
        content_type: Some("application/vnd.amazon.eventstream".to_owned()),
        content_encoding: None,
        headers: Vec::new(),
    });
    exchange.feed(body);
    exchange.finish(BodyEnd::Complete)
}

#[test]
fn a_message_past_the_bound_stops_inspection_too_large_without_a_violation() {
    let text = "x".repeat(4096);
    let mut body = event("messageStart", r#"{"role":"assistant"}"#);
    body.extend(event(
        "contentBlockDelta",
        &format!(r#"{{"contentBlockIndex":0,"delta":{{"text":"{text}"}}}}"#),
    ));
    let bounded = EngineConfig {
        max_sse_line: 1024,
        ..EngineConfig::default()
    };
    let report = run(bounded, &body);
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert_eq!(
        report.completeness,
        Completeness::TooLarge {
            limit: LimitKind::EventStreamMessage,
            bytes: 1024
        }
    );
    let report = run(EngineConfig::default(), &body);
    assert_eq!(report.completeness, Completeness::Complete);
    let rules: Vec<&str> = report.violations.iter().map(|v| v.rule.as_str()).collect();
    assert_eq!(rules, ["bedrock.stream.message_stop_missing"]);
}
