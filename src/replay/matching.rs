//! Deciding whether a request is "the same" as a recorded one: pure functions, no I/O.
//!
//! Input: a request's method, path and body bytes (from the replay service, or a recording's
//! meta line at load time) and the [`MatchRules`] (JSON pointers to ignore). Output: a
//! [`MatchKey`] that is equal for requests that should get the same recording, and, for a miss,
//! the JSON pointers where two request bodies differ ([`differing_pointers`]).
//!
//! Bodies are compared as canonical JSON: object keys sorted, no whitespace, so the key order a
//! client library happens to use does not matter. Ignored pointers are removed from both sides
//! before comparing (`/user` removes the `user` key; `/messages/0/name` reaches inside arrays).
//! A body that is not JSON is compared byte for byte; a recording whose request body was not
//! captured matches any body on its method and path.

use serde_json::Value;

/// Fields that do not change what a provider answers, or that test suites vary on every run:
/// Chat Completions', the Responses API's and Anthropic Messages' (`metadata.user_id`) alike (`store` and `prompt_cache_key` exist in
/// both; the Agents SDK and Codex set them per run).
pub const DEFAULT_IGNORED: [&str; 6] = [
    "/user",
    "/metadata",
    "/seed",
    "/stream_options",
    "/store",
    "/prompt_cache_key",
];

/// Which parts of a request body are left out of matching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchRules {
    /// RFC 6901 JSON pointers, removed from both bodies before they are compared.
    pub ignored: Vec<String>,
}

impl Default for MatchRules {
    fn default() -> Self {
        MatchRules {
            ignored: DEFAULT_IGNORED.iter().map(|p| (*p).to_owned()).collect(),
        }
    }
}

/// A pointer that is not a valid RFC 6901 JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a JSON pointer: it must be empty or start with '/' (e.g. /model)")]
pub struct BadPointer(pub String);

/// The part of a key that comes from the body.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BodyKey {
    /// Canonical JSON text of the body after removing ignored pointers.
    Json(String),
    /// A body that is not JSON, byte for byte (an empty body is `Raw([])`).
    Raw(Vec<u8>),
    /// The recording did not capture its request body: matches any body.
    Any,
}

/// Requests with equal keys are answered by the same recordings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MatchKey {
    pub method: String,
    pub path: String,
    pub body: BodyKey,
}

impl MatchRules {
    /// Rules ignoring the defaults plus `extra`; `with_defaults = false` drops the defaults.
    pub fn new(with_defaults: bool, extra: &[String]) -> Result<MatchRules, BadPointer> {
        let mut ignored: Vec<String> = if with_defaults {
            MatchRules::default().ignored
        } else {
            Vec::new()
        };
        for pointer in extra {
            if !pointer.is_empty() && !pointer.starts_with('/') {
                return Err(BadPointer(pointer.clone()));
            }
            if !ignored.contains(pointer) {
                ignored.push(pointer.clone());
            }
        }
        Ok(MatchRules { ignored })
    }

    /// The JSON body with every ignored pointer removed; `None` when `body` is not JSON.
    pub fn normalize(&self, body: &[u8]) -> Option<Value> {
        let mut value: Value = serde_json::from_slice(body).ok()?;
        for pointer in &self.ignored {
            remove_pointer(&mut value, pointer);
        }
        Some(value)
    }

    /// The key for a request; `body = None` means "not captured" (recordings only).
    pub fn key(&self, method: &str, path: &str, body: Option<&[u8]>) -> MatchKey {
        let body = match body {
            None => BodyKey::Any,
            Some(bytes) => match self.normalize(bytes) {
                Some(value) => BodyKey::Json(canonical(&value)),
                None => BodyKey::Raw(bytes.to_vec()),
            },
        };
        MatchKey {
            method: method.to_ascii_uppercase(),
            path: path.to_owned(),
            body,
        }
    }
}

/// Compact JSON with object keys in sorted order, whatever order the map keeps them in.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Remove the value `pointer` names, if it exists. The empty pointer (the whole document)
/// turns the document into `null`, which makes every JSON body equal.
pub fn remove_pointer(value: &mut Value, pointer: &str) {
    if pointer.is_empty() {
        *value = Value::Null;
        return;
    }
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let last = unescape(last);
    let target = if parent.is_empty() {
        Some(value)
    } else {
        value.pointer_mut(parent)
    };
    match target {
        Some(Value::Object(map)) => {
            map.remove(&last);
        }
        Some(Value::Array(items)) => {
            if let Ok(index) = last.parse::<usize>()
                && index < items.len()
            {
                items.remove(index);
            }
        }
        _ => {}
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Every JSON pointer where `a` and `b` differ, deepest first found, in document order: a key
/// present on one side only, an array element past the other's end, or unequal scalars (or
/// values of different types). Equal documents give an empty list.
pub fn differing_pointers(a: &Value, b: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_into(a, b, &mut String::new(), &mut out);
    out
}

fn diff_into(a: &Value, b: &Value, at: &mut String, out: &mut Vec<String>) {
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
                    _ => out.push(at.clone()),
                }
                at.truncate(mark);
            }
        }
        (Value::Array(left), Value::Array(right)) => {
            for index in 0..left.len().max(right.len()) {
                let mark = at.len();
                at.push('/');
                at.push_str(&index.to_string());
                match (left.get(index), right.get(index)) {
                    (Some(x), Some(y)) => diff_into(x, y, at, out),
                    _ => out.push(at.clone()),
                }
                at.truncate(mark);
            }
        }
        (x, y) if x == y => {}
        _ => out.push(if at.is_empty() {
            String::new()
        } else {
            at.clone()
        }),
    }
}

#[cfg(test)]
mod tests;
