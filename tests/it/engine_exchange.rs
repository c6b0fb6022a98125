//! The incremental API's promises beyond the fixtures: enforce mode sees verdicts as they
//! happen, our own limits and early endings are completeness (never violations), severity
//! overrides apply, and an exchange can move into another thread.

use std::sync::Arc;

use crate::engine_support::sse_head;

use tooltap::engine::{
    BodyEnd, BodyKind, Completeness, EngineConfig, Exchange, Level, LimitKind, ResponseHead,
    RuleId, SchemaCache, Severity, SeverityOverrides, Stage,
};

const REQUEST: &[u8] = br#"{"model":"m","stream":true,"messages":[],"tool_choice":"required","tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]}"#;

fn start(config: EngineConfig) -> Exchange {
    let mut exchange = Exchange::new(&Arc::new(config), &SchemaCache::default(), REQUEST);
    exchange.response_head(sse_head());
    exchange
}

const STOP_WITH_CALL: &[&[u8]] = &[
    b"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"P\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
    b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    b"data: [DONE]\n\n",
];

#[test]
fn complete_stage_verdicts_are_visible_at_done_before_finish() {
    let mut exchange = start(EngineConfig::default());
    exchange.feed(STOP_WITH_CALL[0]);
    exchange.feed(STOP_WITH_CALL[1]);
    assert!(
        exchange.violations().is_empty(),
        "nothing is wrong before the message is whole"
    );
    exchange.feed(STOP_WITH_CALL[2]);
    let rules: Vec<RuleId> = exchange.violations().iter().map(|v| v.rule).collect();
    assert_eq!(rules, vec![RuleId::FinishReasonNotToolCalls]);
    assert_eq!(
        exchange.violations()[0].seq,
        Some(1),
        "points at the frame with the finish reason"
    );
    let report = exchange.finish(BodyEnd::Complete);
    assert_eq!(report.violations.len(), 1, "finish does not judge twice");
}

#[test]
fn a_body_its_reader_left_is_truncated_not_violating() {
    for end in [BodyEnd::ReaderGone, BodyEnd::Lossy] {
        let mut exchange = start(EngineConfig::default());
        exchange.feed(STOP_WITH_CALL[0]);
        exchange.feed(b"data: {\"choices\":[{\"ind");
        let report = exchange.finish(end);
        assert_eq!(report.completeness, Completeness::Partial, "{end:?}");
        assert!(
            report.violations.is_empty(),
            "{end:?}: {:?}",
            report.violations
        );
    }
}

#[test]
fn a_body_the_upstream_broke_off_is_judged_as_received() {
    let mut exchange = start(EngineConfig::default());
    exchange.feed(STOP_WITH_CALL[0]);
    exchange.feed(b"data: {\"choices\":[{\"ind");
    let report = exchange.finish(BodyEnd::UpstreamBroke);
    assert_eq!(report.completeness, Completeness::Complete);
    let rules: Vec<RuleId> = report.violations.iter().map(|v| v.rule).collect();
    assert!(rules.contains(&RuleId::StreamTruncated), "{rules:?}");
    assert!(rules.contains(&RuleId::SseDoneMissing), "{rules:?}");
}

#[test]
fn a_reader_that_left_after_done_left_a_whole_stream() {
    let mut exchange = start(EngineConfig::default());
    exchange.feed(STOP_WITH_CALL[0]);
    exchange.feed(b"data: [DONE]\n\n");
    let report = exchange.finish(BodyEnd::ReaderGone);
    assert_eq!(report.completeness, Completeness::Complete);
    let rules: Vec<RuleId> = report.violations.iter().map(|v| v.rule).collect();
    assert!(
        rules.contains(&RuleId::StreamTruncated),
        "no finish_reason: {rules:?}"
    );
}

#[test]
fn partial_reassembly_is_reported_when_not_judged() {
    let mut exchange = start(EngineConfig::default());
    exchange.feed(STOP_WITH_CALL[0]);
    exchange.feed(b"data: {\"choices\":[{\"ind");
    let report = exchange.finish(BodyEnd::ReaderGone);
    assert_eq!(report.completeness, Completeness::Partial);
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert_eq!(
        report.choices[0].tool_calls[0].id.as_deref(),
        Some("c1"),
        "partial reassembly is still reported"
    );
}

#[test]
fn limits_end_inspection_as_completeness() {
    let mut exchange = start(EngineConfig {
        max_sse_line: 64,
        ..EngineConfig::default()
    });
    exchange.feed(STOP_WITH_CALL[0]);
    let report = exchange.finish(BodyEnd::Complete);
    assert!(
        matches!(
            report.completeness,
            Completeness::TooLarge {
                limit: LimitKind::SseLine,
                ..
            }
        ),
        "{:?}",
        report.completeness
    );
    assert!(report.violations.is_empty());

    let config = Arc::new(EngineConfig {
        max_json_body: 10,
        ..EngineConfig::default()
    });
    let mut buffered = Exchange::new(&config, &SchemaCache::default(), b"{}");
    buffered.response_head(ResponseHead {
        status: 200,
        content_type: Some("application/json".into()),
        content_encoding: None,
        headers: Vec::new(),
    });
    buffered.feed(b"{\"choices\": []}");
    let report = buffered.finish(BodyEnd::Complete);
    assert!(matches!(
        report.completeness,
        Completeness::TooLarge {
            limit: LimitKind::JsonBody,
            ..
        }
    ));
    assert!(report.violations.is_empty());

    let mut garbled = Exchange::new(&config, &SchemaCache::default(), b"{}");
    garbled.response_head(ResponseHead {
        status: 200,
        content_type: Some("application/json".into()),
        content_encoding: Some("gzip".into()),
        headers: Vec::new(),
    });
    garbled.feed(b"this is not gzip");
    assert!(matches!(
        garbled.finish(BodyEnd::Complete).completeness,
        Completeness::DecodeFailed { .. }
    ));
}

#[test]
fn severity_overrides_demote_and_silence() {
    let mut overrides = SeverityOverrides::default();
    overrides.set(RuleId::FinishReasonNotToolCalls, Level::Warning);
    let mut demoted = start(EngineConfig {
        severity: overrides,
        ..EngineConfig::default()
    });
    for frame in STOP_WITH_CALL {
        demoted.feed(frame);
    }
    let report = demoted.finish(BodyEnd::Complete);
    assert_eq!(report.violations[0].severity, Severity::Warning);
    assert_eq!(report.violations[0].stage, Stage::Complete);

    let silenced =
        SeverityOverrides::parse_list("finish_reason.not_tool_calls=off").expect("parses");
    let mut quiet = start(EngineConfig {
        severity: silenced,
        ..EngineConfig::default()
    });
    for frame in STOP_WITH_CALL {
        quiet.feed(frame);
    }
    assert!(quiet.finish(BodyEnd::Complete).violations.is_empty());
}

#[test]
fn non_success_statuses_and_other_types_are_not_judged() {
    let config = Arc::new(EngineConfig::default());
    let mut refused = Exchange::new(&config, &SchemaCache::default(), REQUEST);
    refused.response_head(ResponseHead {
        status: 500,
        content_type: Some("text/html".into()),
        content_encoding: None,
        headers: Vec::new(),
    });
    refused.feed(b"<html>oops</html>");
    let report = refused.finish(BodyEnd::Complete);
    assert_eq!(
        (report.status, report.completeness.clone()),
        (Some(500), Completeness::NotInspected)
    );
    assert!(report.violations.is_empty());
    assert_eq!(report.body_kind, BodyKind::Other);
}

#[test]
fn exchanges_move_across_threads_and_report_serializes() {
    let mut exchange = start(EngineConfig::default());
    exchange.feed(STOP_WITH_CALL[0]);
    let handle = std::thread::spawn(move || {
        exchange.feed(STOP_WITH_CALL[1]);
        exchange.feed(STOP_WITH_CALL[2]);
        exchange.finish(BodyEnd::Complete)
    });
    let report = handle.join().expect("no panic");
    let json = serde_json::to_value(&report).expect("serializes");
    assert_eq!(
        json["violations"][0]["rule"],
        "finish_reason.not_tool_calls"
    );
    assert_eq!(json["completeness"]["state"], "complete");
    assert_eq!(json["body_kind"], "sse");
    assert_eq!(json["request"]["tools"][0], "get_weather");
}

#[test]
fn declared_tool_names_come_from_the_cached_compilation_and_an_empty_array_declares_none() {
    let config = Arc::new(EngineConfig::default());
    let cache = SchemaCache::default();
    let two = br#"{"tools":[{"type":"function","function":{"name":"a"}},{"type":"custom","custom":{"name":"c"}},{"type":"function","function":{"name":"b","parameters":{"type":"object"}}}],"stream":true}"#;
    for _ in 0..2 {
        let mut exchange = Exchange::new(&config, &cache, two);
        exchange.response_head(sse_head());
        let report = exchange.finish(BodyEnd::Complete);
        assert_eq!(report.request.tools, vec!["a".to_owned(), "b".to_owned()]);
    }
    assert_eq!(cache.len(), 1, "the same array is compiled once");
    let empty = Exchange::new(&config, &cache, br#"{"tools":[],"stream":true}"#);
    let report = empty.finish(BodyEnd::Complete);
    assert!(report.request.tools.is_empty());
    assert!(
        report.notes.iter().any(|n| n.contains("declares no tools")),
        "{:?}",
        report.notes
    );
}

/// A server that never numbers its Responses events gets one
/// `responses.stream.sequence_number_missing`, on the first event, counting all of them once the
/// stream is judged; a stream its reader left keeps the one finding, uncounted.
#[test]
fn a_stream_without_sequence_numbers_is_one_finding_with_a_count() {
    use crate::engine_support::{fixtures_dir, load, natural_frames, run_frames};
    let fixture =
        load(&fixtures_dir().join("responses_stream_sequence_number_missing_every_event"));
    let frames = natural_frames(&fixture);
    let report = run_frames(&fixture, &SchemaCache::default(), &frames);
    let missing: Vec<_> = report
        .violations
        .iter()
        .filter(|v| v.rule == RuleId::ResponsesStreamSequenceNumberMissing)
        .collect();
    assert_eq!(missing.len(), 1, "{:?}", report.violations);
    assert_eq!(missing[0].seq, Some(0), "the first event");
    assert_eq!(
        missing[0].detail,
        format!(
            "{} events without an integer sequence_number, the first here",
            frames.len()
        )
    );

    let config = Arc::new(EngineConfig::default());
    let mut exchange = Exchange::with_dialect(
        &config,
        &SchemaCache::default(),
        fixture.dialect,
        &fixture.request,
    );
    exchange.response_head(fixture.head.clone());
    for frame in &frames[..3] {
        exchange.feed(frame);
    }
    let report = exchange.finish(BodyEnd::ReaderGone);
    let details: Vec<&str> = report
        .violations
        .iter()
        .filter(|v| v.rule == RuleId::ResponsesStreamSequenceNumberMissing)
        .map(|v| v.detail.as_str())
        .collect();
    assert_eq!(details, ["an event without an integer sequence_number"]);
}
