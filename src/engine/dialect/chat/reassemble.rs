//! Reassembles streamed tool calls **by `index`** into the message a buffered response would
//! have carried.
//!
//! Input: the pieces [`super::contract::stream`] pulls out of each chunk. Output: a
//! buffered-equivalent `chat.completion` document, so the very same buffered checks judge it.
//!
//! Worked example, two parallel calls whose fragments interleave:
//!
//! ```text
//! chunk 1: tool_calls [{index:0, id:"call_a", function:{name:"get_weather", arguments:""}}]
//! chunk 2: tool_calls [{index:1, id:"call_b", function:{name:"get_weather", arguments:"{\"ci"}}]
//! chunk 3: tool_calls [{index:0, function:{arguments:"{\"city\":\"Paris\"}"}}]
//! chunk 4: tool_calls [{index:1, function:{arguments:"ty\":\"Oslo\"}"}}]
//! ```
//!
//! Keyed by index, call 0 is `call_a` with `{"city":"Paris"}` and call 1 is `call_b` with
//! `{"city":"Oslo"}`. Keyed by array position (every item above is at position 0) the two
//! would merge into one call; keyed by id, chunks 3 and 4 would belong to nobody.

use serde_json::{Map, Value, json};

use super::whole_json::WholeJson;
use crate::engine::small_map::SmallMap;

/// Everything received for one choice.
#[derive(Debug, Default)]
pub struct ChoiceAssembly {
    pub content: Option<String>,
    pub calls: SmallMap<i64, CallAssembly>,
    /// Non-null finish reasons in arrival order, with the seq of their event.
    pub finish_reasons: Vec<(Value, u64)>,
    /// The legacy `delta.function_call` (one per choice, no index, no id).
    pub legacy: Option<LegacyAssembly>,
    /// `chat_legacy.stream.mixed_with_tool_calls` was reported for this choice.
    pub mixed_reported: bool,
    /// What this choice holds, as [`crate::engine::weigh`] counts it (the stream's total is
    /// [`Assembly::held`]).
    pub held: usize,
}

/// Everything received for one choice's legacy `function_call`.
#[derive(Debug, Default)]
pub struct LegacyAssembly {
    pub name: Option<String>,
    pub arguments: Arguments,
    /// The arguments text's structure, followed as it grows (see [`WholeJson`]).
    pub whole: WholeJson,
    /// The seq of the event that opened the call.
    pub first_seq: u64,
    pub name_repeat_reported: bool,
    pub arguments_before_name_reported: bool,
    /// A second call began (the legacy shape holds one): its fragments are not assembled.
    pub second_call: bool,
}

impl LegacyAssembly {
    /// Appends an arguments fragment.
    pub fn append(&mut self, fragment: &str) {
        if !matches!(self.arguments, Arguments::Raw(_)) {
            self.whole.push(fragment);
        }
        self.arguments.append(fragment);
    }

    /// Whether the arguments so far are one whole JSON value, in time proportional to what
    /// arrived since the last answer (never a parse of everything on every fragment).
    pub fn arguments_are_whole(&mut self) -> bool {
        match &self.arguments {
            Arguments::Text(text) => self.whole.is_whole(text),
            Arguments::Absent | Arguments::Raw(_) => false,
        }
    }
}

/// Everything received for one tool-call index. For a custom tool call (announced with
/// `type: "custom"`, or whose first fragment carries `custom`), `name` and `arguments` hold
/// `custom.name` and `custom.input`.
#[derive(Debug, Default)]
pub struct CallAssembly {
    pub id: Option<String>,
    pub kind: Option<Value>,
    pub name: Option<String>,
    pub arguments: Arguments,
    /// The seq of the event that opened this index (complete-stage violations point here).
    pub first_seq: u64,
    pub id_repeat_reported: bool,
    pub name_repeat_reported: bool,
    /// `chat_custom.stream.fragment_kind_mismatch` was reported for this index.
    pub kind_mismatch_reported: bool,
}

/// Arguments as received: string fragments concatenated, or the first non-string value.
#[derive(Debug, Default)]
pub enum Arguments {
    #[default]
    Absent,
    Text(String),
    Raw(Value),
}

impl Arguments {
    pub fn append(&mut self, fragment: &str) {
        match self {
            Arguments::Absent => *self = Arguments::Text(fragment.to_owned()),
            Arguments::Text(text) => text.push_str(fragment),
            // A non-string fragment already broke the call; keep what showed that.
            Arguments::Raw(_) => {}
        }
    }

    fn to_value(&self) -> Option<Value> {
        match self {
            Arguments::Absent => None,
            Arguments::Text(text) => Some(Value::String(text.clone())),
            Arguments::Raw(raw) => Some(raw.clone()),
        }
    }
}

/// All choices of one stream.
#[derive(Debug, Default)]
pub struct Assembly {
    pub choices: SmallMap<u32, ChoiceAssembly>,
    pub usage: Option<Value>,
    /// What the reassembly holds, as [`crate::engine::weigh`] counts it.
    pub held: usize,
}

impl Assembly {
    /// The buffered `chat.completion` this stream amounts to. A call that never named its
    /// type gets `"function"` (per chunk the field is optional); the terminal finish reason
    /// is the last non-null one, and `finish_reasons` lists all of them.
    pub fn to_document(&self) -> Value {
        let choices: Vec<Value> = self
            .choices
            .iter()
            .map(|(index, choice)| {
                let calls: Vec<Value> = choice
                    .calls
                    .iter()
                    .map(|(call_index, call)| call_value(*call_index, call))
                    .collect();
                let mut message = Map::new();
                message.insert("role".into(), json!("assistant"));
                message.insert(
                    "content".into(),
                    choice.content.clone().map_or(Value::Null, Value::String),
                );
                if !calls.is_empty() {
                    message.insert("tool_calls".into(), Value::Array(calls));
                }
                if let Some(legacy) = &choice.legacy {
                    let mut call = Map::new();
                    if let Some(name) = &legacy.name {
                        call.insert("name".into(), Value::String(name.clone()));
                    }
                    if let Some(arguments) = legacy.arguments.to_value() {
                        call.insert("arguments".into(), arguments);
                    }
                    message.insert("function_call".into(), Value::Object(call));
                }
                let all: Vec<Value> = choice
                    .finish_reasons
                    .iter()
                    .map(|(reason, _)| reason.clone())
                    .collect();
                json!({
                    "index": index,
                    "message": message,
                    "finish_reason": all.last().cloned().unwrap_or(Value::Null),
                    "finish_reasons": all,
                })
            })
            .collect();
        json!({ "object": "chat.completion", "choices": choices })
    }

    /// The seq of the event that opened a choice's legacy `function_call`.
    pub fn legacy_seq(&self, choice: Option<u32>) -> Option<u64> {
        let legacy = self.choices.get(&choice?)?.legacy.as_ref()?;
        Some(legacy.first_seq)
    }

    /// The seq a complete-stage violation about (choice, tool call) should point at.
    pub fn seq_for(&self, choice: Option<u32>, tool_call: Option<u32>) -> Option<u64> {
        let assembled = self.choices.get(&choice?)?;
        match tool_call {
            Some(call) => assembled.calls.get(&i64::from(call)).map(|c| c.first_seq),
            None => assembled.finish_reasons.last().map(|(_, seq)| *seq),
        }
    }
}

/// One reassembled call: `custom: {name, input}` for an index announced as a custom tool call,
/// `function: {name, arguments}` otherwise.
fn call_value(index: i64, call: &CallAssembly) -> Value {
    let custom = call.kind.as_ref().and_then(Value::as_str) == Some("custom");
    let (object, payload) = if custom {
        ("custom", "input")
    } else {
        ("function", "arguments")
    };
    let mut function = Map::new();
    if let Some(name) = &call.name {
        function.insert("name".into(), Value::String(name.clone()));
    }
    if let Some(arguments) = call.arguments.to_value() {
        function.insert(payload.into(), arguments);
    }
    let mut value = Map::new();
    value.insert("index".into(), json!(index));
    if let Some(id) = &call.id {
        value.insert("id".into(), Value::String(id.clone()));
    }
    value.insert(
        "type".into(),
        call.kind.clone().unwrap_or_else(|| json!("function")),
    );
    value.insert(object.into(), Value::Object(function));
    Value::Object(value)
}
