//! Deciding whether a request is "the same" as a recorded one: pure functions, no I/O.
//!
//! Input: a request's method, path and body bytes (from the replay service, or a recording's
//! meta line at load time) and the [`MatchRules`] (JSON pointers to ignore, how tool-call ids
//! compare). Output: a [`MatchKey`] that is equal for requests that should get the same
//! recording, and, for a miss, how far two request bodies are apart ([`diff::compare`]).
//!
//! Bodies are compared as canonical JSON: object keys sorted, no whitespace, so the key order a
//! client library happens to use does not matter. Ignored pointers are blanked on both sides
//! before comparing (`/user` removes the `user` key; `/messages/0/name` reaches inside arrays;
//! `/messages/*/tool_calls/*/id` reaches every message and call, see [`pattern`]). With
//! [`ToolCallIds::Loose`] tool-call ids are renamed by order of appearance first
//! ([`tool_call_ids`]). A body that is not JSON is compared byte for byte; a recording whose
//! request body was not captured matches any body on its method and path.
//!
//! A JSON-RPC body (MCP) is matched by method and params, without the client's `id` and
//! progress token (its own counters); request headers are never part of the key, so MCP's
//! `Mcp-Session-Id` and `MCP-Protocol-Version` cannot break a match.
//!
//! The query string is part of the key too, without its credentials ([`query_key`]): Gemini's
//! `?alt=sse` is what makes the same request a server-sent-event stream rather than a JSON
//! array, so the two must not answer each other; its `key=` (redacted in a recording, in clear
//! in the request) must not make a miss.

pub mod diff;
pub mod pattern;
pub mod tool_call_ids;

use serde_json::Value;

use crate::redact::REDACTED;
pub use diff::{Difference, compare};
pub use pattern::{BadPointer, Pattern};
pub use tool_call_ids::ToolCallIds;

/// Fields that do not change what a provider answers, or that test suites vary on every run:
/// Chat Completions', the Responses API's and Anthropic Messages' (`metadata.user_id`) alike
/// (`store`, `prompt_cache_key` and `safety_identifier` exist in both OpenAI APIs; the Agents
/// SDK and Codex set them per run).
pub const DEFAULT_IGNORED: [&str; 7] = [
    "/user",
    "/metadata",
    "/seed",
    "/stream_options",
    "/store",
    "/prompt_cache_key",
    "/safety_identifier",
];

/// Which parts of a request body are left out of matching, and how tool-call ids compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchRules {
    /// The ignored pointers as given, for messages.
    ignored: Vec<String>,
    /// The same, parsed; blanked on both bodies before they are compared.
    patterns: Vec<Pattern>,
    pub tool_call_ids: ToolCallIds,
}

impl Default for MatchRules {
    fn default() -> Self {
        let mut rules = MatchRules {
            ignored: Vec::new(),
            patterns: Vec::new(),
            tool_call_ids: ToolCallIds::Strict,
        };
        for pointer in DEFAULT_IGNORED {
            if let Ok(pattern) = Pattern::parse(pointer) {
                rules.ignored.push(pointer.to_owned());
                rules.patterns.push(pattern);
            }
        }
        rules
    }
}

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
    /// The query's parameters without credentials, sorted (see [`query_key`]).
    pub query: String,
    pub body: BodyKey,
}

impl MatchRules {
    /// Rules ignoring the defaults plus `extra`; `with_defaults = false` drops the defaults.
    /// Tool-call ids compare strictly (see [`MatchRules::with_tool_call_ids`]).
    pub fn new(with_defaults: bool, extra: &[String]) -> Result<MatchRules, BadPointer> {
        let mut rules = match with_defaults {
            true => MatchRules::default(),
            false => MatchRules {
                ignored: Vec::new(),
                patterns: Vec::new(),
                tool_call_ids: ToolCallIds::Strict,
            },
        };
        for pointer in extra {
            let pattern = Pattern::parse(pointer)?;
            if !rules.ignored.contains(pointer) {
                rules.ignored.push(pointer.clone());
                rules.patterns.push(pattern);
            }
        }
        Ok(rules)
    }

    pub fn with_tool_call_ids(self, tool_call_ids: ToolCallIds) -> MatchRules {
        MatchRules {
            tool_call_ids,
            ..self
        }
    }

    /// The ignored pointers, defaults first, as given.
    pub fn ignored(&self) -> &[String] {
        &self.ignored
    }

    /// The JSON body with every ignored pointer blanked (and tool-call ids renamed when loose);
    /// `None` when `body` is not JSON.
    pub fn normalize(&self, body: &[u8]) -> Option<Value> {
        let mut value: Value = serde_json::from_slice(body).ok()?;
        strip_json_rpc_counters(&mut value);
        for pattern in &self.patterns {
            pattern.remove_from(&mut value);
        }
        if self.tool_call_ids == ToolCallIds::Loose {
            tool_call_ids::canonicalize(&mut value);
        }
        Some(value)
    }

    /// The key for a request without a query; `body = None` means "not captured" (recordings
    /// only).
    pub fn key(&self, method: &str, path: &str, body: Option<&[u8]>) -> MatchKey {
        self.key_with_query(method, path, None, body)
    }

    /// The key for a request with its query (as sent, or as a recording keeps it).
    pub fn key_with_query(
        &self,
        method: &str,
        path: &str,
        query: Option<&str>,
        body: Option<&[u8]>,
    ) -> MatchKey {
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
            query: query_key(query),
            body,
        }
    }
}

/// A JSON-RPC message (MCP: an object with a `jsonrpc` member) without the client's own
/// counters: its `id` (the answer echoes the client's, see [`crate::replay::mcp`]) and
/// `params._meta.progressToken` (`_meta` goes too when nothing else is left in it). Other
/// bodies are untouched: no provider API has a top-level `jsonrpc`.
fn strip_json_rpc_counters(value: &mut Value) {
    let Some(object) = value.as_object_mut() else {
        return;
    };
    if !object.contains_key("jsonrpc") {
        return;
    }
    object.remove("id");
    let Some(params) = object.get_mut("params").and_then(Value::as_object_mut) else {
        return;
    };
    let Some(meta) = params.get_mut("_meta").and_then(Value::as_object_mut) else {
        return;
    };
    meta.remove("progressToken");
    if meta.is_empty() {
        params.remove("_meta");
    }
}

/// A query as matching compares it: the parameters whose name is not credential-like
/// ([`crate::redact::is_secret_param`]) and whose value is not [`REDACTED`], sorted, joined by
/// `&`. `key=AIza...&alt=sse` as sent and `alt=sse&key=[REDACTED]` as recorded are both
/// `alt=sse`.
pub fn query_key(query: Option<&str>) -> String {
    let mut kept: Vec<&str> = query
        .unwrap_or("")
        .split('&')
        .filter(|pair| !pair.is_empty())
        .filter(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            value != REDACTED && !crate::redact::is_secret_param(name)
        })
        .collect();
    kept.sort_unstable();
    kept.join("&")
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

#[cfg(test)]
mod tests;
