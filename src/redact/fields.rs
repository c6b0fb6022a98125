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
/// Top-level request fields never walked for credential-named fields: they hold schemas.
const SCHEMA_FIELDS: &[&str] = &["tools", "functions", "response_format"];
/// Nesting walked in a request body; deeper values are left as they are.
const MAX_BODY_DEPTH: usize = 32;
/// Credential-named body fields listed one by one in `redacted`; the rest as `body:...`.
const MAX_LISTED: usize = 32;

/// Replaces credential-named fields' scalar values in `body`.
pub fn redact(body: &mut Value, redacted: &mut Vec<String>) {
    let mut listed = 0usize;
    // (value, its JSON pointer, the field name it sits under, depth)
    let mut stack: Vec<(&mut Value, String, String, usize)> = Vec::new();
    if let Value::Object(fields) = body {
        for (name, value) in fields.iter_mut() {
            if !SCHEMA_FIELDS.contains(&name.as_str()) {
                stack.push((value, format!("/{}", escape(name)), name.clone(), 1));
            }
        }
    }
    while let Some((value, pointer, name, depth)) = stack.pop() {
        match value {
            Value::String(_) | Value::Number(_) => {
                if secret_body_field(&name) && value.as_str() != Some(REDACTED) {
                    *value = Value::String(REDACTED.to_string());
                    // The list says a value was there; thousands of entries would say
                    // nothing more and cost quadratic time.
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
                    let child_pointer = format!("{pointer}/{}", escape(child_name));
                    stack.push((child, child_pointer, child_name.clone(), depth + 1));
                }
            }
            Value::Array(items) => {
                // Items of `"api_keys": [...]` are named by the array's field.
                for (index, child) in items.iter_mut().enumerate() {
                    stack.push((child, format!("{pointer}/{index}"), name.clone(), depth + 1));
                }
            }
            Value::Null | Value::Bool(_) => {}
        }
    }
}

/// A JSON pointer segment (`~` → `~0`, `/` → `~1`).
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// Whether a request body field's name is a credential's.
fn secret_body_field(name: &str) -> bool {
    let name = param_name(name);
    SECRET_BODY_FRAGMENTS.iter().any(|f| name.contains(f))
        || matches!(name.as_str(), "token" | "pwd" | "pass" | "jwt" | "key")
}
