//! How a conversation is named (§4.10 of the MCP reference): [`ConversationKey`].
//!
//! A 2025-era conversation whose server minted a session id is `(upstream, Mcp-Session-Id)`:
//! born on the `initialize` exchange, gone on DELETE, on a 404 for that id, or on a new
//! `initialize`. A stateless 2025-era server (no session id) and every 2026-07-28 exchange share
//! one conversation per `(upstream, credential digest)`, the 2026 one also per protocol
//! version, since its tool list may vary by authorization and not by connection.

use std::sync::Arc;

use super::seen::{MODERN, Seen};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ConversationKey {
    /// 2025-era, with a session id the server minted.
    Session { upstream: Arc<str>, id: Box<str> },
    /// No session: a stateless 2025-era server (`version` `None`) or 2026-07-28.
    Shared {
        upstream: Arc<str>,
        credential: u64,
        version: Option<&'static str>,
    },
}

impl ConversationKey {
    /// The key of an exchange: the session id the request carried, else the one an
    /// `initialize` answer minted, else the shared key.
    pub fn of(seen: &Seen<'_>, upstream: Arc<str>) -> ConversationKey {
        if seen.modern() {
            return ConversationKey::Shared {
                upstream,
                credential: seen.credential,
                version: Some(MODERN),
            };
        }
        let minted = seen
            .sent_method("initialize")
            .then_some(seen.response_session)
            .flatten();
        match seen.request_session.or(minted) {
            Some(id) => ConversationKey::Session {
                upstream,
                id: id.into(),
            },
            None => ConversationKey::Shared {
                upstream,
                credential: seen.credential,
                version: None,
            },
        }
    }

    /// Bytes the key holds.
    pub fn weight(&self) -> usize {
        match self {
            ConversationKey::Session { id, .. } => 32 + id.len(),
            ConversationKey::Shared { .. } => 32,
        }
    }
}
