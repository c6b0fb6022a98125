//! Judges a Responses `output[]` list, buffered or reassembled from a stream
//! (`responses.output.*` and `responses.tool_choice.*`).
//!
//! Input: the output items, the response `status` and whether `incomplete_details.reason` is
//! set, the request's declarations and a base path. Output: complete-stage violations and the
//! report's [`ChoiceOutcome`]: one pseudo-choice holding the text, the function and custom tool
//! calls (indexed by their position in `output`, `id` = `call_id`) and the status as its finish
//! reason. Hosted tool items (web_search_call, mcp_call, reasoning, ...) pass untouched.

use std::collections::HashSet;

use serde_json::Value;

use super::arguments::Judged;
use super::request::{Kind, ResponsesRequest};
use super::tool_choice;
use crate::engine::custom_input::{InputProblem, judge_input};
use crate::engine::dialect::argument_verdict::{ArgumentRules, HeldText, report_verdict};
use crate::engine::dialect::common::{has_tool_markup, preview};
use crate::engine::report::{ChoiceOutcome, ToolCallOutcome};
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, SchemaCheck, ToolSchema};
use crate::engine::violation::{Site, Stage, ViolationSink};

/// At most this many schema errors are reported per call.
const MAX_SCHEMA_ERRORS: usize = 8;

/// What the output rules compare against.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    pub request: &'a ResponsesRequest,
    pub schemas: Option<&'a CompiledTools>,
    /// The response's `status` (`None`: unknown, e.g. a stream that ended in `error`).
    pub status: Option<&'a str>,
    pub has_incomplete_reason: bool,
    /// Buffered bodies look for tool markup in the text; streams do it per delta instead.
    pub markup_in_text: bool,
    /// By position, what to use for a streamed function call's arguments instead of parsing
    /// the text the item carries ([`Judged`]; empty for a buffered body).
    pub judged: &'a [Option<Judged>],
}

/// Judges the output items; `base` is the pointer to the `output` array.
pub fn check_output(
    items: &[Value],
    base: &str,
    cx: Context<'_>,
    sink: &mut ViolationSink,
) -> ChoiceOutcome {
    let mut outcome = ChoiceOutcome {
        finish_reason: cx.status.map(str::to_owned),
        finish_reasons: cx.status.map(str::to_owned).into_iter().collect(),
        ..ChoiceOutcome::default()
    };
    let mut call_ids = HashSet::new();
    let mut calls: Vec<(usize, String)> = Vec::new();
    for (position, item) in items.iter().enumerate() {
        let path = format!("{base}/{position}");
        let at = |suffix: &str| {
            Site::at(format!("{path}{suffix}")).tool_call(u32::try_from(position).ok())
        };
        let kind = match item.get("type").and_then(Value::as_str) {
            Some("function_call") => Kind::Function,
            Some("custom_tool_call") => Kind::Custom,
            Some("message") => {
                collect_text(item, &mut outcome);
                continue;
            }
            _ => continue,
        };
        let call_id = item
            .get("call_id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        match call_id {
            None => sink.push(
                RuleId::ResponsesOutputCallIdMissing,
                Stage::Complete,
                at("/call_id"),
                "a tool-call item without a non-empty call_id",
            ),
            Some(id) if !call_ids.insert(id.to_owned()) => {
                sink.push(
                    RuleId::ResponsesOutputCallIdDuplicate,
                    Stage::Complete,
                    at("/call_id"),
                    format!("call_id {id:?} is used twice"),
                );
            }
            Some(_) => {}
        }
        if item.get("id").and_then(Value::as_str).is_none() {
            sink.push(
                RuleId::ResponsesOutputItemIdMissing,
                Stage::Complete,
                at("/id"),
                "a tool-call item without an item id",
            );
        }
        if cx.status == Some("completed")
            && let Some(status) = item
                .get("status")
                .and_then(Value::as_str)
                .filter(|s| *s != "completed")
        {
            let detail = format!("the response is completed but this call is {status:?}");
            sink.push(
                RuleId::ResponsesOutputStatusInconsistent,
                Stage::Complete,
                at("/status"),
                detail,
            );
        }
        let name = item
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        check_name(kind, &name, cx, &at("/name"), sink);
        let payload = match kind {
            Kind::Function => item.get("arguments"),
            Kind::Custom => item.get("input"),
        };
        // A call cut short by an incomplete response is legitimately unfinished.
        let cut_short = cx.status == Some("incomplete")
            && item.get("status").and_then(Value::as_str) == Some("incomplete");
        match kind {
            _ if cut_short => {}
            Kind::Function => {
                let judged = cx.judged.get(position).and_then(Option::as_ref);
                check_arguments(&name, payload, judged, cx, &at("/arguments"), sink);
            }
            Kind::Custom => check_input(&name, payload, cx, &at("/input"), sink),
        }
        outcome.tool_calls.push(ToolCallOutcome {
            index: u32::try_from(position).unwrap_or(u32::MAX),
            id: call_id.map(str::to_owned),
            name: item.get("name").and_then(Value::as_str).map(str::to_owned),
            arguments: payload.cloned(),
        });
        calls.push((position, name));
    }
    if cx.status == Some("incomplete") && !cx.has_incomplete_reason {
        sink.push(
            RuleId::ResponsesOutputStatusInconsistent,
            Stage::Complete,
            Site::at("/incomplete_details"),
            "status incomplete without incomplete_details.reason",
        );
    }
    if cx.markup_in_text
        && calls.is_empty()
        && cx.request.declares
        && outcome.content.as_deref().is_some_and(has_tool_markup)
    {
        let detail =
            "tools were offered, no tool call came back, and the text holds tool-call markup";
        sink.push(
            RuleId::ResponsesOutputToolMarkupInText,
            Stage::Complete,
            Site::at(base),
            detail,
        );
    }
    tool_choice::check_output(&calls, base, cx, sink);
    outcome
}

fn collect_text(item: &Value, outcome: &mut ChoiceOutcome) {
    for part in item
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(text) = part.get("text").and_then(Value::as_str) {
            outcome
                .content
                .get_or_insert_with(String::new)
                .push_str(text);
        }
    }
}

fn check_name(kind: Kind, name: &str, cx: Context<'_>, site: &Site, sink: &mut ViolationSink) {
    if !cx.request.declares {
        return;
    }
    match cx.request.tools.get(name) {
        Some(tool) if tool.kind == kind => {}
        Some(tool) => {
            let detail = format!(
                "{name:?} is declared as a {:?} tool but came back as {}",
                tool.kind,
                kind.item_type()
            );
            sink.push(
                RuleId::ResponsesOutputCustomCalledAsFunction,
                Stage::Complete,
                site.clone(),
                detail,
            );
        }
        None => {
            let detail = format!(
                "{} names {name:?}, which the request did not declare",
                kind.item_type()
            );
            sink.push(
                RuleId::ResponsesOutputNameUnknown,
                Stage::Complete,
                site.clone(),
                detail,
            );
        }
    }
}

fn check_arguments(
    name: &str,
    payload: Option<&Value>,
    judged: Option<&Judged>,
    cx: Context<'_>,
    site: &Site,
    sink: &mut ViolationSink,
) {
    let Some(Value::String(text)) = payload else {
        let shown = payload.map(preview).unwrap_or_else(|| "nothing".into());
        sink.push(
            RuleId::ResponsesOutputArgumentsNotString,
            Stage::Complete,
            site.clone(),
            format!("arguments must be a JSON string, got {shown}"),
        );
        return;
    };
    let strict = cx.request.tools.get(name).is_none_or(|t| t.strict);
    match judged {
        None => {}
        Some(Judged::BreakReported) => return,
        Some(Judged::Verdict {
            verdict,
            shown,
            break_reported,
        }) => {
            let rules = ArgumentRules {
                not_json: RuleId::ResponsesOutputArgumentsInvalidJson,
                not_object: RuleId::ResponsesOutputArgumentsInvalidJson,
                schema: RuleId::ResponsesOutputArgumentsSchemaMismatch,
                lenient: !strict,
            };
            let held = HeldText {
                text: shown,
                whole: false,
            };
            let site = || site.clone();
            report_verdict(verdict.clone(), held, *break_reported, &rules, &site, sink);
            return;
        }
    }
    let schema = cx.schemas.and_then(|s| s.get(name)).map(|t| &t.schema);
    if text.is_empty() && matches!(schema, None | Some(ToolSchema::Absent)) {
        return;
    }
    let parsed = match serde_json::from_str::<Value>(text) {
        Ok(parsed) if parsed.is_object() => parsed,
        Ok(other) => {
            sink.push(
                RuleId::ResponsesOutputArgumentsInvalidJson,
                Stage::Complete,
                site.clone(),
                format!(
                    "arguments must encode a JSON object, got {}",
                    preview(&other)
                ),
            );
            return;
        }
        Err(error) => {
            let detail = format!(
                "arguments do not parse as JSON ({error}): {}",
                preview(&Value::String(text.clone()))
            );
            sink.push(
                RuleId::ResponsesOutputArgumentsInvalidJson,
                Stage::Complete,
                site.clone(),
                detail,
            );
            return;
        }
    };
    let Some(schema) = schema else {
        return;
    };
    // The same budgeted check as Chat's: past the schema budget the call is not checked.
    let failures = match schema.check(&parsed, MAX_SCHEMA_ERRORS) {
        SchemaCheck::Unchecked => return,
        SchemaCheck::OverBudget => return sink.schema_budget_hit(),
        SchemaCheck::Checked(failures) => failures,
    };
    for failure in failures {
        let mut at = site.clone();
        at.path.push_str(&failure.instance_path);
        at.schema_path = Some(failure.schema_path);
        if strict {
            sink.push(
                RuleId::ResponsesOutputArgumentsSchemaMismatch,
                Stage::Complete,
                at,
                failure.message,
            );
        } else {
            sink.push_lenient(
                RuleId::ResponsesOutputArgumentsSchemaMismatch,
                Stage::Complete,
                at,
                failure.message,
            );
        }
    }
}

fn check_input(
    name: &str,
    payload: Option<&Value>,
    cx: Context<'_>,
    site: &Site,
    sink: &mut ViolationSink,
) {
    let Some(Value::String(text)) = payload else {
        let shown = payload.map(preview).unwrap_or_else(|| "nothing".into());
        sink.push(
            RuleId::ResponsesOutputCustomInputNotString,
            Stage::Complete,
            site.clone(),
            format!("custom tool input must be a string, got {shown}"),
        );
        return;
    };
    let Some(tool) = cx
        .request
        .tools
        .get(name)
        .filter(|t| t.kind == Kind::Custom)
    else {
        return;
    };
    let (rule, detail) = match judge_input(tool.grammar.as_ref(), text) {
        None => return,
        Some(InputProblem::GrammarOverBudget) => return sink.schema_budget_hit(),
        Some(InputProblem::GrammarMismatch) => (
            RuleId::ResponsesOutputCustomGrammarMismatch,
            format!(
                "input does not match the declared regex grammar: {}",
                preview(&Value::String(text.clone()))
            ),
        ),
        Some(InputProblem::JsonWrapped) => (
            RuleId::ResponsesOutputCustomInputJsonWrapped,
            "custom tool input is a JSON object wrapping the payload, not raw text".to_owned(),
        ),
    };
    sink.push(rule, Stage::Complete, site.clone(), detail);
}
