//! Quirks on a Bedrock Converse exchange, buffered (`converse`, one JSON `ConverseResponse`) or
//! streamed (`converse-stream`, AWS event-stream binary messages).
//!
//! Input: the whole body (an event stream is held whole, like an NDJSON stream: live, under
//! `--inject`, bounded by `inject.max_hold`). A body that is one JSON document is rewritten as a
//! `ConverseResponse`; a body that opens with an event-stream prelude is decoded message by
//! message: a message the quirk leaves alone keeps its exact bytes, a rewritten one is written
//! again with its new lengths and both CRCs ([`Message::encode`], the writer enforce's
//! `:exception` message uses), so the stream still decodes wherever the quirk means it to.
//! Bytes after a message that does not decode pass untouched. Output: the rewritten body, or
//! nothing when the quirk finds nothing to break. Each is a wire seen in the wild
//! (docs/quirks.md):
//!
//! * `bedrock-stop-reason-end-turn`: `stopReason: "tool_use"` on a turn with toolUse blocks
//!   becomes `"end_turn"` (a gateway's egress, bifrost#5206).
//! * `bedrock-tool-use-id-reused`: every later toolUse block carries the first block's
//!   `toolUseId`.
//! * `bedrock-empty-text-start`: on a stream, a text block opened by `contentBlockStart` with
//!   an empty `start: {}` before its first delta (aimock's and spinifex's wire).
//! * `bedrock-input-not-json`: on a stream, the toolUse input fragments written with single
//!   quotes, Python-dict style, so they do not join into JSON.
//! * `bedrock-frame-bad-crc`: on a stream, the first `contentBlockDelta` message's CRC flipped.

use std::collections::BTreeSet;

use serde_json::Value;

use super::catalogue::QuirkId;
use crate::engine::framing::EventStreamDecoder;
use crate::engine::framing::event_stream::{self, DecodeEnd, HeaderValue, Message};

/// The body with `quirk` applied, or `None` when it does not apply.
pub fn buffered(quirk: QuirkId, body: &[u8]) -> Option<Vec<u8>> {
    if let Ok(mut document) = serde_json::from_slice::<Value>(body) {
        let changed = match quirk {
            QuirkId::BedrockStopReasonEndTurn => {
                let calls = !tool_uses(&mut document).is_empty();
                calls && end_turn(&mut document)
            }
            QuirkId::BedrockToolUseIdReused => {
                let (mut first, mut changed) = (None, false);
                for tool in tool_uses(&mut document) {
                    changed |= reuse_id(tool, &mut first);
                }
                changed
            }
            _ => false,
        };
        return changed.then(|| document.to_string().into_bytes());
    }
    if !event_stream::starts_with_prelude(body) {
        return None;
    }
    stream(quirk, body)
}

/// No stream event is rewritten alone: an event stream is rewritten whole ([`buffered`]).
pub fn event(_quirk: QuirkId, _data: &mut Value) -> bool {
    false
}

/// What the rewrite of a stream remembers from earlier messages.
#[derive(Debug, Default)]
struct Seen {
    /// A `contentBlockStart` with `start.toolUse` came.
    calls: bool,
    /// The first toolUse block's id.
    first_id: Option<Value>,
    /// The `contentBlockIndex`es a `contentBlockStart` (or this quirk) opened.
    started: BTreeSet<u64>,
    /// A message's CRC was flipped.
    corrupted: bool,
}

/// An event stream rewritten message by message; `None` when no message changed.
fn stream(quirk: QuirkId, body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len() + 64);
    let mut seen = Seen::default();
    let mut changed = false;
    let mut readable = true;
    let mut start = 0;
    for end in event_stream::message_ends(body) {
        let raw = &body[start..end];
        start = end;
        let message = if readable { decode_one(raw) } else { None };
        readable = message.is_some();
        match message.and_then(|message| rewrite(quirk, &mut seen, message, raw)) {
            Some(bytes) => {
                changed = true;
                out.extend_from_slice(&bytes);
            }
            None => out.extend_from_slice(raw),
        }
    }
    changed.then_some(out)
}

/// `raw` as one whole, verified message.
fn decode_one(raw: &[u8]) -> Option<Message> {
    let mut decoder = EventStreamDecoder::new(raw.len());
    let mut messages = Vec::new();
    decoder.push(raw, &mut messages).ok()?;
    if decoder.end() != DecodeEnd::Clean || messages.len() != 1 {
        return None;
    }
    messages.pop()
}

/// The bytes to send for one message, or `None` to keep its own.
fn rewrite(quirk: QuirkId, seen: &mut Seen, message: Message, raw: &[u8]) -> Option<Vec<u8>> {
    let event = message.header(":event-type")?.to_owned();
    let mut payload: Value = serde_json::from_slice(&message.payload).ok()?;
    let index = payload.get("contentBlockIndex").and_then(Value::as_u64);
    match event.as_str() {
        "contentBlockStart" => {
            seen.started.extend(index);
            let tool = payload.pointer_mut("/start/toolUse")?;
            seen.calls = true;
            let reused =
                quirk == QuirkId::BedrockToolUseIdReused && reuse_id(tool, &mut seen.first_id);
            reused.then(|| with_payload(message, &payload))
        }
        "contentBlockDelta" => match quirk {
            QuirkId::BedrockFrameBadCrc if !seen.corrupted => {
                seen.corrupted = true;
                let mut bytes = raw.to_vec();
                if let Some(last) = bytes.last_mut() {
                    *last ^= 0xff;
                }
                Some(bytes)
            }
            QuirkId::BedrockEmptyTextStart => {
                let index = index?;
                let text = payload.pointer("/delta/text").is_some();
                if !text || !seen.started.insert(index) {
                    return None;
                }
                let start = serde_json::json!({"contentBlockIndex": index, "start": {}});
                let mut opening = Message {
                    headers: message.headers,
                    payload: Vec::new(),
                };
                for (name, value) in &mut opening.headers {
                    if name == ":event-type" {
                        *value = HeaderValue::String("contentBlockStart".to_owned());
                    }
                }
                let mut bytes = with_payload(opening, &start);
                bytes.extend_from_slice(raw);
                Some(bytes)
            }
            QuirkId::BedrockInputNotJson => {
                let input = payload.pointer_mut("/delta/toolUse/input")?;
                let text = input.as_str().filter(|text| text.contains('"'))?;
                *input = Value::from(text.replace('"', "'"));
                Some(with_payload(message, &payload))
            }
            _ => None,
        },
        "messageStop" if quirk == QuirkId::BedrockStopReasonEndTurn && seen.calls => {
            end_turn(&mut payload).then(|| with_payload(message, &payload))
        }
        _ => None,
    }
}

/// `message` with `payload` in place of its own, written with its lengths and CRCs.
fn with_payload(mut message: Message, payload: &Value) -> Vec<u8> {
    message.payload = payload.to_string().into_bytes();
    message.encode()
}

/// `stopReason: "tool_use"` made `"end_turn"`.
fn end_turn(value: &mut Value) -> bool {
    match value.get_mut("stopReason") {
        Some(reason) if reason == "tool_use" => {
            *reason = Value::from("end_turn");
            true
        }
        _ => false,
    }
}

/// A toolUse block's id made the first block's (the first one is remembered).
fn reuse_id(tool: &mut Value, first: &mut Option<Value>) -> bool {
    let Some(id) = tool.get_mut("toolUseId") else {
        return false;
    };
    match first {
        None => {
            *first = Some(id.clone());
            false
        }
        Some(first) if id != first => {
            *id = first.clone();
            true
        }
        Some(_) => false,
    }
}

/// A buffered response's client toolUse blocks (a `server_tool_use` block is the server's).
fn tool_uses(document: &mut Value) -> Vec<&mut Value> {
    document
        .pointer_mut("/output/message/content")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(|block| block.get_mut("toolUse"))
        .filter(|tool| tool.get("type").and_then(Value::as_str) != Some("server_tool_use"))
        .collect()
}

#[cfg(test)]
#[path = "bedrock_tests.rs"]
mod tests;
