//! The sans-IO contract engine: framing, tool-call reassembly and the function-calling rules.
//!
//! Input: one exchange, fed by the proxy's inspector task, the offline checker or the replayer:
//! the request body, the response head, then body bytes in arbitrary chunks. Output: a
//! [`Report`] with the reassembled message per choice, [`Violation`]s with stable
//! [`RuleId`]s, and how complete the inspection was. This module imports neither hyper, http
//! nor tokio (a test enforces it), and does no I/O.
//!
//! Each exchange has a [`Dialect`], decided from the request path: Chat Completions, the
//! Responses API or Anthropic Messages. The dialect brings request facts, event reading, reassembly and rules
//! ([`dialect`]); framing, decoding, the schema cache, violations, rules and the report are
//! shared and stay here.
//!
//! ```text
//! request body ─► dialect { chat | responses | anthropic }::request (facts, tools) ─► schema (cached validators)
//! body bytes ─► decode ─► framing { sse | json } ─► dialect { stream ─► reassemble, buffered, calls } ─► report
//! ```

pub mod config;
pub mod custom_input;
pub mod decode;
pub mod dialect;
mod exchange;
pub mod framing;
pub mod json_scan;
pub mod report;
pub mod rules;
pub mod schema;
pub mod schema_cost;
pub mod schema_plain;
pub mod severity;
pub mod small_map;
pub mod violation;
pub mod weigh;

use std::sync::Arc;

pub use config::{EngineConfig, Level, SeverityOverrides};

pub use dialect::{Dialect, EnforceError, RequestParts, UnknownDialect};
pub use exchange::Exchange;
pub use framing::{SseEvent, SseFramer};
pub use report::{
    BodyKind, ChoiceOutcome, Completeness, LimitKind, Report, RequestFacts, ToolCallOutcome,
};
pub use rules::RuleId;
pub use schema::{LookupFacts, SchemaCache, SchemaLimits};
pub use violation::{Severity, Stage, Violation};

/// The response status line and the headers the engine needs.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ResponseHead {
    pub status: u16,
    pub content_type: Option<String>,
    pub content_encoding: Option<String>,
}

impl ResponseHead {
    /// The one header-to-head translation (live proxy, replay, enforce, inject and `check` of a
    /// recording all use it): picks `content-type` and `content-encoding` by case-insensitive
    /// name from `(name, value)` pairs; the first of each wins.
    pub fn from_headers<'a>(
        status: u16,
        headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> ResponseHead {
        let mut head = ResponseHead {
            status,
            ..ResponseHead::default()
        };
        for (name, value) in headers {
            let slot = if name.eq_ignore_ascii_case("content-type") {
                &mut head.content_type
            } else if name.eq_ignore_ascii_case("content-encoding") {
                &mut head.content_encoding
            } else {
                continue;
            };
            if slot.is_none() {
                *slot = Some(value.to_string());
            }
        }
        head
    }
}

/// How a response body ended: the one vocabulary the live inspector and `tooltap check` share
/// (both translate a recording's outcome with [`crate::record::Outcome::body_end`]), so equal
/// bytes with an equal ending always get an equal verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEnd {
    /// The body ended normally.
    Complete,
    /// The upstream broke off mid-body (a reset, a close without the terminator, an idle cut):
    /// the client received exactly these bytes and a broken body, so they are judged as they
    /// are, end-of-body rules included (`stream.truncated`, `sse.done_missing`...).
    UpstreamBroke,
    /// Whoever read the body left before its end. The bytes are judged only when their content
    /// was already whole (`data: [DONE]` seen, or a complete JSON document): the official Python
    /// SDK closes the connection right after `[DONE]`, and that stream is complete.
    ReaderGone,
    /// Frames are missing (the inspector fell behind, or a recording hit its size cap): the
    /// reassembly has holes, so nothing at the end is judged.
    Lossy,
}

/// Checks a whole Chat Completions exchange at once: the offline checker's and the tests'
/// convenience.
pub fn check_exchange(
    config: &Arc<EngineConfig>,
    cache: &SchemaCache,
    request_body: &[u8],
    head: ResponseHead,
    body: &[u8],
) -> Report {
    let mut exchange = Exchange::new(config, cache, request_body);
    exchange.response_head(head);
    exchange.feed(body);
    exchange.finish(BodyEnd::Complete)
}

/// The same for an exchange of any dialect, started from its request (body, and path with
/// query where known; see [`Exchange::start`] for why the path is never logged).
pub fn check_exchange_as(
    config: &Arc<EngineConfig>,
    cache: &SchemaCache,
    dialect: Dialect,
    request: RequestParts<'_>,
    head: ResponseHead,
    body: &[u8],
) -> Report {
    let mut exchange = Exchange::start(config, cache, dialect, request);
    exchange.response_head(head);
    exchange.feed(body);
    exchange.finish(BodyEnd::Complete)
}
