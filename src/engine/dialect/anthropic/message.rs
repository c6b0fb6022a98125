//! Judges an Anthropic `Message`'s content blocks, buffered or reassembled from a stream
//! (`anthropic.response.*` and `anthropic.tool_choice.*`).
//!
//! Input: the content blocks, the `stop_reason`, the request's declarations and whether the
//! message came from a stream. Output: complete-stage violations and the report's
//! [`ChoiceOutcome`]: one pseudo-choice with the text, the `tool_use` blocks (indexed by their
//! position in `content`, `arguments` = the `input` object) and `stop_reason` as the finish
//! reason. Server tool blocks (`server_tool_use`, `*_tool_result`) and thinking pass untouched.

use std::collections::HashSet;

use serde_json::Value;

use super::request::{AnthropicRequest, Choice};
use crate::engine::dialect::common::has_tool_markup;
use crate::engine::dialect::common::preview;
use crate::engine::judge::Judge;
use crate::engine::report::{ChoiceOutcome, ToolCallOutcome};
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, SchemaCheck};
use crate::engine::violation::{Stage, ViolationSink};

/// At most this many schema errors are reported per call.
const MAX_SCHEMA_ERRORS: usize = 8;

/// `StopReason` in the SDK.
pub const STOP_REASONS: [&str; 7] = [
    "end_turn",
    "max_tokens",
    "stop_sequence",
    "tool_use",
    "pause_turn",
    "refusal",
    "model_context_window_exceeded",
];

/// Stop reasons a message with `tool_use` blocks may legitimately end with.
const CALL_STOP_REASONS: [&str; 4] = [
    "tool_use",
    "max_tokens",
    "pause_turn",
    "model_context_window_exceeded",
];

/// What the message rules compare against.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    pub request: &'a AnthropicRequest,
    pub schemas: Option<&'a CompiledTools>,
    pub stop_reason: Option<&'a str>,
    /// Reassembled from a stream: `stop_reason` disagreements are `anthropic.stream.*`.
    pub streamed: bool,
}

/// Judges the content blocks; `base` is the pointer to the `content` array.
pub fn check_content(
    blocks: &[Value],
    base: &str,
    cx: Context<'_>,
    sink: &mut ViolationSink,
) -> ChoiceOutcome {
    let mut outcome = ChoiceOutcome {
        finish_reason: cx.stop_reason.map(str::to_owned),
        finish_reasons: cx.stop_reason.map(str::to_owned).into_iter().collect(),
        ..ChoiceOutcome::default()
    };
    let mut judge = Judge::new(sink, Stage::Complete);
    let mut ids = HashSet::new();
    let mut calls: Vec<String> = Vec::new();
    for (position, block) in blocks.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                collect_text(block, &mut outcome);
                continue;
            }
            Some("tool_use") => {}
            _ => continue,
        }
        let mut call = judge
            .under(format_args!("{base}/{position}"))
            .tool_call(u32::try_from(position).ok());
        let id = block
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        check_id(id, &mut ids, &mut call);
        let name = block
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let input = block.get("input");
        check_call(name, input, cx, &mut call);
        outcome.tool_calls.push(ToolCallOutcome {
            index: u32::try_from(position).unwrap_or(u32::MAX),
            id: id.map(str::to_owned),
            name: block.get("name").and_then(Value::as_str).map(str::to_owned),
            arguments: input.cloned(),
        });
        calls.push(name.to_owned());
    }
    check_stop_reason(calls.len(), base, cx, &mut judge);
    if calls.is_empty()
        && cx.request.declares
        && outcome.content.as_deref().is_some_and(has_tool_markup)
    {
        let detail =
            "tools were offered, no tool_use block came back, and the text holds tool-call markup";
        judge.flag(RuleId::AnthropicResponseToolMarkupInText, base, detail);
    }
    check_tool_choice(&calls, base, cx, &mut judge);
    outcome
}

/// Adds a text block's text to the outcome's content.
fn collect_text(block: &Value, outcome: &mut ChoiceOutcome) {
    if let Some(text) = block.get("text").and_then(Value::as_str) {
        outcome
            .content
            .get_or_insert_with(String::new)
            .push_str(text);
    }
}

/// `tool_use_id_missing`, `_duplicate` and `_format` (`judge`: at the block).
fn check_id<'b>(id: Option<&'b str>, ids: &mut HashSet<&'b str>, judge: &mut Judge<'_>) {
    match id {
        None => {
            let detail = "a tool_use block without a non-empty id";
            judge.flag(RuleId::AnthropicResponseToolUseIdMissing, "/id", detail);
        }
        Some(id) if !ids.insert(id) => {
            let detail = format!("tool_use id {id:?} is used twice");
            judge.flag(RuleId::AnthropicResponseToolUseIdDuplicate, "/id", detail);
        }
        Some(id) if !id.starts_with("toolu_") => {
            let detail = format!("tool_use id {id:?} does not start with toolu_");
            judge.flag(RuleId::AnthropicResponseToolUseIdFormat, "/id", detail);
        }
        Some(_) => {}
    }
}

/// A tool_use block's name against the declared tools and its `input` against the tool's
/// schema (`judge`: at the block).
fn check_call(name: &str, input: Option<&Value>, cx: Context<'_>, judge: &mut Judge<'_>) {
    if cx.request.declares && !cx.request.tools.contains_key(name) {
        let detail = format!("tool_use names {name:?}, which the request did not declare");
        judge.flag(RuleId::AnthropicResponseToolUseNameUnknown, "/name", detail);
    }
    match input {
        Some(input @ Value::Object(_)) => check_schema(name, input, cx, judge),
        // A stream's input that is no object was judged as partial_json_invalid or
        // merged_tool_inputs already.
        _ if cx.streamed => {}
        _ => {
            let shown = input.map(preview).unwrap_or_else(|| "nothing".into());
            let detail = format!("tool_use.input must be a JSON object, got {shown}");
            let rule = RuleId::AnthropicResponseToolUseInputNotObject;
            judge.flag(rule, "/input", detail);
        }
    }
}

/// `tool_use_input_schema_mismatch`, a warning unless the tool is `strict` (`judge`: at the
/// block).
fn check_schema(name: &str, input: &Value, cx: Context<'_>, judge: &mut Judge<'_>) {
    let Some(schema) = cx.schemas.and_then(|s| s.get(name)).map(|t| &t.schema) else {
        return;
    };
    let failures = match schema.check(input, MAX_SCHEMA_ERRORS) {
        SchemaCheck::Unchecked => return,
        SchemaCheck::OverBudget => return judge.sink().schema_budget_hit(),
        SchemaCheck::Checked(failures) => failures,
    };
    let strict = cx.request.tools.get(name).is_some_and(|t| t.strict);
    for failure in failures {
        let mut at = judge.site(format_args!("/input{}", failure.instance_path));
        at.schema_path = Some(failure.schema_path);
        let rule = RuleId::AnthropicResponseToolUseInputSchemaMismatch;
        judge.flag_site(strict, rule, at, failure.message);
    }
}

/// `stop_reason` unknown, or not agreeing with the calls (`judge`: at the message).
fn check_stop_reason(calls: usize, base: &str, cx: Context<'_>, judge: &mut Judge<'_>) {
    let Some(stop) = cx.stop_reason else {
        return;
    };
    let at = base.replace("/content", "/stop_reason");
    if !STOP_REASONS.contains(&stop) {
        let detail = format!("stop_reason {stop:?} is not one of {STOP_REASONS:?}");
        return judge.flag(RuleId::AnthropicResponseStopReasonUnknown, at, detail);
    }
    let problem = if calls > 0 && !CALL_STOP_REASONS.contains(&stop) {
        Some(format!(
            "{calls} tool_use block(s) but stop_reason {stop:?}"
        ))
    } else if calls == 0 && stop == "tool_use" {
        Some("stop_reason \"tool_use\" without any tool_use block".to_owned())
    } else {
        None
    };
    if let Some(problem) = problem {
        let rule = if cx.streamed {
            RuleId::AnthropicStreamStopReasonMismatch
        } else {
            RuleId::AnthropicResponseStopReasonMismatch
        };
        judge.flag(rule, at, problem);
    }
}

/// The calls against `tool_choice` and `disable_parallel_tool_use` (`judge`: at the message).
fn check_tool_choice(calls: &[String], base: &str, cx: Context<'_>, judge: &mut Judge<'_>) {
    let cut_short = cx.stop_reason == Some("max_tokens");
    match &cx.request.choice {
        Choice::None if !calls.is_empty() => {
            let detail = format!("tool_choice none, yet {} tool_use block(s)", calls.len());
            judge.flag(RuleId::AnthropicToolChoiceNoneViolated, base, detail);
        }
        Choice::Any if calls.is_empty() && !cut_short => {
            let detail = "tool_choice any, yet no tool_use block";
            judge.flag(RuleId::AnthropicToolChoiceAnyViolated, base, detail);
        }
        Choice::Tool(name)
            if !cut_short && (calls.is_empty() || calls.iter().any(|c| c != name)) =>
        {
            let detail = format!("tool_choice forces {name:?}, the message called {calls:?}");
            judge.flag(RuleId::AnthropicToolChoiceToolViolated, base, detail);
        }
        _ => {}
    }
    let checked = matches!(
        cx.request.choice,
        Choice::Unspecified | Choice::Auto | Choice::Any | Choice::Tool(_)
    );
    if cx.request.single_call && checked && calls.len() > 1 {
        let detail = format!(
            "disable_parallel_tool_use is true, yet {} tool_use blocks",
            calls.len()
        );
        judge.flag(RuleId::AnthropicToolChoiceParallelViolated, base, detail);
    }
}
