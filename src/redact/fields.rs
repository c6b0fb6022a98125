//! Credential-named request body fields: string and number values of fields named like
//! credentials (`api_key`, `client_secret`, `password`, ...) are replaced by [`REDACTED`]
//! wherever they sit, outside `tools`, `functions` and `response_format`, at most
//! [`MAX_BODY_DEPTH`] deep.
//!
//! Input: a request body parsed as JSON, from [`super::Redactor::body`]. Output: the body
//! with those values replaced, and `body:<pointer>` entries (the first [`MAX_LISTED`], then one
//! `body:...`) in the `redacted` list.

use serde_json::Value;

use super::{REDACTED, note, param_name};

/// Body field names (lowercase, `-` read as `_`) that hold credentials when they contain one
/// of these; narrower than [`super::SECRET_FRAGMENTS`], since `max_tokens` and `prompt_cache_key` are
/// ordinary request fields that replay matching and `check` need.
const SECRET_BODY_FRAGMENTS: &[&str] = &[
    "api_key",
    "apikey",
    "secret",
    "password",
    "passwd",
    "authorization",
    "credential",
    "private_key",
    "access_token",
    "refresh_token",
    "id_token",
    "auth_token",
    "session_token",
    "bearer",
];
/// Whole field names (after decoding) that hold credentials.
const SECRET_BODY_NAMES: &[&str] = &["token", "pwd", "pass", "jwt", "key"];
/// Top-level request fields never walked for credential-named fields: they hold schemas.
const SCHEMA_FIELDS: &[&str] = &["tools", "functions", "response_format"];
/// Nesting walked in a request body; deeper values are left as they are.
const MAX_BODY_DEPTH: usize = 32;
/// Credential-named body fields listed one by one in `redacted`; the rest as `body:...`.
const MAX_LISTED: usize = 32;

/// Replaces credential-named fields' scalar values in `body`.
pub fn redact(body: &mut Value, redacted: &mut Vec<String>) {
    let mut listed = 0usize;
    // Each entry: the value, its JSON pointer, whether the field it sits under (its own name,
    // or the array's for an item) names a secret, and its depth. The verdict is taken once
    // per field name, when it is pushed.
    let mut stack: Vec<(&mut Value, String, bool, usize)> = Vec::new();
    if let Value::Object(fields) = body {
        for (name, value) in fields.iter_mut() {
            if !SCHEMA_FIELDS.contains(&name.as_str()) {
                let secret = secret_body_field(name);
                stack.push((value, child_pointer("", name), secret, 1));
            }
        }
    }
    while let Some((value, pointer, secret, depth)) = stack.pop() {
        match value {
            Value::String(_) | Value::Number(_) => {
                if secret && value.as_str() != Some(REDACTED) {
                    *value = Value::String(REDACTED.to_string());
                    listed += 1;
                    match listed.cmp(&MAX_LISTED) {
                        std::cmp::Ordering::Less => note(redacted, format!("body:{pointer}")),
                        std::cmp::Ordering::Equal => note(redacted, "body:...".to_string()),
                        std::cmp::Ordering::Greater => {}
                    }
                }
            }
            _ if depth >= MAX_BODY_DEPTH => {}
            Value::Object(fields) => {
                for (child_name, child) in fields.iter_mut() {
                    let child_secret = secret_body_field(child_name);
                    let pointer = child_pointer(&pointer, child_name);
                    stack.push((child, pointer, child_secret, depth + 1));
                }
            }
            Value::Array(items) => {
                for (index, child) in items.iter_mut().enumerate() {
                    let pointer = child_pointer(&pointer, &index.to_string());
                    stack.push((child, pointer, secret, depth + 1));
                }
            }
            Value::Null | Value::Bool(_) => {}
        }
    }
}

/// `<parent>/<name>` with `~` and `/` in the name escaped (RFC 6901), built without `format!`.
fn child_pointer(parent: &str, name: &str) -> String {
    let mut pointer = String::with_capacity(parent.len() + 1 + name.len());
    pointer.push_str(parent);
    pointer.push('/');
    if name.contains(['~', '/']) {
        pointer.push_str(&escape(name));
    } else {
        pointer.push_str(name);
    }
    pointer
}

fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

fn secret_body_field(name: &str) -> bool {
    // Most names need no decoding: no escapes, no `+`, no `-`, no capitals.
    let decoded;
    let name = if name
        .bytes()
        .any(|b| matches!(b, b'%' | b'+' | b'-' | b'A'..=b'Z'))
    {
        decoded = param_name(name);
        decoded.as_str()
    } else {
        name
    };
    SECRET_BODY_FRAGMENTS.iter().any(|f| name.contains(f)) || SECRET_BODY_NAMES.contains(&name)
}

/// Whether a request body's bytes may hold a credential-named field, so that it must be parsed
/// and walked: one of the fragments in any letter case (with `-` for `_`), one of the whole
/// names in quotes, or a `\u` escape or `%` that could spell one. Conservative: a body that
/// mentions `password` in a message is walked for nothing, never the other way round. Most
/// bodies hold none of these, and then their recording skips a parse, a walk and a re-serialise.
pub fn may_hold_secret(raw: &[u8]) -> bool {
    static PATTERNS: std::sync::LazyLock<Option<aho_corasick::AhoCorasick>> =
        std::sync::LazyLock::new(|| {
            let mut patterns: Vec<String> = vec!["\\u".into(), "%".into()];
            for fragment in SECRET_BODY_FRAGMENTS {
                // Every spelling with `-` or `_` at each `_` (names are compared with `-` read
                // as `_`).
                let mut spellings = vec![String::new()];
                for c in fragment.chars() {
                    if c == '_' {
                        spellings = spellings
                            .into_iter()
                            .flat_map(|s| [format!("{s}_"), format!("{s}-")])
                            .collect();
                    } else {
                        spellings.iter_mut().for_each(|s| s.push(c));
                    }
                }
                patterns.extend(spellings);
            }
            patterns.extend(SECRET_BODY_NAMES.iter().map(|name| format!("\"{name}\"")));
            aho_corasick::AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .kind(Some(aho_corasick::AhoCorasickKind::DFA))
                .build(patterns)
                .ok()
        });
    PATTERNS
        .as_ref()
        .is_none_or(|patterns| patterns.is_match(raw))
}
