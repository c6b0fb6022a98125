//! Views of the objects a Chat response carries, read either typed (no tree built) or from a
//! `Value` tree, so that the rules are written once: a message or a delta ([`MessageView`], the
//! two hold the same members), a tool call ([`CallView`], a `message.tool_calls[]` item or a
//! `delta.tool_calls[]` fragment) with its `function` or `custom` object ([`Part`]), and a
//! member that is absent, of the expected kind or of another ([`Slot`]).
//!
//! Input: a typed read's structs ([`TypedCall`], deserialized by [`super::members`] and
//! [`super::chunk`]) or a tree. Output: members as `&Value`, `null` kept apart from absent. A
//! typed call keeps every member the rules read; its `function` and `custom` objects refuse any
//! member other than `name`, `arguments` and `input`, so that a preview of one
//! ([`Part::to_value`]) is the tree's.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::engine::json_scan::{self, Scan, Seen};

/// A choice's `message`, or a chunk's `delta`: the members the rules read.
#[derive(Debug, Deserialize)]
pub struct TypedMessage {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<TypedCall>>,
    #[serde(default)]
    function_call: Option<Value>,
}

impl TypedMessage {
    /// The typed read without serde ([`json_scan`]): what serde reads, or `None`.
    pub fn scan(scan: &mut Scan) -> Option<TypedMessage> {
        let (mut content, mut tool_calls, mut function_call) = (None, None, None);
        let mut seen = Seen::default();
        scan.object(|scan, key| {
            match key {
                "content" => {
                    seen.first(0)?;
                    content = json_scan::optional(scan)?;
                }
                "tool_calls" => {
                    seen.first(1)?;
                    tool_calls =
                        json_scan::optional_with(scan, |scan| scan.items(TypedCall::scan))?;
                }
                "function_call" => {
                    seen.first(2)?;
                    function_call = json_scan::optional(scan)?;
                }
                _ => scan.skip()?,
            };
            Some(())
        })?;
        Some(TypedMessage {
            content,
            tool_calls,
            function_call,
        })
    }
}

/// A choice's members read by the scanner, as serde's derived read of either choice type reads
/// them: `index` (`null` as absent), the message or delta under `message_key` (`null` as
/// absent) and `finish_reason` as `finish` reads it.
pub fn scan_choice(
    scan: &mut Scan,
    message_key: &str,
    finish: fn(&mut Scan) -> Option<Option<Value>>,
) -> Option<(Option<Value>, Option<TypedMessage>, Option<Value>)> {
    let (mut index, mut message, mut finish_reason) = (None, None, None);
    let mut seen = Seen::default();
    scan.object(|scan, key| {
        if key == message_key {
            seen.first(1)?;
            message = json_scan::optional_with(scan, TypedMessage::scan)?;
            return Some(());
        }
        match key {
            "index" => {
                seen.first(0)?;
                index = json_scan::optional(scan)?;
            }
            "finish_reason" => {
                seen.first(2)?;
                finish_reason = finish(scan)?;
            }
            _ => scan.skip()?,
        };
        Some(())
    })?;
    Some((index, message, finish_reason))
}

/// A message or a delta (`null` members count as absent).
#[derive(Debug)]
pub struct MessageView<'a> {
    pub content: Option<&'a Value>,
    pub tool_calls: Slot<'a, Calls<'a>>,
    pub function_call: Option<&'a Value>,
}

impl<'a> MessageView<'a> {
    pub fn typed(message: &'a TypedMessage) -> MessageView<'a> {
        MessageView {
            content: message.content.as_ref(),
            tool_calls: match &message.tool_calls {
                None => Slot::Absent,
                Some(items) => Slot::Present(Calls::Typed(items)),
            },
            function_call: message.function_call.as_ref(),
        }
    }

    pub fn tree(message: &'a Map<String, Value>) -> MessageView<'a> {
        let member = |key: &str| message.get(key).filter(|member| !member.is_null());
        MessageView {
            content: member("content"),
            tool_calls: match member("tool_calls") {
                None => Slot::Absent,
                Some(Value::Array(items)) => Slot::Present(Calls::Tree(items)),
                Some(other) => Slot::Other(other),
            },
            function_call: member("function_call"),
        }
    }
}

/// One tool call: a `message.tool_calls[]` item or a `delta.tool_calls[]` fragment. `null`
/// members are kept apart from absent ones, as the rules tell them apart.
#[derive(Debug, Deserialize)]
pub struct TypedCall {
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

impl TypedCall {
    fn scan(scan: &mut Scan) -> Option<TypedCall> {
        let (mut index, mut id, mut kind, mut function, mut custom) =
            (None, None, None, None, None);
        let mut seen = Seen::default();
        scan.object(|scan, key| {
            match key {
                "index" => {
                    seen.first(0)?;
                    index = json_scan::present(scan)?;
                }
                "id" => {
                    seen.first(1)?;
                    id = json_scan::present(scan)?;
                }
                "type" => {
                    seen.first(2)?;
                    kind = json_scan::present(scan)?;
                }
                "function" => {
                    seen.first(3)?;
                    function = TypedPart::scan_member(scan)?;
                }
                "custom" => {
                    seen.first(4)?;
                    custom = TypedPart::scan_member(scan)?;
                }
                _ => scan.skip()?,
            };
            Some(())
        })?;
        Some(TypedCall {
            index,
            id,
            kind,
            function,
            custom,
        })
    }
}

/// A call's `function` or `custom` object.
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

impl TypedPart {
    /// A `function` or `custom` member read as [`part`] reads it (given, `null` included), or
    /// `None`.
    fn scan_member(scan: &mut Scan) -> Option<Option<Option<TypedPart>>> {
        json_scan::optional_with(scan, TypedPart::scan).map(Some)
    }

    fn scan(scan: &mut Scan) -> Option<TypedPart> {
        let (mut name, mut arguments, mut input) = (None, None, None);
        let mut seen = Seen::default();
        scan.object(|scan, key| {
            match key {
                "name" => {
                    seen.first(0)?;
                    name = json_scan::present(scan)?;
                }
                "arguments" => {
                    seen.first(1)?;
                    arguments = json_scan::present(scan)?;
                }
                "input" => {
                    seen.first(2)?;
                    input = json_scan::present(scan)?;
                }
                // `deny_unknown_fields`: serde refuses any other member.
                _ => return None,
            };
            Some(())
        })?;
        Some(TypedPart {
            name,
            arguments,
            input,
        })
    }
}

/// A member that was given, `null` included (absent members take the field's default).
pub fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// A `function` or `custom` member that was given: `Some(None)` when `null`.
fn part<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<TypedPart>>, D::Error> {
    Option::<TypedPart>::deserialize(deserializer).map(Some)
}

/// A message's or a delta's `tool_calls` items, typed or trees.
#[derive(Debug, Clone, Copy)]
pub enum Calls<'a> {
    Typed(&'a [TypedCall]),
    Tree(&'a [Value]),
}

impl<'a> Calls<'a> {
    pub fn len(self) -> usize {
        match self {
            Calls::Typed(items) => items.len(),
            Calls::Tree(items) => items.len(),
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The items in array order.
    pub fn iter(self) -> impl Iterator<Item = CallView<'a>> {
        let (typed, tree): (&[TypedCall], &[Value]) = match self {
            Calls::Typed(items) => (items, &[]),
            Calls::Tree(items) => (&[], items),
        };
        let typed = typed.iter().map(CallView::Typed);
        typed.chain(tree.iter().map(CallView::Tree))
    }
}

/// One tool call as the rules read it. Members are as given (`null` included), as `Value::get`
/// on the tree returns them.
#[derive(Debug, Clone, Copy)]
pub enum CallView<'a> {
    Typed(&'a TypedCall),
    /// Any JSON value: one that is not an object has no members.
    Tree(&'a Value),
}

/// Which of a call's two payload objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartName {
    Function,
    Custom,
}

impl PartName {
    /// The member's name in a call.
    pub fn key(self) -> &'static str {
        match self {
            PartName::Function => "function",
            PartName::Custom => "custom",
        }
    }
}

impl<'a> CallView<'a> {
    /// The item when it is not an object (a typed call always is one).
    pub fn non_object(self) -> Option<&'a Value> {
        match self {
            CallView::Typed(_) => None,
            CallView::Tree(item) => Some(item).filter(|item| !item.is_object()),
        }
    }

    pub fn index(self) -> Option<&'a Value> {
        match self {
            CallView::Typed(item) => item.index.as_ref(),
            CallView::Tree(item) => item.get("index"),
        }
    }

    pub fn id(self) -> Option<&'a Value> {
        match self {
            CallView::Typed(item) => item.id.as_ref(),
            CallView::Tree(item) => item.get("id"),
        }
    }

    /// The `type` member.
    pub fn kind(self) -> Option<&'a Value> {
        match self {
            CallView::Typed(item) => item.kind.as_ref(),
            CallView::Tree(item) => item.get("type"),
        }
    }

    pub fn part(self, name: PartName) -> Part<'a> {
        match self {
            CallView::Typed(item) => {
                let part = match name {
                    PartName::Function => &item.function,
                    PartName::Custom => &item.custom,
                };
                part.as_ref()
                    .map_or(Part::Absent, |part| Part::Typed(part.as_ref()))
            }
            CallView::Tree(item) => item.get(name.key()).map_or(Part::Absent, Part::Tree),
        }
    }
}

/// A call's `function` or `custom` member.
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
