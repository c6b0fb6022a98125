//! Quirk injection: turn a healthy exchange into one of the real-world broken ones.
//!
//! Input: a healthy exchange (its engine dialect, request body, response head, body frames with
//! their timing), from a recording (`tooltap replay --quirk`) or a live upstream
//! (`tooltap proxy --inject`). A quirk rewrites one dialect (Chat Completions, Responses,
//! Anthropic Messages, Gemini, Ollama, Bedrock or MCP) and leaves an exchange of another untouched. Output: the frames a broken
//! provider would have sent, and which quirks applied (a quirk with nothing to change says so:
//! `quirk_not_applicable`). Pure, synchronous code over bytes and JSON values, like the engine: no I/O, no hyper, no tokio.
//!
//! ```text
//! catalogue (ids, descriptions, where seen, detecting rules)
//! request (tool choice, schemas) ─► buffered | stream { sse events } ─► recorded (whole) | live (incremental)
//!                                    └─ Chat, or responses | anthropic | gemini | ollama | bedrock | mcp per document / event
//! ```

pub mod anthropic;
pub mod bedrock;
pub mod buffered;
pub mod catalogue;
pub mod gemini;
pub mod ollama;
pub mod inject;
pub mod list;
pub mod mcp;
pub mod live;
pub mod recorded;
pub mod request;
pub mod responses;
pub mod rewriters;
pub mod seen;
pub mod sse;
pub mod stream;

pub use catalogue::{Dialect, QuirkId, RequestKind, Shape, UnknownQuirk};
pub use inject::{InjectPlan, InjectSettings, InjectSpec, parse_quirk_list};
pub use live::LiveQuirks;
pub use recorded::{Applied, NotApplicable, TimedFrame, apply, shape_of};
pub use request::RequestContext;

/// The response header that names the quirks applied to an exchange.
pub const QUIRK_HEADER: &str = "x-tooltap-quirk";
/// The response header that names quirks asked for that found nothing to change.
pub const NOT_APPLICABLE_HEADER: &str = "x-tooltap-quirk-not-applicable";

#[cfg(test)]
mod tests;
#[cfg(test)]
mod total_tests;
