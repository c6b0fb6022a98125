//! `tooltap replay --quirk`: a matched recording's frames with the quirks applied, and the
//! headers and log fields that say so.
//!
//! Input: the quirks, the exchange's dialect (from its path, as the inspector judges it), the
//! request body, the engine's view of the head, the recorded frames.
//! Output: the frames to serve; `x-tooltap-quirk` names the quirks that applied and
//! `x-tooltap-quirk-not-applicable` those that found nothing to change; the exchange span's
//! `quirk` field (carried by the inspector's summary line) says the same.

use std::sync::Arc;

use http::HeaderMap;
use http::header::{HeaderName, HeaderValue};

use crate::engine::ResponseHead;
use crate::quirk::{self, NOT_APPLICABLE_HEADER, QUIRK_HEADER, QuirkId, TimedFrame};
use crate::record::RecordedFrame;

pub fn apply(
    quirks: &[QuirkId],
    dialect: crate::engine::Dialect,
    request: &[u8],
    head: &ResponseHead,
    frames: &[RecordedFrame],
    headers: &mut HeaderMap,
) -> Arc<[RecordedFrame]> {
    let timed: Vec<TimedFrame> = frames
        .iter()
        .map(|frame| TimedFrame {
            t_us: frame.t_us,
            bytes: frame.bytes.clone(),
        })
        .collect();
    let applied = quirk::apply(quirks, dialect, request, head, &timed);
    let names = |ids: Vec<&str>| ids.join(",");
    let applied_ids = names(applied.applied.iter().map(|q| q.as_str()).collect());
    let skipped_ids = names(
        applied
            .not_applicable
            .iter()
            .map(|(q, _)| q.as_str())
            .collect(),
    );
    let span = tracing::Span::current();
    if applied.applied.is_empty() {
        span.record("quirk", "quirk_not_applicable");
    } else {
        span.record("quirk", applied_ids.as_str());
    }
    for (quirk, reason) in &applied.not_applicable {
        tracing::info!(quirk = %quirk, reason = reason.as_str(), "quirk_not_applicable");
    }
    for (name, value) in [
        (QUIRK_HEADER, &applied_ids),
        (NOT_APPLICABLE_HEADER, &skipped_ids),
    ] {
        if let Ok(value) = HeaderValue::from_str(value)
            && !value.is_empty()
        {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    applied
        .frames
        .into_iter()
        .enumerate()
        .map(|(seq, frame)| RecordedFrame {
            seq: seq as u64,
            t_us: frame.t_us,
            bytes: frame.bytes,
        })
        .collect()
}
