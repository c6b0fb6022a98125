//! The response side of one MCP exchange (states M and X of the reference's §4.1, §4.2,
//! §4.3, §4.4 and §4.5): the head against the request (status, content type, session header),
//! each answered message against the request's ids, what ends a POST (its responses), and the
//! SSE stream's own rules.
//!
//! Input: the request's facts ([`Asked`]), the head, then each message with where it was read.
//! Output: violations; each result of this exchange's `tools/list` or `tools/call` is handed to
//! [`super::tools_list`] or [`super::tools_call`].

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::envelope::{self, shown};
use super::request::session_id_ok;
use super::version::Version;
use super::{tools_call, tools_list};
use crate::engine::head::{ResponseHead, header};
use crate::engine::judge::Judge;
use crate::engine::mcp_observation::MessageKind;
use crate::engine::rules::RuleId;
use crate::engine::schema::SchemaCache;
use crate::engine::violation::{Stage, ViolationSink};

/// What the request asked, as the response rules read it.
#[derive(Debug, Default)]
pub struct Asked {
    /// The HTTP method, upper case (`None`: unknown, read as a POST).
    pub method: Option<String>,
    /// The version the request speaks.
    pub version: Option<Version>,
    /// The `MCP-Protocol-Version` header as sent.
    pub version_header: Option<String>,
    /// The body's requests: id (valid ones only) and method.
    pub requests: Vec<(Value, String)>,
    /// Each distinct request id's text (`"1"` and `1` apart) to its place in `requests`.
    pub by_id: HashMap<String, usize>,
    /// The body held a request whose id is not valid (its answer's id cannot be checked).
    pub unreadable_request: bool,
    /// The body held messages, none of them a request (notifications, responses).
    pub only_notifications: bool,
    /// A `tools/call` carried `params.task`.
    pub task: bool,
}

impl Asked {
    fn version(&self) -> Version {
        self.version.unwrap_or(Version::V1)
    }

    pub fn is_post(&self) -> bool {
        self.method.as_deref().is_none_or(|m| m == "POST")
    }

    pub fn has_request(&self) -> bool {
        !self.requests.is_empty() || self.unreadable_request
    }

    /// Adds a request of the body.
    pub fn add(&mut self, id: Value, method: String) {
        self.by_id
            .entry(id.to_string())
            .or_insert(self.requests.len());
        self.requests.push((id, method));
    }

    /// The request with this id (value and type equal).
    pub fn find(&self, id: &Value) -> Option<&(Value, String)> {
        self.requests.get(*self.by_id.get(&id.to_string())?)
    }
}

/// The response as it is read.
#[derive(Debug, Default)]
pub struct Answer {
    pub status: Option<u16>,
    /// Lower-case media type without parameters.
    pub mime: Option<String>,
    /// The request ids answered so far (by a result or an error), as [`Asked::by_id`] keys.
    pub answered: HashSet<String>,
    /// Responses seen (results and errors), whatever their id.
    pub responses: usize,
    /// SSE events dispatched so far.
    pub events: u64,
    /// The first event was a priming event (an id and empty data).
    pub primed: bool,
    /// Some event carried an `id:`.
    pub event_ids: bool,
    /// `after_response` was reported (once per stream).
    pub after_reported: bool,
}

impl Answer {
    fn is_2xx(&self) -> bool {
        self.status.is_none_or(|s| (200..300).contains(&s))
    }

    fn is_sse(&self) -> bool {
        self.mime.as_deref() == Some("text/event-stream")
    }

    /// Every request of the body got its response.
    pub fn all_answered(&self, asked: &Asked) -> bool {
        asked.has_request() && self.answered.len() == asked.by_id.len()
    }
}

/// Judges the head against the request.
pub fn head(asked: &Asked, head: &ResponseHead, answer: &mut Answer, sink: &mut ViolationSink) {
    answer.status = Some(head.status);
    answer.mime = head.content_type.as_deref().map(|t| {
        t.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    });
    let version = asked.version();
    let ok = (200..300).contains(&head.status);
    let mut judge = Judge::new(sink, Stage::Head);
    session_and_version(asked, head, version, ok, &mut judge);
    // Legacy GETs are errors; 2026-07-28's GET and DELETE 405 is a SHOULD (warnings).
    let modern = version.is_modern();
    let get_status = match asked.method.as_deref() {
        Some(method @ ("GET" | "DELETE")) if modern && head.status != 405 => Some(format!(
            "a 2026-07-28 {method} is answered 405, got {}",
            head.status
        )),
        Some("GET") if ok && !answer.is_sse() => Some(format!(
            "a GET is answered with text/event-stream or 405, got {} {:?}",
            head.status,
            head.content_type.as_deref().unwrap_or("")
        )),
        _ => None,
    };
    if let Some(detail) = get_status {
        judge.flag_or_warn(!modern, RuleId::McpHttpGetStatus, "", detail);
    }
    let mut push = |rule, detail: String| judge.flag(rule, "", detail);
    if asked.is_post() && ok {
        post_answer(asked, head, answer, &mut push);
    }
    if version.is_modern()
        && answer.is_sse()
        && header(&head.headers, "x-accel-buffering").is_none_or(|v| v.trim() != "no")
    {
        push(
            RuleId::McpHttpSseNoBufferingHeader,
            "a 2026-07-28 SSE answer without X-Accel-Buffering: no".to_owned(),
        );
    }
}

/// A 2xx answer to a POST: 202 for notifications only, a JSON or SSE body for a request.
fn post_answer(
    asked: &Asked,
    head: &ResponseHead,
    answer: &Answer,
    push: &mut impl FnMut(RuleId, String),
) {
    if asked.only_notifications && head.status != 202 {
        push(
            RuleId::McpHttpNotificationStatus,
            format!(
                "a POST of notifications or responses only is answered 202, got {}",
                head.status
            ),
        );
    }
    if asked.has_request()
        && !matches!(
            answer.mime.as_deref(),
            Some("application/json" | "text/event-stream")
        )
    {
        push(
            RuleId::McpHttpResponseContentType,
            format!(
                "a request is answered as application/json or text/event-stream, got {:?}",
                head.content_type.as_deref().unwrap_or("")
            ),
        );
    }
}

/// The response's session id (its bytes; minted on 2026-07-28), and an unknown version header
/// the server accepted.
fn session_and_version(
    asked: &Asked,
    head: &ResponseHead,
    version: Version,
    ok: bool,
    judge: &mut Judge<'_>,
) {
    let mut push = |rule, detail: String| judge.flag(rule, "", detail);
    if let Some(session) = header(&head.headers, "mcp-session-id") {
        if !session_id_ok(session) {
            push(
                RuleId::McpSessionIdCharset,
                format!("Mcp-Session-Id has bytes outside 0x21-0x7E: {session:?}"),
            );
        }
        if version.is_modern() {
            push(
                RuleId::McpSessionMintedV4,
                "a 2026-07-28 exchange answered with an Mcp-Session-Id".to_owned(),
            );
        }
    }
    if let Some(sent) = &asked.version_header
        && Version::parse(sent).is_none()
        && ok
    {
        push(
            RuleId::McpHttpProtocolVersionUnsupportedAccepted,
            format!(
                "MCP-Protocol-Version {sent:?} is no known version, yet the answer is {}",
                head.status
            ),
        );
    }
}

/// One response message (a JSON body's, a batch element, an SSE event's data).
#[allow(clippy::too_many_arguments)]
pub fn message(
    asked: &Asked,
    answer: &mut Answer,
    message: &Value,
    judge: &mut Judge<'_>,
    cache: &SchemaCache,
    on_stream: bool,
) {
    if on_stream && answer.all_answered(asked) && !answer.after_reported {
        answer.after_reported = true;
        judge.flag(
            RuleId::McpSseAfterResponse,
            "",
            "an event after the stream's response".to_owned(),
        );
    }
    let kind = envelope::judge(message, judge);
    let version = asked.version();
    match kind {
        MessageKind::Request if on_stream && version.is_modern() => judge.flag(
            RuleId::McpSseServerRequestV4,
            "/method",
            "a 2026-07-28 server must not send requests on a response stream".to_owned(),
        ),
        MessageKind::Result | MessageKind::Error => {
            response(asked, answer, message, kind, judge, cache)
        }
        MessageKind::Notification => listen_stream(asked, message, judge),
        _ => {}
    }
}

/// Progress on a 2026-07-28 `subscriptions/listen` stream: request-scoped notifications flow
/// only on the stream of the request they are about (one exchange shows it: the listen
/// request is this exchange's).
fn listen_stream(asked: &Asked, message: &Value, judge: &mut Judge<'_>) {
    let listen = asked
        .requests
        .iter()
        .any(|(_, method)| method == "subscriptions/listen");
    if listen && message.get("method").and_then(Value::as_str) == Some("notifications/progress") {
        judge.flag(RuleId::McpProgressWrongStream,
            "/method",
            "notifications/progress on a subscriptions/listen stream; progress flows on the stream of the request it is about".to_owned(),
        );
    }
}

fn response(
    asked: &Asked,
    answer: &mut Answer,
    message: &Value,
    kind: MessageKind,
    judge: &mut Judge<'_>,
    cache: &SchemaCache,
) {
    let id = message.get("id");
    let judge_ids = asked.is_post() && asked.has_request();
    let version = asked.version();
    if kind == MessageKind::Result {
        let answers = id.and_then(|id| asked.find(id));
        if judge_ids && answers.is_none() && !asked.requests.is_empty() {
            judge.flag(
                RuleId::McpJsonrpcResponseIdMismatch,
                "/id",
                format!(
                    "the response's id {} echoes none of the request's ({})",
                    id.map_or_else(|| "(none)".to_owned(), shown),
                    ids(asked)
                ),
            );
        }
        if version.is_modern() {
            result_type(message.get("result"), judge);
        }
        if let (Some((_, method)), Some(result)) = (answers, message.get("result")) {
            match method.as_str() {
                "initialize" => version_known(result, judge),
                "tools/list" => tools_list::judge(result, version, cache, judge),
                "tools/call" => tools_call::judge(result, asked.task, version, judge),
                _ => {}
            }
        }
    } else {
        error_id(asked, answer, id, judge_ids, judge);
        // A 2026 client's first request probes with `server/discover`; a 2025-era server
        // refuses it its own way (400, 404, -32601, -32600), which is no 2026 server's answer.
        let probe = id
            .and_then(|id| asked.find(id))
            .is_some_and(|(_, method)| method == "server/discover");
        if version.is_modern() && !probe {
            error_code(message.get("error"), answer.status, judge);
        }
    }
    answer.responses += 1;
    if let Some(id) = id.filter(|id| asked.find(id).is_some()) {
        answer.answered.insert(id.to_string());
    }
}

fn ids(asked: &Asked) -> String {
    let shown: Vec<String> = asked.requests.iter().map(|(id, _)| shown(id)).collect();
    shown.join(", ")
}

/// An error's id: the request's, or `null`/absent only when the request id was unreadable or
/// the answer is a 4xx refusal.
fn error_id(
    asked: &Asked,
    answer: &Answer,
    id: Option<&Value>,
    judge_ids: bool,
    judge: &mut Judge<'_>,
) {
    if !judge_ids || asked.requests.is_empty() {
        return;
    }
    let detail = match id {
        None | Some(Value::Null) if answer.is_2xx() => format!(
            "an error answers a readable request id ({}) with a null id",
            ids(asked)
        ),
        None | Some(Value::Null) => return,
        Some(id) if asked.find(id).is_some() => return,
        Some(id) => format!(
            "the error's id {} is neither the request's ({}) nor null",
            shown(id),
            ids(asked)
        ),
    };
    judge.flag(RuleId::McpJsonrpcErrorIdInvalid, "/id", detail);
}

/// 2026-07-28's `resultType`: present, and `complete` or `input_required`.
fn result_type(result: Option<&Value>, judge: &mut Judge<'_>) {
    let Some(result) = result.and_then(Value::as_object) else {
        return;
    };
    match result.get("resultType") {
        None => judge.flag(
            RuleId::McpJsonrpcResultTypeMissing,
            "/result",
            "a 2026-07-28 result needs resultType".to_owned(),
        ),
        Some(Value::String(kind)) if kind == "complete" || kind == "input_required" => {}
        Some(other) => judge.flag(
            RuleId::McpJsonrpcResultTypeUnknown,
            "/result/resultType",
            format!(
                "resultType {} is neither complete nor input_required",
                shown(other)
            ),
        ),
    }
}

/// The error codes 2026-07-28 defines in its reserved range.
const V4_CODES: [i64; 3] = [-32020, -32021, -32022];

/// 2026-07-28's reserved codes and the HTTP status each is sent with.
fn error_code(error: Option<&Value>, status: Option<u16>, judge: &mut Judge<'_>) {
    let Some(code) = error.and_then(|e| e.get("code")).and_then(Value::as_i64) else {
        return;
    };
    let reserved = (-32099..=-32020).contains(&code) && !V4_CODES.contains(&code);
    if reserved || code == -32002 || code == -32042 {
        judge.flag(
            RuleId::McpJsonrpcErrorCodeReserved,
            "/error/code",
            format!("error code {code} is reserved or retired on 2026-07-28"),
        );
    }
    let wanted = match code {
        code if V4_CODES.contains(&code) => Some(400),
        -32601 => Some(404),
        _ => None,
    };
    if let (Some(wanted), Some(status)) = (wanted, status)
        && wanted != status
    {
        judge.flag(
            RuleId::McpHttpErrorStatus,
            "/error/code",
            format!("error {code} is sent with HTTP {wanted}, got {status}"),
        );
    }
}

/// An `InitializeResult`'s `protocolVersion` is one tooltap knows.
fn version_known(result: &Value, judge: &mut Judge<'_>) {
    let version = result.get("protocolVersion");
    if version
        .and_then(Value::as_str)
        .and_then(Version::parse)
        .is_none()
    {
        judge.flag(
            RuleId::McpLifecycleVersionUnknown,
            "/result/protocolVersion",
            format!(
                "the negotiated protocolVersion {} is no known version",
                version.map_or_else(|| "(none)".to_owned(), shown)
            ),
        );
    }
}

/// What a POST's answer must end with: a response to each request (a 2xx answer; a JSON body
/// E, an SSE stream with event ids W: it may be resumed), and a stream's own ending.
pub fn end(asked: &Asked, answer: &Answer, ended_mid_event: bool, sink: &mut ViolationSink) {
    let mut judge = Judge::new(sink, Stage::Complete);
    if ended_mid_event && answer.is_sse() {
        judge.flag(
            RuleId::McpSseUnterminatedEvent,
            "",
            "the stream ended inside an event (no blank line after it)".to_owned(),
        );
    }
    // A response whose id is wrong was reported as such: it still answered.
    if asked.is_post()
        && answer.is_2xx()
        && !asked.requests.is_empty()
        && answer.responses < asked.requests.len()
    {
        let missing: Vec<String> = asked
            .requests
            .iter()
            // A 2026-07-28 `subscriptions/listen` stream ends without a response (the server
            // tears it down with `notifications/cancelled`, or the client closes it).
            .filter(|(id, method)| {
                method != "subscriptions/listen" && !answer.answered.contains(&id.to_string())
            })
            .map(|(id, method)| format!("{} ({method})", shown(id)))
            .collect();
        if !missing.is_empty() {
            let detail = format!("no response for request {}", missing.join(", "));
            let strict = !(answer.is_sse() && answer.event_ids);
            judge.flag_or_warn(strict, RuleId::McpJsonrpcResponseMissing, "", detail);
        }
    }
    if asked.is_post()
        && answer.is_sse()
        && answer.event_ids
        && !answer.primed
        && asked.version() == Version::V3
    {
        judge.flag(RuleId::McpSsePrimingMissing,
            "",
            "a stream with event ids whose first event is not a priming event (an id and empty data)".to_owned(),
        );
    }
}
