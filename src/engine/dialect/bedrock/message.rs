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
use crate::engine::report::{ChoiceOutcome, ToolCallOutcome};
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, SchemaCheck, SchemaFailure};
use crate::engine::violation::{Site, Stage, ViolationSink};
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
    judge_stop(message, sink);
    let mut ids = BTreeSet::new();
    for call in &message.tool_uses {
        judge_call(call, request, schemas, &mut ids, sink);
    }
    let calls = &message.tool_uses;
    match &request.choice {
        Choice::Any | Choice::Tool(_) if calls.is_empty() => sink.push(
            RuleId::BedrockResponseChoiceAnyNoCall,
            Stage::Complete,
            Site::at("/output/message/content"),
            "toolChoice requires a tool call and the message has no toolUse block",
        ),
        Choice::Tool(forced) => {
            for call in calls
                .iter()
                .filter(|call| call.name.as_deref() != Some(forced))
            {
                sink.push(
                    RuleId::BedrockResponseChoiceToolWrongName,
                    Stage::Complete,
                    Site::at(format!("{}/name", call.at)).tool_call(Some(call.index)),
                    format!(
                        "toolChoice names {forced:?} and the model called {:?}",
                        call.name.as_deref().unwrap_or_default()
                    ),
                );
            }
        }
        _ => {}
    }
}

/// `stopReason` known, and agreeing with the calls.
fn judge_stop(message: &Message, sink: &mut ViolationSink) {
    let Some(stop) = &message.stop_reason else {
        return;
    };
    let site = || Site::at("/stopReason");
    let Some(reason) = stop.as_str().filter(|r| STOP_REASONS.contains(r)) else {
        sink.push(
            RuleId::BedrockResponseStopReasonUnknown,
            Stage::Complete,
            site(),
            format!("stopReason {} is not in the StopReason enum", preview(stop)),
        );
        return;
    };
    let calls = !message.tool_uses.is_empty();
    match reason {
        "tool_use" if !calls => sink.push(
            RuleId::BedrockResponseStopToolUseWithoutCall,
            Stage::Complete,
            site(),
            "stopReason tool_use and no client toolUse block",
        ),
        "malformed_tool_use" | "malformed_model_output" => sink.push(
            RuleId::BedrockResponseMalformedStop,
            Stage::Complete,
            site(),
            format!("stopReason {reason}: the model's tool call failed; do not run it"),
        ),
        "max_tokens" if calls => sink.push(
            RuleId::BedrockResponseMalformedStop,
            Stage::Complete,
            site(),
            "stopReason max_tokens with a toolUse block: its input may be cut",
        ),
        "tool_use" | "max_tokens" => {}
        other if calls => sink.push(
            RuleId::BedrockResponseCallWithoutStopToolUse,
            Stage::Complete,
            site(),
            format!("toolUse block(s) and stopReason {other}: SDK agents will not run them"),
        ),
        _ => {}
    }
}

fn judge_call(
    call: &ToolUse,
    request: &BedrockRequest,
    schemas: Option<&CompiledTools>,
    ids: &mut BTreeSet<String>,
    sink: &mut ViolationSink,
) {
    let site = |member: &str| Site::at(format!("{}{member}", call.at)).tool_call(Some(call.index));
    match call.id.as_ref().and_then(Value::as_str) {
        Some(id) if valid_id(id) => {
            if !ids.insert(id.to_owned()) {
                sink.push(
                    RuleId::BedrockResponseToolUseIdDuplicate,
                    Stage::Complete,
                    site("/toolUseId"),
                    format!("toolUseId {id:?} is used by an earlier toolUse block"),
                );
            }
        }
        _ => sink.push(
            RuleId::BedrockResponseToolUseIdInvalid,
            Stage::Complete,
            site("/toolUseId"),
            format!(
                "a toolUseId must match [a-zA-Z0-9_.:-]{{1,64}}, got {}",
                call.id
                    .as_ref()
                    .map(preview)
                    .unwrap_or_else(|| "nothing".into())
            ),
        ),
    }
    let name = call.name.as_deref().unwrap_or_default();
    if request.facts.parsed && !request.declared.contains_key(name) {
        sink.push(
            RuleId::BedrockResponseToolUseUndeclared,
            Stage::Complete,
            site("/name"),
            format!("tool {name:?} is not declared in toolConfig.tools"),
        );
        return;
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
            report_verdict(verdict, held, true, &rules, &|| site("/input"), sink);
            return;
        }
        StreamedInput::Value(input @ Value::Object(_)) => input,
        StreamedInput::Value(other) => {
            sink.push(
                RuleId::BedrockResponseToolUseInputNotObject,
                Stage::Complete,
                site("/input"),
                format!("toolUse.input must be an object, got {}", preview(other)),
            );
            return;
        }
    };
    let Some(schema) = schema else {
        return;
    };
    let failures = match schema.check(input, MAX_SCHEMA_ERRORS) {
        SchemaCheck::Unchecked => return,
        SchemaCheck::OverBudget => return sink.schema_budget_hit(),
        SchemaCheck::Checked(failures) => failures,
    };
    report_failures(&failures, strict, &site("/input"), sink);
}

fn report_failures(
    failures: &[SchemaFailure],
    strict: bool,
    site: &Site,
    sink: &mut ViolationSink,
) {
    for failure in failures.iter().take(MAX_SCHEMA_ERRORS) {
        let mut at = site.clone();
        at.path.push_str(&failure.instance_path);
        at.schema_path = Some(failure.schema_path.clone());
        let rule = RuleId::BedrockResponseInputSchemaViolation;
        if strict {
            sink.push(rule, Stage::Complete, at, failure.message.clone());
        } else {
            sink.push_lenient(rule, Stage::Complete, at, failure.message.clone());
        }
    }
}
