//! One conversation's state (§4.10): era and version, capabilities, lifecycle, the tool
//! catalog, the client's request ids, progress tokens and SSE event ids.
//!
//! Input: written by the store's rules as exchanges settle. Every table is [`Bounded`] by
//! `mcp.max_ids` (the catalog by `mcp.max_catalog_bytes`); what a rule needs and the table lost
//! makes that rule silent (`ids_evicted`), never a guess.

use super::bounded::Bounded;
use super::catalog::Catalog;
use super::seen::RpcId;

/// What the server declared in its `InitializeResult`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Capabilities {
    pub tools: bool,
    pub list_changed: bool,
}

/// One client request id of the conversation.
#[derive(Debug, Clone)]
pub struct IdState {
    /// When its response was delivered (µs), `None` while in flight.
    pub answered_us: Option<u64>,
    /// Its `_meta.progressToken`, as a key.
    pub progress_token: Option<String>,
}

/// One progress token.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProgressState {
    pub last: Option<f64>,
    pub done: bool,
}

#[derive(Debug)]
pub struct Conversation {
    /// The negotiated version (from `InitializeResult`, or the 2026 header).
    pub version: Option<String>,
    /// Seen in an `initialize` answer; `None` when tooltap joined mid-session.
    pub capabilities: Option<Capabilities>,
    /// An `initialize` exchange of this conversation was settled.
    pub from_start: bool,
    pub initialized: bool,
    /// `initialized_missing` is reported once per conversation.
    pub initialized_reported: bool,
    pub catalog: Catalog,
    pub ids: Bounded<RpcId, IdState>,
    pub progress: Bounded<String, ProgressState>,
    pub event_ids: Bounded<Box<str>, ()>,
    /// Some table lost an entry to its bound: rules that need the lost one stay silent.
    pub evicted: bool,
}

impl Conversation {
    pub fn new(max_ids: usize) -> Conversation {
        Conversation {
            version: None,
            capabilities: None,
            from_start: false,
            initialized: false,
            initialized_reported: false,
            catalog: Catalog::default(),
            ids: Bounded::new(max_ids),
            progress: Bounded::new(max_ids),
            event_ids: Bounded::new(max_ids),
            evicted: false,
        }
    }

    /// Whether its negotiated version is at least `version` (versions are dates).
    pub fn version_at_least(&self, version: &str) -> bool {
        self.version.as_deref().is_some_and(|v| v >= version)
    }

    /// Whether an id or token tooltap does not know means the peer invented it: the
    /// conversation was seen from its start and no table lost an entry.
    pub fn knows_all(&self) -> bool {
        self.from_start && !self.evicted
    }
}
