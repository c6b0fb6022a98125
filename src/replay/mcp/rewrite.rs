//! A recorded MCP answer fitted to the client replay is talking to: pure code over bytes.
//!
//! Input: the recorded response body (one JSON document, or the frames of a server-sent-event
//! stream) and an [`Echo`]: the JSON-RPC id and progress token the recording's request carried
//! and the ones this client sent, and a prefix for event ids. Output: the same body where the
//! response to the request carries the client's id (same value, same JSON type: a client that
//! sent `"7"` gets `"7"` back, one that sent `7` gets `7`), `notifications/progress` carry the
//! client's token, and every SSE `id:` is prefixed so ids stay unique when one recording is
//! served twice in a session. Only those values change: the id's bytes are replaced where they
//! stand (key order, spacing and the rest of the text stay as recorded), an event stays one
//! frame of its own with its line endings, comments, `event:` and `retry:` lines, and priming
//! events (an id with empty data) keep their empty data. A message that is not JSON, a batch
//! (an array) and a server's own request on the stream (its id is the server's) are left alone.

use std::ops::Range;

use bytes::Bytes;
use serde_json::Value;

use crate::engine::json_scan::Scan;
use crate::quirk::sse::event_ranges;
use crate::record::RecordedFrame;

/// What to rewrite in a recorded answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Echo {
    /// The id the recording's request carried, which its response echoes.
    pub recorded_id: Value,
    /// The id this client sent.
    pub client_id: Value,
    /// The recording's `params._meta.progressToken` and this client's, when both are there.
    pub tokens: Option<(Value, Value)>,
    /// Put before every SSE event id (empty: ids as recorded).
    pub event_prefix: String,
}

/// One JSON-RPC message's text fitted to the client; `None` when nothing in it changes.
pub fn message(text: &str, echo: &Echo) -> Option<String> {
    let value: Value = serde_json::from_str(text).ok()?;
    let object = value.as_object()?;
    let is_response = object.contains_key("result") || object.contains_key("error");
    if is_response
        && object.get("id") == Some(&echo.recorded_id)
        && echo.recorded_id != echo.client_id
    {
        return Some(replace(text, &["id"], &echo.client_id));
    }
    let (recorded, client) = echo.tokens.as_ref()?;
    let is_progress =
        object.get("method").and_then(Value::as_str) == Some("notifications/progress");
    let token = value.pointer("/params/progressToken");
    (is_progress && token == Some(recorded) && recorded != client)
        .then(|| replace(text, &["params", "progressToken"], client))
}

/// A whole JSON body fitted to the client; `None` when nothing changes.
pub fn json_body(body: &[u8], echo: &Echo) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(body).ok()?;
    message(text, echo).map(String::into_bytes)
}

/// A recorded event stream fitted to the client, one frame per event (each at the time its
/// last byte was recorded); bytes after the last blank line are one last frame as recorded.
pub fn sse_frames(frames: &[RecordedFrame], echo: &Echo) -> Vec<RecordedFrame> {
    let mut whole = Vec::new();
    let mut ends = Vec::with_capacity(frames.len());
    for frame in frames {
        whole.extend_from_slice(&frame.bytes);
        ends.push((whole.len(), frame.t_us));
    }
    // The time of the frame that holds byte `at - 1`.
    let time_at = |at: usize| {
        ends.iter()
            .find(|(end, _)| *end >= at)
            .or(ends.last())
            .map_or(0, |(_, t_us)| *t_us)
    };
    let mut out = Vec::new();
    let mut done = 0;
    for (start, end) in event_ranges(&whole, true) {
        let raw = &whole[start..end];
        let bytes = match std::str::from_utf8(raw) {
            Ok(text) => event(text, echo).into_bytes(),
            Err(_) => raw.to_vec(),
        };
        out.push((bytes, time_at(end)));
        done = end;
    }
    if done < whole.len() {
        out.push((whole[done..].to_vec(), time_at(whole.len())));
    }
    out.into_iter()
        .enumerate()
        .map(|(seq, (bytes, t_us))| RecordedFrame {
            seq: seq as u64,
            t_us,
            bytes: Bytes::from(bytes),
        })
        .collect()
}

/// One event (its lines and the blank line that ends it) fitted to the client.
fn event(text: &str, echo: &Echo) -> String {
    let lines: Vec<(&str, &str)> = split_lines(text);
    let data_lines = lines
        .iter()
        .filter(|(line, _)| line.starts_with("data:"))
        .count();
    let joined: Option<String> = (data_lines > 1).then(|| {
        lines
            .iter()
            .filter_map(|(line, _)| line.strip_prefix("data:"))
            .map(|rest| rest.strip_prefix(' ').unwrap_or(rest))
            .collect::<Vec<_>>()
            .join("\n")
    });
    let rewritten_joined = joined.as_deref().and_then(|text| message(text, echo));
    let mut out = String::with_capacity(text.len() + echo.event_prefix.len());
    let mut joined_written = false;
    for (line, ending) in lines {
        if let Some(rest) = line.strip_prefix("id:") {
            let value = rest.strip_prefix(' ').unwrap_or(rest);
            out.push_str("id: ");
            out.push_str(&echo.event_prefix);
            out.push_str(value);
        } else if let Some(rest) = line.strip_prefix("data:") {
            let (space, value) = match rest.strip_prefix(' ') {
                Some(value) => (" ", value),
                None => ("", rest),
            };
            match (&rewritten_joined, data_lines) {
                (Some(_), _) if joined_written => continue,
                (Some(whole), _) => {
                    // Written back as data lines again, one per line of the message.
                    joined_written = true;
                    let parts: Vec<&str> = whole.split('\n').collect();
                    for (i, part) in parts.iter().enumerate() {
                        out.push_str("data: ");
                        out.push_str(part);
                        if i + 1 < parts.len() {
                            out.push_str(ending);
                        }
                    }
                }
                (None, 1) => {
                    out.push_str("data:");
                    out.push_str(space);
                    out.push_str(&message(value, echo).unwrap_or_else(|| value.to_owned()));
                }
                (None, _) => out.push_str(line),
            }
        } else {
            out.push_str(line);
        }
        out.push_str(ending);
    }
    out
}

/// The lines of `text` with their endings (`\r\n`, `\n`, `\r`, or none for a last line).
fn split_lines(text: &str) -> Vec<(&str, &str)> {
    let bytes = text.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'\r' if bytes.get(at + 1) == Some(&b'\n') => {
                lines.push((&text[start..at], &text[at..at + 2]));
                at += 2;
                start = at;
            }
            b'\r' | b'\n' => {
                lines.push((&text[start..at], &text[at..at + 1]));
                at += 1;
                start = at;
            }
            _ => at += 1,
        }
    }
    if start < bytes.len() {
        lines.push((&text[start..], ""));
    }
    lines
}

/// `text` with the value at the member path `keys` replaced by `value`: in place when the
/// members can be found by the strict scanner, else the whole message written again.
fn replace(text: &str, keys: &[&str], value: &Value) -> String {
    let written = value.to_string();
    match span(text, keys) {
        Some(range) => {
            let mut out = String::with_capacity(text.len() + written.len());
            out.push_str(&text[..range.start]);
            out.push_str(&written);
            out.push_str(&text[range.end..]);
            out
        }
        None => {
            let mut parsed: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            let mut target = Some(&mut parsed);
            for key in keys {
                target = target.and_then(|t| t.get_mut(*key));
            }
            if let Some(target) = target {
                *target = value.clone();
            }
            parsed.to_string()
        }
    }
}

/// The byte range of the value at the member path `keys` of the object `text`.
fn span(text: &str, keys: &[&str]) -> Option<Range<usize>> {
    let (first, rest) = keys.split_first()?;
    let mut scan = Scan::new(text);
    let mut found = None;
    scan.object(|scan, key| {
        if key == *first && found.is_none() {
            scan.peek()?;
            let start = scan.position();
            scan.skip()?;
            found = Some(start..scan.position());
            Some(())
        } else {
            scan.skip()
        }
    })?;
    let range = found?;
    if rest.is_empty() {
        return Some(range);
    }
    let inner = span(&text[range.clone()], rest)?;
    Some(range.start + inner.start..range.start + inner.end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn echo(recorded: Value, client: Value) -> Echo {
        Echo {
            recorded_id: recorded,
            client_id: client,
            tokens: None,
            event_prefix: String::new(),
        }
    }

    #[test]
    fn the_response_gets_the_clients_id_with_its_type_and_nothing_else_moves() {
        let body = br#"{"jsonrpc":"2.0", "id" : 4,"result":{"z":1,"a":{"id":4}}}"#;
        let out = json_body(body, &echo(json!(4), json!("c-9"))).expect("changed");
        assert_eq!(
            String::from_utf8(out).expect("utf8"),
            r#"{"jsonrpc":"2.0", "id" : "c-9","result":{"z":1,"a":{"id":4}}}"#
        );
        let out = json_body(
            br#"{"id":"1","jsonrpc":"2.0","error":{}}"#,
            &echo(json!("1"), json!(1)),
        );
        assert_eq!(
            out.as_deref(),
            Some(&br#"{"id":1,"jsonrpc":"2.0","error":{}}"#[..])
        );
        // Equal ids, a request of the server's own, a batch, not JSON: untouched.
        assert_eq!(
            json_body(br#"{"id":4,"result":{}}"#, &echo(json!(4), json!(4))),
            None
        );
        let request = br#"{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage"}"#;
        assert_eq!(json_body(request, &echo(json!(4), json!(5))), None);
        assert_eq!(
            json_body(br#"[{"id":4,"result":{}}]"#, &echo(json!(4), json!(5))),
            None
        );
        assert_eq!(json_body(b"not json", &echo(json!(4), json!(5))), None);
        // A key written with an escape: the message is written again, the id still replaced.
        let escaped = br#"{"\u0069d":4,"result":{}}"#;
        let out = json_body(escaped, &echo(json!(4), json!(5))).expect("changed");
        assert_eq!(
            serde_json::from_slice::<Value>(&out).expect("json")["id"],
            json!(5)
        );
    }

    #[test]
    fn sse_events_keep_their_lines_and_boundaries_and_get_the_clients_id_and_token() {
        let stream = "id: s_1\r\nretry: 100\r\ndata: \r\n\r\n: ping - now\r\n\r\nevent: message\r\nid: s_2\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":4,\"progress\":1}}\r\n\r\nevent: message\r\nid: s_3\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"content\":[]}}\r\n\r\n";
        // Recorded in two frames that cut an event in half.
        let frames = [
            RecordedFrame {
                seq: 0,
                t_us: 10,
                bytes: Bytes::copy_from_slice(&stream.as_bytes()[..40]),
            },
            RecordedFrame {
                seq: 1,
                t_us: 20,
                bytes: Bytes::copy_from_slice(&stream.as_bytes()[40..]),
            },
        ];
        let echo = Echo {
            recorded_id: json!(4),
            client_id: json!(1),
            tokens: Some((json!(4), json!("p-1"))),
            event_prefix: "r7.".into(),
        };
        let out = sse_frames(&frames, &echo);
        let texts: Vec<String> = out
            .iter()
            .map(|f| String::from_utf8(f.bytes.to_vec()).expect("utf8"))
            .collect();
        assert_eq!(
            texts,
            [
                "id: r7.s_1\r\nretry: 100\r\ndata: \r\n\r\n",
                ": ping - now\r\n\r\n",
                "event: message\r\nid: r7.s_2\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p-1\",\"progress\":1}}\r\n\r\n",
                "event: message\r\nid: r7.s_3\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\r\n\r\n",
            ]
        );
        let times: Vec<u64> = out.iter().map(|f| f.t_us).collect();
        assert_eq!(times, [10, 20, 20, 20]);
        let seqs: Vec<u64> = out.iter().map(|f| f.seq).collect();
        assert_eq!(seqs, [0, 1, 2, 3]);
    }

    #[test]
    fn multi_line_data_is_joined_rewritten_and_an_unfinished_tail_is_kept() {
        let stream = "data: {\"id\":2,\ndata: \"result\":{}}\n\ndata: {\"id\"";
        let frames = [RecordedFrame {
            seq: 0,
            t_us: 5,
            bytes: Bytes::from(stream),
        }];
        let out = sse_frames(&frames, &echo(json!(2), json!(3)));
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].bytes, "data: {\"id\":3,\ndata: \"result\":{}}\n\n");
        assert_eq!(out[1].bytes, "data: {\"id\"");
    }
}
