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
use crate::engine::judge::Judge;
use crate::engine::report::{ChoiceOutcome, ToolCallOutcome};
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, SchemaCheck, ToolSchema};
use crate::engine::violation::{Stage, ViolationSink};

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
    let mut judge = Judge::new(sink, Stage::Complete);
    let mut call_ids = HashSet::new();
    let mut calls: Vec<(usize, String)> = Vec::new();
    for (position, item) in items.iter().enumerate() {
        let kind = match item.get("type").and_then(Value::as_str) {
            Some("function_call") => Kind::Function,
            Some("custom_tool_call") => Kind::Custom,
            Some("message") => {
                collect_text(item, &mut outcome);
                continue;
            }
            _ => continue,
        };
        let mut call = judge
            .under(format_args!("{base}/{position}"))
            .tool_call(u32::try_from(position).ok());
        let call_id = item
            .get("call_id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        check_ids(item, call_id, &mut call_ids, &mut call);
        check_status(item, cx, &mut call);
        let name = item
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        check_name(kind, &name, cx, &mut call.under("/name"));
        let payload = match kind {
            Kind::Function => item.get("arguments"),
            Kind::Custom => item.get("input"),
        };
        check_payload(kind, (&name, payload), item, position, cx, &mut call);
        outcome.tool_calls.push(ToolCallOutcome {
            index: u32::try_from(position).unwrap_or(u32::MAX),
            id: call_id.map(str::to_owned),
            name: item.get("name").and_then(Value::as_str).map(str::to_owned),
            arguments: payload.cloned(),
        });
        calls.push((position, name));
    }
    check_response(&outcome, &calls, base, cx, &mut judge);
    tool_choice::check_output(&calls, base, cx, &mut judge);
    outcome
}

/// `call_id_missing`, `call_id_duplicate` and `item_id_missing` on one tool-call item.
fn check_ids<'i>(
    item: &Value,
    call_id: Option<&'i str>,
    call_ids: &mut HashSet<&'i str>,
    judge: &mut Judge<'_>,
) {
    match call_id {
        None => {
            let detail = "a tool-call item without a non-empty call_id";
            judge.flag(RuleId::ResponsesOutputCallIdMissing, "/call_id", detail);
        }
        Some(id) if !call_ids.insert(id) => {
            let detail = format!("call_id {id:?} is used twice");
            judge.flag(RuleId::ResponsesOutputCallIdDuplicate, "/call_id", detail);
        }
        Some(_) => {}
    }
    if item.get("id").and_then(Value::as_str).is_none() {
        let detail = "a tool-call item without an item id";
        judge.flag(RuleId::ResponsesOutputItemIdMissing, "/id", detail);
    }
}

/// `status_inconsistent` on a call that is not completed in a completed response.
fn check_status(item: &Value, cx: Context<'_>, judge: &mut Judge<'_>) {
    if cx.status == Some("completed")
        && let Some(status) = item
            .get("status")
            .and_then(Value::as_str)
            .filter(|s| *s != "completed")
    {
        let detail = format!("the response is completed but this call is {status:?}");
        judge.flag(RuleId::ResponsesOutputStatusInconsistent, "/status", detail);
    }
}

/// The rules on a call's `arguments` or custom `input` (`named`: the call's name and that
/// member), unless an incomplete response cut the call short.
fn check_payload(
    kind: Kind,
    named: (&str, Option<&Value>),
    item: &Value,
    position: usize,
    cx: Context<'_>,
    judge: &mut Judge<'_>,
) {
    let (name, payload) = named;
    // A call cut short by an incomplete response is legitimately unfinished.
    let cut_short = cx.status == Some("incomplete")
        && item.get("status").and_then(Value::as_str) == Some("incomplete");
    match kind {
        _ if cut_short => {}
        Kind::Function => {
            let judged = cx.judged.get(position).and_then(Option::as_ref);
            check_arguments(name, payload, judged, cx, &mut judge.under("/arguments"));
        }
        Kind::Custom => check_input(name, payload, cx, &mut judge.under("/input")),
    }
}

/// The rules on the whole response: an incomplete status without a reason, and tool-call
/// markup in the text of an answer without calls.
fn check_response(
    outcome: &ChoiceOutcome,
    calls: &[(usize, String)],
    base: &str,
    cx: Context<'_>,
    judge: &mut Judge<'_>,
) {
    if cx.status == Some("incomplete") && !cx.has_incomplete_reason {
        let detail = "status incomplete without incomplete_details.reason";
        let rule = RuleId::ResponsesOutputStatusInconsistent;
        judge.flag(rule, "/incomplete_details", detail);
    }
    if cx.markup_in_text
        && calls.is_empty()
        && cx.request.declares
        && outcome.content.as_deref().is_some_and(has_tool_markup)
    {
        let detail =
            "tools were offered, no tool call came back, and the text holds tool-call markup";
        judge.flag(RuleId::ResponsesOutputToolMarkupInText, base, detail);
    }
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

/// `name_unknown` and `custom_called_as_function` (`judge`: at the call's `name`).
fn check_name(kind: Kind, name: &str, cx: Context<'_>, judge: &mut Judge<'_>) {
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
            judge.flag(RuleId::ResponsesOutputCustomCalledAsFunction, "", detail);
        }
        None => {
            let detail = format!(
                "{} names {name:?}, which the request did not declare",
                kind.item_type()
            );
            judge.flag(RuleId::ResponsesOutputNameUnknown, "", detail);
        }
    }
}

/// The rules on a function call's `arguments` (`judge`: at them): a string holding a JSON
/// object that the declared schema accepts. `judged`: a streamed call's verdict, used instead
/// of parsing the text.
fn check_arguments(
    name: &str,
    payload: Option<&Value>,
    judged: Option<&Judged>,
    cx: Context<'_>,
    judge: &mut Judge<'_>,
) {
    let Some(Value::String(text)) = payload else {
        let shown = payload.map(preview).unwrap_or_else(|| "nothing".into());
        let detail = format!("arguments must be a JSON string, got {shown}");
        return judge.flag(RuleId::ResponsesOutputArgumentsNotString, "", detail);
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
            let at = judge.site("");
            let site = || at.clone();
            report_verdict(
                verdict.clone(),
                held,
                *break_reported,
                &rules,
                &site,
                judge.sink(),
            );
            return;
        }
    }
    let schema = cx.schemas.and_then(|s| s.get(name)).map(|t| &t.schema);
    if text.is_empty() && matches!(schema, None | Some(ToolSchema::Absent)) {
        return;
    }
    let Some(parsed) = parse_arguments(text, judge) else {
        return;
    };
    if let Some(schema) = schema {
        check_schema(schema, &parsed, strict, judge);
    }
}

/// The arguments text as a JSON object; `arguments_invalid_json` when it is not one.
fn parse_arguments(text: &str, judge: &mut Judge<'_>) -> Option<Value> {
    let rule = RuleId::ResponsesOutputArgumentsInvalidJson;
    match serde_json::from_str::<Value>(text) {
        Ok(parsed) if parsed.is_object() => Some(parsed),
        Ok(other) => {
            let detail = format!(
                "arguments must encode a JSON object, got {}",
                preview(&other)
            );
            judge.flag(rule, "", detail);
            None
        }
        Err(error) => {
            let detail = format!(
                "arguments do not parse as JSON ({error}): {}",
                preview(&Value::String(text.to_owned()))
            );
            judge.flag(rule, "", detail);
            None
        }
    }
}

/// `arguments_schema_mismatch`, lenient for a tool declared `strict: false`.
fn check_schema(schema: &ToolSchema, parsed: &Value, strict: bool, judge: &mut Judge<'_>) {
    // The same budgeted check as Chat's: past the schema budget the call is not checked.
    let failures = match schema.check(parsed, MAX_SCHEMA_ERRORS) {
        SchemaCheck::Unchecked => return,
        SchemaCheck::OverBudget => return judge.sink().schema_budget_hit(),
        SchemaCheck::Checked(failures) => failures,
    };
    for failure in failures {
        let mut at = judge.site(&failure.instance_path);
        at.schema_path = Some(failure.schema_path);
        let rule = RuleId::ResponsesOutputArgumentsSchemaMismatch;
        judge.flag_site(strict, rule, at, failure.message);
    }
}

/// The rules on a custom tool call's `input` (`judge`: at it): a string the declared grammar
/// accepts, not a JSON wrapper.
fn check_input(name: &str, payload: Option<&Value>, cx: Context<'_>, judge: &mut Judge<'_>) {
    let Some(Value::String(text)) = payload else {
        let shown = payload.map(preview).unwrap_or_else(|| "nothing".into());
        let detail = format!("custom tool input must be a string, got {shown}");
        return judge.flag(RuleId::ResponsesOutputCustomInputNotString, "", detail);
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
        Some(InputProblem::GrammarOverBudget) => return judge.sink().schema_budget_hit(),
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
    judge.flag(rule, "", detail);
}
