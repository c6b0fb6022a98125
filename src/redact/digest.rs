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

use super::Redactor;

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
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

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
    }
}
