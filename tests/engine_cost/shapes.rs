//! Adversarial shapes, one generator per shape and dialect, each making an exchange whose size
//! grows in proportion to `n`: many indexes, many choices, many blocks and items, names on
//! every fragment, deep nesting, many tools, big grammars and patterns, huge single values.
//!
//! A new dialect joins by adding its arm to [`shapes`] (the match is exhaustive, so it cannot be
//! forgotten); every test in this binary then runs its shapes.

use tooltap::engine::Dialect;

/// One exchange to feed: the request, and the response body as the server sends it (SSE, in
/// 16 KiB frames, or one JSON body).
pub struct Case {
    pub dialect: Dialect,
    pub request: Vec<u8>,
    pub content_type: &'static str,
    pub frames: Vec<Vec<u8>>,
    /// The request path with its query, for a dialect that reads it (Gemini's stream-ness and
    /// framing are in the path); `None`: the engine is started from the body alone.
    pub path: Option<&'static str>,
}

impl Case {
    pub fn input_bytes(&self) -> usize {
        self.request.len() + self.frames.iter().map(Vec::len).sum::<usize>()
    }
}

/// A generator: `n` is the shape's size unit (calls, choices, blocks, tools, bytes...).
pub struct Shape {
    pub name: &'static str,
    pub make: fn(usize) -> Case,
    /// The smaller of the two sizes measured (the larger is four times it).
    pub n: usize,
    /// Whether what it grows is reassembly state (counted by the engine and bounded by
    /// `max_reassembled`); request-side shapes grow compiled schemas instead, which the schema
    /// cache weighs and bounds (`inspect.schema_compile_bytes`, `inspect.schema_cache_bytes`).
    pub reassembles: bool,
    /// Whether `--inject`'s quirks are run over it too (the shapes that multiply calls,
    /// blocks, items and fragments).
    pub quirked: bool,
}

/// Every shape of a dialect.
pub fn shapes(dialect: Dialect) -> &'static [Shape] {
    match dialect {
        Dialect::Chat => CHAT,
        Dialect::Responses => RESPONSES,
        Dialect::Anthropic => ANTHROPIC,
        Dialect::Gemini => GEMINI,
        Dialect::Ollama => OLLAMA,
        Dialect::Bedrock => BEDROCK,
        Dialect::Mcp => MCP,
    }
}

const FRAME: usize = 16 * 1024;

fn frames(body: &str) -> Vec<Vec<u8>> {
    body.as_bytes().chunks(FRAME).map(<[u8]>::to_vec).collect()
}

/// `data:` events, each with its `event:` line when `named` (Responses, Anthropic).
fn sse(events: impl IntoIterator<Item = String>, named: bool) -> Vec<Vec<u8>> {
    let mut body = String::new();
    for data in events {
        if named {
            let kind = serde_json::from_str::<serde_json::Value>(&data)
                .ok()
                .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned))
                .unwrap_or_default();
            body.push_str(&format!("event: {kind}\n"));
        }
        body.push_str("data: ");
        body.push_str(&data);
        body.push_str("\n\n");
    }
    frames(&body)
}

fn stream_case(dialect: Dialect, request: String, events: Vec<String>) -> Case {
    let named = matches!(dialect, Dialect::Responses | Dialect::Anthropic);
    Case {
        dialect,
        request: request.into_bytes(),
        content_type: "text/event-stream",
        frames: sse(events, named),
        path: None,
    }
}

/// JSON text for a string literal.
fn quoted(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

// ---- Chat Completions -------------------------------------------------------------------

const CHAT: &[Shape] = &[
    Shape {
        name: "many_indexes",
        make: chat_many_indexes,
        n: 800,
        reassembles: true,
        quirked: true,
    },
    Shape {
        name: "many_choices",
        make: chat_many_choices,
        n: 800,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "legacy_names_on_every_fragment",
        make: chat_legacy_names,
        n: 1_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "names_on_every_fragment",
        make: chat_names_on_every_fragment,
        n: 1_000,
        reassembles: true,
        quirked: true,
    },
    Shape {
        name: "huge_single_value",
        make: chat_huge_value,
        n: 100_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "deep_nesting",
        make: chat_deep_nesting,
        n: 10_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "many_tools",
        make: chat_many_tools,
        n: 100,
        reassembles: false,
        quirked: false,
    },
    Shape {
        name: "big_patterns",
        make: chat_big_patterns,
        n: 20,
        reassembles: false,
        quirked: false,
    },
    Shape {
        name: "big_grammar",
        make: chat_big_grammar,
        n: 400,
        reassembles: false,
        quirked: false,
    },
    Shape {
        name: "buffered_many_choices",
        make: chat_buffered_many_choices,
        n: 1_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "buffered_many_calls",
        make: chat_buffered_many_calls,
        n: 1_000,
        reassembles: true,
        quirked: false,
    },
];

fn chat_request(tools: &str) -> String {
    format!(
        r#"{{"model":"m","stream":true,"messages":[{{"role":"user","content":"hi"}}],"tools":[{tools}]}}"#
    )
}

const CHAT_TOOL: &str =
    r#"{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}"#;

fn chat_end(events: &mut Vec<String>, reason: &str) {
    events.push(format!(
        r#"{{"choices":[{{"index":0,"delta":{{}},"finish_reason":"{reason}"}}]}}"#
    ));
    events.push("[DONE]".to_owned());
}

fn chat_many_indexes(n: usize) -> Case {
    let mut events: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":{i},"id":"c{i}","type":"function","function":{{"name":"f","arguments":"{{}}"}}}}]}}}}]}}"#))
        .collect();
    chat_end(&mut events, "tool_calls");
    stream_case(Dialect::Chat, chat_request(CHAT_TOOL), events)
}

fn chat_many_choices(n: usize) -> Case {
    let mut events = Vec::new();
    for start in (0..n).step_by(64) {
        let entries: Vec<String> = (start..(start + 64).min(n))
            .map(|k| format!(r#"{{"index":{k},"delta":{{}}}}"#))
            .collect();
        events.push(format!(r#"{{"choices":[{}]}}"#, entries.join(",")));
    }
    events.push("[DONE]".to_owned());
    stream_case(Dialect::Chat, chat_request(CHAT_TOOL), events)
}

fn chat_legacy_names(n: usize) -> Case {
    let request = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],"functions":[{"name":"f","parameters":{"type":"object"}}]}"#;
    let mut events = vec![
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","function_call":{"name":"f","arguments":"{\"a\":\""}}}]}"#.to_owned(),
    ];
    events.extend((0..n).map(|_| {
        r#"{"choices":[{"index":0,"delta":{"function_call":{"name":"f","arguments":"xxxxxxxxxxxxxxxx"}}}]}"#.to_owned()
    }));
    events.push(
        r#"{"choices":[{"index":0,"delta":{"function_call":{"arguments":"\"}"}}}]}"#.to_owned(),
    );
    chat_end(&mut events, "function_call");
    stream_case(Dialect::Chat, request.to_owned(), events)
}

fn chat_names_on_every_fragment(n: usize) -> Case {
    let mut events = vec![
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":\""}}]}}]}"#.to_owned(),
    ];
    events.extend((0..n).map(|_| {
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"xxxxxxxxxxxxxxxx"}}]}}]}"#.to_owned()
    }));
    events.push(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"}"}}]}}]}"#.to_owned());
    chat_end(&mut events, "tool_calls");
    stream_case(Dialect::Chat, chat_request(CHAT_TOOL), events)
}

fn chat_huge_value(n: usize) -> Case {
    let arguments = quoted(&format!(r#"{{"a":"{}"}}"#, "x".repeat(n)));
    let mut events = vec![format!(
        r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"id":"c","type":"function","function":{{"name":"f","arguments":{arguments}}}}}]}}}}]}}"#
    )];
    chat_end(&mut events, "tool_calls");
    stream_case(Dialect::Chat, chat_request(CHAT_TOOL), events)
}

fn chat_deep_nesting(n: usize) -> Case {
    let text = format!(r#"{{"a":{}{}}}"#, "[".repeat(n), "]".repeat(n));
    let mut events = vec![
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":""}}]}}]}"#.to_owned(),
    ];
    events.extend(text.as_bytes().chunks(64).map(|piece| {
        let piece = quoted(std::str::from_utf8(piece).unwrap_or_default());
        format!(r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"function":{{"arguments":{piece}}}}}]}}}}]}}"#)
    }));
    chat_end(&mut events, "tool_calls");
    stream_case(Dialect::Chat, chat_request(CHAT_TOOL), events)
}

fn chat_many_tools(n: usize) -> Case {
    let tools: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"type":"function","function":{{"name":"f{i}","parameters":{{"type":"object","properties":{{"a":{{"type":"string"}},"b":{{"type":"integer","minimum":0}}}},"required":["a"]}}}}}}"#))
        .collect();
    let mut events = vec![
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f0","arguments":"{\"a\":\"x\"}"}}]}}]}"#.to_owned(),
    ];
    chat_end(&mut events, "tool_calls");
    stream_case(Dialect::Chat, chat_request(&tools.join(",")), events)
}

/// `n` properties, each with its own `pattern`.
fn pattern_schema(n: usize) -> String {
    let properties: Vec<String> = (0..n)
        .map(|i| format!(r#""p{i}":{{"type":"string","pattern":"^(?:ab|cd{i})+[a-z]{{1,8}}$"}}"#))
        .collect();
    format!(
        r#"{{"type":"object","properties":{{{}}}}}"#,
        properties.join(",")
    )
}

fn chat_big_patterns(n: usize) -> Case {
    let tool = format!(
        r#"{{"type":"function","function":{{"name":"f","parameters":{}}}}}"#,
        pattern_schema(n)
    );
    let mut events = vec![
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":"{\"p0\":\"abab\"}"}}]}}]}"#.to_owned(),
    ];
    chat_end(&mut events, "tool_calls");
    stream_case(Dialect::Chat, chat_request(&tool), events)
}

/// A regex grammar with `n` alternatives.
fn grammar(n: usize) -> String {
    let alternatives: Vec<String> = (0..n).map(|i| format!("word{i}")).collect();
    format!("(?:{})+", alternatives.join("|"))
}

fn chat_big_grammar(n: usize) -> Case {
    let tool = format!(
        r#"{{"type":"custom","custom":{{"name":"g","format":{{"type":"grammar","grammar":{{"syntax":"regex","definition":{}}}}}}}}}"#,
        quoted(&grammar(n))
    );
    let mut events = vec![
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"custom","custom":{"name":"g","input":"word1word2"}}]}}]}"#.to_owned(),
    ];
    chat_end(&mut events, "tool_calls");
    stream_case(Dialect::Chat, chat_request(&tool), events)
}

fn chat_buffered_many_choices(n: usize) -> Case {
    let choices: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"index":{i},"message":{{"role":"assistant","content":null}},"finish_reason":"stop"}}"#))
        .collect();
    chat_buffered(&format!(
        r#"{{"object":"chat.completion","choices":[{}]}}"#,
        choices.join(",")
    ))
}

/// A buffered Chat completion with `body`.
fn chat_buffered(body: &str) -> Case {
    Case {
        dialect: Dialect::Chat,
        request: chat_request(CHAT_TOOL)
            .replace(r#""stream":true"#, r#""stream":false"#)
            .into_bytes(),
        content_type: "application/json",
        frames: frames(body),
        path: None,
    }
}

fn chat_buffered_many_calls(n: usize) -> Case {
    let calls: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"id":"c{i}","type":"function","function":{{"name":"f","arguments":"{{}}"}}}}"#
            )
        })
        .collect();
    chat_buffered(&format!(
        r#"{{"object":"chat.completion","choices":[{{"index":0,"message":{{"role":"assistant","content":null,"tool_calls":[{}]}},"finish_reason":"tool_calls"}}]}}"#,
        calls.join(",")
    ))
}

// ---- Responses API ----------------------------------------------------------------------

const RESPONSES: &[Shape] = &[
    Shape {
        name: "many_items",
        make: responses_many_items,
        n: 400,
        reassembles: true,
        quirked: true,
    },
    Shape {
        name: "deltas_on_every_fragment",
        make: responses_many_deltas,
        n: 1_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "huge_single_value",
        make: responses_huge_value,
        n: 100_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "deep_nesting",
        make: responses_deep_nesting,
        n: 10_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "many_tools",
        make: responses_many_tools,
        n: 100,
        reassembles: false,
        quirked: false,
    },
    Shape {
        name: "big_patterns",
        make: responses_big_patterns,
        n: 20,
        reassembles: false,
        quirked: false,
    },
    Shape {
        name: "big_grammar",
        make: responses_big_grammar,
        n: 400,
        reassembles: false,
        quirked: false,
    },
];

fn responses_request(tools: &str) -> String {
    format!(r#"{{"model":"m","stream":true,"input":"hi","tools":[{tools}]}}"#)
}

const RESPONSES_TOOL: &str = r#"{"type":"function","name":"f","parameters":{"type":"object"}}"#;

/// Numbers `sequence_number` across a stream.
struct Seq(u64);

impl Seq {
    fn next(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }
}

fn responses_item(events: &mut Vec<String>, seq: &mut Seq, index: usize, deltas: &[String]) {
    events.push(format!(
        r#"{{"type":"response.output_item.added","sequence_number":{},"output_index":{index},"item":{{"type":"function_call","id":"fc_{index}","call_id":"call_{index}","name":"f","arguments":""}}}}"#,
        seq.next()
    ));
    for delta in deltas {
        events.push(format!(
            r#"{{"type":"response.function_call_arguments.delta","sequence_number":{},"item_id":"fc_{index}","output_index":{index},"delta":{}}}"#,
            seq.next(),
            quoted(delta)
        ));
    }
    let whole = quoted(&deltas.concat());
    events.push(format!(
        r#"{{"type":"response.output_item.done","sequence_number":{},"output_index":{index},"item":{{"type":"function_call","id":"fc_{index}","call_id":"call_{index}","name":"f","arguments":{whole}}}}}"#,
        seq.next()
    ));
}

fn responses_end(events: &mut Vec<String>, seq: &mut Seq) {
    events.push(format!(
        r#"{{"type":"response.completed","sequence_number":{},"response":{{"id":"r","object":"response","model":"m","status":"completed","output":[]}}}}"#,
        seq.next()
    ));
}

fn responses_stream(tools: &str, calls: &[Vec<String>]) -> Case {
    let mut events = Vec::new();
    let mut seq = Seq(0);
    for (index, deltas) in calls.iter().enumerate() {
        responses_item(&mut events, &mut seq, index, deltas);
    }
    responses_end(&mut events, &mut seq);
    stream_case(Dialect::Responses, responses_request(tools), events)
}

fn responses_many_items(n: usize) -> Case {
    let calls = vec![vec!["{}".to_owned()]; n];
    responses_stream(RESPONSES_TOOL, &calls)
}

fn responses_many_deltas(n: usize) -> Case {
    let mut deltas = vec![r#"{"a":""#.to_owned()];
    deltas.extend((0..n).map(|_| "xxxxxxxxxxxxxxxx".to_owned()));
    deltas.push(r#""}"#.to_owned());
    responses_stream(RESPONSES_TOOL, &[deltas])
}

fn responses_huge_value(n: usize) -> Case {
    responses_stream(
        RESPONSES_TOOL,
        &[vec![format!(r#"{{"a":"{}"}}"#, "x".repeat(n))]],
    )
}

fn responses_deep_nesting(n: usize) -> Case {
    let text = format!(r#"{{"a":{}{}}}"#, "[".repeat(n), "]".repeat(n));
    let deltas: Vec<String> = text
        .as_bytes()
        .chunks(64)
        .map(|piece| String::from_utf8_lossy(piece).into_owned())
        .collect();
    responses_stream(RESPONSES_TOOL, &[deltas])
}

fn responses_many_tools(n: usize) -> Case {
    let tools: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"type":"function","name":"f{i}","parameters":{{"type":"object","properties":{{"a":{{"type":"string"}},"b":{{"type":"integer","minimum":0}}}},"required":["a"]}}}}"#))
        .collect();
    responses_stream(&tools.join(","), &[vec![r#"{"a":"x"}"#.to_owned()]])
}

fn responses_big_patterns(n: usize) -> Case {
    let tool = format!(
        r#"{{"type":"function","name":"f","parameters":{}}}"#,
        pattern_schema(n)
    );
    responses_stream(&tool, &[vec![r#"{"p0":"abab"}"#.to_owned()]])
}

fn responses_big_grammar(n: usize) -> Case {
    let tools = format!(
        r#"{RESPONSES_TOOL},{{"type":"custom","name":"g","format":{{"type":"grammar","syntax":"regex","definition":{}}}}}"#,
        quoted(&grammar(n))
    );
    responses_stream(&tools, &[vec!["{}".to_owned()]])
}

// ---- Anthropic Messages -----------------------------------------------------------------

const ANTHROPIC: &[Shape] = &[
    Shape {
        name: "many_blocks",
        make: anthropic_many_blocks,
        n: 1_500,
        reassembles: true,
        quirked: true,
    },
    Shape {
        name: "deltas_on_every_fragment",
        make: anthropic_many_deltas,
        n: 1_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "huge_single_value",
        make: anthropic_huge_value,
        n: 100_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "deep_nesting",
        make: anthropic_deep_nesting,
        n: 10_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "many_tools",
        make: anthropic_many_tools,
        n: 100,
        reassembles: false,
        quirked: false,
    },
    Shape {
        name: "big_patterns",
        make: anthropic_big_patterns,
        n: 20,
        reassembles: false,
        quirked: false,
    },
    Shape {
        name: "many_unknown_block_deltas",
        make: anthropic_unknown_deltas,
        n: 1_500,
        reassembles: true,
        quirked: false,
    },
];

fn anthropic_request(tools: &str) -> String {
    format!(
        r#"{{"model":"m","max_tokens":100,"stream":true,"messages":[{{"role":"user","content":"hi"}}],"tools":[{tools}]}}"#
    )
}

const ANTHROPIC_TOOL: &str = r#"{"name":"f","input_schema":{"type":"object"}}"#;

const MESSAGE_START: &str = r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}"#;

fn anthropic_block(events: &mut Vec<String>, index: usize, pieces: &[String]) {
    events.push(format!(
        r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"tool_use","id":"toolu_{index}","name":"f","input":{{}}}}}}"#
    ));
    for piece in pieces {
        events.push(format!(
            r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"input_json_delta","partial_json":{}}}}}"#,
            quoted(piece)
        ));
    }
    events.push(format!(
        r#"{{"type":"content_block_stop","index":{index}}}"#
    ));
}

fn anthropic_stream(tools: &str, blocks: &[Vec<String>], extra: &[String]) -> Case {
    let mut events = vec![MESSAGE_START.to_owned()];
    for (index, pieces) in blocks.iter().enumerate() {
        anthropic_block(&mut events, index, pieces);
    }
    events.extend(extra.iter().cloned());
    events.push(r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":1}}"#.to_owned());
    events.push(r#"{"type":"message_stop"}"#.to_owned());
    stream_case(Dialect::Anthropic, anthropic_request(tools), events)
}

fn anthropic_many_blocks(n: usize) -> Case {
    anthropic_stream(ANTHROPIC_TOOL, &vec![vec!["{}".to_owned()]; n], &[])
}

fn anthropic_many_deltas(n: usize) -> Case {
    let mut pieces = vec![r#"{"a":""#.to_owned()];
    pieces.extend((0..n).map(|_| "xxxxxxxxxxxxxxxx".to_owned()));
    pieces.push(r#""}"#.to_owned());
    anthropic_stream(ANTHROPIC_TOOL, &[pieces], &[])
}

fn anthropic_huge_value(n: usize) -> Case {
    anthropic_stream(
        ANTHROPIC_TOOL,
        &[vec![format!(r#"{{"a":"{}"}}"#, "x".repeat(n))]],
        &[],
    )
}

fn anthropic_deep_nesting(n: usize) -> Case {
    let text = format!(r#"{{"a":{}{}}}"#, "[".repeat(n), "]".repeat(n));
    let pieces: Vec<String> = text
        .as_bytes()
        .chunks(64)
        .map(|piece| String::from_utf8_lossy(piece).into_owned())
        .collect();
    anthropic_stream(ANTHROPIC_TOOL, &[pieces], &[])
}

fn anthropic_many_tools(n: usize) -> Case {
    let tools: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"name":"f{i}","input_schema":{{"type":"object","properties":{{"a":{{"type":"string"}},"b":{{"type":"integer","minimum":0}}}},"required":["a"]}}}}"#))
        .collect();
    anthropic_stream(&tools.join(","), &[vec![r#"{"a":"x"}"#.to_owned()]], &[])
}

fn anthropic_big_patterns(n: usize) -> Case {
    let tool = format!(r#"{{"name":"f","input_schema":{}}}"#, pattern_schema(n));
    anthropic_stream(&tool, &[vec![r#"{"p0":"abab"}"#.to_owned()]], &[])
}

/// `n` blocks, then `4n` deltas for indexes no block has (each one looked up, none found).
fn anthropic_unknown_deltas(n: usize) -> Case {
    let extra: Vec<String> = (0..4 * n)
        .map(|i| format!(r#"{{"type":"content_block_delta","index":{},"delta":{{"type":"input_json_delta","partial_json":"x"}}}}"#, n + i))
        .collect();
    anthropic_stream(ANTHROPIC_TOOL, &vec![vec!["{}".to_owned()]; n], &extra)
}

// ---- Gemini -----------------------------------------------------------------------------

// ---- Bedrock Converse -------------------------------------------------------------------

const BEDROCK: &[Shape] = &[
    Shape {
        name: "many_tool_blocks",
        make: bedrock_many_blocks,
        n: 500,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "many_input_fragments",
        make: bedrock_many_fragments,
        n: 4_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "many_text_deltas",
        make: bedrock_text_deltas,
        n: 4_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "huge_single_value",
        make: bedrock_huge_value,
        n: 250_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "many_unknown_events",
        make: bedrock_unknown_events,
        n: 4_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "deep_nesting",
        make: bedrock_deep_nesting,
        n: 10_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "buffered_many_calls",
        make: bedrock_buffered_calls,
        n: 1_000,
        reassembles: false,
        quirked: false,
    },
];

const BEDROCK_REQUEST: &str = r#"{"messages":[{"role":"user","content":[{"text":"hi"}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object","properties":{"a":{"type":"string"}}}}}}]}}"#;

/// Event-stream messages (`:event-type`, payload), in 16 KiB frames.
fn bedrock_stream(events: Vec<(&str, String)>) -> Case {
    let mut body = Vec::new();
    for (kind, payload) in &events {
        body.extend(tooltap::engine::framing::event_stream::encode(
            &[
                (":event-type", kind),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            payload.as_bytes(),
        ));
    }
    Case {
        dialect: Dialect::Bedrock,
        request: BEDROCK_REQUEST.as_bytes().to_vec(),
        content_type: "application/vnd.amazon.eventstream",
        frames: body.chunks(FRAME).map(<[u8]>::to_vec).collect(),
        path: Some("/model/m/converse-stream"),
    }
}

fn bedrock_close(mut events: Vec<(&'static str, String)>, stop: &str) -> Case {
    events.push(("messageStop", format!(r#"{{"stopReason":"{stop}"}}"#)));
    events.push((
        "metadata",
        r#"{"usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}"#.to_owned(),
    ));
    bedrock_stream(events)
}

/// `n` toolUse blocks, each started, given one fragment and stopped.
fn bedrock_many_blocks(n: usize) -> Case {
    let mut events = vec![("messageStart", r#"{"role":"assistant"}"#.to_owned())];
    for i in 0..n {
        events.push((
            "contentBlockStart",
            format!(
                r#"{{"contentBlockIndex":{i},"start":{{"toolUse":{{"toolUseId":"tooluse_{i}","name":"f"}}}}}}"#
            ),
        ));
        events.push((
            "contentBlockDelta",
            format!(
                r#"{{"contentBlockIndex":{i},"delta":{{"toolUse":{{"input":"{{\"a\":\"x\"}}"}}}}}}"#
            ),
        ));
        events.push((
            "contentBlockStop",
            format!(r#"{{"contentBlockIndex":{i}}}"#),
        ));
    }
    bedrock_close(events, "tool_use")
}

/// One toolUse block whose input comes in `n` fragments.
fn bedrock_many_fragments(n: usize) -> Case {
    let mut events = vec![
        ("messageStart", r#"{"role":"assistant"}"#.to_owned()),
        (
            "contentBlockStart",
            r#"{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"tooluse_0","name":"f"}}}"#
                .to_owned(),
        ),
        (
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"toolUse":{"input":"{\"a\":\""}}}"#.to_owned(),
        ),
    ];
    for _ in 0..n {
        events.push((
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"toolUse":{"input":"xy"}}}"#.to_owned(),
        ));
    }
    events.push((
        "contentBlockDelta",
        r#"{"contentBlockIndex":0,"delta":{"toolUse":{"input":"\"}"}}}"#.to_owned(),
    ));
    events.push(("contentBlockStop", r#"{"contentBlockIndex":0}"#.to_owned()));
    bedrock_close(events, "tool_use")
}

/// One text block of `n` deltas.
fn bedrock_text_deltas(n: usize) -> Case {
    let mut events = vec![("messageStart", r#"{"role":"assistant"}"#.to_owned())];
    for _ in 0..n {
        events.push((
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"text":"word "}}"#.to_owned(),
        ));
    }
    events.push(("contentBlockStop", r#"{"contentBlockIndex":0}"#.to_owned()));
    bedrock_close(events, "end_turn")
}

/// One `toolUse.input` fragment of `n` bytes.
fn bedrock_huge_value(n: usize) -> Case {
    let events = vec![
        ("messageStart", r#"{"role":"assistant"}"#.to_owned()),
        (
            "contentBlockStart",
            r#"{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"tooluse_0","name":"f"}}}"#
                .to_owned(),
        ),
        (
            "contentBlockDelta",
            format!(
                r#"{{"contentBlockIndex":0,"delta":{{"toolUse":{{"input":"{{\"a\":\"{}\"}}"}}}}}}"#,
                "x".repeat(n)
            ),
        ),
        ("contentBlockStop", r#"{"contentBlockIndex":0}"#.to_owned()),
    ];
    bedrock_close(events, "tool_use")
}

/// `n` events of an `:event-type` Converse does not have (botocore skips them).
fn bedrock_unknown_events(n: usize) -> Case {
    let mut events = vec![("messageStart", r#"{"role":"assistant"}"#.to_owned())];
    for i in 0..n {
        events.push((
            "futureEvent",
            format!(r#"{{"contentBlockIndex":{i},"x":"y"}}"#),
        ));
    }
    bedrock_close(events, "end_turn")
}

/// One toolUse input fragment nested `n` arrays deep (past serde's depth limit: not JSON).
fn bedrock_deep_nesting(n: usize) -> Case {
    let input = format!(r#"{{\"a\":{}{}}}"#, "[".repeat(n), "]".repeat(n));
    let events = vec![
        ("messageStart", r#"{"role":"assistant"}"#.to_owned()),
        (
            "contentBlockStart",
            r#"{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"tooluse_0","name":"f"}}}"#
                .to_owned(),
        ),
        (
            "contentBlockDelta",
            format!(r#"{{"contentBlockIndex":0,"delta":{{"toolUse":{{"input":"{input}"}}}}}}"#),
        ),
        ("contentBlockStop", r#"{"contentBlockIndex":0}"#.to_owned()),
    ];
    bedrock_close(events, "tool_use")
}

/// A buffered answer with `n` toolUse blocks.
fn bedrock_buffered_calls(n: usize) -> Case {
    let blocks: Vec<String> = (0..n)
        .map(|i| {
            format!(r#"{{"toolUse":{{"toolUseId":"tooluse_{i}","name":"f","input":{{"a":"x"}}}}}}"#)
        })
        .collect();
    let body = format!(
        r#"{{"output":{{"message":{{"role":"assistant","content":[{}]}}}},"stopReason":"tool_use","usage":{{"inputTokens":1,"outputTokens":1,"totalTokens":2}},"metrics":{{"latencyMs":1}}}}"#,
        blocks.join(",")
    );
    Case {
        dialect: Dialect::Bedrock,
        request: BEDROCK_REQUEST.as_bytes().to_vec(),
        content_type: "application/json",
        frames: frames(&body),
        path: Some("/model/m/converse"),
    }
}

const GEMINI: &[Shape] = &[
    Shape {
        name: "parallel_calls_across_events",
        make: gemini_calls_across_events,
        n: 1_500,
        reassembles: true,
        quirked: true,
    },
    Shape {
        name: "many_calls_in_one_event",
        make: gemini_calls_in_one_event,
        n: 1_500,
        reassembles: true,
        quirked: true,
    },
    Shape {
        name: "many_tiny_events",
        make: gemini_tiny_events,
        n: 2_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "calls_across_array_elements",
        make: gemini_array_elements,
        n: 1_500,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "repeated_call_growing",
        make: gemini_repeated_call,
        n: 1_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "many_candidates",
        make: gemini_many_candidates,
        n: 1_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "huge_single_value",
        make: gemini_huge_value,
        n: 100_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "deep_nesting",
        make: gemini_deep_nesting,
        n: 10_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "many_tools",
        make: gemini_many_tools,
        n: 100,
        reassembles: false,
        quirked: false,
    },
];

const GEMINI_SSE_PATH: &str = "/v1beta/models/gemini-3-flash:streamGenerateContent?alt=sse";
const GEMINI_ARRAY_PATH: &str = "/v1beta/models/gemini-3-flash:streamGenerateContent";
const GEMINI_TOOL: &str =
    r#"{"name":"f","parameters":{"type":"OBJECT","properties":{"a":{"type":"STRING"}}}}"#;

fn gemini_request(declarations: &str) -> String {
    format!(
        r#"{{"contents":[{{"role":"user","parts":[{{"text":"hi"}}]}}],"tools":[{{"functionDeclarations":[{declarations}]}}]}}"#
    )
}

/// One event: candidate `index` with `parts`, its finish reason when given, and usage.
fn gemini_event(index: usize, parts: &str, finish: Option<&str>) -> String {
    let finish = finish.map_or(String::new(), |f| format!(r#","finishReason":"{f}""#));
    format!(
        r#"{{"candidates":[{{"content":{{"role":"model","parts":[{parts}]}}{finish},"index":{index}}}],"usageMetadata":{{"promptTokenCount":3,"totalTokenCount":9}}}}"#
    )
}

fn gemini_call(id: usize, args: &str) -> String {
    format!(r#"{{"functionCall":{{"id":"call_{id}","name":"f","args":{args}}}}}"#)
}

fn gemini_stream(declarations: &str, events: Vec<String>) -> Case {
    Case {
        path: Some(GEMINI_SSE_PATH),
        ..stream_case(Dialect::Gemini, gemini_request(declarations), events)
    }
}

/// `n` events each carrying one call at part index 0, told apart by id (Gemini 3).
fn gemini_calls_across_events(n: usize) -> Case {
    let mut events: Vec<String> = (0..n)
        .map(|i| gemini_event(0, &gemini_call(i, r#"{"a":"x"}"#), None))
        .collect();
    events.push(gemini_event(0, "", Some("STOP")));
    gemini_stream(GEMINI_TOOL, events)
}

/// One event carrying `n` calls (Gemini 2's parallel calls).
fn gemini_calls_in_one_event(n: usize) -> Case {
    let calls: Vec<String> = (0..n).map(|i| gemini_call(i, r#"{"a":"x"}"#)).collect();
    gemini_stream(
        GEMINI_TOOL,
        vec![gemini_event(0, &calls.join(","), Some("STOP"))],
    )
}

/// `n` one-word text deltas (each compared for a cumulative snapshot).
fn gemini_tiny_events(n: usize) -> Case {
    let mut events: Vec<String> = (0..n)
        .map(|_| gemini_event(0, r#"{"text":"word "}"#, None))
        .collect();
    events.push(gemini_event(0, r#"{"text":"end"}"#, Some("STOP")));
    gemini_stream(GEMINI_TOOL, events)
}

/// `n` calls across the elements of a JSON-array stream (no `alt=sse`).
fn gemini_array_elements(n: usize) -> Case {
    let mut elements: Vec<String> = (0..n)
        .map(|i| gemini_event(0, &gemini_call(i, r#"{"a":"x"}"#), None))
        .collect();
    elements.push(gemini_event(0, "", Some("STOP")));
    Case {
        dialect: Dialect::Gemini,
        request: gemini_request(GEMINI_TOOL).into_bytes(),
        content_type: "application/json",
        frames: frames(&format!("[{}]", elements.join("\r\n,"))),
        path: Some(GEMINI_ARRAY_PATH),
    }
}

/// The same call re-sent `n` times with args of constant size (each compared with the kept
/// one, which it replaces).
fn gemini_repeated_call(n: usize) -> Case {
    let mut events: Vec<String> = (0..n)
        .map(|i| gemini_event(0, &gemini_call(0, &format!(r#"{{"a":"x{i}"}}"#)), None))
        .collect();
    events.push(gemini_event(0, "", Some("STOP")));
    gemini_stream(GEMINI_TOOL, events)
}

/// One event carrying `n` candidates, each with a call and its finish reason.
fn gemini_many_candidates(n: usize) -> Case {
    let candidates: Vec<String> = (0..n)
        .map(|k| {
            format!(
                r#"{{"content":{{"role":"model","parts":[{}]}},"finishReason":"STOP","index":{k}}}"#,
                gemini_call(k, r#"{"a":"x"}"#)
            )
        })
        .collect();
    gemini_stream(
        GEMINI_TOOL,
        vec![format!(r#"{{"candidates":[{}]}}"#, candidates.join(","))],
    )
}

fn gemini_huge_value(n: usize) -> Case {
    let args = format!(r#"{{"a":"{}"}}"#, "x".repeat(n));
    gemini_stream(
        GEMINI_TOOL,
        vec![gemini_event(0, &gemini_call(0, &args), Some("STOP"))],
    )
}

fn gemini_deep_nesting(n: usize) -> Case {
    let args = format!(r#"{{"a":{}{}}}"#, "[".repeat(n), "]".repeat(n));
    gemini_stream(
        GEMINI_TOOL,
        vec![gemini_event(0, &gemini_call(0, &args), Some("STOP"))],
    )
}

/// `n` declarations in the OpenAPI subset (each converted to JSON Schema and compiled).
fn gemini_many_tools(n: usize) -> Case {
    let tools: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"name":"f{i}","parameters":{{"type":"OBJECT","properties":{{"a":{{"type":"STRING"}},"b":{{"type":"INTEGER","minimum":0,"nullable":true}}}},"required":["a"]}}}}"#))
        .collect();
    gemini_stream(
        &tools.join(","),
        vec![gemini_event(
            0,
            r#"{"functionCall":{"name":"f0","args":{"a":"x"}}}"#,
            Some("STOP"),
        )],
    )
}

// ---- Ollama -----------------------------------------------------------------------------

const OLLAMA: &[Shape] = &[
    Shape {
        name: "parallel_calls_across_lines",
        make: ollama_calls_across_lines,
        n: 1_500,
        reassembles: true,
        quirked: true,
    },
    Shape {
        name: "many_calls_in_one_line",
        make: ollama_calls_in_one_line,
        n: 1_500,
        reassembles: true,
        quirked: true,
    },
    Shape {
        name: "many_tiny_lines",
        make: ollama_tiny_lines,
        n: 2_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "repeated_call",
        make: ollama_repeated_call,
        n: 1_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "huge_single_value",
        make: ollama_huge_value,
        n: 100_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "deep_nesting",
        make: ollama_deep_nesting,
        n: 10_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "many_tools",
        make: ollama_many_tools,
        n: 100,
        reassembles: false,
        quirked: false,
    },
];

const OLLAMA_TOOL: &str = r#"{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}"#;
const OLLAMA_DONE: &str = r#"{"model":"qwen3","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","eval_count":9}"#;

fn ollama_request(tools: &str) -> String {
    format!(
        r#"{{"model":"qwen3","messages":[{{"role":"user","content":"hi"}}],"tools":[{tools}]}}"#
    )
}

fn ollama_call(id: usize, index: usize, args: &str) -> String {
    format!(r#"{{"id":"call_{id}","function":{{"index":{index},"name":"f","arguments":{args}}}}}"#)
}

fn ollama_line(content: &str, calls: &[String]) -> String {
    let calls = if calls.is_empty() {
        String::new()
    } else {
        format!(r#","tool_calls":[{}]"#, calls.join(","))
    };
    format!(
        r#"{{"model":"qwen3","message":{{"role":"assistant","content":{}{calls}}},"done":false}}"#,
        quoted(content)
    )
}

/// NDJSON lines (the `done` line appended), in 16 KiB frames.
fn ollama_stream(tools: &str, mut lines: Vec<String>) -> Case {
    lines.push(OLLAMA_DONE.to_owned());
    let mut body = lines.join("\n");
    body.push('\n');
    Case {
        dialect: Dialect::Ollama,
        request: ollama_request(tools).into_bytes(),
        content_type: "application/x-ndjson",
        frames: frames(&body),
        path: Some("/api/chat"),
    }
}

/// `n` lines, one call each (indexes 0..n).
fn ollama_calls_across_lines(n: usize) -> Case {
    let lines = (0..n)
        .map(|i| ollama_line("", &[ollama_call(i, i, r#"{"a":"x"}"#)]))
        .collect();
    ollama_stream(OLLAMA_TOOL, lines)
}

/// One line carrying `n` calls.
fn ollama_calls_in_one_line(n: usize) -> Case {
    let calls: Vec<String> = (0..n).map(|i| ollama_call(i, i, r#"{"a":"x"}"#)).collect();
    ollama_stream(OLLAMA_TOOL, vec![ollama_line("", &calls)])
}

fn ollama_tiny_lines(n: usize) -> Case {
    let lines = (0..n).map(|_| ollama_line("word ", &[])).collect();
    ollama_stream(OLLAMA_TOOL, lines)
}

/// The same call id re-sent `n` times with args of constant size (each a repeat, not kept).
fn ollama_repeated_call(n: usize) -> Case {
    let lines = (0..n)
        .map(|i| ollama_line("", &[ollama_call(0, 0, &format!(r#"{{"a":"x{i}"}}"#))]))
        .collect();
    ollama_stream(OLLAMA_TOOL, lines)
}

fn ollama_huge_value(n: usize) -> Case {
    let args = format!(r#"{{"a":"{}"}}"#, "x".repeat(n));
    ollama_stream(
        OLLAMA_TOOL,
        vec![ollama_line("", &[ollama_call(0, 0, &args)])],
    )
}

fn ollama_deep_nesting(n: usize) -> Case {
    let args = format!(r#"{{"a":{}{}}}"#, "[".repeat(n), "]".repeat(n));
    ollama_stream(
        OLLAMA_TOOL,
        vec![ollama_line("", &[ollama_call(0, 0, &args)])],
    )
}

/// `n` declared functions (each compiled).
fn ollama_many_tools(n: usize) -> Case {
    let tools: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"type":"function","function":{{"name":"f{i}","parameters":{{"type":"object","properties":{{"a":{{"type":"string"}},"b":{{"type":["integer","null"],"minimum":0}}}},"required":["a"]}}}}}}"#))
        .collect();
    ollama_stream(
        &tools.join(","),
        vec![ollama_line("", &[ollama_call(0, 0, r#"{"a":"x"}"#)])],
    )
}

// ---- MCP ----------------------------------------------------------------------------------

const MCP: &[Shape] = &[
    Shape {
        name: "many_tools",
        make: mcp_many_tools,
        n: 500,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "huge_catalog_page",
        make: mcp_huge_page,
        n: 250_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "deep_schemas",
        make: mcp_deep_schemas,
        n: 2_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "many_sse_events",
        make: mcp_many_events,
        n: 4_000,
        reassembles: true,
        quirked: false,
    },
    Shape {
        name: "many_content_blocks",
        make: mcp_many_blocks,
        n: 2_000,
        reassembles: true,
        quirked: false,
    },
];

const MCP_LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#;
const MCP_CALL: &str = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"f","arguments":{"a":"x"},"_meta":{"progressToken":"p"}}}"#;

fn mcp_case(request: &str, content_type: &'static str, body: String) -> Case {
    Case {
        dialect: Dialect::Mcp,
        request: request.as_bytes().to_vec(),
        content_type,
        frames: frames(&body),
        path: Some("/mcp"),
    }
}

/// A `tools/list` page of `n` tools, each with a small schema and an output schema.
fn mcp_many_tools(n: usize) -> Case {
    let tools: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"name":"tool_{i}","description":"d","inputSchema":{{"type":"object","properties":{{"a":{{"type":"string"}}}},"required":["a"]}},"outputSchema":{{"type":"object","properties":{{"r":{{"type":"number"}}}}}},"annotations":{{"readOnlyHint":true}}}}"#
            )
        })
        .collect();
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":2,"result":{{"tools":[{}],"nextCursor":"c"}}}}"#,
        tools.join(",")
    );
    mcp_case(MCP_LIST, "application/json", body)
}

/// One tool whose description is `n` bytes: one huge value in a catalog page.
fn mcp_huge_page(n: usize) -> Case {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":2,"result":{{"tools":[{{"name":"f","description":{},"inputSchema":{{"type":"object"}}}}]}}}}"#,
        quoted(&"x".repeat(n))
    );
    mcp_case(MCP_LIST, "application/json", body)
}

/// One tool whose input schema nests `n` levels of `properties`.
fn mcp_deep_schemas(n: usize) -> Case {
    let mut schema = r#"{"type":"string"}"#.to_owned();
    for _ in 0..n.min(120) {
        schema = format!(r#"{{"type":"object","properties":{{"a":{schema}}}}}"#);
    }
    let tools: Vec<String> = (0..n / 120 + 1)
        .map(|i| format!(r#"{{"name":"t{i}","inputSchema":{schema}}}"#))
        .collect();
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":2,"result":{{"tools":[{}]}}}}"#,
        tools.join(",")
    );
    mcp_case(MCP_LIST, "application/json", body)
}

/// `n` progress notifications on a `tools/call` SSE answer, then its result.
fn mcp_many_events(n: usize) -> Case {
    let mut body = String::from("id: 0\ndata: \n\n");
    for i in 0..n {
        body.push_str(&format!(
            "event: message\nid: {}\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":\"p\",\"progress\":{i}}}}}\n\n",
            i + 1
        ));
    }
    body.push_str(
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n\n",
    );
    mcp_case(MCP_CALL, "text/event-stream", body)
}

/// A `tools/call` result with `n` content blocks.
fn mcp_many_blocks(n: usize) -> Case {
    let blocks: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"type":"text","text":"block {i}"}}"#))
        .collect();
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":5,"result":{{"content":[{}],"isError":false}}}}"#,
        blocks.join(",")
    );
    mcp_case(MCP_CALL, "application/json", body)
}
