//! One exchange re-judged: [`Checked`], an input's [`Item`], and [`engine_report`], a recording
//! run through the engine as `tooltap check` and `tooltap report` both run it. A leaf of
//! `check`: the parallel judge, the conversation settling and the outputs all read it.
//!
//! Input: a [`Recording`]. Output: the engine's [`Report`]; the judge turns it into a
//! [`Checked`].

use std::sync::Arc;

use crate::engine::{
    BodyEnd, Completeness, EngineConfig, Exchange, Report, RequestParts, ResponseHead, SchemaCache,
    Violation,
};
use crate::record::{Outcome, Recording};

/// One exchange re-judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// The file (or the `--response` capture) it came from.
    pub source: String,
    pub id: Option<String>,
    pub route: Option<String>,
    pub method: Option<String>,
    pub path: Option<String>,
    /// When the request head arrived (RFC 3339), and the model the request named.
    pub started: Option<String>,
    pub model: Option<String>,
    /// How the recording says the exchange ended; `None` without an end line (or a capture).
    pub outcome: Option<Outcome>,
    /// Violations recorded live, when the file has an end line and tooltap judged the exchange
    /// live (not for another tool's fixture without tooltap's key).
    pub live_violations: Option<usize>,
    /// The quirks `proxy --inject` (or `replay --quirk`) put into this response: its
    /// violations are tooltap's doing, not the provider's. Empty for a faithful recording.
    pub injected: Vec<String>,
    pub violations: Vec<Violation>,
    pub completeness: Completeness,
}

/// One input's result.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Checked(Box<Checked>),
    /// A message naming the file (and line) that could not be read.
    Unreadable(String),
}

impl Item {
    /// The exchange judged, unless the input was unreadable.
    pub fn checked(&self) -> Option<&Checked> {
        match self {
            Item::Checked(checked) => Some(checked),
            Item::Unreadable(_) => None,
        }
    }

    /// The message naming an input that could not be read.
    pub fn unreadable(&self) -> Option<&str> {
        match self {
            Item::Unreadable(message) => Some(message),
            Item::Checked(_) => None,
        }
    }
}

/// The engine's whole [`Report`] for one recording (what `tooltap report` shows beside the
/// verdict: request facts, reassembled choices).
pub fn engine_report(
    recording: &Recording,
    engine: &Arc<EngineConfig>,
    cache: &SchemaCache,
) -> Report {
    let meta = &recording.meta;
    let request = meta.request.body.bytes().unwrap_or_default();
    let target = meta.target();
    let dialect = meta.dialect();
    let headers = meta.request.headers.iter();
    let headers = crate::engine::head::kept_request_headers(
        dialect,
        headers.map(|(name, value)| (name.as_str(), value.as_str())),
    );
    let parts = RequestParts {
        body: &request,
        path: Some(&target),
        method: Some(&meta.method),
        headers: &headers,
    };
    let mut exchange = Exchange::start(engine, cache, dialect, parts);
    let headers = meta.response.headers.iter();
    exchange.response_head(ResponseHead::from_headers(
        meta.response.status,
        headers.map(|(name, value)| (name.as_str(), value.as_str())),
    ));
    for frame in &recording.frames {
        exchange.feed(&frame.bytes);
    }
    // The same translation of the ending as the live inspector's; a file with no end line was
    // cut while being written, so its frames may have holes.
    let body_end = recording.end.as_ref().map_or(BodyEnd::Lossy, |end| {
        end.outcome.body_end(end.dropped_frames)
    });
    exchange.finish(body_end)
}
