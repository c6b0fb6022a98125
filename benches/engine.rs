//! Engine benchmarks: MB/s of SSE checked (framing, reassembly, fragment and complete-stage
//! rules, schema validation), ns per buffered tool call validated, and MB/s of requests whose
//! `tools` an earlier exchange already sent (an agent's every turn) read at an exchange's start,
//! and MB/s of an Anthropic, Responses or Gemini agent's request (its whole tool history) read at
//! an exchange's start.
//! Run with `cargo bench --bench engine`.

// Test and bench code may stop loudly: the deny lints in Cargo.toml guard the product code.
#![allow(clippy::expect_used, clippy::panic, clippy::unreachable)]

use std::sync::Arc;

use divan::counter::{BytesCount, ItemsCount};
use serde_json::json;
use tooltap::engine::{BodyEnd, Dialect, EngineConfig, Exchange, ResponseHead, SchemaCache};

fn main() {
    divan::main();
}

fn request(stream: bool) -> Vec<u8> {
    json!({
        "model": "m", "stream": stream, "messages": [{"role":"user","content":"x"}],
        "tools": [{"type":"function","function":{"name":"get_weather","parameters":{
            "type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},
            "required":["city"],"additionalProperties":false}}}]
    })
    .to_string()
    .into_bytes()
}

/// A stream of `calls` parallel tool calls, each argument string cut into 4-byte fragments,
/// interleaved round-robin, as OpenAI sends them (one item per chunk).
fn sse_body(calls: usize) -> Vec<u8> {
    let arguments = r#"{"city":"San Francisco, California, United States","unit":"c"}"#;
    let mut out = String::new();
    let mut event = |value: serde_json::Value| out.push_str(&format!("data: {value}\n\n"));
    for index in 0..calls {
        event(
            json!({"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[
            {"index":index,"id":format!("call_{index}"),"type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}),
        );
    }
    let pieces: Vec<&str> = arguments
        .as_bytes()
        .chunks(4)
        .map(|c| std::str::from_utf8(c).unwrap_or(""))
        .collect();
    for piece in &pieces {
        for index in 0..calls {
            event(
                json!({"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[
                {"index":index,"function":{"arguments":piece}}]},"finish_reason":null}]}),
            );
        }
    }
    event(
        json!({"object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
    );
    out.push_str("data: [DONE]\n\n");
    out.into_bytes()
}

fn buffered_body(calls: usize) -> Vec<u8> {
    let tool_calls: Vec<_> = (0..calls)
        .map(|i| json!({"id":format!("call_{i}"),"type":"function","function":{"name":"get_weather","arguments":r#"{"city":"Paris","unit":"c"}"#}}))
        .collect();
    json!({"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":tool_calls},"finish_reason":"tool_calls"}]})
        .to_string()
        .into_bytes()
}

/// A 200 answer's head of `content_type`.
fn answered(content_type: &str) -> ResponseHead {
    ResponseHead {
        status: 200,
        content_type: Some(content_type.into()),
        content_encoding: None,
        headers: Vec::new(),
    }
}

#[divan::bench(args = [1, 4, 16])]
fn sse_checked(bencher: divan::Bencher, calls: usize) {
    let config = Arc::new(EngineConfig::default());
    let cache = SchemaCache::default();
    let request = request(true);
    let body = sse_body(calls);
    bencher.counter(BytesCount::new(body.len())).bench(|| {
        let mut exchange = Exchange::new(&config, &cache, &request);
        exchange.response_head(answered("text/event-stream"));
        // Network-sized frames, as the proxy's tee hands them over.
        for frame in body.chunks(1400) {
            exchange.feed(divan::black_box(frame));
        }
        exchange.finish(BodyEnd::Complete)
    });
}

#[divan::bench(args = [1, 64])]
fn buffered_tool_calls_validated(bencher: divan::Bencher, calls: usize) {
    let config = Arc::new(EngineConfig::default());
    let cache = SchemaCache::default();
    let request = request(false);
    let body = buffered_body(calls);
    bencher.counter(ItemsCount::new(calls)).bench(|| {
        let mut exchange = Exchange::new(&config, &cache, &request);
        exchange.response_head(answered("application/json"));
        exchange.feed(divan::black_box(&body));
        exchange.finish(BodyEnd::Complete)
    });
}

/// The description of the benches' tools, each a coding agent's `read_file`.
const READ_FILE: &str = "Reads a file of the workspace and returns its text, or an error.";

/// A `read_file` tool's parameters: a path, an offset and a limit (`closed`: no other property,
/// which Gemini's schema dialect does not take).
fn read_file_parameters(closed: bool) -> serde_json::Value {
    let mut schema = json!({"type":"object","properties":{
        "path":{"type":"string","description":"Path from the workspace root"},
        "offset":{"type":"integer","minimum":0},"limit":{"type":"integer","minimum":1}},
        "required":["path"]});
    if closed {
        schema["additionalProperties"] = json!(false);
    }
    schema
}

/// A workspace file of about 4 KiB, what a coding agent's tool result holds.
fn agent_file() -> String {
    "fn main() { println!(\"hello\"); }\n".repeat(4096 / 33)
}

/// A request declaring `tools` function tools, each with a schema of a few properties (about
/// 340 bytes a tool: 64 tools make a coding agent's ~22 KB array).
fn request_with_tools(tools: usize) -> Vec<u8> {
    let declared: Vec<_> = (0..tools)
        .map(|i| {
            json!({"type":"function","function":{"name":format!("tool_{i}"),
                "description":READ_FILE,"parameters":read_file_parameters(true)}})
        })
        .collect();
    json!({"model":"m","stream":true,"messages":[{"role":"user","content":"x"}],"tools":declared})
        .to_string()
        .into_bytes()
}

#[divan::bench(args = [1, 64])]
fn request_start_with_repeated_tools(bencher: divan::Bencher, tools: usize) {
    let config = Arc::new(EngineConfig::default());
    let cache = SchemaCache::default();
    let request = request_with_tools(tools);
    // One exchange answered 200 admits the array to the cache, as an agent's first turn does.
    let mut first = Exchange::new(&config, &cache, &request);
    first.response_head(answered("text/event-stream"));
    first.finish(BodyEnd::Complete);
    bencher
        .counter(BytesCount::new(request.len()))
        .bench(|| Exchange::new(&config, &cache, divan::black_box(&request)));
}

/// An Anthropic Messages request of a coding agent `turns` tool round trips in: each turn an
/// assistant `tool_use` (a `read_file` call) answered by a user `tool_result` holding a 4 KiB
/// file, under 16 declared tools (~6 KB). What every later turn sends again, whole.
fn anthropic_agent_request(turns: usize) -> Vec<u8> {
    let file = agent_file();
    let mut messages = vec![json!({"role":"user","content":"Fix the failing test."})];
    for turn in 0..turns {
        let id = format!("toolu_{turn:04}");
        messages.push(json!({"role":"assistant","content":[
            {"type":"text","text":"Let me read the file."},
            {"type":"tool_use","id":id,"name":"read_file","input":{"path":format!("src/f{turn}.rs")}}]}));
        messages.push(json!({"role":"user","content":[
            {"type":"tool_result","tool_use_id":id,"content":[{"type":"text","text":file}]}]}));
    }
    let tools: Vec<_> = (0..16)
        .map(|i| {
            json!({"name":format!("tool_{i}"),"description":READ_FILE,
                "input_schema":read_file_parameters(true)})
        })
        .collect();
    json!({"model":"m","max_tokens":1024,"stream":true,"messages":messages,"tools":tools})
        .to_string()
        .into_bytes()
}

/// Times an exchange's start for `request` in `dialect`, after a first exchange answered 200
/// admitted its `tools` to the cache, as an agent's first turn does.
fn bench_later_turns(bencher: divan::Bencher, dialect: Dialect, request: &[u8]) {
    let config = Arc::new(EngineConfig::default());
    let cache = SchemaCache::default();
    let mut first = Exchange::with_dialect(&config, &cache, dialect, request);
    first.response_head(answered("text/event-stream"));
    first.finish(BodyEnd::Complete);
    bencher
        .counter(BytesCount::new(request.len()))
        .bench(|| Exchange::with_dialect(&config, &cache, dialect, divan::black_box(request)));
}

#[divan::bench(args = [1, 50])]
fn anthropic_request_start_with_history(bencher: divan::Bencher, turns: usize) {
    bench_later_turns(bencher, Dialect::Anthropic, &anthropic_agent_request(turns));
}

/// A Responses API request of a coding agent `turns` tool round trips in: each turn a
/// `function_call` answered by a `function_call_output` holding a 4 KiB file, under 16 declared
/// function tools (~5 KB), the whole `input` sent again every turn.
fn responses_agent_request(turns: usize) -> Vec<u8> {
    let file = agent_file();
    let mut input = vec![json!({"role":"user","content":"Fix the failing test."})];
    for turn in 0..turns {
        let id = format!("call_{turn:04}");
        input.push(
            json!({"type":"function_call","call_id":id,"name":"read_file",
            "arguments":format!("{{\"path\":\"src/f{turn}.rs\"}}")}),
        );
        input.push(json!({"type":"function_call_output","call_id":id,"output":file}));
    }
    let tools: Vec<_> = (0..16)
        .map(|i| {
            json!({"type":"function","name":format!("tool_{i}"),"description":READ_FILE,
                "parameters":read_file_parameters(true)})
        })
        .collect();
    json!({"model":"m","stream":true,"input":input,"tools":tools})
        .to_string()
        .into_bytes()
}

#[divan::bench(args = [1, 50])]
fn responses_request_start_with_history(bencher: divan::Bencher, turns: usize) {
    bench_later_turns(bencher, Dialect::Responses, &responses_agent_request(turns));
}

/// A Gemini `generateContent` request of a coding agent `turns` tool round trips in: each turn a
/// `functionCall` answered by a `functionResponse` holding a 4 KiB file, under 16 function
/// declarations (~5 KB), the whole `contents` sent again every turn.
fn gemini_agent_request(turns: usize) -> Vec<u8> {
    let file = agent_file();
    let mut contents = vec![json!({"role":"user","parts":[{"text":"Fix the failing test."}]})];
    for turn in 0..turns {
        let path = format!("src/f{turn}.rs");
        contents.push(json!({"role":"model","parts":[
            {"functionCall":{"name":"tool_0","args":{"path":path}}}]}));
        contents.push(json!({"role":"user","parts":[
            {"functionResponse":{"name":"tool_0","response":{"content":file}}}]}));
    }
    let declarations: Vec<_> = (0..16)
        .map(|i| {
            json!({"name":format!("tool_{i}"),"description":READ_FILE,
                "parameters":read_file_parameters(false)})
        })
        .collect();
    json!({"contents":contents,"tools":[{"functionDeclarations":declarations}]})
        .to_string()
        .into_bytes()
}

#[divan::bench(args = [1, 50])]
fn gemini_request_start_with_history(bencher: divan::Bencher, turns: usize) {
    bench_later_turns(bencher, Dialect::Gemini, &gemini_agent_request(turns));
}
