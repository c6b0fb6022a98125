//! The response head, the request headers the engine reads, and the ways a body can end: the
//! facts about an exchange that every reader of the engine gives it (the live inspector,
//! `tooltap check`, replay, enforce), kept in a leaf so that the dialects can name them without
//! importing the engine's root.

use super::label::Dialect;

/// The response headers the engine keeps besides the content type and encoding (lowercase):
/// MCP's session id and the SSE buffering hint. Other dialects' upstreams send none, so their
/// heads keep nothing more.
pub const KEPT_RESPONSE_HEADERS: [&str; 2] = ["mcp-session-id", "x-accel-buffering"];

/// The request headers the MCP dialect reads (lowercase; `mcp-param-` is a prefix): the
/// session, the protocol version, the routing headers, content negotiation and resumption.
/// No credential is among them.
pub const MCP_REQUEST_HEADERS: [&str; 8] = [
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "mcp-param-",
    "accept",
    "content-type",
    "last-event-id",
];

/// The request headers the engine reads for `dialect`, picked from `(name, value)` pairs in
/// their order: [`MCP_REQUEST_HEADERS`] for MCP, nothing for the others (their exchanges copy
/// no header). Every caller that starts an exchange from traffic or a recording uses it.
pub fn kept_request_headers<'a>(
    dialect: Dialect,
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<(String, String)> {
    if dialect != Dialect::Mcp {
        return Vec::new();
    }
    headers
        .into_iter()
        .filter(|(name, _)| {
            MCP_REQUEST_HEADERS.iter().any(|kept| {
                name.len() >= kept.len()
                    && name[..kept.len()].eq_ignore_ascii_case(kept)
                    && (kept.ends_with('-') || name.len() == kept.len())
            })
        })
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

/// The first value of header `name` (case-insensitive) among `(name, value)` pairs.
pub fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str())
}

/// The response status line and the headers the engine needs.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ResponseHead {
    pub status: u16,
    pub content_type: Option<String>,
    pub content_encoding: Option<String>,
    /// The [`KEPT_RESPONSE_HEADERS`] the response carried, `(lowercase name, value)` in
    /// arrival order; empty for every dialect but MCP's upstreams.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
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
                if let Some(kept) = KEPT_RESPONSE_HEADERS
                    .iter()
                    .find(|kept| name.eq_ignore_ascii_case(kept))
                {
                    head.headers.push(((*kept).to_owned(), value.to_owned()));
                }
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
