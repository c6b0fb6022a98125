//! Quirks applied to a live response as its frames arrive: what `tooltap proxy --inject` does.
//!
//! Input: the chosen quirks, the exchange's engine dialect (quirks of another dialect drop
//! out), the request body, the response head, then body frames one by one and the end.
//! Output: the frames to send to the client instead. A stream is rewritten one complete SSE
//! event at a time: an event cut across frames is held until its end (at most
//! `max_hold` bytes; past that the quirks give up and the rest passes untouched), then sent,
//! rewritten or not, with the frame that completed it. A buffered body, and an AWS event stream
//! (Bedrock's binary messages), is held whole (the same bound) and rewritten at its end. Nothing else is held: no quirk needs look-ahead beyond the
//! event in hand (see [`super::stream`]).

use bytes::Bytes;

use super::buffered;
use super::catalogue::{Dialect, QuirkId, Shape};
use super::recorded::{NotApplicable, is_event_stream, shape_of};
use super::request::RequestContext;
use super::sse::{Event, event_ranges};
use super::stream::StreamQuirk;
use crate::engine::ResponseHead;

/// The incremental rewriter of one live exchange.
#[derive(Debug)]
pub struct LiveQuirks {
    /// Held whole and rewritten at the end (a buffered body, an event stream), or rewritten
    /// one SSE event at a time.
    whole: bool,
    quirks: Vec<QuirkId>,
    context: RequestContext,
    chain: Vec<StreamQuirk>,
    held: Vec<u8>,
    max_hold: usize,
    gave_up: bool,
    cut: bool,
    applied: Vec<QuirkId>,
}

impl LiveQuirks {
    /// The quirks that have a transformation for this response, or why none can apply.
    pub fn new(
        quirks: &[QuirkId],
        dialect: crate::engine::Dialect,
        request: &[u8],
        head: &ResponseHead,
        max_hold: usize,
    ) -> Result<LiveQuirks, NotApplicable> {
        let shape = shape_of(head)?;
        let context = RequestContext::parse(request);
        let quirks: Vec<QuirkId> = quirks
            .iter()
            .copied()
            .filter(|quirk| quirk.dialect() == dialect)
            .collect();
        if quirks.is_empty() {
            return Err(NotApplicable::Dialect);
        }
        if context.other_surface && dialect == Dialect::Chat {
            return Err(NotApplicable::Surface);
        }
        let quirks: Vec<QuirkId> = quirks
            .into_iter()
            .filter(|quirk| quirk.shapes().contains(&shape))
            .collect();
        if quirks.is_empty() {
            return Err(NotApplicable::Shape);
        }
        let chain = quirks
            .iter()
            .map(|&quirk| StreamQuirk::new(quirk, context.clone()).keeping_at_most(max_hold))
            .collect();
        Ok(LiveQuirks {
            whole: shape == Shape::Buffered || is_event_stream(head),
            quirks,
            context,
            chain,
            held: Vec::new(),
            max_hold,
            gave_up: false,
            cut: false,
            applied: Vec::new(),
        })
    }

    /// The quirks that have a transformation for this response's shape.
    pub fn quirks(&self) -> &[QuirkId] {
        &self.quirks
    }

    /// True once a quirk ended the stream: the caller ends the body.
    pub fn cut(&self) -> bool {
        self.cut
    }

    /// True when a frame overran `max_hold` and the rest passed untouched, or a quirk's kept
    /// arguments did (the rest of them passed untouched).
    pub fn gave_up(&self) -> bool {
        self.gave_up || self.chain.iter().any(StreamQuirk::overflowed)
    }

    /// The quirks that changed something (complete after [`LiveQuirks::finish`]).
    pub fn applied(&self) -> &[QuirkId] {
        &self.applied
    }

    /// The quirks asked for that found nothing to change (after [`LiveQuirks::finish`]).
    pub fn not_applicable(&self) -> Vec<QuirkId> {
        let applied = &self.applied;
        self.quirks
            .iter()
            .copied()
            .filter(|q| !applied.contains(q))
            .collect()
    }

    /// The bytes to send now for one upstream frame (possibly none).
    pub fn push(&mut self, frame: &[u8]) -> Option<Bytes> {
        if self.gave_up {
            return Some(Bytes::copy_from_slice(frame));
        }
        if self.cut {
            return None;
        }
        self.held.extend_from_slice(frame);
        if self.whole {
            return self.check_bound();
        }
        let out = self.complete_events(false);
        match self.check_bound() {
            Some(rest) => Some(Bytes::from([out.as_slice(), &rest].concat())),
            None => (!out.is_empty()).then(|| Bytes::from(out)),
        }
    }

    /// The bytes still owed at the end of the upstream body.
    pub fn finish(&mut self) -> Option<Bytes> {
        if self.gave_up || self.cut {
            self.record_applied();
            return None;
        }
        let out = if self.whole {
            self.rewrite_whole()
        } else {
            self.finish_events()
        };
        self.record_applied();
        (!out.is_empty()).then(|| Bytes::from(out))
    }

    /// The held body through each quirk's whole-body rewrite.
    fn rewrite_whole(&mut self) -> Vec<u8> {
        let mut body = std::mem::take(&mut self.held);
        for &quirk in &self.quirks {
            if let Some(rewritten) = buffered::apply(quirk, &self.context, &body) {
                body = rewritten;
                self.applied.push(quirk);
            }
        }
        body
    }

    /// The last held events, then what each quirk still owes at the end.
    fn finish_events(&mut self) -> Vec<u8> {
        let mut out = self.complete_events(true);
        out.append(&mut self.held);
        let mut owed = Vec::new();
        for position in 0..self.chain.len() {
            let produced = self.chain[position].finish();
            for event in produced {
                owed.extend(self.run_from(position + 1, event));
            }
        }
        out.extend(owed);
        out
    }

    fn record_applied(&mut self) {
        for rewriter in &self.chain {
            if rewriter.changed() && !self.applied.contains(&rewriter.quirk()) {
                self.applied.push(rewriter.quirk());
            }
        }
    }

    /// Over the bound: give up and hand back everything held, untouched.
    fn check_bound(&mut self) -> Option<Bytes> {
        if self.held.len() <= self.max_hold {
            return None;
        }
        self.gave_up = true;
        Some(Bytes::from(std::mem::take(&mut self.held)))
    }

    /// Every complete held event, through the chain.
    fn complete_events(&mut self, at_end: bool) -> Vec<u8> {
        let ranges = event_ranges(&self.held, at_end);
        let consumed = ranges.last().map_or(0, |&(_, end)| end);
        let mut out = Vec::new();
        for (start, end) in ranges {
            if self.cut {
                break;
            }
            let raw = self.held[start..end].to_vec();
            out.extend(self.run_from(0, raw));
        }
        self.held.drain(..consumed);
        if self.cut {
            self.held.clear();
        }
        out
    }

    /// One event through the quirks from `position` on.
    fn run_from(&mut self, position: usize, raw: Vec<u8>) -> Vec<u8> {
        let mut events = vec![raw];
        for rewriter in self.chain.iter_mut().skip(position) {
            events = events
                .into_iter()
                .flat_map(|raw| rewriter.event(Event::parse(raw)))
                .collect();
            self.cut |= rewriter.cut();
        }
        events.concat()
    }
}
