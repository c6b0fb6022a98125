//! What `tooltap check` reads besides recording files (which [`crate::interop::files`] finds
//! and reads): captures made elsewhere (`--request`/`--response`), with the response's type
//! sniffed when not given.
//!
//! Input: the flags from [`super::CheckArgs`]. Output: a [`Capture`] ready for the engine. Both
//! files are read through the `--max-input-bytes` bound (default
//! [`crate::interop::files::DEFAULT_MAX_INPUT_BYTES`]), so a pipe still works and `/dev/zero`
//! is refused with a message instead of read until memory runs out.

use std::path::Path;

use super::CheckArgs;
use crate::engine::ResponseHead;
use crate::engine::framing::EVENT_STREAM_TYPE;
use crate::engine::framing::{event_stream, sse};

/// Reads at most `max_bytes` (files, pipes and devices alike); more is an error.
pub fn read_bounded(path: &Path, max_bytes: u64) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    crate::record::read::read_bounded(path, max_bytes, &mut bytes)
        .map_err(|error| error.to_string())?;
    Ok(bytes)
}

/// An exchange captured elsewhere, as the engine will see it.
#[derive(Debug, Clone)]
pub struct Capture {
    pub source: String,
    /// Decided by `--dialect`, else by `--path` (Chat Completions without either, or when the
    /// path names no dialect).
    pub dialect: crate::engine::Dialect,
    /// `--path`: the request path (and query) the dialect is started from; a `key=` in it is
    /// never printed.
    pub path: Option<String>,
    pub request: Vec<u8>,
    pub head: ResponseHead,
    /// The body split as a server would send it: one frame per SSE event (or per event-stream
    /// message) when the body is an unencoded stream (so `seq` counts events), else one frame.
    pub frames: Vec<Vec<u8>>,
}

/// Reads a `--request`/`--response` pair.
pub fn capture(args: &CheckArgs, request: &Path, response: &Path) -> Result<Capture, String> {
    let read = |path: &Path| read_bounded(path, args.max_input_bytes);
    let request_body = read(request)?;
    let body = read(response)?;
    let content_encoding = args
        .content_encoding
        .clone()
        .or_else(|| sniff_encoding(&body).map(str::to_owned));
    let dialect = args.dialect.unwrap_or_else(|| {
        crate::engine::Dialect::for_path(args.path.as_deref().unwrap_or_default())
    });
    let content_type = match (&args.content_type, &content_encoding) {
        (Some(given), _) => Some(given.clone()),
        // Compressed bytes say nothing; the engine then follows the request's `stream` flag.
        (None, Some(_)) => None,
        (None, None) => sniff_type(&body, dialect).map(str::to_owned),
    };
    let is_sse = content_type.as_deref() == Some("text/event-stream");
    let is_event_stream = content_type.as_deref() == Some(EVENT_STREAM_TYPE);
    let frames = match (content_encoding.is_none(), is_sse, is_event_stream) {
        (true, true, _) => split_events(&body),
        (true, _, true) => split_at(&body, event_stream::message_ends(&body)),
        _ => vec![body],
    };
    Ok(Capture {
        dialect,
        source: response.display().to_string(),
        path: args.path.clone(),
        request: request_body,
        head: ResponseHead {
            status: args.status.unwrap_or(200),
            content_type,
            content_encoding,
            headers: Vec::new(),
        },
        frames,
    })
}

fn sniff_encoding(body: &[u8]) -> Option<&'static str> {
    match body {
        [0x1f, 0x8b, ..] => Some("gzip"),
        [0x28, 0xb5, 0x2f, 0xfd, ..] => Some("zstd"),
        _ => None,
    }
}

/// JSON when the first meaningful byte opens a document, SSE when it starts a field or comment,
/// an AWS event stream when it opens with a prelude whose CRC holds. JSON in a dialect that
/// streams JSON lines (Ollama) names no type: one document or many, the request's `stream` flag
/// decides how it is read, as it decided what the server sent (`application/x-ndjson` or
/// `application/json`), so no head rule judges a type the server never sent.
fn sniff_type(body: &[u8], dialect: crate::engine::Dialect) -> Option<&'static str> {
    if event_stream::starts_with_prelude(body) {
        return Some(EVENT_STREAM_TYPE);
    }
    let body = body.strip_prefix(b"\xef\xbb\xbf").unwrap_or(body);
    let start = body.iter().position(|b| !b.is_ascii_whitespace())?;
    let rest = &body[start..];
    if rest.starts_with(b"{") || rest.starts_with(b"[") {
        return (!dialect.streams_json_lines()).then_some("application/json");
    }
    let sse_starts: [&[u8]; 5] = [b"data:", b"event:", b"id:", b"retry:", b":"];
    sse_starts
        .iter()
        .any(|s| rest.starts_with(s))
        .then_some("text/event-stream")
}

/// Cuts after each blank line (CR, LF or CRLF line ends), keeping every byte.
fn split_events(body: &[u8]) -> Vec<Vec<u8>> {
    split_at(body, sse::event_ends(body))
}

/// Cuts `body` at each of `ends` (ascending, the last one the body's end), keeping every byte.
fn split_at(body: &[u8], ends: Vec<usize>) -> Vec<Vec<u8>> {
    let mut start = 0;
    ends.into_iter()
        .map(|end| {
            let frame = body[start..end].to_vec();
            start = end;
            frame
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffing_and_event_splitting() {
        let chat = crate::engine::Dialect::Chat;
        assert_eq!(
            sniff_type(b"\xef\xbb\xbf  {\"a\":1}", chat),
            Some("application/json")
        );
        assert_eq!(
            sniff_type(b": ping\n\ndata: x\n\n", chat),
            Some("text/event-stream")
        );
        assert_eq!(sniff_type(b"hello", chat), None);
        let ollama = crate::engine::Dialect::Ollama;
        assert_eq!(
            sniff_type(b"{\"done\":false}\n{\"done\":true}\n", ollama),
            None
        );
        assert_eq!(sniff_encoding(&[0x1f, 0x8b, 8]), Some("gzip"));
        let frames = split_events(b"data: a\r\n\r\ndata: b\n\ndata: c");
        assert_eq!(
            frames,
            vec![
                b"data: a\r\n\r\n".to_vec(),
                b"data: b\n\n".to_vec(),
                b"data: c".to_vec()
            ]
        );
    }
}
