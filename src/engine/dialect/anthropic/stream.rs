//! Judges an Anthropic Messages SSE stream event by event and reassembles its content blocks
//! **by `index`** (`anthropic.stream.*`).
//!
//! Input: [`SseEvent`](crate::engine::framing::sse::SseEvent)s from the shared framer, each with the seq of the `feed` call that
//! completed it. Output: fragment-stage violations as events arrive, and the blocks
//! ([`super::blocks::Block`]) that [`super::message`] judges like a buffered body. The stream
//! is `message_start`, then per block `content_block_start` → `content_block_delta`* →
//! `content_block_stop`, then `message_delta` (the `stop_reason`) and `message_stop`; `ping`
//! may come anywhere, an `error` event ends it; there is no `[DONE]`.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::blocks::Block;
use crate::engine::arguments::ArgumentLimits;
use crate::engine::dialect::argument_verdict::{ArgumentRules, HeldText, report_break};
use crate::engine::dialect::common;
use crate::engine::dialect::common::preview;
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;
use crate::engine::schema::CompiledTools;
use crate::engine::violation::{Stage, ViolationSink};
use crate::engine::weigh;

/// How the stream ended by its own framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Terminal {
    MessageStop,
    Error,
}

#[derive(Debug, Default)]
pub struct StreamState {
    /// Blocks in the order they were started.
    pub blocks: Vec<Block>,
    /// Where the open blocks are in `blocks`, in order, and by their `index` (the latest
    /// last): a start or a delta finds its block without scanning every earlier one.
    open_at: BTreeSet<usize>,
    open_by_index: HashMap<u64, Vec<usize>>,
    /// Blocks started since `block_not_stopped` was last looked for (each looked at once).
    not_yet_checked: Vec<usize>,
    /// What the reassembly holds, as [`crate::engine::weigh`] counts it.
    pub held: usize,
    /// `message_start.message`.
    pub message: Option<Value>,
    pub stop_reason: Option<String>,
    /// `message_start`'s usage with each `message_delta`'s usage laid over it.
    pub usage: Option<Value>,
    pub terminal: Option<(Terminal, u64)>,
    /// The seq of the first `message_delta` that carried a `stop_reason`.
    pub delta_seq: Option<u64>,
    /// Whether a non-ping event arrived (the first must be `message_start`).
    started: bool,
    openai_reported: bool,
    /// The request's tools, whose schemas the inputs are judged against as they stream, and
    /// those declared with `eager_input_streaming` (their broken input is judged at the end).
    pub schemas: Option<Arc<CompiledTools>>,
    pub eager: BTreeSet<String>,
    pub limits: ArgumentLimits,
}

/// A streamed input that breaks: `partial_json_invalid`, at its piece.
const INPUT_RULES: ArgumentRules = ArgumentRules {
    not_json: RuleId::AnthropicStreamPartialJsonInvalid,
    not_object: RuleId::AnthropicStreamPartialJsonInvalid,
    schema: RuleId::AnthropicResponseToolUseInputSchemaMismatch,
    lenient: false,
};

impl StreamState {
    /// A stream whose tool_use inputs are judged against `schemas` as they arrive (`eager`:
    /// the tools declared with `eager_input_streaming`).
    pub fn for_calls(schemas: Option<Arc<CompiledTools>>, eager: BTreeSet<String>) -> StreamState {
        StreamState {
            schemas,
            eager,
            ..StreamState::default()
        }
    }

    /// Judges one event; returns true when it ended the stream (`message_stop`, `error`).
    pub fn on_event(
        &mut self,
        data: &str,
        event: Option<&str>,
        seq: u64,
        sink: &mut ViolationSink,
    ) -> bool {
        let mut judge = Judge::new(sink, Stage::Fragment).seq(Some(seq));
        if data == "[DONE]" {
            self.openai("data: [DONE] on a Messages stream", &mut judge);
            return false;
        }
        let Some(value) = common::event_json(data, "not JSON", judge.site(""), judge.sink()) else {
            return false;
        };
        if value.get("object").and_then(Value::as_str) == Some("chat.completion.chunk")
            || value.get("choices").is_some()
        {
            self.openai("a chat.completion.chunk on a Messages stream", &mut judge);
            return false;
        }
        let rule = RuleId::AnthropicStreamEventNameMismatch;
        let kind = common::event_kind(&value, event, rule, judge.site("/type"), judge.sink());
        if self.terminal.is_some() {
            let detail = format!("{kind:?} after the stream ended");
            judge.flag(RuleId::AnthropicStreamEventAfterMessageStop, "", detail);
            return false;
        }
        if kind == "ping" {
            return false;
        }
        if !std::mem::replace(&mut self.started, true) && kind != "message_start" && kind != "error"
        {
            let detail = format!("the first event is {kind:?}, not message_start");
            let rule = RuleId::AnthropicStreamFirstEventNotMessageStart;
            judge.flag(rule, "/type", detail);
        }
        self.dispatch(kind, &value, seq, &mut judge)
    }

    /// Judges the event by its type; returns true when it ended the stream.
    fn dispatch(&mut self, kind: &str, value: &Value, seq: u64, judge: &mut Judge<'_>) -> bool {
        match kind {
            "message_start" => self.message_start(value, judge),
            "content_block_start" => self.block_start(value, seq, judge),
            "content_block_delta" => self.block_delta(value, seq, judge),
            "content_block_stop" => self.block_stop(value, seq, judge),
            "message_delta" => self.message_delta(value, seq, judge),
            "message_stop" => {
                if self.stop_reason.is_none() {
                    let detail = "message_stop without a message_delta carrying a stop_reason";
                    judge.flag(RuleId::AnthropicStreamMessageDeltaMissing, "", detail);
                }
                self.open_blocks_at(judge);
                self.terminal = Some((Terminal::MessageStop, seq));
                return true;
            }
            "error" => {
                check_error(value, judge);
                self.terminal = Some((Terminal::Error, seq));
                return true;
            }
            other => {
                let detail = format!(
                    "unknown Messages event type {}",
                    preview(&Value::String(other.to_owned()))
                );
                judge.flag(RuleId::AnthropicStreamUnknownEventType, "/type", detail);
            }
        }
        false
    }

    /// `openai_chunks_returned`, once per stream (`judge`: at the event).
    fn openai(&mut self, detail: &str, judge: &mut Judge<'_>) {
        if !std::mem::replace(&mut self.openai_reported, true) {
            judge.flag(RuleId::AnthropicStreamOpenaiChunksReturned, "", detail);
        }
    }

    /// `content_block_start`: opens a block at the next position (`judge`: at the event).
    fn block_start(&mut self, value: &Value, seq: u64, judge: &mut Judge<'_>) {
        let Some(index) = value.get("index").and_then(Value::as_u64) else {
            let detail = "content_block_start without an integer index";
            return judge.flag(RuleId::ResponseShapeInvalid, "/index", detail);
        };
        let mut judge = judge.under("").tool_call(u32::try_from(index).ok());
        let expected = self.blocks.len() as u64;
        if index != expected {
            let detail = format!(
                "content_block_start index {index}; {expected} block(s) were started before it"
            );
            let rule = RuleId::AnthropicStreamBlockIndexNotSequential;
            judge.flag(rule, "/index", detail);
        }
        if let Some(open) = self.open_at.first().and_then(|at| self.blocks.get(*at)) {
            let detail = format!(
                "block {index} starts while block {} is still open",
                open.index
            );
            judge.flag(RuleId::AnthropicStreamBlocksInterleaved, "/index", detail);
        }
        let block = value.get("content_block").cloned().unwrap_or(Value::Null);
        if block.get("type").and_then(Value::as_str) == Some("tool_use") {
            check_tool_use_start(&block, &mut judge);
        }
        let at = self.blocks.len();
        self.held += weigh::ENTRY + weigh::value(&block);
        let mut block = Block::new(index, block, seq);
        block.position = at;
        self.blocks.push(block);
        self.open_at.insert(at);
        self.open_by_index.entry(index).or_default().push(at);
        self.not_yet_checked.push(at);
    }

    /// Where the open block with this index is in `blocks`, or a `delta_unknown_block`
    /// violation (`judge`: at the event).
    fn open_block(&mut self, value: &Value, what: &str, judge: &mut Judge<'_>) -> Option<usize> {
        let index = value.get("index").and_then(Value::as_u64);
        let found = index
            .and_then(|index| self.open_by_index.get(&index))
            .and_then(|open| open.last().copied());
        if found.is_none() {
            let shown = index.map_or_else(|| "no index".to_owned(), |i| format!("index {i}"));
            let detail = format!(
                "{what} for {shown}, which is not an open block (never started, or already stopped)"
            );
            let tool_call = index.and_then(|i| u32::try_from(i).ok());
            let rule = RuleId::AnthropicStreamDeltaUnknownBlock;
            judge
                .under("")
                .tool_call(tool_call)
                .flag(rule, "/index", detail);
        }
        found
    }

    /// `content_block_delta`: text, thinking or a tool_use input piece for an open block of
    /// its type (`judge`: at the event).
    fn block_delta(&mut self, value: &Value, seq: u64, judge: &mut Judge<'_>) {
        let Some(block) = self
            .open_block(value, "content_block_delta", judge)
            .and_then(|at| self.blocks.get_mut(at))
        else {
            return;
        };
        let mut judge = judge.under("").tool_call(u32::try_from(block.index).ok());
        let delta = value.get("delta").cloned().unwrap_or(Value::Null);
        let delta_type = delta
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let is_tool = block.kind() == Some("tool_use");
        let fits = match delta_type {
            "input_json_delta" => is_tool,
            "text_delta" | "thinking_delta" | "signature_delta" | "citations_delta" => !is_tool,
            _ => true,
        };
        if !fits {
            let detail = format!(
                "a {delta_type} for a {:?} block",
                block.kind().unwrap_or("untyped")
            );
            let rule = RuleId::AnthropicStreamDeltaTypeMismatch;
            return judge.flag(rule, "/delta/type", detail);
        }
        let before = block.input_held() + block.text.len();
        let piece = delta.get("partial_json").and_then(Value::as_str);
        match piece.filter(|_| delta_type == "input_json_delta") {
            Some(piece) => {
                let name = block.start.get("name").and_then(Value::as_str);
                let schema = name
                    .and_then(|name| self.schemas.as_deref()?.get(name))
                    .map(|tool| &tool.schema);
                // Eager input streaming expects broken input: judged at the end, leniently.
                let eager = name.is_some_and(|name| self.eager.contains(name));
                let broken = block.push_input(piece, seq, schema, self.limits);
                if let Some(broken) = broken.filter(|_| !eager) {
                    let (text, whole) = block.input_text();
                    let site = judge.site(format_args!("/content/{}/input", block.position));
                    let held = HeldText { text, whole };
                    report_break(broken, Some(seq), held, &INPUT_RULES, site, judge.sink());
                    block.break_reported();
                }
            }
            None if delta_type == "input_json_delta" => block.deltas += 1,
            None => block.apply(&delta),
        }
        let after = block.input_held() + block.text.len();
        self.held = self.held.saturating_sub(before).saturating_add(after);
    }

    /// `content_block_stop`: closes the latest open block of its index (`judge`: at the event).
    fn block_stop(&mut self, value: &Value, seq: u64, judge: &mut Judge<'_>) {
        let Some(block) = self
            .open_block(value, "content_block_stop", judge)
            .and_then(|at| self.blocks.get_mut(at))
        else {
            return;
        };
        block.open = false;
        block.stop_seq = Some(seq);
        let index = block.index;
        if let Some(open) = self.open_by_index.get_mut(&index)
            && let Some(at) = open.pop()
        {
            self.open_at.remove(&at);
            if open.is_empty() {
                self.open_by_index.remove(&index);
            }
        }
    }

    /// Judges every tool_use block's streamed input, once, as the message is judged.
    pub fn settle_inputs(&mut self) {
        for block in &mut self.blocks {
            let name = block.start.get("name").and_then(Value::as_str);
            let schema = name
                .and_then(|name| self.schemas.as_deref()?.get(name))
                .map(|tool| &tool.schema);
            let before = block.input_held();
            block.settle(schema);
            self.held = self
                .held
                .saturating_sub(before)
                .saturating_add(block.input_held());
        }
    }

    /// `block_not_stopped` for every block still open (reported once per block; `judge`: at the
    /// frame that ended the message).
    pub fn open_blocks_at(&mut self, judge: &mut Judge<'_>) {
        for at in std::mem::take(&mut self.not_yet_checked) {
            let Some(block) = self
                .blocks
                .get_mut(at)
                .filter(|b| b.open && !b.reported_open)
            else {
                continue;
            };
            block.reported_open = true;
            let detail = format!(
                "block {} was never stopped before the message ended",
                block.index
            );
            let tool_call = u32::try_from(block.index).ok();
            let rule = RuleId::AnthropicStreamBlockNotStopped;
            judge.under("").tool_call(tool_call).flag(rule, "", detail);
        }
    }
}

/// `error_event_invalid` unless the event is `{"type":"error","error":{"type","message"}}`
/// (`judge`: at the event).
fn check_error(value: &Value, judge: &mut Judge<'_>) {
    let error = value.get("error");
    let valid = ["type", "message"]
        .iter()
        .all(|k| error.and_then(|e| e.get(*k)).is_some_and(Value::is_string));
    if !valid {
        let detail = format!(
            "an error event must be {{\"type\":\"error\",\"error\":{{\"type\":str,\"message\":str}}}}: {}",
            preview(value)
        );
        judge.flag(RuleId::AnthropicStreamErrorEventInvalid, "", detail);
    }
}

/// `tool_use_start_invalid` and `tool_use_start_input_prefilled` on a tool_use block's start
/// (`judge`: at the event, for the block).
fn check_tool_use_start(block: &Value, judge: &mut Judge<'_>) {
    let named = ["id", "name"].iter().all(|k| {
        block
            .get(*k)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    });
    let input = block.get("input");
    if !named || !input.is_some_and(Value::is_object) {
        let detail = format!(
            "a tool_use start needs id, name and an object input: {}",
            preview(block)
        );
        let rule = RuleId::AnthropicStreamToolUseStartInvalid;
        judge.flag(rule, "/content_block", detail);
    } else if input
        .and_then(Value::as_object)
        .is_some_and(|o| !o.is_empty())
    {
        let detail = "the tool_use start carries a non-empty input; clients ignore it or double it with the deltas";
        let rule = RuleId::AnthropicStreamToolUseStartInputPrefilled;
        judge.flag(rule, "/content_block/input", detail);
    }
}
