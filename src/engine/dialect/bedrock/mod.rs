//! The AWS Bedrock Converse dialect (`POST .../model/{modelId}/converse` and
//! `/converse-stream`): `toolConfig.tools[].toolSpec` with `inputSchema.json`, `toolChoice`
//! auto / any / tool, and `toolUse` blocks (`toolUseId`, `name`, an `input` object) in
//! `output.message.content[]`, buffered, or streamed as AWS event-stream binary messages
//! (`application/vnd.amazon.eventstream`) whose `:event-type` names each event.
//!
//! Input: the request path (model, and whether it streams) and body ([`request`]), then a
//! buffered `ConverseResponse` or its stream's messages. Output: violations with `bedrock.*`
//! ids (plus the shared `response.stream_mismatch` and `request.schema_invalid`), one outcome
//! for the message.

pub mod message;
pub mod pieces;
pub mod request;
mod request_rules;
pub mod stream;

use std::cell::Cell;
use std::sync::Arc;

use serde_json::Value;

use request::BedrockRequest;
use stream::StreamState;

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

/// The error type enforce mode names in a refused buffered answer: a Converse error botocore
/// maps to its modeled `ModelErrorException` (the model's processing failed).
const ENFORCE_TYPE: &str = "ModelErrorException";

/// The `:exception-type` enforce mode ends a refused stream with: ConverseStream's modeled
/// `modelStreamErrorException` (botocore raises `EventStreamError` with this code).
const ENFORCE_STREAM_TYPE: &str = "modelStreamErrorException";

/// One Bedrock exchange's dialect state.
#[derive(Debug)]
pub struct BedrockState {
    request: BedrockRequest,
    schemas: Option<Arc<CompiledTools>>,
    stream: StreamState,
    /// How the body is framed, once [`DialectRules::body_kind`] said it.
    kind: Cell<Option<BodyKind>>,
    /// `bedrock.stream.http_content_type` was reported.
    content_type_told: bool,
}

impl BedrockState {
    /// `bedrock.stream.http_content_type`, once: a `converse-stream` answer that is not an
    /// event stream.
    fn check_content_type(&mut self, sink: &mut ViolationSink) {
        let kind = self.kind.get();
        if self.content_type_told
            || !self.request.facts.stream
            || kind.is_none_or(|k| k == BodyKind::EventStream)
        {
            return;
        }
        self.content_type_told = true;
        let detail = format!(
            "a converse-stream answer must be {}; this one is read as {kind:?}",
            crate::engine::framing::EVENT_STREAM_TYPE
        );
        Judge::new(sink, Stage::Head).flag(RuleId::BedrockStreamHttpContentType, "", detail);
    }

    /// The message rules over the reassembled stream, once.
    fn judge_stream(&mut self, sink: &mut ViolationSink) {
        if self.stream.judged {
            return;
        }
        self.stream.judged = true;
        self.stream.settle();
        let message = self.stream.message();
        message::judge(&message, &self.request, self.schemas.as_deref(), sink);
    }

    fn finish_judged(&mut self, ended_mid_event: bool, sink: &mut ViolationSink) {
        self.check_content_type(sink);
        if ended_mid_event {
            let detail = "the body ended inside an event-stream message";
            Judge::new(sink, Stage::Complete).flag(RuleId::BedrockFrameTruncated, "", detail);
        }
        if self.stream.errored {
            return;
        }
        self.judge_stream(sink);
        let mut judge = Judge::new(sink, Stage::Complete);
        if self.stream.stop.is_none() {
            let detail = "the stream ended without messageStop";
            judge.flag(RuleId::BedrockStreamMessageStopMissing, "", detail);
        } else if !self.stream.metadata {
            let detail = "the stream ended after messageStop without its metadata event";
            judge.flag(RuleId::BedrockStreamMetadataMissing, "", detail);
        }
    }
}

impl DialectRules for BedrockState {
    fn start(
        parts: RequestParts<'_>,
        cache: &SchemaCache,
        sink: &mut ViolationSink,
        notes: &mut Vec<String>,
    ) -> BedrockState {
        let body = common::is_object_text(parts.body).then_some(parts.body);
        let request = request::read(body, parts.path);
        if let Some(body) = body.and_then(|b| serde_json::from_slice::<Value>(b).ok()) {
            request_rules::check(&body, &request, sink);
        }
        let schemas = common::declared_tools(
            request.tools.as_deref(),
            |raw| cache.tools_for_raw(raw, &request::TOOLS),
            (request.facts.parsed, !request.declared.is_empty()),
            sink,
            notes,
        );
        BedrockState {
            request,
            stream: StreamState::for_calls(schemas.clone()),
            schemas,
            kind: Cell::new(None),
            content_type_told: false,
        }
    }

    fn declared_request(&self) -> Declared<'_> {
        Declared::new(&self.request.facts, self.schemas.as_ref())
    }

    fn facts_mut(&mut self) -> &mut RequestFacts {
        &mut self.request.facts
    }

    /// A `converse-stream` is an event stream whatever its head says (a missing or wrong
    /// content type is `bedrock.stream.http_content_type`, and the body is still read as
    /// messages when it names none); `converse` is the default reading.
    fn body_kind(&self, head: &ResponseHead) -> BodyKind {
        let kind = crate::engine::framing::body_kind(head.content_type.as_deref(), false);
        let kind = match (self.request.facts.stream, head.content_type.is_some()) {
            (true, false) => BodyKind::EventStream,
            _ => kind,
        };
        self.kind.set(Some(kind));
        kind
    }

    fn stream_is_done(&self) -> bool {
        self.stream.is_done()
    }

    fn reassembly_bytes(&self) -> usize {
        self.stream.held
    }

    fn bound_reassembly(&mut self, max: usize) {
        self.stream.bound = max;
    }

    /// One event-stream message (its `:event-type` as the event name, its payload as data),
    /// or the framing's own `:exception:` / `:error:` / `:frame:` event.
    fn on_event(&mut self, event: &SseEvent, seq: u64, sink: &mut ViolationSink) {
        self.check_content_type(sink);
        if self
            .stream
            .on_event(event.event.as_deref(), &event.data, seq, sink)
        {
            self.judge_stream(sink);
        }
    }

    fn judge_buffered(&mut self, body: &[u8], sink: &mut ViolationSink) -> Judged {
        let document: Value = match serde_json::from_slice(body) {
            Ok(document) => document,
            Err(error) => {
                let detail = format!("a 2xx Converse body that does not parse: {error}");
                Judge::new(sink, Stage::Complete).flag(RuleId::BedrockResponseNotJson, "", detail);
                return (Vec::new(), None);
            }
        };
        let message = message::read_buffered(&document);
        message::judge(&message, &self.request, self.schemas.as_deref(), sink);
        let usage = document.get("usage").filter(|u| !u.is_null()).cloned();
        (vec![message.into_outcome()], usage.map(KeptJson::from))
    }

    fn finish_stream(&mut self, end: StreamFinish<'_>) -> Judged {
        match end {
            StreamFinish::Judged {
                ended_mid_event,
                sink,
            } => self.finish_judged(ended_mid_event, sink),
            StreamFinish::Unjudged { scratch } => self.judge_stream(scratch),
        }
        self.stream.settle();
        let outcomes = if self.stream.events == 0 {
            Vec::new()
        } else {
            vec![self.stream.message().into_outcome()]
        };
        (outcomes, self.stream.usage.clone().map(KeptJson::from))
    }

    /// Bedrock's error body, `{"message": ...}` with its type in `__type` (botocore's rest-json
    /// error parser reads the code from `x-amzn-ErrorType` or `__type`, the message from
    /// `message`), plus the first broken rule.
    fn error_body(error: &EnforceError<'_>) -> Value {
        serde_json::json!({
            "__type": ENFORCE_TYPE,
            "message": error.message,
            "rule": error.param,
        })
    }

    /// An event-stream `:exception` message (`:exception-type: modelStreamErrorException`, one
    /// of ConverseStream's modeled exceptions) with `{"message": ...}`: botocore raises
    /// `EventStreamError` on it, and the stream ends there.
    fn error_event(error: &EnforceError<'_>, _last_sequence: Option<i64>) -> Vec<u8> {
        let payload = serde_json::json!({"message": error.message}).to_string();
        crate::engine::framing::event_stream::encode(
            &[
                (":message-type", "exception"),
                (":exception-type", ENFORCE_STREAM_TYPE),
                (":content-type", "application/json"),
            ],
            payload.as_bytes(),
        )
    }

    fn pieces() -> &'static DialectTables {
        &pieces::PIECES
    }
}

#[cfg(test)]
mod tests;
