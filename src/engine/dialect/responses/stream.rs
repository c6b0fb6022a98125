//! Judges a Responses SSE stream event by event and reassembles its items **by `output_index`
//! and `item_id`** (`responses.stream.*`).
//!
//! Input: [`SseEvent`](crate::engine::framing::sse::SseEvent)s from the shared framer, each with the seq of the `feed` call that
//! completed it. Output: fragment-stage violations as events arrive, and the reassembled output
//! items ([`StreamState::items`]) that [`super::output`] judges like a buffered body. The stream
//! has no `[DONE]`: it ends at `response.completed`/`incomplete`/`failed` or `error`. `name` and
//! `call_id` come only from `output_item.added`; `.done` without deltas is legal.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::events::known_event;
pub use super::items::{Item, Terminal};
use crate::engine::dialect::common;
use crate::engine::dialect::common::preview;
use crate::engine::rules::RuleId;
use crate::engine::violation::{Site, Stage, ViolationSink};
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
    fn event(&mut self, seq: u64, sink: &mut ViolationSink) {
        self.count += 1;
        if self.count > 1 {
            return;
        }
        let before = sink.len();
        sink.push(
            RuleId::ResponsesStreamSequenceNumberMissing,
            Stage::Fragment,
            Site::at("/sequence_number").seq(Some(seq)),
            "an event without an integer sequence_number",
        );
        self.reported_at = (sink.len() > before).then_some(before);
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
    /// Judges one event; returns true when it was the terminal event.
    pub fn on_event(
        &mut self,
        data: &str,
        event: Option<&str>,
        seq: u64,
        sink: &mut ViolationSink,
    ) -> bool {
        let site = |path: &str| Site::at(path).seq(Some(seq));
        if data == "[DONE]" {
            sink.push(
                RuleId::ResponsesStreamDoneSentinel,
                Stage::Fragment,
                site(""),
                "data: [DONE] on a Responses stream",
            );
            return false;
        }
        let Some(value) = common::event_json(data, "not JSON", site(""), sink) else {
            return false;
        };
        let rule = RuleId::ResponsesStreamEventNameMismatch;
        let kind = common::event_kind(&value, event, rule, site("/type"), sink);
        if let Some(terminal) = &self.terminal {
            let tolerated = terminal.kind == "response.failed" && kind == "error";
            if !tolerated {
                let detail = format!("{kind:?} after the terminal {:?}", terminal.kind);
                sink.push(
                    RuleId::ResponsesStreamEventAfterTerminal,
                    Stage::Fragment,
                    site(""),
                    detail,
                );
            }
            return false;
        }
        match value.get("sequence_number").and_then(Value::as_i64) {
            None => self.sequence_missing.event(seq, sink),
            Some(number) => {
                if let Some(last) = self.last_sequence.filter(|last| number <= *last) {
                    let detail = format!("sequence_number {number} after {last}");
                    sink.push(
                        RuleId::ResponsesStreamSequenceNumberNotMonotonic,
                        Stage::Fragment,
                        site("/sequence_number"),
                        detail,
                    );
                }
                self.last_sequence = Some(number);
            }
        }
        match kind {
            "response.output_item.added" => self.added(&value, seq, sink),
            "response.output_item.done" => self.item_done(&value, seq, sink),
            "response.function_call_arguments.delta" | "response.function_call_arguments.done" => {
                self.payload(&value, "function_call", seq, sink)
            }
            "response.custom_tool_call_input.delta" | "response.custom_tool_call_input.done" => {
                self.payload(&value, "custom_tool_call", seq, sink)
            }
            "response.output_text.delta" => {
                if let Some(delta) = value.get("delta").and_then(Value::as_str)
                    && self.text.len() + delta.len() <= TEXT_BOUND
                {
                    self.text.push_str(delta);
                    self.held += delta.len();
                    self.text_seq.get_or_insert(seq);
                }
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                self.terminal_response(kind, &value, seq, sink);
                return true;
            }
            "error" => {
                let complete = value.get("message").is_some_and(Value::is_string)
                    && value.get("code").is_some()
                    && value.get("param").is_some();
                if !complete {
                    let detail = format!(
                        "an error event needs message, code and param: {}",
                        preview(&value)
                    );
                    sink.push(
                        RuleId::ResponsesStreamErrorEventInvalid,
                        Stage::Fragment,
                        site(""),
                        detail,
                    );
                }
                self.terminal = Some(Terminal {
                    kind: kind.to_owned(),
                    response: None,
                    seq,
                });
                return true;
            }
            other if known_event(other) => {}
            other => {
                let detail = format!(
                    "unknown Responses event type {}",
                    preview(&Value::String(other.to_owned()))
                );
                sink.push(
                    RuleId::ResponsesStreamUnknownEventType,
                    Stage::Fragment,
                    site("/type"),
                    detail,
                );
            }
        }
        false
    }

    fn added(&mut self, value: &Value, seq: u64, sink: &mut ViolationSink) {
        let site = |path: &str| Site::at(path).seq(Some(seq));
        let Some(index) = value.get("output_index").and_then(Value::as_u64) else {
            sink.push(
                RuleId::ResponseShapeInvalid,
                Stage::Fragment,
                site("/output_index"),
                "output_item.added without an integer output_index",
            );
            return;
        };
        let item = value.get("item").cloned().unwrap_or(Value::Null);
        let id = item.get("id").and_then(Value::as_str).map(str::to_owned);
        if let Some(existing) = self.items.remove(&index) {
            let detail = format!(
                "output_index {index} is announced again (first {:?}, now {:?})",
                existing.id, id
            );
            sink.push(
                RuleId::ResponsesStreamOutputIndexCollision,
                Stage::Fragment,
                site("/output_index"),
                detail,
            );
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
                deltas: 0,
                done_text: None,
                seq,
            },
        );
    }

    fn payload(&mut self, value: &Value, wanted: &str, seq: u64, sink: &mut ViolationSink) {
        let site = |path: &str| Site::at(path).seq(Some(seq));
        let item_id = value
            .get("item_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(index) = self.by_id.get(item_id).copied() else {
            let detail = format!("item_id {item_id:?} was never announced by output_item.added");
            sink.push(
                RuleId::ResponsesStreamDeltaWithoutItem,
                Stage::Fragment,
                site("/item_id"),
                detail,
            );
            return;
        };
        let tool_call = u32::try_from(index).ok();
        let site = |path: &str| Site::at(path).seq(Some(seq)).tool_call(tool_call);
        if let Some(said) = value
            .get("output_index")
            .and_then(Value::as_u64)
            .filter(|said| *said != index)
        {
            let detail =
                format!("item_id {item_id:?} is at output_index {index}, the event says {said}");
            sink.push(
                RuleId::ResponsesStreamItemIdOutputIndexMismatch,
                Stage::Fragment,
                site("/output_index"),
                detail,
            );
        }
        let Some(item) = self.items.get_mut(&index) else {
            return;
        };
        if item.kind() != Some(wanted) {
            let detail = format!(
                "a {wanted} event for a {:?} item",
                item.kind().unwrap_or("untyped")
            );
            sink.push(
                RuleId::ResponsesStreamDeltaKindMismatch,
                Stage::Fragment,
                site("/type"),
                detail,
            );
        }
        if item.done.is_some() {
            sink.push(
                RuleId::ResponsesStreamEventAfterItemDone,
                Stage::Fragment,
                site(""),
                "an event for an item after its output_item.done",
            );
            return;
        }
        if let Some(delta) = value.get("delta").and_then(Value::as_str) {
            item.streamed.push_str(delta);
            item.deltas += 1;
            self.held += delta.len();
            return;
        }
        let key = if wanted == "custom_tool_call" {
            "input"
        } else {
            "arguments"
        };
        let Some(text) = value.get(key).and_then(Value::as_str) else {
            return;
        };
        if item.deltas > 0 && text != item.streamed {
            let detail = format!(
                "the .done {key} differ from the concatenated deltas: {}",
                preview(&Value::String(text.to_owned()))
            );
            sink.push(
                RuleId::ResponsesStreamArgumentsDoneMismatch,
                Stage::Fragment,
                site(&format!("/{key}")),
                detail,
            );
        }
        self.held += text.len();
        item.done_text = Some(text.to_owned());
    }

    /// Every item in output order, as a buffered body would list them.
    pub fn assembled(&self) -> Vec<Value> {
        let mut all: Vec<(u64, &Item)> =
            self.displaced.iter().map(|(i, item)| (*i, item)).collect();
        all.extend(self.items.iter().map(|(i, item)| (*i, item)));
        all.sort_by_key(|(index, _)| *index);
        all.into_iter().map(|(_, item)| item.assembled()).collect()
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
