//! Quirks on an Anthropic Messages exchange (`/v1/messages`), buffered or streamed.
//!
//! Input: a Messages body (one JSON document) or one stream event's JSON. Output: the rewritten
//! value, or nothing when the quirk finds no `tool_use` block to break. `anthropic-input-as-string`
//! turns each `tool_use` block's `input` object into its JSON text (buffered only: a stream
//! builds `input` from `input_json_delta` fragments). `anthropic-stop-reason-end-turn` answers
//! tool use with `stop_reason: "end_turn"`: in a buffered body that carries a `tool_use` block,
//! and on a stream's `message_delta` (whose `"tool_use"` already says blocks came back).

use serde_json::Value;

use super::catalogue::QuirkId;

/// The buffered body with `quirk` applied, or `None` when it does not apply.
pub fn buffered(quirk: QuirkId, body: &[u8]) -> Option<Vec<u8>> {
    let mut document: Value = serde_json::from_slice(body).ok()?;
    let message = document.as_object_mut()?;
    let mut changed = false;
    let blocks = message.get_mut("content").and_then(Value::as_array_mut);
    let mut tool_use = false;
    for block in blocks.into_iter().flatten() {
        let Some(block) = block.as_object_mut() else {
            continue;
        };
        if block.get("type").and_then(Value::as_str) != Some("tool_use") {
            continue;
        }
        tool_use = true;
        if quirk == QuirkId::AnthropicInputAsString
            && let Some(input) = block.get("input").filter(|input| input.is_object())
        {
            let text = input.to_string();
            block.insert("input".to_owned(), Value::from(text));
            changed = true;
        }
    }
    if quirk == QuirkId::AnthropicStopReasonEndTurn && tool_use {
        changed |= end_turn(message.get_mut("stop_reason"));
    }
    changed.then(|| document.to_string().into_bytes())
}

/// One stream event's data rewritten in place; true when it changed.
pub fn event(quirk: QuirkId, data: &mut Value) -> bool {
    if quirk != QuirkId::AnthropicStopReasonEndTurn
        || data.get("type").and_then(Value::as_str) != Some("message_delta")
    {
        return false;
    }
    end_turn(
        data.get_mut("delta")
            .and_then(|delta| delta.get_mut("stop_reason")),
    )
}

/// `"tool_use"` → `"end_turn"`; true when it changed.
fn end_turn(stop_reason: Option<&mut Value>) -> bool {
    match stop_reason {
        Some(reason) if reason == "tool_use" => {
            *reason = Value::from("end_turn");
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_is_left_alone_and_tool_use_is_broken() {
        let prose = br#"{"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn"}"#;
        assert_eq!(buffered(QuirkId::AnthropicInputAsString, prose), None);
        assert_eq!(buffered(QuirkId::AnthropicStopReasonEndTurn, prose), None);
        let call = br#"{"content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1}}],"stop_reason":"tool_use"}"#;
        let out = buffered(QuirkId::AnthropicInputAsString, call).expect("applies");
        let out: Value = serde_json::from_slice(&out).expect("json");
        assert_eq!(out["content"][0]["input"], "{\"a\":1}");
        let mut delta =
            serde_json::json!({"type":"message_delta","delta":{"stop_reason":"tool_use"}});
        assert!(event(QuirkId::AnthropicStopReasonEndTurn, &mut delta));
        assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    }
}
