//! Shared fixture loader for the engine's test binaries (and any other test that wants to
//! replay the same corpus, e.g. through the live proxy).
//!
//! Input: `tests/fixtures/<case>/` directories (layout in `tests/fixtures/README.md`). Output:
//! [`Fixture`]s, helpers that drive an [`Exchange`] over a chosen split of the body, and the
//! comparable form of violations (everything but `detail`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tooltap::engine::{
    BodyEnd, Dialect, EngineConfig, Exchange, Report, RequestParts, ResponseHead, SchemaCache,
};

/// One case of the corpus.
#[derive(Debug, Clone)]
pub struct Fixture {
    pub name: String,
    pub dir: PathBuf,
    pub request: Vec<u8>,
    pub head: ResponseHead,
    /// The exact bytes the server sends (possibly content-encoded).
    pub body: Vec<u8>,
    pub is_sse: bool,
    /// The body is AWS event-stream messages (`response.eventstream`, a Bedrock stream).
    pub event_stream: bool,
    /// A case named `<label>_*` for a dialect other than Chat (`responses_*`, `anthropic_*`) is
    /// that dialect's exchange; every other case is Chat Completions.
    pub dialect: Dialect,
    /// The request path with its query: `/v1` and the dialect's path suffix, or for a Gemini
    /// case `head.json`'s `"path"`, by default `/v1beta/models/gemini-3-flash:` and
    /// `generateContent` (a `response.json`) or `streamGenerateContent?alt=sse` (a
    /// `response.sse`).
    path: String,
    /// `head.json`'s `"method"` (MCP's GET and DELETE), by default `POST`.
    pub method: String,
    /// `head.json`'s `"request_headers"`, `[[name, value], ...]`: the request headers the
    /// engine reads (MCP's session, version and routing headers, `Accept`, `Content-Type`).
    pub request_headers: Vec<(String, String)>,
}

impl Fixture {
    /// The name of the response file in the case's directory.
    pub fn response_file(&self) -> &'static str {
        if self.is_sse {
            "response.sse"
        } else if self.event_stream {
            "response.eventstream"
        } else {
            "response.json"
        }
    }

    /// The request path a client would post this case to.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether the body is an NDJSON stream (Ollama's, `application/x-ndjson`).
    pub fn is_ndjson(&self) -> bool {
        self.head
            .content_type
            .as_deref()
            .is_some_and(|t| t.starts_with("application/x-ndjson"))
    }

    /// The case name without its dialect prefix (`pass_`, `pair_`, ... conventions apply to it).
    pub fn kind_name(&self) -> &str {
        match self.dialect {
            Dialect::Chat => &self.name,
            other => self
                .name
                .strip_prefix(other.as_str())
                .and_then(|rest| rest.strip_prefix('_'))
                .unwrap_or(&self.name),
        }
    }
}

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("fixtures")
}

/// Every fixture, sorted by name.
pub fn load_all() -> Vec<Fixture> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .expect("tests/fixtures exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    dirs.iter().map(|dir| load(dir)).collect()
}

/// A 200 `text/event-stream` response head.
pub fn sse_head() -> ResponseHead {
    ResponseHead {
        status: 200,
        content_type: Some("text/event-stream".into()),
        content_encoding: None,
        headers: Vec::new(),
    }
}

/// The fixture `tests/fixtures/<name>`.
pub fn fixture(name: &str) -> Fixture {
    load(&fixtures_dir().join(name))
}

pub fn load(dir: &Path) -> Fixture {
    let name = dir
        .file_name()
        .expect("named")
        .to_string_lossy()
        .into_owned();
    let request = std::fs::read(dir.join("request.json")).expect("request.json");
    let event_stream = dir.join("response.eventstream").exists();
    let (body, is_sse) = match std::fs::read(dir.join("response.sse")) {
        Ok(body) => (body, true),
        Err(_) if event_stream => (
            std::fs::read(dir.join("response.eventstream")).expect("response.eventstream"),
            false,
        ),
        Err(_) => (
            std::fs::read(dir.join("response.json")).expect("response.json or .sse"),
            false,
        ),
    };
    let default_type = if is_sse {
        "text/event-stream"
    } else if event_stream {
        "application/vnd.amazon.eventstream"
    } else {
        "application/json"
    };
    let mut head_path = None;
    let mut method = "POST".to_owned();
    let mut request_headers = Vec::new();
    let pairs = |value: &Value| -> Vec<(String, String)> {
        value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|pair| Some((pair[0].as_str()?.to_owned(), pair[1].as_str()?.to_owned())))
            .collect()
    };
    let head = match std::fs::read(dir.join("head.json")) {
        Ok(raw) => {
            let value: Value = serde_json::from_slice(&raw).expect("head.json parses");
            head_path = value["path"].as_str().map(str::to_owned);
            if let Some(given) = value["method"].as_str() {
                method = given.to_owned();
            }
            request_headers = pairs(&value["request_headers"]);
            // `"content_type": null` in head.json: a head without one (a 202, a DELETE).
            let content_type = match value.get("content_type") {
                Some(Value::Null) => None,
                given => Some(
                    given
                        .and_then(Value::as_str)
                        .unwrap_or(default_type)
                        .to_owned(),
                ),
            };
            let mut kept = pairs(&value["headers"]);
            if let Some(content_type) = &content_type {
                kept.push(("content-type".to_owned(), content_type.clone()));
            }
            if let Some(encoding) = value["content_encoding"].as_str() {
                kept.push(("content-encoding".to_owned(), encoding.to_owned()));
            }
            ResponseHead::from_headers(
                value["status"].as_u64().map_or(200, |s| s as u16),
                kept.iter().map(|(n, v)| (n.as_str(), v.as_str())),
            )
        }
        Err(_) => ResponseHead {
            status: 200,
            content_type: Some(default_type.to_owned()),
            content_encoding: None,
            headers: Vec::new(),
        },
    };
    let dialect = Dialect::ALL
        .into_iter()
        .filter(|dialect| *dialect != Dialect::Chat)
        .find(|dialect| {
            name.strip_prefix(dialect.as_str())
                .is_some_and(|rest| rest.starts_with('_'))
        })
        .unwrap_or(Dialect::Chat);
    let path = head_path.unwrap_or_else(|| match dialect {
        Dialect::Gemini if is_sse => {
            "/v1beta/models/gemini-3-flash:streamGenerateContent?alt=sse".to_owned()
        }
        Dialect::Gemini => "/v1beta/models/gemini-3-flash:generateContent".to_owned(),
        Dialect::Bedrock if is_sse || event_stream => {
            "/model/anthropic.claude-sonnet-4-5/converse-stream".to_owned()
        }
        Dialect::Bedrock => "/model/anthropic.claude-sonnet-4-5/converse".to_owned(),
        other => format!("/v1{}", other.path_suffixes()[0]),
    });
    Fixture {
        dialect,
        path,
        method,
        request_headers,
        name,
        dir: dir.to_path_buf(),
        request,
        head,
        body,
        is_sse,
        event_stream,
    }
}

/// The body as a server would send it: one frame per SSE event (cut after each blank line),
/// fixed 64-byte frames for encoded bodies, one frame for a buffered body. The `seq` numbers
/// in `expected.jsonl` refer to this split.
pub fn natural_frames(fixture: &Fixture) -> Vec<&[u8]> {
    let body = fixture.body.as_slice();
    if fixture.head.content_encoding.is_some() {
        return body.chunks(64).collect();
    }
    if fixture.event_stream {
        return event_stream_frames(body);
    }
    if !fixture.is_sse {
        return vec![body];
    }
    let mut frames = Vec::new();
    let (mut frame_start, mut line_start, mut i) = (0, 0, 0);
    while i < body.len() {
        if body[i] == b'\n' || body[i] == b'\r' {
            let empty_line = i == line_start;
            if body[i] == b'\r' && body.get(i + 1) == Some(&b'\n') {
                i += 1;
            }
            i += 1;
            line_start = i;
            if empty_line {
                frames.push(&body[frame_start..i]);
                frame_start = i;
            }
        } else {
            i += 1;
        }
    }
    if frame_start < body.len() {
        frames.push(&body[frame_start..]);
    }
    frames
}

/// One frame per event-stream message, by each prelude's total length (the rest, a message
/// cut short or lengths that cannot be, as one last frame).
fn event_stream_frames(body: &[u8]) -> Vec<&[u8]> {
    let mut start = 0;
    tooltap::engine::framing::event_stream::message_ends(body)
        .into_iter()
        .map(|end| {
            let frame = &body[start..end];
            start = end;
            frame
        })
        .collect()
}

/// Drives one exchange over the given frames.
pub fn run_frames(fixture: &Fixture, cache: &SchemaCache, frames: &[&[u8]]) -> Report {
    let config = Arc::new(EngineConfig::default());
    let request = RequestParts {
        body: &fixture.request,
        path: Some(&fixture.path),
        method: Some(&fixture.method),
        headers: &fixture.request_headers,
    };
    let mut exchange = Exchange::start(&config, cache, fixture.dialect, request);
    exchange.response_head(fixture.head.clone());
    for frame in frames {
        exchange.feed(frame);
    }
    exchange.finish(BodyEnd::Complete)
}

pub fn run_natural(fixture: &Fixture, cache: &SchemaCache) -> Report {
    run_frames(fixture, cache, &natural_frames(fixture))
}

/// A violation as compared against `expected.jsonl`: every field but `detail`.
pub fn comparable(report: &Report, keep_seq: bool) -> Vec<Value> {
    report
        .violations
        .iter()
        .map(|violation| {
            let mut value = serde_json::to_value(violation).expect("serializes");
            let object = value.as_object_mut().expect("object");
            object.remove("detail");
            if !keep_seq {
                object.remove("seq");
            }
            value
        })
        .collect()
}

pub fn read_expected(fixture: &Fixture) -> Vec<Value> {
    let text = std::fs::read_to_string(fixture.dir.join("expected.jsonl")).unwrap_or_default();
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).expect("expected.jsonl line parses"))
        .collect()
}

pub fn write_expected(fixture: &Fixture, lines: &[Value]) {
    let mut text = String::new();
    for line in lines {
        text.push_str(&serde_json::to_string(line).expect("serializes"));
        text.push('\n');
    }
    std::fs::write(fixture.dir.join("expected.jsonl"), text).expect("writable fixtures");
}
