//! One conversation's state (§4.10): era and version, capabilities, lifecycle, the tool
//! catalog, the client's request ids and cancellations, progress tokens, SSE event ids and the
//! streams they were sent on, and 2026-07-28's `input_required` answers awaiting a retry.
//!
//! Input: written by the store's rules as exchanges settle. Every table is [`Bounded`] by
//! `mcp.max_ids` (the catalog by `mcp.max_catalog_bytes`); what a rule needs and the table lost
//! makes that rule silent (`ids_evicted`), never a guess.

use super::bounded::Bounded;
use super::catalog::Catalog;
use super::mrtr::InputRequired;
use super::resume::Stream;
use super::seen::RpcId;

/// What the server declared in its `InitializeResult`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Capabilities {
    pub tools: bool,
    pub list_changed: bool,
    /// `tasks.requests.tools.call` (2025-11-25): `tools/call` may carry `params.task`.
    pub tasks_tools_call: bool,
}

/// One client request id of the conversation.
#[derive(Debug, Clone)]
pub struct IdState {
    /// When its response was delivered (µs), `None` while in flight.
    pub answered_us: Option<u64>,
    /// The earliest its response can have arrived (µs), once one was seen: the end of the
    /// POST answer it ends, else the start of the stream that carried it.
    pub responded_us: Option<u64>,
    /// Its `_meta.progressToken`, as a key.
    pub progress_token: Option<String>,
    /// It was the `initialize` request.
    pub initialize: bool,
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
    /// SSE event ids, each to the number of the stream that sent it.
    pub event_ids: Bounded<Box<str>, u64>,
    /// The streams that sent event ids, by number.
    pub streams: Bounded<u64, Stream>,
    /// The number the next stream gets.
    pub next_stream: u64,
    /// Request ids the client cancelled (`notifications/cancelled`), and when (µs).
    pub cancelled: Bounded<RpcId, u64>,
    /// 2026-07-28 `input_required` answers a retry may follow, by [`super::mrtr`]'s key.
    pub input_required: Bounded<u64, InputRequired>,
    /// Some table lost an entry to its bound: rules that need the lost one stay silent.
    pub evicted: bool,
    /// Keyed without a session id (a stateless server, 2026-07-28): every client of the route
    /// (and credential) shares it, so rules about one client's ids, lifecycle and streams
    /// cannot be judged in it; the catalog rules can.
    pub shared: bool,
}

impl Conversation {
    pub fn new(max_ids: usize, shared: bool) -> Conversation {
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
            streams: Bounded::new(max_ids),
            next_stream: 0,
            cancelled: Bounded::new(max_ids),
            input_required: Bounded::new(max_ids),
            evicted: false,
            shared,
        }
    }

    /// Whether its negotiated version is at least `version` (versions are dates).
    pub fn version_at_least(&self, version: &str) -> bool {
        self.version.as_deref().is_some_and(|v| v >= version)
    }

    /// Whether an id or token tooltap does not know means the peer invented it: the
    /// conversation is one session, seen from its start, and no table lost an entry.
    pub fn knows_all(&self) -> bool {
        self.from_start && !self.evicted && !self.shared
    }
}
