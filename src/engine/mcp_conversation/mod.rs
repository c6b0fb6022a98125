//! MCP conversation state: the sans-IO store the `mcp.*` rules marked S read (reference §4.10).
//!
//! Input: each MCP exchange, settled whole as a [`Seen`], in the order of its request's start
//! (a GET stream in the order of its end, so that a long stream never holds the others back);
//! the live inspector and `tooltap check` both call [`ConversationStore::settle`] in that order,
//! so equal bytes give equal verdicts. Output: the exchange's S-rule [`Violation`]s, what could
//! not be judged and why ([`Unjudged`]: `no_catalog`, never a guess) and what the bounds cut
//! ([`Cuts`], for metrics). No I/O, no clock: times come in the [`Seen`].
//!
//! Bounded by [`StoreLimits`]: conversations (the oldest evicted first), catalog bytes per
//! conversation, request ids / progress tokens / SSE event ids and streams / cancelled ids /
//! `input_required` answers per conversation, and the ended and minted session tables.

use std::sync::Arc;

use serde_json::Value;

use super::schema::SchemaCache;
use super::violation::{Stage, Violation, ViolationSink};
use super::{RuleId, SeverityOverrides};
use crate::engine::judge::Judge;

mod bounded;
mod calls;
mod cancel;
mod catalog;
mod conversation;
mod ids;
mod key;
mod lifecycle;
mod listing;
mod mrtr;
pub mod observed;
mod params;
mod progress;
mod resume;
mod seen;
mod sessions;
mod tasks;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_calls_and_streams;

use bounded::Bounded;
use conversation::Conversation;
pub use key::ConversationKey;
pub use seen::{Answers, HttpMethod, Msg, MsgOwned, RpcId, Seen, SeenOwned};

/// The rules the store judges (the reference's state S), in docs/rules.md order.
pub const RULES: [RuleId; 37] = [
    RuleId::McpJsonrpcRequestIdReused,
    RuleId::McpJsonrpcResponseIdUnknown,
    RuleId::McpJsonrpcResponseDuplicate,
    RuleId::McpHttpProtocolVersionHeaderMissing,
    RuleId::McpHttpProtocolVersionHeaderMismatch,
    RuleId::McpHttpParamHeaderMismatch,
    RuleId::McpSseResponseOnGetStream,
    RuleId::McpSseEventIdReused,
    RuleId::McpSseResumeWrongStream,
    RuleId::McpSessionIdMissingOnRequest,
    RuleId::McpSessionIdChanged,
    RuleId::McpSessionStaleNot404,
    RuleId::McpSessionNoReinitAfter404,
    RuleId::McpLifecycleInitializedMissing,
    RuleId::McpLifecycleRequestBeforeInitialized,
    RuleId::McpLifecycleToolsCapabilityMissing,
    RuleId::McpLifecycleListChangedUndeclared,
    RuleId::McpToolsListNameDuplicate,
    RuleId::McpToolsListCursorLoop,
    RuleId::McpToolsCallNameUnlisted,
    RuleId::McpToolsCallArgumentsSchema,
    RuleId::McpToolsCallArgumentJsonString,
    RuleId::McpToolsCallTaskNotAllowed,
    RuleId::McpToolsCallRetrySameId,
    RuleId::McpToolsCallInputResponsesMismatch,
    RuleId::McpToolsCallStructuredContentMissing,
    RuleId::McpToolsCallStructuredContentSchema,
    RuleId::McpToolsCallUnknownToolAsResult,
    RuleId::McpToolsCallUnknownToolErrorCode,
    RuleId::McpToolsCallInputValidationAsProtocolError,
    RuleId::McpToolsCallExecutionErrorAsProtocolError,
    RuleId::McpProgressTokenUnknown,
    RuleId::McpProgressNotIncreasing,
    RuleId::McpProgressAfterCompletion,
    RuleId::McpCancelInitialize,
    RuleId::McpCancelUnknownRequest,
    RuleId::McpCancelResponseAfterCancel,
];

/// Whether `rule` is judged only here, across exchanges: every rule of [`RULES`] but
/// `mcp.http.protocol_version_header_missing`, which the dialect judges per exchange on
/// 2026-07-28 too. A corpus of unrelated single exchanges turns these off.
pub fn only_across_exchanges(rule: RuleId) -> bool {
    RULES.contains(&rule) && rule != RuleId::McpHttpProtocolVersionHeaderMissing
}

/// The store's bounds (`inspect.mcp.*` in the configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    /// Conversations kept; the oldest is evicted first. Also bounds the ended and minted
    /// session tables.
    pub max_conversations: usize,
    /// Bytes of listed tool objects per conversation; a listing past it is dropped.
    pub max_catalog_bytes: usize,
    /// Request ids, progress tokens, SSE event ids and streams, cancelled ids and
    /// `input_required` answers kept per conversation (each).
    pub max_ids: usize,
    /// How long after a `notifications/cancelled` a response for that request may still
    /// arrive (µs) before `mcp.cancel.response_after_cancel`.
    pub cancel_grace_us: u64,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits {
            max_conversations: 10_000,
            max_catalog_bytes: 4 * 1024 * 1024,
            max_ids: 4096,
            cancel_grace_us: 5_000_000,
        }
    }
}

/// Why an S rule stayed silent on an exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Unjudged {
    /// No complete `tools/list` in this conversation (tooltap joined late, it was invalidated,
    /// or the conversation was evicted).
    NoCatalog,
    /// The listing went past `mcp.max_catalog_bytes`.
    CatalogTooLarge,
    /// A positive `ttlMs` ran out and no newer list came.
    CatalogExpired,
    /// Checking a schema would cost more than `inspect.schema_budget`, or it was not compiled.
    SchemaBudget,
    /// The exchange's observation left values out (its byte cap): a listing page is dropped,
    /// a call not judged.
    ObservationCut,
}

impl Unjudged {
    pub fn as_str(self) -> &'static str {
        match self {
            Unjudged::NoCatalog => "no_catalog",
            Unjudged::CatalogTooLarge => "catalog_too_large",
            Unjudged::CatalogExpired => "catalog_expired",
            Unjudged::SchemaBudget => "schema_budget",
            Unjudged::ObservationCut => "observation_cut",
        }
    }
}

/// What the bounds cut while settling one exchange (each a metric).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cuts {
    pub conversations_evicted: u64,
    pub catalogs_too_large: u64,
    pub ids_evicted: u64,
}

/// The verdict of one settled exchange.
#[derive(Debug, Clone, Default)]
pub struct Settled {
    pub violations: Vec<Violation>,
    /// Violations past the cap, counted only.
    pub not_listed: u64,
    /// Rules that stayed silent for want of state, sorted, each once.
    pub unjudged: Vec<Unjudged>,
    pub cuts: Cuts,
}

impl Settled {
    /// Adds the verdict to an exchange's own: violations up to `max` in all (the rest
    /// counted in `not_listed`), and a note per rule family left unjudged.
    pub fn merge_into(
        self,
        violations: &mut Vec<Violation>,
        not_listed: &mut u64,
        notes: &mut Vec<String>,
        max: usize,
    ) {
        let Settled {
            violations: found,
            not_listed: more,
            unjudged,
            cuts: _,
        } = self;
        *not_listed += more;
        for violation in found {
            if violations.len() < max {
                violations.push(violation);
            } else {
                *not_listed += 1;
            }
        }
        for why in unjudged {
            notes.push(format!(
                "mcp conversation: rules needing the catalog or schemas unjudged ({})",
                why.as_str()
            ));
        }
    }
}

/// What the rules write into while one exchange settles.
pub(crate) struct Out {
    sink: ViolationSink,
    unjudged: Vec<Unjudged>,
    cuts: Cuts,
}

impl Out {
    /// A judge at `msg` (the conversation as a whole when `None`): a message read from a
    /// response stream is a fragment, anything else is judged complete.
    fn at(&mut self, msg: Option<&Msg<'_>>) -> Judge<'_> {
        let stage = match msg {
            Some(msg) if msg.seq.is_some() => Stage::Fragment,
            _ => Stage::Complete,
        };
        let base = msg.map_or("", |m| m.path);
        Judge::new(&mut self.sink, stage)
            .seq(msg.and_then(|m| m.seq))
            .at(base)
    }

    fn push(&mut self, rule: RuleId, msg: Option<&Msg<'_>>, pointer: &str, detail: String) {
        self.at(msg).flag(rule, pointer, detail);
    }

    /// At warning severity at most: the rule's basis is a SHOULD for this version.
    fn warn(&mut self, rule: RuleId, msg: Option<&Msg<'_>>, pointer: &str, detail: String) {
        self.at(msg).warn(rule, pointer, detail);
    }

    fn unjudged(&mut self, why: Unjudged) {
        if !self.unjudged.contains(&why) {
            self.unjudged.push(why);
        }
    }
}

/// An ended 2025-era session: when, and whether by a 404 (else a DELETE).
#[derive(Debug, Clone, Copy)]
struct Ended {
    at_us: u64,
    by_404: bool,
}

/// Every conversation tooltap follows. One per proxy (behind a lock the inspectors take) or
/// per `tooltap check` run.
#[derive(Debug)]
pub struct ConversationStore {
    limits: StoreLimits,
    schemas: Arc<SchemaCache>,
    severity: SeverityOverrides,
    max_violations: usize,
    conversations: Bounded<ConversationKey, Conversation>,
    /// Session ids that a DELETE or a 404 ended, per upstream.
    ended: Bounded<(Arc<str>, Box<str>), Ended>,
    /// The live session id an `initialize` answer minted, per upstream and credential.
    minted: Bounded<(Arc<str>, u64), Box<str>>,
}

impl ConversationStore {
    pub fn new(
        limits: StoreLimits,
        schemas: Arc<SchemaCache>,
        severity: SeverityOverrides,
        max_violations: usize,
    ) -> ConversationStore {
        ConversationStore {
            limits,
            schemas,
            severity,
            max_violations,
            conversations: Bounded::new(limits.max_conversations),
            ended: Bounded::new(limits.max_conversations),
            minted: Bounded::new(limits.max_conversations),
        }
    }

    /// How many conversations it holds.
    pub fn len(&self) -> usize {
        self.conversations.len()
    }

    pub fn is_empty(&self) -> bool {
        self.conversations.is_empty()
    }

    /// Settles one exchange: judges it against the state so far, then updates the state.
    pub fn settle(&mut self, seen: &Seen<'_>) -> Settled {
        let mut out = Out {
            sink: ViolationSink::capped(self.severity.clone(), self.max_violations),
            unjudged: Vec::new(),
            cuts: Cuts::default(),
        };
        let upstream: Arc<str> = Arc::from(seen.upstream);
        let modern = seen.modern();
        if !modern {
            sessions::before(self, seen, &upstream, &mut out);
        }
        let key = ConversationKey::of(seen, Arc::clone(&upstream));
        let fresh = !modern && seen.sent_method("initialize");
        let limits = self.limits;
        let schemas = Arc::clone(&self.schemas);
        let conversation = self.conversation(key, fresh, &mut out);
        if modern {
            conversation.version = Some(seen::MODERN.to_owned());
        }
        lifecycle::judge(conversation, seen, modern, &mut out);
        ids::judge(conversation, seen, modern, &mut out);
        cancel::judge(conversation, seen, limits.cancel_grace_us, &mut out);
        let stream = resume::judge(conversation, seen, &mut out);
        progress::judge(conversation, seen, stream, &mut out);
        listing::judge(conversation, seen, &limits, &schemas, &mut out);
        calls::judge(conversation, seen, &mut out);
        tasks::judge(conversation, seen, &mut out);
        mrtr::judge(conversation, seen, &mut out);
        if !modern {
            sessions::after(self, seen, &upstream);
        }
        let Out {
            sink,
            mut unjudged,
            cuts,
        } = out;
        unjudged.sort();
        Settled {
            not_listed: sink.not_listed(),
            violations: sink.into_vec(),
            unjudged,
            cuts,
        }
    }

    /// The conversation of `key`, made (fresh for an `initialize`) when needed.
    fn conversation(
        &mut self,
        key: ConversationKey,
        fresh: bool,
        out: &mut Out,
    ) -> &mut Conversation {
        let max_ids = self.limits.max_ids;
        let shared = matches!(key, ConversationKey::Shared { .. });
        if fresh {
            self.conversations.remove(&key);
        }
        let (conversation, evicted) = self
            .conversations
            .get_or_insert_with(key, || Conversation::new(max_ids, shared));
        out.cuts.conversations_evicted += evicted as u64;
        conversation
    }
}

/// The `result` of a response, when it is an object.
fn result_of(value: &Value) -> Option<&Value> {
    value.get("result").filter(|r| r.is_object())
}
