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

pub mod arguments;
pub mod config;
pub mod custom_input;
pub mod decode;
pub mod dialect;
mod exchange;
pub mod framing;
pub mod head;
pub mod json_scan;
pub mod json_stream;
pub mod judge;
pub mod label;
pub mod mcp_conversation;
pub mod mcp_observation;
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

pub use dialect::{EnforceError, RequestParts};
pub use exchange::Exchange;
pub use framing::{SseEvent, SseFramer};
pub use head::{BodyEnd, ResponseHead};
pub use label::{Dialect, UnknownDialect};
pub use report::{
    BodyKind, ChoiceOutcome, Completeness, KeptJson, LimitKind, Report, RequestFacts,
    ToolCallOutcome,
};
pub use rules::RuleId;
pub use schema::{LookupFacts, SchemaCache, SchemaLimits};
pub use violation::{Severity, Stage, Violation};

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
