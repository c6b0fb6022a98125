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

use super::arguments::{FollowedArguments, Taken};
use super::whole_json::WholeJson;
use crate::engine::report::KeptJson;
use crate::engine::schema::ToolSchema;
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
    /// Takes an arguments fragment of the `seq`-th event; `schema` as for
    /// [`Arguments::push_streamed`].
    pub fn append(
        &mut self,
        fragment: &str,
        seq: u64,
        schema: Option<Option<&ToolSchema>>,
    ) -> Taken {
        if !matches!(self.arguments, Arguments::Raw(_)) {
            self.whole.push(fragment);
        }
        self.arguments.push_streamed(fragment, seq, schema)
    }

    /// Whether the arguments so far are one whole JSON value, in time proportional to what
    /// arrived since the last answer (never a parse of everything on every fragment). Past
    /// the text bound: the structure closed and the streaming parser found no break.
    pub fn arguments_are_whole(&mut self) -> bool {
        match &self.arguments {
            Arguments::Text(text) => self.whole.is_whole(text),
            Arguments::Streamed(streamed) => {
                let held = streamed.held();
                if held.whole {
                    self.whole.is_whole(held.text)
                } else {
                    !streamed.break_reported && self.whole.is_closed()
                }
            }
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

/// Arguments as received: a function call's string fragments followed as they stream
/// ([`FollowedArguments`]), a custom call's input fragments concatenated, or the first
/// non-string value.
#[derive(Debug, Default)]
pub enum Arguments {
    #[default]
    Absent,
    Text(String),
    Streamed(Box<FollowedArguments>),
    Raw(Value),
}

impl Arguments {
    /// Appends a custom call's input fragment; the number of bytes now held besides.
    pub fn append(&mut self, fragment: &str) -> usize {
        match self {
            Arguments::Absent => *self = Arguments::Text(fragment.to_owned()),
            Arguments::Text(text) => text.push_str(fragment),
            Arguments::Streamed(streamed) => return streamed.push(fragment, 0).grown,
            // A non-string fragment already broke the call; keep what showed that.
            Arguments::Raw(_) => return 0,
        }
        fragment.len()
    }

    /// Takes a function call's arguments fragment of the `seq`-th event. `schema`: the call's
    /// schema once its name is known (`Some(None)`: known to have none), `None` before.
    pub fn push_streamed(
        &mut self,
        fragment: &str,
        seq: u64,
        schema: Option<Option<&ToolSchema>>,
    ) -> Taken {
        match self {
            Arguments::Absent => {
                let mut streamed = FollowedArguments::new(schema);
                let taken = streamed.push(fragment, seq);
                *self = Arguments::Streamed(Box::new(streamed));
                taken
            }
            Arguments::Streamed(streamed) => streamed.push(fragment, seq),
            Arguments::Text(text) => {
                text.push_str(fragment);
                Taken {
                    grown: fragment.len(),
                    broken: None,
                }
            }
            Arguments::Raw(_) => Taken {
                grown: 0,
                broken: None,
            },
        }
    }

    /// The call's name arrived: its schema, for arguments that began before it; heap bytes
    /// newly charged.
    pub fn schema_found(&mut self, schema: Option<&ToolSchema>, seq: u64) -> usize {
        match self {
            Arguments::Streamed(streamed) => streamed.schema_found(schema, seq),
            Arguments::Absent | Arguments::Text(_) | Arguments::Raw(_) => 0,
        }
    }

    fn to_value(&self) -> Option<Value> {
        match self {
            Arguments::Absent => None,
            Arguments::Text(text) => Some(Value::String(text.clone())),
            Arguments::Streamed(streamed) => Some(streamed.to_value()),
            Arguments::Raw(raw) => Some(raw.clone()),
        }
    }

    /// The streamed arguments, taken for the complete-stage verdict.
    fn take_streamed(&mut self) -> Option<Box<FollowedArguments>> {
        match std::mem::take(self) {
            Arguments::Streamed(streamed) => Some(streamed),
            other => {
                *self = other;
                None
            }
        }
    }
}

/// Which call of a choice: a `tool_calls` index, or the legacy `function_call`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKey {
    Tool(i64),
    Legacy,
}

/// All choices of one stream.
#[derive(Debug, Default)]
pub struct Assembly {
    pub choices: SmallMap<u32, ChoiceAssembly>,
    pub usage: Option<KeptJson>,
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

    /// A call's streamed arguments, taken (once) for the complete-stage verdict.
    pub fn take_streamed(&mut self, choice: u32, call: CallKey) -> Option<Box<FollowedArguments>> {
        let assembled = self.choices.get_mut(&choice)?;
        let arguments = match call {
            CallKey::Tool(index) => &mut assembled.calls.get_mut(&index)?.arguments,
            CallKey::Legacy => &mut assembled.legacy.as_mut()?.arguments,
        };
        arguments.take_streamed()
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
