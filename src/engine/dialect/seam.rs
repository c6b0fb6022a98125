//! The seam a dialect is driven by: [`DialectRules`], the one trait each dialect's per-exchange
//! state implements, and [`RequestParts`], what it is started from.
//!
//! Input: the request (body, and its path where the caller knows it), then one SSE event at a
//! time or a whole buffered body, then how the stream ended. Output: violations into the
//! exchange's sink, and the outcomes and `usage` the report shows; for enforce mode, the error
//! body and the stream's error event in the dialect's shape ([`EnforceError`]). Nothing here names a
//! dialect: `super::register` maps each [`super::Dialect`] to its implementation.

use std::sync::Arc;

use serde_json::Value;

use super::pieces::DialectTables;
use crate::engine::framing::SseEvent;
use crate::engine::head::ResponseHead;
use crate::engine::mcp_observation::McpObservation;
use crate::engine::report::BodyKind;
use crate::engine::report::ChoiceOutcome;
use crate::engine::report::KeptJson;
use crate::engine::report::RequestFacts;
use crate::engine::schema::{CompiledTools, SchemaCache};
use crate::engine::violation::ViolationSink;

/// The request a dialect's state is started from.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestParts<'a> {
    /// The request body exactly as sent.
    pub body: &'a [u8],
    /// The request path with its query string, where the caller knows it (the live proxy, a
    /// recording); a dialect whose stream-ness or model is in the path reads it here.
    pub path: Option<&'a str>,
    /// The request method (`POST`, `GET`, `DELETE`), where the caller knows it: MCP's
    /// exchanges are not all POSTs.
    pub method: Option<&'a str>,
    /// The request headers the engine reads, as `(name, value)` pairs in arrival order (names
    /// as sent; compare them case-insensitively): what [`crate::engine::head::kept_request_headers`]
    /// keeps, which is nothing for a dialect that reads none. Never a credential.
    pub headers: &'a [(String, String)],
}

/// What a request declared, borrowed from a dialect's state: the facts the report shows and the
/// compiled tool arrays the schema cache keeps once the head is a 2xx (most dialects have one;
/// Chat has two, `tools` and legacy `functions`; MCP none: its tools come in answers).
#[derive(Debug, Clone, Copy)]
pub struct Declared<'a> {
    pub facts: &'a RequestFacts,
    pub schemas: [Option<&'a Arc<CompiledTools>>; 2],
}

impl<'a> Declared<'a> {
    /// The facts and the one compiled `tools` array of a dialect that has one.
    pub fn new(facts: &'a RequestFacts, schemas: Option<&'a Arc<CompiledTools>>) -> Self {
        Declared {
            facts,
            schemas: [schemas, None],
        }
    }

    /// The same with a second compiled array (Chat's legacy `functions`).
    pub fn and(mut self, more: Option<&'a Arc<CompiledTools>>) -> Self {
        self.schemas[1] = more;
        self
    }
}

/// One dialect's reading of one exchange: its request facts, its reading of each SSE event from
/// the shared framer, its reassembly and its rules. The engine holds it as a trait object
/// (`super::DialectState`) and calls nothing else on a dialect.
pub trait DialectRules: std::fmt::Debug + Send {
    /// Parses the request and compiles (or fetches from `cache`) its declared tools; request
    /// rules go to `sink`, why declaration rules are skipped to `notes`.
    fn start(
        request: RequestParts<'_>,
        cache: &SchemaCache,
        sink: &mut ViolationSink,
        notes: &mut Vec<String>,
    ) -> Self
    where
        Self: Sized;

    /// What the request declared, where this state keeps it: its facts and its compiled tools.
    /// [`DialectRules::admit_tools`] and [`DialectRules::facts`] are written once over it.
    fn declared_request(&self) -> Declared<'_>;

    /// The request's facts, to move out for the report ([`DialectRules::into_facts`]).
    fn facts_mut(&mut self) -> &mut RequestFacts;

    /// Keeps the request's compiled tools in the schema cache: called once the response head
    /// is a 2xx (an array that never gets an answer pins no memory).
    fn admit_tools(&self) {
        for tools in self.declared_request().schemas.into_iter().flatten() {
            tools.admit();
        }
    }

    /// The request's facts as the report shows them.
    fn facts(&self) -> &RequestFacts {
        self.declared_request().facts
    }

    /// The request's facts, moved out for the report (the state is dropped right after, so
    /// they are taken, not cloned).
    fn into_facts(mut self: Box<Self>) -> RequestFacts {
        std::mem::take(self.facts_mut())
    }

    /// How the response body is framed, from its head. By default (every dialect today) the
    /// content type says it, and the request's `stream` flag when the head names none (see
    /// [`crate::engine::framing::body_kind`]); a dialect whose stream comes as
    /// `application/json` (Gemini's JSON array without `alt=sse`) answers
    /// [`BodyKind::JsonArray`] here, and each element reaches [`DialectRules::on_event`] as an
    /// event's data.
    fn body_kind(&self, head: &ResponseHead) -> BodyKind {
        crate::engine::framing::body_kind(head.content_type.as_deref(), self.facts().stream)
    }

    /// Whether a response with this status has its body judged. By default only a 2xx (an
    /// error body is the upstream's, not the tool-calling contract's); MCP judges its 4xx
    /// answers too, whose JSON-RPC errors have rules of their own.
    fn judges_status(&self, status: u16) -> bool {
        (200..300).contains(&status)
    }

    /// The response head, before any body byte: for a dialect with rules on the status and the
    /// headers ([`ResponseHead::headers`]). Called once, whatever the status.
    fn on_head(&mut self, _head: &ResponseHead, _sink: &mut ViolationSink) {}

    /// What the exchange saw, for the MCP conversation store above the engine (which judges
    /// rules across exchanges); taken once, when the exchange finishes. `None` for every other
    /// dialect.
    fn take_mcp(&mut self) -> Option<Box<McpObservation>> {
        None
    }

    /// Whether the stream ended by its own framing (`[DONE]`, a terminal event).
    fn stream_is_done(&self) -> bool;

    /// What the stream's reassembly holds, as [`crate::engine::weigh`] counts it; the exchange
    /// stops reassembling past `max_reassembled`.
    fn reassembly_bytes(&self) -> usize;

    /// Bounds what one event may add to the reassembly at `max`; for a dialect whose one event
    /// may carry thousands of pieces. The exchange checks [`DialectRules::reassembly_bytes`]
    /// after each event either way.
    fn bound_reassembly(&mut self, _max: usize) {}

    /// The last `sequence_number` the stream carried, for a dialect whose events are numbered
    /// (enforce mode numbers its own error event after it).
    fn last_sequence_number(&self) -> Option<i64> {
        None
    }

    /// One SSE event, completed by `feed` call number `seq`.
    fn on_event(&mut self, event: &SseEvent, seq: u64, sink: &mut ViolationSink);

    /// Judges a whole buffered (JSON) body: `response.not_json` when it does not parse, else
    /// the dialect's outcomes for the document, and its `usage`.
    fn judge_buffered(&mut self, body: &[u8], sink: &mut ViolationSink) -> Judged;

    /// Ends a stream; see [`StreamFinish`].
    fn finish_stream(&mut self, end: StreamFinish<'_>) -> Judged;

    /// The body enforce mode answers a refused buffered response with, in the error shape the
    /// dialect's SDKs read.
    fn error_body(error: &EnforceError<'_>) -> Value
    where
        Self: Sized;

    /// The event enforce mode ends a refused stream with, framed as the dialect's events are and
    /// shaped as its SDKs raise (bytes: an SSE event's text, or a binary event-stream message);
    /// `last_sequence`: the last [`DialectRules::last_sequence_number`] the stream carried.
    fn error_event(error: &EnforceError<'_>, last_sequence: Option<i64>) -> Vec<u8>
    where
        Self: Sized;

    /// Where tool-call pieces sit in this dialect's stream events and buffered bodies, as data:
    /// the HTML report draws its lanes from it.
    fn pieces() -> &'static DialectTables
    where
        Self: Sized;
}

/// What enforce mode tells a client's SDK when it refuses an answer; each dialect shapes it
/// (see [`DialectRules::error_body`]).
#[derive(Debug, Clone, Copy)]
pub struct EnforceError<'a> {
    /// What the SDK prints: the broken rules and where.
    pub message: &'a str,
    /// The error's kind (its `type`).
    pub kind: &'a str,
    /// The error's `code`, for the shapes that carry one.
    pub code: &'a str,
    /// The first broken rule's id, for the shapes that name a `param`.
    pub param: Option<&'a str>,
}

/// What a judged body gives the report: its outcomes (one per choice, or one for the
/// document) and its `usage`.
pub type Judged = (Vec<ChoiceOutcome>, Option<KeptJson>);

/// How a stream is finished. `Judged`: the complete-stage and end-of-body rules run into the
/// exchange's sink (`ended_mid_event`: the body stopped inside an event). `Unjudged` (a reader
/// that left before the content was whole): the partial reassembly is still built, worth
/// showing, and its verdicts go to a scratch sink that is thrown away.
pub enum StreamFinish<'a> {
    Judged {
        ended_mid_event: bool,
        sink: &'a mut ViolationSink,
    },
    Unjudged {
        scratch: &'a mut ViolationSink,
    },
}
