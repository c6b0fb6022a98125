//! Which transformations rewrite each dialect's bodies: the one place in `quirk` that maps a
//! [`Dialect`] label to its quirks' code.
//!
//! Input: the dialect a quirk rewrites ([`QuirkId::dialect`]). Output: the functions that rewrite
//! a buffered body and one stream event's JSON of that dialect, or `None` for Chat Completions,
//! whose transformations need the request's context and the chunk stream's own state (they live
//! in [`super::buffered`] and [`super::stream`]). This stays in `quirk` rather than in the
//! dialect: how to break a dialect's traffic on purpose is test-tooling knowledge, not part of
//! judging it, and the engine's dialects should not carry it. A dialect with quirks adds its
//! module beside [`super::responses`] and one arm here; `buffered` and `stream` do not change.

use serde_json::Value;

use super::catalogue::{Dialect, QuirkId};

/// An event-typed dialect's quirk transformations.
#[derive(Debug, Clone, Copy)]
pub struct Rewriter {
    /// The buffered body with the quirk applied, or `None` when it does not apply.
    pub buffered: fn(QuirkId, &[u8]) -> Option<Vec<u8>>,
    /// One stream event's data rewritten in place; true when it changed.
    pub event: fn(QuirkId, &mut Value) -> bool,
}

/// The transformations of `dialect`'s quirks; `None` for Chat (see the module doc) and for a
/// dialect with no quirks yet (Bedrock).
pub fn rewriter(dialect: Dialect) -> Option<Rewriter> {
    match dialect {
        Dialect::Chat => None,
        Dialect::Responses => Some(Rewriter {
            buffered: super::responses::buffered,
            event: super::responses::event,
        }),
        Dialect::Anthropic => Some(Rewriter {
            buffered: super::anthropic::buffered,
            event: super::anthropic::event,
        }),
        Dialect::Gemini => Some(Rewriter {
            buffered: super::gemini::buffered,
            event: super::gemini::event,
        }),
        Dialect::Ollama => Some(Rewriter {
            buffered: super::ollama::buffered,
            event: super::ollama::event,
        }),
        Dialect::Bedrock => None,
        Dialect::Mcp => Some(Rewriter {
            buffered: super::mcp::buffered,
            event: super::mcp::event,
        }),
    }
}
