//! What the conversation store is told about one settled MCP exchange: [`Seen`].
//!
//! Input: built by the caller (the live inspector or `tooltap check`) from the MCP dialect's
//! per-exchange observation; it borrows the parsed JSON-RPC messages. Output: read by the
//! store's rules. Times are microseconds on one wall clock (the request head's arrival plus the
//! time since), so the live proxy and a recording order and compare them alike.

use std::cell::OnceCell;
use std::collections::HashMap;

use serde_json::Value;

/// The HTTP method of the exchange, as far as MCP cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    Post,
    Get,
    Delete,
    Other,
}

impl HttpMethod {
    pub fn from_name(name: &str) -> HttpMethod {
        match name.to_ascii_uppercase().as_str() {
            "POST" => HttpMethod::Post,
            "GET" => HttpMethod::Get,
            "DELETE" => HttpMethod::Delete,
            _ => HttpMethod::Other,
        }
    }
}

/// One JSON-RPC message of the exchange (an array element of a V1 batch counts as one).
#[derive(Debug, Clone, Copy)]
pub struct Msg<'a> {
    pub value: &'a Value,
    /// JSON pointer to the message in the document it came from (`""` for a whole body,
    /// `/0` for a batch element; an SSE event's data is its own document).
    pub path: &'a str,
    /// The `feed` number that completed it (SSE), for the violation's `seq`.
    pub seq: Option<u64>,
    /// The SSE event's `id:` field, when it had one.
    pub event_id: Option<&'a str>,
}

/// One MCP exchange, settled whole.
#[derive(Debug, Clone)]
pub struct Seen<'a> {
    /// The upstream endpoint (origin and path; never a credential).
    pub upstream: &'a str,
    pub method: HttpMethod,
    /// The response status; 0 when there was no answer.
    pub status: u16,
    /// When the request head arrived, and when the response body ended (µs, one clock).
    pub start_us: u64,
    pub end_us: u64,
    /// `Mcp-Session-Id` on the request and on the response.
    pub request_session: Option<&'a str>,
    pub response_session: Option<&'a str>,
    /// `MCP-Protocol-Version` on the request.
    pub protocol_header: Option<&'a str>,
    /// A digest of the request's credential (`Authorization`), never the credential.
    pub credential: u64,
    /// The request carried `Last-Event-ID` (a resumption).
    pub resumed: bool,
    /// Its value, when it carried one.
    pub last_event_id: Option<&'a str>,
    /// The request's `Mcp-Param-{Name}` headers: `(Name, value)` as sent.
    pub param_headers: &'a [(String, String)],
    /// Client-to-server messages (the POST body).
    pub sent: Vec<Msg<'a>>,
    /// Server-to-client messages (the JSON body, or the SSE events in order).
    pub received: Vec<Msg<'a>>,
    /// The observation kept every value (none left out by its byte cap).
    pub whole: bool,
    /// The responses among `received` by id, indexed the first time one is looked up.
    pub answers: Answers,
}

/// Where the first response for each JSON-RPC id is among an exchange's `received` messages,
/// so that finding the answers of a batch's requests takes one pass, not one per request.
#[derive(Debug, Clone, Default)]
pub struct Answers(OnceCell<HashMap<RpcId, usize>>);

impl<'a> Seen<'a> {
    /// The response among `received` answering the request `id` (the first, when several do).
    pub fn answer(&self, id: &RpcId) -> Option<&Msg<'a>> {
        let index = self.answers.0.get_or_init(|| {
            let mut first = HashMap::new();
            for (at, msg) in self.received.iter().enumerate() {
                if is_response(msg.value)
                    && let Some(id) = RpcId::of(msg.value)
                {
                    first.entry(id).or_insert(at);
                }
            }
            first
        });
        index.get(id).and_then(|at| self.received.get(*at))
    }
}

/// The 2026-07-28 revision: no sessions, no `initialize`.
pub const MODERN: &str = "2026-07-28";

impl Seen<'_> {
    /// Whether this exchange speaks the 2026-07-28 revision (header or `_meta`).
    pub fn modern(&self) -> bool {
        self.protocol_header == Some(MODERN)
            || self.sent.iter().any(|msg| {
                msg.value
                    .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
                    .and_then(Value::as_str)
                    == Some(MODERN)
            })
    }

    /// The client's requests (messages with a `method` and an `id`).
    pub fn requests(&self) -> impl Iterator<Item = &Msg<'_>> {
        self.sent.iter().filter(|m| is_request(m.value))
    }

    /// Whether the client sent a request with this method.
    pub fn sent_method(&self, method: &str) -> bool {
        self.sent.iter().any(|m| method_of(m.value) == Some(method))
    }
}

/// The `method` of a request or notification.
pub fn method_of(value: &Value) -> Option<&str> {
    value.get("method").and_then(Value::as_str)
}

/// A request: a `method` and an `id`.
pub fn is_request(value: &Value) -> bool {
    method_of(value).is_some() && value.get("id").is_some()
}

/// A response: an `id` and a `result` or an `error`, no `method`.
pub fn is_response(value: &Value) -> bool {
    method_of(value).is_none()
        && value.get("id").is_some()
        && (value.get("result").is_some() || value.get("error").is_some())
}

/// A JSON-RPC id as a key: value and type (`"1"` and `1` differ).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RpcId {
    Int(i64),
    Str(Box<str>),
    /// Any other JSON (a float, null...): its text.
    Other(Box<str>),
}

impl RpcId {
    pub fn of(value: &Value) -> Option<RpcId> {
        RpcId::from_value(value.get("id")?)
    }

    /// The id `value` is (a `requestId`, say).
    pub fn from_value(value: &Value) -> Option<RpcId> {
        Some(match value {
            Value::String(text) => RpcId::Str(text.as_str().into()),
            Value::Number(n) => match n.as_i64() {
                Some(n) => RpcId::Int(n),
                None => RpcId::Other(n.to_string().into()),
            },
            other => RpcId::Other(other.to_string().into()),
        })
    }

    /// The request a `notifications/cancelled` names (`params.requestId`).
    pub fn cancelled(value: &Value) -> Option<RpcId> {
        RpcId::from_value(value.pointer("/params/requestId")?)
    }

    /// Bytes this key holds, for the conversation's weight.
    pub fn weight(&self) -> usize {
        match self {
            RpcId::Int(_) => 8,
            RpcId::Str(t) | RpcId::Other(t) => t.len(),
        }
    }
}

impl std::fmt::Display for RpcId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RpcId::Int(n) => write!(f, "{n}"),
            RpcId::Str(t) => write!(f, "\"{t}\""),
            RpcId::Other(t) => f.write_str(t),
        }
    }
}

/// One message, owned: what [`SeenOwned`] keeps.
#[derive(Debug, Clone)]
pub struct MsgOwned {
    pub value: Value,
    pub path: String,
    pub seq: Option<u64>,
    pub event_id: Option<String>,
}

impl MsgOwned {
    fn borrow(&self) -> Msg<'_> {
        Msg {
            value: &self.value,
            path: &self.path,
            seq: self.seq,
            event_id: self.event_id.as_deref(),
        }
    }
}

/// A [`Seen`] that owns its parts, to carry to the thread that settles it (live) or to keep
/// until its turn (`tooltap check`).
#[derive(Debug, Clone)]
pub struct SeenOwned {
    pub upstream: String,
    pub method: HttpMethod,
    pub status: u16,
    pub start_us: u64,
    pub end_us: u64,
    pub request_session: Option<String>,
    pub response_session: Option<String>,
    pub protocol_header: Option<String>,
    pub credential: u64,
    pub resumed: bool,
    pub last_event_id: Option<String>,
    pub param_headers: Vec<(String, String)>,
    pub sent: Vec<MsgOwned>,
    pub received: Vec<MsgOwned>,
    pub whole: bool,
}

impl SeenOwned {
    pub fn seen(&self) -> Seen<'_> {
        Seen {
            upstream: &self.upstream,
            method: self.method,
            status: self.status,
            start_us: self.start_us,
            end_us: self.end_us,
            request_session: self.request_session.as_deref(),
            response_session: self.response_session.as_deref(),
            protocol_header: self.protocol_header.as_deref(),
            credential: self.credential,
            resumed: self.resumed,
            last_event_id: self.last_event_id.as_deref(),
            param_headers: &self.param_headers,
            sent: self.sent.iter().map(MsgOwned::borrow).collect(),
            received: self.received.iter().map(MsgOwned::borrow).collect(),
            whole: self.whole,
            answers: Answers::default(),
        }
    }

    /// Where it goes in the settling order: its request's start, a GET stream's end.
    pub fn order_us(&self) -> u64 {
        match self.method {
            HttpMethod::Get => self.end_us,
            _ => self.start_us,
        }
    }
}
