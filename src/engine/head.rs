//! The response head and the ways a body can end: the two facts about a response that every
//! reader of the engine gives it (the live inspector, `tooltap check`, replay, enforce), kept in a
//! leaf so that the dialects can name them without importing the engine's root.

/// The response status line and the headers the engine needs.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ResponseHead {
    pub status: u16,
    pub content_type: Option<String>,
    pub content_encoding: Option<String>,
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
