//! Judges a whole `chat.completion` document, every choice (not only `choices[0]`).
//!
//! Input: the parsed buffered body, or the buffered-equivalent document the reassembler built
//! from a stream ([`super::Origin`] says which). Output: one [`ChoiceOutcome`] per choice, and
//! violations at [`Stage::Complete`] with JSON pointers into that document.

use serde_json::Value;

use super::allowed::check_allowed;
use super::calls::check_tool_calls;
use super::legacy::{ChoiceFacts, check_legacy};
use super::members::Members;
use super::{Declared, FINISH_REASONS, Origin, preview};
use crate::engine::dialect::chat::request::ToolChoice;
use crate::engine::dialect::common;
use crate::engine::report::ChoiceOutcome;
use crate::engine::rules::RuleId;
use crate::engine::violation::{Site, Stage, ViolationSink};

/// A 2xx buffered body's members (see [`Members`]), or `None` after reporting
/// `response.not_json`.
pub fn read_document(body: &[u8], sink: &mut ViolationSink) -> Option<Members> {
    Members::typed(body).or_else(|| common::response_json(body, sink).map(Members::of))
}

/// Checks every choice of `document`; returns the outcomes in index order.
pub fn check_document(
    document: &Members,
    declared: Declared<'_>,
    origin: Origin,
    sink: &mut ViolationSink,
) -> Vec<ChoiceOutcome> {
    let Some(choices) = document.choices.as_ref().and_then(Value::as_array) else {
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
        .iter()
        .enumerate()
        .filter_map(|(position, choice)| check_choice(choice, position, declared, origin, sink))
        .collect();
    outcomes.sort_by_key(|outcome| outcome.index);
    outcomes
}

fn check_choice(
    choice: &Value,
    position: usize,
    declared: Declared<'_>,
    origin: Origin,
    sink: &mut ViolationSink,
) -> Option<ChoiceOutcome> {
    let base = format!("/choices/{position}");
    // `index` is required by the spec, but its absence breaks no client: fall back quietly.
    let index = choice
        .get("index")
        .and_then(Value::as_u64)
        .and_then(|i| u32::try_from(i).ok())
        .unwrap_or(u32::try_from(position).unwrap_or(u32::MAX));
    let site = |suffix: &str| Site::at(format!("{base}{suffix}")).choice(Some(index));
    let Some(message) = choice.get("message").filter(|m| m.is_object()) else {
        sink.push(
            RuleId::ResponseShapeInvalid,
            Stage::Complete,
            site("/message"),
            "the choice has no `message` object",
        );
        return None;
    };
    let content = match message.get("content") {
        None | Some(Value::Null) => None,
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
    let tool_calls = match message.get("tool_calls") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) if !items.is_empty() => check_tool_calls(
            items,
            &format!("{base}/message/tool_calls"),
            index,
            declared,
            origin,
            sink,
        ),
        Some(other) => {
            let detail = format!(
                "tool_calls must be a non-empty array, got {}",
                preview(other)
            );
            sink.push(
                RuleId::ToolCallsEmpty,
                Stage::Complete,
                site("/message/tool_calls"),
                detail,
            );
            Vec::new()
        }
    };
    let finish = choice.get("finish_reason");
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
    tool_calls.extend(check_legacy(message, &facts, declared, sink));
    let finish_reasons = match origin {
        Origin::Buffered => finish_reason.iter().cloned().collect(),
        Origin::Stream => choice
            .get("finish_reasons")
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
    let calls_path = format!("{base}/message/tool_calls");
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
                let path = format!("{calls_path}/{position}/function/name");
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
                site(calls_path.clone()),
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
            site(calls_path),
            detail,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// choices, usage, and whether the document is an object.
    type Read = (Option<Value>, Option<Value>, bool);

    /// What a full `Value` says of the same body: the reference the typed read must match.
    fn by_value(body: &str) -> Option<Read> {
        let document: Value = serde_json::from_str(body).ok()?;
        let member = |key: &str| document.get(key).filter(|v| !v.is_null()).cloned();
        Some((member("choices"), member("usage"), document.is_object()))
    }

    #[test]
    fn the_typed_read_of_a_document_agrees_with_a_full_value() {
        let cases = [
            r#"{"id":"c","object":"chat.completion","created":1,"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"total_tokens":3}}"#,
            r#"{"choices":null,"usage":null}"#,
            r#"{"choices":[1],"choices":[{"index":0}]}"#,
            r#"[[{"index":0}],{"total_tokens":1}]"#,
            r#""a string""#,
            r#"  {"choices":{"index":0}}"#,
            r#"{"nested":{"choices":[]},"x":[1,2,{"y":null}]}"#,
            r#"{"choices":[] } trailing"#,
            r#"{"choices":["#,
            "",
        ];
        for body in cases {
            let mut sink = ViolationSink::new(Default::default());
            let typed =
                read_document(body.as_bytes(), &mut sink).map(|d| (d.choices, d.usage, d.object));
            assert_eq!(typed, by_value(body), "{body}");
            assert_eq!(
                sink.is_empty(),
                typed.is_some(),
                "{body}: not-JSON reported"
            );
        }
    }
}
