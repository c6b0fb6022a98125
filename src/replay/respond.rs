//! The response heads the replay server sends: a recorded head made fit to re-send, and the
//! OpenAI-shaped errors for misses and bad requests.
//!
//! Input: a recording's status and header pairs (from the library), or a [`Miss`]. Output: an
//! `http::response::Parts`-ready status and [`HeaderMap`], or a complete error response. The
//! body is re-framed by the replay server, so the recorded `content-length` and
//! `transfer-encoding` go, with every other hop-by-hop field; `content-type` and
//! `content-encoding` stay (a gzip body is replayed as the same gzip bytes). Any recorded
//! `x-tooltap-*` field is replaced by this replay's own.

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Response, StatusCode};

use super::library::Miss;
use crate::proxy::forward::headers::strip_hop_by_hop;
use crate::record::cassette::CASSETTE_HEADER;

pub use crate::proxy::exchange::EXCHANGE_HEADER;
pub const RECORDING_HEADER: &str = "x-tooltap-recording";
/// How many differing pointers a miss message lists per recording before "and N more".
const MAX_LISTED: usize = 8;

/// The recorded headers, cleaned for re-sending, plus the replay's identification headers.
pub fn replay_headers(recorded: &[(String, String)], exchange: &str, recording: &str) -> HeaderMap {
    let mut headers = HeaderMap::with_capacity(recorded.len() + 2);
    for (name, value) in recorded {
        match (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            (Ok(name), Ok(value)) if !name.as_str().starts_with("x-tooltap-") => {
                headers.append(name, value);
            }
            (Ok(_), Ok(_)) => {}
            _ => tracing::debug!(header = %name, "recorded header is not valid HTTP; skipped"),
        }
    }
    strip_hop_by_hop(&mut headers);
    headers.remove(header::CONTENT_LENGTH);
    for (name, value) in [(EXCHANGE_HEADER, exchange), (RECORDING_HEADER, recording)] {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    headers
}

/// The human message for a miss: the request (and its cassette), the two closest recordings
/// with what differs (at most [`MAX_LISTED`] places each), and a flag that would have matched
/// the closest.
pub fn miss_message(method: &str, path: &str, miss: &Miss) -> String {
    let mut message = match &miss.cassette {
        Some(cassette) => {
            format!("tooltap replay: no recording of cassette {cassette} matches {method} {path}")
        }
        None => format!("tooltap replay: no recording matches {method} {path}"),
    };
    if miss.candidates.is_empty() {
        message.push_str("; the recordings directory holds no recordings");
    } else if let (true, Some(cassette)) = (miss.cassette_empty, &miss.cassette) {
        message.push_str(&format!(
            "; cassette {cassette} has no recordings (none was recorded with \
             {CASSETTE_HEADER}: {cassette})"
        ));
    }
    for (rank, candidate) in miss.candidates.iter().enumerate() {
        let label = if rank == 0 { "closest" } else { "next closest" };
        message.push_str(&format!("; {label} recording: {}", candidate.name));
        if !candidate.differing.is_empty() {
            message.push_str(", which differs at ");
        }
        message.push_str(&first_of(&candidate.differing, MAX_LISTED, candidate.total));
    }
    if miss.loose_ids_would_match {
        message.push_str(
            "; only tool-call ids differ from the closest: --match-tool-call-ids loose matches it",
        );
    } else if !miss.wildcards.is_empty() {
        let flags: Vec<String> = miss
            .wildcards
            .iter()
            .map(|pattern| format!("--ignore '{pattern}'"))
            .collect();
        message.push_str(&format!(
            "; to ignore those places in every element: {}",
            flags.join(" ")
        ));
    }
    message
}

/// The first `max` of `items` joined with `, `, then ` and N more` for the rest of `total`.
pub fn first_of(items: &[String], max: usize, total: usize) -> String {
    let shown = items.len().min(max);
    let mut list = items[..shown].join(", ");
    if total > shown {
        list.push_str(&format!(" and {} more", total - shown));
    }
    list
}

/// A complete error response in the OpenAI shape, `type` `tooltap_error`.
pub fn error_response(status: StatusCode, code: &str, message: &str) -> Response<Bytes> {
    crate::answer::error_response(status, "tooltap_error", code, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::library::Candidate;

    #[test]
    fn recorded_framing_and_hop_by_hop_fields_go_and_the_rest_stays() {
        let recorded: Vec<(String, String)> = [
            ("content-type", "text/event-stream"),
            ("content-encoding", "gzip"),
            ("content-length", "812"),
            ("transfer-encoding", "chunked"),
            ("connection", "keep-alive"),
            ("x-request-id", "req_1"),
            ("x-tooltap-exchange", "old-id"),
            ("bad header", "x"),
        ]
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
        let headers = replay_headers(&recorded, "t1-7", "seed/a.jsonl");
        let mut names: Vec<&str> = headers.keys().map(HeaderName::as_str).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "content-encoding",
                "content-type",
                "x-request-id",
                "x-tooltap-exchange",
                "x-tooltap-recording"
            ]
        );
        assert_eq!(headers[EXCHANGE_HEADER], "t1-7");
        let head = crate::inspect::head::response_head(StatusCode::OK.as_u16(), &headers);
        assert_eq!(head.content_type.as_deref(), Some("text/event-stream"));
        assert_eq!(head.content_encoding.as_deref(), Some("gzip"));
    }

    #[test]
    fn miss_messages_name_the_two_closest_cap_each_list_and_suggest_a_flag() {
        let candidate = |name: &str, count: usize| Candidate {
            name: name.into(),
            differing: (0..count).map(|i| format!("/messages/{i}/id")).collect(),
            total: count + 5,
        };
        let mut miss = Miss {
            candidates: vec![candidate("seed/a.jsonl", 10), candidate("seed/b.jsonl", 2)],
            wildcards: vec!["/messages/*/id".into()],
            loose_ids_would_match: false,
            cassette: None,
            cassette_empty: false,
        };
        let message = miss_message("POST", "/v1/chat/completions", &miss);
        assert!(
            message.contains("; closest recording: seed/a.jsonl, which differs at /messages/0/id"),
            "{message}"
        );
        assert!(message.contains("/messages/7/id and 7 more;"), "{message}");
        assert!(!message.contains("/messages/8/id"), "{message}");
        assert!(
            message.contains("; next closest recording: seed/b.jsonl, which differs at"),
            "{message}"
        );
        assert!(message.contains("/messages/1/id and 5 more"), "{message}");
        assert!(message.ends_with("--ignore '/messages/*/id'"), "{message}");
        miss.loose_ids_would_match = true;
        let message = miss_message("POST", "/v1/chat/completions", &miss);
        assert!(
            message.ends_with("--match-tool-call-ids loose matches it"),
            "{message}"
        );
        let mut none = Miss {
            candidates: vec![],
            wildcards: vec![],
            loose_ids_would_match: false,
            cassette: None,
            cassette_empty: false,
        };
        assert!(miss_message("GET", "/", &none).contains("holds no recordings"));
        miss.cassette = Some("t.py::a".into());
        let message = miss_message("POST", "/v1/chat/completions", &miss);
        assert!(
            message.starts_with(
                "tooltap replay: no recording of cassette t.py::a matches POST \
                 /v1/chat/completions; closest recording: seed/a.jsonl"
            ),
            "{message}"
        );
        miss.cassette_empty = true;
        let message = miss_message("POST", "/v1/chat/completions", &miss);
        assert!(
            message.contains(
                "cassette t.py::a has no recordings (none was recorded with \
                 x-tooltap-cassette: t.py::a); closest recording: seed/a.jsonl"
            ),
            "{message}"
        );
        none.cassette = Some("t.py::b".into());
        none.cassette_empty = true;
        let message = miss_message("GET", "/", &none);
        assert!(message.contains("holds no recordings"), "{message}");
    }
}
