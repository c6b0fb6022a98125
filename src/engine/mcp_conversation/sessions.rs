//! §4.4 session rules, 2025-era only: `mcp.session.id_missing_on_request`, `id_changed`,
//! `stale_not_404`, `no_reinit_after_404`; and the session table's updates (minted on an
//! `initialize` answer, ended by a DELETE or a 404).
//!
//! Times compare with the request's start, not its settlement: a GET stream that began before
//! its session's DELETE (and ended after it) did not use an ended session.

use std::sync::Arc;

use super::seen::HttpMethod;
use super::{ConversationKey, ConversationStore, Ended, Out, Seen};
use crate::engine::RuleId;

/// Before the exchange's conversation is found: its session id against the ended and the
/// minted tables.
pub(super) fn before(
    store: &ConversationStore,
    seen: &Seen<'_>,
    upstream: &Arc<str>,
    out: &mut Out,
) {
    match seen.request_session {
        Some(id) => ended(store, seen, upstream, id, out),
        None => missing(store, seen, upstream, out),
    }
    changed(seen, out);
}

fn ended(store: &ConversationStore, seen: &Seen<'_>, upstream: &Arc<str>, id: &str, out: &mut Out) {
    let Some(end) = store.ended.get(&(Arc::clone(upstream), id.into())) else {
        return;
    };
    if end.at_us > seen.start_us {
        return;
    }
    if end.by_404 {
        let detail = "the client sent a session id again after the server answered it with 404; it must re-initialize".to_owned();
        out.push(RuleId::McpSessionNoReinitAfter404, None, "", detail);
    }
    if seen.status != 404 && seen.status != 0 {
        let detail = format!(
            "the session was ended (by {}) and this request carrying its id was answered {}, not 404",
            if end.by_404 { "a 404" } else { "a DELETE" },
            seen.status
        );
        out.push(RuleId::McpSessionStaleNot404, None, "", detail);
    }
}

/// A request without the session id its server minted for this credential.
fn missing(store: &ConversationStore, seen: &Seen<'_>, upstream: &Arc<str>, out: &mut Out) {
    if seen.sent_method("initialize") || seen.method == HttpMethod::Other {
        return;
    }
    if seen.method == HttpMethod::Post && seen.sent.is_empty() {
        return;
    }
    if !store
        .minted
        .contains(&(Arc::clone(upstream), seen.credential))
    {
        return;
    }
    let detail = "the server minted a session id on initialize; this request does not carry it (Mcp-Session-Id)".to_owned();
    if seen.credential == 0 {
        // No credential digest: the request may be another client's, so at most a warning.
        out.warn(RuleId::McpSessionIdMissingOnRequest, None, "", detail);
    } else {
        out.push(RuleId::McpSessionIdMissingOnRequest, None, "", detail);
    }
}

/// A response naming another session than its request.
fn changed(seen: &Seen<'_>, out: &mut Out) {
    if let (Some(asked), Some(answered)) = (seen.request_session, seen.response_session)
        && asked != answered
        && !seen.sent_method("initialize")
    {
        let detail = "the response names another session id than the request carried".to_owned();
        out.push(RuleId::McpSessionIdChanged, None, "", detail);
    }
}

/// After the exchange: a minted session enters the tables; a DELETE or a 404 ends one.
pub(super) fn after(store: &mut ConversationStore, seen: &Seen<'_>, upstream: &Arc<str>) {
    let initialize = seen.sent_method("initialize") && (200..300).contains(&seen.status);
    match (initialize, seen.response_session, seen.request_session) {
        (true, Some(minted), _) => {
            store.ended.remove(&(Arc::clone(upstream), minted.into()));
            store
                .minted
                .insert((Arc::clone(upstream), seen.credential), minted.into());
        }
        (false, _, Some(id)) => {
            let deleted = seen.method == HttpMethod::Delete && (200..300).contains(&seen.status);
            if deleted || seen.status == 404 {
                end(store, seen, upstream, id, seen.status == 404);
            }
        }
        _ => {}
    }
}

fn end(
    store: &mut ConversationStore,
    seen: &Seen<'_>,
    upstream: &Arc<str>,
    id: &str,
    by_404: bool,
) {
    let key = (Arc::clone(upstream), Box::<str>::from(id));
    if store.ended.contains(&key) {
        return;
    }
    store.ended.insert(
        key,
        Ended {
            at_us: seen.end_us,
            by_404,
        },
    );
    store.conversations.remove(&ConversationKey::Session {
        upstream: Arc::clone(upstream),
        id: id.into(),
    });
    let minted_key = (Arc::clone(upstream), seen.credential);
    if store.minted.get(&minted_key).is_some_and(|m| &**m == id) {
        store.minted.remove(&minted_key);
    }
}
