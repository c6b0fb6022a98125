//! Redaction: the one place that decides which credentials never reach a disk or a log.
//!
//! Input: request and response headers, the request's query string, the request body as JSON,
//! the upstream URL — handed over by the recorder before it queues anything for its writer
//! thread (and reusable for logs). Output: the same data with secret values replaced by
//! [`REDACTED`], plus a list of what was redacted (`header:<name>`, `query:<name>`,
//! `body:<pointer>`) so a reader of a recording knows a value was there.

use std::collections::BTreeSet;

use http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a redacted value is replaced by.
pub const REDACTED: &str = "[REDACTED]";

/// Headers redacted whatever the configuration says (request and response side alike).
pub const DEFAULT_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "api-key",
    "x-api-key",
    "openai-organization",
    "openai-project",
    "cookie",
    "set-cookie",
];

/// Query parameter names (lowercase, `-` read as `_`) that are credentials outright.
const SECRET_PARAMS: &[&str] = &[
    "key",
    "api_key",
    "apikey",
    "token",
    "access_token",
    "auth",
    "sig",
    "signature",
    "password",
    "secret",
    "code",
];
/// Fragments that make any parameter name credential-like (`x_goog_api_key`, `client_secret`).
const SECRET_FRAGMENTS: &[&str] = &["key", "token", "secret", "password", "auth", "credential"];

/// Extra redaction configured by the user, on top of the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedactionConfig {
    /// More header names to redact (case-insensitive).
    #[serde(default)]
    pub headers: Vec<String>,
    /// JSON pointers into the request body whose values are redacted (`/user`, `/metadata`).
    #[serde(default)]
    pub body_pointers: Vec<String>,
}

/// A compiled [`RedactionConfig`]: cheap to share, applied per exchange.
#[derive(Debug, Clone)]
pub struct Redactor {
    headers: BTreeSet<String>,
    body_pointers: Vec<String>,
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor::new(&RedactionConfig::default())
    }
}

impl Redactor {
    pub fn new(config: &RedactionConfig) -> Redactor {
        let RedactionConfig {
            headers,
            body_pointers,
        } = config;
        let headers = DEFAULT_HEADERS
            .iter()
            .map(|name| name.to_string())
            .chain(headers.iter().map(|name| name.trim().to_ascii_lowercase()))
            .collect();
        Redactor {
            headers,
            body_pointers: body_pointers.clone(),
        }
    }

    /// Whether a header's value must never be written down.
    pub fn is_secret_header(&self, name: &str) -> bool {
        self.headers.contains(&name.to_ascii_lowercase())
    }

    /// Whether the request body has pointers to redact (a body that is not JSON then cannot be
    /// kept at all, since its secret could not be found in it).
    pub fn has_body_pointers(&self) -> bool {
        !self.body_pointers.is_empty()
    }

    /// Headers as `(lowercase name, value)` pairs in order, secrets replaced. Values that are
    /// not UTF-8 are kept lossily: a recording is for reading, not for re-sending byte-exact.
    pub fn headers(&self, map: &HeaderMap, redacted: &mut Vec<String>) -> Vec<(String, String)> {
        map.iter()
            .map(|(name, value)| {
                let name = name.as_str().to_string();
                if self.is_secret_header(&name) {
                    note(redacted, format!("header:{name}"));
                    (name, REDACTED.to_string())
                } else {
                    (name, String::from_utf8_lossy(value.as_bytes()).into_owned())
                }
            })
            .collect()
    }

    /// Replaces the values at the configured pointers; a pointer that matches nothing is skipped.
    pub fn body(&self, body: &mut Value, redacted: &mut Vec<String>) {
        for pointer in &self.body_pointers {
            if let Some(value) = body.pointer_mut(pointer) {
                *value = Value::String(REDACTED.to_string());
                note(redacted, format!("body:{pointer}"));
            }
        }
    }
}

/// A query string with credential-like parameter values replaced; order and the rest kept.
/// `key=sk-1&n=2` → `key=[REDACTED]&n=2`.
pub fn query(query: &str, redacted: &mut Vec<String>) -> String {
    query
        .split('&')
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            if !value.is_empty() && is_secret_param(name) {
                note(redacted, format!("query:{name}"));
                format!("{name}={REDACTED}")
            } else {
                pair.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// Whether a query parameter name looks like a credential. Over-redacting a harmless
/// `monkey=1` is the cheap mistake; leaking `x-goog-api-key` is the expensive one.
pub fn is_secret_param(name: &str) -> bool {
    let name = percent_decode(name).to_ascii_lowercase().replace('-', "_");
    SECRET_PARAMS.contains(&name.as_str()) || SECRET_FRAGMENTS.iter().any(|f| name.contains(f))
}

/// A URL without user-info (`https://u:p@host/x` → `https://host/x`) and with secret query
/// parameters redacted.
pub fn url(url: &str, redacted: &mut Vec<String>) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let host = match authority.rsplit_once('@') {
        Some((_userinfo, host)) => {
            note(redacted, "upstream:userinfo".to_string());
            host
        }
        None => authority,
    };
    let tail = match tail.split_once('?') {
        Some((path, q)) => format!("{path}?{}", query(q, redacted)),
        None => tail.to_string(),
    };
    match scheme {
        Some(scheme) => format!("{scheme}://{host}{tail}"),
        None => format!("{host}{tail}"),
    }
}

fn note(redacted: &mut Vec<String>, entry: String) {
    if !redacted.contains(&entry) {
        redacted.push(entry);
    }
}

/// `%5F` → `_`; invalid escapes are kept as written.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(if byte == b'+' { b' ' } else { byte });
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
#[path = "redact_tests.rs"]
mod tests;
