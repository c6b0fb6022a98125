//! The result of inspecting one exchange: what came back, what was wrong, how much was seen.
//!
//! Built by [`crate::engine::Exchange::finish`]; serialized by the proxy into JSON logs and
//! recordings, and compared by tests. Our own limits are [`Completeness`], never violations.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::json_scan::{self, Scan};
use super::label::Dialect;
use super::mcp_observation::McpObservation;
use super::violation::Violation;

/// What the request asked for, as it goes into the report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestFacts {
    /// Whether the body parsed as a JSON object.
    pub parsed: bool,
    pub model: Option<String>,
    /// `stream: true` was requested.
    pub stream: bool,
    /// Names of the declared `type: "function"` tools, in declaration order.
    pub tools: Vec<String>,
    /// `tool_choice` exactly as sent.
    pub tool_choice: Option<KeptJson>,
    pub parallel_tool_calls: Option<bool>,
    /// `stream_options.include_usage`.
    pub include_usage: Option<bool>,
}

/// The dialect of a report written before reports named one.
fn old_report_dialect() -> Dialect {
    Dialect::OLD_RECORDING
}

/// Everything the engine concluded about one request/response pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The tool-calling API the exchange was judged as (absent in old reports: what old
    /// recordings are, [`Dialect::OLD_RECORDING`]).
    #[serde(default = "old_report_dialect")]
    pub dialect: Dialect,
    pub request: RequestFacts,
    pub status: Option<u16>,
    pub body_kind: BodyKind,
    /// One entry per choice index, in index order.
    pub choices: Vec<ChoiceOutcome>,
    pub usage: Option<KeptJson>,
    pub violations: Vec<Violation>,
    /// Violations found past `inspect.max_violations`: counted, not listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub violations_not_listed: u64,
    pub completeness: Completeness,
    pub notes: Vec<String>,
    /// What an MCP exchange saw, for the conversation store (`None` for every other dialect,
    /// and absent from reports written before MCP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<Box<McpObservation>>,
}

/// A JSON member a report keeps as it was sent (a response's `usage`, a request's
/// `tool_choice`): a tree (from a stream's chunk, or a dialect that reads its document whole),
/// or the exact text a typed read checked, read into a tree only when something asks
/// ([`KeptJson::value`]: the report written, compared or exported). Most clean exchanges are
/// never written, and a tree costs its allocations on each.
#[derive(Debug, Clone)]
pub enum KeptJson {
    Tree(Value),
    /// Text the reader checked as strictly as serde reads it ([`crate::engine::json_scan`]).
    Text(Box<str>),
}

impl KeptJson {
    /// The tree: the one held, or the text read now (`null` if it could not be, which a
    /// checked text never is).
    pub fn value(&self) -> Cow<'_, Value> {
        match self {
            KeptJson::Tree(value) => Cow::Borrowed(value),
            KeptJson::Text(text) => Cow::Owned(serde_json::from_str(text).unwrap_or(Value::Null)),
        }
    }

    /// A member read by the scan as serde reads an `Option<KeptJson>`: `null` is `None`,
    /// anything else its text, checked as [`Scan::value_text`] checks it; `None` where the scan
    /// gives up.
    pub fn read(scan: &mut Scan) -> Option<Option<KeptJson>> {
        json_scan::optional_with(scan, |scan| Some(KeptJson::Text(scan.value_text()?.into())))
    }

    /// The estimated heap it holds, as [`super::weigh`] counts: its tree's, or its text.
    pub fn weight(&self) -> usize {
        match self {
            KeptJson::Tree(tree) => super::weigh::value(tree),
            KeptJson::Text(text) => text.len(),
        }
    }
}

impl From<Value> for KeptJson {
    fn from(value: Value) -> KeptJson {
        KeptJson::Tree(value)
    }
}

/// Equal when their trees are: the same member read either way compares equal.
impl PartialEq for KeptJson {
    fn eq(&self, other: &KeptJson) -> bool {
        self.value() == other.value()
    }
}

/// Written as its tree, so a report's bytes do not depend on how the member was read.
impl Serialize for KeptJson {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for KeptJson {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<KeptJson, D::Error> {
        Value::deserialize(deserializer).map(KeptJson::Tree)
    }
}

/// How the response body was framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BodyKind {
    Json,
    Sse,
    /// A stream sent as one top-level JSON array, its elements framed as they complete
    /// (Gemini's `streamGenerateContent` without `alt=sse`).
    #[serde(rename = "json_array")]
    JsonArray,
    /// Newline-delimited JSON, one object a line, framed as each line completes (Ollama's
    /// `/api/chat` stream, `application/x-ndjson`).
    Ndjson,
    /// AWS event-stream binary messages (`application/vnd.amazon.eventstream`, Bedrock's
    /// ConverseStream): each message's headers and payload handed to the dialect as an event.
    #[serde(rename = "event_stream")]
    EventStream,
    /// A body of another content type: not inspected.
    Other,
    /// No body bytes arrived.
    None,
}

impl BodyKind {
    /// Whether the body is read as a stream of events (SSE, a JSON array's elements, NDJSON
    /// lines, event-stream messages).
    pub fn is_stream(self) -> bool {
        matches!(
            self,
            BodyKind::Sse | BodyKind::JsonArray | BodyKind::Ndjson | BodyKind::EventStream
        )
    }
}

/// The message of one choice, reassembled from a stream or read from a buffered body.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChoiceOutcome {
    pub index: u32,
    /// The text content; `None` when null or never sent.
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCallOutcome>,
    /// The terminal finish reason (the last non-null one of a stream).
    pub finish_reason: Option<String>,
    /// Every non-null finish reason received, in order (more than one is a violation).
    pub finish_reasons: Vec<String>,
}

/// One tool call as received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallOutcome {
    /// `delta.tool_calls[].index` for streams, the array position for buffered bodies.
    pub index: u32,
    pub id: Option<String>,
    pub name: Option<String>,
    /// Exactly as received: the (concatenated) string, or the raw JSON value when a server sent
    /// something else; `None` when absent. Streamed Chat arguments past 16 KiB are not kept:
    /// their first bytes and `dialect::chat::arguments::NOT_KEPT`.
    pub arguments: Option<Value>,
}

/// How much of the exchange the engine saw and judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Completeness {
    /// The whole body was inspected.
    Complete,
    /// The engine judged part of the body, not its end (a reader that left before the content
    /// was whole, or frames lost): end-of-body rules were not applied (on the wire: `truncated`).
    #[serde(rename = "truncated")]
    Partial,
    /// One of our bounds was hit; inspection stopped there.
    TooLarge { limit: LimitKind, bytes: usize },
    /// The body's content-encoding could not be decoded; inspection stopped there.
    DecodeFailed { reason: String },
    /// A non-2xx status or a content type that is not inspected: the body was not judged.
    NotInspected,
    /// The whole body was inspected, but checking `calls` tool calls' arguments against their
    /// schemas would have cost more than the schema budget: those checks were not made.
    SchemaBudget { calls: u32 },
    /// The whole body was inspected, but `calls` tool calls' arguments were too large to hold
    /// and their schemas need a whole value past the streaming bound (`pattern` on a huge
    /// string, `uniqueItems` on a huge array): those keywords were not judged. When calls were
    /// also over the schema budget, the exchange is [`Completeness::SchemaBudget`] (a call not
    /// checked at all is the larger gap).
    SchemaStreaming { calls: u32 },
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Which of [`crate::engine::EngineConfig`]'s bounds was hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    JsonBody,
    SseLine,
    Decoded,
    /// `max_reassembled`: the SSE data a stream's reassembly may take in.
    Reassembled,
    /// `max_sse_line`, as the bound on one element of a streamed JSON array.
    ArrayElement,
    /// `max_sse_line`, as the bound on one NDJSON line.
    NdjsonLine,
    /// `max_sse_line`, as the bound on one AWS event-stream message.
    EventStreamMessage,
}
