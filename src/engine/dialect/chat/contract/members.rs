//! The members of a Chat response object the contract reads: `error`, `usage` and `choices`
//! (`null` counts as absent), and whether the object was one at all. A buffered
//! `chat.completion` and a `chat.completion.chunk` are both read this way.
//!
//! Input: the JSON text (a buffered body, an SSE event's data) or a tree already parsed. Output:
//! [`Members`]. The typed read skips every other member (`id`, `model`, `created`,
//! `system_fingerprint`...) as JSON without building it into a tree and dropping it again:
//! callgrind (`bench/profile full 1000`) measured ~39.0k → ~33.7k instructions per SSE event, and
//! 41.9k → 35–37k per buffered verdict. It refuses what a full `Value` reads differently (not an
//! object, a member given twice); the callers then parse a tree and take [`Members::of`] it, so
//! verdicts are those of a full `Value`.

use serde_json::Value;

use crate::engine::dialect::common;

/// What the contract reads of a response object.
#[derive(Debug)]
pub struct Members {
    pub object: bool,
    pub error: Option<Value>,
    pub usage: Option<Value>,
    pub choices: Option<Value>,
}

#[derive(serde::Deserialize)]
struct Typed {
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    choices: Option<Value>,
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
            choices: typed.choices,
        })
    }

    /// The members of a tree already parsed.
    pub fn of(mut value: Value) -> Members {
        Members {
            object: value.is_object(),
            error: common::take_member(&mut value, "error"),
            usage: common::take_member(&mut value, "usage"),
            choices: common::take_member(&mut value, "choices"),
        }
    }
}
