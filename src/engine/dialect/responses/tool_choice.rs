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
use crate::engine::rules::RuleId;
use crate::engine::violation::{Site, Stage, ViolationSink};

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

pub fn check_request(
    choice: &Choice,
    tools: &BTreeMap<String, Tool>,
    declares: bool,
    sink: &mut ViolationSink,
) {
    let demanding = matches!(
        choice,
        Choice::Required | Choice::Named(..) | Choice::Allowed { .. }
    );
    if demanding && !declares {
        let detail = "tool_choice asks for a tool call but the request declares no tools";
        sink.push(
            RuleId::ResponsesRequestToolChoiceWithoutTools,
            Stage::Request,
            Site::at("/tool_choice"),
            detail,
        );
        return;
    }
    match choice {
        Choice::Named(kind, name) if tools.get(name).map(|t| t.kind) != Some(*kind) => {
            let detail = format!(
                "tool_choice names {} {name:?}, which is not declared",
                kind.item_type()
            );
            sink.push(
                RuleId::ResponsesRequestToolChoiceUnknownTool,
                Stage::Request,
                Site::at("/tool_choice/name"),
                detail,
            );
        }
        Choice::Allowed { names, .. } => {
            for (position, name) in names.iter().enumerate() {
                if !tools.contains_key(name) {
                    let detail = format!("allowed_tools lists {name:?}, which is not declared");
                    let site = Site::at(format!("/tool_choice/tools/{position}"));
                    sink.push(
                        RuleId::ResponsesRequestAllowedToolsUnknownTool,
                        Stage::Request,
                        site,
                        detail,
                    );
                }
            }
        }
        _ => {}
    }
}

pub fn check_output(
    calls: &[(usize, String)],
    base: &str,
    cx: Context<'_>,
    sink: &mut ViolationSink,
) {
    if !cx.request.declares {
        return;
    }
    let completed = cx.status == Some("completed");
    let at = |position: usize| {
        Site::at(format!("{base}/{position}")).tool_call(u32::try_from(position).ok())
    };
    match &cx.request.choice {
        Choice::None => {
            for (position, name) in calls {
                sink.push(
                    RuleId::ResponsesToolChoiceNoneViolated,
                    Stage::Complete,
                    at(*position),
                    format!("tool_choice none, yet {name:?} was called"),
                );
            }
        }
        Choice::Required | Choice::Allowed { required: true, .. }
            if completed && calls.is_empty() =>
        {
            sink.push(
                RuleId::ResponsesToolChoiceRequiredViolated,
                Stage::Complete,
                Site::at(base),
                "a tool call was required and none came back",
            );
        }
        Choice::Named(_, wanted) => {
            if completed && calls.is_empty() {
                sink.push(
                    RuleId::ResponsesToolChoiceForcedViolated,
                    Stage::Complete,
                    Site::at(base),
                    format!("tool_choice forces {wanted:?}; no call came back"),
                );
            }
            for (position, name) in calls.iter().filter(|(_, name)| name != wanted) {
                sink.push(
                    RuleId::ResponsesToolChoiceForcedViolated,
                    Stage::Complete,
                    at(*position),
                    format!("tool_choice forces {wanted:?}, got {name:?}"),
                );
            }
        }
        _ => {}
    }
    if let Choice::Allowed { names, .. } = &cx.request.choice {
        for (position, name) in calls.iter().filter(|(_, name)| !names.contains(name)) {
            sink.push(
                RuleId::ResponsesToolChoiceAllowedToolsViolated,
                Stage::Complete,
                at(*position),
                format!("{name:?} is not among allowed_tools"),
            );
        }
    }
    if cx.request.facts.parallel_tool_calls == Some(false)
        && let Some((position, _)) = calls.get(1)
    {
        let detail = format!(
            "parallel_tool_calls false, yet {} calls came back",
            calls.len()
        );
        sink.push(
            RuleId::ResponsesToolChoiceParallelViolated,
            Stage::Complete,
            at(*position),
            detail,
        );
    }
}
