//! Huge tool-call arguments on the Responses, Anthropic and Bedrock streams, through the real
//! exchange: a 1 MB argument in 1 KiB fragments is judged (its schema failures found) while
//! the reassembly holds a bounded amount; JSON that breaks at the third fragment is reported
//! at that fragment's seq, once; a `pattern` on a string too long to hold is
//! `incomplete: schema_streaming`, never a pass or a violation; and the verdict does not
//! depend on how the bytes were split.

use std::sync::Arc;

use serde_json::{Value, json};
use tooltap::engine::framing::event_stream::encode;
use tooltap::engine::{
    BodyEnd, Completeness, Dialect, EngineConfig, Exchange, RequestParts, ResponseHead, Stage,
    Violation,
};

use crate::engine_support::sse_head;

/// Most the reassembly may hold while a 1 MB argument streams (the argument's text bound is
/// 16 KiB; the rest is the stream's own entries).
const HELD_BOUND: usize = 128 * 1024;

#[derive(Debug, Clone, Copy)]
pub(crate) enum Wire {
    Responses,
    Anthropic,
    Bedrock,
}

const ALL: [Wire; 3] = [Wire::Responses, Wire::Anthropic, Wire::Bedrock];

pub(crate) fn schema(content: Value) -> Value {
    json!({
        "type": "object",
        "properties": {"path": {"type": "string", "minLength": 1}, "content": content},
        "required": ["path", "content"],
        "additionalProperties": false
    })
}

impl Wire {
    fn dialect(self) -> Dialect {
        match self {
            Wire::Responses => Dialect::Responses,
            Wire::Anthropic => Dialect::Anthropic,
            Wire::Bedrock => Dialect::Bedrock,
        }
    }

    pub(crate) fn request(self, schema: &Value) -> Vec<u8> {
        let body = match self {
            Wire::Responses => json!({
                "model": "m", "stream": true, "input": "write it",
                "tools": [{"type": "function", "name": "write_file", "parameters": schema}]
            }),
            Wire::Anthropic => json!({
                "model": "m", "max_tokens": 100, "stream": true,
                "messages": [{"role": "user", "content": "write it"}],
                "tools": [{"name": "write_file", "input_schema": schema}]
            }),
            Wire::Bedrock => json!({
                "messages": [{"role": "user", "content": [{"text": "write it"}]}],
                "toolConfig": {"tools": [{"toolSpec": {
                    "name": "write_file", "inputSchema": {"json": schema}
                }}]}
            }),
        };
        body.to_string().into_bytes()
    }

    fn head(self) -> ResponseHead {
        match self {
            Wire::Bedrock => ResponseHead {
                content_type: Some("application/vnd.amazon.eventstream".into()),
                ..sse_head()
            },
            _ => sse_head(),
        }
    }

    /// The stream's events, one byte string each: `fragments` are the argument's pieces (the
    /// n-th in the event at index `first + n`, see [`Wire::first_fragment`]).
    pub(crate) fn events(self, fragments: &[&str]) -> Vec<Vec<u8>> {
        let whole: String = fragments.concat();
        let mut events = Vec::new();
        match self {
            Wire::Responses => return responses_events(fragments, &whole),
            Wire::Anthropic => {
                let mut sse = |kind: &str, data: Value| {
                    events.push(format!("event: {kind}\ndata: {data}\n\n").into_bytes());
                };
                sse(
                    "message_start",
                    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                        "role": "assistant", "content": [], "model": "m", "stop_reason": null,
                        "usage": {"input_tokens": 1, "output_tokens": 1}}}),
                );
                sse(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0, "content_block":
                        {"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {}}}),
                );
                for fragment in fragments {
                    sse(
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": 0,
                            "delta": {"type": "input_json_delta", "partial_json": fragment}}),
                    );
                }
                sse(
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": 0}),
                );
                sse(
                    "message_delta",
                    json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                        "usage": {"output_tokens": 5}}),
                );
                sse("message_stop", json!({"type": "message_stop"}));
            }
            Wire::Bedrock => {
                let mut message = |kind: &str, data: Value| {
                    let headers = [
                        (":event-type", kind),
                        (":content-type", "application/json"),
                        (":message-type", "event"),
                    ];
                    events.push(encode(&headers, data.to_string().as_bytes()));
                };
                message("messageStart", json!({"role": "assistant"}));
                message(
                    "contentBlockStart",
                    json!({"contentBlockIndex": 0, "start": {"toolUse":
                        {"toolUseId": "tooluse_1", "name": "write_file"}}}),
                );
                for fragment in fragments {
                    message(
                        "contentBlockDelta",
                        json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": fragment}}}),
                    );
                }
                message("contentBlockStop", json!({"contentBlockIndex": 0}));
                message("messageStop", json!({"stopReason": "tool_use"}));
                message(
                    "metadata",
                    json!({"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                        "metrics": {"latencyMs": 0}}),
                );
            }
        }
        events
    }

    /// The index of the event carrying the first fragment.
    pub(crate) fn first_fragment(self) -> u64 {
        match self {
            Wire::Responses => 1,
            Wire::Anthropic | Wire::Bedrock => 2,
        }
    }

    /// The rule a broken argument text is reported under.
    pub(crate) fn not_json(self) -> &'static str {
        match self {
            Wire::Responses => "responses.output.arguments_invalid_json",
            Wire::Anthropic => "anthropic.stream.partial_json_invalid",
            Wire::Bedrock => "bedrock.stream.tool_input_not_json_object",
        }
    }

    /// The rule a schema failure is reported under.
    fn schema_rule(self) -> &'static str {
        match self {
            Wire::Responses => "responses.output.arguments_schema_mismatch",
            Wire::Anthropic => "anthropic.response.tool_use_input_schema_mismatch",
            Wire::Bedrock => "bedrock.response.input_schema_violation",
        }
    }
}

/// A Responses stream whose deltas are `fragments` and whose whole copies (`.done`,
/// `output_item.done`, the terminal output) are `whole`.
fn responses_events(fragments: &[&str], whole: &str) -> Vec<Vec<u8>> {
    let mut events = Vec::new();
    let item = |arguments: &str, status: &str| {
        json!({"type": "function_call", "id": "fc_1", "call_id": "call_1",
                "name": "write_file", "arguments": arguments, "status": status})
    };
    let mut sequence = 0;
    let mut sse = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(sequence);
        sequence += 1;
        events.push(format!("event: {kind}\ndata: {data}\n\n").into_bytes());
    };
    sse(
        "response.output_item.added",
        json!({"output_index": 0, "item": item("", "in_progress")}),
    );
    for fragment in fragments {
        sse(
            "response.function_call_arguments.delta",
            json!({"item_id": "fc_1", "output_index": 0, "delta": fragment}),
        );
    }
    sse(
        "response.function_call_arguments.done",
        json!({"item_id": "fc_1", "output_index": 0, "arguments": whole}),
    );
    sse(
        "response.output_item.done",
        json!({"output_index": 0, "item": item(whole, "completed")}),
    );
    sse(
        "response.completed",
        json!({"response": {"id": "resp_1", "object": "response", "model": "m",
                "status": "completed", "output": [item(whole, "completed")]}}),
    );
    events
}

/// What one run saw: the report's violations and completeness, and the most the reassembly
/// held after any feed.
struct Run {
    violations: Vec<Violation>,
    completeness: Completeness,
    most_held: usize,
    /// The longest tool call's arguments in the report's outcome, written out.
    longest_arguments: usize,
}

/// Feeds `chunks` one `feed` call each (seq = position).
fn run(wire: Wire, schema: &Value, chunks: &[Vec<u8>]) -> Run {
    let request = wire.request(schema);
    let parts = RequestParts {
        body: &request,
        path: matches!(wire, Wire::Bedrock).then_some("/model/m/converse-stream"),
        ..RequestParts::default()
    };
    let config = Arc::new(EngineConfig::default());
    let cache = tooltap::engine::SchemaCache::default();
    let mut exchange = Exchange::start(&config, &cache, wire.dialect(), parts);
    exchange.response_head(wire.head());
    let mut most_held = 0;
    for chunk in chunks {
        exchange.feed(chunk);
        most_held = most_held.max(exchange.reassembly_bytes());
    }
    let report = exchange.finish(BodyEnd::Complete);
    let longest_arguments = report
        .choices
        .iter()
        .flat_map(|choice| &choice.tool_calls)
        .map(|call| call.arguments.as_ref().map_or(0, |a| a.to_string().len()))
        .max()
        .unwrap_or(0);
    Run {
        longest_arguments,
        violations: report.violations,
        completeness: report.completeness,
        most_held,
    }
}

/// `text` in `size`-byte pieces (cut on char boundaries).
fn pieces(text: &str, size: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let mut end = (at + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(&text[at..end]);
        at = end;
    }
    pieces
}

fn rules(violations: &[Violation]) -> Vec<(&str, &str)> {
    violations
        .iter()
        .map(|v| (v.rule.as_str(), v.path.as_str()))
        .collect()
}

fn huge_arguments(size: usize) -> String {
    json!({"path": "src/big.rs", "content": "fn main() {}\n".repeat(size / 13)}).to_string()
}

#[test]
fn a_one_megabyte_argument_is_judged_in_bounded_memory() {
    let text = huge_arguments(1024 * 1024);
    let fragments = pieces(&text, 1024);
    for wire in ALL {
        let events = wire.events(&fragments);
        let clean = run(wire, &schema(json!({"type": "string"})), &events);
        assert!(
            clean.violations.is_empty(),
            "{wire:?}: {:?}",
            clean.violations
        );
        assert_eq!(clean.completeness, Completeness::Complete, "{wire:?}");
        // The report gets the text's start and a marker, not a copy.
        assert!(
            (1..1024).contains(&clean.longest_arguments),
            "{wire:?}: {}",
            clean.longest_arguments
        );
        assert!(
            clean.most_held < HELD_BOUND,
            "{wire:?} held {} bytes for a {} byte argument",
            clean.most_held,
            text.len()
        );
        let capped = run(
            wire,
            &schema(json!({"type": "string", "maxLength": 100})),
            &events,
        );
        let found = rules(&capped.violations);
        assert_eq!(found.len(), 1, "{wire:?}: {found:?}");
        assert_eq!(found[0].0, wire.schema_rule(), "{wire:?}");
        assert!(found[0].1.ends_with("/content"), "{wire:?}: {found:?}");
        assert_eq!(capped.completeness, Completeness::Complete, "{wire:?}");
        assert!(
            capped.most_held < HELD_BOUND,
            "{wire:?}: {}",
            capped.most_held
        );
    }
}

#[test]
fn json_that_breaks_at_the_third_fragment_is_reported_at_its_seq_once() {
    let filler = format!("\"{}\"", "x".repeat(1000));
    for size in [10, 100 * 1024] {
        // The third fragment puts `]` where the `:` after a key belongs.
        let mut fragments = vec!["{\"path\":", "\"a.txt\",", "\"content\" ]"];
        let padding = vec![filler.as_str(); size / 1000];
        fragments.extend(padding);
        for wire in ALL {
            let events = wire.events(&fragments);
            let seen = run(wire, &schema(json!({"type": "string"})), &events);
            let broken: Vec<&Violation> = seen
                .violations
                .iter()
                .filter(|v| v.rule.as_str() == wire.not_json())
                .collect();
            assert_eq!(broken.len(), 1, "{wire:?}: {:?}", seen.violations);
            assert_eq!(broken[0].stage, Stage::Fragment, "{wire:?}");
            assert_eq!(broken[0].seq, Some(wire.first_fragment() + 2), "{wire:?}");
            assert!(broken[0].detail.contains("at byte 26"), "{:?}", broken[0]);
            assert!(seen.most_held < HELD_BOUND, "{wire:?}: {}", seen.most_held);
        }
    }
}

#[test]
fn a_pattern_on_a_string_too_long_to_hold_is_incomplete_never_a_pass() {
    let text = huge_arguments(200 * 1024);
    let fragments = pieces(&text, 1024);
    let patterned = schema(json!({"type": "string", "pattern": "^fn"}));
    for wire in ALL {
        let seen = run(wire, &patterned, &wire.events(&fragments));
        assert!(
            seen.violations.is_empty(),
            "{wire:?}: {:?}",
            seen.violations
        );
        assert_eq!(
            seen.completeness,
            Completeness::SchemaStreaming { calls: 1 },
            "{wire:?}"
        );
        // Held whole, the same pattern is judged.
        let small = huge_arguments(1024);
        let seen = run(wire, &patterned, &wire.events(&pieces(&small, 100)));
        assert_eq!(seen.completeness, Completeness::Complete, "{wire:?}");
    }
}

#[test]
fn a_huge_done_copy_that_differs_from_the_deltas_is_compared_and_judged_without_being_held() {
    let text = huge_arguments(300 * 1024);
    let fragments = pieces(&text, 1024);
    let cut_short = &text[..text.len() - 1];
    let events = responses_events(&fragments, cut_short);
    let seen = run(Wire::Responses, &schema(json!({"type": "string"})), &events);
    let found: Vec<&str> = seen.violations.iter().map(|v| v.rule.as_str()).collect();
    assert_eq!(
        found,
        [
            "responses.stream.arguments_done_mismatch",
            "responses.output.arguments_invalid_json"
        ],
        "{:?}",
        seen.violations
    );
    assert!(seen.most_held < HELD_BOUND, "{}", seen.most_held);
    // One byte changed in the middle is told apart too.
    let half = text.len() / 2;
    let middle = half + text[half..].find("main").expect("a letter to change");
    let mut changed = text.clone();
    changed.replace_range(middle..=middle, "#");
    let seen = run(
        Wire::Responses,
        &schema(json!({"type": "string"})),
        &responses_events(&fragments, &changed),
    );
    let found: Vec<&str> = seen.violations.iter().map(|v| v.rule.as_str()).collect();
    assert_eq!(found, ["responses.stream.arguments_done_mismatch"]);
}

#[test]
fn huge_arguments_announced_with_the_item_are_not_held_either() {
    let text = huge_arguments(1024 * 1024);
    let mut events = responses_events(&pieces(&text, 1024), &text);
    let item = json!({"type": "function_call", "id": "fc_1", "call_id": "call_1",
        "name": "write_file", "arguments": text, "status": "in_progress"});
    let added = json!({"type": "response.output_item.added", "sequence_number": 0,
        "output_index": 0, "item": item});
    events[0] = format!("event: response.output_item.added\ndata: {added}\n\n").into_bytes();
    let seen = run(Wire::Responses, &schema(json!({"type": "string"})), &events);
    assert!(seen.violations.is_empty(), "{:?}", seen.violations);
    assert!(seen.most_held < HELD_BOUND, "{}", seen.most_held);
}

#[test]
fn a_huge_argument_reads_the_same_split_anywhere() {
    let text = huge_arguments(100 * 1024);
    let fragments = pieces(&text, 1000);
    let capped = schema(json!({"type": "string", "maxLength": 100}));
    for wire in ALL {
        let stream: Vec<u8> = wire.events(&fragments).concat();
        let whole = run(wire, &capped, std::slice::from_ref(&stream));
        assert_eq!(rules(&whole.violations).len(), 1, "{wire:?}");
        for size in [7, 1000, 4096, 65536] {
            let chunks: Vec<Vec<u8>> = stream.chunks(size).map(<[u8]>::to_vec).collect();
            let split = run(wire, &capped, &chunks);
            assert_eq!(
                rules(&split.violations),
                rules(&whole.violations),
                "{wire:?} in {size}-byte chunks"
            );
            assert_eq!(split.completeness, whole.completeness, "{wire:?}");
        }
    }
}
