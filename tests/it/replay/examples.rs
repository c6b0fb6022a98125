//! The bundled recordings: each parses with the recording reader, the engine judges the clean
//! ones clean and each failure shape with its documented rule, and the seed examples answer the
//! seed suite's requests exactly (they equal the engine's seed fixtures' request bodies).

use std::path::Path;
use std::sync::Arc;

use tooltap::engine::{BodyEnd, EngineConfig, Exchange, Report, ResponseHead, SchemaCache};
use tooltap::record::{Recording, read_file};

use crate::replay::support::repo;
use crate::support::recording::response_header;

/// Every example and the rule ids the engine must report for it (empty = clean).
const EXPECTED: &[(&str, &[&str])] = &[
    ("seed/forced-buffered.jsonl", &[]),
    ("seed/required-stream.jsonl", &[]),
    (
        "failures/arguments-object.jsonl",
        &["tool_call.arguments_not_string"],
    ),
    (
        "failures/finish-stop-with-calls.jsonl",
        &["finish_reason.not_tool_calls"],
    ),
    // The merged arguments `{"city": "Berlin"}{"city": "Madrid"}` are not JSON either.
    (
        "failures/parallel-all-index-0.jsonl",
        &[
            "delta.id_changed",
            "delta.name_repeated",
            "tool_call.arguments_not_json",
        ],
    ),
    (
        "broken/seed-forced-arguments-object.jsonl",
        &["tool_call.arguments_not_string"],
    ),
    ("broken/seed-required-stream.jsonl", &[]),
];

/// Judge a recording the way the replay server's inspector does: frame by frame.
pub fn judge(recording: &Recording) -> Report {
    let config = Arc::new(EngineConfig::default());
    let cache = SchemaCache::default();
    let request = recording.meta.request.body.bytes().expect("request body");
    let mut exchange = Exchange::new(&config, &cache, &request);
    let header = |name: &str| response_header(recording, name);
    exchange.response_head(ResponseHead {
        status: recording.meta.response.status,
        content_type: header("content-type"),
        content_encoding: header("content-encoding"),
        headers: Vec::new(),
    });
    for frame in &recording.frames {
        exchange.feed(&frame.bytes);
    }
    exchange.finish(BodyEnd::Complete)
}

fn all_examples(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("examples dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            all_examples(&path, out);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            let root = repo().join("recordings/examples");
            out.push(
                path.strip_prefix(&root)
                    .expect("under root")
                    .to_string_lossy()
                    .replace('\\', "/"),
            );
        }
    }
}

#[test]
fn every_example_is_listed_parses_and_is_judged_as_documented() {
    let root = repo().join("recordings/examples");
    let mut found = Vec::new();
    all_examples(&root, &mut found);
    found.sort();
    let mut listed: Vec<String> = EXPECTED.iter().map(|(n, _)| (*n).to_owned()).collect();
    listed.sort();
    assert_eq!(found, listed, "recordings/examples and EXPECTED disagree");
    for (name, rules) in EXPECTED {
        let recording = read_file(&root.join(name)).unwrap_or_else(|e| panic!("{e}"));
        assert!(recording.end.is_some(), "{name}: no end line");
        let report = judge(&recording);
        let mut got: Vec<&str> = report.violations.iter().map(|v| v.rule.as_str()).collect();
        got.sort_unstable();
        got.dedup();
        assert_eq!(got, *rules, "{name}: {:#?}", report.violations);
        assert_eq!(
            report.completeness,
            tooltap::engine::Completeness::Complete,
            "{name}"
        );
    }
}

#[test]
fn the_seed_examples_answer_exactly_the_seed_suites_requests() {
    for (example, fixture) in [
        ("seed/forced-buffered.jsonl", "seed_forced_buffered"),
        ("seed/required-stream.jsonl", "seed_required_stream"),
    ] {
        let recording =
            read_file(&repo().join("recordings/examples").join(example)).expect("parses");
        let fixture = std::fs::read(
            repo()
                .join("tests/fixtures")
                .join(fixture)
                .join("request.json"),
        )
        .expect("fixture");
        let fixture: serde_json::Value = serde_json::from_slice(&fixture).expect("json");
        assert_eq!(
            recording.meta.request.body.to_value(),
            Some(fixture),
            "{example}"
        );
    }
}

#[test]
fn the_clean_stream_reassembles_into_two_interleaved_calls_and_has_usage() {
    let recording =
        read_file(&repo().join("recordings/examples/seed/required-stream.jsonl")).expect("parses");
    let report = judge(&recording);
    let calls = &report.choices[0].tool_calls;
    let summary: Vec<(u32, Option<&str>, serde_json::Value)> = calls
        .iter()
        .map(|c| {
            let args = c
                .arguments
                .as_ref()
                .and_then(|a| a.as_str())
                .expect("string arguments");
            (
                c.index,
                c.id.as_deref(),
                serde_json::from_str(args).expect("arguments JSON"),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                0,
                Some("call_paris7Hk2"),
                serde_json::json!({"city": "Paris", "unit": "c"})
            ),
            (
                1,
                Some("call_oslo4Rt9"),
                serde_json::json!({"city": "Oslo", "unit": "c"})
            ),
        ]
    );
    assert_eq!(
        report.choices[0].finish_reason.as_deref(),
        Some("tool_calls")
    );
    assert_eq!(
        report
            .usage
            .as_ref()
            .map(|u| u.value()["total_tokens"].clone()),
        Some(serde_json::json!(118))
    );
}
