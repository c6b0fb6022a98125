//! The message-level events of an Anthropic stream: `message_start` (the envelope, which must
//! open empty) and `message_delta` (the `stop_reason` and the cumulative `usage`).
//!
//! Input: the parsed event and its seq, from [`super::stream::StreamState::on_event`]. Output:
//! fragment-stage violations (`anthropic.stream.message_start_duplicate`, `message_start_not_empty`,
//! `message_delta_usage_missing`, `anthropic.response.envelope_invalid`) and the updated state.

use serde_json::Value;

use super::stream::StreamState;
use crate::engine::rules::RuleId;
use crate::engine::violation::{Site, Stage, ViolationSink};
use crate::engine::weigh;

impl StreamState {
    pub(super) fn message_start(&mut self, value: &Value, seq: u64, sink: &mut ViolationSink) {
        let site = |path: &str| Site::at(path).seq(Some(seq));
        if self.message.is_some() {
            sink.push(
                RuleId::AnthropicStreamMessageStartDuplicate,
                Stage::Fragment,
                site(""),
                "a second message_start",
            );
            return;
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
            sink.push(
                RuleId::AnthropicResponseEnvelopeInvalid,
                Stage::Fragment,
                site("/message"),
                problems.join("; "),
            );
        }
        let empty = message
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty);
        let open = message.get("stop_reason").is_none_or(Value::is_null);
        if !empty || !open {
            let detail = "message_start.message should have content [] and stop_reason null";
            sink.push(
                RuleId::AnthropicStreamMessageStartNotEmpty,
                Stage::Fragment,
                site("/message"),
                detail,
            );
        }
        self.usage = message.get("usage").filter(|u| u.is_object()).cloned();
        self.held += 2 * weigh::value(&message);
        self.message = Some(message);
    }

    pub(super) fn message_delta(&mut self, value: &Value, seq: u64, sink: &mut ViolationSink) {
        let site = |path: &str| Site::at(path).seq(Some(seq));
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
            sink.push(
                RuleId::AnthropicStreamMessageDeltaUsageMissing,
                Stage::Fragment,
                site("/usage"),
                "message_delta without usage.output_tokens",
            );
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
        self.open_blocks_at(seq, sink);
    }
}
