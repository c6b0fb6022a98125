//! Judges a whole `chat.completion` document, every choice (not only `choices[0]`).
//!
//! Input: the parsed buffered body, or the buffered-equivalent document the reassembler built
//! from a stream ([`super::Origin`] says which). Output: one [`ChoiceOutcome`] per choice, and
//! violations at [`Stage::Complete`] with JSON pointers into that document.

use serde_json::Value;

use super::allowed::check_allowed;
use super::calls::check_tool_calls;
use super::legacy::{ChoiceFacts, check_legacy};
use super::members::{ChoiceView, Members};
use super::view::{Calls, Slot};
use super::{Declared, FINISH_REASONS, Origin, preview};
use crate::engine::dialect::chat::reassemble::Assembly;
use crate::engine::dialect::chat::request::ToolChoice;
use crate::engine::dialect::common;
use crate::engine::judge::Judge;
use crate::engine::report::{ChoiceOutcome, ToolCallOutcome};
use crate::engine::rules::RuleId;
use crate::engine::violation::{Stage, ViolationSink};

/// A 2xx buffered body's members (see [`Members`]), or `None` after reporting
/// `response.not_json`.
///
/// The body is checked for UTF-8 once, whole: a body that is not UTF-8 is not JSON, and the tree
/// read reports it (the typed read would skip invalid bytes in the members it ignores).
pub fn read_document(body: &[u8], sink: &mut ViolationSink) -> Option<Members> {
    std::str::from_utf8(body)
        .ok()
        .and_then(Members::typed)
        .or_else(|| common::response_json(body, sink).map(Members::of))
}

/// Checks every choice of `document`; returns the outcomes in index order. `streamed`: the
/// stream's reassembly `document` was built from, whose calls' arguments were followed as they
/// streamed (their verdicts are taken from it).
pub fn check_document(
    document: &Members,
    declared: Declared<'_>,
    origin: Origin,
    mut streamed: Option<&mut Assembly>,
    sink: &mut ViolationSink,
) -> Vec<ChoiceOutcome> {
    let Some(choices) = document.choices() else {
        let path = if document.object { "/choices" } else { "" };
        let detail = "the response has no `choices` array";
        Judge::new(sink, Stage::Complete).flag(RuleId::ResponseShapeInvalid, path, detail);
        return Vec::new();
    };
    let mut outcomes: Vec<ChoiceOutcome> = choices
        .enumerate()
        .filter_map(|(position, choice)| {
            let streamed = streamed.as_deref_mut();
            check_choice(&choice, position, declared, origin, streamed, sink)
        })
        .collect();
    outcomes.sort_by_key(|outcome| outcome.index);
    outcomes
}

/// Judges one choice: its message (content, tool calls, legacy call), its finish reason, and
/// what came back against `tool_choice`, `parallel_tool_calls` and `allowed_tools`.
fn check_choice(
    choice: &ChoiceView<'_>,
    position: usize,
    declared: Declared<'_>,
    origin: Origin,
    mut streamed: Option<&mut Assembly>,
    sink: &mut ViolationSink,
) -> Option<ChoiceOutcome> {
    let index = choice_index(choice, position);
    let mut judge = Judge::new(sink, Stage::Complete)
        .choice(Some(index))
        .at_position("/choices/", position);
    let Some(message) = &choice.message else {
        let detail = "the choice has no `message` object";
        judge.flag(RuleId::ResponseShapeInvalid, "/message", detail);
        return None;
    };
    let content = message_content(message.content, &mut judge);
    let calls = message.tool_calls;
    let streamed_calls = streamed.as_deref_mut();
    let mut tool_calls =
        message_tool_calls(calls, index, declared, origin, streamed_calls, &mut judge);
    let finish_reason = read_finish_reason(choice.finish_reason, origin, &mut judge);
    let finish = finish_reason.as_deref();
    check_finish_with_calls(&tool_calls, finish, declared, &mut judge);
    check_tool_choice(declared, &tool_calls, &mut judge);
    check_allowed(declared, &tool_calls, finish, &mut judge);
    let facts = ChoiceFacts {
        index,
        finish_reason: finish,
        has_tool_calls: !tool_calls.is_empty(),
    };
    let legacy = check_legacy(
        message.function_call,
        &facts,
        declared,
        streamed,
        &mut judge,
    );
    tool_calls.extend(legacy);
    let finish_reasons = finish_reasons(choice, origin, finish);
    Some(ChoiceOutcome {
        index,
        content,
        tool_calls,
        finish_reason,
        finish_reasons,
    })
}

/// The choice's `index`: required by the spec, but its absence breaks no client, so its
/// position stands in quietly.
fn choice_index(choice: &ChoiceView<'_>, position: usize) -> u32 {
    choice
        .index
        .and_then(Value::as_u64)
        .and_then(|i| u32::try_from(i).ok())
        .unwrap_or(u32::try_from(position).unwrap_or(u32::MAX))
}

/// `message.content`, when a string; another non-null value is reported.
fn message_content(content: Option<&Value>, judge: &mut Judge<'_>) -> Option<String> {
    match content {
        None => None,
        Some(Value::String(text)) => Some(text.clone()),
        Some(other) => {
            let detail = format!("content must be a string or null, got {}", preview(other));
            judge.flag(RuleId::MessageContentType, "/message/content", detail);
            None
        }
    }
}

/// `message.tool_calls` of choice `choice`: absent, or a non-empty array whose calls are
/// judged.
fn message_tool_calls(
    calls: Slot<'_, Calls<'_>>,
    choice: u32,
    declared: Declared<'_>,
    origin: Origin,
    streamed: Option<&mut Assembly>,
    judge: &mut Judge<'_>,
) -> Vec<ToolCallOutcome> {
    const AT: &str = "/message/tool_calls";
    let shown = match calls {
        Slot::Absent => return Vec::new(),
        Slot::Present(items) if !items.is_empty() => {
            let judge = &mut judge.under_text(AT);
            return check_tool_calls(items, choice, declared, origin, streamed, judge);
        }
        Slot::Present(_) => "[]".to_owned(),
        Slot::Other(other) => preview(other),
    };
    let detail = format!("tool_calls must be a non-empty array, got {shown}");
    judge.flag(RuleId::ToolCallsEmpty, AT, detail);
    Vec::new()
}

/// The finish reason when it is one of the spec's; else the string sent, if any (a buffered
/// body's is reported; a stream's was judged per fragment).
fn read_finish_reason(
    finish: Option<&Value>,
    origin: Origin,
    judge: &mut Judge<'_>,
) -> Option<String> {
    match finish {
        Some(Value::String(reason)) if FINISH_REASONS.contains(&reason.as_str()) => {
            Some(reason.clone())
        }
        other => {
            if origin == Origin::Buffered {
                let shown = other.map_or_else(|| "missing".to_owned(), preview);
                let detail =
                    format!("finish_reason must be one of {FINISH_REASONS:?}, got {shown}");
                judge.flag(RuleId::FinishReasonInvalid, "/finish_reason", detail);
            }
            other.and_then(Value::as_str).map(str::to_owned)
        }
    }
}

/// Tool calls that came back with a finish reason other than `tool_calls`: a client that
/// branches on it takes the prose path.
fn check_finish_with_calls(
    calls: &[ToolCallOutcome],
    finish: Option<&str>,
    declared: Declared<'_>,
    judge: &mut Judge<'_>,
) {
    let Some(reason) = finish.filter(|reason| *reason != "tool_calls") else {
        return;
    };
    if calls.is_empty() {
        return;
    }
    // OpenAI itself answers "stop" when tool_choice names a function (vLLM followed it, PR
    // #25054): its own rule, a warning by default, so the common case is not an alarm.
    let (rule, detail) = if reason == "stop" && matches!(declared.choice, ToolChoice::Named(_)) {
        (
            RuleId::FinishReasonStopOnNamedChoice,
            "tool calls came back with finish_reason \"stop\" for a named tool_choice (as OpenAI answers): a client that branches on finish_reason takes the prose path".to_owned(),
        )
    } else {
        (
            RuleId::FinishReasonNotToolCalls,
            format!(
                "tool calls came back with finish_reason {reason:?}: a client takes the prose path"
            ),
        )
    };
    judge.flag(rule, "/finish_reason", detail);
}

/// Every finish reason the choice received: a buffered body's one, a stream's in order.
fn finish_reasons(choice: &ChoiceView<'_>, origin: Origin, finish: Option<&str>) -> Vec<String> {
    match origin {
        Origin::Buffered => finish.iter().map(|reason| (*reason).to_owned()).collect(),
        Origin::Stream => choice
            .finish_reasons
            .and_then(Value::as_array)
            .map(|all| {
                all.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// `tool_choice` and `parallel_tool_calls` against what came back in one choice (`judge`: at
/// the choice).
fn check_tool_choice(declared: Declared<'_>, calls: &[ToolCallOutcome], judge: &mut Judge<'_>) {
    if declared.tools.is_none() {
        return;
    }
    const CALLS: &str = "/message/tool_calls";
    match declared.choice {
        ToolChoice::Required | ToolChoice::Named(_) if calls.is_empty() => {
            let detail = "tool_choice forces a tool call and none came back";
            judge.flag(RuleId::ToolChoiceIgnored, "/message", detail);
        }
        ToolChoice::Named(wanted) => check_named_choice(wanted, calls, judge),
        ToolChoice::None if !calls.is_empty() => {
            let detail = format!(
                "tool_choice is \"none\" and {} tool call(s) came back",
                calls.len()
            );
            judge.flag(RuleId::ToolChoiceNoneViolated, CALLS, detail);
        }
        ToolChoice::Unspecified
        | ToolChoice::None
        | ToolChoice::Auto
        | ToolChoice::Required
        | ToolChoice::Unchecked => {}
    }
    if declared.parallel_tool_calls == Some(false) && calls.len() > 1 {
        let detail = format!(
            "parallel_tool_calls is false and {} tool calls came back",
            calls.len()
        );
        judge.flag(RuleId::ToolCallsParallelDisallowed, CALLS, detail);
    }
}

/// A `tool_choice` naming `wanted`: every call must call it.
fn check_named_choice(wanted: &str, calls: &[ToolCallOutcome], judge: &mut Judge<'_>) {
    for (position, call) in calls.iter().enumerate() {
        let Some(name) = call.name.as_deref().filter(|name| *name != wanted) else {
            continue;
        };
        let detail = format!("tool_choice names {wanted:?} and {name:?} was called");
        let mut judge = judge
            .under_at("/message/tool_calls/", position)
            .tool_call(Some(call.index));
        judge.flag(RuleId::ToolChoiceWrongFunction, "/function/name", detail);
    }
}
