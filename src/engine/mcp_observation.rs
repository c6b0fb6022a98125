//! What one MCP exchange saw, handed to the conversation store above the engine (which keeps
//! state across exchanges and judges the rules that need it, the reference's state S).
//!
//! Input: the request's method and headers, its body's JSON-RPC messages, the response head
//! and each response message (the JSON body's, or each SSE event's). Output: an
//! [`McpObservation`], taken from the exchange's [`crate::engine::Report::mcp`] when it
//! finishes (live inspector and `tooltap check` alike). Byte-bounded: the JSON values it keeps
//! (a tool list, a call's arguments, a result's `structuredContent`...) are counted as
//! [`crate::engine::weigh::value`] counts them, and a value that would pass the cap is not kept
//! ([`McpObservation::truncated`] says so; the message itself, its kind, id and method, is
//! always kept).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::engine::weigh;

/// The most bytes (as [`weigh::value`] counts them) one observation keeps of JSON values, unless
/// the exchange bounds its reassembly lower (`max_reassembled`).
pub const DEFAULT_MAX_OBSERVED: usize = 16 * 1024 * 1024;

/// What one kept message costs besides its values: its struct and its share of the list.
const MESSAGE_BYTES: usize = std::mem::size_of::<McpMessage>() + 64;

/// What one MCP exchange (one HTTP request and its answer) saw.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct McpObservation {
    /// The HTTP method (`POST`, `GET`, `DELETE`), upper case; `None` when the caller knew none
    /// (a capture without one, a test).
    pub method: Option<String>,
    /// The response status; `None` when no head arrived.
    pub status: Option<u16>,
    /// The response `Content-Type`, as sent.
    pub content_type: Option<String>,
    /// The request's `Mcp-Session-Id` header (names compare case-insensitively).
    pub request_session: Option<String>,
    /// The response's `Mcp-Session-Id` header: minted on an `InitializeResult`, else echoed.
    pub response_session: Option<String>,
    /// The request's `MCP-Protocol-Version` header.
    pub protocol_version_header: Option<String>,
    /// The request's `Last-Event-ID` header (a GET resuming a stream).
    pub last_event_id: Option<String>,
    /// The request's `Mcp-Param-{Name}` headers (2026-07-28), `Name` as sent (compare it
    /// case-insensitively) and the value as sent (maybe `=?base64?…?=`), in arrival order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub param_headers: Vec<(String, String)>,
    /// The request body was a JSON array (a batch: legal in 2025-03-26 only).
    pub request_batch: bool,
    /// The response body (or one SSE event's data) was a JSON array.
    pub response_batch: bool,
    /// The request body's JSON-RPC messages in order (a batch's elements each); empty for a
    /// GET, a DELETE, or a body that is not JSON.
    pub request: Vec<McpMessage>,
    /// The response's messages in arrival order: the JSON body's, or each SSE event's
    /// (priming events with empty data are not messages and are not listed).
    pub response: Vec<McpMessage>,
    /// Bytes the kept values cost, as [`weigh::value`] counts them; at most the cap.
    pub bytes: usize,
    /// A value was left out (`None` in its place) because keeping it would pass the cap (on the
    /// wire: `truncated`).
    #[serde(rename = "truncated")]
    pub capped: bool,
}

/// One JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpMessage {
    /// `None` for the request body; for the response, the `feed` call number (0-based) whose
    /// bytes completed the JSON body or the SSE event.
    pub seq: Option<u64>,
    /// The SSE event's own `id:` field, when it had one.
    pub event_id: Option<String>,
    pub kind: MessageKind,
    /// The `id` member exactly as sent (a string or an integer when valid; anything else is
    /// kept too, for the rules to judge); `None` when absent.
    pub id: Option<Value>,
    /// The `method` member of a request or a notification.
    pub method: Option<String>,
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]` of a request (2026-07-28).
    pub meta_protocol_version: Option<String>,
    /// The parts the cross-exchange rules read, by method.
    pub parts: Parts,
}

/// What kind of JSON-RPC message it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageKind {
    /// A `method` and an `id`.
    Request,
    /// A `method` and no `id`.
    Notification,
    /// A `result` (with or without an `error` beside it: the envelope rules report that).
    Result,
    /// An `error` and no `result`.
    Error,
    /// None of these (not an object, no `method`/`result`/`error`, `method` not a string).
    Invalid,
}

/// The members of a message the conversation rules read. A result is read as the answer to
/// the request with the same id in the same exchange (a POST's own request); a result whose
/// request is elsewhere (on a GET stream or a resumed one) is kept whole as [`Parts::Result`],
/// for the store to read once it matched the id. Every `Option<Value>` is the member as sent
/// (`Some(Value::Null)`: present and `null`), or `None` when absent or left out by the cap.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Parts {
    /// Nothing the conversation rules read.
    #[default]
    None,
    /// An `initialize` request: `params.protocolVersion`, `params.capabilities`.
    InitializeRequest {
        protocol_version: Option<Value>,
        capabilities: Option<Value>,
    },
    /// The result of this exchange's `initialize`: the negotiated `protocolVersion` and the
    /// server's `capabilities` (`tools`, `tools.listChanged`, `tasks`...).
    InitializeResult {
        protocol_version: Option<Value>,
        capabilities: Option<Value>,
    },
    /// A `tools/list` request: its `params.cursor` (absent: the first page).
    ToolsListRequest { cursor: Option<Value> },
    /// The result of this exchange's `tools/list`: one page of the catalog (`tools`, each tool
    /// object whole), `nextCursor` (absent: the last page), and 2026-07-28's `ttlMs` and
    /// `cacheScope`.
    ToolsListResult {
        tools: Option<Value>,
        next_cursor: Option<Value>,
        ttl_ms: Option<Value>,
        cache_scope: Option<Value>,
    },
    /// A `tools/call` request: `params.name`, `params.arguments`, `params._meta.progressToken`,
    /// `params.task` (2025-11-25 task augmentation), and a 2026-07-28 retry's
    /// `params.inputResponses` and `params.requestState`.
    ToolsCallRequest {
        name: Option<Value>,
        arguments: Option<Value>,
        progress_token: Option<Value>,
        task: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input_responses: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_state: Option<Value>,
    },
    /// The result of this exchange's `tools/call`: `content`, `structuredContent`, `isError`,
    /// and 2026-07-28's `resultType`, and an `input_required` result's `inputRequests` and
    /// `requestState`.
    ToolsCallResult {
        content: Option<Value>,
        structured_content: Option<Value>,
        is_error: Option<Value>,
        result_type: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input_requests: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_state: Option<Value>,
    },
    /// `notifications/progress`: `progressToken`, `progress`, `total`.
    Progress {
        progress_token: Option<Value>,
        progress: Option<Value>,
        total: Option<Value>,
    },
    /// `notifications/cancelled`: `requestId`, `reason`.
    Cancelled {
        request_id: Option<Value>,
        reason: Option<Value>,
    },
    /// An error response: `error.code`, `error.message`, `error.data`.
    Error {
        code: Option<Value>,
        message: Option<Value>,
        data: Option<Value>,
    },
    /// A result whose request is not in this exchange: the `result` member whole.
    Result { result: Option<Value> },
}

impl McpObservation {
    /// Reads one message (an element of the request body, of a response body, or one SSE
    /// event's data), already judged, and appends it to [`McpObservation::request`] (`seq`
    /// `None`) or [`McpObservation::response`]; `max` is the cap on [`McpObservation::bytes`].
    /// The kept members are moved out of `message`, not copied. `answers`: for a result, the
    /// method of the request it answers in this exchange (`None`: not this exchange's). Past
    /// the cap the message itself is not kept either.
    pub fn add(&mut self, mut message: Value, at: Where, answers: Option<&str>, max: usize) {
        let object = message.as_object();
        let kind = kind_of(object);
        let method = object
            .and_then(|o| o.get("method"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let meta_protocol_version = object
            .and_then(|o| o.get("params"))
            .and_then(|p| p.pointer("/_meta/io.modelcontextprotocol~1protocolVersion"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let id = message.as_object_mut().and_then(|o| o.remove("id"));
        let answers = match kind {
            MessageKind::Result => answers,
            _ => None,
        };
        let mut budget = Budget {
            used: &mut self.bytes,
            max,
            cut: false,
        };
        let entry = MESSAGE_BYTES
            + method.as_ref().map_or(0, String::len)
            + meta_protocol_version.as_ref().map_or(0, String::len)
            + at.event_id.as_ref().map_or(0, String::len)
            + weigh::maybe(id.as_ref());
        if !budget.spend(entry) {
            self.capped = true;
            return;
        }
        let parts = match message.as_object_mut() {
            Some(object) => read_parts(object, kind, method.as_deref(), answers, &mut budget),
            None => Parts::None,
        };
        self.capped |= budget.cut;
        let message = McpMessage {
            seq: at.seq,
            event_id: at.event_id,
            kind,
            id,
            method,
            meta_protocol_version,
            parts,
        };
        match at.seq {
            None => self.request.push(message),
            Some(_) => self.response.push(message),
        }
    }
}

/// Where a message was read: the request body (`seq` `None`), or the response at `seq`.
#[derive(Debug, Clone, Default)]
pub struct Where {
    pub seq: Option<u64>,
    pub event_id: Option<String>,
}

/// The kind of a message, from which members it has.
pub fn kind_of(object: Option<&Map<String, Value>>) -> MessageKind {
    let Some(object) = object else {
        return MessageKind::Invalid;
    };
    match (
        object.get("method"),
        object.contains_key("result"),
        object.contains_key("error"),
    ) {
        (Some(Value::String(_)), _, _) if object.contains_key("id") => MessageKind::Request,
        (Some(Value::String(_)), _, _) => MessageKind::Notification,
        (Some(_), _, _) => MessageKind::Invalid,
        (None, true, _) => MessageKind::Result,
        (None, false, true) => MessageKind::Error,
        (None, false, false) => MessageKind::Invalid,
    }
}

/// The cap on kept values, as it is spent.
struct Budget<'a> {
    used: &'a mut usize,
    max: usize,
    cut: bool,
}

impl Budget<'_> {
    /// Spends `cost` when it fits under the cap.
    fn spend(&mut self, cost: usize) -> bool {
        if self.used.saturating_add(cost) > self.max {
            return false;
        }
        *self.used += cost;
        true
    }

    /// `value` kept when it fits under the cap; `None` (and the cut noted) when it does not.
    fn keep(&mut self, value: Option<Value>) -> Option<Value> {
        let value = value?;
        if !self.spend(weigh::value(&value)) {
            self.cut = true;
            return None;
        }
        Some(value)
    }
}

/// Takes `name` out of the object at `parent` (one of `object`'s members), if both exist.
fn take(object: &mut Map<String, Value>, parent: &str, name: &str) -> Option<Value> {
    object.get_mut(parent)?.as_object_mut()?.remove(name)
}

fn read_parts(
    object: &mut Map<String, Value>,
    kind: MessageKind,
    method: Option<&str>,
    answers: Option<&str>,
    budget: &mut Budget<'_>,
) -> Parts {
    let mut param = |name: &str| take(object, "params", name);
    match (kind, method, answers) {
        (MessageKind::Request, Some("initialize"), _) => Parts::InitializeRequest {
            protocol_version: budget.keep(param("protocolVersion")),
            capabilities: budget.keep(param("capabilities")),
        },
        (MessageKind::Request, Some("tools/list"), _) => Parts::ToolsListRequest {
            cursor: budget.keep(param("cursor")),
        },
        (MessageKind::Request, Some("tools/call"), _) => Parts::ToolsCallRequest {
            name: budget.keep(param("name")),
            arguments: budget.keep(param("arguments")),
            task: budget.keep(param("task")),
            input_responses: budget.keep(param("inputResponses")),
            request_state: budget.keep(param("requestState")),
            progress_token: budget.keep(
                param("_meta")
                    .as_mut()
                    .and_then(Value::as_object_mut)
                    .and_then(|meta| meta.remove("progressToken")),
            ),
        },
        (MessageKind::Notification, Some("notifications/progress"), _) => Parts::Progress {
            progress_token: budget.keep(param("progressToken")),
            progress: budget.keep(param("progress")),
            total: budget.keep(param("total")),
        },
        (MessageKind::Notification, Some("notifications/cancelled"), _) => Parts::Cancelled {
            request_id: budget.keep(param("requestId")),
            reason: budget.keep(param("reason")),
        },
        (MessageKind::Result, _, answers) => {
            let mut member = |name: &str| take(object, "result", name);
            match answers {
                Some("initialize") => Parts::InitializeResult {
                    protocol_version: budget.keep(member("protocolVersion")),
                    capabilities: budget.keep(member("capabilities")),
                },
                Some("tools/list") => Parts::ToolsListResult {
                    tools: budget.keep(member("tools")),
                    next_cursor: budget.keep(member("nextCursor")),
                    ttl_ms: budget.keep(member("ttlMs")),
                    cache_scope: budget.keep(member("cacheScope")),
                },
                Some("tools/call") => Parts::ToolsCallResult {
                    content: budget.keep(member("content")),
                    structured_content: budget.keep(member("structuredContent")),
                    is_error: budget.keep(member("isError")),
                    result_type: budget.keep(member("resultType")),
                    input_requests: budget.keep(member("inputRequests")),
                    request_state: budget.keep(member("requestState")),
                },
                _ => Parts::Result {
                    result: budget.keep(object.remove("result")),
                },
            }
        }
        (MessageKind::Error, _, _) => {
            let mut field = |name: &str| take(object, "error", name);
            Parts::Error {
                code: budget.keep(field("code")),
                message: budget.keep(field("message")),
                data: budget.keep(field("data")),
            }
        }
        _ => Parts::None,
    }
}
