//! A Chat response object as the contract reads it, typed or from a tree: its `error`, `usage`
//! and `choices` (`null` counts as absent) and whether it was an object at all. A buffered
//! document ([`super::members::Members`]) and a stream chunk ([`super::chunk::Chunk`]) differ
//! only in what one choice holds, which [`ChoiceRead`] says.
//!
//! Input: JSON text, or a tree already parsed. Output: [`Object`], whose choices the rules walk
//! as the choice type's view. The typed read refuses what a full `Value` reads differently (not
//! an object, a member given twice, anything the choice type refuses); the caller then parses a
//! tree and takes [`Object::of`] it, so verdicts are those of a full `Value`.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::engine::dialect::common;

/// One choice read typed, and how either read of it is viewed.
pub trait ChoiceRead: DeserializeOwned {
    type View<'a>
    where
        Self: 'a;

    fn typed_view(&self) -> Self::View<'_>;

    /// The view of a tree's choice (any JSON value: one that is not an object has no members).
    fn tree_view(choice: &Value) -> Self::View<'_>;
}

/// What the contract reads of a response object whose choices are read as `C`.
#[derive(Debug)]
pub struct Object<C> {
    /// Whether it was a JSON object (a pointer to `/choices` needs one).
    pub object: bool,
    pub error: Option<Value>,
    pub usage: Option<Value>,
    choices: Choices<C>,
}

#[derive(Debug)]
enum Choices<C> {
    Typed(Option<Vec<C>>),
    Tree(Option<Value>),
}

#[derive(Debug, Deserialize)]
#[serde(bound(deserialize = "C: DeserializeOwned"))]
struct Typed<C> {
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    choices: Option<Vec<C>>,
}

impl<C: ChoiceRead> Object<C> {
    /// The typed read of `text`; `None` when it refuses (see the module doc) or `text` is not
    /// JSON. Text, not bytes: serde_json then skips checking each string it reads for UTF-8
    /// (~90 instructions per string, ~1.3k per SSE event; callgrind, `bench/profile full`).
    pub fn typed(text: &str) -> Option<Object<C>> {
        // A derived struct would also accept an array of its members: objects only.
        if text.trim_ascii_start().as_bytes().first() != Some(&b'{') {
            return None;
        }
        let typed = serde_json::from_str::<Typed<C>>(text).ok()?;
        Some(Object {
            object: true,
            error: typed.error,
            usage: typed.usage,
            choices: Choices::Typed(typed.choices),
        })
    }

    /// The members of a tree already parsed.
    pub fn of(mut value: Value) -> Object<C> {
        Object {
            object: value.is_object(),
            error: common::take_member(&mut value, "error"),
            usage: common::take_member(&mut value, "usage"),
            choices: Choices::Tree(common::take_member(&mut value, "choices")),
        }
    }

    /// The choices, in array order; `None` when `choices` is absent, `null` or not an array.
    pub fn choices(&self) -> Option<impl Iterator<Item = C::View<'_>>> {
        let (typed, tree): (&[C], &[Value]) = match &self.choices {
            Choices::Typed(choices) => (choices.as_ref()?, &[]),
            Choices::Tree(choices) => (&[], choices.as_ref()?.as_array()?),
        };
        let typed = typed.iter().map(C::typed_view);
        Some(typed.chain(tree.iter().map(C::tree_view)))
    }
}
