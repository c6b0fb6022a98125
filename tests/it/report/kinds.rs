//! Every kind of recording in the page: the engine's fixture corpus turned into recordings (each
//! expected violation marked at its frame), cut, lossy, failed and binary recordings, a recorded
//! `</script>`, and a Responses API stream.

use serde_json::json;
use tooltap::engine::ResponseHead;
use tooltap::record::Outcome;

use crate::engine_support::{self, sse_head};
use crate::report::support::*;
use crate::support::TempDir;

#[test]
fn every_fixture_renders_with_its_expected_violations_marked() {
    let dir = TempDir::new("fixtures");
    let recs = dir.join("recs");
    std::fs::create_dir_all(&recs).expect("dir");
    let fixtures = write_fixtures(&recs);
    let page = dir.join("report.html");
    let data = build(&[recs], &page);
    assert!(data.unreadable.is_empty(), "{:?}", data.unreadable);
    assert_eq!(data.exchanges.len(), fixtures.len());
    let ids: Vec<&str> = fixtures.iter().map(|f| f.name.as_str()).collect();
    let dom = dump_dom(&page, &format!("#exchange={}", ids.join(",")));
    assert_clean(&dom);
    for (fixture, view) in fixtures.iter().zip(&data.exchanges) {
        assert_eq!(view.id, fixture.name);
        let s = section(&dom, &fixture.name);
        for expected in engine_support::read_expected(fixture) {
            let rule = expected["rule"].as_str().expect("rule");
            let row = format!("data-rule=\"{rule}\"");
            assert!(
                !tags_with(s, &["class=\"violation\"", &row]).is_empty(),
                "{}: row {rule}",
                fixture.name
            );
            if let Some(seq) = expected["seq"].as_u64() {
                let seq = format!("data-seq=\"{seq}\"");
                assert_eq!(
                    tags_with(s, &["class=\"mark", &row, &seq]).len().min(1),
                    1,
                    "{}: mark {rule} {seq}",
                    fixture.name
                );
            }
        }
        for fragment in &view.fragments {
            for piece in &fragment.pieces {
                let kind = serde_json::to_value(piece.1).expect("kind");
                let tag = [
                    format!("data-seq=\"{}\"", fragment.seq),
                    format!("data-kind=\"{}\"", kind.as_str().unwrap_or("")),
                ];
                assert!(
                    !tags_with(s, &["frag kind-", &tag[0], &tag[1]]).is_empty(),
                    "{}: {tag:?}",
                    fixture.name
                );
            }
        }
    }
}

#[test]
fn cut_lossy_failed_and_binary_recordings_render() {
    let dir = TempDir::new("kinds");
    let recs = dir.join("recs");
    std::fs::create_dir_all(&recs).expect("dir");
    let sse = sse_head();
    let open = open_call();
    let args = chunk(
        json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}),
        None,
    );
    let nasty = chunk(
        json!({"content":"</script><b id=\"pwned\">x</b><!--"}),
        None,
    );
    let request = weather_request(true);
    type Case<'a> = (&'a str, Vec<&'a [u8]>, Option<(Outcome, u64)>, ResponseHead);
    let cases: Vec<Case> = vec![
        (
            "cut",
            vec![&open, &args, b"data: {\"choi"],
            None,
            sse.clone(),
        ),
        (
            "lossy",
            vec![&open, &args],
            Some((Outcome::Lossy, 3)),
            sse.clone(),
        ),
        (
            "gone",
            vec![&open, &nasty],
            Some((Outcome::ReaderGone, 0)),
            sse.clone(),
        ),
        (
            "upstream-500",
            vec![br#"{"error":{"message":"overloaded","type":"server_error"}}"#],
            Some((Outcome::Complete, 0)),
            ResponseHead {
                status: 500,
                content_type: Some("application/json".into()),
                content_encoding: None,
                headers: Vec::new(),
            },
        ),
        (
            "binary",
            vec![&open, &[0xff, 0xfe, 0x00, 0x80][..]],
            Some((Outcome::UpstreamBroke, 0)),
            sse.clone(),
        ),
    ];
    for (id, frames, end, head) in cases {
        write_recording(
            &recs.join(format!("{id}.jsonl")),
            &Rec {
                id,
                started: "2026-12-02T12:00:01Z",
                request: &request,
                head,
                frames,
                end,
            },
        );
    }
    let page = dir.join("report.html");
    let data = build(&[recs], &page);
    assert!(data.unreadable.is_empty(), "{:?}", data.unreadable);
    let dom = dump_dom(&page, "#exchange=cut,lossy,gone,upstream-500,binary");
    assert_clean(&dom);
    assert!(
        !dom.contains("<b id=\"pwned\">"),
        "recorded markup escaped the data element"
    );
    let facts = |id: &str, name: &str, value: &str| {
        let s = section(&dom, id);
        assert!(
            s.contains(&format!("<dt>{name}</dt><dd>{value}</dd>")),
            "{id}: {name} = {value}"
        );
        s
    };
    let cut = facts("cut", "outcome", "unfinished");
    facts("cut", "violations (live)", "no end line");
    assert_eq!(
        tags_with(cut, &["frag kind-arguments", "data-seq=\"1\""]).len(),
        1
    );
    assert_eq!(
        tags_with(cut, &["class=\"frame\""]).len(),
        3,
        "the cut frame is shown raw"
    );
    facts("lossy", "outcome", "lossy");
    facts("lossy", "dropped frames", "3");
    facts("lossy", "inspection", "truncated");
    let gone = facts("gone", "outcome", "client_gone");
    assert!(
        gone.contains("&lt;/script&gt;&lt;b id=\"pwned\"&gt;")
            || gone.contains("&lt;/script&gt;&lt;b id=&quot;pwned&quot;&gt;")
    );
    let failed = facts("upstream-500", "status", "500");
    facts("upstream-500", "inspection", "not_inspected");
    assert!(failed.contains("overloaded"));
    let binary = facts("binary", "outcome", "upstream_error");
    assert!(binary.contains("(base64)") && binary.contains("//4AgA=="));
}

#[test]
fn a_responses_api_stream_is_drawn_from_its_dialect_table() {
    let dir = TempDir::new("responses");
    let recs = dir.join("recs");
    std::fs::create_dir_all(&recs).expect("dir");
    let event = |kind: &str, doc: serde_json::Value| format!("event: {kind}\ndata: {doc}\n\n");
    let frames = [
        event(
            "response.output_item.added",
            json!({"type":"response.output_item.added","output_index":1,
            "item":{"type":"function_call","call_id":"call_r1","name":"get_weather","arguments":""}}),
        ),
        event(
            "response.function_call_arguments.delta",
            json!({"type":"response.function_call_arguments.delta",
            "output_index":1,"delta":"{\"city\":"}),
        ),
        event(
            "response.function_call_arguments.delta",
            json!({"type":"response.function_call_arguments.delta",
            "output_index":1,"delta":"\"Oslo\"}"}),
        ),
        event(
            "response.completed",
            json!({"type":"response.completed","response":{"status":"completed"}}),
        ),
    ];
    let request = serde_json::to_vec(&json!({"model":"gpt-test","stream":true,"input":"weather?",
        "tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}))
    .expect("json");
    let head = sse_head();
    let rec = Rec {
        id: "resp-1",
        started: "2026-12-02T12:00:00Z",
        request: &request,
        head,
        frames: frames.iter().map(|f| f.as_bytes()).collect(),
        end: Some((Outcome::Complete, 0)),
    };
    write_recording_for(&recs.join("resp-1.jsonl"), &rec, "/v1/responses");
    let page = dir.join("report.html");
    build(&[recs], &page);
    let dom = dump_dom(&page, "#exchange=resp-1");
    assert_clean(&dom);
    let s = section(&dom, "resp-1");
    assert!(s.contains("<dt>dialect</dt><dd>responses</dd>"));
    assert!(
        s.contains("<code>get_weather</code>"),
        "flat Responses tools are named"
    );
    assert_eq!(
        tags_with(s, &["class=\"lane\"", "data-lane=\"1\""]).len(),
        1
    );
    for (seq, kind) in [
        (0, "id"),
        (0, "name"),
        (1, "arguments"),
        (2, "arguments"),
        (3, "finish"),
    ] {
        let tag = [
            format!("data-seq=\"{seq}\""),
            format!("data-kind=\"{kind}\""),
        ];
        assert_eq!(
            tags_with(s, &["frag kind-", &tag[0], &tag[1]]).len(),
            1,
            "{tag:?}"
        );
    }
}
