//! The Google Gemini dialect (`POST .../models/{m}:generateContent` and
//! `:streamGenerateContent`, AI Studio and Vertex AI): `tools[].functionDeclarations` with
//! `parameters` (an OpenAPI subset) or `parametersJsonSchema`, `toolConfig.functionCallingConfig`
//! modes, and `functionCall` parts (`name`, an `args` object, an optional `id`) in
//! `candidates[].content.parts[]`, buffered, streamed as data-only SSE (`alt=sse`) or as one JSON
//! array (no `alt=sse`).
//!
//! Input: the request path (model, method, `alt=sse`; never kept: the query may carry `key=`) and
//! body ([`request`], judged by `request_rules`), then a buffered `GenerateContentResponse` or
//! its stream's events (SSE events' data, or the JSON array's elements, which the exchange
//! hands over alike). Output: violations with `gemini.*` ids (plus the shared
//! `response.not_json`, `response.stream_mismatch`, `stream.truncated`,
//! `request.schema_invalid`), one outcome per candidate for the report.

mod openapi;
pub mod pieces;
pub mod request;
mod request_rules;

use std::sync::Arc;

use serde_json::Value;

use request::GeminiRequest;

use super::common::{self, StreamEnd};
use super::pieces::DialectTables;
use super::seam::{DialectRules, EnforceError, Judged, RequestParts};
use crate::engine::framing::SseEvent;
use crate::engine::head::ResponseHead;
use crate::engine::report::{BodyKind, ChoiceOutcome, RequestFacts};
use crate::engine::schema::{CompiledTools, SchemaCache};
use crate::engine::violation::ViolationSink;

/// The HTTP status enforce mode answers with by default (`enforce.status`), which Google's error
/// object repeats as its `code`.
const ENFORCE_CODE: u16 = 502;

/// One Gemini exchange's dialect state.
#[derive(Debug)]
pub struct GeminiState {
    request: GeminiRequest,
    schemas: Option<Arc<CompiledTools>>,
}

impl DialectRules for GeminiState {
    fn start(
        parts: RequestParts<'_>,
        cache: &SchemaCache,
        sink: &mut ViolationSink,
        notes: &mut Vec<String>,
    ) -> GeminiState {
        let body: Option<Value> = common::is_object_text(parts.body)
            .then(|| common::from_json_bytes(parts.body).ok())
            .flatten();
        let request = request::read(body.as_ref(), parts.path);
        if let Some(body) = &body {
            request_rules::check(body, &request, parts.path, sink);
        }
        let schemas = common::declared_tools(
            request.flat_tools.as_deref(),
            |raw| cache.tools_for_raw(raw, &request::TOOLS),
            (request.facts.parsed, request.declares),
            sink,
            notes,
        );
        GeminiState { request, schemas }
    }

    fn admit_tools(&self) {
        if let Some(tools) = &self.schemas {
            tools.admit();
        }
    }

    fn facts(&self) -> &RequestFacts {
        &self.request.facts
    }

    fn into_facts(self: Box<Self>) -> RequestFacts {
        self.request.facts
    }

    /// `:generateContent` is a buffered JSON body. `:streamGenerateContent` is SSE when the head
    /// says `text/event-stream` (or names no type and the query asked `alt=sse`), and otherwise a
    /// JSON array of `GenerateContentResponse`s.
    fn body_kind(&self, head: &ResponseHead) -> BodyKind {
        let kind = crate::engine::framing::body_kind(head.content_type.as_deref(), false);
        if !self.request.facts.stream {
            return kind;
        }
        match (head.content_type.is_some(), kind) {
            (true, BodyKind::Json) => BodyKind::JsonArray,
            (true, kind) => kind,
            (false, _) if self.request.alt_sse => BodyKind::Sse,
            (false, _) => BodyKind::JsonArray,
        }
    }

    fn stream_is_done(&self) -> bool {
        false
    }

    fn reassembly_bytes(&self) -> usize {
        0
    }

    fn on_event(&mut self, _event: &SseEvent, _seq: u64, _sink: &mut ViolationSink) {}

    fn judge_buffered(&self, body: &[u8], sink: &mut ViolationSink) -> Judged {
        let Some(document) = common::response_json(body, sink) else {
            return (Vec::new(), None);
        };
        let usage = document
            .get("usageMetadata")
            .filter(|u| !u.is_null())
            .cloned();
        (Vec::new(), usage)
    }

    fn finish_stream(&mut self, end: StreamEnd<'_>) -> Judged {
        if let StreamEnd::Judged {
            ended_mid_event,
            sink,
        } = end
        {
            common::report_mid_event(ended_mid_event, sink);
        }
        (Vec::<ChoiceOutcome>::new(), None)
    }

    /// Google's error object: `{"error":{"code","message","status"}}` (what both SDKs raise
    /// from), with the first broken rule in an `ErrorInfo` detail.
    fn error_body(error: &EnforceError<'_>) -> Value {
        let mut details = Vec::new();
        if let Some(rule) = error.param {
            details.push(serde_json::json!({
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": error.code,
                "domain": "tooltap",
                "metadata": {"rule": rule},
            }));
        }
        serde_json::json!({
            "error": {
                "code": ENFORCE_CODE,
                "message": error.message,
                "status": "INTERNAL",
                "details": details,
            },
        })
    }

    /// The error object alone on one line, not a `data:` event: google-genai (Python) raises
    /// on a stream line that is a JSON `{"error":...}` object, and @google/genai raises on a
    /// network chunk that parses as one, or on bytes left without an event delimiter at the
    /// end of the body (a `data:` event with an error is read by neither as an error).
    fn error_event(error: &EnforceError<'_>, _last_sequence: Option<i64>) -> String {
        format!("{}\n", GeminiState::error_body(error))
    }

    fn pieces() -> &'static DialectTables {
        &pieces::PIECES
    }
}
