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
use crate::engine::dialect::chat::surface::{FunctionCall, Mode, Surface};
use crate::engine::judge::Judge;
use crate::engine::report::ToolCallOutcome;
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, DeclaredTool, ToolSchema};

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
    pub index: u32,
    pub finish_reason: Option<&'a str>,
    /// Whether the message carried a non-empty `tool_calls`.
    pub has_tool_calls: bool,
}

/// Judges the choice's legacy call and how it fits the request (`judge`: at the choice).
pub fn check_legacy(
    function_call: Option<&Value>,
    facts: &ChoiceFacts<'_>,
    declared: Declared<'_>,
    streamed: Option<&mut Assembly>,
    judge: &mut Judge<'_>,
) -> Option<ToolCallOutcome> {
    let call = function_call.filter(|c| !c.is_null());
    let surface = declared.surface;
    check_switched(call.is_some(), facts, surface.mode, judge);
    let outcome = call.map(|call| {
        let judge = &mut judge.under("/message/function_call");
        check_call(call, facts.index, declared, streamed, judge)
    });
    let name = outcome.as_ref().and_then(|o| o.name.as_deref());
    // Under `tools` the switch rule already says what is wrong with the finish reason.
    if surface.mode != Mode::Tools {
        check_finish(call.is_some(), facts.finish_reason, surface, judge);
    }
    if matches!(surface.mode, Mode::Functions | Mode::Both) {
        check_forced(call.is_some(), name, &surface.function_call, judge);
    }
    outcome
}

/// An answer in the other shape than the request declared: `tool_calls` (or finish reason
/// `"tool_calls"`) to `functions` alone, a `function_call` (or its finish reason) to `tools`.
fn check_switched(has_call: bool, facts: &ChoiceFacts<'_>, mode: Mode, judge: &mut Judge<'_>) {
    let finish = facts.finish_reason;
    let to_tool_calls = RuleId::ChatLegacyResponseSwitchedToToolCalls;
    let to_function_call = RuleId::ChatLegacyResponseSwitchedToFunctionCall;
    let (rule, path, detail) = match mode {
        Mode::Functions if !has_call && facts.has_tool_calls => (
            to_tool_calls,
            "/message/tool_calls",
            "the request declared only `functions` and the answer carries `tool_calls`",
        ),
        Mode::Functions if !has_call && finish == Some("tool_calls") => (
            to_tool_calls,
            "/finish_reason",
            "the request declared only `functions` and the answer ends with finish_reason \"tool_calls\"",
        ),
        Mode::Tools if has_call => (
            to_function_call,
            "/message/function_call",
            "the request declared `tools` and the answer carries a legacy `function_call`: tool_calls clients lose the call",
        ),
        Mode::Tools if finish == Some("function_call") => (
            to_function_call,
            "/finish_reason",
            "the request declared `tools` and the answer ends with the legacy finish_reason \"function_call\"",
        ),
        Mode::Functions | Mode::Tools | Mode::Both | Mode::Neither => return,
    };
    judge.flag(rule, path, detail);
}

/// The finish reason against the legacy call: a call ends `function_call` (or `length`, or
/// `stop` when the request forced it), and `function_call` needs a call.
fn check_finish(has_call: bool, finish: Option<&str>, surface: &Surface, judge: &mut Judge<'_>) {
    let forced = matches!(surface.function_call, FunctionCall::Named(_));
    let problem = match (has_call, finish) {
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
        judge.flag(
            RuleId::ChatLegacyResponseFinishReasonMismatch,
            "/finish_reason",
            detail,
        );
    }
}

/// The request's `function_call` against the answer: `"none"` wants no call, `{"name": X}` a
/// call to X.
fn check_forced(
    has_call: bool,
    name: Option<&str>,
    function_call: &FunctionCall,
    judge: &mut Judge<'_>,
) {
    match (function_call, name) {
        (FunctionCall::None, Some(name)) => {
            let detail = format!("function_call is \"none\" and {name:?} was called");
            let rule = RuleId::ChatLegacyFunctionCallNoneViolated;
            judge.flag(rule, "/message/function_call", detail);
        }
        (FunctionCall::Named(wanted), called) if called != Some(wanted.as_str()) => {
            let detail = match (called, has_call) {
                (Some(name), _) => {
                    format!("function_call names {wanted:?} and {name:?} was called")
                }
                (None, true) => {
                    format!("function_call names {wanted:?} and the call came back nameless")
                }
                (None, false) => format!("function_call names {wanted:?} and no call came back"),
            };
            let path = if has_call {
                "/message/function_call"
            } else {
                "/message"
            };
            judge.flag(RuleId::ChatLegacyFunctionCallForcedViolated, path, detail);
        }
        _ => {}
    }
}

/// Fields, arguments and name of one `function_call` of choice `choice` (`judge`: at the call).
fn check_call(
    call: &Value,
    choice: u32,
    declared: Declared<'_>,
    streamed: Option<&mut Assembly>,
    judge: &mut Judge<'_>,
) -> ToolCallOutcome {
    let call = single_call(call, judge);
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
        judge.flag(
            RuleId::ChatLegacyResponseFunctionCallFieldsMissing,
            "",
            detail,
        );
        return outcome;
    }
    outcome.name = call_name(call.get("name"), judge);
    // Names and schemas come from `functions`; an answer that switched from `tools` is
    // judged against those.
    let function = match (known(declared), outcome.name.as_deref()) {
        (Some(known), Some(name)) => declared_function(known, name, judge),
        _ => None,
    };
    outcome.arguments = call.get("arguments").cloned();
    let Some(text) = arguments_text(call.get("arguments"), judge) else {
        return outcome;
    };
    let schema = function.map(|tool| &tool.schema);
    let taken = streamed.and_then(|assembly| assembly.take_streamed(choice, CallKey::Legacy));
    let (sink, site) = judge.sink_and_site("/arguments");
    judge_call(taken, schema, text, &LEGACY_ARGUMENTS, &site, sink);
    outcome
}

/// The call itself: the legacy shape carries one, so an array of calls is reported and its
/// first judged.
fn single_call<'v>(call: &'v Value, judge: &mut Judge<'_>) -> &'v Value {
    let Value::Array(calls) = call else {
        return call;
    };
    let detail = format!(
        "function_call is an array of {} calls: the legacy shape carries one",
        calls.len()
    );
    judge.flag(RuleId::ChatLegacyResponseMultipleCalls, "", detail);
    calls.first().unwrap_or(&Value::Null)
}

/// `function_call.name`, when a non-empty string.
fn call_name(name: Option<&Value>, judge: &mut Judge<'_>) -> Option<String> {
    match name {
        Some(Value::String(name)) if !name.is_empty() => Some(name.clone()),
        other => {
            let shown = other.map_or_else(|| "missing".to_owned(), preview);
            let detail = format!("function_call.name must be a non-empty string, got {shown}");
            let rule = RuleId::ChatLegacyResponseFunctionCallFieldsMissing;
            judge.flag(rule, "/name", detail);
            None
        }
    }
}

/// The declared function named `name`; an unknown name is reported.
fn declared_function<'t>(
    known: &'t CompiledTools,
    name: &str,
    judge: &mut Judge<'_>,
) -> Option<&'t DeclaredTool> {
    let found = known.get(name);
    if found.is_none() {
        let detail = format!(
            "{name:?} is not a declared function (declared: {})",
            names(known)
        );
        judge.flag(RuleId::ChatLegacyResponseNameUnknown, "/name", detail);
    }
    found
}

/// `function_call.arguments`, when a string; a missing or non-string value is reported.
fn arguments_text<'v>(arguments: Option<&'v Value>, judge: &mut Judge<'_>) -> Option<&'v str> {
    match arguments {
        None => {
            let detail =
                "function_call has no arguments (the spec requires the string, \"{}\" for none)";
            let rule = RuleId::ChatLegacyResponseFunctionCallFieldsMissing;
            judge.flag(rule, "/arguments", detail);
            None
        }
        Some(Value::String(text)) => Some(text),
        Some(other) => {
            let detail = format!(
                "function_call.arguments must be a JSON-encoded string, got {}",
                preview(other)
            );
            judge.flag(
                RuleId::ChatLegacyResponseArgumentsNotString,
                "/arguments",
                detail,
            );
            None
        }
    }
}

/// The declared names for a detail, the first few only.
fn names(tools: &CompiledTools) -> String {
    let shown: Vec<&str> = tools.iter().take(16).map(|t| t.name.as_str()).collect();
    format!("{shown:?}")
}
