//! Ollama's native chat API (`POST .../api/chat`): OpenAI-shaped `tools[]`, and
//! `message.tool_calls[]` whose `function.arguments` is a JSON OBJECT (a string is the
//! violation here, the opposite of OpenAI's), with an optional `id` and `function.index`;
//! buffered (`stream: false`) or streamed as NDJSON, which is the default (`stream` absent).
//!
//! Input: the request body ([`request`]), then a buffered `ChatResponse` or its stream's lines
//! (each a `ChatResponse` chunk; the exchange hands NDJSON lines over as events' data).
//! Output: violations with `ollama.*` ids (plus the shared `response.stream_mismatch`,
//! `stream.truncated`, `request.schema_invalid`), one outcome for the report.

pub mod pieces;
pub mod request;
pub mod stream;
pub mod turn;

use std::cell::RefCell;
use std::sync::Arc;

use serde_json::Value;

use request::OllamaRequest;
use stream::StreamState;
use turn::{Context, Turn};

use super::common::{self, Declared, StreamFinish};
use super::pieces::DialectTables;
use super::seam::{DialectRules, EnforceError, Judged, RequestParts};
use crate::engine::framing::SseEvent;
use crate::engine::head::ResponseHead;
use crate::engine::judge::Judge;
use crate::engine::report::KeptJson;
use crate::engine::report::{BodyKind, RequestFacts};
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, SchemaCache};
use crate::engine::violation::{Stage, ViolationSink};

/// The NDJSON content type Ollama streams with.
const NDJSON: &str = "application/x-ndjson";

/// One Ollama exchange's dialect state.
#[derive(Debug)]
pub struct OllamaState {
    request: OllamaRequest,
    schemas: Option<Arc<CompiledTools>>,
    stream: StreamState,
    /// The stream's content type when it is not NDJSON's, once [`DialectRules::body_kind`]
    /// read the head; reported with the first line (or at the end).
    wrong_type: RefCell<Option<String>>,
    type_reported: bool,
}

impl OllamaState {
    fn context(&self) -> Context<'_> {
        Context {
            request: &self.request,
            schemas: self.schemas.as_deref(),
        }
    }

    fn report_content_type(&mut self, sink: &mut ViolationSink) {
        if self.type_reported {
            return;
        }
        self.type_reported = true;
        if let Some(shown) = self.wrong_type.get_mut().take() {
            Judge::new(sink, Stage::Head).flag(
                RuleId::OllamaStreamContentType,
                "",
                format!("an Ollama stream is {NDJSON}, got {shown:?}"),
            );
        }
    }

    fn finish_judged(&mut self, ended_mid_event: bool, sink: &mut ViolationSink) {
        self.report_content_type(sink);
        common::report_mid_event(ended_mid_event, sink);
        // An error line ends the stream: it is its own finding, not also a missing `done`.
        if self.stream.done_at.is_none() && !self.stream.errored && !ended_mid_event {
            Judge::new(sink, Stage::Complete).flag(
                RuleId::OllamaStreamNoDone,
                "",
                "the stream ended without a done:true line",
            );
        }
        turn::judge(&self.stream.turn, self.context(), sink);
    }
}

impl DialectRules for OllamaState {
    fn start(
        parts: RequestParts<'_>,
        cache: &SchemaCache,
        sink: &mut ViolationSink,
        notes: &mut Vec<String>,
    ) -> OllamaState {
        let body: Option<Value> = common::is_object_text(parts.body)
            .then(|| common::from_json_bytes(parts.body).ok())
            .flatten();
        let request = request::read(body.as_ref(), sink);
        let schemas = common::declared_tools(
            request.raw_tools.as_deref(),
            |raw| cache.tools_for_raw(raw, &request::TOOLS),
            (request.facts.parsed, request.declares),
            sink,
            notes,
        );
        OllamaState {
            request,
            schemas,
            stream: StreamState::default(),
            wrong_type: RefCell::new(None),
            type_reported: false,
        }
    }

    fn declared_request(&self) -> Declared<'_> {
        Declared::new(&self.request.facts, self.schemas.as_ref())
    }

    fn facts_mut(&mut self) -> &mut RequestFacts {
        &mut self.request.facts
    }

    /// `application/x-ndjson` is a stream whatever was asked. A stream asked for (the default)
    /// is read as NDJSON whatever its content type says (an SSE body then shows as lines that
    /// are not JSON, which is what the `ollama` client meets); another type is reported. A
    /// buffered answer is read by its content type.
    fn body_kind(&self, head: &ResponseHead) -> BodyKind {
        let mime = head.content_type.as_deref().map(|t| {
            t.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        });
        if mime.as_deref() == Some(NDJSON) {
            return BodyKind::Ndjson;
        }
        if self.request.facts.stream || !self.request.facts.parsed {
            if let Some(content_type) = &head.content_type {
                self.wrong_type.replace(Some(content_type.clone()));
            }
            return BodyKind::Ndjson;
        }
        crate::engine::framing::body_kind(head.content_type.as_deref(), false)
    }

    fn stream_is_done(&self) -> bool {
        self.stream.done_at.is_some()
    }

    fn reassembly_bytes(&self) -> usize {
        self.stream.held
    }

    /// Bounds what one line may add: one line may carry thousands of calls.
    fn bound_reassembly(&mut self, max: usize) {
        self.stream.bound = max;
    }

    /// One NDJSON line (empty: a blank line).
    fn on_event(&mut self, event: &SseEvent, seq: u64, sink: &mut ViolationSink) {
        self.report_content_type(sink);
        self.stream.on_line(&event.data, seq, sink);
    }

    fn judge_buffered(&mut self, body: &[u8], sink: &mut ViolationSink) -> Judged {
        let document = match serde_json::from_slice::<Value>(body) {
            Ok(document @ Value::Object(_)) => document,
            Ok(_) | Err(_) => {
                let shown = common::preview(&Value::String(
                    String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned(),
                ));
                Judge::new(sink, Stage::Complete).flag(
                    RuleId::OllamaResponseNotJson,
                    "",
                    format!("a 2xx buffered body that is not one JSON object: {shown}"),
                );
                return (Vec::new(), None);
            }
        };
        let read = Turn::read(&document, "", None);
        turn::judge(&read, self.context(), sink);
        (
            vec![read.outcome()],
            stream::usage(&document).map(KeptJson::from),
        )
    }

    fn finish_stream(&mut self, end: StreamFinish<'_>) -> Judged {
        match end {
            StreamFinish::Judged {
                ended_mid_event,
                sink,
            } => self.finish_judged(ended_mid_event, sink),
            StreamFinish::Unjudged { .. } => {}
        }
        (
            vec![self.stream.turn.outcome()],
            self.stream.usage.clone().map(KeptJson::from),
        )
    }

    /// Ollama's error shape, `{"error":"..."}`: what the server answers a failed request with,
    /// and what the `ollama` client raises `ResponseError` from.
    fn error_body(error: &EnforceError<'_>) -> Value {
        serde_json::json!({ "error": error.message })
    }

    /// The same object as one NDJSON line: the `ollama` client raises `ResponseError` on a
    /// stream line with an `error` key (`_client.py`, `_stream`).
    fn error_event(error: &EnforceError<'_>, _last_sequence: Option<i64>) -> Vec<u8> {
        format!("{}\n", OllamaState::error_body(error)).into_bytes()
    }

    fn pieces() -> &'static DialectTables {
        &pieces::PIECES
    }
}

#[cfg(test)]
mod tests;
