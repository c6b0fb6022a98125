//! How far a request body is from a recorded one, for the miss message.
//!
//! Input: two parsed bodies (ignores removed). Output: a [`Difference`]: the JSON pointers where
//! they differ (a scalar that differs, or a member or element present on one side only, named
//! once), how many leaves those places hold (a missing message of five fields weighs five, not
//! one), and how many arrays present on both sides have different lengths. A recording of the
//! previous turn of an agent loop is a prefix of the request: its `messages` array is shorter,
//! so it ranks behind a recording of the same turn that differs in a few leaves.

use serde_json::Value;

use super::pattern::escape;

/// Pointers kept per comparison; the count goes on past it.
pub const MAX_KEPT: usize = 64;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Difference {
    /// The first [`MAX_KEPT`] differing pointers, in document order (object keys sorted).
    pub pointers: Vec<String>,
    /// All differing pointers, including those past [`MAX_KEPT`].
    pub total: usize,
    /// Leaves under the differing places (a scalar or an empty container counts one).
    pub leaves: usize,
    /// Arrays at the same pointer on both sides whose lengths differ.
    pub length_mismatches: usize,
}

impl Difference {
    fn push(&mut self, at: &str, leaves: usize) {
        if self.pointers.len() < MAX_KEPT {
            self.pointers.push(at.to_owned());
        }
        self.total += 1;
        self.leaves += leaves;
    }
}

/// Where `recorded` and `sent` differ.
pub fn compare(recorded: &Value, sent: &Value) -> Difference {
    let mut out = Difference::default();
    diff_into(recorded, sent, &mut String::new(), &mut out);
    out
}

fn diff_into(a: &Value, b: &Value, at: &mut String, out: &mut Difference) {
    match (a, b) {
        (Value::Object(left), Value::Object(right)) => {
            let mut keys: Vec<&String> = left.keys().chain(right.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let mark = at.len();
                at.push('/');
                at.push_str(&escape(key));
                match (left.get(key), right.get(key)) {
                    (Some(x), Some(y)) => diff_into(x, y, at, out),
                    (x, y) => out.push(at, x.or(y).map_or(1, leaves)),
                }
                at.truncate(mark);
            }
        }
        (Value::Array(left), Value::Array(right)) => {
            if left.len() != right.len() {
                out.length_mismatches += 1;
            }
            for index in 0..left.len().max(right.len()) {
                let mark = at.len();
                at.push('/');
                at.push_str(&index.to_string());
                match (left.get(index), right.get(index)) {
                    (Some(x), Some(y)) => diff_into(x, y, at, out),
                    (x, y) => out.push(at, x.or(y).map_or(1, leaves)),
                }
                at.truncate(mark);
            }
        }
        (x, y) if x == y => {}
        (x, y) => out.push(at, leaves(x).max(leaves(y))),
    }
}

/// Scalars and empty containers under `value`.
fn leaves(value: &Value) -> usize {
    match value {
        Value::Object(map) if !map.is_empty() => map.values().map(leaves).sum(),
        Value::Array(items) if !items.is_empty() => items.iter().map(leaves).sum(),
        _ => 1,
    }
}

/// Wildcard `--ignore` patterns that cover two or more of `pointers` which differ only in
/// array indexes (each index token becomes `*`), in order of first appearance.
pub fn wildcard_suggestions(pointers: &[String]) -> Vec<String> {
    let mut patterns: Vec<(String, usize)> = Vec::new();
    for pointer in pointers {
        let pattern: Vec<&str> = pointer
            .split('/')
            .map(
                |token| match token.bytes().all(|b| b.is_ascii_digit()) && !token.is_empty() {
                    true => "*",
                    false => token,
                },
            )
            .collect();
        let pattern = pattern.join("/");
        if pattern == *pointer {
            continue;
        }
        match patterns.iter_mut().find(|(known, _)| *known == pattern) {
            Some((_, count)) => *count += 1,
            None => patterns.push((pattern, 1)),
        }
    }
    patterns
        .into_iter()
        .filter(|(_, count)| *count >= 2)
        .map(|(pattern, _)| pattern)
        .collect()
}
