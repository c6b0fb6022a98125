//! Judges a Responses SSE stream event by event and reassembles its items **by `output_index`
//! and `item_id`** (`responses.stream.*`).
//!
//! Input: [`SseEvent`](crate::engine::framing::sse::SseEvent)s from the shared framer, each with the seq of the `feed` call that
//! completed it. Output: fragment-stage violations as events arrive, and the reassembled output
//! items ([`StreamState::items`]) that [`super::output`] judges like a buffered body. The stream
//! has no `[DONE]`: it ends at `response.completed`/`incomplete`/`failed` or `error`. `name` and
//! `call_id` come only from `output_item.added`; `.done` without deltas is legal.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::arguments::{Judged, StreamedArguments, judge_given, kept, shrink_member, start_of};
use super::events::known_event;
pub use super::items::{Item, Source, Terminal};
use crate::engine::arguments::ArgumentLimits;
use crate::engine::dialect::argument_verdict::{ArgumentRules, HeldText, report_break};
use crate::engine::dialect::common;
use crate::engine::dialect::common::preview;
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, ToolSchema};
use crate::engine::violation::{Stage, ViolationSink};
use crate::engine::weigh;

#[derive(Debug, Default)]
pub struct StreamState {
    pub items: BTreeMap<u64, Item>,
    /// Items pushed out of their `output_index` by a colliding announcement; still reassembled.
    pub displaced: Vec<(u64, Item)>,
    by_id: HashMap<String, u64>,
    pub last_sequence: Option<i64>,
    /// Events without a `sequence_number`: reported once, on the first, with this count.
    pub sequence_missing: SequenceMissing,
    pub terminal: Option<Terminal>,
    /// `response.output_text.delta` text, for the markup check.
    pub text: String,
    text_seq: Option<u64>,
    /// What the reassembly holds, as [`crate::engine::weigh`] counts it.
    pub held: usize,
    /// The request's tools, whose schemas function call arguments are judged against as they
    /// stream, and the bounds of that.
    pub schemas: Option<Arc<CompiledTools>>,
    pub limits: ArgumentLimits,
    /// For each item of the terminal response's `output`, what the output rules use for its
    /// arguments when the output is judged from that copy (no item was streamed).
    pub terminal_judged: Vec<Option<Judged>>,
}

/// A streamed function call's arguments that break: `responses.output.arguments_invalid_json`,
/// at their fragment.
const ARGUMENT_RULES: ArgumentRules = ArgumentRules {
    not_json: RuleId::ResponsesOutputArgumentsInvalidJson,
    not_object: RuleId::ResponsesOutputArgumentsInvalidJson,
    schema: RuleId::ResponsesOutputArgumentsSchemaMismatch,
    lenient: false,
};

/// The declared schema of the tool `name`.
pub fn schema_of<'a>(
    schemas: Option<&'a CompiledTools>,
    name: Option<&str>,
) -> Option<&'a ToolSchema> {
    schemas?.get(name?).map(|tool| &tool.schema)
}

const TEXT_BOUND: usize = 1 << 16;

/// `responses.stream.sequence_number_missing` is a property of the server, not of one event:
/// one finding per stream, on the first event without a number, its detail counting them all
/// once the stream is judged (a server that never sends one gave one warning per event).
#[derive(Debug, Default)]
pub struct SequenceMissing {
    count: u64,
    /// Where the finding sits in the sink (`None` until pushed, or when the rule is off or the
    /// sink full).
    reported_at: Option<usize>,
}

impl SequenceMissing {
    /// Counts an event without a number (`judge`: at the event).
    fn event(&mut self, judge: &mut Judge<'_>) {
        self.count += 1;
        if self.count > 1 {
            return;
        }
        let before = judge.sink().len();
        let detail = "an event without an integer sequence_number";
        let rule = RuleId::ResponsesStreamSequenceNumberMissing;
        judge.flag(rule, "/sequence_number", detail);
        self.reported_at = (judge.sink().len() > before).then_some(before);
    }

    /// Puts the final count in the finding's detail.
    pub fn finish(&self, sink: &mut ViolationSink) {
        if let Some(index) = self.reported_at.filter(|_| self.count > 1) {
            let detail = format!(
                "{} events without an integer sequence_number, the first here",
                self.count
            );
            sink.amend_detail(index, detail);
        }
    }
}

impl StreamState {
    /// A stream whose tool calls' arguments are judged against `schemas` as they arrive.
    pub fn for_calls(schemas: Option<Arc<CompiledTools>>) -> StreamState {
        StreamState {
            schemas,
            ..StreamState::default()
        }
    }

    /// Judges one event; returns true when it was the terminal event.
    pub fn on_event(
        &mut self,
        data: &str,
        event: Option<&str>,
        seq: u64,
        sink: &mut ViolationSink,
    ) -> bool {
        let mut judge = Judge::new(sink, Stage::Fragment).seq(Some(seq));
        if data == "[DONE]" {
            let detail = "data: [DONE] on a Responses stream";
            judge.flag(RuleId::ResponsesStreamDoneSentinel, "", detail);
            return false;
        }
        let Some(value) = common::event_json(data, "not JSON", judge.site(""), judge.sink()) else {
            return false;
        };
        let rule = RuleId::ResponsesStreamEventNameMismatch;
        let kind = common::event_kind(&value, event, rule, judge.site("/type"), judge.sink());
        if let Some(terminal) = &self.terminal {
            let tolerated = terminal.kind == "response.failed" && kind == "error";
            if !tolerated {
                let detail = format!("{kind:?} after the terminal {:?}", terminal.kind);
                judge.flag(RuleId::ResponsesStreamEventAfterTerminal, "", detail);
            }
            return false;
        }
        self.sequence(&value, &mut judge);
        self.dispatch(kind, &value, seq, &mut judge)
    }

    /// `sequence_number_missing` and `sequence_number_not_monotonic` (`judge`: at the event).
    fn sequence(&mut self, value: &Value, judge: &mut Judge<'_>) {
        let Some(number) = value.get("sequence_number").and_then(Value::as_i64) else {
            return self.sequence_missing.event(judge);
        };
        if let Some(last) = self.last_sequence.filter(|last| number <= *last) {
            let detail = format!("sequence_number {number} after {last}");
            let rule = RuleId::ResponsesStreamSequenceNumberNotMonotonic;
            judge.flag(rule, "/sequence_number", detail);
        }
        self.last_sequence = Some(number);
    }

    /// Judges the event by its type; returns true when it was the terminal event.
    fn dispatch(&mut self, kind: &str, value: &Value, seq: u64, judge: &mut Judge<'_>) -> bool {
        match kind {
            "response.output_item.added" => self.added(value, seq, judge),
            "response.output_item.done" => self.item_done(value, judge),
            "response.function_call_arguments.delta" | "response.function_call_arguments.done" => {
                self.payload(value, "function_call", seq, judge)
            }
            "response.custom_tool_call_input.delta" | "response.custom_tool_call_input.done" => {
                self.payload(value, "custom_tool_call", seq, judge)
            }
            "response.output_text.delta" => self.text_delta(value, seq),
            "response.completed" | "response.incomplete" | "response.failed" => {
                self.terminal_response(kind, value, seq, judge);
                return true;
            }
            "error" => {
                self.error(kind, value, seq, judge);
                return true;
            }
            other if known_event(other) => {}
            other => {
                let detail = format!(
                    "unknown Responses event type {}",
                    preview(&Value::String(other.to_owned()))
                );
                judge.flag(RuleId::ResponsesStreamUnknownEventType, "/type", detail);
            }
        }
        false
    }

    /// Keeps an `output_text.delta`'s text (up to the bound) for the markup check.
    fn text_delta(&mut self, value: &Value, seq: u64) {
        if let Some(delta) = value.get("delta").and_then(Value::as_str)
            && self.text.len() + delta.len() <= TEXT_BOUND
        {
            self.text.push_str(delta);
            self.held += delta.len();
            self.text_seq.get_or_insert(seq);
        }
    }

    /// The stream's `error` event, which ends it: `error_event_invalid` when it lacks a member.
    fn error(&mut self, kind: &str, value: &Value, seq: u64, judge: &mut Judge<'_>) {
        let complete = value.get("message").is_some_and(Value::is_string)
            && value.get("code").is_some()
            && value.get("param").is_some();
        if !complete {
            let detail = format!(
                "an error event needs message, code and param: {}",
                preview(value)
            );
            judge.flag(RuleId::ResponsesStreamErrorEventInvalid, "", detail);
        }
        self.terminal = Some(Terminal {
            kind: kind.to_owned(),
            response: None,
            seq,
        });
    }

    /// `output_item.added`: announces an item at its `output_index` (`judge`: at the event).
    fn added(&mut self, value: &Value, seq: u64, judge: &mut Judge<'_>) {
        let Some(index) = value.get("output_index").and_then(Value::as_u64) else {
            let detail = "output_item.added without an integer output_index";
            return judge.flag(RuleId::ResponseShapeInvalid, "/output_index", detail);
        };
        let mut item = value.get("item").cloned().unwrap_or(Value::Null);
        // Arguments announced with the item are not what it assembles to (the deltas or a
        // done copy are): past the held bound they are kept as their marker.
        shrink_member(&mut item, "arguments", self.limits, None);
        let id = item.get("id").and_then(Value::as_str).map(str::to_owned);
        if let Some(existing) = self.items.remove(&index) {
            let detail = format!(
                "output_index {index} is announced again (first {:?}, now {:?})",
                existing.id, id
            );
            let rule = RuleId::ResponsesStreamOutputIndexCollision;
            judge.flag(rule, "/output_index", detail);
            if self.displaced.len() < 64 {
                self.displaced.push((index, existing));
            }
        }
        if let Some(id) = &id {
            self.by_id.entry(id.clone()).or_insert(index);
        }
        self.held += weigh::ENTRY + weigh::value(&item) + 2 * id.as_ref().map_or(0, String::len);
        self.items.insert(
            index,
            Item {
                id,
                added: item,
                done: None,
                streamed: String::new(),
                arguments: None,
                deltas: 0,
                done_text: None,
                source: Source::Streamed,
                judged: None,
                seq,
            },
        );
    }

    /// An arguments or custom input event, `.delta` or `.done`, for the item `wanted` names the
    /// type of (`judge`: at the event).
    fn payload(&mut self, value: &Value, wanted: &str, seq: u64, judge: &mut Judge<'_>) {
        let Some(index) = self.payload_item(value, judge) else {
            return;
        };
        let mut judge = judge.under("").tool_call(u32::try_from(index).ok());
        let Some(item) = self.items.get(&index) else {
            return;
        };
        if item.kind() != Some(wanted) {
            let detail = format!(
                "a {wanted} event for a {:?} item",
                item.kind().unwrap_or("untyped")
            );
            judge.flag(RuleId::ResponsesStreamDeltaKindMismatch, "/type", detail);
        }
        if item.done.is_some() {
            let detail = "an event for an item after its output_item.done";
            return judge.flag(RuleId::ResponsesStreamEventAfterItemDone, "", detail);
        }
        match value.get("delta").and_then(Value::as_str) {
            Some(delta) => self.payload_delta(index, delta, seq, &mut judge),
            None => self.payload_done(index, value, wanted, &mut judge),
        }
    }

    /// The `output_index` of the item an event's `item_id` names: `delta_without_item` when
    /// none was announced, `item_id_output_index_mismatch` when the event says another.
    fn payload_item(&self, value: &Value, judge: &mut Judge<'_>) -> Option<u64> {
        let item_id = value
            .get("item_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(index) = self.by_id.get(item_id).copied() else {
            let detail = format!("item_id {item_id:?} was never announced by output_item.added");
            judge.flag(RuleId::ResponsesStreamDeltaWithoutItem, "/item_id", detail);
            return None;
        };
        if let Some(said) = value
            .get("output_index")
            .and_then(Value::as_u64)
            .filter(|said| *said != index)
        {
            let detail =
                format!("item_id {item_id:?} is at output_index {index}, the event says {said}");
            let rule = RuleId::ResponsesStreamItemIdOutputIndexMismatch;
            let tool_call = u32::try_from(index).ok();
            judge
                .under("")
                .tool_call(tool_call)
                .flag(rule, "/output_index", detail);
        }
        Some(index)
    }

    /// A `.delta` for the item at `index`: custom input is kept, function arguments followed
    /// (a break reported at this fragment; `judge`: at the event, for the item's call).
    fn payload_delta(&mut self, index: u64, delta: &str, seq: u64, judge: &mut Judge<'_>) {
        let limits = self.limits;
        let schemas = self.schemas.as_deref();
        let Some(item) = self.items.get_mut(&index) else {
            return;
        };
        item.deltas += 1;
        if item.kind() != Some("function_call") {
            item.streamed.push_str(delta);
            self.held += delta.len();
            return;
        }
        let schema = schema_of(schemas, item.added.get("name").and_then(Value::as_str));
        let arguments = item
            .arguments
            .get_or_insert_with(|| StreamedArguments::new(schema, limits));
        let before = arguments.held_bytes();
        let broken = arguments.push(delta, seq);
        self.held = self
            .held
            .saturating_sub(before)
            .saturating_add(arguments.held_bytes());
        if let Some(broken) = broken {
            let (text, whole) = arguments.held();
            let at = judge.site(format_args!("/output/{index}/arguments"));
            let held = HeldText { text, whole };
            report_break(broken, Some(seq), held, &ARGUMENT_RULES, at, judge.sink());
            arguments.break_reported();
        }
    }

    /// A `.done` for the item at `index`: its whole copy, `arguments_done_mismatch` when it is
    /// not what the deltas made (`judge`: at the event, for the item's call).
    fn payload_done(&mut self, index: u64, value: &Value, wanted: &str, judge: &mut Judge<'_>) {
        let limits = self.limits;
        let schemas = self.schemas.as_deref();
        let Some(item) = self.items.get_mut(&index) else {
            return;
        };
        let key = if wanted == "custom_tool_call" {
            "input"
        } else {
            "arguments"
        };
        let Some(text) = value.get(key).and_then(Value::as_str) else {
            return;
        };
        let is_function = item.kind() == Some("function_call");
        let copy = match is_function {
            true => kept(text, limits),
            false => Cow::Borrowed(text),
        };
        let same = *copy == *item.streamed_text();
        if item.deltas > 0 && !same {
            let detail = format!(
                "the .done {key} differ from the concatenated deltas: {}",
                preview(&Value::String(start_of(text).to_owned()))
            );
            let rule = RuleId::ResponsesStreamArgumentsDoneMismatch;
            judge.flag(rule, format_args!("/{key}"), detail);
        }
        if is_function && !same {
            // The item is judged by this copy, not by what was streamed.
            let schema = schema_of(schemas, item.added.get("name").and_then(Value::as_str));
            let judged = (text.len() > limits.text).then(|| judge_given(text, schema, limits));
            item.source = Source::Given(judged);
        }
        self.held += copy.len();
        item.done_text = Some(copy.into_owned());
    }

    /// Settles what the output rules use for each function call's arguments (once, as the
    /// output is judged).
    pub fn settle(&mut self) {
        let schemas = self.schemas.as_deref();
        let items = self.items.values_mut();
        for item in items.chain(self.displaced.iter_mut().map(|(_, item)| item)) {
            let before = item
                .arguments
                .as_ref()
                .map_or(0, StreamedArguments::held_bytes);
            let name = item.added.get("name").and_then(Value::as_str);
            item.settle(schema_of(schemas, name));
            self.held = self.held.saturating_sub(before);
        }
    }

    /// Every item in output order, as a buffered body would list them, and what the output
    /// rules use for each one's arguments ([`StreamState::settle`]).
    pub fn assembled(&self) -> (Vec<Value>, Vec<Option<Judged>>) {
        let mut all: Vec<(u64, &Item)> =
            self.displaced.iter().map(|(i, item)| (*i, item)).collect();
        all.extend(self.items.iter().map(|(i, item)| (*i, item)));
        all.sort_by_key(|(index, _)| *index);
        all.into_iter()
            .map(|(_, item)| (item.assembled(), item.judged.clone()))
            .unzip()
    }

    /// The seq a complete-stage violation about `tool_call` (an output_index) points at.
    pub fn seq_for(&self, tool_call: Option<u32>) -> Option<u64> {
        match tool_call {
            Some(index) => self
                .items
                .get(&u64::from(index))
                .map(|item| item.seq)
                .or(self.terminal.as_ref().map(|t| t.seq)),
            None => self.terminal.as_ref().map(|t| t.seq).or(self.text_seq),
        }
    }
}
