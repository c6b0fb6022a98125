//! The Anthropic Messages dialect (`POST .../messages`): `tools[].input_schema`, `tool_use`
//! content blocks whose `input` is an object, and a typed event stream (`event:` names agreeing
//! with `data.type`, `ping` tolerated, no `[DONE]`) reassembled by content-block `index`.
//!
//! Input: the request body ([`request`], [`history`]), then a buffered `Message` body or SSE
//! events from the shared framer ([`stream`], `envelope`, [`blocks`]). Output: violations with
//! `anthropic.*` ids (plus the shared `sse.data_not_json`, `response.not_json`,
//! `response.shape_invalid`, `stream.truncated`, `request.schema_invalid`), and one
//! pseudo-choice for the report (text, `tool_use` blocks by content position, `stop_reason` as
//! finish reason). At `message_stop` the reassembled message is judged at once, so enforce mode
//! sees complete-stage verdicts before the body ends.

pub mod blocks;
mod envelope;
pub mod history;
pub mod message;
pub mod request;
pub mod stream;
pub mod pieces;

use std::sync::Arc;

use serde_json::Value;

use blocks::{Block, Input};
use message::{Context, check_content};
use request::AnthropicRequest;
use stream::{StreamState, Terminal};

use super::argument_verdict::{ArgumentRules, HeldText, report_verdict};
use super::common::{self, Declared, StreamFinish};
use super::pieces::DialectTables;
use super::seam::{DialectRules, EnforceError, Judged, RequestParts};
use crate::engine::arguments::{ArgumentSchema, ArgumentVerdict};
use crate::engine::framing::SseEvent;
use crate::engine::judge::Judge;
use crate::engine::report::ChoiceOutcome;
use crate::engine::report::KeptJson;
use crate::engine::report::RequestFacts;
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, SchemaCache};
use crate::engine::violation::{Stage, ViolationSink};

/// One Anthropic Messages exchange's dialect state.
#[derive(Debug)]
pub struct AnthropicState {
    pub request: AnthropicRequest,
    schemas: Option<Arc<CompiledTools>>,
    stream: StreamState,
    outcome: Option<ChoiceOutcome>,
}

impl AnthropicState {
    fn context<'a>(&'a self, stop_reason: Option<&'a str>, streamed: bool) -> Context<'a> {
        Context {
            request: &self.request,
            schemas: self.schemas.as_deref(),
            stop_reason,
            streamed,
        }
    }

    /// Judges a whole buffered body's document.
    fn judge_document(&self, document: &Value, sink: &mut ViolationSink) -> ChoiceOutcome {
        let stop_reason = document.get("stop_reason").and_then(Value::as_str);
        let content = document.get("content").and_then(Value::as_array);
        let mut problems = Vec::new();
        if document.get("type").and_then(Value::as_str) != Some("message") {
            problems.push("type is not \"message\"".to_owned());
        }
        if document.get("role").and_then(Value::as_str) != Some("assistant") {
            problems.push("role is not \"assistant\"".to_owned());
        }
        if content.is_none() {
            problems.push("content is not an array".to_owned());
        }
        if stop_reason.is_none() {
            problems.push("stop_reason is null in a buffered message".to_owned());
        }
        if !problems.is_empty() {
            let rule = RuleId::AnthropicResponseEnvelopeInvalid;
            Judge::new(sink, Stage::Complete).flag(rule, "", problems.join("; "));
        }
        check_content(
            content.map(Vec::as_slice).unwrap_or_default(),
            "/content",
            self.context(stop_reason, false),
            sink,
        )
    }

    /// Judges the reassembled message once (at `message_stop`, or at the end of the body). A
    /// stream that ended in an `error` event has no message to judge.
    fn complete(&mut self, sink: &mut ViolationSink) -> ChoiceOutcome {
        if let Some(outcome) = &self.outcome {
            return outcome.clone();
        }
        self.stream.settle_inputs();
        let stream = &self.stream;
        let mut scratch = ViolationSink::new(Default::default());
        let errored = matches!(stream.terminal, Some((Terminal::Error, _)));
        let into = if errored { &mut scratch } else { &mut *sink };
        let start = into.len();
        let stop_reason = stream.stop_reason.as_deref();
        let lenient_all = stop_reason == Some("max_tokens");
        let mut judge = Judge::new(into, Stage::Complete);
        for (position, block) in stream.blocks.iter().enumerate() {
            let eager = block
                .start
                .get("name")
                .and_then(Value::as_str)
                .and_then(|name| self.request.tools.get(name))
                .is_some_and(|tool| tool.eager);
            block.check_input(position, lenient_all || eager, &mut judge);
            if let Input::Streamed { schema, shown } = block.input() {
                self.report_streamed(block, position, (schema, &shown), &mut judge);
            }
        }
        let content: Vec<Value> = stream.blocks.iter().map(|b| b.assembled()).collect();
        let cx = self.context(stop_reason, true);
        let outcome = check_content(&content, "/content", cx, judge.sink());
        let fallback = stream.delta_seq.or(stream.terminal.map(|(_, seq)| seq));
        into.fill_seq_since(start, |v| {
            v.tool_call
                .and_then(|at| stream.blocks.get(at as usize))
                .map(|b| b.seq)
                .or(fallback)
        });
        self.outcome = Some(outcome.clone());
        outcome
    }

    /// The schema verdict of a tool_use input judged as it streamed (past its held bound;
    /// `streamed`: that verdict and the input's first bytes; `judge`: at the message).
    fn report_streamed(
        &self,
        block: &Block,
        position: usize,
        streamed: (ArgumentSchema, &str),
        judge: &mut Judge<'_>,
    ) {
        let (schema, shown) = streamed;
        let name = block.start.get("name").and_then(Value::as_str);
        let strict = name
            .and_then(|name| self.request.tools.get(name))
            .is_some_and(|tool| tool.strict);
        let rules = ArgumentRules {
            not_json: RuleId::AnthropicStreamPartialJsonInvalid,
            not_object: RuleId::AnthropicStreamPartialJsonInvalid,
            schema: RuleId::AnthropicResponseToolUseInputSchemaMismatch,
            lenient: !strict,
        };
        let mut judge = judge
            .under(format_args!("/content/{position}/input"))
            .tool_call(u32::try_from(position).ok());
        let at = judge.site("");
        let site = || at.clone();
        let verdict = ArgumentVerdict::Object {
            value: None,
            schema,
        };
        let held = HeldText {
            text: shown,
            whole: false,
        };
        report_verdict(verdict, held, true, &rules, &site, judge.sink());
    }

    fn finish_judged(&mut self, ended_mid_event: bool, sink: &mut ViolationSink) -> ChoiceOutcome {
        if self.stream.terminal.is_none() {
            let last = self.stream.blocks.last().map(|b| b.seq);
            let mut judge = Judge::new(sink, Stage::Fragment).seq(Some(last.unwrap_or(0)));
            self.stream.open_blocks_at(&mut judge);
        }
        let outcome = self.complete(sink);
        common::report_mid_event(ended_mid_event, sink);
        if self.stream.terminal.is_none() {
            let detail = "the stream ended without message_stop or an error event";
            let rule = RuleId::AnthropicStreamTerminalMissing;
            Judge::new(sink, Stage::Complete).flag(rule, "", detail);
        }
        outcome
    }
}

impl DialectRules for AnthropicState {
    fn start(
        request: RequestParts<'_>,
        cache: &SchemaCache,
        sink: &mut ViolationSink,
        notes: &mut Vec<String>,
    ) -> AnthropicState {
        let request_body = request.body;
        let (request, compiled) = request::parse(request_body, cache, sink);
        let schemas = common::declared_tools(
            compiled,
            |compiled| compiled,
            (request.facts.parsed, request.declares),
            sink,
            notes,
        );
        let eager = request
            .tools
            .iter()
            .filter(|(_, tool)| tool.eager)
            .map(|(name, _)| name.clone())
            .collect();
        AnthropicState {
            request,
            stream: StreamState::for_calls(schemas.clone(), eager),
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
        (vec![outcome], self.stream.usage.clone().map(KeptJson::from))
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

    /// Anthropic's `{"type":"error","error":{"type","message"}}`.
    fn error_body(error: &EnforceError<'_>) -> Value {
        serde_json::json!({
            "type": "error",
            "error": {
                "type": error.kind,
                "message": error.message,
            },
        })
    }

    /// `event: error` with Anthropic's error body.
    fn error_event(error: &EnforceError<'_>, _last_sequence: Option<i64>) -> Vec<u8> {
        format!(
            "event: error\ndata: {}\n\n",
            AnthropicState::error_body(error)
        )
        .into_bytes()
    }

    fn pieces() -> &'static DialectTables {
        &pieces::PIECES
    }
}
