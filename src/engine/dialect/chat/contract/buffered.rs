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
use super::view::Slot;
use super::{Declared, FINISH_REASONS, Origin, preview};
use crate::engine::dialect::chat::reassemble::Assembly;
use crate::engine::dialect::chat::request::ToolChoice;
use crate::engine::dialect::common;
use crate::engine::report::ChoiceOutcome;
use crate::engine::rules::RuleId;
use crate::engine::violation::{Site, Stage, ViolationSink};

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
        sink.push(
            RuleId::ResponseShapeInvalid,
            Stage::Complete,
            Site::at(path),
            "the response has no `choices` array",
        );
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

fn check_choice(
    choice: &ChoiceView<'_>,
    position: usize,
    declared: Declared<'_>,
    origin: Origin,
    mut streamed: Option<&mut Assembly>,
    sink: &mut ViolationSink,
) -> Option<ChoiceOutcome> {
    let base = format!("/choices/{position}");
    // `index` is required by the spec, but its absence breaks no client: fall back quietly.
    let index = choice
        .index
        .and_then(Value::as_u64)
        .and_then(|i| u32::try_from(i).ok())
        .unwrap_or(u32::try_from(position).unwrap_or(u32::MAX));
    let site = |suffix: &str| Site::at(format!("{base}{suffix}")).choice(Some(index));
    let Some(message) = &choice.message else {
        sink.push(
            RuleId::ResponseShapeInvalid,
            Stage::Complete,
            site("/message"),
            "the choice has no `message` object",
        );
        return None;
    };
    let content = match message.content {
        None => None,
        Some(Value::String(text)) => Some(text.clone()),
        Some(other) => {
            let detail = format!("content must be a string or null, got {}", preview(other));
            sink.push(
                RuleId::MessageContentType,
                Stage::Complete,
                site("/message/content"),
                detail,
            );
            None
        }
    };
    let tool_calls = match message.tool_calls {
        Slot::Absent => Vec::new(),
        Slot::Present(items) if !items.is_empty() => check_tool_calls(
            items,
            &format!("{base}/message/tool_calls"),
            index,
            declared,
            origin,
            streamed.as_deref_mut(),
            sink,
        ),
        Slot::Present(_) | Slot::Other(_) => {
            let shown = match message.tool_calls {
                Slot::Other(other) => preview(other),
                _ => "[]".to_owned(),
            };
            let detail = format!("tool_calls must be a non-empty array, got {shown}");
            sink.push(
                RuleId::ToolCallsEmpty,
                Stage::Complete,
                site("/message/tool_calls"),
                detail,
            );
            Vec::new()
        }
    };
    let finish = choice.finish_reason;
    let finish_reason = match finish {
        Some(Value::String(reason)) if FINISH_REASONS.contains(&reason.as_str()) => {
            Some(reason.clone())
        }
        other => {
            if origin == Origin::Buffered {
                let shown = other.map_or_else(|| "missing".to_owned(), preview);
                let detail =
                    format!("finish_reason must be one of {FINISH_REASONS:?}, got {shown}");
                sink.push(
                    RuleId::FinishReasonInvalid,
                    Stage::Complete,
                    site("/finish_reason"),
                    detail,
                );
            }
            other.and_then(Value::as_str).map(str::to_owned)
        }
    };
    if !tool_calls.is_empty()
        && let Some(reason) = finish_reason
            .as_deref()
            .filter(|reason| *reason != "tool_calls")
    {
        // OpenAI itself answers "stop" when tool_choice names a function (vLLM followed it, PR
        // #25054): its own rule, a warning by default, so the common case is not an alarm.
        let (rule, detail) = if reason == "stop" && matches!(declared.choice, ToolChoice::Named(_))
        {
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
        sink.push(rule, Stage::Complete, site("/finish_reason"), detail);
    }
    check_tool_choice(declared, &tool_calls, &base, index, sink);
    check_allowed(
        declared,
        &tool_calls,
        finish_reason.as_deref(),
        &base,
        index,
        sink,
    );
    let facts = ChoiceFacts {
        base: &base,
        index,
        finish_reason: finish_reason.as_deref(),
        has_tool_calls: !tool_calls.is_empty(),
    };
    let mut tool_calls = tool_calls;
    tool_calls.extend(check_legacy(
        message.function_call,
        &facts,
        declared,
        streamed,
        sink,
    ));
    let finish_reasons = match origin {
        Origin::Buffered => finish_reason.iter().cloned().collect(),
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
    };
    Some(ChoiceOutcome {
        index,
        content,
        tool_calls,
        finish_reason,
        finish_reasons,
    })
}

/// `tool_choice` and `parallel_tool_calls` against what came back in one choice.
fn check_tool_choice(
    declared: Declared<'_>,
    calls: &[crate::engine::report::ToolCallOutcome],
    base: &str,
    index: u32,
    sink: &mut ViolationSink,
) {
    if declared.tools.is_none() {
        return;
    }
    // Pointers are written out only for a violation.
    let calls_path = || format!("{base}/message/tool_calls");
    let site = |path: String| Site::at(path).choice(Some(index));
    match declared.choice {
        ToolChoice::Required | ToolChoice::Named(_) if calls.is_empty() => {
            let detail = "tool_choice forces a tool call and none came back";
            sink.push(
                RuleId::ToolChoiceIgnored,
                Stage::Complete,
                site(format!("{base}/message")),
                detail,
            );
        }
        ToolChoice::Named(wanted) => {
            for (position, call) in calls.iter().enumerate() {
                let Some(name) = call.name.as_deref().filter(|name| name != wanted) else {
                    continue;
                };
                let detail = format!("tool_choice names {wanted:?} and {name:?} was called");
                let path = format!("{base}/message/tool_calls/{position}/function/name");
                sink.push(
                    RuleId::ToolChoiceWrongFunction,
                    Stage::Complete,
                    site(path).tool_call(Some(call.index)),
                    detail,
                );
            }
        }
        ToolChoice::None if !calls.is_empty() => {
            let detail = format!(
                "tool_choice is \"none\" and {} tool call(s) came back",
                calls.len()
            );
            sink.push(
                RuleId::ToolChoiceNoneViolated,
                Stage::Complete,
                site(calls_path()),
                detail,
            );
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
        sink.push(
            RuleId::ToolCallsParallelDisallowed,
            Stage::Complete,
            site(calls_path()),
            detail,
        );
    }
}
