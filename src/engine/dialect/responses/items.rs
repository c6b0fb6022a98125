//! The items of a Responses stream and how they end: [`Item`] (what `output_item.added`
//! announced, what was streamed for it, what `output_item.done` finished it as), the
//! [`Terminal`] event, and the checks made when an item or the response ends
//! (`item_done_mismatch`, `delta_without_item` for an unannounced done, `event_after_item_done`,
//! `terminal_envelope_invalid`).
//!
//! Input: the parsed event and its seq, from [`super::stream::StreamState::on_event`]. Output:
//! fragment-stage violations and the updated state.

use std::borrow::Cow;

use serde_json::Value;

use super::arguments::{Judged, StreamedArguments, kept, shrink_member, start_of};
use super::stream::{StreamState, schema_of};
use crate::engine::arguments::ArgumentLimits;
use crate::engine::dialect::common::preview;
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, ToolSchema};
use crate::engine::weigh;

/// One announced output item.
#[derive(Debug)]
pub struct Item {
    pub id: Option<String>,
    /// The item as `output_item.added` announced it.
    pub added: Value,
    /// The item as `output_item.done` finished it.
    pub done: Option<Value>,
    /// Concatenated custom tool input deltas.
    pub streamed: String,
    /// A function call's argument deltas, followed as they stream.
    pub arguments: Option<StreamedArguments>,
    pub deltas: usize,
    /// The `.done` event's `arguments`/`input` (arguments past the held bound as their
    /// marker).
    pub done_text: Option<String>,
    /// Where the arguments the item assembles to came from.
    pub source: Source,
    /// What the output rules use for those arguments, once the item is judged.
    pub judged: Option<Judged>,
    pub seq: u64,
}

/// Where a function call item's final arguments came from.
#[derive(Debug, Default)]
pub enum Source {
    /// The deltas (or nothing yet).
    #[default]
    Streamed,
    /// A whole copy that is not the streamed text (`.done`, `output_item.done`): its verdict
    /// when it was past the held bound, else `None` (the rules parse it).
    Given(Option<Judged>),
    /// Judged already ([`Item::settle`]).
    Settled,
}

impl Item {
    pub fn kind(&self) -> Option<&str> {
        self.added.get("type").and_then(Value::as_str)
    }

    pub fn is_call(&self) -> bool {
        matches!(self.kind(), Some("function_call" | "custom_tool_call"))
    }

    /// The streamed text as it is kept (arguments past the held bound as their marker).
    pub fn streamed_text(&self) -> Cow<'_, str> {
        match &self.arguments {
            Some(arguments) => arguments.text(),
            None => Cow::Borrowed(&self.streamed),
        }
    }

    /// Settles what the output rules use for the item's arguments (once).
    pub fn settle(&mut self, schema: Option<&ToolSchema>) {
        self.judged = match std::mem::replace(&mut self.source, Source::Settled) {
            Source::Given(judged) => judged,
            Source::Streamed => self.arguments.as_mut().and_then(|a| a.judge(schema)),
            Source::Settled => return,
        };
    }

    pub fn payload_key(&self) -> &'static str {
        if self.kind() == Some("custom_tool_call") {
            "input"
        } else {
            "arguments"
        }
    }

    /// The item a buffered body would carry: the done item, or the added one with what was
    /// streamed for it.
    pub fn assembled(&self) -> Value {
        if let Some(done) = &self.done {
            return done.clone();
        }
        let mut item = self.added.clone();
        if let Some(object) = item.as_object_mut()
            && self.is_call()
        {
            let text = self
                .done_text
                .clone()
                .unwrap_or_else(|| self.streamed_text().into_owned());
            object.insert(self.payload_key().into(), Value::String(text));
        }
        item
    }
}

/// The terminal event, when one arrived.
#[derive(Debug)]
pub struct Terminal {
    pub kind: String,
    pub response: Option<Value>,
    pub seq: u64,
}

impl StreamState {
    /// `output_item.done`: finishes an announced item (`judge`: at the event).
    pub(super) fn item_done(&mut self, value: &Value, judge: &mut Judge<'_>) {
        let index = value.get("output_index").and_then(Value::as_u64);
        let Some(item) = index.and_then(|index| self.items.get_mut(&index)) else {
            let detail =
                "output_item.done for an output_index never announced by output_item.added";
            let rule = RuleId::ResponsesStreamDeltaWithoutItem;
            let tool_call = index.and_then(|i| u32::try_from(i).ok());
            return judge
                .under("")
                .tool_call(tool_call)
                .flag(rule, "/output_index", detail);
        };
        let mut judge = judge
            .under("")
            .tool_call(index.and_then(|i| u32::try_from(i).ok()));
        if item.done.is_some() {
            let detail = "a second output_item.done for one item";
            return judge.flag(RuleId::ResponsesStreamEventAfterItemDone, "", detail);
        }
        let done = value.get("item").cloned().unwrap_or(Value::Null);
        compare_announced(item, &done, &mut judge);
        let done = done_copy(
            item,
            done,
            (self.limits, self.schemas.as_deref()),
            &mut judge,
        );
        let weight = weigh::value(&done);
        item.done = Some(done);
        self.held += weight;
    }

    /// `response.completed`, `.incomplete` or `.failed`: keeps the terminal response, its
    /// arguments past the held bound as their markers (`judge`: at the event).
    pub(super) fn terminal_response(
        &mut self,
        kind: &str,
        value: &Value,
        seq: u64,
        judge: &mut Judge<'_>,
    ) {
        let mut response = value.get("response").cloned();
        // Arguments past the held bound are kept as their markers; judged here when no item
        // was streamed (the output is then judged from this copy).
        let unstreamed = self.items.is_empty() && self.displaced.is_empty();
        let outputs = response
            .as_mut()
            .and_then(|r| r.get_mut("output"))
            .and_then(Value::as_array_mut);
        for item in outputs.into_iter().flatten() {
            if item.get("type").and_then(Value::as_str) != Some("function_call") {
                self.terminal_judged.push(None);
                continue;
            }
            let name = item.get("name").and_then(Value::as_str).map(str::to_owned);
            let schema = schema_of(self.schemas.as_deref(), name.as_deref());
            let judged =
                shrink_member(item, "arguments", self.limits, unstreamed.then_some(schema));
            self.terminal_judged.push(judged);
        }
        self.held += weigh::maybe(response.as_ref());
        let expected = kind.trim_start_matches("response.");
        let envelope = response.as_ref();
        let missing: Vec<&str> = ["id", "object", "model", "status"]
            .into_iter()
            .filter(|key| {
                envelope
                    .and_then(|r| r.get(*key))
                    .is_none_or(Value::is_null)
            })
            .collect();
        let status = envelope
            .and_then(|r| r.get("status"))
            .and_then(Value::as_str);
        if !missing.is_empty() || status.is_some_and(|s| s != expected) {
            let detail = format!(
                "the terminal response lacks {missing:?} or its status {status:?} is not {expected:?}"
            );
            let rule = RuleId::ResponsesStreamTerminalEnvelopeInvalid;
            judge.flag(rule, "/response", detail);
        }
        self.terminal = Some(Terminal {
            kind: kind.to_owned(),
            response,
            seq,
        });
    }
}

/// `item_done_mismatch` for a member the done item changed from the announced one.
fn compare_announced(item: &Item, done: &Value, judge: &mut Judge<'_>) {
    for key in ["type", "id", "call_id", "name"] {
        let before = item.added.get(key);
        if before.is_some() && done.get(key) != before {
            let detail = format!(
                "item.{key} was {} when added, {} when done",
                preview(before.unwrap_or(&Value::Null)),
                preview(done.get(key).unwrap_or(&Value::Null))
            );
            let rule = RuleId::ResponsesStreamItemDoneMismatch;
            judge.flag(rule, format_args!("/item/{key}"), detail);
        }
    }
}

/// The done item as it is kept: `item_done_mismatch` when its payload is not what was
/// streamed, a function call then judged by this copy, its arguments past the held bound as
/// their marker (`bounds`: the held bound and the request's tools).
fn done_copy(
    item: &mut Item,
    mut done: Value,
    bounds: (ArgumentLimits, Option<&CompiledTools>),
    judge: &mut Judge<'_>,
) -> Value {
    let (limits, schemas) = bounds;
    let key = item.payload_key();
    let is_function = item.kind() == Some("function_call");
    let final_text = done.get(key).and_then(Value::as_str);
    let final_kept = final_text.map(|text| match is_function {
        true => kept(text, limits),
        false => Cow::Borrowed(text),
    });
    let streamed = match &item.done_text {
        Some(text) => Some(Cow::Borrowed(text.as_str())),
        None => (item.deltas > 0).then(|| item.streamed_text()),
    };
    if item.is_call()
        && let (Some(streamed), Some(final_kept), Some(final_text)) =
            (&streamed, &final_kept, final_text)
        && streamed != final_kept
    {
        let detail = format!(
            "item.{key} differs from what was streamed: {}",
            preview(&Value::String(start_of(final_text).to_owned()))
        );
        let rule = RuleId::ResponsesStreamItemDoneMismatch;
        judge.flag(rule, format_args!("/item/{key}"), detail);
    }
    let current = streamed.unwrap_or_else(|| item.streamed_text());
    let same = final_kept.as_ref().is_some_and(|text| *text == current);
    if is_function && !same {
        // The item is judged by its done copy, not by what was streamed.
        let name = item.added.get("name").and_then(Value::as_str);
        let schema = schema_of(schemas, name);
        item.source = Source::Given(shrink_member(&mut done, key, limits, Some(schema)));
    } else if is_function {
        shrink_member(&mut done, key, limits, None);
    }
    done
}
