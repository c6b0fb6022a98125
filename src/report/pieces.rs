//! A recording's frames cut into fragments (stream events, or the buffered body) and the
//! pieces each fragment carries, placed in lanes by the dialect's tables.
//!
//! Input: the recorded frames, the response's content type and encoding, and a
//! [`DialectTables`]. Output: [`Fragment`]s in arrival order, each with the `seq` and time of the frame
//! that completed it (the same `seq` a violation carries), and its [`Piece`]s. Bytes that do not
//! frame or parse still become a fragment (with no pieces), so nothing recorded is hidden
//! silently: what the bounds (`super::bound`) leave out is counted and marked.

use serde::Serialize;
use serde_json::Value;

use super::bound::{MAX_DECODED, MAX_DECODED_STREAM, MAX_LISTED, Shown, marker};
use super::dialect::{DialectTables, Lane, PieceKind, PieceRule};
use crate::engine::SseFramer;
use crate::engine::decode::BodyDecoder;
use crate::record::RecordedFrame;

/// One event of a stream, or a whole buffered body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fragment {
    /// The frame whose bytes completed this fragment.
    pub seq: u64,
    pub t_us: u64,
    /// The SSE `event:` field, when one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The data payload (stream) or body (buffered) as text, kept only for fragments without
    /// pieces (the page shows it in the "other" lane; every byte is in the raw frames anyway).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub data: String,
    /// Bytes of `data` not shown (the exchange's allowance was spent).
    pub cut: u64,
    pub pieces: Vec<Piece>,
}

/// One id, name, argument or content piece inside a fragment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Piece {
    /// `"content"` or the tool-call index as a string.
    pub lane: String,
    pub kind: PieceKind,
    /// The piece's text (a string value as is, anything else as JSON); a cut text ends with
    /// the marker saying how many bytes are not shown.
    pub text: String,
    /// JSON pointer of the piece inside the fragment.
    pub ptr: String,
}

/// The fragments of one response, as far as the bounds let the page show them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Fragments {
    pub list: Vec<Fragment>,
    /// Fragments past [`MAX_LISTED`]: counted, not built.
    pub not_listed: u64,
    /// Why decoding or framing stopped before the end of the body, when it did.
    pub stopped: Option<String>,
}

/// Cuts the frames into fragments; their texts are cut to what `shown` still allows.
pub fn fragments(
    frames: &[RecordedFrame],
    content_type: Option<&str>,
    content_encoding: Option<&str>,
    dialect: &DialectTables,
    shown: &mut Shown,
) -> Fragments {
    let is_sse = content_type.is_some_and(|t| t.trim_start().starts_with("text/event-stream"));
    let limit = if is_sse {
        MAX_DECODED_STREAM
    } else {
        MAX_DECODED
    };
    let mut out = Fragments::default();
    let mut decoder = match BodyDecoder::new(content_encoding, limit) {
        Ok(decoder) => decoder,
        Err(error) => {
            out.stopped = Some(error.to_string());
            return out;
        }
    };
    if is_sse {
        let mut framer = SseFramer::new(MAX_DECODED);
        let mut events = Vec::new();
        for frame in frames {
            let decoded = match decoder.push(&frame.bytes) {
                Ok(decoded) => decoded,
                Err(error) => {
                    out.stopped = Some(error.to_string());
                    break;
                }
            };
            if let Err(error) = framer.push(decoded, &mut events) {
                out.stopped = Some(format!("SSE framing stopped: {error}"));
                break;
            }
            for event in events.drain(..) {
                out.push(
                    frame,
                    event.event,
                    event.data.as_bytes(),
                    dialect.stream,
                    shown,
                );
            }
        }
    } else {
        let mut body = Vec::new();
        for frame in frames {
            match decoder.push(&frame.bytes) {
                Ok(decoded) => body.extend_from_slice(decoded),
                Err(error) => {
                    out.stopped = Some(error.to_string());
                    break;
                }
            }
        }
        if out.stopped.is_none() {
            match decoder.finish() {
                Ok(rest) => body.extend_from_slice(rest),
                Err(error) => out.stopped = Some(error.to_string()),
            }
        }
        if let Some(last) = frames.last() {
            out.push(last, None, &body, dialect.buffered, shown);
        }
    }
    out
}

impl Fragments {
    /// Adds the fragment `data` makes, or counts it past [`MAX_LISTED`].
    fn push(
        &mut self,
        frame: &RecordedFrame,
        event: Option<String>,
        data: &[u8],
        rules: &[PieceRule],
        shown: &mut Shown,
    ) {
        if self.list.len() >= MAX_LISTED {
            self.not_listed += 1;
            return;
        }
        let mut pieces = match serde_json::from_slice::<Value>(data) {
            Ok(doc) => pieces_of(&doc, rules),
            Err(_) => Vec::new(),
        };
        let (data, cut) = if pieces.is_empty() {
            shown.lossy(data)
        } else {
            for piece in &mut pieces {
                let cut = shown.text(&mut piece.text);
                if cut > 0 {
                    piece.text.push_str(&marker(cut));
                }
            }
            (String::new(), 0)
        };
        self.list.push(Fragment {
            seq: frame.seq,
            t_us: frame.t_us,
            event,
            data,
            cut,
            pieces,
        });
    }
}

/// Every piece the rules find in one document.
pub fn pieces_of(doc: &Value, rules: &[PieceRule]) -> Vec<Piece> {
    let doc_type = doc.get("type").and_then(Value::as_str);
    let mut pieces = Vec::new();
    for rule in rules {
        if rule.when_type.is_some() && rule.when_type != doc_type {
            continue;
        }
        let mut items = Vec::new();
        expand(
            doc,
            rule.items.split('/').skip(1),
            String::new(),
            None,
            &mut items,
        );
        for (pointer, position) in items {
            let Some(item) = doc.pointer(&pointer) else {
                continue;
            };
            let lane = match rule.lane {
                Lane::Content => Some("content".to_string()),
                Lane::Field(field) => item
                    .pointer(field)
                    .and_then(Value::as_u64)
                    .map(|i| i.to_string()),
                Lane::Position => position.map(|i| i.to_string()),
                Lane::Fixed(name) => Some(name.to_string()),
            };
            let Some(lane) = lane else { continue };
            for (kind, relative) in rule.parts {
                let ptr = normalise(&format!("{pointer}{relative}"));
                match doc.pointer(&ptr) {
                    None | Some(Value::Null) => {}
                    Some(value) => pieces.push(Piece {
                        lane: lane.clone(),
                        kind: *kind,
                        text: match value {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        },
                        ptr,
                    }),
                }
            }
        }
    }
    pieces
}

/// Every concrete pointer a pattern matches, with the index the last `*` took.
fn expand<'a>(
    value: &Value,
    mut rest: impl Iterator<Item = &'a str> + Clone,
    prefix: String,
    position: Option<usize>,
    out: &mut Vec<(String, Option<usize>)>,
) {
    let Some(token) = rest.next() else {
        out.push((prefix, position));
        return;
    };
    if token == "*" {
        if let Value::Array(items) = value {
            for (i, item) in items.iter().enumerate() {
                expand(item, rest.clone(), format!("{prefix}/{i}"), Some(i), out);
            }
        }
        return;
    }
    let unescaped = token.replace("~1", "/").replace("~0", "~");
    let next = match value {
        Value::Object(map) => map.get(&unescaped),
        Value::Array(items) => unescaped.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    };
    if let Some(next) = next {
        expand(next, rest, format!("{prefix}/{token}"), position, out);
    }
}

/// Resolves `..` tokens in a pointer.
fn normalise(pointer: &str) -> String {
    let mut tokens: Vec<&str> = Vec::new();
    for token in pointer.split('/').skip(1) {
        if token == ".." {
            tokens.pop();
        } else {
            tokens.push(token);
        }
    }
    tokens.iter().map(|t| format!("/{t}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Dialect;
    use crate::report::dialect::tables;

    #[test]
    fn chat_stream_pieces_are_told_apart_by_lane_and_kind() {
        let doc: Value = serde_json::json!({"choices":[{"index":0,"delta":{"content":"hi",
            "tool_calls":[{"index":1,"id":"c1","function":{"name":"f","arguments":"{\""}}]},
            "finish_reason":null}]});
        let pieces = pieces_of(&doc, tables(Dialect::Chat).stream);
        let seen: Vec<(&str, PieceKind, &str, &str)> = pieces
            .iter()
            .map(|p| (p.lane.as_str(), p.kind, p.text.as_str(), p.ptr.as_str()))
            .collect();
        assert_eq!(
            seen,
            vec![
                (
                    "content",
                    PieceKind::Content,
                    "hi",
                    "/choices/0/delta/content"
                ),
                ("1", PieceKind::Id, "c1", "/choices/0/delta/tool_calls/0/id"),
                (
                    "1",
                    PieceKind::Name,
                    "f",
                    "/choices/0/delta/tool_calls/0/function/name"
                ),
                (
                    "1",
                    PieceKind::Arguments,
                    "{\"",
                    "/choices/0/delta/tool_calls/0/function/arguments"
                ),
            ]
        );
    }

    #[test]
    fn legacy_function_calls_and_custom_inputs_are_pieces_too() {
        let legacy: Value = serde_json::json!({"choices":[{"index":0,"delta":{
            "function_call":{"name":"f","arguments":"{\"a\""}},"finish_reason":null}]});
        let pieces = pieces_of(&legacy, tables(Dialect::Chat).stream);
        let seen: Vec<(&str, PieceKind, &str)> = pieces
            .iter()
            .map(|p| (p.lane.as_str(), p.kind, p.ptr.as_str()))
            .collect();
        assert_eq!(
            seen,
            vec![
                (
                    "function_call",
                    PieceKind::Name,
                    "/choices/0/delta/function_call/name"
                ),
                (
                    "function_call",
                    PieceKind::Arguments,
                    "/choices/0/delta/function_call/arguments"
                ),
            ]
        );
        let custom: Value = serde_json::json!({"choices":[{"index":0,"delta":{"tool_calls":[
            {"index":0,"custom":{"input":"*** Begin Patch"}}]},"finish_reason":null}]});
        let pieces = pieces_of(&custom, tables(Dialect::Chat).stream);
        assert_eq!(pieces.len(), 1);
        assert_eq!(
            (
                pieces[0].lane.as_str(),
                pieces[0].kind,
                pieces[0].text.as_str()
            ),
            ("0", PieceKind::Arguments, "*** Begin Patch")
        );
    }

    #[test]
    fn responses_events_are_data_too() {
        let doc: Value = serde_json::json!({"type":"response.function_call_arguments.delta",
            "output_index":2,"delta":"{\"a\""});
        let pieces = pieces_of(&doc, tables(Dialect::Responses).stream);
        assert_eq!(pieces.len(), 1);
        assert_eq!(
            (pieces[0].lane.as_str(), pieces[0].kind),
            ("2", PieceKind::Arguments)
        );
    }

    #[test]
    fn frames_become_events_at_the_completing_seq() {
        let frame = |seq, t_us, text: &str| RecordedFrame {
            seq,
            t_us,
            bytes: bytes::Bytes::from(text.to_string()),
        };
        let frames = [
            frame(0, 10, "data: {\"choices\":[{\"delta\":{\"con"),
            frame(1, 20, "tent\":\"a\"}}]}\n\ndata: [DONE]\n\n"),
        ];
        let mut shown = Shown::new(1 << 20);
        let got = fragments(
            &frames,
            Some("text/event-stream"),
            None,
            tables(Dialect::Chat),
            &mut shown,
        )
        .list;
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].seq, got[0].t_us, got[0].pieces.len()), (1, 20, 1));
        assert_eq!((got[1].data.as_str(), got[1].pieces.len()), ("[DONE]", 0));
    }
}
