//! Framing: turns response body bytes into documents the contract can judge.
//!
//! [`sse`] splits `text/event-stream` bodies into events incrementally; [`json_array`] splits a
//! streamed top-level JSON array into its elements incrementally; [`ndjson`] splits
//! newline-delimited JSON into its lines incrementally; [`event_stream`] decodes AWS
//! event-stream binary messages incrementally (CRCs verified); [`json`] collects a buffered
//! body. All are bounded and do no I/O. A line (SSE, NDJSON) or an array element that straddles
//! pushes is held in a [`line_buffer::LineBuffer`]. Input comes from the decoder in
//! [`crate::engine::decode`]; output goes to the dialect ([`crate::engine::dialect`]).

pub mod event_stream;
pub mod json;
pub mod json_array;
pub mod line_buffer;
pub mod ndjson;
pub mod sse;
#[cfg(test)]
#[path = "split_driver_tests.rs"]
mod split_driver;

pub use event_stream::{EventStreamDecoder, MessageTooLarge};
pub use json::{BodyTooLarge, JsonFramer};
pub use json_array::{ArrayEnd, ElementTooLarge, JsonArrayFramer};
pub use ndjson::{NdjsonEnd, NdjsonFramer, NdjsonLineTooLong};
pub use sse::{LineTooLong, SseEvent, SseFramer};

use crate::engine::report::BodyKind;

/// The content type of AWS event-stream bodies (Bedrock's ConverseStream).
pub const EVENT_STREAM_TYPE: &str = "application/vnd.amazon.eventstream";

/// The framing a content type names: SSE for `text/event-stream`, JSON for `application/json`
/// and `+json` types, AWS event-stream messages for `application/vnd.amazon.eventstream`,
/// anything else not inspected; with no content type, the request's
/// `stream` flag decides. [`crate::engine::dialect::DialectRules::body_kind`]'s default.
pub fn body_kind(content_type: Option<&str>, asked_stream: bool) -> BodyKind {
    let Some(content_type) = content_type else {
        return if asked_stream {
            BodyKind::Sse
        } else {
            BodyKind::Json
        };
    };
    // Compared without case and without a lowercased copy (this runs twice per exchange).
    let mime = content_type.split(';').next().unwrap_or_default().trim();
    let is = |name: &str| mime.eq_ignore_ascii_case(name);
    let suffix = mime.len().checked_sub(5).and_then(|at| mime.get(at..));
    if is("text/event-stream") {
        BodyKind::Sse
    } else if is("application/json") || suffix.is_some_and(|end| end.eq_ignore_ascii_case("+json"))
    {
        BodyKind::Json
    } else if is(EVENT_STREAM_TYPE) {
        BodyKind::EventStream
    } else {
        BodyKind::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_content_type_names_its_framing_whatever_its_case_and_parameters() {
        let kind = |content_type| body_kind(Some(content_type), false);
        assert_eq!(kind("text/event-stream"), BodyKind::Sse);
        assert_eq!(kind(" Text/Event-Stream ; charset=utf-8"), BodyKind::Sse);
        assert_eq!(kind("application/json"), BodyKind::Json);
        assert_eq!(kind("APPLICATION/JSON;charset=UTF-8"), BodyKind::Json);
        assert_eq!(kind("application/problem+JSON"), BodyKind::Json);
        assert_eq!(
            kind("application/vnd.amazon.eventstream"),
            BodyKind::EventStream
        );
        assert_eq!(
            kind("Application/Vnd.Amazon.EventStream"),
            BodyKind::EventStream
        );
        for other in [
            "json",
            "+jso",
            "",
            "text/plain",
            "application/x-ndjson",
            "é/jsonx",
        ] {
            assert_eq!(kind(other), BodyKind::Other, "{other:?}");
        }
        assert_eq!(kind("é+json"), BodyKind::Json);
        assert_eq!(body_kind(None, true), BodyKind::Sse);
        assert_eq!(body_kind(None, false), BodyKind::Json);
    }
}
