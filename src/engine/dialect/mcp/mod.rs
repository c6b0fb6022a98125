//! The Model Context Protocol over Streamable HTTP: JSON-RPC 2.0 between an agent and a tool
//! server, on one endpoint (`POST` a message; `GET` a server stream; `DELETE` a session).
//!
//! Input: the request (method, the headers [`crate::engine::head::MCP_REQUEST_HEADERS`] names,
//! its body: one JSON-RPC message, or a 2025-03-26 batch), the response head (any status: 4xx
//! answers carry JSON-RPC errors too), then a JSON body (one message or a batch), an SSE
//! stream whose events' data are messages (priming events with empty data skipped), or an empty
//! body (`202`, a DELETE). Output: violations with `mcp.*` ids for what one exchange shows (the
//! reference's states M and X: [`request`], [`envelope`], [`answer`], [`tools_list`],
//! [`tools_call`]), and a [`McpObservation`] of everything it saw
//! ([`crate::engine::mcp_observation`]), which the conversation store above the engine takes
//! from the report (state S).

pub mod answer;
pub mod envelope;
pub mod pieces;
pub mod request;
pub mod tools_call;
pub mod tools_list;
pub mod version;

use serde_json::Value;

use self::answer::{Answer, Asked};
use self::version::Version;
use super::common::{Declared, StreamFinish};
use super::pieces::DialectTables;
use super::seam::{DialectRules, EnforceError, Judged, RequestParts};
use crate::engine::framing::SseEvent;
use crate::engine::head::{ResponseHead, header};
use crate::engine::judge::Judge;
use crate::engine::mcp_observation::{self, McpObservation, MessageKind, Where};
use crate::engine::report::RequestFacts;
use crate::engine::rules::RuleId;
use crate::engine::schema::SchemaCache;
use crate::engine::violation::{Stage, ViolationSink};

/// The JSON-RPC code enforce mode's refusal carries: internal error.
const INTERNAL_ERROR: i64 = -32603;

/// One MCP exchange's dialect state.
#[derive(Debug)]
pub struct McpState {
    facts: RequestFacts,
    observation: McpObservation,
    /// The cap on what [`McpState::observation`] keeps.
    max_observed: usize,
    /// Where a `tools/list` page's schemas are compiled.
    cache: SchemaCache,
    asked: Asked,
    answer: Answer,
}

impl McpState {
    /// One JSON document of the response (a body, or an event's data): a message, or each
    /// element of a batch, judged and observed.
    fn response_document(
        &mut self,
        document: Value,
        judge: &mut Judge<'_>,
        on_stream: bool,
        event_id: Option<&str>,
    ) {
        let seq = Some(judge.frame().unwrap_or(0));
        let place = || Where {
            seq,
            event_id: event_id.map(str::to_owned),
        };
        match document {
            Value::Array(items) => {
                self.observation.response_batch = true;
                if on_stream && self.asked.version.unwrap_or(Version::V1) >= Version::V2 {
                    judge.warn(
                        RuleId::McpJsonrpcBatchNotAllowed,
                        "",
                        "a batch in an SSE event: batches were removed in 2025-06-18".to_owned(),
                    );
                }
                for (index, item) in items.iter().enumerate() {
                    let mut judge = judge.under_at("/", index);
                    self.response_message(item, &mut judge, on_stream);
                }
                for item in items {
                    let answers = self.answers(&item);
                    self.observation
                        .add(item, place(), answers, self.max_observed);
                }
            }
            message => {
                self.response_message(&message, judge, on_stream);
                let answers = self.answers(&message);
                self.observation
                    .add(message, place(), answers, self.max_observed);
            }
        }
    }

    /// The method of this exchange's request a response answers (by its id), for the
    /// observation's parts.
    fn answers(&self, message: &Value) -> Option<&'static str> {
        let (_, method) = self.asked.find(message.get("id")?)?;
        ["initialize", "tools/list", "tools/call"]
            .into_iter()
            .find(|known| known == method)
    }

    fn response_message(&mut self, message: &Value, judge: &mut Judge<'_>, on_stream: bool) {
        answer::message(
            &self.asked,
            &mut self.answer,
            message,
            judge,
            &self.cache,
            on_stream,
        );
    }

    /// A JSON body answering a request POST: exactly one response (a batch of responses for a
    /// 2025-03-26 batch).
    fn one_response(&self, document: &Value, judge: &mut Judge<'_>) {
        if !self.asked.is_post() || !self.asked.has_request() {
            return;
        }
        let version = self.asked.version.unwrap_or(Version::V1);
        let problem = match document {
            Value::Array(_) if version >= Version::V2 || !self.observation.request_batch => {
                Some("a JSON array".to_owned())
            }
            Value::Array(items) => items
                .iter()
                .any(|m| !is_response(m))
                .then(|| "a batch holding a request or a notification".to_owned()),
            message if !is_response(message) => Some("a request or a notification".to_owned()),
            _ => None,
        };
        if let Some(problem) = problem {
            judge.flag(
                RuleId::McpHttpJsonBodyNotOneResponse,
                "",
                format!("an application/json answer is one JSON-RPC response, got {problem}"),
            );
        }
    }
}

fn is_response(message: &Value) -> bool {
    matches!(
        mcp_observation::kind_of(message.as_object()),
        MessageKind::Result | MessageKind::Error
    )
}

/// What the response rules need of the request.
fn asked(parts: &RequestParts<'_>, body: Option<&Value>, version: Version) -> Asked {
    let messages: Vec<&Value> = match body {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(message) => vec![message],
        None => Vec::new(),
    };
    let mut asked = Asked {
        method: parts.method.map(str::to_ascii_uppercase),
        version: Some(version),
        version_header: header(parts.headers, "mcp-protocol-version").map(str::to_owned),
        only_notifications: !messages.is_empty(),
        ..Asked::default()
    };
    for message in messages {
        if mcp_observation::kind_of(message.as_object()) != MessageKind::Request {
            continue;
        }
        asked.only_notifications = false;
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        if method == "tools/call" && message.pointer("/params/task").is_some() {
            asked.task = true;
        }
        match message.get("id").filter(|id| envelope::valid_id(id)) {
            Some(id) => asked.add(id.clone(), method.to_owned()),
            None => asked.unreadable_request = true,
        }
    }
    asked
}

/// The request's `Mcp-Param-{Name}` headers: `(Name, value)`.
fn param_headers(headers: &[(String, String)]) -> Vec<(String, String)> {
    const PREFIX: &str = "mcp-param-";
    headers
        .iter()
        .filter(|(name, _)| {
            name.len() > PREFIX.len()
                && name.as_bytes()[..PREFIX.len()].eq_ignore_ascii_case(PREFIX.as_bytes())
        })
        .map(|(name, value)| (name[PREFIX.len()..].to_owned(), value.clone()))
        .collect()
}

/// The request body parsed; `None` when empty, and `mcp.jsonrpc.not_json` when not JSON.
fn request_body(body: &[u8], sink: &mut ViolationSink) -> Option<Value> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(body) => Some(body),
        Err(error) => {
            Judge::new(sink, Stage::Request).flag(
                RuleId::McpJsonrpcNotJson,
                "",
                format!("the request body is not JSON: {error}"),
            );
            None
        }
    }
}

impl DialectRules for McpState {
    fn start(
        parts: RequestParts<'_>,
        cache: &SchemaCache,
        sink: &mut ViolationSink,
        _notes: &mut Vec<String>,
    ) -> McpState {
        let headers = parts.headers;
        let mut observation = McpObservation {
            method: parts.method.map(str::to_ascii_uppercase),
            request_session: header(headers, "mcp-session-id").map(str::to_owned),
            protocol_version_header: header(headers, "mcp-protocol-version").map(str::to_owned),
            last_event_id: header(headers, "last-event-id").map(str::to_owned),
            param_headers: param_headers(headers),
            ..McpObservation::default()
        };
        let max_observed = mcp_observation::DEFAULT_MAX_OBSERVED;
        let body = request_body(parts.body, sink);
        let version = request::version(headers, body.as_ref());
        request::judge(
            &request::RequestView {
                method: observation.method.as_deref(),
                headers,
                body: body.as_ref(),
                version,
            },
            sink,
        );
        let asked = asked(&parts, body.as_ref(), version);
        match body {
            Some(Value::Array(items)) => {
                observation.request_batch = true;
                for item in items {
                    observation.add(item, Where::default(), None, max_observed);
                }
            }
            Some(message) => observation.add(message, Where::default(), None, max_observed),
            None => {}
        }
        McpState {
            // Not `parsed`: an MCP request has no `stream` flag for the exchange to compare.
            facts: RequestFacts::default(),
            asked,
            answer: Answer::default(),
            observation,
            max_observed,
            cache: cache.handle(),
        }
    }

    /// No tools are declared in an MCP request: a `tools/list` answer brings them.
    fn declared_request(&self) -> Declared<'_> {
        Declared::new(&self.facts, None)
    }

    fn facts_mut(&mut self) -> &mut RequestFacts {
        &mut self.facts
    }

    /// Every status: a 4xx refusal carries a JSON-RPC error the rules read.
    fn judges_status(&self, _status: u16) -> bool {
        true
    }

    fn on_head(&mut self, head: &ResponseHead, sink: &mut ViolationSink) {
        answer::head(&self.asked, head, &mut self.answer, sink);
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
        self.answer.all_answered(&self.asked)
    }

    fn reassembly_bytes(&self) -> usize {
        self.observation.bytes
    }

    fn bound_reassembly(&mut self, max: usize) {
        self.max_observed = self.max_observed.min(max);
    }

    /// One SSE event: its data is one JSON-RPC message (or a 2025-03-26 batch); a priming
    /// event's empty data is no message.
    fn on_event(&mut self, event: &SseEvent, seq: u64, sink: &mut ViolationSink) {
        let first = self.answer.events == 0;
        self.answer.events += 1;
        self.answer.event_ids |= event.id.is_some();
        if event.data.trim().is_empty() {
            self.answer.primed |= first && event.id.is_some();
            return;
        }
        let mut judge = Judge::new(sink, Stage::Fragment).seq(Some(seq));
        if let Some(name) = &event.event
            && name != "message"
        {
            judge.flag(
                RuleId::McpSseEventNotMessage,
                "",
                format!("a JSON-RPC message in an event named {name:?} (not \"message\")"),
            );
        }
        match serde_json::from_str::<Value>(&event.data) {
            Ok(document) => {
                self.response_document(document, &mut judge, true, event.id.as_deref());
            }
            Err(error) => judge.flag(
                RuleId::McpJsonrpcNotJson,
                "",
                format!("the event's data is not JSON: {error}"),
            ),
        }
    }

    fn judge_buffered(&mut self, body: &[u8], sink: &mut ViolationSink) -> Judged {
        let mut judge = Judge::new(sink, Stage::Complete);
        let empty = body.iter().all(u8::is_ascii_whitespace);
        if !empty && self.answer.status == Some(202) {
            judge.flag(
                RuleId::McpHttpNotificationStatus,
                "",
                "a 202 answer has no body".to_owned(),
            );
        }
        if !empty {
            let ok = self.answer.status.is_none_or(|s| (200..300).contains(&s));
            match serde_json::from_slice::<Value>(body) {
                Ok(document) => {
                    if ok {
                        self.one_response(&document, &mut judge);
                    }
                    self.response_document(document, &mut judge, false, None);
                }
                Err(error) if ok => judge.flag(
                    RuleId::McpJsonrpcNotJson,
                    "",
                    format!("the response body is not JSON: {error}"),
                ),
                Err(_) => {}
            }
        }
        answer::end(&self.asked, &self.answer, false, sink);
        (Vec::new(), None)
    }

    fn finish_stream(&mut self, end: StreamFinish<'_>) -> Judged {
        if let StreamFinish::Judged {
            ended_mid_event,
            sink,
        } = end
        {
            answer::end(&self.asked, &self.answer, ended_mid_event, sink);
        }
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

#[cfg(test)]
mod tests;
