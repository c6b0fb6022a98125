//! Quirks on a buffered (`application/json`) response: Chat Completions here, the other
//! dialects' quirks through [`super::rewriters`].
//!
//! Input: the whole response body and the [`RequestContext`]. Output: the rewritten body, or
//! `None` when the quirk does not apply (no tool calls to break, a stream-only quirk, a body
//! that is not a JSON object). A rewritten document is re-serialized compactly; `cut-after-name`
//! alone cuts the original bytes, as a dropped connection would.

use serde_json::Value;

use super::catalogue::QuirkId;
use super::request::{RequestContext, call_as_prose};
use super::rewriters::rewriter;

/// The body with `quirk` applied, or `None` when it does not apply.
pub fn apply(quirk: QuirkId, context: &RequestContext, body: &[u8]) -> Option<Vec<u8>> {
    if let Some(rewriter) = rewriter(quirk.dialect()) {
        return (rewriter.buffered)(quirk, body);
    }
    if quirk == QuirkId::CutAfterName {
        return cut_in_arguments(body);
    }
    let mut document: Value = serde_json::from_slice(body).ok()?;
    let before = document.clone();
    let choices = document.get_mut("choices")?.as_array_mut()?;
    for choice in choices.iter_mut() {
        rewrite_choice(quirk, context, choice);
    }
    (document != before).then(|| document.to_string().into_bytes())
}

fn rewrite_choice(quirk: QuirkId, context: &RequestContext, choice: &mut Value) {
    let Some(message) = choice.get_mut("message").and_then(Value::as_object_mut) else {
        return;
    };
    let has_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .is_some_and(|calls| !calls.is_empty());
    if !has_calls {
        return;
    }
    let mut finish = None;
    match quirk {
        QuirkId::FinishStopWithCalls => finish = Some(Value::from("stop")),
        QuirkId::FinishMissing => finish = Some(Value::Null),
        QuirkId::ContentEmptyString => {
            if message.get("content").is_none_or(Value::is_null) {
                message.insert("content".to_owned(), Value::from(""));
            }
        }
        QuirkId::ToolCallsEmptyArray => {
            message.insert("tool_calls".to_owned(), Value::Array(Vec::new()));
        }
        QuirkId::ToolChoiceIgnored if context.call_required => {
            let prose: Vec<String> = calls(message)
                .map(|(name, args)| call_as_prose(&name, &args))
                .collect();
            message.remove("tool_calls");
            message.insert("content".to_owned(), Value::from(prose.join(" ")));
            finish = Some(Value::from("stop"));
        }
        _ => {
            let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) else {
                return;
            };
            for call in calls.iter_mut() {
                if let Some(function) = call.get_mut("function").and_then(Value::as_object_mut) {
                    rewrite_function(quirk, context, function);
                }
            }
        }
    }
    match (finish, choice.as_object_mut()) {
        (Some(Value::Null), Some(choice)) => {
            choice.remove("finish_reason");
        }
        (Some(reason), Some(choice))
            if choice.get("finish_reason").and_then(Value::as_str) == Some("tool_calls") =>
        {
            choice.insert("finish_reason".to_owned(), reason);
        }
        _ => {}
    }
}

fn calls(message: &serde_json::Map<String, Value>) -> impl Iterator<Item = (String, String)> + '_ {
    message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|call| {
            let text = |key: &str| {
                call["function"][key]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            };
            (text("name"), text("arguments"))
        })
}

fn rewrite_function(
    quirk: QuirkId,
    context: &RequestContext,
    function: &mut serde_json::Map<String, Value>,
) {
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let Some(args) = function.get("arguments").and_then(Value::as_str) else {
        return;
    };
    let args = args.to_owned();
    let new = match quirk {
        QuirkId::ArgsAsObject => serde_json::from_str::<Value>(&args).ok(),
        QuirkId::ArgsDoubleEncoded => Some(Value::from(Value::from(args).to_string())),
        QuirkId::ArgsInvalidJson if args.contains('"') => Some(Value::from(args.replace('"', "'"))),
        QuirkId::ArgsSchemaViolation => context.violate_schema(&name, &args).map(Value::from),
        QuirkId::NameUndeclared if !name.is_empty() => {
            function.insert("name".to_owned(), Value::from(format!("functions.{name}")));
            None
        }
        _ => None,
    };
    if let Some(new) = new {
        function.insert("arguments".to_owned(), new);
    }
}

/// The body cut a few bytes into the first `"arguments"` value, as a dropped connection leaves
/// it.
fn cut_in_arguments(body: &[u8]) -> Option<Vec<u8>> {
    const KEY: &[u8] = b"\"arguments\"";
    let at = body.windows(KEY.len()).position(|window| window == KEY)?;
    let cut = (at + KEY.len() + 6).min(body.len().saturating_sub(1));
    Some(body[..cut].to_vec())
}
