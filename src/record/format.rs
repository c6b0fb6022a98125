//! The recording format, version 1, as serde types: one JSON Lines file per exchange.
//!
//! Line 1 is a [`Meta`] (`"type":"exchange"`), then one [`FrameLine`] (`"type":"frame"`) per
//! response body frame exactly as it arrived, then one [`EndLine`] (`"type":"end"`). The writer
//! produces these, the reader parses them, `tooltap check` re-judges them and `tooltap replay`
//! serves them. docs/recording-format.md is the prose version of this file; keep them in step.
//! Bytes travel as a UTF-8 string when they are valid UTF-8 and as base64 otherwise, so a
//! recording is greppable and still exact.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::engine::{BodyEnd, Completeness, Violation};

/// The only version this build writes and reads.
pub const VERSION: u32 = 1;

/// One recorded line, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Line {
    Exchange(Box<Meta>),
    Frame(FrameLine),
    End(Box<EndLine>),
}

/// The first line: who, where, what was asked and the response head.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// Format version; a reader refuses versions it does not know.
    pub v: u32,
    /// The exchange id (also the file name and the `x-tooltap-exchange` header).
    pub id: String,
    /// RFC 3339 time tooltap received the request head.
    pub started: String,
    pub route: String,
    /// The upstream base URL, never with credentials (user-info is stripped).
    pub upstream: String,
    pub method: String,
    /// The client's path, without the query.
    pub path: String,
    /// The tool-calling dialect the exchange was judged as (`chat`, `responses`). Recordings
    /// that lack it: [`Meta::dialect`] derives it from `path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<crate::engine::Dialect>,
    /// The query string with credential-like parameter values redacted; `None` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    pub request: RequestPart,
    pub response: ResponsePart,
    /// What was redacted: `header:<name>` and `body:<json pointer>` entries.
    #[serde(default)]
    pub redacted: Vec<String>,
    /// The quirk ids `--inject` applied to this response; absent when none was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub injected: Vec<String>,
    /// MCP exchanges: a keyed digest of the request's credential headers
    /// (`hmac-sha256:<key id>:<hex>`, see `redact::digest`), never the credential, so that the
    /// conversation a 2026-07-28 exchange belongs to can be told again offline. Absent for
    /// other dialects and for requests without a credential.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
}

impl Meta {
    /// The recorded dialect, or the one the path names (old recordings).
    pub fn dialect(&self) -> crate::engine::Dialect {
        self.dialect
            .unwrap_or_else(|| crate::engine::Dialect::for_path(&self.path))
    }

    /// The request's path with its recorded query (credential values redacted), as the
    /// dialect is started from it when the recording is judged again.
    pub fn target(&self) -> String {
        match &self.query {
            Some(query) => format!("{}?{query}", self.path),
            None => self.path.clone(),
        }
    }

    /// The quirks tooltap injected: the `injected` mark, or, for a recording made before the
    /// mark was written, the `x-tooltap-quirk` response header it recorded.
    pub fn injected_quirks(&self) -> Vec<String> {
        if !self.injected.is_empty() {
            return self.injected.clone();
        }
        self.response
            .headers
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case(crate::quirk::QUIRK_HEADER))
            .flat_map(|(_, ids)| quirk_ids(ids))
            .collect()
    }
}

/// The ids of an `x-tooltap-quirk` header value (`id,id`).
pub fn quirk_ids(header: &str) -> Vec<String> {
    header
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The request as recorded (after redaction).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestPart {
    /// Header name/value pairs in the order received; names lowercase.
    pub headers: Vec<(String, String)>,
    pub body: RecordedBody,
}

/// The response head.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponsePart {
    pub status: u16,
    pub headers: Vec<(String, String)>,
}

/// A request body: JSON when it parses, else text, else base64.
///
/// JSON is kept as its text (a [`RawValue`]), not as a tree. The writer records a one-line body
/// with nothing to redact as the client sent it, and any other JSON body parsed, redacted and
/// compact (keys in serde_json's sorted order); a reader (`check`, `replay`) hands the text to
/// the engine as it is instead of building a tree and serialising it back.
/// [`RecordedBody::to_value`] parses it when a tree is wanted.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordedBody {
    Json(Box<RawValue>),
    Text(String),
    Base64(String),
    /// The body was not captured (too large, lossy or cut short).
    Missing,
}

impl PartialEq for RecordedBody {
    fn eq(&self, other: &RecordedBody) -> bool {
        match (self, other) {
            (RecordedBody::Json(a), RecordedBody::Json(b)) => a.get() == b.get(),
            (RecordedBody::Text(a), RecordedBody::Text(b)) => a == b,
            (RecordedBody::Base64(a), RecordedBody::Base64(b)) => a == b,
            (RecordedBody::Missing, RecordedBody::Missing) => true,
            _ => false,
        }
    }
}

impl RecordedBody {
    /// A JSON body, written compact.
    pub fn json(value: &Value) -> RecordedBody {
        match serde_json::value::to_raw_value(value) {
            Ok(raw) => RecordedBody::Json(raw),
            // Serialising a `Value` cannot fail (its keys are strings); keep the bytes anyway.
            Err(_) => RecordedBody::opaque(value.to_string().as_bytes()),
        }
    }

    /// The body as the engine and the matcher want it: the JSON text or the text as they are
    /// held, base64 decoded.
    pub fn bytes(&self) -> Option<Cow<'_, [u8]>> {
        match self {
            RecordedBody::Json(raw) => Some(Cow::Borrowed(raw.get().as_bytes())),
            RecordedBody::Text(text) => Some(Cow::Borrowed(text.as_bytes())),
            RecordedBody::Base64(b64) => BASE64.decode(b64).ok().map(Cow::Owned),
            RecordedBody::Missing => None,
        }
    }

    /// A JSON body as a tree; `None` for any other kind.
    pub fn to_value(&self) -> Option<Value> {
        match self {
            RecordedBody::Json(raw) => serde_json::from_str(raw.get()).ok(),
            _ => None,
        }
    }

    /// Classify raw bytes (JSON beats text beats base64).
    pub fn from_bytes(bytes: &[u8]) -> RecordedBody {
        match serde_json::from_slice::<Value>(bytes) {
            Ok(value) => RecordedBody::json(&value),
            Err(_) => RecordedBody::opaque(bytes),
        }
    }

    /// Bytes that are not JSON: text when they are UTF-8, else base64.
    pub fn opaque(bytes: &[u8]) -> RecordedBody {
        match std::str::from_utf8(bytes) {
            Ok(text) => RecordedBody::Text(text.to_string()),
            Err(_) => RecordedBody::Base64(BASE64.encode(bytes)),
        }
    }
}

/// One response body frame exactly as it arrived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameLine {
    /// 0-based, gap-free within a file.
    pub seq: u64,
    /// Microseconds since tooltap received the request head.
    pub t_us: u64,
    #[serde(flatten)]
    pub data: FrameData,
}

/// A frame's bytes: `text` when valid UTF-8, `base64` otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FrameData {
    Text(String),
    Base64(String),
}

impl FrameData {
    pub fn from_bytes(bytes: &[u8]) -> FrameData {
        match std::str::from_utf8(bytes) {
            Ok(text) => FrameData::Text(text.to_string()),
            Err(_) => FrameData::Base64(BASE64.encode(bytes)),
        }
    }

    /// The exact bytes; `None` for malformed base64.
    pub fn to_bytes(&self) -> Option<Bytes> {
        match self {
            FrameData::Text(text) => Some(Bytes::from(text.clone())),
            FrameData::Base64(b64) => BASE64.decode(b64).ok().map(Bytes::from),
        }
    }
}

/// How the exchange ended, from the recorder's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Complete,
    /// Whoever read the body left before its end (on the wire: `client_gone`).
    #[serde(rename = "client_gone")]
    ReaderGone,
    /// The upstream broke off mid-body (on the wire: `upstream_error`).
    #[serde(rename = "upstream_error")]
    UpstreamBroke,
    Lossy,
    /// The recording lost frames: it hit its size limit, or its handle was dropped before the
    /// end; frames after that are missing (on the wire: `truncated`).
    #[serde(rename = "truncated")]
    FramesLost,
    /// Enforce mode cut the response on purpose: the frames are the upstream's as read, and
    /// the end line's `enforced` says what the client got instead.
    Enforced,
}

impl Outcome {
    /// Every outcome, in declaration order.
    pub const ALL: [Outcome; 6] = [
        Outcome::Complete,
        Outcome::ReaderGone,
        Outcome::UpstreamBroke,
        Outcome::Lossy,
        Outcome::FramesLost,
        Outcome::Enforced,
    ];

    /// How the engine must treat a body that ended this way: the one translation, used live
    /// (from the tap's ending) and by `tooltap check` (from the file), so equal bytes with an
    /// equal ending get an equal verdict. A recording with dropped frames is lossy whatever
    /// its outcome says.
    pub fn body_end(self, dropped_frames: u64) -> BodyEnd {
        if dropped_frames > 0 {
            return BodyEnd::Lossy;
        }
        match self {
            Outcome::Complete => BodyEnd::Complete,
            Outcome::UpstreamBroke => BodyEnd::UpstreamBroke,
            Outcome::ReaderGone => BodyEnd::ReaderGone,
            Outcome::Lossy | Outcome::FramesLost => BodyEnd::Lossy,
            // Enforce mode stopped reading: judged like a reader that left (a whole buffered
            // body in full, a stream cut before its end without its end-of-body rules).
            Outcome::Enforced => BodyEnd::ReaderGone,
        }
    }

    /// The name written in files and logs (`client_gone`, not `ReaderGone`).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Complete => "complete",
            Outcome::ReaderGone => "client_gone",
            Outcome::UpstreamBroke => "upstream_error",
            Outcome::Lossy => "lossy",
            Outcome::FramesLost => "truncated",
            Outcome::Enforced => "enforced",
        }
    }
}

/// What enforce mode sent the client instead of the upstream's response (outcome `enforced`):
/// replay serves this, so a fixture reproduces what the client saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnforcedLine {
    /// `502` when a buffered body was refused; absent when a stream was cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The 502's body, or the stream's final error event.
    #[serde(flatten)]
    pub data: FrameData,
    /// For a stream: the error event replaced the last recorded frame (`true`), or followed
    /// the upstream's whole body (`false`).
    pub replaced_last: bool,
    /// For a JSON-array stream: the client got this many of the recorded body bytes (whole
    /// elements), then the replacement; absent when the cut fell on a frame boundary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_bytes: Option<u64>,
}

/// The last line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndLine {
    pub outcome: Outcome,
    /// Microseconds since tooltap received the request head.
    pub t_us: u64,
    /// Frames the tap dropped (inspection fell behind), which are missing from this file.
    pub dropped_frames: u64,
    /// Frames written to this file.
    pub frames: u64,
    /// Body bytes written to this file.
    pub bytes: u64,
    pub completeness: Completeness,
    /// The violations tooltap found live (`tooltap check` re-judges from the frames).
    pub violations: Vec<Violation>,
    /// Present with outcome `enforced`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforced: Option<EnforcedLine>,
}
