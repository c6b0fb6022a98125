//! The whole contract engine on arbitrary request and response bytes: never panics, and always
//! produces a report that serializes. Layout of the input: one byte of flags (status, content
//! type, encoding), one byte of request length, the request, then the response body fed in two
//! chunks cut where the flags say.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use tooltap::engine::{BodyEnd, EngineConfig, Exchange, ResponseHead, SchemaCache};

fuzz_target!(|data: &[u8]| {
    let [flags, request_len, rest @ ..] = data else {
        return;
    };
    let request_len = usize::from(*request_len).min(rest.len());
    let (request, body) = rest.split_at(request_len);
    let content_type = match flags & 0b11 {
        0 => Some("text/event-stream"),
        1 => Some("application/json"),
        2 => Some("text/plain"),
        _ => None,
    };
    let content_encoding = match (flags >> 2) & 0b111 {
        1 => Some("gzip"),
        2 => Some("br"),
        3 => Some("zstd"),
        4 => Some("deflate"),
        _ => None,
    };
    let head = ResponseHead {
        status: if flags & 0x20 == 0 { 200 } else { 502 },
        content_type: content_type.map(str::to_string),
        content_encoding: content_encoding.map(str::to_string),
        headers: Vec::new(),
    };
    let config = Arc::new(EngineConfig::default());
    let cache = SchemaCache::default();
    let mut exchange = Exchange::new(&config, &cache, request);
    exchange.response_head(head);
    let cut = body.len() / 2;
    exchange.feed(&body[..cut]);
    exchange.feed(&body[cut..]);
    let end = match (flags >> 6) & 0x3 {
        0 => BodyEnd::Complete,
        1 => BodyEnd::UpstreamBroke,
        2 => BodyEnd::ReaderGone,
        _ => BodyEnd::Lossy,
    };
    let report = exchange.finish(end);
    serde_json::to_string(&report).expect("a report always serializes");
});
