//! What reassembly state weighs, as the engine counts it: every dialect adds to its stream's
//! count as it keeps something (a choice, a tool call, a block, an item; their keys, ids,
//! names, argument text, and the JSON values it keeps whole), and the exchange stops
//! reassembling past `max_reassembled` (`too_large`); the proxy charges the same count to
//! `inspect.max_memory` (`memory_budget`).
//!
//! The count is an estimate made in time proportional to what is kept (never a walk of the
//! whole state): text by its length, a kept JSON value by a walk of that value, and each entry
//! by [`ENTRY`], which also covers its share of what the end of the stream builds from it
//! (the buffered-equivalent document, the report's outcome). `tests/engine_cost` checks the
//! estimate against the resident memory each adversarial shape really takes.

use serde_json::Value;

/// What one reassembled entry costs beyond its text: its struct and map node while the stream
/// runs, and its share of the document and the report built at the end.
pub const ENTRY: usize = 4096;

/// What judging a buffered body takes per byte of it, at its end: the members the rules read
/// (a tree where the typed read refuses), each call's parsed arguments, the outcomes.
pub const BUFFERED_PER_BYTE: usize = 8;

/// The estimated heap of a JSON value kept whole (its nodes, keys and strings).
pub fn value(value: &Value) -> usize {
    /// A `Value` node, and a map entry's key and node share.
    const NODE: usize = 32;
    const MEMBER: usize = 64;
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => NODE,
        Value::String(text) => NODE + text.len(),
        Value::Array(items) => NODE + items.iter().map(self::value).sum::<usize>(),
        Value::Object(members) => {
            NODE + members
                .iter()
                .map(|(key, member)| MEMBER + key.len() + self::value(member))
                .sum::<usize>()
        }
    }
}

/// An optional kept value.
pub fn maybe(kept: Option<&Value>) -> usize {
    kept.map_or(0, value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_weighs_its_nodes_keys_and_strings() {
        assert_eq!(value(&json!(null)), 32);
        assert_eq!(value(&json!("abcd")), 36);
        assert_eq!(value(&json!([1, 2])), 96);
        assert_eq!(value(&json!({"ab": "c"})), 32 + 64 + 2 + 33);
        assert_eq!(maybe(None), 0);
    }
}
