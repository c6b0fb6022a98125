//! The members of a `chat.completion.chunk` the stream contract reads, down to each choice's
//! delta: the chunk's `error`, `usage` and `choices`; each choice's `index`, `delta` and
//! `finish_reason`; each delta's `content`, `tool_calls` and `function_call`.
//!
//! Input: an SSE event's data, or a tree already parsed. Output: [`Chunk`], whose choices the
//! contract walks as [`ChoiceView`]s, and whose `tool_calls` items the fragment rules read as
//! [`super::view::CallView`]s. The typed read builds no tree for the choices, deltas and
//! fragments: as `Value`s they cost an allocation per map and per key, and as much again to
//! drop, on every event (callgrind, `bench/profile norec`: with the framer's and the pointers'
//! savings, 35.1k → 22.6k instructions per SSE event). It refuses what a full `Value` reads
//! differently (not an object, a choice, delta, fragment, `function` or `custom` that is
//! neither an object nor `null`, `choices` or `tool_calls` that is not an array, a member given
//! twice, a `function` or `custom` member other than `name`, `arguments` and `input`, so that a
//! preview of one is the tree's); the caller then parses a tree and views that, so verdicts are
//! those of a full `Value` (the tests feed both reads the same chunks and compare the
//! violations and the reassembly).

use serde::Deserialize;
use serde_json::{Map, Value};

use super::view::{Calls, Slot, TypedCall};

use crate::engine::dialect::common;

/// What the contract reads of one chunk.
#[derive(Debug)]
pub struct Chunk {
    /// Whether the data was a JSON object (a pointer to `/choices` needs one).
    pub object: bool,
    pub error: Option<Value>,
    pub usage: Option<Value>,
    choices: Choices,
}

#[derive(Debug)]
enum Choices {
    Typed(Option<Vec<TypedChoice>>),
    Tree(Option<Value>),
}

#[derive(Debug, Deserialize)]
struct TypedChunk {
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    choices: Option<Vec<TypedChoice>>,
}

#[derive(Debug, Deserialize)]
struct TypedChoice {
    #[serde(default)]
    index: Option<Value>,
    #[serde(default)]
    delta: Option<TypedDelta>,
    #[serde(default)]
    finish_reason: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct TypedDelta {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<TypedCall>>,
    #[serde(default)]
    function_call: Option<Value>,
}

/// One streamed choice, as the contract reads it (`null` members count as absent).
#[derive(Debug)]
pub struct ChoiceView<'a> {
    pub index: Option<&'a Value>,
    pub delta: Slot<'a, DeltaView<'a>>,
    pub finish_reason: Option<&'a Value>,
}

/// One choice's delta (`null` members count as absent).
#[derive(Debug)]
pub struct DeltaView<'a> {
    pub content: Option<&'a Value>,
    pub tool_calls: Slot<'a, Calls<'a>>,
    pub function_call: Option<&'a Value>,
}

impl Chunk {
    /// The typed read of `text`; `None` when it refuses (see the module doc) or `text` is not
    /// JSON.
    pub fn typed(text: &[u8]) -> Option<Chunk> {
        // A derived struct would also accept an array of its members: objects only.
        if text.trim_ascii_start().first() != Some(&b'{') {
            return None;
        }
        let typed = serde_json::from_slice::<TypedChunk>(text).ok()?;
        Some(Chunk {
            object: true,
            error: typed.error,
            usage: typed.usage,
            choices: Choices::Typed(typed.choices),
        })
    }

    /// The members of a tree already parsed.
    pub fn of(mut value: Value) -> Chunk {
        Chunk {
            object: value.is_object(),
            error: common::take_member(&mut value, "error"),
            usage: common::take_member(&mut value, "usage"),
            choices: Choices::Tree(common::take_member(&mut value, "choices")),
        }
    }

    /// The choices, in array order; `None` when `choices` is absent, `null` or not an array.
    pub fn choices(&self) -> Option<Vec<ChoiceView<'_>>> {
        match &self.choices {
            Choices::Typed(choices) => Some(choices.as_ref()?.iter().map(typed_choice).collect()),
            Choices::Tree(choices) => Some(
                choices
                    .as_ref()?
                    .as_array()?
                    .iter()
                    .map(tree_choice)
                    .collect(),
            ),
        }
    }
}

fn typed_choice(choice: &TypedChoice) -> ChoiceView<'_> {
    ChoiceView {
        index: choice.index.as_ref(),
        delta: match &choice.delta {
            None => Slot::Absent,
            Some(delta) => Slot::Present(DeltaView {
                content: delta.content.as_ref(),
                tool_calls: match &delta.tool_calls {
                    None => Slot::Absent,
                    Some(items) => Slot::Present(Calls::Typed(items)),
                },
                function_call: delta.function_call.as_ref(),
            }),
        },
        finish_reason: choice.finish_reason.as_ref(),
    }
}

/// `value`'s member `key` unless absent or `null` (a choice that is not an object has none).
fn member<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    value.get(key).filter(|member| !member.is_null())
}

fn tree_choice(choice: &Value) -> ChoiceView<'_> {
    ChoiceView {
        index: member(choice, "index"),
        delta: match member(choice, "delta") {
            None => Slot::Absent,
            Some(Value::Object(delta)) => Slot::Present(tree_delta(delta)),
            Some(other) => Slot::Other(other),
        },
        finish_reason: member(choice, "finish_reason"),
    }
}

fn tree_delta(delta: &Map<String, Value>) -> DeltaView<'_> {
    let member = |key: &str| delta.get(key).filter(|member| !member.is_null());
    DeltaView {
        content: member("content"),
        tool_calls: match member("tool_calls") {
            None => Slot::Absent,
            Some(Value::Array(items)) => Slot::Present(Calls::Tree(items)),
            Some(other) => Slot::Other(other),
        },
        function_call: member("function_call"),
    }
}
