//! The Model Context Protocol over Streamable HTTP: JSON-RPC 2.0 between an agent and a tool
//! server, on one endpoint (`POST` a message; `GET` a server stream; `DELETE` a session).
//!
//! Input: the request (method, the headers [`crate::engine::head::MCP_REQUEST_HEADERS`] names,
//! its body: one JSON-RPC message, or a 2025-03-26 batch), the response head (any status: 4xx
//! answers carry JSON-RPC errors too), then a JSON body (one message or a batch), an SSE
//! stream whose events' data are messages (priming events with empty data skipped), or an empty
//! body (`202`, a DELETE). Output: violations with `mcp.*` ids for what one exchange shows (the
//! reference's states M and X), and an [`observe::McpObservation`] of everything it saw, which
//! the conversation store above the engine takes from the report (state S).

pub mod observe;
pub mod pieces;

use serde_json::Value;

use self::observe::{McpObservation, Where};
use super::common::StreamEnd;
use super::pieces::DialectTables;
use super::seam::{DialectRules, EnforceError, Judged, RequestParts};
use crate::engine::framing::SseEvent;
use crate::engine::head::{ResponseHead, header};
use crate::engine::report::RequestFacts;
use crate::engine::schema::SchemaCache;
use crate::engine::violation::ViolationSink;

/// The JSON-RPC code enforce mode's refusal carries: internal error.
const INTERNAL_ERROR: i64 = -32603;

/// One MCP exchange's dialect state.
#[derive(Debug)]
pub struct McpState {
    facts: RequestFacts,
    observation: McpObservation,
    /// The cap on what [`McpState::observation`] keeps.
    max_observed: usize,
}

impl McpState {
    /// Reads one JSON document of the response (a body, or an event's data) into the
    /// observation: a message, or each element of a batch.
    fn observe_response(&mut self, document: &Value, at: Where) {
        match document {
            Value::Array(items) => {
                self.observation.response_batch = true;
                for item in items {
                    self.observation.add(item, at.clone(), self.max_observed);
                }
            }
            message => self.observation.add(message, at, self.max_observed),
        }
    }

    /// Whether every request of the body got its response (what ends a POST's SSE stream).
    fn all_answered(&self) -> bool {
        let requests = &self.observation.request;
        let answered = |id: &Value| {
            self.observation
                .response
                .iter()
                .any(|m| m.id.as_ref() == Some(id) && is_response(m.kind))
        };
        requests
            .iter()
            .filter(|m| m.kind == observe::MessageKind::Request)
            .filter_map(|m| m.id.as_ref())
            .all(answered)
            && requests
                .iter()
                .any(|m| m.kind == observe::MessageKind::Request)
    }
}

fn is_response(kind: observe::MessageKind) -> bool {
    matches!(
        kind,
        observe::MessageKind::Result | observe::MessageKind::Error
    )
}

impl DialectRules for McpState {
    fn start(
        parts: RequestParts<'_>,
        _cache: &SchemaCache,
        _sink: &mut ViolationSink,
        _notes: &mut Vec<String>,
    ) -> McpState {
        let headers = parts.headers;
        let mut observation = McpObservation {
            method: parts.method.map(str::to_ascii_uppercase),
            request_session: header(headers, "mcp-session-id").map(str::to_owned),
            protocol_version_header: header(headers, "mcp-protocol-version").map(str::to_owned),
            last_event_id: header(headers, "last-event-id").map(str::to_owned),
            ..McpObservation::default()
        };
        let max_observed = observe::DEFAULT_MAX_OBSERVED;
        match serde_json::from_slice::<Value>(parts.body) {
            Ok(Value::Array(items)) => {
                observation.request_batch = true;
                for item in &items {
                    observation.add(item, Where::default(), max_observed);
                }
            }
            Ok(message) => observation.add(&message, Where::default(), max_observed),
            Err(_) => {}
        }
        McpState {
            // Not `parsed`: an MCP request has no `stream` flag for the exchange to compare.
            facts: RequestFacts::default(),
            observation,
            max_observed,
        }
    }

    fn admit_tools(&self) {}

    fn facts(&self) -> &RequestFacts {
        &self.facts
    }

    fn into_facts(self: Box<Self>) -> RequestFacts {
        self.facts
    }

    /// Every status: a 4xx refusal carries a JSON-RPC error the rules read.
    fn judges_status(&self, _status: u16) -> bool {
        true
    }

    fn on_head(&mut self, head: &ResponseHead, _sink: &mut ViolationSink) {
        self.observation.status = Some(head.status);
        self.observation.content_type = head.content_type.clone();
        self.observation.response_session =
            header(&head.headers, "mcp-session-id").map(str::to_owned);
    }

    fn take_mcp(&mut self) -> Option<Box<McpObservation>> {
        Some(Box::new(std::mem::take(&mut self.observation)))
    }

    /// A POST's stream is whole once every request of its body was answered; a GET stream
    /// never ends by its own framing.
    fn stream_is_done(&self) -> bool {
        self.all_answered()
    }

    fn reassembly_bytes(&self) -> usize {
        self.observation.bytes
    }

    fn bound_reassembly(&mut self, max: usize) {
        self.max_observed = self.max_observed.min(max);
    }

    /// One SSE event: its data is one JSON-RPC message (or a 2025-03-26 batch); a priming
    /// event's empty data is no message.
    fn on_event(&mut self, event: &SseEvent, seq: u64, _sink: &mut ViolationSink) {
        if event.data.is_empty() {
            return;
        }
        let at = Where {
            seq: Some(seq),
            event_id: event.id.clone(),
        };
        if let Ok(document) = serde_json::from_str::<Value>(&event.data) {
            self.observe_response(&document, at);
        }
    }

    fn judge_buffered(&self, _body: &[u8], _sink: &mut ViolationSink) -> Judged {
        (Vec::new(), None)
    }

    fn finish_stream(&mut self, _end: StreamEnd<'_>) -> Judged {
        (Vec::new(), None)
    }

    /// A JSON-RPC error response: what every MCP client raises on. Its id is `null`: enforce
    /// mode's refusal is built without the request.
    fn error_body(error: &EnforceError<'_>) -> Value {
        serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {
                "code": INTERNAL_ERROR,
                "message": error.message,
                "data": {"type": error.kind, "code": error.code, "rule": error.param},
            },
        })
    }

    /// The same error as one SSE `message` event.
    fn error_event(error: &EnforceError<'_>, _last_sequence: Option<i64>) -> Vec<u8> {
        format!("event: message\ndata: {}\n\n", McpState::error_body(error)).into_bytes()
    }

    fn pieces() -> &'static DialectTables {
        &pieces::PIECES
    }
}
