//! The members of a `chat.completion.chunk` the stream contract reads, down to each choice's
//! delta: the chunk's `error`, `usage` and `choices`; each choice's `index`, `delta` and
//! `finish_reason`; each delta's `content`, `tool_calls` and `function_call`.
//!
//! Input: an SSE event's data, or a tree already parsed. Output: [`Chunk`], whose choices the
//! contract walks as [`ChoiceView`]s, and whose `tool_calls` items the fragment rules read as
//! [`FragmentView`]s. The typed read builds no tree for the choices, deltas and fragments: as
//! `Value`s they cost an allocation per map and per key, and as much again to drop, on every
//! event. It refuses what a full `Value` reads differently (not an object, a choice, delta,
//! fragment, `function` or `custom` that is neither an object nor `null`, `choices` or
//! `tool_calls` that is not an array, a member given twice, a `function` or `custom` member
//! other than `name`, `arguments` and `input`, so that a preview of one is the tree's); the
//! caller then parses a tree and views that, so verdicts are those of a full `Value` (the
//! tests feed both reads the same chunks and compare the violations and the reassembly).

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

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
    tool_calls: Option<Vec<TypedFragment>>,
    #[serde(default)]
    function_call: Option<Value>,
}

/// One `delta.tool_calls[]` item; `null` members are kept apart from absent ones, as the rules
/// tell them apart.
#[derive(Debug, Deserialize)]
pub struct TypedFragment {
    #[serde(default, deserialize_with = "present")]
    index: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, rename = "type", deserialize_with = "present")]
    kind: Option<Value>,
    #[serde(default, deserialize_with = "part")]
    function: Option<Option<TypedPart>>,
    #[serde(default, deserialize_with = "part")]
    custom: Option<Option<TypedPart>>,
}

/// A fragment's `function` or `custom` object.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TypedPart {
    #[serde(default, deserialize_with = "present")]
    name: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    arguments: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    input: Option<Value>,
}

/// A member that was given, `null` included (absent members take the field's default).
pub fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// A `function` or `custom` member that was given: `Some(None)` when `null`.
fn part<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<TypedPart>>, D::Error> {
    Option::<TypedPart>::deserialize(deserializer).map(Some)
}

/// A delta's `tool_calls` items, typed or trees.
#[derive(Debug, Clone, Copy)]
pub enum Fragments<'a> {
    Typed(&'a [TypedFragment]),
    Tree(&'a [Value]),
}

impl<'a> Fragments<'a> {
    /// The items in array order.
    pub fn iter(self) -> impl Iterator<Item = FragmentView<'a>> {
        let (typed, tree): (&[TypedFragment], &[Value]) = match self {
            Fragments::Typed(items) => (items, &[]),
            Fragments::Tree(items) => (&[], items),
        };
        let typed = typed.iter().map(FragmentView::Typed);
        typed.chain(tree.iter().map(FragmentView::Tree))
    }
}

/// One `delta.tool_calls[]` item as the fragment rules read it. Members are as given (`null`
/// included), as `Value::get` on the tree returns them.
#[derive(Debug, Clone, Copy)]
pub enum FragmentView<'a> {
    Typed(&'a TypedFragment),
    /// Any JSON value: one that is not an object has no members.
    Tree(&'a Value),
}

/// Which of a fragment's two payload objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartName {
    Function,
    Custom,
}

impl PartName {
    fn key(self) -> &'static str {
        match self {
            PartName::Function => "function",
            PartName::Custom => "custom",
        }
    }
}

impl<'a> FragmentView<'a> {
    pub fn index(self) -> Option<&'a Value> {
        match self {
            FragmentView::Typed(item) => item.index.as_ref(),
            FragmentView::Tree(item) => item.get("index"),
        }
    }

    pub fn id(self) -> Option<&'a Value> {
        match self {
            FragmentView::Typed(item) => item.id.as_ref(),
            FragmentView::Tree(item) => item.get("id"),
        }
    }

    /// The `type` member.
    pub fn kind(self) -> Option<&'a Value> {
        match self {
            FragmentView::Typed(item) => item.kind.as_ref(),
            FragmentView::Tree(item) => item.get("type"),
        }
    }

    pub fn part(self, name: PartName) -> Part<'a> {
        match self {
            FragmentView::Typed(item) => {
                let part = match name {
                    PartName::Function => &item.function,
                    PartName::Custom => &item.custom,
                };
                part.as_ref()
                    .map_or(Part::Absent, |part| Part::Typed(part.as_ref()))
            }
            FragmentView::Tree(item) => item.get(name.key()).map_or(Part::Absent, Part::Tree),
        }
    }
}

/// A fragment's `function` or `custom` member.
#[derive(Debug, Clone, Copy)]
pub enum Part<'a> {
    Absent,
    /// `None` when `null`.
    Typed(Option<&'a TypedPart>),
    Tree(&'a Value),
}

impl<'a> Part<'a> {
    /// Given, `null` included.
    pub fn is_present(self) -> bool {
        !matches!(self, Part::Absent)
    }

    /// Given and not `null`.
    pub fn is_non_null(self) -> bool {
        match self {
            Part::Absent | Part::Typed(None) => false,
            Part::Typed(Some(_)) => true,
            Part::Tree(value) => !value.is_null(),
        }
    }

    /// Its member `key` as given (`name`, `arguments`, `input`).
    pub fn get(self, key: &str) -> Option<&'a Value> {
        match self {
            Part::Absent | Part::Typed(None) => None,
            // A typed part has no other member: the read refuses one.
            Part::Typed(Some(part)) => match key {
                "name" => part.name.as_ref(),
                "arguments" => part.arguments.as_ref(),
                "input" => part.input.as_ref(),
                _ => None,
            },
            Part::Tree(value) => value.get(key),
        }
    }

    /// The member as a tree, for a violation's detail.
    pub fn to_value(self) -> Value {
        match self {
            Part::Absent | Part::Typed(None) => Value::Null,
            Part::Typed(Some(part)) => {
                let members = [
                    ("name", &part.name),
                    ("arguments", &part.arguments),
                    ("input", &part.input),
                ];
                let map: Map<String, Value> = members
                    .into_iter()
                    .filter_map(|(key, value)| Some((key.to_owned(), value.clone()?)))
                    .collect();
                Value::Object(map)
            }
            Part::Tree(value) => value.clone(),
        }
    }
}

/// A member that is absent or `null`, of the expected kind, or of another kind.
#[derive(Debug, Clone, Copy)]
pub enum Slot<'a, T> {
    Absent,
    Present(T),
    Other(&'a Value),
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
    pub tool_calls: Slot<'a, Fragments<'a>>,
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
                    Some(items) => Slot::Present(Fragments::Typed(items)),
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
            Some(Value::Array(items)) => Slot::Present(Fragments::Tree(items)),
            Some(other) => Slot::Other(other),
        },
        function_call: member("function_call"),
    }
}
