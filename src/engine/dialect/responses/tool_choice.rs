//! `tool_choice` in the Responses API: interpreting it from the request, judging it there
//! (`responses.request.tool_choice_*`, `allowed_tools_unknown_tool`) and against the output
//! (`responses.tool_choice.*`, `parallel_tool_calls`).
//!
//! Input: the request's `tool_choice` value and declared tools; later the tool-call items of
//! the output with their positions. Output: a [`Choice`] and violations.

use std::collections::BTreeMap;

use serde_json::Value;

use super::output::Context;
use super::request::{Choice, Kind, Tool};
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;

pub fn interpret(choice: Option<&Value>) -> Choice {
    let Some(choice) = choice.filter(|c| !c.is_null()) else {
        return Choice::Unspecified;
    };
    if let Some(mode) = choice.as_str() {
        return match mode {
            "none" => Choice::None,
            "auto" => Choice::Auto,
            "required" => Choice::Required,
            _ => Choice::Unchecked,
        };
    }
    let kind = choice.get("type").and_then(Value::as_str);
    if kind == Some("allowed_tools") {
        let names = choice
            .get("tools")
            .and_then(Value::as_array)
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let required = choice.get("mode").and_then(Value::as_str) == Some("required");
        return Choice::Allowed { required, names };
    }
    match (
        Kind::parse(kind),
        choice.get("name").and_then(Value::as_str),
    ) {
        (Some(kind), Some(name)) => Choice::Named(kind, name.to_owned()),
        _ => Choice::Unchecked,
    }
}

/// The request's own `tool_choice` rules (`judge`: at the request's root).
pub fn check_request(
    choice: &Choice,
    tools: &BTreeMap<String, Tool>,
    declares: bool,
    judge: &mut Judge<'_>,
) {
    let demanding = matches!(
        choice,
        Choice::Required | Choice::Named(..) | Choice::Allowed { .. }
    );
    if demanding && !declares {
        let detail = "tool_choice asks for a tool call but the request declares no tools";
        let rule = RuleId::ResponsesRequestToolChoiceWithoutTools;
        return judge.flag(rule, "/tool_choice", detail);
    }
    match choice {
        Choice::Named(kind, name) if tools.get(name).map(|t| t.kind) != Some(*kind) => {
            let detail = format!(
                "tool_choice names {} {name:?}, which is not declared",
                kind.item_type()
            );
            let rule = RuleId::ResponsesRequestToolChoiceUnknownTool;
            judge.flag(rule, "/tool_choice/name", detail);
        }
        Choice::Allowed { names, .. } => {
            for (position, name) in names.iter().enumerate() {
                if !tools.contains_key(name) {
                    let detail = format!("allowed_tools lists {name:?}, which is not declared");
                    let rule = RuleId::ResponsesRequestAllowedToolsUnknownTool;
                    judge.flag(rule, format_args!("/tool_choice/tools/{position}"), detail);
                }
            }
        }
        _ => {}
    }
}

/// The output's calls against `tool_choice` and `parallel_tool_calls` (`calls`: position and
/// name of each; `base`: the pointer to the `output` array; `judge`: at the response's root).
pub fn check_output(calls: &[(usize, String)], base: &str, cx: Context<'_>, judge: &mut Judge<'_>) {
    if !cx.request.declares {
        return;
    }
    check_demanded(calls, base, cx, judge);
    if let Choice::Allowed { names, .. } = &cx.request.choice {
        for (position, name) in calls.iter().filter(|(_, name)| !names.contains(name)) {
            let detail = format!("{name:?} is not among allowed_tools");
            let rule = RuleId::ResponsesToolChoiceAllowedToolsViolated;
            at_call(judge, base, *position).flag(rule, "", detail);
        }
    }
    if cx.request.facts.parallel_tool_calls == Some(false)
        && let Some((position, _)) = calls.get(1)
    {
        let detail = format!(
            "parallel_tool_calls false, yet {} calls came back",
            calls.len()
        );
        let rule = RuleId::ResponsesToolChoiceParallelViolated;
        at_call(judge, base, *position).flag(rule, "", detail);
    }
}

/// `none`, `required` and a named tool against the calls that came back.
fn check_demanded(calls: &[(usize, String)], base: &str, cx: Context<'_>, judge: &mut Judge<'_>) {
    let completed = cx.status == Some("completed");
    match &cx.request.choice {
        Choice::None => {
            for (position, name) in calls {
                let detail = format!("tool_choice none, yet {name:?} was called");
                let rule = RuleId::ResponsesToolChoiceNoneViolated;
                at_call(judge, base, *position).flag(rule, "", detail);
            }
        }
        Choice::Required | Choice::Allowed { required: true, .. }
            if completed && calls.is_empty() =>
        {
            let detail = "a tool call was required and none came back";
            judge.flag(RuleId::ResponsesToolChoiceRequiredViolated, base, detail);
        }
        Choice::Named(_, wanted) => {
            let rule = RuleId::ResponsesToolChoiceForcedViolated;
            if completed && calls.is_empty() {
                let detail = format!("tool_choice forces {wanted:?}; no call came back");
                judge.flag(rule, base, detail);
            }
            for (position, name) in calls.iter().filter(|(_, name)| name != wanted) {
                let detail = format!("tool_choice forces {wanted:?}, got {name:?}");
                at_call(judge, base, *position).flag(rule, "", detail);
            }
        }
        _ => {}
    }
}

/// The judge of the call at `position` of the output at `base`.
fn at_call<'j>(judge: &'j mut Judge<'_>, base: &str, position: usize) -> Judge<'j> {
    judge
        .under(format_args!("{base}/{position}"))
        .tool_call(u32::try_from(position).ok())
}
