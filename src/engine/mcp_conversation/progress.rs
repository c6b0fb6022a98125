//! §4.9 progress (`mcp.progress.token_unknown`, `not_increasing`, `after_completion`) and
//! §4.3 stream rules across exchanges (`mcp.sse.event_id_reused`, `response_on_get_stream`),
//! read in the order the server sent the messages.

use serde_json::Value;

use super::conversation::{Conversation, ProgressState};
use super::seen::{HttpMethod, Msg, RpcId, is_response, method_of};
use super::{Out, Seen};
use crate::engine::RuleId;

/// `stream`: the number of the stream the exchange's events belong to ([`super::resume`]).
pub(super) fn judge(
    conversation: &mut Conversation,
    seen: &Seen<'_>,
    stream: Option<u64>,
    out: &mut Out,
) {
    register_tokens(conversation, seen, out);
    let legacy = !seen.modern() && !conversation.shared;
    for msg in &seen.received {
        if legacy {
            if let Some(stream) = stream {
                event_id(conversation, seen, msg, stream, out);
            }
            on_get_stream(seen, msg, out);
        }
        if method_of(msg.value) == Some("notifications/progress") {
            progress(conversation, msg, out);
        } else if is_response(msg.value) {
            complete(conversation, msg);
        }
    }
}

/// The tokens this exchange's requests asked progress for.
fn register_tokens(conversation: &mut Conversation, seen: &Seen<'_>, out: &mut Out) {
    for msg in seen.requests() {
        let Some(token) = msg.value.pointer("/params/_meta/progressToken") else {
            continue;
        };
        let evicted = conversation
            .progress
            .insert(token.to_string(), ProgressState::default());
        if evicted > 0 {
            conversation.evicted = true;
            out.cuts.ids_evicted += evicted as u64;
        }
    }
}

fn progress(conversation: &mut Conversation, msg: &Msg<'_>, out: &mut Out) {
    let Some(token) = msg.value.pointer("/params/progressToken") else {
        return;
    };
    let value = msg
        .value
        .pointer("/params/progress")
        .and_then(Value::as_f64);
    let knows_all = conversation.knows_all();
    let Some(state) = conversation.progress.get_mut(&token.to_string()) else {
        if knows_all {
            let detail = format!(
                "progress for token {token}, which no request of this conversation asked for"
            );
            out.push(
                RuleId::McpProgressTokenUnknown,
                Some(msg),
                "/params/progressToken",
                detail,
            );
        }
        return;
    };
    if state.done {
        let detail = format!("progress for token {token} after its request was answered");
        out.push(
            RuleId::McpProgressAfterCompletion,
            Some(msg),
            "/params/progressToken",
            detail,
        );
        return;
    }
    if let (Some(last), Some(now)) = (state.last, value)
        && now <= last
    {
        let detail = format!("progress {now} for token {token} after {last}: it must increase");
        out.push(
            RuleId::McpProgressNotIncreasing,
            Some(msg),
            "/params/progress",
            detail,
        );
    }
    if value.is_some() {
        state.last = value;
    }
}

/// A response ends its request's progress token.
fn complete(conversation: &mut Conversation, msg: &Msg<'_>) {
    let token = RpcId::of(msg.value)
        .and_then(|id| conversation.ids.get(&id))
        .and_then(|state| state.progress_token.clone());
    if let Some(state) = token.and_then(|t| conversation.progress.get_mut(&t)) {
        state.done = true;
    }
}

/// An SSE event id used twice in one session (a resumption replays: not judged, and its new
/// ids are remembered); each new id is remembered with its `stream`.
fn event_id(
    conversation: &mut Conversation,
    seen: &Seen<'_>,
    msg: &Msg<'_>,
    stream: u64,
    out: &mut Out,
) {
    let Some(id) = msg.event_id.filter(|id| !id.is_empty()) else {
        return;
    };
    if conversation.event_ids.contains(&Box::from(id)) {
        if !seen.resumed {
            let detail = format!("SSE event id {id:?} was already used in this session");
            out.push(RuleId::McpSseEventIdReused, Some(msg), "", detail);
        }
        return;
    }
    let evicted = conversation.event_ids.insert(id.into(), stream);
    if evicted > 0 {
        conversation.evicted = true;
        out.cuts.ids_evicted += evicted as u64;
    }
}

/// A JSON-RPC response on a GET stream that is not a resumption.
fn on_get_stream(seen: &Seen<'_>, msg: &Msg<'_>, out: &mut Out) {
    if seen.method == HttpMethod::Get && !seen.resumed && is_response(msg.value) {
        let detail =
            "a JSON-RPC response on the GET stream, which is not a Last-Event-ID resumption"
                .to_owned();
        out.push(RuleId::McpSseResponseOnGetStream, Some(msg), "/id", detail);
    }
}
