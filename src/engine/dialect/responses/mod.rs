//! The Responses API dialect (`POST .../responses`): flat `function` and `custom` tools,
//! `output[]` items instead of choices, and a typed event stream with no `[DONE]`.
//!
//! Input: the request body ([`request`]), then a buffered `Response` body or SSE events from
//! the shared framer ([`stream`]). Output: violations with `responses.*` ids (plus the shared
//! `sse.data_not_json`, `response.not_json`, `stream.truncated`, `request.schema_invalid`), and
//! one pseudo-choice for the report (text, tool calls by output position, status as finish
//! reason). At the terminal event the reassembled output is judged at once, so enforce mode
//! sees complete-stage verdicts before the body ends.

pub mod arguments;
mod events;
pub mod input;
pub mod items;
pub mod output;
pub mod request;
pub mod stream;
pub mod tool_choice;
pub mod pieces;

use std::sync::Arc;

use serde_json::Value;

use output::{Context, check_output};
use request::ResponsesRequest;
use stream::{Item, StreamState};

use super::common::{self, Declared, StreamFinish, has_tool_markup};
use super::pieces::DialectTables;
use super::seam::{DialectRules, EnforceError, Judged, RequestParts};
use crate::engine::framing::SseEvent;
use crate::engine::judge::Judge;
use crate::engine::report::ChoiceOutcome;
use crate::engine::report::KeptJson;
use crate::engine::report::RequestFacts;
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, SchemaCache};
use crate::engine::violation::{Stage, ViolationSink};

const STATUSES: [&str; 6] = [
    "completed",
    "failed",
    "in_progress",
    "cancelled",
    "queued",
    "incomplete",
];

/// One Responses exchange's dialect state.
#[derive(Debug)]
pub struct ResponsesState {
    pub request: ResponsesRequest,
    schemas: Option<Arc<CompiledTools>>,
    stream: StreamState,
    outcome: Option<ChoiceOutcome>,
}

impl ResponsesState {
    fn context(&self, status: Option<&'static str>) -> Context<'_> {
        Context {
            request: &self.request,
            schemas: self.schemas.as_deref(),
            status,
            has_incomplete_reason: false,
            markup_in_text: false,
            judged: &[],
        }
    }

    /// Judges a whole buffered body's document.
    fn judge_document(&self, document: &Value, sink: &mut ViolationSink) -> ChoiceOutcome {
        let status = document.get("status").and_then(Value::as_str);
        let items = document.get("output").and_then(Value::as_array);
        let mut problems = Vec::new();
        if document.get("object").and_then(Value::as_str) != Some("response") {
            problems.push("object is not \"response\"".to_owned());
        }
        if document.get("id").and_then(Value::as_str).is_none() {
            problems.push("no string id".to_owned());
        }
        if !status.is_some_and(|s| STATUSES.contains(&s)) {
            problems.push(format!("status {status:?} is not one of {STATUSES:?}"));
        }
        if items.is_none() {
            problems.push("no output array".to_owned());
        }
        if !problems.is_empty() {
            let rule = RuleId::ResponsesOutputEnvelopeInvalid;
            Judge::new(sink, Stage::Complete).flag(rule, "", problems.join("; "));
        }
        let cx = Context {
            status,
            has_incomplete_reason: has_reason(document),
            markup_in_text: true,
            ..self.context(None)
        };
        check_output(
            items.map(Vec::as_slice).unwrap_or_default(),
            "/output",
            cx,
            sink,
        )
    }

    /// Judges the reassembled output once (at the terminal event, or at the end of the body).
    fn complete(&mut self, sink: &mut ViolationSink) -> ChoiceOutcome {
        if let Some(outcome) = &self.outcome {
            return outcome.clone();
        }
        let start = sink.len();
        self.stream.settle();
        let stream = &self.stream;
        let response = stream.terminal.as_ref().and_then(|t| t.response.as_ref());
        let terminal_output = response
            .and_then(|r| r.get("output"))
            .and_then(Value::as_array);
        let (items, judged) = if stream.items.is_empty() {
            let items = terminal_output.cloned().unwrap_or_default();
            (items, stream.terminal_judged.clone())
        } else {
            stream.assembled()
        };
        let finished = stream
            .terminal
            .as_ref()
            .is_some_and(|t| t.kind == "response.completed" || t.kind == "response.incomplete");
        if finished {
            terminal_checks(
                stream,
                terminal_output.map(Vec::as_slice).unwrap_or_default(),
                sink,
            );
        }
        let cx = Context {
            status: response
                .and_then(|r| r.get("status"))
                .and_then(Value::as_str),
            has_incomplete_reason: response.is_some_and(has_reason),
            judged: &judged,
            ..self.context(None)
        };
        let outcome = check_output(&items, "/output", cx, sink);
        if self.request.declares && outcome.tool_calls.is_empty() && has_tool_markup(&stream.text) {
            let detail = "tools were offered, no tool call was streamed, and output_text deltas carry tool-call markup";
            let rule = RuleId::ResponsesStreamToolMarkupAsTextDelta;
            Judge::new(sink, Stage::Complete).flag(rule, "/output", detail);
        }
        sink.fill_seq_since(start, |v| stream.seq_for(v.tool_call));
        self.outcome = Some(outcome.clone());
        outcome
    }

    fn finish_judged(&mut self, ended_mid_event: bool, sink: &mut ViolationSink) -> ChoiceOutcome {
        let outcome = self.complete(sink);
        self.stream.sequence_missing.finish(sink);
        common::report_mid_event(ended_mid_event, sink);
        if self.stream.terminal.is_none() {
            let detail =
                "the stream ended without response.completed, .incomplete, .failed or error";
            let rule = RuleId::ResponsesStreamTerminalMissing;
            Judge::new(sink, Stage::Complete).flag(rule, "", detail);
        }
        outcome
    }
}

impl DialectRules for ResponsesState {
    fn start(
        request: RequestParts<'_>,
        cache: &SchemaCache,
        sink: &mut ViolationSink,
        notes: &mut Vec<String>,
    ) -> ResponsesState {
        let request_body = request.body;
        let (request, compiled) = request::parse(request_body, cache, sink);
        let schemas = compiled.filter(|tools| tools.declares());
        common::report_invalid_schemas(schemas.as_deref(), sink);
        common::note_skipped(request.facts.parsed, request.declares, notes);
        ResponsesState {
            request,
            stream: StreamState::for_calls(schemas.clone()),
            schemas,
            outcome: None,
        }
    }

    /// What the stream's reassembly holds, as [`crate::engine::weigh`] counts it.
    fn reassembly_bytes(&self) -> usize {
        self.stream.held
    }

    fn stream_is_done(&self) -> bool {
        self.stream.terminal.is_some()
    }

    fn last_sequence_number(&self) -> Option<i64> {
        self.stream.last_sequence
    }

    fn on_event(&mut self, event: &SseEvent, seq: u64, sink: &mut ViolationSink) {
        if self
            .stream
            .on_event(&event.data, event.event.as_deref(), seq, sink)
        {
            self.complete(sink);
        }
    }

    /// Ends a stream; see [`StreamFinish`].
    fn finish_stream(&mut self, end: StreamFinish<'_>) -> Judged {
        let outcome = match end {
            StreamFinish::Judged {
                ended_mid_event,
                sink,
            } => self.finish_judged(ended_mid_event, sink),
            StreamFinish::Unjudged { scratch } => self.complete(scratch),
        };
        let usage = self
            .stream
            .terminal
            .as_ref()
            .and_then(|t| t.response.as_ref())
            .and_then(|r| r.get("usage"))
            .filter(|u| !u.is_null())
            .cloned();
        (vec![outcome], usage.map(KeptJson::from))
    }

    fn declared_request(&self) -> Declared<'_> {
        Declared::new(&self.request.facts, self.schemas.as_ref())
    }

    fn facts_mut(&mut self) -> &mut RequestFacts {
        &mut self.request.facts
    }

    /// Reads the whole document as a tree and judges it as one outcome.
    fn judge_buffered(&mut self, body: &[u8], sink: &mut ViolationSink) -> Judged {
        common::judge_tree(body, sink, |document, sink| {
            self.judge_document(document, sink)
        })
    }

    /// `{"error":{...}}`, the OpenAI error shape.
    fn error_body(error: &EnforceError<'_>) -> Value {
        serde_json::json!({ "error": common::openai_error(error) })
    }

    /// The stream's own `error` event: `event:` line, `type`, and a `sequence_number` after the
    /// last one forwarded.
    fn error_event(error: &EnforceError<'_>, last_sequence: Option<i64>) -> Vec<u8> {
        let mut event = common::openai_error(error);
        if let Some(object) = event.as_object_mut() {
            object.insert("type".into(), "error".into());
            let sequence = last_sequence.map_or(0, |n| n + 1);
            object.insert("sequence_number".into(), sequence.into());
        }
        format!("event: error\ndata: {event}\n\n").into_bytes()
    }

    fn pieces() -> &'static DialectTables {
        &pieces::PIECES
    }
}

fn has_reason(response: &Value) -> bool {
    response
        .get("incomplete_details")
        .and_then(|d| d.get("reason"))
        .is_some_and(|r| !r.is_null())
}

/// `item_not_done` and `terminal_output_mismatch`, once a completed/incomplete terminal arrived.
fn terminal_checks(stream: &StreamState, terminal_output: &[Value], sink: &mut ViolationSink) {
    let seq = stream.terminal.as_ref().map(|t| t.seq);
    let mut judge = Judge::new(sink, Stage::Complete).seq(seq);
    let mut reported_empty = false;
    for (index, item) in &stream.items {
        let tool_call = u32::try_from(*index).ok();
        if item.done.is_none() {
            let detail = format!("the item at output_index {index} never got output_item.done");
            let rule = RuleId::ResponsesStreamItemNotDone;
            judge.under("").tool_call(tool_call).flag(rule, "", detail);
        }
        if !item.is_call() {
            continue;
        }
        if terminal_output.is_empty() {
            if !reported_empty {
                let detail =
                    "the terminal response.output is empty after tool-call items were streamed";
                let rule = RuleId::ResponsesStreamTerminalOutputMismatch;
                judge.flag(rule, "/response/output", detail);
                reported_empty = true;
            }
            continue;
        }
        compare_terminal_copy(
            item,
            terminal_output,
            &mut judge.under("").tool_call(tool_call),
        );
    }
}

/// `terminal_output_mismatch` for one streamed tool call against the terminal `output`.
fn compare_terminal_copy(item: &Item, terminal_output: &[Value], judge: &mut Judge<'_>) {
    let rule = RuleId::ResponsesStreamTerminalOutputMismatch;
    let streamed = item.assembled();
    let key = |v: &Value| (v.get("id").cloned(), v.get("call_id").cloned());
    let Some(found) = terminal_output.iter().find(|v| key(v) == key(&streamed)) else {
        let detail = "a streamed tool call is missing from the terminal response.output";
        return judge.flag(rule, "/response/output", detail);
    };
    let differs = ["type", "name", "arguments", "input"]
        .iter()
        .any(|k| found.get(*k) != streamed.get(*k));
    if differs {
        let detail = "the terminal response.output alters a streamed tool call";
        judge.flag(rule, "/response/output", detail);
    }
}
