//! Judges one choice's legacy `message.function_call` (a buffered body, or a stream's
//! reassembly): its fields, its arguments against `functions[].parameters`, the finish reason,
//! the request's `function_call`, and whether the answer switched shape from what the request
//! declared (`functions` answered with `tool_calls`, or `tools` with `function_call`).
//!
//! Input: the choice's message and finish reason, and the request's [`Surface`](crate::engine::dialect::chat::surface::Surface). Output: the
//! `chat_legacy.response.*` and `chat_legacy.function_call.*` violations at
//! [`Stage::Complete`], and the call as a [`ToolCallOutcome`] (index 0, no id).

use serde_json::Value;

use super::calls::schema_in;
use super::{Declared, preview};
use crate::engine::dialect::argument_verdict::ArgumentRules;
use crate::engine::dialect::chat::arguments::judge_call;
use crate::engine::dialect::chat::reassemble::{Assembly, CallKey};
use crate::engine::dialect::chat::surface::{FunctionCall, Mode};
use crate::engine::report::ToolCallOutcome;
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, ToolSchema};
use crate::engine::violation::{Site, Stage, ViolationSink};

/// The rules a legacy `function_call`'s arguments are judged by (not JSON and not an object
/// are one rule).
pub const LEGACY_ARGUMENTS: ArgumentRules = ArgumentRules {
    not_json: RuleId::ChatLegacyResponseArgumentsInvalidJson,
    not_object: RuleId::ChatLegacyResponseArgumentsInvalidJson,
    schema: RuleId::ChatLegacyResponseArgumentsSchemaMismatch,
    lenient: false,
};

/// The functions a legacy call's name is looked up in: `functions`, or `tools` for an answer
/// that switched from them.
fn known(declared: Declared<'_>) -> Option<&CompiledTools> {
    match declared.surface.mode {
        Mode::Functions | Mode::Both => declared.surface.functions.as_deref(),
        Mode::Tools => declared.tools,
        Mode::Neither => None,
    }
}

/// The schema a legacy call named `name` is judged against.
pub fn legacy_schema<'d>(declared: Declared<'d>, name: &str) -> Option<&'d ToolSchema> {
    schema_in(known(declared), name)
}

/// What the choice carried besides the legacy call.
pub struct ChoiceFacts<'a> {
    pub base: &'a str,
    pub index: u32,
    pub finish_reason: Option<&'a str>,
    /// Whether the message carried a non-empty `tool_calls`.
    pub has_tool_calls: bool,
}

pub fn check_legacy(
    function_call: Option<&Value>,
    facts: &ChoiceFacts<'_>,
    declared: Declared<'_>,
    streamed: Option<&mut Assembly>,
    sink: &mut ViolationSink,
) -> Option<ToolCallOutcome> {
    let base = facts.base;
    let site = |suffix: &str| Site::at(format!("{base}{suffix}")).choice(Some(facts.index));
    let call = function_call.filter(|c| !c.is_null());
    let finish = facts.finish_reason;
    let surface = declared.surface;
    match surface.mode {
        Mode::Functions
            if call.is_none() && (facts.has_tool_calls || finish == Some("tool_calls")) =>
        {
            let (path, detail) = if facts.has_tool_calls {
                (
                    "/message/tool_calls",
                    "the request declared only `functions` and the answer carries `tool_calls`",
                )
            } else {
                (
                    "/finish_reason",
                    "the request declared only `functions` and the answer ends with finish_reason \"tool_calls\"",
                )
            };
            sink.push(
                RuleId::ChatLegacyResponseSwitchedToToolCalls,
                Stage::Complete,
                site(path),
                detail,
            );
        }
        Mode::Tools if call.is_some() || finish == Some("function_call") => {
            let (path, detail) = if call.is_some() {
                (
                    "/message/function_call",
                    "the request declared `tools` and the answer carries a legacy `function_call`: tool_calls clients lose the call",
                )
            } else {
                (
                    "/finish_reason",
                    "the request declared `tools` and the answer ends with the legacy finish_reason \"function_call\"",
                )
            };
            sink.push(
                RuleId::ChatLegacyResponseSwitchedToFunctionCall,
                Stage::Complete,
                site(path),
                detail,
            );
        }
        Mode::Functions | Mode::Tools | Mode::Both | Mode::Neither => {}
    }
    let outcome = call.map(|call| check_call(call, facts, declared, streamed, sink));
    let name = outcome.as_ref().and_then(|o| o.name.as_deref());
    // Under `tools` the switch rule already says what is wrong with the finish reason.
    if surface.mode != Mode::Tools {
        let forced = matches!(surface.function_call, FunctionCall::Named(_));
        let problem = match (call.is_some(), finish) {
            // A stream's missing finish reason is `chat_legacy.stream.finish_reason_missing`;
            // a buffered one's is `finish_reason.invalid`.
            (_, None) => None,
            (true, Some("function_call" | "length")) => None,
            (true, Some("stop")) if forced => None,
            (true, Some(other)) => Some(format!(
                "a function_call came back with finish_reason {other:?}: clients that branch on it take another path"
            )),
            (false, Some("function_call")) => Some(
                "finish_reason \"function_call\" and no function_call: clients look for a call that is not there"
                    .to_owned(),
            ),
            (false, Some(_)) => None,
        };
        if let Some(detail) = problem {
            sink.push(
                RuleId::ChatLegacyResponseFinishReasonMismatch,
                Stage::Complete,
                site("/finish_reason"),
                detail,
            );
        }
    }
    if matches!(surface.mode, Mode::Functions | Mode::Both) {
        match (&surface.function_call, name) {
            (FunctionCall::None, Some(name)) => {
                let detail = format!("function_call is \"none\" and {name:?} was called");
                sink.push(
                    RuleId::ChatLegacyFunctionCallNoneViolated,
                    Stage::Complete,
                    site("/message/function_call"),
                    detail,
                );
            }
            (FunctionCall::Named(wanted), called) if called != Some(wanted.as_str()) => {
                let detail = match (called, call.is_some()) {
                    (Some(name), _) => {
                        format!("function_call names {wanted:?} and {name:?} was called")
                    }
                    (None, true) => {
                        format!("function_call names {wanted:?} and the call came back nameless")
                    }
                    (None, false) => {
                        format!("function_call names {wanted:?} and no call came back")
                    }
                };
                let path = if call.is_some() {
                    "/message/function_call"
                } else {
                    "/message"
                };
                sink.push(
                    RuleId::ChatLegacyFunctionCallForcedViolated,
                    Stage::Complete,
                    site(path),
                    detail,
                );
            }
            _ => {}
        }
    }
    outcome
}

/// Fields, arguments and name of one `function_call`.
fn check_call(
    call: &Value,
    facts: &ChoiceFacts<'_>,
    declared: Declared<'_>,
    streamed: Option<&mut Assembly>,
    sink: &mut ViolationSink,
) -> ToolCallOutcome {
    let base = format!("{}/message/function_call", facts.base);
    let site = |suffix: &str| Site::at(format!("{base}{suffix}")).choice(Some(facts.index));
    let call = match call {
        Value::Array(calls) => {
            let detail = format!(
                "function_call is an array of {} calls: the legacy shape carries one",
                calls.len()
            );
            sink.push(
                RuleId::ChatLegacyResponseMultipleCalls,
                Stage::Complete,
                site(""),
                detail,
            );
            calls.first().unwrap_or(&Value::Null)
        }
        call => call,
    };
    let mut outcome = ToolCallOutcome {
        index: 0,
        id: None,
        name: None,
        arguments: None,
    };
    if !call.is_object() {
        let detail = format!(
            "function_call must be an object with name and arguments, got {}",
            preview(call)
        );
        sink.push(
            RuleId::ChatLegacyResponseFunctionCallFieldsMissing,
            Stage::Complete,
            site(""),
            detail,
        );
        return outcome;
    }
    match call.get("name") {
        Some(Value::String(name)) if !name.is_empty() => outcome.name = Some(name.clone()),
        other => {
            let shown = other.map_or_else(|| "missing".to_owned(), preview);
            let detail = format!("function_call.name must be a non-empty string, got {shown}");
            sink.push(
                RuleId::ChatLegacyResponseFunctionCallFieldsMissing,
                Stage::Complete,
                site("/name"),
                detail,
            );
        }
    }
    // Names and schemas come from `functions`; an answer that switched from `tools` is
    // judged against those.
    let declared_tool = match (known(declared), outcome.name.as_deref()) {
        (Some(known), Some(name)) => {
            let found = known.get(name);
            if found.is_none() {
                let detail = format!(
                    "{name:?} is not a declared function (declared: {})",
                    names(known)
                );
                sink.push(
                    RuleId::ChatLegacyResponseNameUnknown,
                    Stage::Complete,
                    site("/name"),
                    detail,
                );
            }
            found
        }
        _ => None,
    };
    outcome.arguments = call.get("arguments").cloned();
    let text = match call.get("arguments") {
        None => {
            let detail =
                "function_call has no arguments (the spec requires the string, \"{}\" for none)";
            sink.push(
                RuleId::ChatLegacyResponseFunctionCallFieldsMissing,
                Stage::Complete,
                site("/arguments"),
                detail,
            );
            return outcome;
        }
        Some(Value::String(text)) => text,
        Some(other) => {
            let detail = format!(
                "function_call.arguments must be a JSON-encoded string, got {}",
                preview(other)
            );
            sink.push(
                RuleId::ChatLegacyResponseArgumentsNotString,
                Stage::Complete,
                site("/arguments"),
                detail,
            );
            return outcome;
        }
    };
    let schema = declared_tool.map(|tool| &tool.schema);
    let site = || site("/arguments");
    let taken = streamed.and_then(|assembly| assembly.take_streamed(facts.index, CallKey::Legacy));
    judge_call(taken, schema, text, &LEGACY_ARGUMENTS, &site, sink);
    outcome
}

/// The declared names for a detail, the first few only.
fn names(tools: &CompiledTools) -> String {
    let shown: Vec<&str> = tools.iter().take(16).map(|t| t.name.as_str()).collect();
    format!("{shown:?}")
}
