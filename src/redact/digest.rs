//! The credential digest an MCP recording keeps instead of the credential: a keyed hash that
//! lets `tooltap check` tell which exchanges carried the same credential (the 2026-07-28
//! conversation key is the upstream, this digest and the protocol version) and nothing else.
//!
//! Input: a request's headers. Output: `hmac-sha256:<key id>:<digest>`, or `None` when the
//! request carries no credential header. The credential is every header the [`Redactor`]
//! treats as a secret (`authorization`, `x-api-key`, `api-key`, any `*key*`/`*token*`/`*auth*`
//! name...) except cookies, whose values a load balancer may change between requests; names
//! and values are fed in name order, so header order does not matter.
//!
//! **Keyed** with 32 random bytes drawn once per process from the operating system and never
//! written anywhere: equal credentials give equal digests within one run, and the digest cannot
//! be reversed — HMAC-SHA256 is one-way, and without the key not even a guessed credential
//! (a short password, a leaked key) can be confirmed against a recording by hashing it. The
//! digest is cut to 128 bits (a collision between two credentials of one run is not a
//! concern). The key id (the first 4 bytes of the key's own HMAC of a fixed label) tells a
//! reader which digests came from one run and so may be compared; digests of different runs
//! never are.

use std::sync::LazyLock;

use http::HeaderMap;
use ring::hmac;

use super::{PSEUDONYMOUS_HEADERS, Redactor};

/// Headers that are secrets but not a stable credential.
const NOT_CREDENTIALS: &[&str] = &["cookie", "set-cookie"];
/// Bytes of the HMAC kept in the digest.
const KEPT: usize = 16;

/// This process's key and its id; `None` when the system has no random source (then no digest
/// is written: never a digest under a guessable key).
static KEY: LazyLock<Option<(hmac::Key, String)>> = LazyLock::new(|| {
    let rng = ring::rand::SystemRandom::new();
    let key = hmac::Key::generate(hmac::HMAC_SHA256, &rng).ok()?;
    let id = hex(&hmac::sign(&key, b"tooltap credential digest key id").as_ref()[..4]);
    Some((key, id))
});

impl Redactor {
    /// The digest of the request's credential headers (see the module doc).
    pub fn credential_digest(&self, headers: &HeaderMap) -> Option<String> {
        let mut credentials: Vec<(&str, &[u8])> = headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_bytes()))
            .filter(|(name, _)| !NOT_CREDENTIALS.contains(name) && self.is_secret_header(name))
            .collect();
        if credentials.is_empty() {
            return None;
        }
        credentials.sort_unstable();
        let (key, id) = KEY.as_ref()?;
        let mut context = hmac::Context::with_key(key);
        for (name, value) in credentials {
            context.update(name.as_bytes());
            context.update(b"\0");
            context.update(value);
            context.update(b"\0");
        }
        let tag = context.sign();
        Some(format!("hmac-sha256:{id}:{}", hex(&tag.as_ref()[..KEPT])))
    }

    /// The request's (or response's) values of [`PSEUDONYMOUS_HEADERS`] that are not secrets
    /// here, each with its pseudonym: what [`Redactor::headers`] writes instead of them, and what
    /// the recorder replaces in the verdicts' details that quote them.
    pub fn pseudonyms(&self, headers: &HeaderMap) -> Vec<(String, String)> {
        PSEUDONYMOUS_HEADERS
            .iter()
            .filter(|name| !self.is_secret_header(name))
            .flat_map(|name| headers.get_all(*name))
            .filter_map(|value| {
                let clear = String::from_utf8_lossy(value.as_bytes()).into_owned();
                let pseudonym = pseudonym(value.as_bytes())?;
                Some((clear, pseudonym))
            })
            .collect()
    }
}

/// A header value's pseudonym (see [`PSEUDONYMOUS_HEADERS`]): `tt-` and 32 hex digits of the
/// value's HMAC under this process's key, so one value gets one pseudonym within a run and
/// different values different ones, and nobody holding a recording can reverse it or confirm
/// a guess. A value MCP would refuse as a session id (empty, or bytes outside 0x21-0x7E) gets
/// ` (not visible ASCII)` after it, a pseudonym MCP refuses alike, so `tooltap check` judges the
/// recorded value as the live inspector judged the real one. `None` without a key.
pub fn pseudonym(value: &[u8]) -> Option<String> {
    let (key, _) = KEY.as_ref()?;
    let mut context = hmac::Context::with_key(key);
    context.update(b"tooltap header pseudonym\0");
    context.update(value);
    let tag = context.sign();
    let visible = !value.is_empty() && value.iter().all(|b| (0x21..=0x7e).contains(b));
    let flaw = if visible { "" } else { " (not visible ASCII)" };
    Some(format!("tt-{}{flaw}", hex(&tag.as_ref()[..KEPT])))
}

/// The conversation store's credential key of a digest (`0` without one): the digest's first 64
/// bits. The live inspector (from [`Redactor::credential_digest`]) and `tooltap check` (from a
/// recording's `credential`) derive the same key from the same credential in one run.
pub fn credential_key(digest: Option<&str>) -> u64 {
    digest
        .and_then(|digest| digest.rsplit(':').next())
        .and_then(|hex| hex.get(..16))
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .unwrap_or(0)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::tests::headers;

    #[test]
    fn equal_credentials_give_equal_digests_and_the_credential_is_not_in_it() {
        let redactor = Redactor::default();
        let a = headers(&[
            ("authorization", "Bearer sk-secret-1"),
            ("mcp-session-id", "s1"),
            ("cookie", "lb=1"),
        ]);
        let b = headers(&[
            ("cookie", "lb=2"),
            ("mcp-session-id", "s2"),
            ("authorization", "Bearer sk-secret-1"),
        ]);
        let digest = redactor.credential_digest(&a).expect("a credential");
        assert_eq!(Some(digest.clone()), redactor.credential_digest(&b));
        assert!(!digest.contains("sk-secret"), "{digest}");
        let parts: Vec<&str> = digest.split(':').collect();
        assert_eq!(parts[0], "hmac-sha256");
        assert_eq!((parts[1].len(), parts[2].len()), (8, 32));
        let other = headers(&[("authorization", "Bearer sk-secret-2")]);
        assert_ne!(redactor.credential_digest(&other), Some(digest.clone()));
        let api_key = headers(&[("x-api-key", "sk-secret-1")]);
        assert_ne!(redactor.credential_digest(&api_key), Some(digest));
        let none = headers(&[("cookie", "lb=1"), ("accept", "text/event-stream")]);
        assert_eq!(redactor.credential_digest(&none), None);
        assert_eq!(credential_key(None), 0);
        assert_eq!(
            credential_key(Some("hmac-sha256:01020304:00000000000000ff00")),
            255
        );
        let key = credential_key(redactor.credential_digest(&a).as_deref());
        assert_ne!(key, 0);
        assert_eq!(
            key,
            credential_key(redactor.credential_digest(&b).as_deref())
        );
    }

    #[test]
    fn a_session_id_is_recorded_as_a_stable_pseudonym_that_keeps_its_validity() {
        let redactor = Redactor::default();
        let map = |id: &'static str| headers(&[("mcp-session-id", id), ("accept", "*/*")]);
        let recorded = |id| redactor.headers(&map(id), &mut Vec::new())[0].1.clone();
        let one = recorded("3f6b0c2a-session-one");
        assert_eq!(one, recorded("3f6b0c2a-session-one"), "stable within a run");
        assert_ne!(one, recorded("3f6b0c2a-session-two"));
        assert!(!one.contains("3f6b0c2a"), "{one}");
        assert!(one.starts_with("tt-") && one.len() == 35, "{one}");
        assert!(crate::engine::dialect::mcp::request::session_id_ok(&one));
        // An id MCP refuses is recorded as a pseudonym MCP refuses.
        let spaced = recorded("bad id");
        assert!(!crate::engine::dialect::mcp::request::session_id_ok(
            &spaced
        ));
        assert!(!spaced.contains("bad"), "{spaced}");
        assert_eq!(
            redactor.pseudonyms(&map("3f6b0c2a-session-one")),
            [("3f6b0c2a-session-one".to_owned(), one)]
        );
        // Configured as a secret, it is redacted instead.
        let strict = Redactor::new(&super::super::RedactionConfig {
            headers: vec!["mcp-session-id".into()],
            ..Default::default()
        });
        let mut redacted = Vec::new();
        let out = strict.headers(&map("3f6b0c2a-session-one"), &mut redacted);
        assert_eq!(out[0].1, super::super::REDACTED);
        assert_eq!(redacted, ["header:mcp-session-id"]);
        assert!(strict.pseudonyms(&map("x")).is_empty());
    }
}
