//! The replay server's admin endpoints, under a prefix no provider API uses: `/__tooltap/`.
//!
//! Input: a request whose path starts with [`PREFIX`] (never matched against recordings, never
//! forwarded). Output: a JSON answer.
//!
//! - `POST /__tooltap/reset` starts turns over: those of the cassette named in the request's own
//!   `x-tooltap-cassette` header, or every turn without it. A test harness calls it before each
//!   test, so a test that runs twice against one server (a rerun, a second parametrisation of
//!   the same cassette) gets its recordings in order again. Answers
//!   `{"reset": "<cassette>"|null, "recordings": <n>}`.
//! - `GET /__tooltap/usage` answers the [`Usage`](super::library::Usage) so far: hits, misses
//!   and the recordings never used, by cassette.
//! - `GET /__tooltap/verdicts?exchange=<id>&wait_ms=<n>` answers the verdicts of the named
//!   exchanges (their `x-tooltap-exchange` ids), waiting up to `wait_ms` for those still being
//!   inspected ([`crate::inspect::verdicts`]): a harness asks it after each test, so that the
//!   test whose exchange broke the contract fails, not only the run.
//!
//! Another method on those paths gets 405, another path under the prefix 404, both in the
//! OpenAI error shape.

use std::sync::PoisonError;

use http::{HeaderMap, Method, Response, StatusCode};

use super::ReplayState;
use super::respond::error_response;
use crate::proxy::forward::body::{self as proxy_body, ProxyBody};

/// Every admin path starts with this.
pub const PREFIX: &str = "/__tooltap/";
pub const RESET: &str = "/__tooltap/reset";
pub const USAGE: &str = "/__tooltap/usage";
pub const VERDICTS: &str = "/__tooltap/verdicts";

/// Answer `GET /__tooltap/verdicts` (another method gets 405).
pub async fn verdicts(
    state: &ReplayState,
    method: &Method,
    query: Option<&str>,
) -> Response<ProxyBody> {
    if method != Method::GET {
        let message = format!("tooltap replay: {VERDICTS} takes GET");
        let response = error_response(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            &message,
        );
        return response.map(proxy_body::full);
    }
    let response = match crate::inspect::verdicts::answer(state.admission.verdicts(), query).await {
        Ok(body) => crate::answer::json_response(StatusCode::OK, &body),
        Err(message) => error_response(
            StatusCode::BAD_REQUEST,
            "bad_verdicts_query",
            &format!("tooltap replay: {message}"),
        ),
    };
    response.map(proxy_body::full)
}

/// Answer an admin request (its path starts with [`PREFIX`]).
pub fn answer(
    state: &ReplayState,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
) -> Response<ProxyBody> {
    let library = state.library.read().unwrap_or_else(PoisonError::into_inner);
    let response = match (path, method) {
        (RESET, &Method::POST) => {
            let cassette = crate::record::cassette::of_request(headers);
            let recordings = library.reset(cassette.as_deref());
            tracing::info!(
                cassette = cassette.as_deref().unwrap_or("(all)"),
                recordings,
                "replay turns reset"
            );
            let body = serde_json::json!({"reset": cassette, "recordings": recordings});
            crate::answer::json_response(StatusCode::OK, &body)
        }
        (USAGE, &Method::GET) => {
            let usage = serde_json::to_value(library.usage()).unwrap_or_default();
            crate::answer::json_response(StatusCode::OK, &usage)
        }
        (RESET | USAGE, _) => error_response(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            &format!("tooltap replay: {RESET} takes POST, {USAGE} GET"),
        ),
        _ => error_response(
            StatusCode::NOT_FOUND,
            "unknown_admin_path",
            &format!(
                "tooltap replay: {path} is not an admin path; there are {RESET}, {USAGE} and \
                 {VERDICTS}"
            ),
        ),
    };
    response.map(proxy_body::full)
}
