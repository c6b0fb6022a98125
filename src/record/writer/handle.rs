//! [`RecordingHandle`]'s methods: redact and queue one exchange's parts, in order.
//!
//! Input: the inspector's calls (see the calling order in `writer.rs`). Output: `Open`, `Frame`
//! and `Finish` messages for the writer thread. Byte limits are applied here, before a frame
//! is queued, so a truncated recording costs no queue space.

use std::time::Instant;

use bytes::Bytes;
use http::HeaderMap;

use super::super::disk::Msg;
use super::super::format::{EndLine, Outcome, RecordedBody};
use super::{FAILURE_TARGET, QUEUE_FULL_TARGET, RecordMode, RecordingEnd, RecordingHandle};
use crate::engine::Completeness;

impl RecordingHandle {
    /// The request body as captured; `None` when it was not (too large, cut short). Bodies
    /// that do not fit the per-recording limit, or that do not parse while a secret could hide
    /// in them (`Redactor::drops_unparsed_body`), are recorded as `missing`.
    pub fn request_body(&mut self, body: Option<&[u8]>) {
        let Some(meta) = self.pending.as_mut() else {
            return;
        };
        let Some(body) = body else {
            meta.request.body = RecordedBody::Missing;
            return;
        };
        if body.len() as u64 > self.shared.max_bytes {
            self.frames_lost = true;
            meta.request.body = RecordedBody::Missing;
            return;
        }
        self.used += body.len() as u64;
        // A JSON body with nothing to redact, on one line (JSON strings cannot hold a raw line
        // break, so any is whitespace), is recorded as the client sent it: no tree is built.
        if !self.shared.redactor.may_redact_body(body)
            && memchr::memchr2(b'\n', b'\r', body).is_none()
            && let Ok(raw) = serde_json::from_slice::<&serde_json::value::RawValue>(body)
        {
            meta.request.body = RecordedBody::Json(raw.to_owned());
            return;
        }
        meta.request.body = match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(mut value) => {
                self.shared.redactor.body(&mut value, &mut meta.redacted);
                RecordedBody::json(&value)
            }
            Err(_) if self.shared.redactor.drops_unparsed_body(body) => {
                meta.redacted.push("body".to_string());
                RecordedBody::Missing
            }
            Err(_) => RecordedBody::opaque(body),
        };
    }

    /// The response head: completes the first line and opens the file.
    pub fn response_head(&mut self, status: u16, headers: &HeaderMap) {
        let Some(mut meta) = self.pending.take() else {
            return;
        };
        meta.response.status = status;
        // `proxy --inject` (and `replay --quirk`) name what they applied in this header: the
        // recording carries the mark, so check, replay and the report can say tooltap did it.
        meta.injected = headers
            .get(crate::quirk::QUIRK_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(super::super::format::quirk_ids)
            .unwrap_or_default();
        meta.response.headers =
            self.shared
                .redactor
                .response_headers(headers, &self.secrets, &mut meta.redacted);
        for pair in self.shared.redactor.pseudonyms(headers) {
            if !self.pseudonyms.contains(&pair) {
                self.pseudonyms.push(pair);
            }
        }
        let paths = self.paths.clone();
        self.send(Msg::Open {
            key: self.key,
            paths,
            meta,
        });
    }

    /// Whether [`RecordingHandle::frame`] would still keep a frame: `false` once the recording
    /// was truncated at its byte bound, lost a frame to a full queue, or finished.
    pub fn takes_frames(&self) -> bool {
        !(self.frames_lost || self.lossy || self.finished)
    }

    /// One response body frame exactly as it arrived, at `at`. Never blocks.
    pub fn frame(&mut self, bytes: &Bytes, at: Instant) {
        if self.pending.is_some() {
            // A body without a head should not happen; record it with status 0 rather than lose it.
            self.response_head(0, &HeaderMap::new());
        }
        if self.frames_lost || self.lossy || self.finished {
            return;
        }
        if self.used + bytes.len() as u64 > self.shared.max_bytes {
            self.frames_lost = true;
            return;
        }
        let size = bytes.len() as u64;
        let msg = Msg::Frame {
            key: self.key,
            seq: self.next_seq,
            t_us: micros(self.origin, at),
            bytes: bytes.clone(),
        };
        let cost = msg.cost();
        if !self.thread.fits(cost) {
            // A file with a hole is useless to a replayer: stop taking frames, end it lossy.
            self.lossy = true;
            self.own_dropped += 1;
            self.shared.metrics.recording_failure(QUEUE_FULL_TARGET);
            return;
        }
        self.used += size;
        self.next_seq += 1;
        self.send(msg);
    }

    /// Ends the recording; kept in `all` mode, or in `violations` mode when there are any.
    pub fn finish(mut self, end: RecordingEnd) {
        let keep = match self.shared.mode {
            RecordMode::All => true,
            RecordMode::Violations => !end.violations.is_empty(),
            RecordMode::Off => false,
        };
        self.end(end, keep);
    }

    fn end(&mut self, end: RecordingEnd, keep: bool) {
        if self.finished || self.pending.is_some() {
            // Never opened (no response head): nothing is on disk.
            self.finished = true;
            return;
        }
        self.finished = true;
        let RecordingEnd {
            outcome,
            ended,
            dropped_frames,
            completeness,
            mut violations,
            enforced,
        } = end;
        // A verdict quotes a session id as `{id:?}`: the recording's quotes its pseudonym.
        for (clear, pseudonym) in &self.pseudonyms {
            let (quoted, replacement) = (format!("{clear:?}"), format!("{pseudonym:?}"));
            for violation in &mut violations {
                if violation.detail.contains(&quoted) {
                    violation.detail = violation.detail.replace(&quoted, &replacement);
                }
            }
        }
        // The end line counts against the cap like any frame: list only the violations that fit.
        let room = self
            .shared
            .max_bytes
            .saturating_sub(self.used)
            .saturating_sub(END_LINE_OVERHEAD);
        let mut listed = 0u64;
        let fits = violations
            .iter()
            .take_while(|violation| {
                let size = serde_json::to_vec(violation).map_or(u64::MAX, |v| v.len() as u64 + 1);
                listed = listed.saturating_add(size);
                listed <= room
            })
            .count();
        if fits < violations.len() {
            violations.truncate(fits);
            self.frames_lost = true;
        }
        // The file's own gaps explain it best: a hole first, then a cut.
        let outcome = if self.lossy {
            Outcome::Lossy
        } else if self.frames_lost {
            Outcome::FramesLost
        } else {
            outcome
        };
        let line = EndLine {
            outcome,
            t_us: micros(self.origin, ended),
            dropped_frames: dropped_frames + self.own_dropped,
            frames: 0,
            bytes: 0,
            completeness,
            violations,
            enforced,
        };
        let finish = Msg::Finish {
            key: self.key,
            end: Box::new(line),
            keep,
        };
        match self.held.take() {
            // Held until now: a clean exchange never reaches the writer at all.
            Some(_) if !keep => {}
            Some(held) => {
                for msg in held {
                    self.queue(msg);
                }
                self.queue(finish);
            }
            None => self.queue(finish),
        }
    }

    /// Queues a message (or holds it until the verdict, in `violations` mode); its cost is
    /// released by the writer thread once handled.
    fn send(&mut self, msg: Msg) {
        if let Some(held) = self.held.as_mut() {
            held.push(msg);
            return;
        }
        self.queue(msg);
    }

    fn queue(&self, msg: Msg) {
        let cost = msg.cost();
        if !self.thread.send(msg, cost) {
            self.shared.metrics.recording_failure(FAILURE_TARGET);
        }
    }
}

impl Drop for RecordingHandle {
    /// An inspector that ended without `finish` (a bug, a cancelled task): close the file as
    /// truncated rather than leave it open in the writer thread.
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let end = RecordingEnd {
            outcome: Outcome::FramesLost,
            ended: Instant::now(),
            dropped_frames: 0,
            completeness: Completeness::Partial,
            violations: Vec::new(),
            enforced: None,
        };
        let keep = self.shared.mode == RecordMode::All;
        self.end(end, keep);
    }
}

/// Room kept for the end line's fixed fields (outcome, times, counts, completeness).
const END_LINE_OVERHEAD: u64 = 512;

fn micros(origin: Instant, at: Instant) -> u64 {
    u64::try_from(at.saturating_duration_since(origin).as_micros()).unwrap_or(u64::MAX)
}
