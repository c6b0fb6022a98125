//! The message-level events of an Anthropic stream: `message_start` (the envelope, which must
//! open empty) and `message_delta` (the `stop_reason` and the cumulative `usage`).
//!
//! Input: the parsed event and its seq, from [`super::stream::StreamState::on_event`]. Output:
//! fragment-stage violations (`anthropic.stream.message_start_duplicate`, `message_start_not_empty`,
//! `message_delta_usage_missing`, `anthropic.response.envelope_invalid`) and the updated state.

use serde_json::Value;

use super::stream::StreamState;
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;
use crate::engine::weigh;

impl StreamState {
    /// `message_start`: the envelope, which must open empty (`judge`: at the event).
    pub(super) fn message_start(&mut self, value: &Value, judge: &mut Judge<'_>) {
        if self.message.is_some() {
            let detail = "a second message_start";
            return judge.flag(RuleId::AnthropicStreamMessageStartDuplicate, "", detail);
        }
        let message = value.get("message").cloned().unwrap_or(Value::Null);
        let mut problems = Vec::new();
        if message.get("type").and_then(Value::as_str) != Some("message") {
            problems.push("message.type is not \"message\"");
        }
        if message.get("role").and_then(Value::as_str) != Some("assistant") {
            problems.push("message.role is not \"assistant\"");
        }
        if !problems.is_empty() {
            let rule = RuleId::AnthropicResponseEnvelopeInvalid;
            judge.flag(rule, "/message", problems.join("; "));
        }
        let empty = message
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty);
        let open = message.get("stop_reason").is_none_or(Value::is_null);
        if !empty || !open {
            let detail = "message_start.message should have content [] and stop_reason null";
            let rule = RuleId::AnthropicStreamMessageStartNotEmpty;
            judge.flag(rule, "/message", detail);
        }
        self.usage = message.get("usage").filter(|u| u.is_object()).cloned();
        self.held += 2 * weigh::value(&message);
        self.message = Some(message);
    }

    /// `message_delta`: the `stop_reason` and the cumulative `usage` (`judge`: at the event).
    pub(super) fn message_delta(&mut self, value: &Value, seq: u64, judge: &mut Judge<'_>) {
        if let Some(stop) = value
            .get("delta")
            .and_then(|d| d.get("stop_reason"))
            .and_then(Value::as_str)
        {
            self.stop_reason = Some(stop.to_owned());
            self.delta_seq.get_or_insert(seq);
        }
        let usage = value.get("usage").and_then(Value::as_object);
        if !usage.is_some_and(|u| u.get("output_tokens").is_some_and(Value::is_u64)) {
            let detail = "message_delta without usage.output_tokens";
            let rule = RuleId::AnthropicStreamMessageDeltaUsageMissing;
            judge.flag(rule, "/usage", detail);
        }
        if let Some(usage) = usage {
            let merged = self
                .usage
                .get_or_insert_with(|| Value::Object(Default::default()));
            if let Some(merged) = merged.as_object_mut() {
                for (key, number) in usage.iter().filter(|(_, v)| !v.is_null()) {
                    self.held += weigh::ENTRY / 16 + key.len() + weigh::value(number);
                    merged.insert(key.clone(), number.clone());
                }
            }
        }
        self.open_blocks_at(judge);
    }
}
