//! JSON pointers with a wildcard: the places `--ignore` removes and tool-call ids live.
//!
//! Input: an RFC 6901 pointer whose reference tokens may be `*` (every array index and every
//! object key at that level), e.g. `/messages/*/tool_calls/*/id`. Output: a parsed [`Pattern`]
//! that visits every value it names ([`visit_mut`]) or blanks them ([`Pattern::remove_from`]).
//! RFC 6901 has no wildcard, so tooltap adds one escape: `~2` is a literal `*` (as `~0` is `~`
//! and `~1` is `/`); a `*` inside a longer token (`/a*b`) is refused, because it reads like a
//! glob that would not be one. Every walk visits each value at most once per pattern, so nested
//! wildcards cost one pass over the body, never a product of array lengths.

use serde_json::Value;

/// One reference token of a [`Pattern`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// `*`: every array element and every object member at this level.
    Any,
    /// An object key or an array index, unescaped.
    Key(String),
}

/// A pointer that is not one tooltap accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pointer:?} is not a JSON pointer: {reason}")]
pub struct BadPointer {
    pub pointer: String,
    pub reason: &'static str,
}

/// A parsed pointer; no tokens names the whole document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    pub tokens: Vec<Token>,
}

impl Pattern {
    pub fn parse(pointer: &str) -> Result<Pattern, BadPointer> {
        let bad = |reason| BadPointer {
            pointer: pointer.to_owned(),
            reason,
        };
        if pointer.is_empty() {
            return Ok(Pattern { tokens: Vec::new() });
        }
        let Some(rest) = pointer.strip_prefix('/') else {
            return Err(bad("it must be empty or start with '/' (e.g. /model)"));
        };
        let mut tokens = Vec::new();
        for raw in rest.split('/') {
            if raw == "*" {
                tokens.push(Token::Any);
                continue;
            }
            if raw.contains('*') {
                return Err(bad(
                    "'*' stands for a whole token (e.g. /messages/*/id); write a literal * as ~2",
                ));
            }
            tokens.push(Token::Key(unescape(raw).ok_or_else(|| {
                bad("'~' must be followed by 0 (~), 1 (/) or 2 (*)")
            })?));
        }
        Ok(Pattern { tokens })
    }

    /// Blank every value this pattern names: an object member is removed, an array element
    /// becomes `null` (so the elements after it keep their indexes), the whole document `null`.
    pub fn remove_from(&self, value: &mut Value) {
        let Some((last, parents)) = self.tokens.split_last() else {
            *value = Value::Null;
            return;
        };
        visit_mut(value, parents, &mut |parent| match (parent, last) {
            (Value::Object(map), Token::Any) => map.clear(),
            (Value::Object(map), Token::Key(key)) => {
                map.remove(key);
            }
            (Value::Array(items), Token::Any) => items.fill(Value::Null),
            (Value::Array(items), Token::Key(key)) => {
                if let Some(item) = index(key).and_then(|i| items.get_mut(i)) {
                    *item = Value::Null;
                }
            }
            _ => {}
        });
    }
}

/// Call `f` on every value `tokens` names in `value`, in document order.
pub fn visit_mut(value: &mut Value, tokens: &[Token], f: &mut impl FnMut(&mut Value)) {
    let Some((first, rest)) = tokens.split_first() else {
        f(value);
        return;
    };
    match (value, first) {
        (Value::Object(map), Token::Any) => {
            for child in map.values_mut() {
                visit_mut(child, rest, f);
            }
        }
        (Value::Array(items), Token::Any) => {
            for child in items.iter_mut() {
                visit_mut(child, rest, f);
            }
        }
        (Value::Object(map), Token::Key(key)) => {
            if let Some(child) = map.get_mut(key) {
                visit_mut(child, rest, f);
            }
        }
        (Value::Array(items), Token::Key(key)) => {
            if let Some(child) = index(key).and_then(|i| items.get_mut(i)) {
                visit_mut(child, rest, f);
            }
        }
        _ => {}
    }
}

/// An array index as RFC 6901 writes one: digits, no leading zero.
fn index(token: &str) -> Option<usize> {
    let digits = token.bytes().all(|b| b.is_ascii_digit());
    let canonical = token == "0" || !token.starts_with('0');
    (digits && canonical && !token.is_empty())
        .then(|| token.parse().ok())
        .flatten()
}

fn unescape(token: &str) -> Option<String> {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c != '~' {
            out.push(c);
            continue;
        }
        out.push(match chars.next() {
            Some('0') => '~',
            Some('1') => '/',
            Some('2') => '*',
            _ => return None,
        });
    }
    Some(out)
}

/// A key as a pointer token: `~`, `/` and `*` escaped.
pub fn escape(token: &str) -> String {
    token
        .replace('~', "~0")
        .replace('/', "~1")
        .replace('*', "~2")
}
