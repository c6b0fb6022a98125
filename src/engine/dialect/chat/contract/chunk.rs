//! The members of a `chat.completion.chunk` the stream contract reads, down to each choice's
//! delta: the chunk's `error`, `usage` and `choices`; each choice's `index`, `delta` and
//! `finish_reason`; each delta's `content`, `tool_calls` and `function_call`.
//!
//! Input: an SSE event's data, or a tree already parsed. Output: [`Chunk`], whose choices the
//! contract walks as [`ChoiceView`]s, and whose `tool_calls` items the fragment rules read as
//! [`super::view::CallView`]s. The typed read builds no tree for the choices, deltas and
//! fragments: as `Value`s they cost an allocation per map and per key, and as much again to
//! drop, on every event (see docs/benchmarks.md#chunk-typed-read). It refuses what a full
//! `Value` reads
//! differently (not an object, a choice, delta, fragment, `function` or `custom` that is
//! neither an object nor `null`, `choices` or `tool_calls` that is not an array, a member given
//! twice, a `function` or `custom` member other than `name`, `arguments` and `input`, so that a
//! preview of one is the tree's); the caller then parses a tree and views that, so verdicts are
//! those of a full `Value` (the tests feed both reads the same chunks and compare the
//! violations and the reassembly).

use serde::Deserialize;
use serde_json::Value;

use super::object::{ChoiceRead, Object};
use super::view::{MessageView, Slot, TypedMessage, scan_choice};
use crate::engine::json_scan::{self, Scan};

/// What the contract reads of one chunk.
pub type Chunk = Object<TypedChoice>;

/// One `choices[]` item of a chunk.
#[derive(Debug, Deserialize)]
pub struct TypedChoice {
    #[serde(default)]
    index: Option<Value>,
    #[serde(default)]
    delta: Option<TypedMessage>,
    #[serde(default)]
    finish_reason: Option<Value>,
}

/// One streamed choice, as the contract reads it (`null` members count as absent).
#[derive(Debug)]
pub struct ChoiceView<'a> {
    pub index: Option<&'a Value>,
    pub delta: Slot<'a, MessageView<'a>>,
    pub finish_reason: Option<&'a Value>,
}

impl ChoiceRead for TypedChoice {
    type View<'a> = ChoiceView<'a>;

    fn scan(scan: &mut Scan) -> Option<TypedChoice> {
        let (index, delta, finish_reason) = scan_choice(scan, "delta", json_scan::optional)?;
        Some(TypedChoice {
            index,
            delta,
            finish_reason,
        })
    }

    fn typed_view(&self) -> ChoiceView<'_> {
        ChoiceView {
            index: self.index.as_ref(),
            delta: match &self.delta {
                None => Slot::Absent,
                Some(delta) => Slot::Present(MessageView::typed(delta)),
            },
            finish_reason: self.finish_reason.as_ref(),
        }
    }

    fn tree_view(choice: &Value) -> ChoiceView<'_> {
        ChoiceView {
            index: member(choice, "index"),
            delta: match member(choice, "delta") {
                None => Slot::Absent,
                Some(Value::Object(delta)) => Slot::Present(MessageView::tree(delta)),
                Some(other) => Slot::Other(other),
            },
            finish_reason: member(choice, "finish_reason"),
        }
    }
}

/// `value`'s member `key` unless absent or `null` (a choice that is not an object has none).
fn member<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    value.get(key).filter(|member| !member.is_null())
}
