//! Redaction: the one place that decides which credentials never reach a disk or a log.
//!
//! Input: request and response headers, the request's query string, the request body as JSON,
//! the upstream URL — handed over by the recorder before it queues anything for its writer
//! thread (and reusable for logs). Output: the same data with secret values replaced by
//! [`REDACTED`], plus a list of what was redacted (`header:<name>`, `query:<name>`,
//! `body:<pointer>`) so a reader of a recording knows a value was there.
//!
//! Redaction is by pattern, not by list: a header or query parameter whose name contains
//! `key`, `token`, `auth`, `secret`, `password`, `signature`, `cookie`, `session` or
//! `credential` (case-insensitive), or holds the word `pwd`, `pass`, `passwd`, `jwt`, `bearer`
//! or `sig` (`x-pwd`, `X-Bearer`), is a credential unless allowed by name (`redact.allow_headers`,
//! `redact.allow_query_params`; the ratelimit `*-tokens` counters are allowed by default).
//! Request-body fields named like credentials (`api_key`, `client_secret`, `password`,
//! `hf_token`, `openai_key`, `auth`, `sessionid`) have their string or number values redacted
//! wherever they sit, at any depth, outside `tools`, `functions` and
//! `response_format` (schemas describe credentials, they do not hold them). A response header
//! whose value repeats a request credential (an upstream echoing the key) is redacted too.

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

/// Fragments that make a header or query parameter name credential-like
/// (`x-goog-api-key`, `X-Amz-Security-Token`, `Helicone-Auth`, `client_secret`).
pub const SECRET_FRAGMENTS: &[&str] = &[
    "key",
    "token",
    "auth",
    "secret",
    "password",
    "signature",
    "cookie",
    "session",
    "credential",
];
/// Words that make a header or query parameter name a credential when they stand whole
/// between `-` or `_` (`x-pwd`, `X-Bearer`, `x_jwt_assertion`, `pass`): as fragments they would
/// catch `bypass` or `signal`.
const SECRET_WORDS: &[&str] = &["sig", "pwd", "pass", "passwd", "jwt", "bearer"];
/// Query parameter names (lowercase, `-` read as `_`) that are credentials outright although
/// no fragment or word matches (OAuth's authorization code).
const SECRET_PARAMS: &[&str] = &["code"];
/// Header names that match a fragment but carry no credential: rate-limit counters, and MCP's
/// session id (it names a conversation; the spec forbids servers to authenticate by it), which
/// is recorded as its pseudonym instead ([`PSEUDONYMOUS_HEADERS`]). Allowed unless configured
/// otherwise.
pub const DEFAULT_ALLOWED_HEADERS: &[&str] = &[
    "x-ratelimit-limit-tokens",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-tokens",
    "mcp-session-id",
];
/// Headers whose values are written as a keyed pseudonym ([`pseudonym`]): MCP's session id is
/// bearer-like on some servers (who holds it continues the session), yet `tooltap check` needs
/// to tell one session from another and `tooltap replay` that a session was minted; the
/// pseudonym keeps both (same id, same pseudonym within a run) and not the id. Configured in
/// `redact.headers`, the value is redacted instead.
pub const PSEUDONYMOUS_HEADERS: &[&str] = &["mcp-session-id"];
/// Request credential values shorter than this are not searched for in response headers.
const MIN_ECHO: usize = 8;

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
    /// Header names never redacted by pattern (the built-in list still applies).
    #[serde(default)]
    pub allow_headers: Vec<String>,
    /// More query parameter names to redact.
    #[serde(default)]
    pub query_params: Vec<String>,
    /// Query parameter names never redacted by pattern.
    #[serde(default)]
    pub allow_query_params: Vec<String>,
}

/// A compiled [`RedactionConfig`]: cheap to share, applied per exchange.
#[derive(Debug, Clone)]
pub struct Redactor {
    headers: BTreeSet<String>,
    allow_headers: BTreeSet<String>,
    query_params: BTreeSet<String>,
    allow_query_params: BTreeSet<String>,
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
            allow_headers,
            query_params,
            allow_query_params,
        } = config;
        let lower = |names: &[String]| -> Vec<String> {
            names
                .iter()
                .map(|n| n.trim().to_ascii_lowercase())
                .collect()
        };
        let params = |names: &[String]| -> BTreeSet<String> {
            names.iter().map(|n| param_name(n.trim())).collect()
        };
        let headers = DEFAULT_HEADERS
            .iter()
            .map(|name| name.to_string())
            .chain(lower(headers))
            .collect();
        let allow_headers = DEFAULT_ALLOWED_HEADERS
            .iter()
            .map(|name| name.to_string())
            .chain(lower(allow_headers))
            .collect();
        Redactor {
            headers,
            allow_headers,
            query_params: params(query_params),
            allow_query_params: params(allow_query_params),
            body_pointers: body_pointers.clone(),
        }
    }

    /// Whether a header's value must never be written down: the built-in and configured lists
    /// always, any other name containing a [`SECRET_FRAGMENTS`] entry unless allowed.
    pub fn is_secret_header(&self, name: &str) -> bool {
        // Header names arrive lowercase from hyper: lower only when needed (no allocation).
        let lowered;
        let name = if name.bytes().any(|b| b.is_ascii_uppercase()) {
            lowered = name.to_ascii_lowercase();
            lowered.as_str()
        } else {
            name
        };
        self.headers.contains(name)
            || ((has_secret_fragment(name) || has_secret_word(name))
                && !self.allow_headers.contains(name))
    }

    /// Whether a query parameter's value must never be written down.
    pub fn is_secret_param(&self, name: &str) -> bool {
        let name = param_name(name);
        self.query_params.contains(&name)
            || (!self.allow_query_params.contains(&name) && secret_param_name(&name))
    }

    /// A query string with credential-like values replaced (see [`query`]).
    pub fn query(&self, text: &str, redacted: &mut Vec<String>) -> String {
        query_with(text, redacted, |name| self.is_secret_param(name))
    }

    /// The values of the request's credential headers (and a bearer token on its own), to
    /// find them echoed back in response headers.
    pub fn secret_values(&self, map: &HeaderMap) -> Vec<String> {
        let mut values = Vec::new();
        for (name, value) in map {
            if !self.is_secret_header(name.as_str()) {
                continue;
            }
            let Ok(text) = value.to_str() else { continue };
            let token = text.split_whitespace().last().unwrap_or(text);
            for candidate in [text, token] {
                if candidate.len() >= MIN_ECHO && !values.iter().any(|v| v == candidate) {
                    values.push(candidate.to_string());
                }
            }
        }
        values
    }

    /// The values of the query's credential parameters (Gemini's `key=`), percent-decoded and
    /// as sent, to find them echoed back in response headers like [`Redactor::secret_values`].
    pub fn query_secret_values(&self, query: &str) -> Vec<String> {
        let mut values = Vec::new();
        for pair in query.split('&') {
            let Some((name, value)) = pair.split_once('=') else {
                continue;
            };
            if !self.is_secret_param(name) {
                continue;
            }
            for candidate in [value.to_string(), percent_decode(value)] {
                if candidate.len() >= MIN_ECHO && !values.contains(&candidate) {
                    values.push(candidate);
                }
            }
        }
        values
    }

    /// Response headers: [`Redactor::headers`], and any value holding one of `secrets`.
    pub fn response_headers(
        &self,
        map: &HeaderMap,
        secrets: &[String],
        redacted: &mut Vec<String>,
    ) -> Vec<(String, String)> {
        let mut out = self.headers(map, redacted);
        for (name, value) in &mut out {
            if value != REDACTED && secrets.iter().any(|s| value.contains(s.as_str())) {
                note(redacted, format!("header:{name}"));
                *value = REDACTED.to_string();
            }
        }
        out
    }

    /// Whether the request body has pointers to redact (a body that is not JSON then cannot be
    /// kept at all, since its secret could not be found in it).
    pub fn has_body_pointers(&self) -> bool {
        !self.body_pointers.is_empty()
    }

    /// Whether a request body that did not parse as JSON must be left out of a recording whole:
    /// body pointers are configured (the secret could not be found in it), or it looks like
    /// JSON (its first byte is `{` or `[`: nested past serde_json's 128 levels, or broken) and
    /// may hold a credential-named field, which no walk could reach. Written as it came, it
    /// would put that credential on disk in clear.
    pub fn drops_unparsed_body(&self, raw: &[u8]) -> bool {
        let looks_like_json = raw
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(|b| matches!(b, b'{' | b'['));
        self.has_body_pointers() || (looks_like_json && fields::may_hold_secret(raw))
    }

    /// A request body as a log line may show it, at most `max` bytes of it: as it came when
    /// nothing in it could be a credential, else parsed and redacted like a recording's body,
    /// else (it does not parse) only its size.
    pub fn body_for_log(&self, raw: &[u8], max: usize) -> String {
        let mut shown = if !self.may_redact_body(raw) {
            String::from_utf8_lossy(&raw[..raw.len().min(max)]).into_owned()
        } else if let Ok(mut value) = serde_json::from_slice::<Value>(raw) {
            self.body(&mut value, &mut Vec::new());
            value.to_string()
        } else {
            return format!(
                "({} bytes, not shown: not JSON, and it may hold a credential)",
                raw.len()
            );
        };
        if shown.len() > max {
            shown.truncate(shown.floor_char_boundary(max));
        }
        shown
    }

    /// A JSON request body as a recording holds it, when redaction changes it: credential-named
    /// fields (and configured pointers) redacted, written compact. `None` when nothing in it is
    /// redacted, or it is not JSON. What replay keys a request by, beside the body as sent.
    pub fn as_recorded(&self, raw: &[u8]) -> Option<Vec<u8>> {
        if !self.may_redact_body(raw) {
            return None;
        }
        let mut value = serde_json::from_slice::<Value>(raw).ok()?;
        let mut redacted = Vec::new();
        self.body(&mut value, &mut redacted);
        if redacted.is_empty() {
            return None;
        }
        serde_json::to_vec(&value).ok()
    }

    /// Whether [`Redactor::body`] could change a body with these bytes: body pointers are
    /// configured, or the bytes may hold a credential-named field (see
    /// `fields::may_hold_secret`). When not, the body can be recorded as it came.
    pub fn may_redact_body(&self, raw: &[u8]) -> bool {
        self.has_body_pointers() || fields::may_hold_secret(raw)
    }

    /// Headers as `(lowercase name, value)` pairs in order, secrets replaced, the values of
    /// [`PSEUDONYMOUS_HEADERS`] by their pseudonyms (redacted when no key). Values that are
    /// not UTF-8 are kept lossily: a recording is for reading, not for re-sending byte-exact.
    pub fn headers(&self, map: &HeaderMap, redacted: &mut Vec<String>) -> Vec<(String, String)> {
        map.iter()
            .map(|(name, value)| {
                let name = name.as_str().to_string();
                if self.is_secret_header(&name) {
                    note(redacted, format!("header:{name}"));
                    (name, REDACTED.to_string())
                } else if PSEUDONYMOUS_HEADERS.contains(&name.as_str()) {
                    let value = pseudonym(value.as_bytes()).unwrap_or_else(|| REDACTED.to_string());
                    (name, value)
                } else {
                    (name, String::from_utf8_lossy(value.as_bytes()).into_owned())
                }
            })
            .collect()
    }

    /// Replaces the values at the configured pointers (a pointer that matches nothing is
    /// skipped), then string and number values of credential-named fields anywhere outside
    /// `tools`, `functions` and `response_format` (see `redact_fields.rs`).
    pub fn body(&self, body: &mut Value, redacted: &mut Vec<String>) {
        for pointer in &self.body_pointers {
            if let Some(value) = body.pointer_mut(pointer) {
                *value = Value::String(REDACTED.to_string());
                note(redacted, format!("body:{pointer}"));
            }
        }
        fields::redact(body, redacted);
    }
}

/// Whether a lowercase header name holds one of [`SECRET_FRAGMENTS`]: one pass of a prebuilt
/// automaton, cheaper than a window scan per fragment, since headers are checked three times per
/// recorded exchange (see docs/benchmarks.md#redact-header-scan).
fn has_secret_fragment(name: &str) -> bool {
    static FRAGMENTS: std::sync::LazyLock<Option<aho_corasick::AhoCorasick>> =
        std::sync::LazyLock::new(|| {
            aho_corasick::AhoCorasick::builder()
                .kind(Some(aho_corasick::AhoCorasickKind::DFA))
                .build(SECRET_FRAGMENTS)
                .ok()
        });
    match FRAGMENTS.as_ref() {
        Some(fragments) => fragments.is_match(name),
        None => SECRET_FRAGMENTS.iter().any(|f| contains(name, f)),
    }
}

/// `needle` in `name`, for the short names and fragments compared here: a plain window scan
/// (the general substring search prepares tables per call, which dominated the header check).
fn contains(name: &str, needle: &str) -> bool {
    let (name, needle) = (name.as_bytes(), needle.as_bytes());
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    name.len() >= needle.len()
        && (0..=name.len() - needle.len())
            .any(|at| name[at] == first && &name[at + 1..at + needle.len()] == rest)
}

/// A parameter name as compared: percent-decoded, lowercase, `-` read as `_`.
fn param_name(name: &str) -> String {
    percent_decode(name).to_ascii_lowercase().replace('-', "_")
}

fn secret_param_name(name: &str) -> bool {
    SECRET_PARAMS.contains(&name)
        || has_secret_word(name)
        || SECRET_FRAGMENTS.iter().any(|f| name.contains(f))
}

/// Whether a lowercase name holds one of [`SECRET_WORDS`] whole, between `-` or `_` (or its
/// ends).
fn has_secret_word(name: &str) -> bool {
    name.split(['-', '_'])
        .any(|word| SECRET_WORDS.contains(&word))
}

fn note(redacted: &mut Vec<String>, entry: String) {
    if !redacted.contains(&entry) {
        redacted.push(entry);
    }
}

mod digest;
mod fields;
mod uri;

pub use digest::{credential_key, pseudonym};
pub use uri::{is_secret_param, query, url};
use uri::{percent_decode, query_with};

#[cfg(test)]
mod tests;
