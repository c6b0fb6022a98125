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

pub mod candidate;
mod openapi;
pub mod pieces;
pub mod request;
mod request_rules;
pub mod stream;

use std::cell::Cell;
use std::sync::Arc;

use serde_json::Value;

use candidate::Context;
use request::GeminiRequest;
use stream::StreamState;

use super::common::{self, Declared, StreamFinish};
use super::pieces::DialectTables;
use super::seam::{DialectRules, EnforceError, Judged, RequestParts};
use crate::engine::framing::SseEvent;
use crate::engine::head::ResponseHead;
use crate::engine::judge::Judge;
use crate::engine::report::KeptJson;
use crate::engine::report::{BodyKind, ChoiceOutcome, RequestFacts};
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, SchemaCache};
use crate::engine::violation::{Stage, ViolationSink};

/// The HTTP status enforce mode answers with by default (`enforce.status`), which Google's error
/// object repeats as its `code`.
const ENFORCE_CODE: u16 = 502;

/// One Gemini exchange's dialect state.
#[derive(Debug)]
pub struct GeminiState {
    request: GeminiRequest,
    schemas: Option<Arc<CompiledTools>>,
    stream: StreamState,
    /// How the body is framed, once [`DialectRules::body_kind`] said it.
    kind: Cell<Option<BodyKind>>,
}

impl GeminiState {
    fn context(&self) -> Context<'_> {
        Context {
            request: &self.request,
            schemas: self.schemas.as_deref(),
        }
    }

    /// Judges a whole buffered body's document: each candidate, and whether there are any.
    fn judge_document(&self, document: &Value, sink: &mut ViolationSink) -> Vec<ChoiceOutcome> {
        let candidates = document
            .get("candidates")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if candidates.is_empty() && !blocked(document) {
            report_no_candidates(sink);
        }
        let mut outcomes: Vec<ChoiceOutcome> = candidates
            .iter()
            .enumerate()
            .map(|(position, candidate)| {
                let read = candidate::read_buffered(candidate, position);
                let base = format!("/candidates/{position}");
                candidate::judge(&read, &base, self.context(), sink);
                read.outcome()
            })
            .collect();
        outcomes.sort_by_key(|outcome| outcome.index);
        outcomes
    }

    /// Judges the streamed candidate `index` once (at its finish event, or at the end).
    fn judge_candidate(&mut self, index: u32, sink: &mut ViolationSink) {
        let Some(state) = self.stream.candidates.get(&index) else {
            return;
        };
        if state.judged {
            return;
        }
        let base = format!("/candidates/{index}");
        candidate::judge(&state.candidate, &base, self.context(), sink);
        if let Some(state) = self.stream.candidates.get_mut(&index) {
            state.judged = true;
        }
    }

    /// The end of a judged stream: the candidates never judged, the finish reasons never sent,
    /// a stream that held no candidate or no event.
    fn finish_judged(&mut self, ended_mid_event: bool, sink: &mut ViolationSink) {
        common::report_mid_event(ended_mid_event, sink);
        let indexes: Vec<u32> = self.stream.candidates.keys().copied().collect();
        for index in indexes {
            self.judge_candidate(index, sink);
        }
        for (index, state) in &self.stream.candidates {
            if state.finished_at.is_none() {
                let mut judge = Judge::new(sink, Stage::Complete).choice(Some(*index));
                let detail =
                    format!("the stream ended and candidate {index} never got a finishReason");
                let pointer = format!("/candidates/{index}/finishReason");
                judge.flag(RuleId::GeminiStreamNoFinishReason, &pointer, detail);
            }
        }
        if self.request.alt_sse && self.stream.events == 0 {
            let detail = if self.kind.get() == Some(BodyKind::Sse) {
                "the request asked alt=sse and the body carried no data: event"
            } else {
                "the request asked alt=sse and the answer is not text/event-stream"
            };
            Judge::new(sink, Stage::Complete).flag(RuleId::GeminiStreamNotSse, "", detail);
        }
        if !self.stream.any_candidates && !self.stream.blocked && !self.stream.errored {
            report_no_candidates(sink);
        }
    }

    fn outcomes(&self) -> Vec<ChoiceOutcome> {
        self.stream
            .candidates
            .values()
            .map(|state| state.candidate.outcome())
            .collect()
    }
}

/// Whether a response (or a stream's event) says the prompt was blocked
/// (`promptFeedback.blockReason`).
fn blocked(document: &Value) -> bool {
    document
        .get("promptFeedback")
        .and_then(|f| f.get("blockReason"))
        .is_some_and(|r| !r.is_null())
}

fn report_no_candidates(sink: &mut ViolationSink) {
    let detail = "a 2xx answer with no candidates and no promptFeedback.blockReason";
    let rule = RuleId::GeminiResponseNoCandidatesWithoutBlock;
    Judge::new(sink, Stage::Complete).flag(rule, "/candidates", detail);
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
        let stream = StreamState {
            partial_expected: request.vertex && request.stream_arguments,
            ..StreamState::default()
        };
        GeminiState {
            request,
            schemas,
            stream,
            kind: Cell::new(None),
        }
    }

    fn declared_request(&self) -> Declared<'_> {
        Declared::new(&self.request.facts, self.schemas.as_ref())
    }

    fn facts_mut(&mut self) -> &mut RequestFacts {
        &mut self.request.facts
    }

    /// `:generateContent` is a buffered JSON body. `:streamGenerateContent` is SSE when the head
    /// says `text/event-stream` (or names no type and the query asked `alt=sse`), and otherwise a
    /// JSON array of `GenerateContentResponse`s.
    fn body_kind(&self, head: &ResponseHead) -> BodyKind {
        let kind = crate::engine::framing::body_kind(head.content_type.as_deref(), false);
        let kind = match (self.request.facts.stream, head.content_type.is_some(), kind) {
            (false, _, kind) => kind,
            (true, true, BodyKind::Json) => BodyKind::JsonArray,
            (true, true, kind) => kind,
            (true, false, _) if self.request.alt_sse => BodyKind::Sse,
            (true, false, _) => BodyKind::JsonArray,
        };
        self.kind.set(Some(kind));
        kind
    }

    /// Every candidate seen has its finish reason (a usage-only trailer may still follow).
    fn stream_is_done(&self) -> bool {
        !self.stream.candidates.is_empty()
            && self
                .stream
                .candidates
                .values()
                .all(|state| state.finished_at.is_some())
    }

    fn reassembly_bytes(&self) -> usize {
        self.stream.held
    }

    /// Bounds what one event may add: one event may carry thousands of parts.
    fn bound_reassembly(&mut self, max: usize) {
        self.stream.bound = max;
    }

    /// One event (SSE data, or a JSON-array element). The candidates whose finish reason it
    /// carried are judged at once.
    fn on_event(&mut self, event: &SseEvent, seq: u64, sink: &mut ViolationSink) {
        if self.stream.events == 0
            && self.request.alt_sse
            && self.kind.get() == Some(BodyKind::JsonArray)
        {
            let detail = "the request asked alt=sse and the answer is not text/event-stream";
            Judge::new(sink, Stage::Head).flag(RuleId::GeminiStreamNotSse, "", detail);
        }
        for index in self.stream.on_event(&event.data, seq, sink) {
            self.judge_candidate(index, sink);
        }
    }

    /// Reads the whole document as a tree and judges each candidate.
    fn judge_buffered(&mut self, body: &[u8], sink: &mut ViolationSink) -> Judged {
        let Some(document) = common::response_json(body, sink) else {
            return (Vec::new(), None);
        };
        let outcomes = self.judge_document(&document, sink);
        let usage = document
            .get("usageMetadata")
            .filter(|u| !u.is_null())
            .cloned();
        (outcomes, usage.map(KeptJson::from))
    }

    /// Ends a stream; see [`StreamFinish`].
    fn finish_stream(&mut self, end: StreamFinish<'_>) -> Judged {
        match end {
            StreamFinish::Judged {
                ended_mid_event,
                sink,
            } => self.finish_judged(ended_mid_event, sink),
            StreamFinish::Unjudged { scratch } => {
                let indexes: Vec<u32> = self.stream.candidates.keys().copied().collect();
                for index in indexes {
                    self.judge_candidate(index, scratch);
                }
            }
        }
        (
            self.outcomes(),
            self.stream.usage.clone().map(KeptJson::from),
        )
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
    fn error_event(error: &EnforceError<'_>, _last_sequence: Option<i64>) -> Vec<u8> {
        format!("{}\n", GeminiState::error_body(error)).into_bytes()
    }

    fn pieces() -> &'static DialectTables {
        &pieces::PIECES
    }
}

#[cfg(test)]
mod tests;
