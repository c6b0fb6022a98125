//! Credential-named request body fields: string and number values of fields named like
//! credentials (`api_key`, `client_secret`, `password`, `hf_token`, `openai_key`, `auth`, ...)
//! are replaced by [`REDACTED`] wherever they sit, at any depth, outside `tools`, `functions`
//! and `response_format`.
//!
//! Input: a request body parsed as JSON, from [`super::Redactor::body`]. Output: the body
//! with those values replaced, and `body:<pointer>` entries (the first [`MAX_LISTED`], then one
//! `body:...`) in the `redacted` list.
//!
//! The walk has no depth bound (a credential nested 40 deep was left in clear behind one): it
//! keeps its own stack, and a pointer is spelled out only for the few values it lists, from a
//! table of the containers it entered, so its cost is in proportion to the body's nodes
//! whatever their depth or key lengths. serde_json refuses a body nested past 128 before any
//! walk; the recorder then drops such a body whole when it may hold a credential.

use serde_json::Value;

use super::{REDACTED, note, param_name, percent_decode};

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
const SECRET_BODY_NAMES: &[&str] = &[
    "token",
    "pwd",
    "pass",
    "jwt",
    "key",
    "auth",
    "sessionid",
    "session_id",
];
/// Endings that make a field name a credential (`hf_token`, `apiToken`, `openai_key`,
/// `access_key`, `basic_auth`): a singular `token` or `key` names one value, while the
/// counters end in `tokens`.
const SECRET_BODY_ENDINGS: &[&str] = &["token", "key", "_auth"];
/// Names with a credential's ending that are ordinary request fields (MCP's `progressToken`
/// is the client's own correlation id, spelled `progresstoken` or `progress_token` here).
const ORDINARY_BODY_NAMES: &[&str] = &["prompt_cache_key", "progresstoken", "progress_token"];
/// Top-level request fields never walked for credential-named fields: they hold schemas.
const SCHEMA_FIELDS: &[&str] = &["tools", "functions", "response_format"];
/// Credential-named body fields listed one by one in `redacted`; the rest as `body:...`.
const MAX_LISTED: usize = 32;

/// One step of a JSON pointer: an object member's name or an array index.
#[derive(Clone, Copy)]
enum Step<'a> {
    Name(&'a str),
    Index(usize),
}

/// Where a value sits: the container it is in (an index into the walk's table of entered
/// containers; `None` at the top) and its step from there.
#[derive(Clone, Copy)]
struct Place<'a> {
    parent: Option<usize>,
    step: Step<'a>,
}

/// Replaces credential-named fields' scalar values in `body`.
pub fn redact(body: &mut Value, redacted: &mut Vec<String>) {
    let mut listed = 0usize;
    // Containers entered so far, each with its place: a listed value's pointer is spelled
    // from this table, so no pointer is built for the values that are not listed.
    let mut entered: Vec<Place<'_>> = Vec::new();
    // Each entry: the value, its place, and whether the field it sits under (its own name, or
    // the array's for an item) names a secret. The verdict is taken once per field name, when
    // it is pushed.
    let mut stack: Vec<(&mut Value, Place<'_>, bool)> = Vec::new();
    if let Value::Object(fields) = body {
        for (name, value) in fields.iter_mut() {
            if !SCHEMA_FIELDS.contains(&name.as_str()) {
                let place = Place {
                    parent: None,
                    step: Step::Name(name),
                };
                stack.push((value, place, secret_body_field(name)));
            }
        }
    }
    while let Some((value, place, secret)) = stack.pop() {
        match value {
            Value::String(_) | Value::Number(_) => {
                if secret && value.as_str() != Some(REDACTED) {
                    *value = Value::String(REDACTED.to_string());
                    listed += 1;
                    match listed.cmp(&MAX_LISTED) {
                        std::cmp::Ordering::Less => {
                            note(redacted, format!("body:{}", pointer(&entered, place)));
                        }
                        std::cmp::Ordering::Equal => note(redacted, "body:...".to_string()),
                        std::cmp::Ordering::Greater => {}
                    }
                }
            }
            Value::Object(fields) if !fields.is_empty() => {
                let parent = Some(entered.len());
                entered.push(place);
                for (name, child) in fields.iter_mut() {
                    let step = Step::Name(name);
                    stack.push((child, Place { parent, step }, secret_body_field(name)));
                }
            }
            Value::Array(items) if !items.is_empty() => {
                let parent = Some(entered.len());
                entered.push(place);
                for (index, child) in items.iter_mut().enumerate() {
                    let step = Step::Index(index);
                    stack.push((child, Place { parent, step }, secret));
                }
            }
            Value::Object(_) | Value::Array(_) | Value::Null | Value::Bool(_) => {}
        }
    }
}

/// The JSON pointer of a value at `place` (RFC 6901: `~` and `/` in names escaped).
fn pointer(entered: &[Place<'_>], place: Place<'_>) -> String {
    let mut steps = vec![place.step];
    let mut parent = place.parent;
    while let Some(at) = parent {
        let Some(up) = entered.get(at) else { break };
        steps.push(up.step);
        parent = up.parent;
    }
    let mut pointer = String::new();
    for step in steps.iter().rev() {
        pointer.push('/');
        match step {
            Step::Name(name) if name.contains(['~', '/']) => {
                pointer.push_str(&name.replace('~', "~0").replace('/', "~1"));
            }
            Step::Name(name) => pointer.push_str(name),
            Step::Index(index) => pointer.push_str(&index.to_string()),
        }
    }
    pointer
}

fn secret_body_field(name: &str) -> bool {
    // Most names need no decoding: no escapes, no `+`, no `-`, no capitals.
    let decoded;
    let plain = if name
        .bytes()
        .any(|b| matches!(b, b'%' | b'+' | b'-' | b'A'..=b'Z'))
    {
        decoded = param_name(name);
        decoded.as_str()
    } else {
        name
    };
    // `accessToken` is `access_token` in words: read camel case as words too.
    secret_body_name(plain)
        || (name.bytes().any(|b| b.is_ascii_uppercase()) && secret_body_name(&words(name)))
}

fn secret_body_name(name: &str) -> bool {
    SECRET_BODY_FRAGMENTS.iter().any(|f| name.contains(f))
        || SECRET_BODY_NAMES.contains(&name)
        || (SECRET_BODY_ENDINGS.iter().any(|e| name.ends_with(e))
            && !ORDINARY_BODY_NAMES.contains(&name))
}

/// A field name as lowercase words joined by `_`: `refreshTokenValue` → `refresh_token_value`
/// (percent-decoded first; a capital after a lowercase letter or digit starts a word; `-` is
/// read as `_`).
fn words(name: &str) -> String {
    let decoded = percent_decode(name);
    let mut out = String::with_capacity(decoded.len() + 4);
    let mut previous_lower = false;
    for c in decoded.chars() {
        if c.is_ascii_uppercase() && previous_lower {
            out.push('_');
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        out.push(match c {
            '-' => '_',
            c => c.to_ascii_lowercase(),
        });
    }
    out
}

/// Every way a name part with `_` in it may be written in a body: `_`, `-` or nothing (camel
/// case: `accessToken`) at each `_`; letter case is left to the case-insensitive search.
fn spellings(part: &str) -> impl Iterator<Item = String> {
    let mut spellings = vec![String::new()];
    for c in part.chars() {
        if c == '_' {
            spellings = spellings
                .into_iter()
                .flat_map(|s| [format!("{s}_"), format!("{s}-"), s])
                .collect();
        } else {
            spellings.iter_mut().for_each(|s| s.push(c));
        }
    }
    spellings.into_iter()
}

/// Whether a request body's bytes may hold a credential-named field, so that it must be parsed
/// and walked: one of the fragments in any letter case (with `-`, `_` or nothing at each `_`),
/// one of the whole names in quotes, a name ending (`token"`, `key"`, `auth"`), or a `\u`
/// escape or `%` that could spell one. Conservative: a body that
/// mentions `password` in a message is walked for nothing, never the other way round. Most
/// bodies hold none of these, and then their recording skips a parse, a walk and a re-serialise.
pub fn may_hold_secret(raw: &[u8]) -> bool {
    static PATTERNS: std::sync::LazyLock<Option<aho_corasick::AhoCorasick>> =
        std::sync::LazyLock::new(|| {
            let mut patterns: Vec<String> = vec!["\\u".into(), "%".into()];
            patterns.extend(SECRET_BODY_FRAGMENTS.iter().flat_map(|f| spellings(f)));
            for name in SECRET_BODY_NAMES {
                patterns.extend(spellings(name).map(|s| format!("\"{s}\"")));
            }
            // An ending is followed by the name's closing quote.
            for ending in SECRET_BODY_ENDINGS {
                patterns.extend(spellings(ending).map(|s| format!("{s}\"")));
            }
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
