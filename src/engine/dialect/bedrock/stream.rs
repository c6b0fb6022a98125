//! A ConverseStream's events, one at a time: the block lifecycle keyed by `contentBlockIndex`
//! (a `toolUse` block opens with `contentBlockStart`, a text block with its first delta), the
//! `toolUse.input` string fragments followed by an [`ArgumentStream`] (the text held while it
//! fits its bound, judged as it streams past it), `messageStop`'s `stopReason`, `metadata`, and
//! the framing's own events (an `:exception` or `:error` message, a corrupt message).
//!
//! Input: one event as the exchange hands it over (`event` the `:event-type`, `data` the JSON
//! payload; see `engine::framing::event_stream::to_event`). Output: `bedrock.stream.*` and
//! `bedrock.frame.*` violations, and the reassembled [`Message`] the message rules judge at
//! `messageStop` (or at the end). What it keeps is counted with `engine::weigh` and bounded.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::message::{Message, RULES, StreamedInput, ToolUse};
use crate::engine::arguments::{ArgumentLimits, ArgumentStream, ArgumentVerdict};
use crate::engine::dialect::argument_verdict::{HeldText, report_break};
use crate::engine::dialect::common::preview;
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, ToolSchema};
use crate::engine::violation::{Stage, ViolationSink};
use crate::engine::weigh;

/// What a block turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Kind {
    #[default]
    Unknown,
    Text,
    Tool,
}

/// One content block, by `contentBlockIndex`.
#[derive(Debug, Default)]
struct Block {
    kind: Kind,
    /// Opened by `contentBlockStart` with `start.toolUse`.
    tool_started: bool,
    id: Option<Value>,
    name: Option<String>,
    /// The `toolUse.input` fragments, followed from the first.
    input: Option<ArgumentStream>,
    text: String,
    stopped: bool,
    /// The joined input, once judged at `contentBlockStop`.
    parsed: Option<StreamedInput>,
}

/// The stream's reassembly and lifecycle.
#[derive(Debug, Default)]
pub struct StreamState {
    blocks: BTreeMap<u32, Block>,
    /// Events seen (the framing's own included).
    pub events: usize,
    /// `messageStop`'s `stopReason` (`Some(Null)` when it had none).
    pub stop: Option<Value>,
    pub metadata: bool,
    /// An `:exception` / `:error` message or a corrupt message ended the stream.
    pub errored: bool,
    /// The message rules ran.
    pub judged: bool,
    pub usage: Option<Value>,
    /// What the reassembly holds (`engine::weigh`), and the most one event may add.
    pub held: usize,
    pub bound: usize,
    /// The request's tools, whose schemas the inputs are judged against as they stream.
    pub schemas: Option<Arc<CompiledTools>>,
    pub limits: ArgumentLimits,
}

impl StreamState {
    /// A stream whose tool calls' arguments are judged against `schemas` as they arrive.
    pub fn for_calls(schemas: Option<Arc<CompiledTools>>) -> StreamState {
        StreamState {
            schemas,
            ..StreamState::default()
        }
    }

    /// Whether the stream ended by its own framing: `metadata` after `messageStop`, or an
    /// exception.
    pub fn is_done(&self) -> bool {
        self.errored || (self.stop.is_some() && self.metadata)
    }

    /// Reads one event; returns true when it was `messageStop` (the message is whole).
    pub fn on_event(
        &mut self,
        name: Option<&str>,
        data: &str,
        seq: u64,
        sink: &mut ViolationSink,
    ) -> bool {
        let first = self.events == 0;
        self.events += 1;
        let mut judge = Judge::new(sink, Stage::Fragment).seq(Some(seq));
        let Some(name) = name else {
            let detail = "an event message without an :event-type header";
            judge.flag(RuleId::BedrockFrameMissingEventType, "", detail);
            return false;
        };
        if self.framing_event(name, data, &mut judge) {
            return false;
        }
        let mut payload: Value = match serde_json::from_str(data) {
            Ok(payload) => payload,
            Err(error) => {
                let detail = format!("{name} payload is not JSON: {error}");
                judge.flag(RuleId::BedrockFramePayloadNotJson, "", detail);
                return false;
            }
        };
        if first && name != "messageStart" {
            let detail = format!("the first event is {name}, not messageStart");
            judge.flag(RuleId::BedrockStreamFirstNotMessageStart, "", detail);
        }
        match name {
            "contentBlockStart" => self.on_start(&payload, &mut judge),
            "contentBlockDelta" => self.on_delta(&mut payload, seq, &mut judge),
            "contentBlockStop" => self.on_stop(&payload, &mut judge),
            "messageStop" => {
                self.on_message_stop(&payload, &mut judge);
                return true;
            }
            "metadata" => {
                self.metadata = true;
                self.usage = payload.get("usage").cloned();
            }
            _ => {}
        }
        false
    }

    /// The framing's own events: a corrupt message (`:frame:`) or an `:exception` / `:error`
    /// message, which end the stream. True when `name` was one (`judge`: at the event).
    fn framing_event(&mut self, name: &str, data: &str, judge: &mut Judge<'_>) -> bool {
        if let Some(problem) = name.strip_prefix(":frame:") {
            self.errored = true;
            let rule = match problem {
                "prelude_crc_mismatch" => RuleId::BedrockFramePreludeCrcMismatch,
                "message_crc_mismatch" => RuleId::BedrockFrameMessageCrcMismatch,
                "header_type_unknown" => RuleId::BedrockFrameHeaderTypeUnknown,
                "payload_not_utf8" => {
                    self.errored = false;
                    RuleId::BedrockFramePayloadNotJson
                }
                _ => RuleId::BedrockFrameLengthInvalid,
            };
            let detail = if data.is_empty() {
                "a payload that is not UTF-8".to_owned()
            } else {
                data.to_owned()
            };
            judge.flag(rule, "", detail);
            return true;
        }
        let Some(kind) = name
            .strip_prefix(":exception:")
            .or_else(|| name.strip_prefix(":error:"))
        else {
            return false;
        };
        self.errored = true;
        let detail = format!("the stream ended with a {kind:?} exception: {data}");
        judge.flag(RuleId::BedrockStreamExceptionEvent, "", detail);
        true
    }

    /// `messageStop`: its `stopReason`, and `block_not_stopped` for every block still open
    /// (`judge`: at the event).
    fn on_message_stop(&mut self, payload: &Value, judge: &mut Judge<'_>) {
        self.stop = Some(payload.get("stopReason").cloned().unwrap_or(Value::Null));
        for (index, block) in &self.blocks {
            if !block.stopped {
                let detail = format!("block {index} got no contentBlockStop before messageStop");
                let rule = RuleId::BedrockStreamBlockNotStopped;
                judge
                    .under("")
                    .tool_call(Some(*index))
                    .flag(rule, "", detail);
            }
        }
    }

    /// `contentBlockStart`: a `toolUse` start opens a tool block (`judge`: at the event).
    fn on_start(&mut self, payload: &Value, judge: &mut Judge<'_>) {
        let index = block_index(payload);
        let mut judge = judge.under("").tool_call(Some(index));
        let members = payload.get("start").and_then(Value::as_object);
        let Some(members) = members.filter(|m| m.len() == 1) else {
            let shown = payload.get("start").map(preview).unwrap_or_default();
            let detail =
                format!("contentBlockStart.start must have exactly one member, got {shown}");
            return judge.flag(RuleId::BedrockStreamEmptyStartUnion, "/start", detail);
        };
        let Some(tool) = members.get("toolUse") else {
            let member = members.keys().next().cloned().unwrap_or_default();
            if !matches!(member.as_str(), "toolResult" | "image") {
                let detail =
                    format!("contentBlockStart.start.{member} is not a ContentBlockStart member");
                judge.flag(RuleId::BedrockStreamStartUnknownMember, "/start", detail);
            }
            return;
        };
        let block = Block {
            kind: Kind::Tool,
            tool_started: true,
            id: tool.get("toolUseId").cloned(),
            name: tool.get("name").and_then(Value::as_str).map(str::to_owned),
            ..Block::default()
        };
        let added = weigh::ENTRY
            + weigh::maybe(block.id.as_ref())
            + block.name.as_ref().map_or(0, String::len);
        if self.fits(added) {
            self.held += added;
            self.blocks.insert(index, block);
        }
    }

    /// A delta; a `toolUse.input` fragment is moved out of `payload` into the block's input
    /// (the first one without a copy; `judge`: at the event).
    fn on_delta(&mut self, payload: &mut Value, seq: u64, judge: &mut Judge<'_>) {
        let index = block_index(payload);
        let mut judge = judge.under("").tool_call(Some(index));
        let Some(delta) = payload.get_mut("delta") else {
            return;
        };
        let fragment = delta
            .get_mut("toolUse")
            .map(|t| t.get_mut("input").map(Value::take));
        let text = delta.get("text").and_then(Value::as_str);
        if text.is_none() && fragment.is_none() {
            return;
        }
        if !self.blocks.contains_key(&index) {
            if !self.fits(weigh::ENTRY) {
                return;
            }
            self.held += weigh::ENTRY;
            self.blocks.insert(index, Block::default());
        }
        if self.blocks.get(&index).is_some_and(|block| block.stopped) {
            let detail = format!("a delta for block {index} after its contentBlockStop");
            return judge.flag(RuleId::BedrockStreamDeltaAfterStop, "/delta", detail);
        }
        match (text, fragment.flatten()) {
            (Some(text), _) => self.text_delta(index, text, &mut judge),
            (None, Some(Value::String(piece))) => {
                self.input_delta(index, Some(&piece), seq, &mut judge)
            }
            (None, _) => self.input_delta(index, None, seq, &mut judge),
        }
    }

    /// A text delta for the block at `index` (`judge`: at the event, for the block).
    fn text_delta(&mut self, index: u32, text: &str, judge: &mut Judge<'_>) {
        let fits = self.fits(text.len());
        let Some(block) = self.blocks.get_mut(&index) else {
            return;
        };
        if block.kind == Kind::Tool {
            let detail = format!("a text delta on toolUse block {index}");
            let rule = RuleId::BedrockStreamDeltaKindMismatch;
            return judge.flag(rule, "/delta/text", detail);
        }
        block.kind = Kind::Text;
        if fits {
            block.text.push_str(text);
            self.held += text.len();
        }
    }

    /// A `toolUse.input` fragment for the block at `index` (`None`: not a string), followed
    /// as it streams; its break reported here (`judge`: at the event, for the block).
    fn input_delta(&mut self, index: u32, piece: Option<&str>, seq: u64, judge: &mut Judge<'_>) {
        let schemas = self.schemas.as_deref();
        let limits = self.limits;
        let Some(block) = self.blocks.get_mut(&index) else {
            return;
        };
        if block.kind == Kind::Text {
            let detail = format!("a toolUse delta on text block {index}");
            let rule = RuleId::BedrockStreamDeltaKindMismatch;
            return judge.flag(rule, "/delta/toolUse", detail);
        }
        if !block.tool_started {
            let detail =
                format!("a toolUse delta for block {index}, never started with start.toolUse");
            let rule = RuleId::BedrockStreamToolDeltaWithoutStart;
            return judge.flag(rule, "/delta/toolUse", detail);
        }
        let input = block
            .input
            .get_or_insert_with(|| ArgumentStream::new(schema_of(schemas, &block.name), limits));
        let before = input.held_bytes();
        // A fragment that is not a string cannot join into JSON text: the NUL breaks it there.
        let broken = input.push(piece.unwrap_or("\u{0}"), seq);
        self.held = self
            .held
            .saturating_sub(before)
            .saturating_add(input.held_bytes());
        if let Some(broken) = broken {
            let (text, whole) = input.text();
            let held = HeldText { text, whole };
            let at = judge.site("/delta/toolUse/input");
            report_break(broken, Some(seq), held, &RULES, at, judge.sink());
        }
    }

    /// `contentBlockStop`: a tool block's input is judged whole (`judge`: at the event).
    fn on_stop(&mut self, payload: &Value, judge: &mut Judge<'_>) {
        let index = block_index(payload);
        let schemas = self.schemas.as_deref();
        let Some(block) = self.blocks.get_mut(&index) else {
            return;
        };
        block.stopped = true;
        if block.kind != Kind::Tool || block.parsed.is_some() {
            return;
        }
        let Some(input) = block.input.take() else {
            // An argument-less call (`bedrock.stream.tool_input_empty`, informational): `{}`.
            block.parsed = Some(StreamedInput::Value(Value::Object(serde_json::Map::new())));
            return;
        };
        let held = input.held_bytes();
        let (parsed, problem) = judge_input(input, schema_of(schemas, &block.name));
        if let Some(problem) = problem {
            let detail = format!("block {index}'s input fragments join into {problem}");
            let rule = RuleId::BedrockStreamToolInputNotJsonObject;
            let mut judge = judge.under("").tool_call(Some(index));
            judge.flag(rule, "/delta/toolUse/input", detail);
        }
        // The parsed input (or the stream's verdict) is kept in place of its text, and counted
        // instead.
        self.held = self
            .held
            .saturating_sub(held)
            .saturating_add(parsed.weight());
        block.parsed = Some(parsed);
    }

    /// Judges the inputs of tool blocks never stopped, as the message is judged: an object
    /// stands, anything else is dropped without a finding of its own (the block's
    /// `block_not_stopped` said it).
    pub fn settle(&mut self) {
        let schemas = self.schemas.as_deref();
        for block in self.blocks.values_mut() {
            if block.parsed.is_some() {
                continue;
            }
            if let Some(input) = block.input.take() {
                let held = input.held_bytes();
                let (parsed, _) = judge_input(input, schema_of(schemas, &block.name));
                self.held = self
                    .held
                    .saturating_sub(held)
                    .saturating_add(parsed.weight());
                block.parsed = Some(parsed);
            }
        }
    }

    /// Whether `added` more bytes keep the reassembly within its bound (0: unbounded).
    fn fits(&self, added: usize) -> bool {
        self.bound == 0 || self.held.saturating_add(added) <= self.bound
    }

    /// The message as reassembled so far: its tool blocks (inputs judged at their stop, or
    /// parsed now), its text, its `stopReason`.
    pub fn message(&self) -> Message {
        let mut message = Message {
            stop_reason: self.stop.clone().filter(|s| !s.is_null()),
            ..Message::default()
        };
        for (index, block) in &self.blocks {
            match block.kind {
                Kind::Text => message
                    .text
                    .get_or_insert_with(String::new)
                    .push_str(&block.text),
                Kind::Tool => message.tool_uses.push(ToolUse {
                    index: *index,
                    id: block.id.clone(),
                    name: block.name.clone(),
                    input: match (&block.parsed, &block.input) {
                        (Some(parsed), _) => parsed.clone(),
                        (None, None) => StreamedInput::Value(Value::Object(serde_json::Map::new())),
                        // Not reached once settled ([`StreamState::settle`]).
                        (None, Some(_)) => StreamedInput::NotObject,
                    },
                    at: format!("/contentBlockIndex/{index}"),
                }),
                Kind::Unknown => {}
            }
        }
        message
    }
}

/// The declared schema of the tool a block names.
fn schema_of<'a>(
    schemas: Option<&'a CompiledTools>,
    name: &Option<String>,
) -> Option<&'a ToolSchema> {
    let name = name.as_deref()?;
    schemas.and_then(|s| s.get(name)).map(|tool| &tool.schema)
}

/// A finished block's input, and what to say when it is not a JSON object (already said at
/// its fragment when the text broke mid-stream).
fn judge_input(
    input: ArgumentStream,
    schema: Option<&ToolSchema>,
) -> (StreamedInput, Option<String>) {
    let (text, whole) = input.text();
    if whole && text.trim().is_empty() {
        // Only white space: an argument-less call, `{}`.
        return (
            StreamedInput::Value(Value::Object(serde_json::Map::new())),
            None,
        );
    }
    let shown = format!(
        "{:?}{}",
        crate::engine::violation::bounded_str(text, 200),
        if whole { "" } else { "…" }
    );
    let input_prefix = text.to_owned();
    match input.finish(schema) {
        ArgumentVerdict::NotJson { seq: Some(_), .. } => (StreamedInput::NotObject, None),
        ArgumentVerdict::NotJson { broken, seq: None } => (
            StreamedInput::NotObject,
            Some(format!("{shown}, not a JSON object ({broken})")),
        ),
        ArgumentVerdict::NotObject(_) => (
            StreamedInput::NotObject,
            Some(format!("{shown}, not a JSON object")),
        ),
        ArgumentVerdict::Object {
            value: Some(value), ..
        } => (StreamedInput::Value(value), None),
        ArgumentVerdict::Object {
            value: None,
            schema,
        } => {
            let shown = input_prefix.clone();
            (StreamedInput::Judged { schema, shown }, None)
        }
    }
}

/// `contentBlockIndex` (0 when absent or not a small integer).
fn block_index(payload: &Value) -> u32 {
    payload
        .get("contentBlockIndex")
        .and_then(Value::as_u64)
        .and_then(|i| u32::try_from(i).ok())
        .unwrap_or(0)
}
