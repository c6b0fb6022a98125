//! §4.1 id rules across exchanges: `mcp.jsonrpc.request_id_reused` (an error while the first
//! is in flight; a warning when reused after its answer on a 2025-era session),
//! `response_id_unknown` and `response_duplicate`; `mcp.cancel.initialize` and
//! `unknown_request` (2025-era: a client's `notifications/cancelled`); and the conversation's
//! id table, which progress reads.
//!
//! A response on a POST that carried one request is `response_id_mismatch`'s (per exchange)
//! when its id differs: here only the others (GET streams, batches) can be unknown. A
//! request's flight ends with its exchange (answered, refused or broken).

use serde_json::Value;

use super::conversation::{Conversation, IdState};
use super::seen::{HttpMethod, Msg, RpcId, is_response, method_of};
use super::{Out, Seen};
use crate::engine::RuleId;

pub(super) fn judge(conversation: &mut Conversation, seen: &Seen<'_>, modern: bool, out: &mut Out) {
    let mine: Vec<RpcId> = seen.requests().filter_map(|m| RpcId::of(m.value)).collect();
    for msg in seen.requests() {
        if let Some(id) = RpcId::of(msg.value) {
            sent(conversation, seen, msg, id, modern, out);
        }
    }
    if !modern {
        for msg in seen
            .sent
            .iter()
            .filter(|m| method_of(m.value) == Some("notifications/cancelled"))
        {
            cancelled(conversation, msg, out);
        }
    }
    let single_post = seen.method == HttpMethod::Post && mine.len() == 1;
    let mut answered: Vec<RpcId> = Vec::new();
    for msg in seen.received.iter().filter(|m| is_response(m.value)) {
        let Some(id) = RpcId::of(msg.value).filter(|id| *id != RpcId::Other("null".into())) else {
            continue;
        };
        if answered.contains(&id) {
            let detail = format!("a second response for id {id} in this exchange");
            out.push(
                RuleId::McpJsonrpcResponseDuplicate,
                Some(msg),
                "/id",
                detail,
            );
            continue;
        }
        answered.push(id.clone());
        if !mine.contains(&id) {
            other(conversation, seen, msg, &id, single_post, out);
        }
    }
    // The exchange's end ends its requests' flight, answered or not (an HTTP refusal, a broken
    // stream): a later reuse of the id is then not "in flight".
    for id in mine.iter().chain(&answered) {
        if let Some(state) = conversation.ids.get_mut(id) {
            state.answered_us.get_or_insert(seen.end_us);
        }
    }
}

/// One client request: its id against the table, then into it.
fn sent(
    conversation: &mut Conversation,
    seen: &Seen<'_>,
    msg: &Msg<'_>,
    id: RpcId,
    modern: bool,
    out: &mut Out,
) {
    if let Some(earlier) = conversation.ids.get(&id).filter(|_| !conversation.shared) {
        match earlier.answered_us {
            Some(at) if at <= seen.start_us => {
                if !modern {
                    let detail =
                        format!("request id {id} was already used (and answered) in this session");
                    out.warn(RuleId::McpJsonrpcRequestIdReused, Some(msg), "/id", detail);
                }
            }
            _ => {
                let detail = format!("request id {id} is still in flight in this conversation");
                out.push(RuleId::McpJsonrpcRequestIdReused, Some(msg), "/id", detail);
            }
        }
    }
    let token = msg
        .value
        .pointer("/params/_meta/progressToken")
        .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
        .map(Value::to_string);
    let evicted = conversation.ids.insert(
        id,
        IdState {
            answered_us: None,
            responded_us: None,
            progress_token: token,
            initialize: method_of(msg.value) == Some("initialize"),
        },
    );
    if evicted > 0 {
        conversation.evicted = true;
        out.cuts.ids_evicted += evicted as u64;
    }
}

/// A response for an id this exchange did not send: a duplicate, or unknown.
fn other(
    conversation: &Conversation,
    seen: &Seen<'_>,
    msg: &Msg<'_>,
    id: &RpcId,
    single_post: bool,
    out: &mut Out,
) {
    if seen.resumed || conversation.shared {
        // A `Last-Event-ID` resumption delivers what a broken stream owed; without a session
        // the id may be another client's.
        return;
    }
    match conversation.ids.get(id) {
        Some(IdState {
            answered_us: Some(at),
            ..
        }) if *at <= seen.start_us => {
            let detail = format!("id {id} was answered already");
            out.push(
                RuleId::McpJsonrpcResponseDuplicate,
                Some(msg),
                "/id",
                detail,
            );
        }
        Some(_) => {}
        None if single_post || !conversation.knows_all() => {}
        None => {
            let detail =
                format!("a response for id {id}, which no request of this conversation used");
            out.push(
                RuleId::McpJsonrpcResponseIdUnknown,
                Some(msg),
                "/id",
                detail,
            );
        }
    }
}

/// A client's `notifications/cancelled`: of its `initialize` (an error), or of an id it never
/// sent (a warning, only where the conversation's ids are all known).
fn cancelled(conversation: &Conversation, msg: &Msg<'_>, out: &mut Out) {
    let Some(id) = RpcId::cancelled(msg.value) else {
        return;
    };
    match conversation.ids.get(&id) {
        Some(state) if state.initialize => {
            let detail = format!("the client cancelled its initialize request (id {id})");
            out.push(
                RuleId::McpCancelInitialize,
                Some(msg),
                "/params/requestId",
                detail,
            );
        }
        Some(_) => {}
        None if conversation.knows_all() => {
            let detail =
                format!("notifications/cancelled names id {id}, which the client never sent");
            out.push(
                RuleId::McpCancelUnknownRequest,
                Some(msg),
                "/params/requestId",
                detail,
            );
        }
        None => {}
    }
}
