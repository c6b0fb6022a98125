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
use crate::engine::report::{ChoiceOutcome, ToolCallOutcome};
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, SchemaCheck};
use crate::engine::violation::{Site, Stage, ViolationSink};

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
    let mut ids = HashSet::new();
    let mut calls: Vec<String> = Vec::new();
    for (position, block) in blocks.iter().enumerate() {
        let path = format!("{base}/{position}");
        let at = |suffix: &str| {
            Site::at(format!("{path}{suffix}")).tool_call(u32::try_from(position).ok())
        };
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(text) = block.get("text").and_then(Value::as_str) {
                    outcome
                        .content
                        .get_or_insert_with(String::new)
                        .push_str(text);
                }
                continue;
            }
            Some("tool_use") => {}
            _ => continue,
        }
        let id = block
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        match id {
            None => sink.push(
                RuleId::AnthropicResponseToolUseIdMissing,
                Stage::Complete,
                at("/id"),
                "a tool_use block without a non-empty id",
            ),
            Some(id) if !ids.insert(id.to_owned()) => sink.push(
                RuleId::AnthropicResponseToolUseIdDuplicate,
                Stage::Complete,
                at("/id"),
                format!("tool_use id {id:?} is used twice"),
            ),
            Some(id) if !id.starts_with("toolu_") => sink.push(
                RuleId::AnthropicResponseToolUseIdFormat,
                Stage::Complete,
                at("/id"),
                format!("tool_use id {id:?} does not start with toolu_"),
            ),
            Some(_) => {}
        }
        let name = block
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if cx.request.declares && !cx.request.tools.contains_key(name) {
            sink.push(
                RuleId::AnthropicResponseToolUseNameUnknown,
                Stage::Complete,
                at("/name"),
                format!("tool_use names {name:?}, which the request did not declare"),
            );
        }
        let input = block.get("input");
        match input {
            Some(input @ Value::Object(_)) => check_schema(name, input, cx, &at("/input"), sink),
            // A stream's input that is no object was judged as partial_json_invalid or
            // merged_tool_inputs already.
            _ if cx.streamed => {}
            _ => {
                let shown = input.map(preview).unwrap_or_else(|| "nothing".into());
                sink.push(
                    RuleId::AnthropicResponseToolUseInputNotObject,
                    Stage::Complete,
                    at("/input"),
                    format!("tool_use.input must be a JSON object, got {shown}"),
                );
            }
        }
        outcome.tool_calls.push(ToolCallOutcome {
            index: u32::try_from(position).unwrap_or(u32::MAX),
            id: id.map(str::to_owned),
            name: block.get("name").and_then(Value::as_str).map(str::to_owned),
            arguments: input.cloned(),
        });
        calls.push(name.to_owned());
    }
    check_stop_reason(calls.len(), base, cx, sink);
    if calls.is_empty()
        && cx.request.declares
        && outcome.content.as_deref().is_some_and(has_tool_markup)
    {
        sink.push(
            RuleId::AnthropicResponseToolMarkupInText,
            Stage::Complete,
            Site::at(base),
            "tools were offered, no tool_use block came back, and the text holds tool-call markup",
        );
    }
    check_tool_choice(&calls, base, cx, sink);
    outcome
}

fn check_schema(name: &str, input: &Value, cx: Context<'_>, site: &Site, sink: &mut ViolationSink) {
    let Some(schema) = cx.schemas.and_then(|s| s.get(name)).map(|t| &t.schema) else {
        return;
    };
    let failures = match schema.check(input, MAX_SCHEMA_ERRORS) {
        SchemaCheck::Unchecked => return,
        SchemaCheck::OverBudget => return sink.schema_budget_hit(),
        SchemaCheck::Checked(failures) => failures,
    };
    let strict = cx.request.tools.get(name).is_some_and(|t| t.strict);
    for failure in failures {
        let mut at = site.clone();
        at.path.push_str(&failure.instance_path);
        at.schema_path = Some(failure.schema_path);
        let rule = RuleId::AnthropicResponseToolUseInputSchemaMismatch;
        if strict {
            sink.push(rule, Stage::Complete, at, failure.message);
        } else {
            sink.push_lenient(rule, Stage::Complete, at, failure.message);
        }
    }
}

fn check_stop_reason(calls: usize, base: &str, cx: Context<'_>, sink: &mut ViolationSink) {
    let Some(stop) = cx.stop_reason else {
        return;
    };
    let site = || Site::at(base.replace("/content", "/stop_reason"));
    if !STOP_REASONS.contains(&stop) {
        sink.push(
            RuleId::AnthropicResponseStopReasonUnknown,
            Stage::Complete,
            site(),
            format!("stop_reason {stop:?} is not one of {STOP_REASONS:?}"),
        );
        return;
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
        sink.push(rule, Stage::Complete, site(), problem);
    }
}

fn check_tool_choice(calls: &[String], base: &str, cx: Context<'_>, sink: &mut ViolationSink) {
    let cut_short = cx.stop_reason == Some("max_tokens");
    let site = || Site::at(base);
    match &cx.request.choice {
        Choice::None if !calls.is_empty() => sink.push(
            RuleId::AnthropicToolChoiceNoneViolated,
            Stage::Complete,
            site(),
            format!("tool_choice none, yet {} tool_use block(s)", calls.len()),
        ),
        Choice::Any if calls.is_empty() && !cut_short => sink.push(
            RuleId::AnthropicToolChoiceAnyViolated,
            Stage::Complete,
            site(),
            "tool_choice any, yet no tool_use block",
        ),
        Choice::Tool(name)
            if !cut_short && (calls.is_empty() || calls.iter().any(|c| c != name)) =>
        {
            let detail = format!("tool_choice forces {name:?}, the message called {calls:?}");
            sink.push(
                RuleId::AnthropicToolChoiceToolViolated,
                Stage::Complete,
                site(),
                detail,
            );
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
        sink.push(
            RuleId::AnthropicToolChoiceParallelViolated,
            Stage::Complete,
            site(),
            detail,
        );
    }
}
