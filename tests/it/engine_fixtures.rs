//! The fixture corpus: every case's violations match its `expected.jsonl` (all fields but
//! `detail`, compared as parsed JSON); `TOOLTAP_BLESS=1` rewrites them. Also: every rule fires
//! somewhere, clean cases are clean, and where a case has a buffered and a streamed half the
//! reassembled stream equals the buffered response.

use crate::engine_support;

use std::collections::BTreeSet;

use engine_support::{comparable, load_all, read_expected, run_natural, write_expected};
use tooltap::engine::{Completeness, RuleId, SchemaCache};

#[test]
fn every_fixture_matches_its_expected_violations() {
    let bless = std::env::var("TOOLTAP_BLESS").is_ok_and(|v| v == "1");
    let cache = SchemaCache::default();
    let mut failures = Vec::new();
    for fixture in load_all() {
        let report = run_natural(&fixture, &cache);
        let actual = comparable(&report, true);
        if bless {
            write_expected(&fixture, &actual);
            continue;
        }
        let expected = read_expected(&fixture);
        if actual != expected {
            failures.push(format!(
                "{}:\n  expected {}\n  actual   {}",
                fixture.name,
                serde_json::to_string(&expected).unwrap_or_default(),
                serde_json::to_string(&actual).unwrap_or_default()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixture(s) differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_rule_has_a_failing_fixture() {
    let mut fired = BTreeSet::new();
    for fixture in load_all() {
        for line in read_expected(&fixture) {
            fired.insert(line["rule"].as_str().expect("rule is a string").to_owned());
        }
    }
    // Conversation rules fire in multi-exchange fixtures (`tests/conversations`).
    fired.extend(crate::mcp_conversation_fixtures::fired_rules());
    let unjudged = rules_not_judged();
    let missing: Vec<&str> = RuleId::ALL
        .iter()
        .map(|r| r.as_str())
        .filter(|id| !fired.contains(*id) && !unjudged.contains(*id))
        .collect();
    assert!(
        missing.is_empty(),
        "rules without a failing fixture: {missing:?}"
    );
    let fire_anyway: Vec<&String> = unjudged.iter().filter(|id| fired.contains(*id)).collect();
    assert!(
        fire_anyway.is_empty(),
        "docs/rules.md says these are not judged, yet a fixture expects them: {fire_anyway:?}"
    );
}

/// The rules docs/rules.md marks as not judged (`Status: not judged...` or `Status: not
/// reported...` in their section): the only ones allowed no failing fixture.
fn rules_not_judged() -> BTreeSet<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/rules.md");
    let text = std::fs::read_to_string(path).expect("docs/rules.md");
    text.split("\n### ")
        .skip(1)
        .filter_map(|chunk| {
            let (heading, body) = chunk.split_once('\n')?;
            let body = body.split("\n#").next().unwrap_or(body);
            (body.contains("Status: not judged") || body.contains("Status: not reported"))
                .then(|| heading.trim().trim_matches('`').to_owned())
        })
        .collect()
}

#[test]
fn clean_and_passing_cases_are_clean_and_complete() {
    let cache = SchemaCache::default();
    let clean: Vec<_> = load_all()
        .into_iter()
        .filter(|f| {
            let name = f.kind_name();
            name.starts_with("pass_") || name.starts_with("pair_") || name.starts_with("seed_")
        })
        .collect();
    assert!(
        clean.len() >= 8,
        "expected at least 8 clean cases, found {}",
        clean.len()
    );
    for fixture in clean {
        let report = run_natural(&fixture, &cache);
        assert!(
            report.violations.is_empty(),
            "{}: {:?}",
            fixture.name,
            report.violations
        );
        assert_eq!(
            report.completeness,
            Completeness::Complete,
            "{}",
            fixture.name
        );
        assert!(
            report.choices.iter().all(|c| c.finish_reason.is_some()),
            "{}",
            fixture.name
        );
    }
}

#[test]
fn reassembled_streams_equal_their_buffered_twins() {
    let cache = SchemaCache::default();
    let all = load_all();
    let mut pairs = 0;
    // `_array`: a stream sent as one JSON array (Gemini without `alt=sse`); `_ndjson`: Ollama's
    // NDJSON stream; `_stream`: AWS event-stream messages (Bedrock's ConverseStream).
    for stream in all.iter().filter(|f| {
        f.kind_name().starts_with("pair_")
            && (f.name.ends_with("_sse")
                || f.name.ends_with("_array")
                || f.name.ends_with("_ndjson")
                || f.name.ends_with("_stream"))
    }) {
        let stem = stream.name.rsplit_once('_').map_or("", |(stem, _)| stem);
        let twin_name = format!("{stem}_json");
        let buffered = all
            .iter()
            .find(|f| f.name == twin_name)
            .expect("every _sse pair has a _json twin");
        let from_stream = run_natural(stream, &cache);
        let from_buffer = run_natural(buffered, &cache);
        assert!(!from_stream.choices.is_empty(), "{}", stream.name);
        assert_eq!(from_stream.choices, from_buffer.choices, "{}", stream.name);
        assert_eq!(from_stream.usage, from_buffer.usage, "{}", stream.name);
        pairs += 1;
    }
    assert!(
        pairs >= 2,
        "expected at least two stream/buffered pairs, found {pairs}"
    );
}

#[test]
fn seed_stream_reassembles_by_index_not_position() {
    let fixture = load_all()
        .into_iter()
        .find(|f| f.name == "seed_required_stream")
        .expect("seed fixture");
    let report = run_natural(&fixture, &SchemaCache::default());
    let calls = &report.choices[0].tool_calls;
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].id.as_deref(), Some("call_paris"));
    assert_eq!(
        calls[0].arguments,
        Some(serde_json::json!(r#"{"city":"Paris","unit":"c"}"#))
    );
    assert_eq!(calls[1].id.as_deref(), Some("call_oslo"));
    assert_eq!(
        calls[1].arguments,
        Some(serde_json::json!(r#"{"city":"Oslo"}"#))
    );
}
