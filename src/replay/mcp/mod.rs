//! A recorded MCP server, served by `tooltap replay` to a real MCP client (Streamable HTTP).
//!
//! Input: the client's request (method, headers, body) and, when a recording matched, its
//! recorded request, head and frames. Output: the answer a live server would give this client.
//! Matching already leaves the client's own counters out (the JSON-RPC `id` and
//! `params._meta.progressToken`, see [`crate::replay::matching`]; headers are never matched, so
//! `Mcp-Session-Id` and `MCP-Protocol-Version` cannot break it); here the answer is fitted:
//!
//! * the response to the request carries the **client's** id, same value and JSON type, and
//!   progress notifications its token ([`rewrite`]);
//! * a recorded `Mcp-Session-Id` is replaced: on an answer to a request that carried none
//!   (`initialize`) by a fresh id of replay's own, one per client session, and otherwise by the
//!   id the client sent, so a client never sees the recorded server's session;
//! * SSE answers keep their event boundaries (one frame per event), their ids prefixed per
//!   served answer so they stay unique in a session;
//! * a notification (or a client's response) no recording matches gets `202 Accepted`, a `GET`
//!   stream none matches `405` (the server offers no stream, which the spec allows), a
//!   `DELETE` none matches `200`; a recorded `GET` stream stays open after its events, as a
//!   live server's does;
//! * any other miss is a JSON-RPC error carrying the client's id (HTTP 404, the miss message
//!   in `error.message`), which MCP clients show, where the OpenAI-shaped error would be read
//!   as a broken envelope.

pub mod rewrite;

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{Method, Response, StatusCode};
use serde_json::{Value, json};

use crate::proxy::forward::body::{self as proxy_body, ProxyBody};
use crate::record::RecordedFrame;
pub use rewrite::Echo;

/// The session header (header names compare case-insensitively; `http` keeps them lowercase).
pub const SESSION_HEADER: &str = "mcp-session-id";

/// What replay reads of a JSON-RPC message a client POSTed.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// `None` for a notification (and a malformed message).
    pub id: Option<Value>,
    /// `None` for a client's response to a server request.
    pub method: Option<String>,
    /// `params._meta.progressToken`, when given.
    pub progress_token: Option<Value>,
}

impl Call {
    /// The message in `body`, when it is one JSON-RPC object (a batch is not read).
    pub fn parse(body: &[u8]) -> Option<Call> {
        let value: Value = serde_json::from_slice(body).ok()?;
        let object = value.as_object()?;
        object.get("jsonrpc")?;
        Some(Call {
            id: object.get("id").filter(|id| !id.is_null()).cloned(),
            method: object
                .get("method")
                .and_then(Value::as_str)
                .map(str::to_owned),
            progress_token: value.pointer("/params/_meta/progressToken").cloned(),
        })
    }

    /// A notification or a response: the server owes it no JSON-RPC answer (`202`).
    pub fn wants_no_answer(&self) -> bool {
        self.id.is_none() || self.method.is_none()
    }
}

/// Session ids and answer numbers of one replay server.
#[derive(Debug)]
pub struct Sessions {
    /// Random per server, so ids differ between runs.
    nonce: u64,
    minted: AtomicU64,
    answers: AtomicU64,
}

impl Default for Sessions {
    fn default() -> Self {
        use std::hash::{BuildHasher, Hasher};
        // The standard library's per-process random hashing keys: unpredictable enough for an
        // id that must only be fresh, with no dependency for it.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(u64::from(std::process::id()));
        Sessions {
            nonce: hasher.finish(),
            minted: AtomicU64::new(0),
            answers: AtomicU64::new(0),
        }
    }
}

impl Sessions {
    /// A fresh session id: 32 visible ASCII characters (hex), never handed out before.
    pub fn mint(&self) -> String {
        let n = self.minted.fetch_add(1, Ordering::Relaxed);
        format!(
            "{:016x}{:016x}",
            self.nonce,
            n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ n
        )
    }

    /// The next answer's event-id prefix (`r<n>.`).
    fn next_prefix(&self) -> String {
        format!("r{}.", self.answers.fetch_add(1, Ordering::Relaxed))
    }
}

/// Whether the exchange is MCP: the route's dialect says so.
pub fn is_mcp(dialect: Option<crate::engine::Dialect>) -> bool {
    dialect == Some(crate::engine::Dialect::Mcp)
}

/// A matched recording's head and frames fitted to this client (see the module doc).
pub struct Fit<'a> {
    pub sessions: &'a Sessions,
    /// The client's request headers.
    pub sent_headers: &'a HeaderMap,
    pub call: Option<&'a Call>,
    /// The recording's request body.
    pub recorded_request: Option<&'a [u8]>,
    /// The served head (recorded, cleaned).
    pub headers: &'a mut HeaderMap,
}

impl Fit<'_> {
    /// The frames to serve, the head adjusted in place.
    pub fn apply(self, frames: std::sync::Arc<[RecordedFrame]>) -> std::sync::Arc<[RecordedFrame]> {
        let session = HeaderName::from_static(SESSION_HEADER);
        if self.headers.contains_key(&session) {
            let id = match self.sent_headers.get(&session) {
                Some(sent) => Some(sent.clone()),
                None => HeaderValue::from_str(&self.sessions.mint()).ok(),
            };
            match id {
                Some(id) => self.headers.insert(session, id),
                None => self.headers.remove(session),
            };
        }
        let recorded = self.recorded_request.and_then(Call::parse);
        let (Some(call), Some(recorded)) = (self.call, recorded) else {
            return frames;
        };
        let (Some(client_id), Some(recorded_id)) = (call.id.clone(), recorded.id) else {
            return frames;
        };
        let echo = Echo {
            recorded_id,
            client_id,
            tokens: recorded.progress_token.zip(call.progress_token.clone()),
            event_prefix: self.sessions.next_prefix(),
        };
        let streamed = self
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.to_ascii_lowercase().contains("text/event-stream"));
        if streamed {
            return rewrite::sse_frames(&frames, &echo).into();
        }
        let body: Vec<u8> = frames
            .iter()
            .flat_map(|f| f.bytes.iter().copied())
            .collect();
        match rewrite::json_body(&body, &echo) {
            Some(bytes) => std::sync::Arc::from(vec![RecordedFrame {
                seq: 0,
                t_us: frames.last().map_or(0, |frame| frame.t_us),
                bytes: Bytes::from(bytes),
            }]),
            None => frames,
        }
    }
}

/// The answer to an MCP request no recording matches, when the protocol has one that needs no
/// recording: `202` for a notification or response, `405` for a `GET` stream, `200` for a
/// `DELETE`.
pub fn unmatched(method: &Method, call: Option<&Call>) -> Option<Response<ProxyBody>> {
    let status = match *method {
        Method::GET => StatusCode::METHOD_NOT_ALLOWED,
        Method::DELETE => StatusCode::OK,
        Method::POST if call.is_some_and(Call::wants_no_answer) => StatusCode::ACCEPTED,
        _ => return None,
    };
    let mut response = Response::new(proxy_body::full(Bytes::new()));
    *response.status_mut() = status;
    if status == StatusCode::METHOD_NOT_ALLOWED {
        response.headers_mut().insert(
            http::header::ALLOW,
            HeaderValue::from_static("POST, DELETE"),
        );
    }
    Some(response)
}

/// A miss as a JSON-RPC error with the client's id (HTTP 404).
pub fn miss(call: Option<&Call>, message: &str) -> Response<ProxyBody> {
    let id = call.and_then(|call| call.id.clone()).unwrap_or(Value::Null);
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32603, "message": message, "data": {"tooltap": "replay_no_match"}},
    });
    let mut response = Response::new(proxy_body::full(Bytes::from(body.to_string())));
    *response.status_mut() = StatusCode::NOT_FOUND;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_read_and_notifications_and_responses_want_no_answer() {
        let call = Call::parse(
            br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"_meta":{"progressToken":3}}}"#,
        )
        .expect("a call");
        assert_eq!(call.id, Some(json!("a")));
        assert_eq!(call.progress_token, Some(json!(3)));
        assert!(!call.wants_no_answer());
        let note = Call::parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert!(note.expect("a notification").wants_no_answer());
        let answer = Call::parse(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        assert!(answer.expect("a response").wants_no_answer());
        assert_eq!(Call::parse(br#"{"model":"x"}"#), None);
        assert_eq!(Call::parse(br#"[{"jsonrpc":"2.0"}]"#), None);
    }

    #[test]
    fn minted_session_ids_are_fresh_visible_ascii() {
        let sessions = Sessions::default();
        let (a, b) = (sessions.mint(), sessions.mint());
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    }

    #[test]
    fn the_session_header_is_minted_for_initialize_and_echoed_after() {
        let sessions = Sessions::default();
        let frames: std::sync::Arc<[RecordedFrame]> = std::sync::Arc::from(vec![RecordedFrame {
            seq: 0,
            t_us: 0,
            bytes: Bytes::from_static(br#"{"jsonrpc":"2.0","id":0,"result":{}}"#),
        }]);
        let recorded_headers = || {
            let mut headers = HeaderMap::new();
            headers.insert(SESSION_HEADER, HeaderValue::from_static("recorded-session"));
            headers.insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            headers
        };
        let call = Call::parse(br#"{"jsonrpc":"2.0","id":7,"method":"initialize"}"#);
        let mut headers = recorded_headers();
        let served = Fit {
            sessions: &sessions,
            sent_headers: &HeaderMap::new(),
            call: call.as_ref(),
            recorded_request: Some(br#"{"jsonrpc":"2.0","id":0,"method":"initialize"}"#),
            headers: &mut headers,
        }
        .apply(frames.clone());
        let minted = headers[SESSION_HEADER].to_str().expect("ascii").to_owned();
        assert_ne!(minted, "recorded-session");
        assert_eq!(
            served[0].bytes,
            &br#"{"jsonrpc":"2.0","id":7,"result":{}}"#[..]
        );
        let mut sent = HeaderMap::new();
        sent.insert(
            SESSION_HEADER,
            HeaderValue::from_str(&minted).expect("value"),
        );
        let mut headers = recorded_headers();
        Fit {
            sessions: &sessions,
            sent_headers: &sent,
            call: call.as_ref(),
            recorded_request: None,
            headers: &mut headers,
        }
        .apply(frames);
        assert_eq!(headers[SESSION_HEADER], minted.as_str());
    }

    #[test]
    fn unmatched_answers_follow_the_transport() {
        let note = Call::parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        let status = |method: Method, call: Option<&Call>| {
            unmatched(&method, call).map(|response| response.status())
        };
        assert_eq!(
            status(Method::POST, note.as_ref()),
            Some(StatusCode::ACCEPTED)
        );
        assert_eq!(
            status(Method::GET, None),
            Some(StatusCode::METHOD_NOT_ALLOWED)
        );
        assert_eq!(status(Method::DELETE, None), Some(StatusCode::OK));
        let call = Call::parse(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        assert_eq!(status(Method::POST, call.as_ref()), None);
        let miss = miss(call.as_ref(), "no recording");
        assert_eq!(miss.status(), StatusCode::NOT_FOUND);
    }
}
