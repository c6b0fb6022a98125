//! The members of a `chat.completion` document the contract reads: its `error`, `usage` and
//! `choices` (`null` counts as absent) and whether it was an object at all; each choice's
//! `index`, `message`, `finish_reason` (and, in a stream's reassembly, `finish_reasons`); each
//! message's `content`, `tool_calls` and `function_call`. A buffered body and a stream's
//! reassembled document are both read this way.
//!
//! Input: the JSON text of a buffered body, or a tree already parsed. Output: [`Members`],
//! whose choices the contract walks as [`ChoiceView`]s. The typed read skips every other member
//! (`id`, `model`, `created`, `logprobs`...) as JSON and builds no tree for the choices and
//! messages and their tool calls (a map and a key string per member, dropped again after the
//! verdict); only a call's `arguments` and the `usage` object are trees. It refuses what a full
//! `Value` reads differently (not an object, a member given twice, a choice, message or call
//! that is not an object, `choices` or `tool_calls` that is not an array, see also
//! [`super::view`]); the caller then parses a
//! tree and takes [`Members::of`] it, so verdicts are those of a full `Value` (the tests judge
//! both reads of the same bodies and compare).

use serde::Deserialize;
use serde_json::Value;

use super::view::{Calls, Slot, TypedCall, present};
use crate::engine::dialect::common;

/// What the contract reads of a response object.
#[derive(Debug)]
pub struct Members {
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
struct Typed {
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
    message: Option<TypedMessage>,
    /// `null` is kept: the rule's detail tells it from a missing one.
    #[serde(default, deserialize_with = "present")]
    finish_reason: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct TypedMessage {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<TypedCall>>,
    #[serde(default)]
    function_call: Option<Value>,
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

/// One choice's message (`null` members count as absent).
#[derive(Debug)]
pub struct MessageView<'a> {
    pub content: Option<&'a Value>,
    pub tool_calls: Slot<'a, Calls<'a>>,
    pub function_call: Option<&'a Value>,
}

impl Members {
    /// The typed read of `text`; `None` when it refuses (see the module doc) or `text` is not
    /// JSON.
    pub fn typed(text: &[u8]) -> Option<Members> {
        // A derived struct would also accept an array of its members: objects only.
        if text.trim_ascii_start().first() != Some(&b'{') {
            return None;
        }
        let typed = serde_json::from_slice::<Typed>(text).ok()?;
        Some(Members {
            object: true,
            error: typed.error,
            usage: typed.usage,
            choices: Choices::Typed(typed.choices),
        })
    }

    /// The members of a tree already parsed.
    pub fn of(mut value: Value) -> Members {
        Members {
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
        message: choice.message.as_ref().map(|message| MessageView {
            content: message.content.as_ref(),
            tool_calls: match &message.tool_calls {
                None => Slot::Absent,
                Some(items) => Slot::Present(Calls::Typed(items)),
            },
            function_call: message.function_call.as_ref(),
        }),
        finish_reason: choice.finish_reason.as_ref(),
        finish_reasons: None,
    }
}

fn tree_choice(choice: &Value) -> ChoiceView<'_> {
    let message = choice.get("message").and_then(Value::as_object);
    ChoiceView {
        index: choice.get("index"),
        message: message.map(|message| {
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
        }),
        finish_reason: choice.get("finish_reason"),
        finish_reasons: choice.get("finish_reasons"),
    }
}
