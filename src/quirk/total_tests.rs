//! Every quirk rewriter is total: whatever JSON or bytes an upstream sends, rewriting never
//! panics (a panic under `tooltap proxy --inject` would be on the client's path). Two attacks:
//! healthy exchanges of every dialect with each value inside each event swapped, one at a time,
//! for a value of another type (exhaustive), and arbitrary JSON events and arbitrary bytes
//! (proptest), each through every quirk, recorded and live.

use bytes::Bytes;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::engine::{Dialect as EngineDialect, ResponseHead};

const CHAT_REQUEST: &str = r#"{"model":"m","stream":true,"tool_choice":"required","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}}]}"#;

/// A healthy Chat stream: text, one call in two argument fragments, its finish, usage.
const CHAT_EVENTS: [&str; 6] = [
    r#"{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}"#,
    r#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}]}"#,
    r#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]},"finish_reason":null}]}"#,
    r#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"x\"}"}}]},"finish_reason":null}]}"#,
    r#"{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
    r#"{"id":"c","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#,
];

const CHAT_BUFFERED: &str = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":\"x\"}"}}]},"finish_reason":"tool_calls"}]}"#;

/// How a body's units are written out.
#[derive(Debug, Clone, Copy)]
enum Format {
    /// `data:` events (a Chat stream ends with `[DONE]`).
    Sse,
    Ndjson,
    /// One JSON document.
    Json,
}

impl Format {
    fn content_type(self) -> &'static str {
        match self {
            Format::Sse => "text/event-stream",
            Format::Ndjson => "application/x-ndjson",
            Format::Json => "application/json",
        }
    }

    /// The frames of a body, one per unit.
    fn frames(self, units: &[Value], dialect: EngineDialect) -> Vec<TimedFrame> {
        let mut texts: Vec<String> = units
            .iter()
            .map(|unit| match self {
                Format::Sse => format!("data: {unit}\n\n"),
                Format::Ndjson => format!("{unit}\n"),
                Format::Json => unit.to_string(),
            })
            .collect();
        if matches!(self, Format::Sse) && dialect == EngineDialect::Chat {
            texts.push("data: [DONE]\n\n".to_owned());
        }
        texts
            .into_iter()
            .enumerate()
            .map(|(i, text)| TimedFrame {
                t_us: 1000 * i as u64,
                bytes: Bytes::from(text),
            })
            .collect()
    }
}

/// One healthy exchange: its dialect, request, body format and units.
struct Exchange {
    dialect: EngineDialect,
    request: String,
    format: Format,
    units: Vec<Value>,
}

/// The JSON units of a body: each SSE event's data, each NDJSON line, or the document.
fn units_of(body: &str, format: Format) -> Vec<Value> {
    let texts: Vec<&str> = match format {
        Format::Sse => body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .filter(|data| *data != "[DONE]")
            .collect(),
        Format::Ndjson => body
            .lines()
            .filter(|line| !line.trim().is_empty())
            .collect(),
        Format::Json => vec![body],
    };
    texts
        .into_iter()
        .map(|text| serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}")))
        .collect()
}

fn exchanges() -> Vec<Exchange> {
    let mut all = vec![
        Exchange {
            dialect: EngineDialect::Chat,
            request: CHAT_REQUEST.to_owned(),
            format: Format::Sse,
            units: CHAT_EVENTS
                .iter()
                .map(|text| serde_json::from_str(text).unwrap_or(Value::Null))
                .collect(),
        },
        Exchange {
            dialect: EngineDialect::Chat,
            request: CHAT_REQUEST.replace(r#""stream":true,"#, ""),
            format: Format::Json,
            units: units_of(CHAT_BUFFERED, Format::Json),
        },
    ];
    let fixtures = [
        (
            EngineDialect::Responses,
            include_str!("../../tests/fixtures/responses_pass_single_call_sse/request.json"),
            include_str!("../../tests/fixtures/responses_pass_single_call_sse/response.sse"),
            Format::Sse,
        ),
        (
            EngineDialect::Responses,
            include_str!("../../tests/fixtures/responses_pass_second_turn_json/request.json"),
            include_str!("../../tests/fixtures/responses_pass_second_turn_json/response.json"),
            Format::Json,
        ),
        (
            EngineDialect::Anthropic,
            include_str!("../../tests/fixtures/anthropic_pair_parallel_sse/request.json"),
            include_str!("../../tests/fixtures/anthropic_pair_parallel_sse/response.sse"),
            Format::Sse,
        ),
        (
            EngineDialect::Anthropic,
            include_str!("../../tests/fixtures/anthropic_pair_parallel_json/request.json"),
            include_str!("../../tests/fixtures/anthropic_pair_parallel_json/response.json"),
            Format::Json,
        ),
        (
            EngineDialect::Gemini,
            include_str!("../../tests/fixtures/gemini_pair_parallel_sse/request.json"),
            include_str!("../../tests/fixtures/gemini_pair_parallel_sse/response.sse"),
            Format::Sse,
        ),
        (
            EngineDialect::Gemini,
            include_str!("../../tests/fixtures/gemini_pair_parallel_json/request.json"),
            include_str!("../../tests/fixtures/gemini_pair_parallel_json/response.json"),
            Format::Json,
        ),
        (
            EngineDialect::Ollama,
            include_str!("../../tests/fixtures/ollama_pair_parallel_calls_ndjson/request.json"),
            include_str!("../../tests/fixtures/ollama_pair_parallel_calls_ndjson/response.json"),
            Format::Ndjson,
        ),
        (
            EngineDialect::Ollama,
            include_str!("../../tests/fixtures/ollama_pair_parallel_calls_json/request.json"),
            include_str!("../../tests/fixtures/ollama_pair_parallel_calls_json/response.json"),
            Format::Json,
        ),
        (
            EngineDialect::Bedrock,
            include_str!("../../tests/fixtures/bedrock_pair_parallel_json/request.json"),
            include_str!("../../tests/fixtures/bedrock_pair_parallel_json/response.json"),
            Format::Json,
        ),
        (
            EngineDialect::Mcp,
            include_str!("../../tests/fixtures/mcp_pass_quirkbase_call_sse/request.json"),
            include_str!("../../tests/fixtures/mcp_pass_quirkbase_call_sse/response.sse"),
            Format::Sse,
        ),
        (
            EngineDialect::Mcp,
            include_str!("../../tests/fixtures/mcp_pass_quirkbase_list_json/request.json"),
            include_str!("../../tests/fixtures/mcp_pass_quirkbase_list_json/response.json"),
            Format::Json,
        ),
        (
            EngineDialect::Mcp,
            include_str!("../../tests/fixtures/mcp_pass_quirkbase_unknown_tool_json/request.json"),
            include_str!("../../tests/fixtures/mcp_pass_quirkbase_unknown_tool_json/response.json"),
            Format::Json,
        ),
    ];
    for (dialect, request, body, format) in fixtures {
        all.push(Exchange {
            dialect,
            request: request.to_owned(),
            format,
            units: units_of(body, format),
        });
    }
    all
}

/// JSON pointers to every value inside `value`, itself included.
fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                let key = key.replace('~', "~0").replace('/', "~1");
                pointers(inner, format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                pointers(inner, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

/// Values to put where another was: a scalar, an array (neither can be indexed by key) and null.
fn odd_values() -> [Value; 3] {
    [json!(7), json!([1, {"index": 0}]), Value::Null]
}

/// Runs every quirk over one body, recorded and live (the live body in two pieces per frame);
/// a panic anywhere fails the calling test.
fn run_every_quirk(
    dialect: EngineDialect,
    request: &[u8],
    content_type: &str,
    frames: &[TimedFrame],
) {
    let head = ResponseHead {
        status: 200,
        content_type: Some(content_type.to_owned()),
        content_encoding: None,
        ..ResponseHead::default()
    };
    // A quirk of another dialect returns at once: running it would only cost time.
    let quirks = QuirkId::ALL
        .into_iter()
        .filter(|quirk| quirk.dialect() == dialect);
    for quirk in quirks {
        let _ = apply(&[quirk], dialect, request, &head, frames);
        if let Ok(mut live) = LiveQuirks::new(&[quirk], dialect, request, &head, 1 << 20) {
            for frame in frames {
                let (a, b) = frame.bytes.split_at(frame.bytes.len() / 2);
                let _ = live.push(a);
                let _ = live.push(b);
            }
            let _ = live.finish();
        }
    }
}

/// Both attacks reach every quirk: its dialect has healthy exchanges and arbitrary bodies.
#[test]
fn every_quirk_is_attacked() {
    let attacked: Vec<EngineDialect> = exchanges().iter().map(|e| e.dialect).collect();
    for quirk in QuirkId::ALL {
        let dialect = quirk.dialect();
        assert!(
            attacked.contains(&dialect),
            "{quirk}: no healthy exchange of its dialect"
        );
        assert!(
            DIALECTS.contains(&dialect),
            "{quirk}: its dialect gets no arbitrary bodies"
        );
    }
}

#[test]
fn every_value_of_every_event_swapped_for_another_type_never_panics() {
    let mut bodies = 0usize;
    for exchange in exchanges() {
        for (unit, value) in exchange.units.iter().enumerate() {
            let mut at = Vec::new();
            pointers(value, String::new(), &mut at);
            for pointer in at {
                for odd in odd_values() {
                    let mut units = exchange.units.clone();
                    let slot = units[unit]
                        .pointer_mut(&pointer)
                        .expect("a pointer just listed");
                    if *slot == odd {
                        continue;
                    }
                    *slot = odd;
                    let frames = exchange.format.frames(&units, exchange.dialect);
                    run_every_quirk(
                        exchange.dialect,
                        exchange.request.as_bytes(),
                        exchange.format.content_type(),
                        &frames,
                    );
                    bodies += 1;
                }
            }
        }
    }
    // The attack covers what it claims: thousands of bodies, not a handful.
    assert!(bodies > 1000, "{bodies} bodies");
}

/// Keys the rewriters read, so arbitrary objects reach their deeper branches.
const KEYS: [&str; 24] = [
    "choices",
    "delta",
    "tool_calls",
    "function",
    "arguments",
    "name",
    "index",
    "finish_reason",
    "id",
    "usage",
    "message",
    "content",
    "type",
    "item",
    "output",
    "content_block",
    "input",
    "partial_json",
    "candidates",
    "parts",
    "functionCall",
    "args",
    "done",
    "stop_reason",
];

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop_oneof![
            Just("tool_calls"),
            Just("stop"),
            Just("{\"a\":"),
            Just(""),
            Just("function_call")
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(&KEYS[..]), inner), 0..6).prop_map(
                |pairs| Value::Object(
                    pairs
                        .into_iter()
                        .map(|(key, value)| (key.to_owned(), value))
                        .collect()
                )
            ),
        ]
    })
}

const DIALECTS: [EngineDialect; 7] = [
    EngineDialect::Chat,
    EngineDialect::Responses,
    EngineDialect::Anthropic,
    EngineDialect::Gemini,
    EngineDialect::Ollama,
    EngineDialect::Bedrock,
    EngineDialect::Mcp,
];

/// A tools/call request: MCP's quirks rewrite only the answers to one.
const MCP_REQUEST: &str =
    include_str!("../../tests/fixtures/mcp_pass_quirkbase_call_sse/request.json");

/// The request the arbitrary bodies answer: a JSON-RPC call for MCP, a Chat request otherwise.
fn request_for(dialect: EngineDialect) -> &'static [u8] {
    match dialect {
        EngineDialect::Mcp => MCP_REQUEST.as_bytes(),
        _ => CHAT_REQUEST.as_bytes(),
    }
}

const FORMATS: [Format; 3] = [Format::Sse, Format::Ndjson, Format::Json];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn arbitrary_json_events_never_panic(
        units in prop::collection::vec(arbitrary_json(), 1..6),
        dialect in prop::sample::select(&DIALECTS[..]),
        format in prop::sample::select(&FORMATS[..]),
    ) {
        let frames = format.frames(&units, dialect);
        run_every_quirk(dialect, request_for(dialect), format.content_type(), &frames);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        frames in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 1..5),
        dialect in prop::sample::select(&DIALECTS[..]),
        format in prop::sample::select(&FORMATS[..]),
    ) {
        let frames: Vec<TimedFrame> = frames
            .into_iter()
            .map(|bytes| TimedFrame { t_us: 0, bytes: Bytes::from(bytes) })
            .collect();
        run_every_quirk(dialect, request_for(dialect), format.content_type(), &frames);
        // Bedrock's event-stream body is binary: the quirks that read it see raw bytes too.
        run_every_quirk(dialect, request_for(dialect), "application/vnd.amazon.eventstream", &frames);
    }
}
