//! Quirks applied to a whole recorded exchange: what `tooltap replay --quirk` serves.
//!
//! Input: the quirks, the exchange's engine dialect (a quirk of another dialect is not
//! applicable), the request body, the response head and the recorded frames (exact bytes and
//! `t_us`). Output: [`Applied`]: new frames and which quirks applied. Frame boundaries and
//! timing stay: an event the quirk leaves alone keeps its exact bytes and split; a rewritten
//! event is laid over the frames the original occupied (each frame keeps as many bytes as it
//! had, the last takes the rest); an inserted event is a frame of its own at the time of the
//! frame it follows; a frame left empty (a dropped `[DONE]`) is gone. Quirks apply one after
//! another, each to the previous one's output.

use bytes::Bytes;

use super::buffered;
use super::catalogue::{Dialect, QuirkId, Shape};
use super::request::RequestContext;
use super::sse::{Event, event_ranges};
use super::stream::StreamQuirk;
use crate::engine::ResponseHead;

/// One body frame and when it is due (microseconds from the request head).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedFrame {
    pub t_us: u64,
    pub bytes: Bytes,
}

/// Why a quirk left an exchange untouched (`quirk_not_applicable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotApplicable {
    /// Not a 2xx response.
    Status,
    /// Content-encoded, or neither JSON nor a (server-sent or AWS) event stream.
    Body,
    /// The quirk has no transformation for this shape (e.g. `done-missing` on a buffered body).
    Shape,
    /// Nothing in the exchange for the quirk to change (e.g. a tool-call quirk on prose).
    Nothing,
    /// The quirk rewrites another API dialect than the exchange's (a Chat quirk on
    /// `/v1/messages`).
    Dialect,
    /// The request uses Chat's legacy `functions`, `type: "custom"` tools or `allowed_tools`:
    /// the quirks model `tools` function calls only.
    Surface,
}

impl NotApplicable {
    pub fn as_str(self) -> &'static str {
        match self {
            NotApplicable::Status => "not a 2xx response",
            NotApplicable::Body => {
                "body is content-encoded or neither JSON, SSE nor an AWS event stream"
            }
            NotApplicable::Shape => "no transformation for this body shape",
            NotApplicable::Nothing => "nothing in the exchange for it to change",
            NotApplicable::Dialect => "the quirk rewrites another API dialect",
            NotApplicable::Surface => {
                "the request uses legacy functions, custom tools or allowed_tools, which no quirk models"
            }
        }
    }
}

/// The result of applying quirks to one exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub frames: Vec<TimedFrame>,
    pub applied: Vec<QuirkId>,
    pub not_applicable: Vec<(QuirkId, NotApplicable)>,
}

/// The body shape the head announces, when a quirk can work on it.
pub fn shape_of(head: &ResponseHead) -> Result<Shape, NotApplicable> {
    if !(200..300).contains(&head.status) {
        return Err(NotApplicable::Status);
    }
    if head
        .content_encoding
        .as_deref()
        .is_some_and(|encoding| !encoding.trim().eq_ignore_ascii_case("identity"))
    {
        return Err(NotApplicable::Body);
    }
    let content_type = head
        .content_type
        .as_deref()
        .unwrap_or_default()
        .to_ascii_lowercase();
    if content_type.contains("text/event-stream") || is_event_stream(head) {
        Ok(Shape::Streamed)
    } else if content_type.contains("json") {
        Ok(Shape::Buffered)
    } else {
        Err(NotApplicable::Body)
    }
}

/// Whether the head announces an AWS event stream (Bedrock's ConverseStream): a stream, but one
/// of binary messages the SSE rewriter does not read, so it is rewritten whole, as a buffered
/// body is, by its dialect's rewriter (which decodes and re-encodes its messages).
pub fn is_event_stream(head: &ResponseHead) -> bool {
    head.content_type.as_deref().is_some_and(|content_type| {
        content_type
            .to_ascii_lowercase()
            .contains(crate::engine::framing::EVENT_STREAM_TYPE)
    })
}

/// Apply `quirks` in order to one recorded exchange.
pub fn apply(
    quirks: &[QuirkId],
    dialect: crate::engine::Dialect,
    request: &[u8],
    head: &ResponseHead,
    frames: &[TimedFrame],
) -> Applied {
    let context = RequestContext::parse(request);
    let mut result = Applied {
        frames: frames.to_vec(),
        applied: Vec::new(),
        not_applicable: Vec::new(),
    };
    for &quirk in quirks {
        let outcome = shape_of(head).and_then(|shape| {
            if quirk.dialect() != dialect {
                return Err(NotApplicable::Dialect);
            }
            if context.other_surface && quirk.dialect() == Dialect::Chat {
                return Err(NotApplicable::Surface);
            }
            if !quirk.shapes().contains(&shape) {
                return Err(NotApplicable::Shape);
            }
            let rewritten = match shape {
                Shape::Streamed if is_event_stream(head) => {
                    buffered_pass(quirk, &context, &result.frames)
                }
                Shape::Buffered => buffered_pass(quirk, &context, &result.frames),
                Shape::Streamed => stream_pass(quirk, &context, &result.frames),
            };
            rewritten.ok_or(NotApplicable::Nothing)
        });
        match outcome {
            Ok(frames) => {
                result.frames = frames;
                result.applied.push(quirk);
            }
            Err(reason) => result.not_applicable.push((quirk, reason)),
        }
    }
    result
}

fn concat(frames: &[TimedFrame]) -> Vec<u8> {
    frames
        .iter()
        .flat_map(|frame| frame.bytes.iter().copied())
        .collect()
}

fn buffered_pass(
    quirk: QuirkId,
    context: &RequestContext,
    frames: &[TimedFrame],
) -> Option<Vec<TimedFrame>> {
    let body = buffered::apply(quirk, context, &concat(frames))?;
    let mut out: Vec<Vec<u8>> = vec![Vec::new(); frames.len()];
    let spans: Vec<(usize, usize)> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| (i, f.bytes.len()))
        .collect();
    lay_over(&body, &spans, &mut out);
    Some(collect(frames, out, Vec::new()))
}

/// Writes `bytes` over the `(frame, length)` spans an original occupied: each span keeps its
/// length, the last takes the rest.
fn lay_over(bytes: &[u8], spans: &[(usize, usize)], out: &mut [Vec<u8>]) {
    let mut rest = bytes;
    for (n, &(frame, length)) in spans.iter().enumerate() {
        let take = if n + 1 == spans.len() {
            rest.len()
        } else {
            length.min(rest.len())
        };
        out[frame].extend_from_slice(&rest[..take]);
        rest = &rest[take..];
    }
}

fn collect(
    frames: &[TimedFrame],
    out: Vec<Vec<u8>>,
    mut extra: Vec<Vec<Vec<u8>>>,
) -> Vec<TimedFrame> {
    extra.resize(frames.len(), Vec::new());
    let mut result = Vec::new();
    for ((frame, bytes), inserted) in frames.iter().zip(out).zip(extra) {
        if !bytes.is_empty() {
            result.push(TimedFrame {
                t_us: frame.t_us,
                bytes: Bytes::from(bytes),
            });
        }
        for bytes in inserted {
            result.push(TimedFrame {
                t_us: frame.t_us,
                bytes: Bytes::from(bytes),
            });
        }
    }
    result
}

fn stream_pass(
    quirk: QuirkId,
    context: &RequestContext,
    frames: &[TimedFrame],
) -> Option<Vec<TimedFrame>> {
    if frames.is_empty() {
        return None;
    }
    let buf = concat(frames);
    let mut starts = Vec::with_capacity(frames.len());
    let mut at = 0;
    for frame in frames {
        starts.push(at);
        at += frame.bytes.len();
    }
    // (frame, length) of the part of [start, end) each frame holds.
    let spans_of = |start: usize, end: usize| -> Vec<(usize, usize)> {
        (0..frames.len())
            .filter_map(|i| {
                let (s, e) = (starts[i], starts[i] + frames[i].bytes.len());
                let overlap = e.min(end).saturating_sub(s.max(start));
                (overlap > 0).then_some((i, overlap))
            })
            .collect()
    };
    let mut ranges = event_ranges(&buf, true);
    let complete_end = ranges.last().map_or(0, |&(_, end)| end);
    let mut rewriter = StreamQuirk::new(quirk, context.clone());
    let mut out: Vec<Vec<u8>> = vec![Vec::new(); frames.len()];
    let mut extra: Vec<Vec<Vec<u8>>> = vec![Vec::new(); frames.len()];
    if complete_end < buf.len() {
        ranges.push((complete_end, buf.len()));
    }
    for (start, end) in ranges {
        let raw = &buf[start..end];
        let spans = spans_of(start, end);
        let sent = if end > complete_end && !rewriter.cut() {
            vec![raw.to_vec()] // an unfinished last event passes as it is
        } else {
            rewriter.event(Event::parse(raw.to_vec()))
        };
        let last_frame = spans.last().map_or(frames.len() - 1, |&(frame, _)| frame);
        match sent.split_first() {
            Some((first, _)) if sent.len() == 1 && first == raw => {
                for &(frame, length) in &spans {
                    let offset = start.max(starts[frame]) - start;
                    out[frame].extend_from_slice(&raw[offset..offset + length]);
                }
            }
            Some((first, inserted)) => {
                lay_over(first, &spans, &mut out);
                extra[last_frame].extend(inserted.iter().cloned());
            }
            None => {}
        }
    }
    extra[frames.len() - 1].extend(rewriter.finish());
    rewriter.changed().then(|| collect(frames, out, extra))
}
