//! Chat streams whose tool-call arguments are huge (a coding agent's `write_file`): followed as
//! they stream in memory flat in their size (what the reassembly holds stays under a bound that
//! does not grow with the argument), judged as the whole document would judge them, a broken
//! argument reported at the fragment that broke it, a keyword that needs a whole huge value
//! ending `incomplete: schema_streaming` (never a pass), and any chunking of the bytes giving
//! the same verdicts.

use std::sync::Arc;

use serde_json::{Value, json};
use tooltap::engine::{
    BodyEnd, Completeness, EngineConfig, Exchange, Report, RuleId, SchemaCache, Stage,
};

use crate::engine_support::{comparable, sse_head};

/// The most a Chat stream's reassembly may hold for one call of any size: the argument text up
/// to 16 KiB, the streaming parser's and checker's values up to 16 KiB, and the call's entry.
const FLAT_BOUND: usize = 96 * 1024;

fn write_file(parameters: Value) -> Value {
    json!({"type": "function", "function": {"name": "write_file", "parameters": parameters}})
}

fn content_schema(content: Value) -> Value {
    json!({
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": content},
        "required": ["path", "content"],
        "additionalProperties": false
    })
}

/// A streamed request declaring `write_file` (as `functions` when `legacy`).
fn request(parameters: Value, legacy: bool) -> Vec<u8> {
    let mut request = json!({"model": "m", "stream": true, "messages": []});
    if legacy {
        let function = write_file(parameters)["function"].clone();
        request["functions"] = json!([function]);
    } else {
        request["tools"] = json!([write_file(parameters)]);
    }
    request.to_string().into_bytes()
}

fn event(delta: Value, finish: Value) -> String {
    let chunk = json!({
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    });
    format!("data: {chunk}\n\n")
}

/// The events of one `write_file` call whose arguments come as `fragments`: the role, the
/// call's opening (its name, empty arguments), one event per fragment, the finish, `[DONE]`.
/// Event `k` is fed as seq `k`: fragment `n` (from 1) is seq `n + 1`.
fn events(fragments: &[&str], legacy: bool) -> Vec<String> {
    let call = |name: Option<&str>, arguments: &str| {
        let mut function = json!({"arguments": arguments});
        if let Some(name) = name {
            function["name"] = json!(name);
        }
        if legacy {
            json!({"function_call": function})
        } else {
            let mut item = json!({"index": 0, "function": function});
            if name.is_some() {
                item["id"] = json!("call_1");
                item["type"] = json!("function");
            }
            json!({"tool_calls": [item]})
        }
    };
    let mut events = vec![
        event(json!({"role": "assistant", "content": null}), Value::Null),
        event(call(Some("write_file"), ""), Value::Null),
    ];
    events.extend(
        fragments
            .iter()
            .map(|fragment| event(call(None, fragment), Value::Null)),
    );
    let finish = if legacy {
        "function_call"
    } else {
        "tool_calls"
    };
    events.push(event(json!({}), json!(finish)));
    events.push("data: [DONE]\n\n".to_owned());
    events
}

/// `text` in `size`-byte fragments (cut on character boundaries).
fn fragments(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let mut end = (at + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[at..end]);
        at = end;
    }
    out
}

fn start(request: &[u8]) -> Exchange {
    let config = Arc::new(EngineConfig::default());
    let mut exchange = Exchange::new(&config, &SchemaCache::default(), request);
    exchange.response_head(sse_head());
    exchange
}

/// Feeds `chunks` one `feed` each; the report and the most the reassembly held at any point.
fn run(request: &[u8], chunks: &[&[u8]]) -> (Report, usize) {
    let mut exchange = start(request);
    let mut most = 0;
    for chunk in chunks {
        exchange.feed(chunk);
        most = most.max(exchange.reassembly_bytes());
    }
    (exchange.finish(BodyEnd::Complete), most)
}

fn as_bytes(events: &[String]) -> Vec<&[u8]> {
    events.iter().map(String::as_bytes).collect()
}

fn rules(report: &Report) -> Vec<RuleId> {
    report.violations.iter().map(|v| v.rule).collect()
}

#[test]
fn a_one_megabyte_argument_in_1_kib_fragments_is_judged_whole_in_flat_memory() {
    let content = "    let line = format!(\"{}\\n\", \"é\");\n".repeat(1024 * 1024 / 40);
    let arguments = json!({"path": "src/main.rs", "content": content, "extra": 1}).to_string();
    assert!(arguments.len() > 1024 * 1024);
    let schema = content_schema(json!({"type": "string", "maxLength": 100}));
    for legacy in [false, true] {
        let events = events(&fragments(&arguments, 1024), legacy);
        let (report, most) = run(&request(schema.clone(), legacy), &as_bytes(&events));
        assert!(
            most <= FLAT_BOUND,
            "legacy {legacy}: the reassembly held {most} bytes"
        );
        // The whole document's verdict: `content` too long, `extra` not allowed.
        let (rule, base) = if legacy {
            (
                RuleId::ChatLegacyResponseArgumentsSchemaMismatch,
                "/choices/0/message/function_call/arguments",
            )
        } else {
            (
                RuleId::ToolCallArgumentsSchema,
                "/choices/0/message/tool_calls/0/function/arguments",
            )
        };
        let mut found: Vec<(RuleId, String)> = report
            .violations
            .iter()
            .map(|v| (v.rule, v.path.clone()))
            .collect();
        found.sort_by(|a, b| a.1.cmp(&b.1));
        assert_eq!(
            found,
            vec![(rule, base.to_owned()), (rule, format!("{base}/content"))],
            "legacy {legacy}"
        );
        assert_eq!(report.completeness, Completeness::Complete);
        // The report keeps the start of the arguments and says the rest was not kept.
        let kept = report.choices[0].tool_calls[0]
            .arguments
            .as_ref()
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        assert!(kept.len() < 1024, "{} bytes kept", kept.len());
        assert!(kept.starts_with(&arguments[..200]), "{kept}");
        assert!(kept.contains("not kept"), "{kept}");
    }
}

#[test]
fn a_break_at_fragment_3_of_400_is_reported_at_that_fragment_once() {
    let mut fragments = vec!["{\"path\":", "\"a.rs\"", "}}"];
    fragments.extend(std::iter::repeat_n(" ", 397));
    let schema = content_schema(json!({"type": "string"}));
    for legacy in [false, true] {
        let events = events(&fragments, legacy);
        let mut exchange = start(&request(schema.clone(), legacy));
        for event in &events[..5] {
            exchange.feed(event.as_bytes());
        }
        // Fragment 3 is the fifth event (seq 4): reported as it arrives, so enforce mode can
        // cut there.
        let seen: Vec<(RuleId, Stage, Option<u64>)> = exchange
            .violations()
            .iter()
            .map(|v| (v.rule, v.stage, v.seq))
            .collect();
        let rule = if legacy {
            RuleId::ChatLegacyResponseArgumentsInvalidJson
        } else {
            RuleId::ToolCallArgumentsNotJson
        };
        assert_eq!(
            seen,
            vec![(rule, Stage::Fragment, Some(4))],
            "legacy {legacy}"
        );
        for event in &events[5..] {
            exchange.feed(event.as_bytes());
        }
        let report = exchange.finish(BodyEnd::Complete);
        assert_eq!(rules(&report), vec![rule], "legacy {legacy}: one per call");
        let path = &report.violations[0].path;
        assert!(path.starts_with("/choices/0/delta/"), "{path}");
        assert!(
            report.violations[0].detail.contains("at byte 15"),
            "{}",
            report.violations[0].detail
        );
    }
}

#[test]
fn a_pattern_on_a_huge_string_is_incomplete_schema_streaming_never_a_pass() {
    let arguments = json!({"path": "a.rs", "content": "x".repeat(300 * 1024)}).to_string();
    let schema = content_schema(json!({"type": "string", "pattern": "^x+$"}));
    for legacy in [false, true] {
        let events = events(&fragments(&arguments, 1024), legacy);
        let (report, most) = run(&request(schema.clone(), legacy), &as_bytes(&events));
        assert!(most <= FLAT_BOUND, "held {most}");
        assert!(report.violations.is_empty(), "{:?}", report.violations);
        assert_eq!(
            report.completeness,
            Completeness::SchemaStreaming { calls: 1 },
            "legacy {legacy}"
        );
    }
    // Within the text bound the same schema is judged whole, as before.
    let small = json!({"path": "a.rs", "content": "x".repeat(1000)}).to_string();
    let events = events(&fragments(&small, 100), false);
    let (report, _) = run(&request(schema, false), &as_bytes(&events));
    assert_eq!(report.completeness, Completeness::Complete);
}

#[test]
fn a_name_after_the_arguments_began_still_judges_them_against_its_schema() {
    // The name comes with the second fragment: within the text bound the text is read again
    // with the schema; past it the schema can no longer be followed (`schema_streaming`).
    let schema = content_schema(json!({"type": "string", "maxLength": 10}));
    for (size, completeness, failures) in [
        (1000, Completeness::Complete, 1),
        (200 * 1024, Completeness::SchemaStreaming { calls: 1 }, 0),
    ] {
        let arguments = json!({"path": "a.rs", "content": "y".repeat(size)}).to_string();
        let (head, tail) = arguments.split_at(arguments.len() - 10);
        let opening = |arguments: &str, name: Option<&str>| {
            let mut function = json!({"arguments": arguments});
            if let Some(name) = name {
                function["name"] = json!(name);
            }
            event(
                json!({"tool_calls": [{"index": 0, "id": "c", "type": "function", "function": function}]}),
                Value::Null,
            )
        };
        let events = [
            opening(head, None),
            opening(tail, Some("write_file")),
            event(json!({}), json!("tool_calls")),
            "data: [DONE]\n\n".to_owned(),
        ];
        let (report, _) = run(&request(schema.clone(), false), &as_bytes(&events));
        let schema_failures = rules(&report)
            .iter()
            .filter(|rule| **rule == RuleId::ToolCallArgumentsSchema)
            .count();
        assert_eq!(schema_failures, failures, "{size}: {:?}", report.violations);
        assert_eq!(report.completeness, completeness, "{size}");
    }
}

/// A small deterministic generator of chunk sizes.
fn sizes(seed: u64) -> impl Iterator<Item = usize> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    std::iter::from_fn(move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        Some(1 + (state >> 33) as usize % 3000)
    })
}

#[test]
fn any_chunking_of_a_huge_argument_stream_gives_the_same_verdicts() {
    let content = "z\u{e9}\\\"".repeat(30 * 1024);
    let schema = content_schema(json!({"type": "string", "maxLength": 5}));
    let clean = json!({"path": "a.rs", "content": content}).to_string();
    // Broken past the text bound: the verdict comes from the streaming parser.
    let broken = format!("{}]", &clean[..clean.len() - 1]);
    for arguments in [&clean, &broken] {
        let events = events(&fragments(arguments, 1000), false);
        let request = request(schema.clone(), false);
        let (natural, _) = run(&request, &as_bytes(&events));
        assert!(!natural.violations.is_empty());
        let bytes = events.concat().into_bytes();
        for seed in 0..12 {
            let mut chunks = Vec::new();
            let mut at = 0;
            for size in sizes(seed) {
                if at >= bytes.len() {
                    break;
                }
                let end = (at + size).min(bytes.len());
                chunks.push(&bytes[at..end]);
                at = end;
            }
            let (split, most) = run(&request, &chunks);
            assert_eq!(
                comparable(&split, false),
                comparable(&natural, false),
                "seed {seed}"
            );
            assert_eq!(split.completeness, natural.completeness, "seed {seed}");
            assert!(most <= FLAT_BOUND, "seed {seed}: held {most}");
        }
    }
}
