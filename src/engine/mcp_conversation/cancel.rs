//! `mcp.cancel.response_after_cancel` (2025-era sessions): a response that arrived more than
//! the grace (`inspect.mcp.cancel_grace`) after the client's `notifications/cancelled` for its
//! request. Responses racing the cancellation are allowed; a server that answers long after
//! it was told to stop did not stop.
//!
//! When a response arrived is known only to the exchange: it is taken as the end of the POST
//! answer it is the last message of (a response ends its stream), else as the start of the
//! stream that carried it (a GET or resumed stream: a bound below, so the rule fires only when
//! even that is past the grace). The two settle in either order: a call's POST usually settles
//! before the cancellation (it started first), and the violation is then reported on the
//! cancellation, which names the request; a stream settling after it reports on the response.
//!
//! Not judged: 2026-07-28 (cancelling is closing the stream, after which tooltap, which
//! forwards to that client, sees no more of it), and conversations without a session id,
//! whose request ids may be other clients'. Bounded: the cancelled ids per conversation by
//! `inspect.mcp.ids` (counted in `ids_evicted`).

use super::conversation::Conversation;
use super::seen::{HttpMethod, Msg, RpcId, is_response, method_of};
use super::{Out, Seen};
use crate::engine::RuleId;

pub(super) fn judge(
    conversation: &mut Conversation,
    seen: &Seen<'_>,
    grace_us: u64,
    out: &mut Out,
) {
    if seen.modern() || conversation.shared {
        return;
    }
    let last = seen.received.len().checked_sub(1);
    for (at, msg) in seen.received.iter().enumerate() {
        if !is_response(msg.value) {
            continue;
        }
        let Some(id) = RpcId::of(msg.value) else {
            continue;
        };
        let ends_post = seen.method == HttpMethod::Post && !seen.resumed && Some(at) == last;
        let arrived = if ends_post {
            seen.end_us
        } else {
            seen.start_us
        };
        responded(conversation, msg, &id, arrived, grace_us, out);
    }
    for msg in seen
        .sent
        .iter()
        .filter(|m| method_of(m.value) == Some("notifications/cancelled"))
    {
        cancelled(conversation, seen, msg, grace_us, out);
    }
}

/// A response for `id` that arrived no earlier than `arrived`.
fn responded(
    conversation: &mut Conversation,
    msg: &Msg<'_>,
    id: &RpcId,
    arrived: u64,
    grace_us: u64,
    out: &mut Out,
) {
    let Some(state) = conversation.ids.get_mut(id) else {
        return;
    };
    state.responded_us.get_or_insert(arrived);
    let Some(&at) = conversation.cancelled.get(id) else {
        return;
    };
    if arrived > at.saturating_add(grace_us) {
        let detail = format!(
            "the response to request {id} arrived {} ms after the client cancelled it",
            (arrived - at) / 1000
        );
        out.push(
            RuleId::McpCancelResponseAfterCancel,
            Some(msg),
            "/id",
            detail,
        );
    }
}

/// The client's `notifications/cancelled`: remembered, and judged against a response already
/// settled.
fn cancelled(
    conversation: &mut Conversation,
    seen: &Seen<'_>,
    msg: &Msg<'_>,
    grace_us: u64,
    out: &mut Out,
) {
    let Some(id) = RpcId::cancelled(msg.value) else {
        return;
    };
    let state = conversation.ids.get(&id);
    if state.is_some_and(|s| s.initialize) {
        // `mcp.cancel.initialize`'s.
        return;
    }
    let at = seen.start_us;
    if let Some(arrived) = state
        .and_then(|s| s.responded_us)
        .filter(|&r| r > at.saturating_add(grace_us))
    {
        let detail = format!(
            "the response to request {id} arrived {} ms after this cancellation",
            (arrived - at) / 1000
        );
        out.push(
            RuleId::McpCancelResponseAfterCancel,
            Some(msg),
            "/params/requestId",
            detail,
        );
    }
    let evicted = conversation.cancelled.insert(id, at);
    out.cuts.ids_evicted += evicted as u64;
}
