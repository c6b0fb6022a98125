//! Query strings and URLs with their credentials taken out: secret query parameter values
//! replaced by [`REDACTED`], user-info dropped.
//!
//! Input: a query string or URL from the recorder, a log line or an error message. Output: the
//! same text redacted, and `query:<name>` / `upstream:userinfo` entries in the `redacted` list.
//! Which names are secret is decided in the parent module (`secret_param_name`).

use super::{REDACTED, note, param_name, secret_param_name};

/// A query string with credential-like parameter values replaced; order and the rest kept.
/// `key=sk-1&n=2` → `key=[REDACTED]&n=2`.
pub fn query(query: &str, redacted: &mut Vec<String>) -> String {
    query_with(query, redacted, is_secret_param)
}

pub(super) fn query_with(
    query: &str,
    redacted: &mut Vec<String>,
    secret: impl Fn(&str) -> bool,
) -> String {
    query
        .split('&')
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            if !value.is_empty() && secret(name) {
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
    secret_param_name(&param_name(name))
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

/// `%5F` → `_`; invalid escapes are kept as written.
pub(super) fn percent_decode(text: &str) -> String {
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
