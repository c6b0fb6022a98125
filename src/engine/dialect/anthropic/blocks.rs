//! One content block of an Anthropic stream: what `content_block_start` opened, what the deltas
//! added, and the buffered-equivalent block it assembles to; plus the check made on a finished
//! `tool_use` block's streamed input (`anthropic.stream.partial_json_invalid`,
//! `anthropic.stream.merged_tool_inputs`).
//!
//! Input: the start event's `content_block` and each delta. Output: [`Block::assembled`] (a
//! `tool_use` block's `input` is the concatenated `partial_json` parsed, `""` meaning `{}`) and
//! complete-stage violations. Text and partial JSON are bounded by the engine's
//! `max_reassembled` (the exchange stops reading past it).

use serde_json::Value;

use crate::engine::dialect::common::preview;
use crate::engine::rules::RuleId;
use crate::engine::violation::{Site, Stage, ViolationSink};

#[derive(Debug)]
pub struct Block {
    /// The `index` the stream gave it.
    pub index: u64,
    /// `content_block_start.content_block`.
    pub start: Value,
    pub open: bool,
    pub reported_open: bool,
    /// The seq of its start and stop events.
    pub seq: u64,
    pub stop_seq: Option<u64>,
    /// Concatenated `input_json_delta.partial_json`.
    pub partial: String,
    /// Concatenated `text_delta.text` / `thinking_delta.thinking`.
    pub text: String,
    pub deltas: usize,
}

/// What a tool_use block's streamed input amounts to.
#[derive(Debug, PartialEq)]
pub enum Input {
    /// A JSON object (or `""`, meaning `{}`).
    Object(Value),
    /// Two or more JSON objects back to back (`{…}{…}`): parallel calls merged into one block.
    Merged(usize),
    /// Anything else.
    Invalid(String),
}

impl Block {
    pub fn new(index: u64, start: Value, seq: u64) -> Block {
        Block {
            index,
            start,
            open: true,
            reported_open: false,
            seq,
            stop_seq: None,
            partial: String::new(),
            text: String::new(),
            deltas: 0,
        }
    }

    pub fn kind(&self) -> Option<&str> {
        self.start.get("type").and_then(Value::as_str)
    }

    /// Applies one delta already known to fit this block's type.
    pub fn apply(&mut self, delta: &Value) {
        self.deltas += 1;
        let (key, into) = match delta.get("type").and_then(Value::as_str) {
            Some("input_json_delta") => ("partial_json", &mut self.partial),
            Some("text_delta") => ("text", &mut self.text),
            Some("thinking_delta") => ("thinking", &mut self.text),
            _ => return,
        };
        if let Some(piece) = delta.get(key).and_then(Value::as_str) {
            into.push_str(piece);
        }
    }

    /// The streamed input of a tool_use block.
    pub fn input(&self) -> Input {
        if self.partial.trim().is_empty() {
            // No input deltas: the start's own input (normally `{}`) stands.
            return match self.start.get("input") {
                Some(object @ Value::Object(_)) => Input::Object(object.clone()),
                _ => Input::Object(Value::Object(Default::default())),
            };
        }
        match serde_json::from_str::<Value>(&self.partial) {
            Ok(object @ Value::Object(_)) => Input::Object(object),
            Ok(other) => Input::Invalid(format!(
                "the streamed input is {}, not an object",
                preview(&other)
            )),
            Err(error) => {
                let objects = serde_json::Deserializer::from_str(&self.partial)
                    .into_iter::<Value>()
                    .map(|v| v.map(|v| v.is_object()))
                    .collect::<Result<Vec<bool>, _>>();
                match objects {
                    Ok(all) if all.len() >= 2 && all.iter().all(|o| *o) => Input::Merged(all.len()),
                    _ => Input::Invalid(format!(
                        "the concatenated partial_json does not parse ({error}): {}",
                        preview(&Value::String(self.partial.clone()))
                    )),
                }
            }
        }
    }

    /// The block as a buffered `Message.content` entry would carry it.
    pub fn assembled(&self) -> Value {
        let mut block = self.start.clone();
        let Some(object) = block.as_object_mut() else {
            return block;
        };
        match self.kind() {
            Some("tool_use") => {
                let input = match self.input() {
                    Input::Object(input) => input,
                    Input::Merged(_) | Input::Invalid(_) => Value::String(self.partial.clone()),
                };
                object.insert("input".into(), input);
            }
            Some("text") if self.deltas > 0 => {
                let mut text = object
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                text.push_str(&self.text);
                object.insert("text".into(), Value::String(text));
            }
            Some("thinking") if self.deltas > 0 => {
                object.insert("thinking".into(), Value::String(self.text.clone()));
            }
            _ => {}
        }
        block
    }

    /// `partial_json_invalid` / `merged_tool_inputs` for a tool_use block; `lenient` when
    /// partial input is expected (eager input streaming, or the message hit `max_tokens`).
    pub fn check_input(&self, position: usize, lenient: bool, sink: &mut ViolationSink) {
        if self.kind() != Some("tool_use") {
            return;
        }
        let site = Site::at(format!("/content/{position}/input"))
            .seq(Some(self.stop_seq.unwrap_or(self.seq)))
            .tool_call(u32::try_from(self.index).ok());
        match self.input() {
            Input::Object(_) => {}
            Input::Merged(count) => {
                let detail = format!(
                    "one tool_use block's input is {count} JSON objects back to back: parallel calls merged into one block"
                );
                sink.push(
                    RuleId::AnthropicStreamMergedToolInputs,
                    Stage::Complete,
                    site,
                    detail,
                );
            }
            Input::Invalid(detail) if lenient => {
                sink.push_lenient(
                    RuleId::AnthropicStreamPartialJsonInvalid,
                    Stage::Complete,
                    site,
                    detail,
                );
            }
            Input::Invalid(detail) => {
                sink.push(
                    RuleId::AnthropicStreamPartialJsonInvalid,
                    Stage::Complete,
                    site,
                    detail,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(pieces: &[&str]) -> Block {
        let mut block = Block::new(
            0,
            json!({"type":"tool_use","id":"toolu_1","name":"f","input":{}}),
            0,
        );
        for piece in pieces {
            block.apply(&json!({"type":"input_json_delta","partial_json":piece}));
        }
        block
    }

    #[test]
    fn input_is_the_concatenated_partial_json_and_empty_means_an_empty_object() {
        assert_eq!(
            tool(&["{\"a\":", " 1}"]).input(),
            Input::Object(json!({"a":1}))
        );
        assert_eq!(tool(&[""]).input(), Input::Object(json!({})));
        assert_eq!(tool(&[]).input(), Input::Object(json!({})));
        assert_eq!(tool(&["{\"a\":1}", "{\"a\":2}"]).input(), Input::Merged(2));
        assert!(matches!(tool(&["{\"a\":"]).input(), Input::Invalid(_)));
        assert!(matches!(tool(&["[1]"]).input(), Input::Invalid(_)));
        // An object followed by something else is not a merge of calls.
        assert!(matches!(
            tool(&["{\"a\":1}", "2"]).input(),
            Input::Invalid(_)
        ));
    }

    #[test]
    fn assembled_blocks_read_like_a_buffered_message() {
        let block = tool(&["{\"city\":", "\"Paris\"}"]);
        assert_eq!(
            block.assembled(),
            json!({"type":"tool_use","id":"toolu_1","name":"f","input":{"city":"Paris"}})
        );
        let mut text = Block::new(1, json!({"type":"text","text":""}), 0);
        text.apply(&json!({"type":"text_delta","text":"Hi"}));
        text.apply(&json!({"type":"text_delta","text":" there"}));
        assert_eq!(text.assembled(), json!({"type":"text","text":"Hi there"}));
        let broken = tool(&["{\"a\":"]);
        assert_eq!(broken.assembled()["input"], json!("{\"a\":"));
    }
}
