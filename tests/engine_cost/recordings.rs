//! Adversarial recordings for `tooltap report`, one generator per shape, each writing files
//! whose size grows in proportion to `n`: many frames per exchange, many tool calls, many
//! exchanges in one segment file, one huge argument, a gzip-encoded buffered body, many
//! distinct `tools` lists, many distinct JSON pointers, deep nesting, text the page escapes,
//! more fragments than one exchange lists.
//!
//! The stream shapes reuse the engine's (see [`crate::shapes`]) for every dialect, written in
//! the on-disk format `tooltap proxy` writes (`tooltap::record::format`).

use std::io::Write;
use std::path::Path;

use tooltap::engine::{Completeness, Dialect};
use tooltap::record::format::{RequestPart, ResponsePart};
use tooltap::record::{EndLine, FrameData, FrameLine, Line, Meta, Outcome, RecordedBody};

use crate::shapes::{Case, shapes};

/// A generator: writes its recordings for size `n` into a folder.
pub struct ReportShape {
    /// `dialect.shape`, unique.
    pub name: &'static str,
    pub write: fn(&Path, usize),
    /// The smaller of the two sizes measured (the larger is four times it).
    pub n: usize,
}

/// Every report shape.
pub const REPORT_SHAPES: &[ReportShape] = &[
    ReportShape {
        name: "chat.many_calls",
        write: |dir, n| engine_shape(dir, Dialect::Chat, "many_indexes", n, false),
        n: 150,
    },
    ReportShape {
        name: "responses.many_calls",
        write: |dir, n| engine_shape(dir, Dialect::Responses, "many_items", n, false),
        n: 100,
    },
    ReportShape {
        name: "anthropic.many_calls",
        write: |dir, n| engine_shape(dir, Dialect::Anthropic, "many_blocks", n, false),
        n: 150,
    },
    ReportShape {
        name: "chat.many_frames",
        write: |dir, n| engine_shape(dir, Dialect::Chat, "names_on_every_fragment", n, true),
        n: 300,
    },
    ReportShape {
        name: "responses.many_frames",
        write: |dir, n| engine_shape(dir, Dialect::Responses, "deltas_on_every_fragment", n, true),
        n: 500,
    },
    ReportShape {
        name: "anthropic.many_frames",
        write: |dir, n| engine_shape(dir, Dialect::Anthropic, "deltas_on_every_fragment", n, true),
        n: 500,
    },
    ReportShape {
        name: "chat.huge_argument",
        write: |dir, n| engine_shape(dir, Dialect::Chat, "huge_single_value", n, false),
        n: 70_000,
    },
    ReportShape {
        name: "responses.huge_argument",
        write: |dir, n| engine_shape(dir, Dialect::Responses, "huge_single_value", n, false),
        n: 70_000,
    },
    ReportShape {
        name: "anthropic.huge_argument",
        write: |dir, n| engine_shape(dir, Dialect::Anthropic, "huge_single_value", n, false),
        n: 70_000,
    },
    ReportShape {
        name: "gemini.many_calls",
        write: |dir, n| {
            engine_shape(
                dir,
                Dialect::Gemini,
                "parallel_calls_across_events",
                n,
                false,
            )
        },
        n: 150,
    },
    ReportShape {
        name: "gemini.many_frames",
        write: |dir, n| engine_shape(dir, Dialect::Gemini, "many_tiny_events", n, true),
        n: 500,
    },
    ReportShape {
        name: "gemini.huge_argument",
        write: |dir, n| engine_shape(dir, Dialect::Gemini, "huge_single_value", n, false),
        n: 70_000,
    },
    ReportShape {
        name: "gemini.deep_nesting",
        write: |dir, n| engine_shape(dir, Dialect::Gemini, "deep_nesting", n, false),
        n: 6_000,
    },
    ReportShape {
        name: "ollama.many_calls",
        write: |dir, n| {
            engine_shape(
                dir,
                Dialect::Ollama,
                "parallel_calls_across_lines",
                n,
                false,
            )
        },
        n: 150,
    },
    ReportShape {
        name: "ollama.many_calls_in_one_line",
        write: |dir, n| engine_shape(dir, Dialect::Ollama, "many_calls_in_one_line", n, false),
        n: 150,
    },
    ReportShape {
        name: "ollama.huge_argument",
        write: |dir, n| engine_shape(dir, Dialect::Ollama, "huge_single_value", n, false),
        n: 70_000,
    },
    ReportShape {
        name: "ollama.deep_nesting",
        write: |dir, n| engine_shape(dir, Dialect::Ollama, "deep_nesting", n, false),
        n: 6_000,
    },
    ReportShape {
        name: "bedrock.many_calls",
        write: |dir, n| engine_shape(dir, Dialect::Bedrock, "many_tool_blocks", n, false),
        n: 150,
    },
    ReportShape {
        name: "bedrock.many_frames",
        write: |dir, n| engine_shape(dir, Dialect::Bedrock, "many_text_deltas", n, true),
        n: 500,
    },
    ReportShape {
        name: "bedrock.many_fragments",
        write: |dir, n| engine_shape(dir, Dialect::Bedrock, "many_input_fragments", n, false),
        n: 500,
    },
    ReportShape {
        name: "bedrock.deep_nesting",
        write: |dir, n| engine_shape(dir, Dialect::Bedrock, "deep_nesting", n, false),
        n: 6_000,
    },
    ReportShape {
        name: "chat.deep_nesting",
        write: |dir, n| engine_shape(dir, Dialect::Chat, "deep_nesting", n, false),
        n: 6_000,
    },
    ReportShape {
        name: "responses.deep_nesting",
        write: |dir, n| engine_shape(dir, Dialect::Responses, "deep_nesting", n, false),
        n: 6_000,
    },
    ReportShape {
        name: "anthropic.deep_nesting",
        write: |dir, n| engine_shape(dir, Dialect::Anthropic, "deep_nesting", n, false),
        n: 6_000,
    },
    ReportShape {
        name: "chat.many_exchanges_in_one_segment",
        write: many_exchanges_in_one_segment,
        n: 30,
    },
    ReportShape {
        name: "chat.gzip_buffered_body",
        write: gzip_buffered_body,
        n: 300,
    },
    ReportShape {
        name: "chat.many_distinct_tools",
        write: many_distinct_tools,
        n: 25,
    },
    ReportShape {
        name: "chat.many_distinct_pointers",
        write: many_distinct_pointers,
        n: 200,
    },
    ReportShape {
        name: "chat.fragments_past_the_list",
        write: fragments_past_the_list,
        n: 1_300,
    },
    ReportShape {
        name: "chat.line_separators",
        write: line_separators,
        n: 20,
    },
];

/// The shape named `name`.
pub fn report_shape(name: &str) -> &'static ReportShape {
    REPORT_SHAPES
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no report shape {name}"))
}

/// One exchange to write: the engine's case, its frames as recorded, its content encoding.
struct Exchange<'a> {
    id: String,
    case: &'a Case,
    frames: Vec<Vec<u8>>,
    encoding: Option<&'static str>,
}

fn request_path(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Chat => "/v1/chat/completions",
        Dialect::Responses => "/v1/responses",
        Dialect::Anthropic => "/v1/messages",
        Dialect::Gemini => "/v1beta/models/gemini-3-flash:streamGenerateContent",
        Dialect::Ollama => "/api/chat",
        Dialect::Bedrock => "/model/anthropic.claude-sonnet-4-5/converse-stream",
        Dialect::Mcp => "/mcp",
    }
}

/// The lines of one recording, as `tooltap proxy` writes them.
fn lines(exchange: &Exchange<'_>) -> Vec<Line> {
    let mut headers = vec![(
        "content-type".to_owned(),
        exchange.case.content_type.to_owned(),
    )];
    if let Some(encoding) = exchange.encoding {
        headers.push(("content-encoding".to_owned(), encoding.to_owned()));
    }
    let meta = Meta {
        v: tooltap::record::VERSION,
        id: exchange.id.clone(),
        started: "2026-12-05T12:00:00Z".to_owned(),
        route: "default".to_owned(),
        upstream: "http://127.0.0.1:1".to_owned(),
        method: "POST".to_owned(),
        path: exchange.case.path.map_or_else(
            || request_path(exchange.case.dialect).to_owned(),
            |target| target.split('?').next().unwrap_or(target).to_owned(),
        ),
        dialect: Some(exchange.case.dialect),
        query: exchange
            .case
            .path
            .and_then(|target| target.split_once('?'))
            .map(|(_, query)| query.to_owned()),
        request: RequestPart {
            headers: vec![("content-type".to_owned(), "application/json".to_owned())],
            body: RecordedBody::from_bytes(&exchange.case.request),
        },
        response: ResponsePart {
            status: 200,
            headers,
        },
        redacted: Vec::new(),
        injected: Vec::new(),
        credential: None,
    };
    let mut lines = vec![Line::Exchange(Box::new(meta))];
    for (seq, bytes) in exchange.frames.iter().enumerate() {
        lines.push(Line::Frame(FrameLine {
            seq: seq as u64,
            t_us: 1_000 + seq as u64 * 10,
            data: FrameData::from_bytes(bytes),
        }));
    }
    lines.push(Line::End(Box::new(EndLine {
        outcome: Outcome::Complete,
        t_us: 1_000 + exchange.frames.len() as u64 * 10,
        dropped_frames: 0,
        frames: exchange.frames.len() as u64,
        bytes: exchange.frames.iter().map(|f| f.len() as u64).sum(),
        completeness: Completeness::Complete,
        violations: Vec::new(),
        enforced: None,
    })));
    lines
}

/// Writes `exchanges` into `path`, one after another (a segment file when there are several).
fn write_file(path: &Path, exchanges: &[Exchange<'_>]) {
    let file = std::fs::File::create(path).expect("recording created");
    let mut out = std::io::BufWriter::new(file);
    for exchange in exchanges {
        for line in lines(exchange) {
            serde_json::to_writer(&mut out, &line).expect("line written");
            out.write_all(b"\n").expect("line written");
        }
    }
    out.flush().expect("recording written");
}

fn engine_case(dialect: Dialect, shape: &str, n: usize) -> Case {
    let shape = shapes(dialect)
        .iter()
        .find(|s| s.name == shape)
        .unwrap_or_else(|| panic!("no engine shape {dialect} {shape}"));
    (shape.make)(n)
}

/// Frames of one SSE event each (the body cut after every blank line), or of one event-stream
/// message each.
fn frame_per_event(case: &Case) -> Vec<Vec<u8>> {
    let body: Vec<u8> = case.frames.concat();
    let mut frames = Vec::new();
    let mut start = 0;
    let ends = if case.content_type == tooltap::engine::framing::EVENT_STREAM_TYPE {
        tooltap::engine::framing::event_stream::message_ends(&body)
    } else {
        after_blank_lines(&body)
    };
    for at in ends {
        frames.push(body[start..at].to_vec());
        start = at;
    }
    if start < body.len() {
        frames.push(body[start..].to_vec());
    }
    frames
}

/// The offsets just past each `\n\n` in `body`.
fn after_blank_lines(body: &[u8]) -> Vec<usize> {
    body.windows(2)
        .enumerate()
        .filter(|(_, pair)| pair == b"\n\n")
        .map(|(at, _)| at + 2)
        .collect()
}

/// One recording of the engine's `shape` at size `n`: its 16 KiB frames, or one frame per
/// event when `per_event`.
fn engine_shape(dir: &Path, dialect: Dialect, shape: &str, n: usize, per_event: bool) {
    let case = engine_case(dialect, shape, n);
    let frames = if per_event {
        frame_per_event(&case)
    } else {
        case.frames.clone()
    };
    let exchange = Exchange {
        id: format!("{dialect}-{shape}"),
        case: &case,
        frames,
        encoding: None,
    };
    write_file(&dir.join("x.jsonl"), &[exchange]);
}

/// `n` small streamed exchanges (a few calls each) appended to one segment file.
fn many_exchanges_in_one_segment(dir: &Path, n: usize) {
    let case = engine_case(Dialect::Chat, "many_indexes", 4);
    segment_of(dir, "x", &case, n);
}

/// `n` copies of `case`, one frame per event, appended to one segment file.
fn segment_of(dir: &Path, prefix: &str, case: &Case, n: usize) {
    let exchanges: Vec<Exchange<'_>> = (0..n)
        .map(|i| Exchange {
            id: format!("{prefix}{i:06}"),
            case,
            frames: frame_per_event(case),
            encoding: None,
        })
        .collect();
    write_file(
        &dir.join(format!("segment-{prefix}000000.jsonl")),
        &exchanges,
    );
}

/// A buffered Chat completion with `n` calls, gzip-encoded, in 16 KiB frames.
fn gzip_buffered_body(dir: &Path, n: usize) {
    let case = engine_case(Dialect::Chat, "buffered_many_calls", n);
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    for frame in &case.frames {
        gzip.write_all(frame).expect("gzip");
    }
    let body = gzip.finish().expect("gzip");
    let exchange = Exchange {
        id: "gzip".to_owned(),
        case: &case,
        frames: body.chunks(16 * 1024).map(<[u8]>::to_vec).collect(),
        encoding: Some("gzip"),
    };
    write_file(&dir.join("x.jsonl"), &[exchange]);
}

/// `n` exchanges in one segment, each declaring its own `tools` list (four tools whose names
/// and descriptions no other exchange shares): the report's tool table grows by one list each.
fn many_distinct_tools(dir: &Path, n: usize) {
    let stream = engine_case(Dialect::Chat, "many_indexes", 2);
    let cases: Vec<Case> = (0..n)
        .map(|i| {
            let tools: Vec<String> = (0..4)
                .map(|t| format!(r#"{{"type":"function","function":{{"name":"f{i}_{t}","description":"tool {t} of exchange {i}, described at some length so that each list weighs what a real one does","parameters":{{"type":"object","properties":{{"a{i}":{{"type":"string"}},"b":{{"type":"integer","minimum":0}}}},"required":["a{i}"]}}}}}}"#))
                .collect();
            Case {
                dialect: Dialect::Chat,
                request: format!(
                    r#"{{"model":"m","stream":true,"messages":[{{"role":"user","content":"hi"}}],"tools":[{}]}}"#,
                    tools.join(",")
                )
                .into_bytes(),
                content_type: stream.content_type,
                frames: stream.frames.clone(),
                path: None,
            }
        })
        .collect();
    let exchanges: Vec<Exchange<'_>> = cases
        .iter()
        .enumerate()
        .map(|(i, case)| Exchange {
            id: format!("t{i:06}"),
            case,
            frames: case.frames.clone(),
            encoding: None,
        })
        .collect();
    write_file(&dir.join("segment-t000000.jsonl"), &exchanges);
}

/// One stream whose first event carries `n` tool-call entries: pointers name a call by its
/// position in the event's array (`/choices/0/delta/tool_calls/K/function/name`), so the
/// report's table of distinct pointers grows by three per call.
fn many_distinct_pointers(dir: &Path, n: usize) {
    let calls: Vec<String> = (0..n)
        .map(|k| format!(r#"{{"index":{k},"id":"c{k}","type":"function","function":{{"name":"f","arguments":"{{}}"}}}}"#))
        .collect();
    let case = chat_stream(
        &[format!(
            r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{}]}}}}]}}"#,
            calls.join(",")
        )],
        "tool_calls",
    );
    let exchange = Exchange {
        id: "pointers".to_owned(),
        frames: case.frames.clone(),
        case: &case,
        encoding: None,
    };
    write_file(&dir.join("x.jsonl"), &[exchange]);
}

/// A Chat stream of `events` (the data of each), then `finish_reason` and `[DONE]`, in 16 KiB
/// frames.
fn chat_stream(events: &[String], finish_reason: &str) -> Case {
    let mut body = String::new();
    for data in events {
        body.push_str(&format!("data: {data}\n\n"));
    }
    body.push_str(&format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{finish_reason}\"}}]}}\n\ndata: [DONE]\n\n"
    ));
    Case {
        dialect: Dialect::Chat,
        request: engine_case(Dialect::Chat, "many_indexes", 1).request,
        content_type: "text/event-stream",
        frames: body
            .as_bytes()
            .chunks(16 * 1024)
            .map(<[u8]>::to_vec)
            .collect(),
        path: None,
    }
}

/// `n` exchanges in one segment, each a stream of text made of U+2028 and U+2029, which the
/// page writes as six-byte escapes of three-byte characters.
fn line_separators(dir: &Path, n: usize) {
    let text = "\u{2028}\u{2029}".repeat(40);
    let event = format!(r#"{{"choices":[{{"index":0,"delta":{{"content":"{text}"}}}}]}}"#);
    segment_of(dir, "s", &chat_stream(&vec![event; 8], "stop"), n);
}

/// A stream of `n` one-character content events, one frame each: at 4n, past the 5,000
/// fragments and frames one exchange lists.
fn fragments_past_the_list(dir: &Path, n: usize) {
    let event = r#"{"choices":[{"index":0,"delta":{"content":"x"}}]}"#.to_owned();
    segment_of(dir, "f", &chat_stream(&vec![event; n], "stop"), 1);
}
