//! The inspector's side of recording: what the service hands over for a recording to start, and
//! how a tapped body's ending becomes a recording's outcome.
//!
//! Input: a [`RecordingSeed`] captured by `watch` at request time (only when a recorder is on,
//! so observe-only traffic pays nothing), the tap's [`TapEnd`]. Output: calls on the
//! [`RecordingHandle`] of [`crate::record`], which never block.

use std::time::SystemTime;

use http::HeaderMap;

use super::ExchangeLabel;
use crate::record::{Outcome, Recorder, RecordingHandle, RecordingStart};
use crate::tee::{Ending, TapEnd};

/// The request facts a recording's first line needs.
#[derive(Debug, Clone)]
pub struct RecordingSeed {
    pub started: SystemTime,
    pub upstream: String,
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
}

pub(super) fn begin(
    recorder: &Recorder,
    label: &ExchangeLabel,
    seed: &RecordingSeed,
) -> Option<RecordingHandle> {
    recorder.begin(RecordingStart {
        id: &label.id,
        started: seed.started,
        origin: label.started,
        route: &label.route,
        upstream: &seed.upstream,
        method: &seed.method,
        path: &seed.path,
        query: seed.query.as_deref(),
        request_headers: &seed.headers,
    })
}

/// How the recorded body ended. A stream enforce mode cut on purpose is `truncated`: frames
/// after the cut were never read.
pub(super) fn outcome(end: Option<&TapEnd>, enforced: bool) -> Outcome {
    match end {
        None => Outcome::Truncated,
        Some(end) if end.lossy => Outcome::Lossy,
        Some(end) => match &end.ending {
            Ending::Complete | Ending::Trailers => Outcome::Complete,
            Ending::Error(_) => Outcome::UpstreamError,
            Ending::Dropped if enforced => Outcome::Truncated,
            Ending::Dropped => Outcome::ClientGone,
        },
    }
}
