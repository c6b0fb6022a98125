//! The Converse message rules, shared by a buffered `ConverseResponse` and a reassembled
//! stream: `stopReason` against the `toolUse` blocks, each block's id, name and input, and the
//! `toolChoice`.
//!
//! Input: the message read as [`Message`] (its client `toolUse` blocks, its text, its
//! `stopReason`) and the request. Output: `bedrock.response.*` violations, and the report's
//! outcome for the message.

use std::collections::BTreeSet;

use serde_json::Value;

use super::request::{BedrockRequest, Choice};
use crate::engine::arguments::{ArgumentSchema, ArgumentVerdict};
use crate::engine::dialect::argument_verdict::{ArgumentRules, HeldText, report_verdict};
use crate::engine::dialect::common::preview;
use crate::engine::judge::Judge;
use crate::engine::report::{ChoiceOutcome, ToolCallOutcome};
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, SchemaCheck, SchemaFailure};
use crate::engine::violation::{Stage, ViolationSink};
use crate::engine::weigh;

/// Schema failures reported per call.
const MAX_SCHEMA_ERRORS: usize = 8;

/// A streamed input's rules (its break and non-object are one rule, at its fragment).
pub const RULES: ArgumentRules = ArgumentRules {
    not_json: RuleId::BedrockStreamToolInputNotJsonObject,
    not_object: RuleId::BedrockStreamToolInputNotJsonObject,
    schema: RuleId::BedrockResponseInputSchemaViolation,
    lenient: false,
};

/// The `stopReason` values of botocore's `StopReason` enum.
pub const STOP_REASONS: [&str; 9] = [
    "end_turn",
    "tool_use",
    "max_tokens",
    "stop_sequence",
    "guardrail_intervened",
    "content_filtered",
    "malformed_model_output",
    "malformed_tool_use",
    "model_context_window_exceeded",
];

/// One client `toolUse` block of the message.
#[derive(Debug, Clone, Default)]
pub struct ToolUse {
    /// The block's position (buffered) or `contentBlockIndex` (streamed).
    pub index: u32,
    pub id: Option<Value>,
    pub name: Option<String>,
    pub input: StreamedInput,
    /// Where the block sits, for violations (`/output/message/content/0/toolUse`, or
    /// `/contentBlockIndex/0` for a stream).
    pub at: String,
}

/// A `toolUse` block's input as the message rules get it.
#[derive(Debug, Clone, Default)]
pub enum StreamedInput {
    /// The value (a buffered block's may be anything; a stream's is an object).
    Value(Value),
    /// A stream's fragments did not join into an object: its own rule fired.
    #[default]
    NotObject,
    /// A stream's input past the held text bound: no value was kept, the schema was judged as
    /// it streamed; `shown` is the start of its text.
    Judged {
        schema: ArgumentSchema,
        shown: String,
    },
}

impl StreamedInput {
    /// What it holds, as [`crate::engine::weigh`] counts it.
    pub fn weight(&self) -> usize {
        match self {
            StreamedInput::Value(value) => weigh::value(value),
            StreamedInput::NotObject => 0,
            StreamedInput::Judged { shown, .. } => weigh::ENTRY + shown.len(),
        }
    }

    /// The report's arguments: the value, or for an input judged as it streamed the start of
    /// its text and a marker saying the rest was not held.
    fn into_arguments(self) -> Option<Value> {
        match self {
            StreamedInput::Value(value) => Some(value),
            StreamedInput::NotObject => None,
            StreamedInput::Judged { shown, .. } => Some(Value::String(format!(
                "{shown} [input past its held bound: judged as it streamed, not kept]"
            ))),
        }
    }
}

/// A message, read from a buffered body or reassembled from a stream.
#[derive(Debug, Clone, Default)]
pub struct Message {
    pub tool_uses: Vec<ToolUse>,
    pub text: Option<String>,
    pub stop_reason: Option<Value>,
}

impl Message {
    /// The report's outcome, the message moved into it.
    pub fn into_outcome(self) -> ChoiceOutcome {
        let stop = self
            .stop_reason
            .as_ref()
            .and_then(Value::as_str)
            .map(str::to_owned);
        ChoiceOutcome {
            index: 0,
            content: self.text,
            tool_calls: self
                .tool_uses
                .into_iter()
                .map(|call| ToolCallOutcome {
                    index: call.index,
                    id: call.id.as_ref().and_then(Value::as_str).map(str::to_owned),
                    name: call.name,
                    arguments: call.input.into_arguments(),
                })
                .collect(),
            finish_reason: stop.clone(),
            finish_reasons: stop.into_iter().collect(),
        }
    }
}

/// Reads a buffered body's `output.message`: its client `toolUse` blocks (a `type:
/// server_tool_use` block is the server's) and its text.
pub fn read_buffered(document: &Value) -> Message {
    let content = document
        .pointer("/output/message/content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut message = Message {
        stop_reason: document.get("stopReason").cloned(),
        ..Message::default()
    };
    for (position, block) in content.iter().enumerate() {
        if let Some(text) = block.get("text").and_then(Value::as_str) {
            message.text.get_or_insert_with(String::new).push_str(text);
        }
        let Some(tool_use) = block.get("toolUse") else {
            continue;
        };
        if tool_use.get("type").and_then(Value::as_str) == Some("server_tool_use") {
            continue;
        }
        message.tool_uses.push(ToolUse {
            index: u32::try_from(position).unwrap_or(u32::MAX),
            id: tool_use.get("toolUseId").cloned(),
            name: tool_use
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_owned),
            input: StreamedInput::Value(tool_use.get("input").cloned().unwrap_or(Value::Null)),
            at: format!("/output/message/content/{position}/toolUse"),
        });
    }
    message
}

/// Whether a `toolUseId` matches `[a-zA-Z0-9_.:-]{1,64}`.
pub fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

/// Judges a message against the request.
pub fn judge(
    message: &Message,
    request: &BedrockRequest,
    schemas: Option<&CompiledTools>,
    sink: &mut ViolationSink,
) {
    let mut judge = Judge::new(sink, Stage::Complete);
    judge_stop(message, &mut judge);
    let mut ids = BTreeSet::new();
    for call in &message.tool_uses {
        let mut judge = judge.under(&call.at).tool_call(Some(call.index));
        judge_id(call, &mut ids, &mut judge);
        judge_call(call, request, schemas, &mut judge);
    }
    judge_choice(&message.tool_uses, request, &mut judge);
}

/// The calls against `toolChoice` any or tool (`judge`: at the message).
fn judge_choice(calls: &[ToolUse], request: &BedrockRequest, judge: &mut Judge<'_>) {
    match &request.choice {
        Choice::Any | Choice::Tool(_) if calls.is_empty() => {
            let detail = "toolChoice requires a tool call and the message has no toolUse block";
            let rule = RuleId::BedrockResponseChoiceAnyNoCall;
            judge.flag(rule, "/output/message/content", detail);
        }
        Choice::Tool(forced) => {
            for call in calls
                .iter()
                .filter(|call| call.name.as_deref() != Some(forced))
            {
                let detail = format!(
                    "toolChoice names {forced:?} and the model called {:?}",
                    call.name.as_deref().unwrap_or_default()
                );
                let rule = RuleId::BedrockResponseChoiceToolWrongName;
                let mut judge = judge.under(&call.at).tool_call(Some(call.index));
                judge.flag(rule, "/name", detail);
            }
        }
        _ => {}
    }
}

/// `stopReason` known, and agreeing with the calls (`judge`: at the message).
fn judge_stop(message: &Message, judge: &mut Judge<'_>) {
    let Some(stop) = &message.stop_reason else {
        return;
    };
    let Some(reason) = stop.as_str().filter(|r| STOP_REASONS.contains(r)) else {
        let detail = format!("stopReason {} is not in the StopReason enum", preview(stop));
        let rule = RuleId::BedrockResponseStopReasonUnknown;
        return judge.flag(rule, "/stopReason", detail);
    };
    let calls = !message.tool_uses.is_empty();
    let (rule, detail) = match reason {
        "tool_use" if !calls => (
            RuleId::BedrockResponseStopToolUseWithoutCall,
            "stopReason tool_use and no client toolUse block".to_owned(),
        ),
        "malformed_tool_use" | "malformed_model_output" => (
            RuleId::BedrockResponseMalformedStop,
            format!("stopReason {reason}: the model's tool call failed; do not run it"),
        ),
        "max_tokens" if calls => (
            RuleId::BedrockResponseMalformedStop,
            "stopReason max_tokens with a toolUse block: its input may be cut".to_owned(),
        ),
        "tool_use" | "max_tokens" => return,
        other if calls => (
            RuleId::BedrockResponseCallWithoutStopToolUse,
            format!("toolUse block(s) and stopReason {other}: SDK agents will not run them"),
        ),
        _ => return,
    };
    judge.flag(rule, "/stopReason", detail);
}

/// `tool_use_id_invalid` and `tool_use_id_duplicate` (`judge`: at the block).
fn judge_id(call: &ToolUse, ids: &mut BTreeSet<String>, judge: &mut Judge<'_>) {
    match call.id.as_ref().and_then(Value::as_str) {
        Some(id) if valid_id(id) => {
            if !ids.insert(id.to_owned()) {
                let detail = format!("toolUseId {id:?} is used by an earlier toolUse block");
                let rule = RuleId::BedrockResponseToolUseIdDuplicate;
                judge.flag(rule, "/toolUseId", detail);
            }
        }
        _ => {
            let shown = call
                .id
                .as_ref()
                .map(preview)
                .unwrap_or_else(|| "nothing".into());
            let detail = format!("a toolUseId must match [a-zA-Z0-9_.:-]{{1,64}}, got {shown}");
            let rule = RuleId::BedrockResponseToolUseIdInvalid;
            judge.flag(rule, "/toolUseId", detail);
        }
    }
}

/// A block's name against the declarations and its input against the tool's schema
/// (`judge`: at the block).
fn judge_call(
    call: &ToolUse,
    request: &BedrockRequest,
    schemas: Option<&CompiledTools>,
    judge: &mut Judge<'_>,
) {
    let name = call.name.as_deref().unwrap_or_default();
    if request.facts.parsed && !request.declared.contains_key(name) {
        let detail = format!("tool {name:?} is not declared in toolConfig.tools");
        return judge.flag(RuleId::BedrockResponseToolUseUndeclared, "/name", detail);
    }
    let schema = schemas.and_then(|s| s.get(name)).map(|t| &t.schema);
    let strict = request.declared.get(name).copied().unwrap_or(false);
    let input = match &call.input {
        StreamedInput::NotObject => return,
        StreamedInput::Judged { schema, shown } => {
            let verdict = ArgumentVerdict::Object {
                value: None,
                schema: schema.clone(),
            };
            let held = HeldText {
                text: shown,
                whole: false,
            };
            let rules = ArgumentRules {
                lenient: !strict,
                ..RULES
            };
            let at = judge.site("/input");
            report_verdict(verdict, held, true, &rules, &|| at.clone(), judge.sink());
            return;
        }
        StreamedInput::Value(input @ Value::Object(_)) => input,
        StreamedInput::Value(other) => {
            let detail = format!("toolUse.input must be an object, got {}", preview(other));
            let rule = RuleId::BedrockResponseToolUseInputNotObject;
            return judge.flag(rule, "/input", detail);
        }
    };
    let Some(schema) = schema else {
        return;
    };
    let failures = match schema.check(input, MAX_SCHEMA_ERRORS) {
        SchemaCheck::Unchecked => return,
        SchemaCheck::OverBudget => return judge.sink().schema_budget_hit(),
        SchemaCheck::Checked(failures) => failures,
    };
    report_failures(&failures, strict, judge);
}

/// `input_schema_violation`, a warning unless the tool is strict (`judge`: at the block).
fn report_failures(failures: &[SchemaFailure], strict: bool, judge: &mut Judge<'_>) {
    for failure in failures.iter().take(MAX_SCHEMA_ERRORS) {
        let mut at = judge.site(format_args!("/input{}", failure.instance_path));
        at.schema_path = Some(failure.schema_path.clone());
        let rule = RuleId::BedrockResponseInputSchemaViolation;
        judge.flag_site(strict, rule, at, failure.message.clone());
    }
}
