//! The one place that edits headers on their way through.
//!
//! Input: request headers from the client, response headers from the upstream. Output: the same
//! maps minus hop-by-hop fields, with `Host` pointing at the upstream. Everything else
//! (`Authorization`, `Content-Type`, `Content-Encoding`, `Content-Length`, `openai-*`, request
//! ids, `Accept-Encoding`) passes untouched, so the upstream sees what the app sent and the app
//! sees what the upstream sent. Nothing is added: no `Via`, no `Forwarded`.
//!
//! Hop-by-hop fields (RFC 9110 §7.6.1): `Connection` and every field it names, plus
//! `Proxy-Connection`, `Keep-Alive`, `TE`, `Transfer-Encoding` and `Upgrade`. Also dropped:
//! `Proxy-Authenticate` and `Proxy-Authorization` (§11.7), which address the proxy itself;
//! tooltap demands no proxy credentials, so they are not meant for the upstream. `Trailer` is
//! end-to-end (§6.6.2) and passes. `x-tooltap-cassette` (a test's name, for tooltap's recordings,
//! see [`crate::record::cassette`]) is addressed to tooltap too, and dropped as well.
//!
//! One framing fix on responses: an upstream head with both `Transfer-Encoding` and
//! `Content-Length` is framed by the transfer coding (RFC 9112 §6.3: it overrides the length, and
//! hyper's client reads the body that way), so its `Content-Length` is dropped before the head
//! goes on, as §6.3 asks of an intermediary that forwards such a message. Kept, it would frame the
//! client's answer: a 1,774-byte chunked body reached the client cut to the 5 bytes it claimed,
//! with a clean end.

use http::header::{self, HeaderMap, HeaderName, HeaderValue};

const FIXED_HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("proxy-connection"),
    HeaderName::from_static("keep-alive"),
    header::TE,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
];

/// Remove hop-by-hop fields, including those listed in `Connection` (possibly over several
/// `Connection` lines, comma-separated).
pub fn strip_hop_by_hop(headers: &mut HeaderMap) {
    // The common case has none: one pass over the names (standard names compare as small
    // integers) instead of eight hashed removals.
    if !headers.keys().any(|name| FIXED_HOP_BY_HOP.contains(name)) {
        return;
    }
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|list| list.split(','))
        .filter_map(|token| HeaderName::from_bytes(token.trim().as_bytes()).ok())
        .collect();
    for name in named.iter().chain(FIXED_HOP_BY_HOP.iter()) {
        headers.remove(name);
    }
}

/// Prepare a client request's headers for the upstream, whose `Host` value is `host` (the
/// upstream's authority, made into a header value once per route).
pub fn prepare_request(headers: &mut HeaderMap, host: &HeaderValue) {
    strip_hop_by_hop(headers);
    headers.remove(crate::record::cassette::CASSETTE_HEADER_NAME);
    headers.insert(header::HOST, host.clone());
}

/// What [`prepare_response`] had to mend in an upstream head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResponseFraming {
    /// Framed by one of `Transfer-Encoding` or `Content-Length`, or neither.
    Clean,
    /// Both were present; the body was read by its transfer coding and the `Content-Length`
    /// (which did not frame it) was removed.
    ConflictingLengthDropped,
}

/// Prepare an upstream response's headers for the client. Returns whether the head framed its
/// body twice (see the module's doc), so the caller can count it.
pub fn prepare_response(headers: &mut HeaderMap) -> ResponseFraming {
    let framing = if headers.contains_key(header::TRANSFER_ENCODING)
        && headers.contains_key(header::CONTENT_LENGTH)
    {
        headers.remove(header::CONTENT_LENGTH);
        ResponseFraming::ConflictingLengthDropped
    } else {
        ResponseFraming::Clean
    };
    strip_hop_by_hop(headers);
    framing
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn strips_fixed_and_connection_named_fields_and_keeps_the_rest() {
        let mut headers = map(&[
            ("connection", "keep-alive, X-Secret-Hop"),
            ("connection", "x-other-hop"),
            ("x-secret-hop", "1"),
            ("x-other-hop", "2"),
            ("keep-alive", "timeout=5"),
            ("te", "trailers"),
            ("transfer-encoding", "chunked"),
            ("proxy-authorization", "Basic eA=="),
            ("authorization", "Bearer sk-test"),
            ("content-encoding", "gzip"),
            ("openai-organization", "org-1"),
            ("trailer", "x-checksum"),
        ]);
        strip_hop_by_hop(&mut headers);
        let mut left: Vec<&str> = headers.keys().map(HeaderName::as_str).collect();
        left.sort_unstable();
        assert_eq!(
            left,
            [
                "authorization",
                "content-encoding",
                "openai-organization",
                "trailer"
            ]
        );
    }

    #[test]
    fn a_response_framed_twice_loses_its_content_length_and_says_so() {
        let mut both = map(&[
            ("content-length", "5"),
            ("transfer-encoding", "chunked"),
            ("content-type", "application/json"),
        ]);
        assert_eq!(
            prepare_response(&mut both),
            ResponseFraming::ConflictingLengthDropped
        );
        let left: Vec<&str> = both.keys().map(HeaderName::as_str).collect();
        assert_eq!(left, ["content-type"]);
        for single in [
            map(&[("content-length", "5")]),
            map(&[("transfer-encoding", "chunked")]),
        ] {
            let mut headers = single.clone();
            assert_eq!(prepare_response(&mut headers), ResponseFraming::Clean);
            assert_eq!(
                headers.contains_key(header::CONTENT_LENGTH),
                single.contains_key(header::CONTENT_LENGTH)
            );
        }
    }

    #[test]
    fn host_is_replaced_by_the_upstream_authority_and_the_cassette_goes() {
        let mut headers = map(&[
            ("host", "127.0.0.1:8787"),
            ("x-tooltap-cassette", "tests/t.py::test_a"),
        ]);
        prepare_request(&mut headers, &HeaderValue::from_static("api.groq.com"));
        assert_eq!(headers.get_all(header::HOST).iter().count(), 1);
        assert_eq!(headers[header::HOST], "api.groq.com");
        assert_eq!(headers.len(), 1, "{headers:?}");
    }
}
