//! The argument driver: the whole-document verdict while the text fits, the streamed one past
//! it with the same failures, the seq of the fragment that broke the JSON, and what it holds
//! flat in the argument's size.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::*;
use crate::engine::schema::compile_one_for_tests as compiled;

fn paths(failures: &[SchemaFailure]) -> BTreeSet<(String, String)> {
    failures
        .iter()
        .map(|failure| (failure.instance_path.clone(), failure.schema_path.clone()))
        .collect()
}

/// Streams `text` in `piece`-byte fragments (seq = fragment number from 1); the verdict, the
/// break `push` reported and the most held at any point.
fn stream(
    text: &str,
    piece: usize,
    schema: Option<&ToolSchema>,
    limits: ArgumentLimits,
) -> (ArgumentVerdict, Option<u64>, usize) {
    let mut stream = ArgumentStream::new(schema, limits);
    let mut broke = None;
    let mut most = 0;
    let mut at = 0;
    let mut seq = 0;
    while at < text.len() {
        let mut end = (at + piece).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        seq += 1;
        if stream.push(&text[at..end], seq).is_some() {
            broke.get_or_insert(seq);
        }
        most = most.max(stream.held_bytes());
        at = end;
    }
    (stream.finish(schema), broke, most)
}

fn write_file_schema() -> ToolSchema {
    compiled(&json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1},
            "content": {"type": "string", "maxLength": 100},
            "mode": {"enum": ["create", "overwrite"]}
        },
        "required": ["path", "content", "mode"],
        "additionalProperties": false
    }))
}

fn failures_of(verdict: &ArgumentVerdict) -> BTreeSet<(String, String)> {
    match verdict {
        ArgumentVerdict::Object {
            schema: ArgumentSchema::Checked(failures),
            ..
        } => paths(failures),
        other => panic!("not checked: {other:?}"),
    }
}

#[test]
fn a_huge_argument_is_judged_in_flat_memory_with_the_whole_documents_failures() {
    let schema = write_file_schema();
    for size in [420 * 1024, 4 * 1024 * 1024] {
        let text = json!({"path": "", "content": "é".repeat(size / 2), "extra": [1, {"a": null}]})
            .to_string();
        let (verdict, broke, most) = stream(&text, 1024, Some(&schema), ArgumentLimits::default());
        assert_eq!(broke, None);
        let whole = match schema.check(
            &serde_json::from_str::<Value>(&text).unwrap_or_default(),
            16,
        ) {
            SchemaCheck::Checked(failures) => paths(&failures),
            other => panic!("{other:?}"),
        };
        assert_eq!(failures_of(&verdict), whole);
        assert_eq!(whole.len(), 4, "{whole:?}");
        assert!(most <= 96 * 1024, "{size}: held {most} bytes");
    }
}

#[test]
fn a_small_argument_is_judged_whole_as_before() {
    let schema = write_file_schema();
    let text = r#"{"path":"a","content":"b","mode":"append"}"#;
    let (verdict, _, _) = stream(text, 5, Some(&schema), ArgumentLimits::default());
    let whole = match schema.check(&serde_json::from_str::<Value>(text).unwrap_or_default(), 16) {
        SchemaCheck::Checked(failures) => paths(&failures),
        other => panic!("{other:?}"),
    };
    assert_eq!(failures_of(&verdict), whole);
    assert_eq!(whole.len(), 1);
}

#[test]
fn broken_json_names_the_fragment_that_broke_it() {
    // Fragment 3 ("x") makes `{"path":"a",` impossible: a key must follow the comma.
    let fragments = [r#"{"path":"a","#, " ", "x", r#""content":"b"}"#];
    for limits in [
        ArgumentLimits::default(),
        ArgumentLimits {
            text: 4,
            value: 4,
            prefix: 2,
        },
    ] {
        let mut stream = ArgumentStream::new(None, limits);
        let mut broke = None;
        for (seq, fragment) in (1..).zip(fragments) {
            if let Some(broken) = stream.push(fragment, seq) {
                broke.get_or_insert((seq, broken.offset));
            }
        }
        assert_eq!(broke, Some((3, 13)));
        assert!(matches!(
            stream.finish(None),
            ArgumentVerdict::NotJson { seq: Some(3), .. }
        ));
    }
    let mut cut_short = ArgumentStream::new(None, ArgumentLimits::default());
    assert_eq!(cut_short.push(r#"{"path":"#, 1), None);
    assert!(matches!(
        cut_short.finish(None),
        ArgumentVerdict::NotJson { seq: None, .. }
    ));
}

#[test]
fn past_the_text_bound_what_needs_the_whole_value_is_incomplete() {
    let text = json!({"content": "x".repeat(200 * 1024)}).to_string();
    let pattern = compiled(&json!({"properties": {"content": {"pattern": "^x+$"}}}));
    let (verdict, _, _) = stream(&text, 1024, Some(&pattern), ArgumentLimits::default());
    assert!(
        matches!(verdict, ArgumentVerdict::Object { schema: ArgumentSchema::Incomplete(ref failures), value: None } if failures.is_empty()),
        "{verdict:?}"
    );
    let any_of = compiled(&json!({"anyOf": [{"type": "object"}]}));
    let (verdict, _, _) = stream(&text, 1024, Some(&any_of), ArgumentLimits::default());
    assert!(
        matches!(
            verdict,
            ArgumentVerdict::Object {
                schema: ArgumentSchema::Incomplete(_),
                ..
            }
        ),
        "{verdict:?}"
    );
    let array = json!(["x".repeat(200 * 1024)]).to_string();
    let (verdict, _, _) = stream(&array, 1024, Some(&pattern), ArgumentLimits::default());
    assert!(
        matches!(verdict, ArgumentVerdict::NotObject(None)),
        "{verdict:?}"
    );
}

/// Not a check: the work huge or many small arguments cost, for callgrind (docs/ARCHITECTURE.md's
/// `engine::arguments` row). `TOOLTAP_ARGUMENT_PROBE` = `whole` (the text joined, parsed and
/// validated whole), `streamed` (this driver) or unset (neither: the baseline to subtract);
/// `TOOLTAP_ARGUMENT_PROBE_MB` the megabytes of arguments in all (default 4);
/// `TOOLTAP_ARGUMENT_PROBE_KB`, when set, the size of each argument, that many streamed one
/// after the other (arguments within the text bound); unset, one argument of all of it.
#[test]
#[ignore = "a probe for callgrind, run by hand"]
fn argument_cost_probe() {
    let number = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|n| n.parse::<usize>().ok())
    };
    let total = number("TOOLTAP_ARGUMENT_PROBE_MB").unwrap_or(4) * 1024 * 1024;
    let size = number("TOOLTAP_ARGUMENT_PROBE_KB").map_or(total, |kb| kb * 1024);
    let line = "    let value = format!(\"{}\\n\", \"x\");\n";
    // The content that makes the whole argument `size` bytes long (its JSON escapes included).
    let frame = json!({"path": "src/x.rs", "content": "", "mode": "create"}).to_string();
    let escaped = serde_json::to_string(line).unwrap_or_default().len() - 2;
    let content = line.repeat(size.saturating_sub(frame.len()) / escaped);
    let text = json!({"path": "src/x.rs", "content": content, "mode": "create"}).to_string();
    let arguments = (total / text.len()).max(1);
    let schema = compiled(&json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1},
            "content": {"type": "string"},
            "mode": {"enum": ["create", "overwrite"]}
        },
        "required": ["path", "content", "mode"],
        "additionalProperties": false
    }));
    let fragments: Vec<&str> = text
        .as_bytes()
        .chunks(1024)
        .map(|chunk| std::str::from_utf8(chunk).unwrap_or(""))
        .collect();
    let mode = std::env::var("TOOLTAP_ARGUMENT_PROBE");
    eprintln!(
        "argument_cost_probe: {arguments} argument(s) of {} bytes, {} fragments each, mode {mode:?}",
        text.len(),
        fragments.len()
    );
    for _ in 0..arguments {
        match mode.as_deref() {
            Ok("whole") => {
                let mut joined = String::new();
                for fragment in &fragments {
                    joined.push_str(fragment);
                }
                let value: Value = serde_json::from_str(&joined).unwrap_or_default();
                assert!(
                    matches!(schema.check(&value, 16), SchemaCheck::Checked(failures) if failures.is_empty())
                );
            }
            Ok("streamed") => {
                let mut stream = ArgumentStream::new(Some(&schema), ArgumentLimits::default());
                for (seq, fragment) in (1..).zip(&fragments) {
                    stream.push(fragment, seq);
                }
                assert!(
                    matches!(stream.finish(Some(&schema)), ArgumentVerdict::Object { schema: ArgumentSchema::Checked(failures), .. } if failures.is_empty())
                );
            }
            _ => assert!(!fragments.is_empty()),
        }
    }
}
