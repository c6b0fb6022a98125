//! The members of a `chat.completion` document the contract reads: its `error`, `usage` and
//! `choices` (`null` counts as absent) and whether it was an object at all; each choice's
//! `index`, `message`, `finish_reason` (and, in a stream's reassembly, `finish_reasons`); each
//! message's `content`, `tool_calls` and `function_call`. A buffered body and a stream's
//! reassembled document are both read this way.
//!
//! Input: the JSON text of a buffered body, or a tree already parsed. Output: [`Members`] (an
//! [`Object`] whose choices are [`TypedChoice`]s), which the contract walks as [`ChoiceView`]s.
//! The typed read skips every other member (`id`, `model`, `created`, `logprobs`...) as JSON and
//! builds no tree for the choices, messages and tool calls (a map and a key string per member,
//! dropped again after the verdict); `usage`, `error` and the leaves the rules take whole (a
//! call's `arguments`) stay `Value`s. It refuses what a full `Value` reads differently (not an
//! object, a member given twice, a choice, message or call that is not an object, `choices` or
//! `tool_calls` that is not an array; see also [`super::view`]); the caller then parses a tree
//! and takes [`Members::of`] it, so verdicts are those of a full `Value` (the tests judge both
//! reads of the same bodies and compare).

use serde::Deserialize;
use serde_json::Value;

use super::object::{ChoiceRead, Object};
use super::view::{MessageView, TypedMessage, present, scan_choice};
use crate::engine::json_scan::{self, Scan};

/// What the contract reads of a buffered document (or a stream's reassembled one).
pub type Members = Object<TypedChoice>;

/// One `choices[]` item of a document.
#[derive(Debug, Deserialize)]
pub struct TypedChoice {
    #[serde(default)]
    index: Option<Value>,
    #[serde(default)]
    message: Option<TypedMessage>,
    /// `null` is kept: the rule's detail tells it from a missing one.
    #[serde(default, deserialize_with = "present")]
    finish_reason: Option<Value>,
}

/// One choice of a document, as the contract reads it.
#[derive(Debug)]
pub struct ChoiceView<'a> {
    pub index: Option<&'a Value>,
    /// `None` when absent, `null` or not an object.
    pub message: Option<MessageView<'a>>,
    /// As given, `null` included.
    pub finish_reason: Option<&'a Value>,
    /// A stream reassembly's finish reasons in arrival order (absent from a buffered body).
    pub finish_reasons: Option<&'a Value>,
}

impl ChoiceRead for TypedChoice {
    type View<'a> = ChoiceView<'a>;

    fn scan(scan: &mut Scan) -> Option<TypedChoice> {
        let (index, message, finish_reason) = scan_choice(scan, "message", json_scan::present)?;
        Some(TypedChoice {
            index,
            message,
            finish_reason,
        })
    }

    fn typed_view(&self) -> ChoiceView<'_> {
        ChoiceView {
            index: self.index.as_ref(),
            message: self.message.as_ref().map(MessageView::typed),
            finish_reason: self.finish_reason.as_ref(),
            finish_reasons: None,
        }
    }

    fn tree_view(choice: &Value) -> ChoiceView<'_> {
        let message = choice.get("message").and_then(Value::as_object);
        ChoiceView {
            index: choice.get("index"),
            message: message.map(MessageView::tree),
            finish_reason: choice.get("finish_reason"),
            finish_reasons: choice.get("finish_reasons"),
        }
    }
}
