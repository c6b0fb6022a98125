//! One exchange as a foreign format holds it ([`Foreign`]), tooltap's own key beside it
//! ([`Extra`]), and the turning of one into a [`Recording`]: frames cut where the key says or
//! synthesized per SSE event, credential headers dropped, the URL split into upstream, path and
//! (redacted) query.
//!
//! Input: what [`super::vcr`] and [`super::har`] read. Output: a recording `check`, `report`
//! and `replay` take as they take tooltap's own.

use std::path::Path;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::Format;
use crate::engine::{Completeness, Dialect, Violation};
use crate::record::format::{EndLine, Meta, Outcome, RecordedBody, RequestPart, ResponsePart};
use crate::record::{RecordedFrame, Recording};

/// Why a foreign file could not be read at all.
#[derive(Debug)]
pub enum ForeignError {
    /// Decompressed past the bound.
    TooLarge,
    Invalid(String),
}

/// One exchange as a foreign format holds it, before it becomes a [`Recording`].
#[derive(Debug, Default)]
pub struct Foreign {
    pub method: String,
    /// The full URL the client asked for.
    pub url: String,
    pub request_headers: Vec<(String, String)>,
    pub request_body: Option<ForeignBody>,
    pub status: u16,
    pub response_headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// When the request started (RFC 3339), if the format says.
    pub started: Option<String>,
    /// tooltap's own key, when the file has it.
    pub extra: Option<serde_json::Value>,
}

/// A request body: bytes as sent, or a JSON tree (pydantic-ai's `parsed_body`).
#[derive(Debug)]
pub enum ForeignBody {
    Bytes(Vec<u8>),
    Json(serde_json::Value),
}

/// tooltap's key in a foreign file: what the format cannot hold. Invariant: the frame lengths
/// add up to the body's bytes (a reader that finds otherwise synthesizes boundaries instead).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Extra {
    pub v: u32,
    pub id: String,
    pub route: String,
    /// The client's path (the URL's may carry the upstream's base path).
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<Dialect>,
    pub started: String,
    /// `[t_us, len]` per frame, in `seq` order.
    pub frames: Vec<(u64, u64)>,
    pub end: ExtraEnd,
    /// The violations tooltap found when it recorded the exchange.
    #[serde(default)]
    pub violations: Vec<Violation>,
    /// The recording's credential digest (`meta.credential`, never the credential): MCP
    /// conversations are keyed by it, so an exported conversation is judged as the original.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
}

/// How the exchange ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtraEnd {
    pub outcome: Outcome,
    pub t_us: u64,
    #[serde(default)]
    pub dropped_frames: u64,
}

/// This version of [`Extra`].
pub const EXTRA_VERSION: u32 = 1;

impl Extra {
    /// The key for a recording.
    pub fn of(recording: &Recording) -> Extra {
        let meta = &recording.meta;
        let end = recording.end.as_ref();
        Extra {
            v: EXTRA_VERSION,
            id: meta.id.clone(),
            route: meta.route.clone(),
            path: meta.path.clone(),
            dialect: Some(meta.dialect()),
            started: meta.started.clone(),
            frames: recording
                .frames
                .iter()
                .map(|frame| (frame.t_us, frame.bytes.len() as u64))
                .collect(),
            end: ExtraEnd {
                // A file cut before its end line is judged as lossy; so is its export.
                outcome: end.map_or(Outcome::Lossy, |end| end.outcome),
                t_us: end.map_or(0, |end| end.t_us),
                dropped_frames: end.map_or(0, |end| end.dropped_frames),
            },
            violations: end.map(|end| end.violations.clone()).unwrap_or_default(),
            credential: meta.credential.clone(),
        }
    }
}

impl Foreign {
    /// The recording this exchange stands for, and whether its boundaries were synthesized.
    pub(super) fn into_recording(
        self,
        format: Format,
        path: &Path,
        index: usize,
    ) -> (Recording, bool) {
        let extra: Option<Extra> = self
            .extra
            .and_then(|value| serde_json::from_value::<Extra>(value).ok())
            .filter(|extra| extra.v == EXTRA_VERSION);
        let (upstream, url_path, query) = split_url(&self.url);
        let redactor = crate::redact::Redactor::default();
        let mut redacted = Vec::new();
        let query = query.map(|query| redactor.query(query, &mut redacted));
        let request_headers = kept_headers(&redactor, self.request_headers, &mut redacted);
        let response_headers = kept_headers(&redactor, self.response_headers, &mut redacted);
        let body_len = self.body.len() as u64;
        let (frames, synthesized) =
            frames_of(Bytes::from(self.body), &response_headers, extra.as_ref());
        let body = match self.request_body {
            Some(ForeignBody::Json(value)) => RecordedBody::json(&value),
            Some(ForeignBody::Bytes(bytes)) => request_body(&bytes),
            None => RecordedBody::Missing,
        };
        let mut end = EndLine {
            outcome: Outcome::Complete,
            t_us: 0,
            dropped_frames: 0,
            frames: frames.len() as u64,
            bytes: body_len,
            completeness: Completeness::Complete,
            violations: Vec::new(),
            enforced: None,
        };
        // Named by its place in the file, unless tooltap's key names it.
        let mut meta = Meta {
            v: crate::record::format::VERSION,
            id: format!("{}-{index}", format.route()),
            started: self.started.unwrap_or_default(),
            route: format.route().to_owned(),
            upstream,
            method: self.method,
            path: url_path,
            dialect: None,
            query,
            request: RequestPart {
                headers: request_headers,
                body,
            },
            response: ResponsePart {
                status: self.status,
                headers: response_headers,
            },
            redacted,
            injected: Vec::new(),
            credential: None,
        };
        if let Some(extra) = extra {
            (meta.id, meta.route, meta.path) = (extra.id, extra.route, extra.path);
            (meta.started, meta.dialect) = (extra.started, extra.dialect);
            (end.outcome, end.t_us) = (extra.end.outcome, extra.end.t_us);
            (end.dropped_frames, end.violations) = (extra.end.dropped_frames, extra.violations);
            meta.credential = extra.credential;
        }
        let recording = Recording {
            path: path.to_path_buf(),
            meta,
            frames,
            end: Some(end),
        };
        (recording, synthesized)
    }
}

/// The body as frames: cut where tooltap's key says when its lengths add up to the body (the
/// recorded boundaries and times), else synthesized: one frame per SSE event of an unencoded
/// event stream, one frame for anything else, every time 0. The flag says which. Frames share
/// the body's bytes (no copy).
fn frames_of(
    body: Bytes,
    headers: &[(String, String)],
    extra: Option<&Extra>,
) -> (Vec<RecordedFrame>, bool) {
    let restored = extra.and_then(|extra| {
        let sum = (extra.frames.iter()).fold(0u64, |sum, (_, len)| sum.saturating_add(*len));
        (sum == body.len() as u64).then(|| {
            let mut end = 0;
            let cut = |&(t_us, len): &(u64, u64)| {
                end += len as usize;
                (t_us, end)
            };
            extra.frames.iter().map(cut).collect::<Vec<_>>()
        })
    });
    let synthesized = restored.is_none();
    let ends = restored.unwrap_or_else(|| {
        let encoded = header(headers, "content-encoding")
            .is_some_and(|value| !value.eq_ignore_ascii_case("identity"));
        let is_sse = header(headers, "content-type").is_some_and(|value| {
            let kind = value.split(';').next().unwrap_or_default();
            kind.trim().eq_ignore_ascii_case("text/event-stream")
        });
        let ends = if is_sse && !encoded {
            crate::engine::framing::sse::event_ends(&body)
        } else if body.is_empty() {
            Vec::new()
        } else {
            vec![body.len()]
        };
        ends.into_iter().map(|end| (0, end)).collect()
    });
    let mut start = 0;
    let frames = ends
        .into_iter()
        .enumerate()
        .map(|(seq, (t_us, end))| {
            let bytes = body.slice(start..end);
            start = end;
            RecordedFrame {
                seq: seq as u64,
                t_us,
                bytes,
            }
        })
        .collect();
    (frames, synthesized)
}

/// A request body as a recording keeps it: one-line JSON as it was sent (the engine and the
/// matcher then see the client's bytes), other JSON compact, text, or base64.
fn request_body(bytes: &[u8]) -> RecordedBody {
    if !bytes.contains(&b'\n')
        && let Ok(text) = std::str::from_utf8(bytes)
        && let Ok(raw) = serde_json::value::RawValue::from_string(text.to_owned())
    {
        return RecordedBody::Json(raw);
    }
    RecordedBody::from_bytes(bytes)
}

/// Headers with lowercase names, credentials dropped (named in `redacted`).
fn kept_headers(
    redactor: &crate::redact::Redactor,
    headers: Vec<(String, String)>,
    redacted: &mut Vec<String>,
) -> Vec<(String, String)> {
    headers
        .into_iter()
        .filter_map(|(name, value)| {
            let name = name.to_ascii_lowercase();
            if redactor.is_secret_header(&name) {
                redacted.push(format!("header:{name}"));
                None
            } else {
                Some((name, value))
            }
        })
        .collect()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str())
}

/// `scheme://authority` (user-info dropped), the path (`/` when empty) and the query.
fn split_url(url: &str) -> (String, String, Option<&str>) {
    let (before_query, query) = match url.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (url, None),
    };
    let before_query = before_query.split('#').next().unwrap_or(before_query);
    let (origin, path) = match before_query.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = match rest.find('/') {
                Some(at) => (&rest[..at], &rest[at..]),
                None => (rest, ""),
            };
            let host = authority.rsplit('@').next().unwrap_or(authority);
            (format!("{scheme}://{host}"), path)
        }
        None => (String::new(), before_query),
    };
    let path = if path.is_empty() { "/" } else { path };
    (
        origin,
        path.to_owned(),
        query.map(|q| q.split('#').next().unwrap_or(q)),
    )
}

/// The canonical reason phrase for a status (HAR's `statusText`, a cassette's `message`).
pub fn reason(status: u16) -> &'static str {
    http::StatusCode::from_u16(status)
        .ok()
        .and_then(|code| code.canonical_reason())
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_frames_are_used_only_when_they_add_up_to_the_body() {
        let body = b"data: a\n\ndata: b\n\n";
        let sse = [("content-type".to_owned(), "text/event-stream".to_owned())];
        let recording = |frames: Vec<(u64, u64)>| Extra {
            v: EXTRA_VERSION,
            id: "t1".into(),
            route: "r".into(),
            path: "/v1/chat/completions".into(),
            dialect: None,
            started: String::new(),
            frames,
            end: ExtraEnd {
                outcome: Outcome::Complete,
                t_us: 9,
                dropped_frames: 0,
            },
            violations: Vec::new(),
            credential: None,
        };
        let split = |frames: &[RecordedFrame]| -> Vec<(u64, Vec<u8>)> {
            frames.iter().map(|f| (f.t_us, f.bytes.to_vec())).collect()
        };
        let (frames, synthesized) = frames_of(
            Bytes::from_static(body),
            &sse,
            Some(&recording(vec![(3, 4), (7, 14)])),
        );
        assert!(!synthesized);
        assert_eq!(
            split(&frames),
            [(3, b"data".to_vec()), (7, b": a\n\ndata: b\n\n".to_vec())]
        );
        // An edited body, or lengths that overflow when added, fall back to events.
        for wrong in [vec![(0, 5)], vec![(0, u64::MAX), (0, 19)]] {
            let (frames, synthesized) =
                frames_of(Bytes::from_static(body), &sse, Some(&recording(wrong)));
            assert!(synthesized);
            assert_eq!(
                split(&frames),
                [(0, b"data: a\n\n".to_vec()), (0, b"data: b\n\n".to_vec())]
            );
        }
        let (frames, synthesized) = frames_of(Bytes::from_static(b"{}"), &[], None);
        assert!(synthesized && frames.len() == 1);
    }

    #[test]
    fn urls_split_without_credentials() {
        let (origin, path, query) = split_url("https://u:p@api.x.com:8443/v1/chat?key=1#f");
        assert_eq!(origin, "https://api.x.com:8443");
        assert_eq!(path, "/v1/chat");
        assert_eq!(query, Some("key=1"));
        assert_eq!(split_url("http://h").1, "/");
    }
}
