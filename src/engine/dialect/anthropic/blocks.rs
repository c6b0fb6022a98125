//! One content block of an Anthropic stream: what `content_block_start` opened, what the deltas
//! added, and the buffered-equivalent block it assembles to; plus the check made on a finished
//! `tool_use` block's streamed input (`anthropic.stream.partial_json_invalid`,
//! `anthropic.stream.merged_tool_inputs`).
//!
//! Input: the start event's `content_block` and each delta; a `tool_use` block's
//! `input_json_delta.partial_json` pieces feed an [`ArgumentStream`] with their seq. Output:
//! the break, at the piece where the input became impossible JSON ([`Block::push_input`]);
//! [`Block::assembled`] (a `tool_use` block's `input` is the concatenated `partial_json`
//! parsed, `""` meaning `{}`) and complete-stage violations. While the input fits the
//! stream's text bound it is held and judged whole at the end exactly as a buffered block's
//! (the `{…}{…}` merge found by reading it again); past the bound only its first bytes are
//! kept, its verdict is the stream's ([`Input::Streamed`]), and a text that is not one JSON
//! value, a merge included, is `partial_json_invalid`. Text is bounded by the engine's
//! `max_reassembled` (the exchange stops reading past it).

use serde_json::Value;

use crate::engine::arguments::{ArgumentLimits, ArgumentSchema, ArgumentStream, ArgumentVerdict};
use crate::engine::dialect::common::preview;
use crate::engine::json_stream::Broken;
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;
use crate::engine::schema::ToolSchema;

#[derive(Debug)]
pub struct Block {
    /// The `index` the stream gave it.
    pub index: u64,
    /// Its place among the stream's blocks (the `content` position it assembles to).
    pub position: usize,
    /// `content_block_start.content_block`.
    pub start: Value,
    pub open: bool,
    pub reported_open: bool,
    /// The seq of its start and stop events.
    pub seq: u64,
    pub stop_seq: Option<u64>,
    /// `input_json_delta.partial_json`, followed as it streams (from the first piece).
    partial: Option<ArgumentStream>,
    /// The input's break was reported at its piece.
    break_reported: bool,
    /// The streamed input once judged ([`Block::settle`]), and its first bytes when it was not
    /// held whole.
    input: Option<Input>,
    settled: bool,
    prefix: Option<String>,
    /// Concatenated `text_delta.text` / `thinking_delta.thinking`.
    pub text: String,
    pub deltas: usize,
}

/// What a tool_use block's streamed input amounts to.
#[derive(Debug, Clone)]
pub enum Input {
    /// A JSON object (or `""`, meaning `{}`).
    Object(Value),
    /// Two or more JSON objects back to back (`{…}{…}`): parallel calls merged into one block.
    Merged(usize),
    /// Anything else: the detail, and whether it was already reported at its piece.
    Invalid { detail: String, reported: bool },
    /// An object past the held bound: judged as it streamed, not kept; its schema verdict and
    /// its first bytes.
    Streamed {
        schema: ArgumentSchema,
        shown: String,
    },
}

impl Block {
    pub fn new(index: u64, start: Value, seq: u64) -> Block {
        Block {
            index,
            position: 0,
            start,
            open: true,
            reported_open: false,
            seq,
            stop_seq: None,
            partial: None,
            break_reported: false,
            input: None,
            settled: false,
            prefix: None,
            text: String::new(),
            deltas: 0,
        }
    }

    pub fn kind(&self) -> Option<&str> {
        self.start.get("type").and_then(Value::as_str)
    }

    /// Heap bytes the streamed input holds (its text while within the bound).
    pub fn input_held(&self) -> usize {
        self.partial.as_ref().map_or(0, ArgumentStream::held_bytes)
    }

    /// Applies one text or thinking delta already known to fit this block's type.
    pub fn apply(&mut self, delta: &Value) {
        self.deltas += 1;
        let (key, into) = match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => ("text", &mut self.text),
            Some("thinking_delta") => ("thinking", &mut self.text),
            _ => return,
        };
        if let Some(piece) = delta.get(key).and_then(Value::as_str) {
            into.push_str(piece);
        }
    }

    /// Reads one `partial_json` piece (event `seq`); the break, when this piece made the
    /// input impossible JSON (not when it only follows a whole value: that may be a merge,
    /// judged at the end).
    pub fn push_input(
        &mut self,
        piece: &str,
        seq: u64,
        schema: Option<&ToolSchema>,
        limits: ArgumentLimits,
    ) -> Option<Broken> {
        self.deltas += 1;
        let partial = self
            .partial
            .get_or_insert_with(|| ArgumentStream::new(schema, limits));
        let broken = partial.push(piece, seq)?;
        (broken.reason != TRAILING).then_some(broken)
    }

    /// The held text (or its first bytes) of the streamed input, and whether it is whole.
    pub fn input_text(&self) -> (&str, bool) {
        self.partial
            .as_ref()
            .map_or(("", true), ArgumentStream::text)
    }

    /// Notes that the break [`Block::push_input`] returned was reported.
    pub fn break_reported(&mut self) {
        self.break_reported = true;
    }

    /// Judges the streamed input once, at the end of the message (`schema` the tool's).
    pub fn settle(&mut self, schema: Option<&ToolSchema>) {
        if std::mem::replace(&mut self.settled, true) {
            return;
        }
        if let Some((text, true)) = self.partial.as_ref().map(ArgumentStream::text) {
            // Held whole: judged as a buffered block's, the text kept for the assembled block.
            self.input = (!text.trim().is_empty()).then(|| judge_held(text, self.break_reported));
            return;
        }
        let Some(partial) = self.partial.take() else {
            return;
        };
        let shown = partial.text().0.to_owned();
        self.prefix = Some(shown.clone());
        let invalid = |detail: String, reported: bool| Input::Invalid { detail, reported };
        self.input = Some(match partial.finish(schema) {
            ArgumentVerdict::NotJson { broken, seq } => invalid(
                format!(
                    "the concatenated partial_json does not parse ({broken}): {} (only its first {} bytes kept)",
                    preview(&Value::String(shown.clone())),
                    shown.len()
                ),
                seq.is_some() && self.break_reported,
            ),
            ArgumentVerdict::NotObject(_) => invalid(
                format!(
                    "the streamed input is not an object: {} (only its first {} bytes kept)",
                    preview(&Value::String(shown.clone())),
                    shown.len()
                ),
                false,
            ),
            ArgumentVerdict::Object {
                value: Some(value), ..
            } => Input::Object(value),
            ArgumentVerdict::Object {
                value: None,
                schema,
            } => Input::Streamed { schema, shown },
        });
    }

    /// The streamed input of a tool_use block, once settled.
    pub fn input(&self) -> Input {
        match &self.input {
            Some(input) => input.clone(),
            // No input deltas: the start's own input (normally `{}`) stands.
            None => match self.start.get("input") {
                Some(object @ Value::Object(_)) => Input::Object(object.clone()),
                _ => Input::Object(Value::Object(Default::default())),
            },
        }
    }

    /// The block as a buffered `Message.content` entry would carry it: a tool_use block's input
    /// past the held bound is its first bytes and a marker (the rules judged it as it
    /// streamed).
    pub fn assembled(&self) -> Value {
        let mut block = self.start.clone();
        let Some(object) = block.as_object_mut() else {
            return block;
        };
        match self.kind() {
            Some("tool_use") => {
                let input = match self.input() {
                    Input::Object(input) => input,
                    Input::Merged(_) | Input::Invalid { .. } => match &self.prefix {
                        None => Value::String(self.input_text().0.to_owned()),
                        Some(prefix) => Value::String(format!("{prefix}{NOT_KEPT}")),
                    },
                    Input::Streamed { shown, .. } => Value::String(format!("{shown}{NOT_KEPT}")),
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
    /// partial input is expected (eager input streaming, or the message hit `max_tokens`;
    /// `judge`: at the message).
    pub fn check_input(&self, position: usize, lenient: bool, judge: &mut Judge<'_>) {
        if self.kind() != Some("tool_use") {
            return;
        }
        let mut judge = judge
            .under(format_args!("/content/{position}/input"))
            .seq(Some(self.stop_seq.unwrap_or(self.seq)))
            .tool_call(u32::try_from(self.index).ok());
        match self.input() {
            Input::Object(_) | Input::Streamed { .. } => {}
            Input::Invalid { reported: true, .. } => {}
            Input::Merged(count) => {
                let detail = format!(
                    "one tool_use block's input is {count} JSON objects back to back: parallel calls merged into one block"
                );
                judge.flag(RuleId::AnthropicStreamMergedToolInputs, "", detail);
            }
            Input::Invalid { detail, .. } => {
                let rule = RuleId::AnthropicStreamPartialJsonInvalid;
                judge.flag_or_warn(!lenient, rule, "", detail);
            }
        }
    }
}

/// The reason the streaming parser gives for text after a whole value.
const TRAILING: &str = "trailing characters";

/// What an assembled input past the held bound says after its first bytes.
const NOT_KEPT: &str = " [input past its held bound: judged as it streamed, not kept]";

/// The verdict on input text held whole, as a buffered block's; `reported` when its break was
/// reported at its piece.
fn judge_held(text: &str, reported: bool) -> Input {
    match serde_json::from_str::<Value>(text) {
        Ok(object @ Value::Object(_)) => Input::Object(object),
        Ok(other) => Input::Invalid {
            detail: format!("the streamed input is {}, not an object", preview(&other)),
            reported: false,
        },
        Err(error) => {
            let objects = serde_json::Deserializer::from_str(text)
                .into_iter::<Value>()
                .map(|v| v.map(|v| v.is_object()))
                .collect::<Result<Vec<bool>, _>>();
            match objects {
                Ok(all) if all.len() >= 2 && all.iter().all(|o| *o) => Input::Merged(all.len()),
                _ => Input::Invalid {
                    detail: format!(
                        "the concatenated partial_json does not parse ({error}): {}",
                        preview(&Value::String(text.to_owned()))
                    ),
                    reported,
                },
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
        for (seq, piece) in pieces.iter().enumerate() {
            block.push_input(piece, seq as u64, None, ArgumentLimits::default());
        }
        block.settle(None);
        block
    }

    #[test]
    fn input_is_the_concatenated_partial_json_and_empty_means_an_empty_object() {
        let object = |pieces: &[&str]| match tool(pieces).input() {
            Input::Object(value) => value,
            other => panic!("not an object: {other:?}"),
        };
        assert_eq!(object(&["{\"a\":", " 1}"]), json!({"a":1}));
        assert_eq!(object(&[""]), json!({}));
        assert_eq!(object(&[]), json!({}));
        assert!(matches!(
            tool(&["{\"a\":1}", "{\"a\":2}"]).input(),
            Input::Merged(2)
        ));
        assert!(matches!(tool(&["{\"a\":"]).input(), Input::Invalid { .. }));
        assert!(matches!(tool(&["[1]"]).input(), Input::Invalid { .. }));
        // An object followed by something else is not a merge of calls.
        assert!(matches!(
            tool(&["{\"a\":1}", "2"]).input(),
            Input::Invalid { .. }
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
