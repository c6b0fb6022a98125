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

pub mod pieces;
pub mod request;

use std::sync::Arc;

use serde_json::Value;

use request::BedrockRequest;

use super::common::{self, StreamEnd};
use super::pieces::DialectTables;
use super::seam::{DialectRules, EnforceError, Judged, RequestParts};
use crate::engine::framing::SseEvent;
use crate::engine::report::{ChoiceOutcome, RequestFacts};
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, SchemaCache};
use crate::engine::violation::{Site, Stage, ViolationSink};

/// The error type enforce mode names in a refused buffered answer: a Converse error botocore
/// maps to its modeled `ModelErrorException` (the model's processing failed).
const ENFORCE_TYPE: &str = "ModelErrorException";

/// One Bedrock exchange's dialect state.
#[derive(Debug)]
pub struct BedrockState {
    request: BedrockRequest,
    schemas: Option<Arc<CompiledTools>>,
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
        let schemas = common::declared_tools(
            request.tools.as_deref(),
            |raw| cache.tools_for_raw(raw, &request::TOOLS),
            (request.facts.parsed, !request.declared.is_empty()),
            sink,
            notes,
        );
        BedrockState { request, schemas }
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

    fn stream_is_done(&self) -> bool {
        false
    }

    fn reassembly_bytes(&self) -> usize {
        0
    }

    fn on_event(&mut self, _event: &SseEvent, _seq: u64, _sink: &mut ViolationSink) {}

    fn judge_buffered(&self, body: &[u8], sink: &mut ViolationSink) -> Judged {
        let document: Value = match serde_json::from_slice(body) {
            Ok(document) => document,
            Err(error) => {
                sink.push(
                    RuleId::BedrockResponseNotJson,
                    Stage::Complete,
                    Site::at(""),
                    format!("a 2xx Converse body that does not parse: {error}"),
                );
                return (Vec::new(), None);
            }
        };
        let outcome = ChoiceOutcome {
            finish_reason: document
                .get("stopReason")
                .and_then(Value::as_str)
                .map(str::to_owned),
            ..ChoiceOutcome::default()
        };
        let usage = document.get("usage").filter(|u| !u.is_null()).cloned();
        (vec![outcome], usage)
    }

    fn finish_stream(&mut self, _end: StreamEnd<'_>) -> Judged {
        (Vec::new(), None)
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

    /// Not yet an event-stream `:exception` message: the error body on one line.
    fn error_event(error: &EnforceError<'_>, _last_sequence: Option<i64>) -> String {
        format!("{}\n", BedrockState::error_body(error))
    }

    fn pieces() -> &'static DialectTables {
        &pieces::PIECES
    }
}
