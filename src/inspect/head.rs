//! The response head the engine judges, read from hyper's header map.
//!
//! Input: a status and a [`HeaderMap`]; output: an engine [`ResponseHead`]. A thin adapter over
//! [`ResponseHead::from_headers`], the one translation every path shares (the live proxy,
//! replay, enforce and inject here; `tooltap check` from a recording's header list), so equal
//! headers always give an equal head. Values that are not visible ASCII are skipped.

use http::HeaderMap;

use crate::engine::ResponseHead;

/// The engine's view of a response head.
pub fn response_head(status: u16, headers: &HeaderMap) -> ResponseHead {
    let pairs = headers
        .iter()
        .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)));
    ResponseHead::from_headers(status, pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_type_and_encoding_are_read_and_nothing_else() {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", "text/event-stream".parse().expect("value"));
        headers.insert("content-encoding", "gzip".parse().expect("value"));
        headers.insert("x-other", "1".parse().expect("value"));
        let head = response_head(201, &headers);
        assert_eq!(head.status, 201);
        assert_eq!(head.content_type.as_deref(), Some("text/event-stream"));
        assert_eq!(head.content_encoding.as_deref(), Some("gzip"));
        let bare = response_head(200, &HeaderMap::new());
        assert_eq!((bare.content_type, bare.content_encoding), (None, None));
    }

    #[test]
    fn recorded_header_names_match_case_insensitively() {
        let recorded = [
            ("Content-Type", "application/json"),
            ("CONTENT-ENCODING", "br"),
        ];
        let head = ResponseHead::from_headers(200, recorded);
        assert_eq!(head.content_type.as_deref(), Some("application/json"));
        assert_eq!(head.content_encoding.as_deref(), Some("br"));
    }
}
