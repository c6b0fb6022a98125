//! Whole units only: enforce mode forwards a stream up to the end of the last unit a frame
//! completes (an SSE event, a JSON-array element) and holds the rest of an unfinished one, so
//! that a cut never leaves half a unit on the client's side of the error it appends.
//!
//! Input: the upstream's body frames, in arbitrary splits, and a judge fed each piece that ends
//! a unit (then the frame's rest). Output: per frame, the bytes to forward, or the cut (what of
//! the frame passed before the violating unit), or, when the held unit outgrew its bound, all
//! that is held and the end of enforcement. A unit is held until the frame that ends it: no
//! SSE client dispatches an event, nor a JSON parser an element, before its end anyway.
//!
//! The held unit is bounded by the engine's own bound on one (`inspect.max_sse_line`): past it,
//! what is held is forwarded and the rest of the stream passes unenforced, like a buffered body
//! over its bound.

use bytes::{Bytes, BytesMut};

use super::array::ElementEnds;
use super::events::EventEnds;
use super::messages::MessageEnds;

/// How the ends of units are found.
#[derive(Debug)]
pub(super) enum Ends {
    /// A JSON array's elements.
    Elements(ElementEnds),
    /// An SSE stream's events.
    Events(EventEnds),
    /// An NDJSON stream's lines (Ollama's): each ends just past its `\n`.
    Lines,
    /// An AWS event stream's binary messages.
    Messages(MessageEnds),
}

impl Ends {
    /// Appends to `ends` the offset just past each unit that ends in `bytes`.
    fn scan(&mut self, bytes: &[u8], ends: &mut Vec<usize>) {
        match self {
            Ends::Elements(elements) => elements.scan(bytes, ends),
            Ends::Events(events) => events.scan(bytes, ends),
            Ends::Lines => ends.extend(memchr::memchr_iter(b'\n', bytes).map(|at| at + 1)),
            Ends::Messages(messages) => messages.scan(bytes, ends),
        }
    }
}

/// What one frame gave: bytes to forward now, or the cut.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Forward these bytes (possibly none: the frame only added to the held unit).
    Forward(Bytes),
    /// A violation: forward `before` (whole units that passed), then the error.
    Cut { before: Bytes },
    /// The held unit outgrew its bound: forward these bytes and stop enforcing.
    GiveUp(Bytes),
}

/// The hold of an [`super::EnforceBody`] on a stream it reads unit by unit.
#[derive(Debug)]
pub(super) struct WholeUnits {
    ends: Ends,
    held: BytesMut,
    /// Body bytes forwarded to the client so far (whole units, and what preceded them).
    forwarded: u64,
    limit: usize,
    scratch: Vec<usize>,
}

impl WholeUnits {
    pub(super) fn new(ends: Ends, limit: usize) -> WholeUnits {
        WholeUnits {
            ends,
            held: BytesMut::new(),
            forwarded: 0,
            limit,
            scratch: Vec::new(),
        }
    }

    /// Whether the units are a JSON array's elements.
    pub(super) fn is_array(&self) -> bool {
        matches!(self.ends, Ends::Elements(_))
    }

    /// Body bytes the client got before a cut.
    pub(super) fn forwarded(&self) -> u64 {
        self.forwarded
    }

    /// One upstream frame: `judge` is fed each piece that ends a unit (then the rest) and
    /// answers whether a violation is now known.
    pub(super) fn frame(&mut self, bytes: &Bytes, mut judge: impl FnMut(&[u8]) -> bool) -> Step {
        let mut ends = std::mem::take(&mut self.scratch);
        ends.clear();
        self.ends.scan(bytes, &mut ends);
        let mut out = BytesMut::new();
        let mut from = 0;
        for &end in &ends {
            if judge(&bytes[from..end]) {
                self.scratch = ends;
                return self.cut(out);
            }
            out.extend_from_slice(&self.held.split());
            out.extend_from_slice(&bytes[from..end]);
            from = end;
        }
        self.scratch = ends;
        let rest = &bytes[from..];
        if !rest.is_empty() && judge(rest) {
            return self.cut(out);
        }
        self.held.extend_from_slice(rest);
        if self.held.len() > self.limit {
            out.extend_from_slice(&self.held.split());
            self.forwarded += out.len() as u64;
            return Step::GiveUp(out.freeze());
        }
        self.forwarded += out.len() as u64;
        Step::Forward(out.freeze())
    }

    /// The cut: `before` goes out, the held unit never does.
    fn cut(&mut self, before: BytesMut) -> Step {
        self.forwarded += before.len() as u64;
        self.held.clear();
        Step::Cut {
            before: before.freeze(),
        }
    }

    /// Whether a unit was forwarded (a JSON array is then open and ends in an element).
    pub(super) fn opened(&self) -> bool {
        self.forwarded > 0
    }

    /// What is still held at the end of a clean stream (an array's closing `]`, whitespace; a
    /// stream's unfinished last event), forwarded as it is.
    pub(super) fn rest(&mut self) -> Bytes {
        self.forwarded += self.held.len() as u64;
        self.held.split().freeze()
    }

    /// Drops what is held, at a cut at the end of the body (the client never gets it).
    pub(super) fn drop_held(&mut self) {
        self.held.clear();
    }
}

/// Test support: what a client gets through a [`WholeUnits`] hold.
#[cfg(test)]
pub(super) mod client {
    use bytes::Bytes;

    use super::{Step, WholeUnits};

    /// Feeds `body` cut at `splits` through `hold`; `bad` says, from all that was seen so far,
    /// whether a violation is known; `closing` is what follows a cut. What the client gets: the
    /// units forwarded and the closing after a cut, or all of the body with the held rest.
    pub(in crate::proxy::enforce) fn gets(
        mut hold: WholeUnits,
        body: &str,
        splits: &[usize],
        bad: impl Fn(&str) -> bool,
        closing: impl Fn(&WholeUnits) -> Bytes,
    ) -> String {
        let mut seen = String::new();
        let mut client = Vec::new();
        let mut at = 0;
        let mut cuts = splits.to_vec();
        cuts.push(body.len());
        for end in cuts {
            let frame = Bytes::copy_from_slice(&body.as_bytes()[at..end]);
            at = end;
            let step = hold.frame(&frame, |piece| {
                seen.push_str(std::str::from_utf8(piece).expect("utf-8"));
                bad(&seen)
            });
            match step {
                Step::Forward(bytes) => client.extend_from_slice(&bytes),
                Step::Cut { before } => {
                    client.extend_from_slice(&before);
                    assert_eq!(hold.forwarded() as usize, client.len());
                    client.extend_from_slice(&closing(&hold));
                    return String::from_utf8(client).expect("utf-8");
                }
                Step::GiveUp(_) => panic!("within the bound"),
            }
        }
        client.extend_from_slice(&hold.rest());
        String::from_utf8(client).expect("utf-8")
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::{Ends, WholeUnits, client};

    /// NDJSON lines held whole: cut anywhere, the client gets exactly the lines before the bad
    /// one (never a part of a line), then the closing.
    #[test]
    fn ndjson_lines_go_out_whole_and_a_cut_stops_before_the_bad_line() {
        let body = "{\"a\":1}\n{\"b\":2}\r\n{\"bad\":3}\n{\"c\":4}\n";
        // As the engine judges: a line once it is whole.
        let bad = |seen: &str| seen.ends_with('\n') && seen.contains("\"bad\"");
        for split in 0..=body.len() {
            let hold = WholeUnits::new(Ends::Lines, 1024);
            let got = client::gets(hold, body, &[split], bad, |_| Bytes::from("E\n"));
            assert_eq!(got, "{\"a\":1}\n{\"b\":2}\r\nE\n", "split at {split}");
        }
    }
}
