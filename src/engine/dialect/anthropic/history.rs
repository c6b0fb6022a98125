//! Judges the tool_use/tool_result history of an Anthropic Messages request
//! (`anthropic.request.tool_use_unanswered`, `tool_result_not_leading`, `tool_result_orphan`,
//! `history_tool_use_input_not_object`).
//!
//! Input: the request's `messages` array, unparsed. Output: request-stage violations. The rule
//! the API enforces: every `tool_use` of an assistant message is answered by a `tool_result` in
//! the immediately following user message, and those results lead that message's content.
//! A request that continues a server-held thread (`thread: {"type":"continue",
//! "previous_message_id":...}`, sent by the SDK's tool runner) carries only the new turn: the
//! `tool_use` its first message answers lives server-side, so that message's results are not
//! orphans (the twin of the Responses API's `previous_response_id`).

use std::collections::HashSet;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::engine::dialect::common::preview;
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;

/// The content blocks of a message (a string content has none).
fn blocks(message: &Value) -> &[Value] {
    message
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn kind(block: &Value) -> Option<&str> {
    block.get("type").and_then(Value::as_str)
}

/// The `tool_use` ids of an assistant message (none for any other role).
fn tool_use_ids(message: Option<&Value>) -> HashSet<&str> {
    let Some(message) =
        message.filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
    else {
        return HashSet::new();
    };
    blocks(message)
        .iter()
        .filter(|b| kind(b) == Some("tool_use"))
        .filter_map(|b| b.get("id").and_then(Value::as_str))
        .collect()
}

/// `continues`: the request continues a server-held thread, so the first message's results
/// answer a `tool_use` this request does not hold (`judge`: at the request's root).
pub fn check(messages: &RawValue, continues: bool, judge: &mut Judge<'_>) {
    let Ok(Value::Array(messages)) = serde_json::from_str::<Value>(messages.get()) else {
        return;
    };
    for (position, message) in messages.iter().enumerate() {
        let mut judge = judge.under(format_args!("/messages/{position}/content"));
        if message.get("role").and_then(Value::as_str) == Some("assistant") {
            check_inputs(message, &mut judge);
            if let Some(next) = messages.get(position + 1) {
                unanswered(message, next, &mut judge);
            }
            continue;
        }
        let server_side = continues && position == 0;
        let calls = tool_use_ids(position.checked_sub(1).and_then(|p| messages.get(p)));
        check_results(blocks(message), &calls, server_side, &mut judge);
    }
}

/// `history_tool_use_input_not_object` for an assistant message's `tool_use` blocks (`judge`:
/// at its content).
fn check_inputs(message: &Value, judge: &mut Judge<'_>) {
    for (index, block) in blocks(message).iter().enumerate() {
        if kind(block) != Some("tool_use") || block.get("input").is_some_and(Value::is_object) {
            continue;
        }
        let shown = block
            .get("input")
            .map(preview)
            .unwrap_or_else(|| "nothing".into());
        let detail = format!("a history tool_use.input must be an object, got {shown}");
        let rule = RuleId::AnthropicRequestHistoryToolUseInputNotObject;
        judge.flag(rule, format_args!("/{index}/input"), detail);
    }
}

/// The `tool_result` blocks of a message after `calls` (the preceding assistant message's
/// `tool_use` ids): leading the content, each answering one of those calls unless the call
/// lives `server_side` (`judge`: at its content).
fn check_results(
    content: &[Value],
    calls: &HashSet<&str>,
    server_side: bool,
    judge: &mut Judge<'_>,
) {
    let mut leading = true;
    for (index, block) in content.iter().enumerate() {
        if kind(block) != Some("tool_result") {
            leading = false;
            continue;
        }
        if !leading {
            let detail = "a tool_result after other content: tool results must come first in the user message";
            let rule = RuleId::AnthropicRequestToolResultNotLeading;
            judge.flag(rule, format_args!("/{index}"), detail);
        }
        let id = block
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !server_side && !calls.contains(id) {
            let detail = format!(
                "tool_result for {id:?}, which no tool_use of the preceding assistant message has"
            );
            let rule = RuleId::AnthropicRequestToolResultOrphan;
            judge.flag(rule, format_args!("/{index}/tool_use_id"), detail);
        }
    }
}

/// Every `tool_use` of `message` needs a `tool_result` in `next` (`judge`: at `message`'s
/// content).
fn unanswered(message: &Value, next: &Value, judge: &mut Judge<'_>) {
    let answered: HashSet<&str> = if next.get("role").and_then(Value::as_str) == Some("user") {
        blocks(next)
            .iter()
            .filter(|b| kind(b) == Some("tool_result"))
            .filter_map(|b| b.get("tool_use_id").and_then(Value::as_str))
            .collect()
    } else {
        HashSet::new()
    };
    for (index, block) in blocks(message).iter().enumerate() {
        if kind(block) != Some("tool_use") {
            continue;
        }
        let id = block.get("id").and_then(Value::as_str).unwrap_or_default();
        if !answered.contains(id) {
            let detail = format!(
                "tool_use {id:?} has no tool_result in the immediately following user message"
            );
            let rule = RuleId::AnthropicRequestToolUseUnanswered;
            judge.flag(rule, format_args!("/{index}/id"), detail);
        }
    }
}
