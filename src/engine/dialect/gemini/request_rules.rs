//! The Gemini request rules (`gemini.request.*`): declarations, `toolConfig` and the
//! `functionCall` / `functionResponse` history. G2 fills this (with `declarations.rs` and
//! `history.rs`); until then it judges nothing.
//!
//! Input: the parsed request body, its reading ([`GeminiRequest`]) and the path with its query
//! (which may carry a `key=` credential: never kept, logged or put in a detail). Output:
//! request-stage violations into `sink`. Request rules are judged whatever the response status.

use serde_json::Value;

use super::request::GeminiRequest;
use crate::engine::violation::ViolationSink;

/// Judges the request.
pub(super) fn check(
    _request: &Value,
    _reading: &GeminiRequest,
    _path: Option<&str>,
    _sink: &mut ViolationSink,
) {
}
