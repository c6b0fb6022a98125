//! Enforce mode: a broken contract becomes an error the client's SDK raises (a red CI build).
//!
//! Observe mode never changes a byte; enforce mode (`--enforce`, or per route) runs the engine
//! *inline*, on the client path, because the verdict must come before the bytes it judges:
//!
//! * Buffered responses: [`judge_buffered`] holds the body (bounded by the engine's JSON limit),
//!   checks it, and on an error-severity violation answers 502 (`enforce.status`) with an
//!   error in the dialect's own shape (`Dialect::error_body`: OpenAI's for Chat and the
//!   Responses API, Anthropic's `{"type":"error","error":{...}}`) whose message lists the rule ids and paths, naming the request as the culprit when a
//!   request-stage rule broke. Clean responses pass unchanged.
//! * Streams: [`EnforceBody`] feeds every frame to an engine [`Exchange`](crate::engine::Exchange) before forwarding it.
//!   Chunks already sent cannot be recalled, so whole events only are forwarded (the rest of an
//!   unfinished one is held until its blank line: no SSE client dispatches it before that), and
//!   on the first error-severity violation the event that completed it is replaced by a final
//!   error event naming the rule, in the dialect's own shape (`Dialect::error_event`), and the
//!   stream ends there: the client never gets half an event before the error. The official SDKs
//!   raise an error on that event. A content-encoded stream, whose events cannot be told apart
//!   in its bytes, is cut frame by frame instead (the frame that completed the violation is
//!   replaced).
//!   A streamed JSON array (Gemini without `alt=sse`) is forwarded whole element by whole
//!   element and, on a violation, closed with the dialect's error body as its last element
//!   (`,{"error":{...}}]`), so it stays a valid array ([`array`]); a content-encoded array is
//!   held and refused whole like a buffered body.
//!
//! The passive inspector still reports every exchange as in observe mode; it is told that the
//! stream was cut on purpose, so the cut is not mistaken for a client that went away.

mod array;
mod events;
mod messages;
mod hold;
mod stream;
mod whole;

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};

use http_body_util::BodyExt;

use crate::answer::json_response;
use crate::engine::{
    BodyKind, Dialect, EnforceError, EngineConfig, RequestParts, ResponseHead, SchemaCache,
    Severity, Stage, Violation,
};
use crate::proxy::forward::body::{BodyError, ProxyBody, full};
use crate::tap::verdict::{CutSender, EnforceCut};

pub use hold::{Held, Prefixed, hold};
pub use stream::EnforceBody;

/// The error `code` tooltap uses for an enforced violation.
pub const CODE: &str = "contract_violation";

/// The error `type` tooltap uses for an enforced violation.
pub const KIND: &str = "tooltap_contract_violation";

/// The violations that enforce mode acts on.
pub(crate) fn errors(violations: &[Violation]) -> Vec<&Violation> {
    violations
        .iter()
        .filter(|v| v.severity == Severity::Error)
        .collect()
}

/// `rule at path; rule at path` — what the SDK prints. Request-stage violations are named as
/// the request's (enforce mode judges the request too, and refuses its answer), the rest as the
/// response's, so nobody goes looking at the provider for a fault of the request.
fn message(violations: &[&Violation]) -> String {
    let list = |request: bool| -> Vec<String> {
        violations
            .iter()
            .filter(|v| (v.stage == Stage::Request) == request)
            .map(|v| {
                format!(
                    "{} at {}",
                    v.rule.as_str(),
                    // The same pointer as the violations file's `path`; "" is the whole document.
                    if v.path.is_empty() {
                        "\"\" (the whole body)"
                    } else {
                        &v.path
                    }
                )
            })
            .collect()
    };
    let (request, response) = (list(true), list(false));
    let broke = match (request.is_empty(), response.is_empty()) {
        (false, true) => format!(
            "the request broke the function-calling contract (the upstream answered; its answer is withheld): {}",
            request.join("; ")
        ),
        (false, false) => format!(
            "the request broke the function-calling contract: {}; and the response: {}",
            request.join("; "),
            response.join("; ")
        ),
        (true, _) => format!(
            "the response broke the function-calling contract: {}",
            response.join("; ")
        ),
    };
    format!("tooltap enforce: {broke} (see docs/rules.md)")
}

/// The error tooltap refuses an answer with, for these violations and the text `message` gave
/// them; the dialect shapes it ([`Dialect::error_body`], [`Dialect::error_event`]).
fn refusal<'a>(message: &'a str, violations: &[&'a Violation]) -> EnforceError<'a> {
    EnforceError {
        message,
        kind: KIND,
        code: CODE,
        param: violations.first().map(|v| v.rule.as_str()),
    }
}

/// Judge a whole buffered response. `Some(refusal)`, answered with `status` (`enforce.status`,
/// 502 by default), when it must not reach the client. `request`: the body and the path with
/// its query, which may carry a `key=` credential and is never put in the refusal or a log.
pub fn judge_buffered(
    engine: &Arc<EngineConfig>,
    schemas: &SchemaCache,
    dialect: Dialect,
    request: RequestParts<'_>,
    head: ResponseHead,
    body: &[u8],
    status: StatusCode,
) -> Option<Response<Bytes>> {
    let report = crate::engine::check_exchange_as(engine, schemas, dialect, request, head, body);
    let errors = errors(&report.violations);
    if errors.is_empty() {
        return None;
    }
    tracing::warn!(
        rules = %errors.iter().map(|v| v.rule.as_str()).collect::<Vec<_>>().join(","),
        status = status.as_u16(),
        "enforce: buffered response refused"
    );
    let text = message(&errors);
    let body = dialect.error_body(&refusal(&text, &errors));
    let mut response = json_response(status, &body);
    // The OpenAI SDKs retry 5xx by default; the same answer would come back, so say not to.
    response
        .headers_mut()
        .insert("x-should-retry", HeaderValue::from_static("false"));
    Some(response)
}

/// Apply enforce mode to an upstream response, given the request it answers (body, and path
/// with query: see [`judge_buffered`]). Non-2xx
/// responses pass unchanged; streams are checked frame by frame; buffered bodies are held and
/// refused with `status`.
pub async fn response(
    engine: &Arc<EngineConfig>,
    schemas: &SchemaCache,
    dialect: Dialect,
    request: RequestParts<'_>,
    response: Response<ProxyBody>,
    status: StatusCode,
    mut cut: CutSender,
) -> Response<ProxyBody> {
    if !response.status().is_success() {
        return response;
    }
    let head = crate::inspect::head::response_head(response.status().as_u16(), response.headers());
    // The engine's own answer to "is this a stream", so enforce mode and the inspector agree.
    let mut exchange = crate::engine::Exchange::start(engine, schemas, dialect, request);
    exchange.response_head(head.clone());
    let (mut parts, body) = response.into_parts();
    let mut kind = exchange.body_kind();
    let encoded = head
        .content_encoding
        .as_deref()
        .is_some_and(|encoding| !encoding.trim().eq_ignore_ascii_case("identity"));
    if kind == Some(BodyKind::JsonArray) && encoded {
        // Elements cannot be told apart in compressed bytes, nor an error element appended to
        // them: the array is held and judged whole, and refused whole, as a buffered body.
        kind = Some(BodyKind::Json);
    }
    if matches!(
        kind,
        Some(BodyKind::Sse | BodyKind::JsonArray | BodyKind::Ndjson | BodyKind::EventStream)
    ) {
        // The stream may gain an error event: a stated length would no longer be true.
        parts.headers.remove(header::CONTENT_LENGTH);
        let max_unit = engine.max_sse_line;
        let body = match kind {
            Some(BodyKind::JsonArray) => {
                let ends = whole::Ends::Elements(array::ElementEnds::default());
                EnforceBody::whole_units(body, exchange, cut, ends, max_unit)
            }
            // Events cannot be told apart in compressed bytes: those are cut frame by frame.
            _ if encoded => EnforceBody::new(body, exchange, cut),
            Some(BodyKind::Ndjson) => {
                EnforceBody::whole_units(body, exchange, cut, whole::Ends::Lines, max_unit)
            }
            // Bedrock's binary messages, forwarded whole: the `:exception` message follows
            // the last whole message that passed.
            Some(BodyKind::EventStream) => {
                let ends = whole::Ends::Messages(messages::MessageEnds::default());
                EnforceBody::whole_units(body, exchange, cut, ends, max_unit)
            }
            _ => {
                let ends = whole::Ends::Events(events::EventEnds::default());
                EnforceBody::whole_units(body, exchange, cut, ends, max_unit)
            }
        };
        return Response::from_parts(parts, body.boxed_unsync());
    }
    match hold(body, engine.max_json_body).await {
        Held::Whole(bytes) => {
            match judge_buffered(engine, schemas, dialect, request, head, &bytes, status) {
                Some(refusal) => {
                    cut.cut(EnforceCut {
                        status: Some(refusal.status().as_u16()),
                        replacement: refusal.body().clone(),
                        replaced_last: false,
                        kept: None,
                    });
                    refusal.map(full)
                }
                None => Response::from_parts(parts, full(bytes)),
            }
        }
        Held::TooLarge(prefixed) => {
            tracing::warn!(
                limit = engine.max_json_body,
                "enforce: buffered body over the inspection limit, forwarded unenforced"
            );
            Response::from_parts(parts, prefixed.boxed_unsync())
        }
        Held::Failed(error) => {
            // The upstream broke off mid-body: the client sees the same kind of failure.
            Response::from_parts(parts, failed(error))
        }
    }
}

/// A body that fails at once with `error` (the upstream's own failure, passed on).
fn failed(error: BodyError) -> ProxyBody {
    Failing(Some(error)).boxed_unsync()
}

struct Failing(Option<BodyError>);

impl http_body::Body for Failing {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, BodyError>>> {
        std::task::Poll::Ready(self.0.take().map(Err))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::RuleId;

    fn violation(rule: RuleId, stage: Stage, path: &str) -> Violation {
        Violation {
            rule,
            severity: Severity::Error,
            stage,
            choice: None,
            tool_call: None,
            path: path.into(),
            seq: None,
            schema_path: None,
            detail: String::new(),
        }
    }

    #[test]
    fn the_message_names_the_request_or_the_response_as_the_culprit() {
        let request = violation(
            RuleId::AnthropicRequestToolResultOrphan,
            Stage::Request,
            "/messages/0/content/0/tool_use_id",
        );
        let response = violation(
            RuleId::AnthropicResponseEnvelopeInvalid,
            Stage::Complete,
            "",
        );
        assert_eq!(
            message(&[&request]),
            "tooltap enforce: the request broke the function-calling contract (the upstream \
             answered; its answer is withheld): anthropic.request.tool_result_orphan at \
             /messages/0/content/0/tool_use_id (see docs/rules.md)"
        );
        assert_eq!(
            message(&[&response]),
            "tooltap enforce: the response broke the function-calling contract: \
             anthropic.response.envelope_invalid at \"\" (the whole body) (see docs/rules.md)"
        );
        assert_eq!(
            message(&[&response, &request]),
            "tooltap enforce: the request broke the function-calling contract: \
             anthropic.request.tool_result_orphan at /messages/0/content/0/tool_use_id; and the \
             response: anthropic.response.envelope_invalid at \"\" (the whole body) (see \
             docs/rules.md)"
        );
    }
}
