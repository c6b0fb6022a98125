//! Where an SSE stream's events end, for enforce mode's whole-unit hold
//! ([`super::whole::WholeUnits`]): an event ends at a blank line, whatever the line ends
//! (`\r\n`, `\n` or `\r`, mixed). Only line ends are followed; the event's fields are the
//! engine's to read. A blank line with nothing before it (a keep-alive) ends a unit too: it
//! dispatches nothing, so forwarding it alone changes nothing for the client.

/// The scan's state across frames.
#[derive(Debug)]
pub(super) struct EventEnds {
    /// No byte but line ends since the last line end (the stream's start counts as one).
    line_start: bool,
    /// The last byte was a `\r` that ended a content line: a `\n` now belongs to it.
    after_cr: bool,
    /// The last byte was a `\r` that made a blank line: its event ends after the `\n` that may
    /// follow (in this frame or the next), else just past the `\r`. Deciding when the next
    /// byte is seen means a cut never leaves a lone `\r` that a `\r\n`-only reader would
    /// join to the error event's first line.
    blank_cr: bool,
}

impl Default for EventEnds {
    fn default() -> EventEnds {
        EventEnds {
            line_start: true,
            after_cr: false,
            blank_cr: false,
        }
    }
}

impl EventEnds {
    /// Appends to `ends` the offset just past each event that ends in `bytes` (0 when the
    /// event ended with the frame before and only this frame's first byte tells so).
    pub(super) fn scan(&mut self, bytes: &[u8], ends: &mut Vec<usize>) {
        for (at, &byte) in bytes.iter().enumerate() {
            if std::mem::take(&mut self.blank_cr) {
                if byte == b'\n' {
                    ends.push(at + 1);
                    continue;
                }
                ends.push(at);
            } else if std::mem::take(&mut self.after_cr) && byte == b'\n' {
                continue;
            }
            match byte {
                b'\r' if self.line_start => self.blank_cr = true,
                b'\r' => {
                    self.line_start = true;
                    self.after_cr = true;
                }
                b'\n' => {
                    if self.line_start {
                        ends.push(at + 1);
                    }
                    self.line_start = true;
                }
                _ => self.line_start = false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::proxy::enforce::whole::client::gets;
    use crate::proxy::enforce::whole::{Ends, Step, WholeUnits};

    const ERROR: &str = "data: {\"error\":{}}\n\n";

    /// Feeds `body` cut at `splits`, judging an event bad once one holding `bad` is whole;
    /// what the client gets (an error event after a cut, the held rest at the end).
    fn run(body: &str, splits: &[usize]) -> String {
        // The engine judges an event at its blank line's first byte (a `\r` ends a line at
        // once; the `\n` that may follow is skipped).
        let bad = |seen: &str| {
            ["bad\r\n\r", "bad\n\n", "bad\r\r"]
                .iter()
                .any(|end| seen.contains(end))
        };
        let hold = WholeUnits::new(Ends::Events(EventEnds::default()), 1024);
        gets(hold, body, splits, bad, |_| {
            Bytes::from_static(ERROR.as_bytes())
        })
    }

    #[test]
    fn a_cut_comes_after_whole_events_only_at_every_split_and_line_end() {
        for end in ["\r\n", "\n", "\r"] {
            let first = format!("data: {{\"a\":1}}{end}{end}");
            let body = format!("{first}: ping{end}{end}data: bad{end}{end}data: later{end}{end}");
            let keep_alive = format!(": ping{end}{end}");
            let want = format!("{first}{keep_alive}{ERROR}");
            for split in 0..=body.len() {
                assert_eq!(run(&body, &[split]), want, "{end:?}, split at {split}");
            }
            let every: Vec<usize> = (1..body.len()).collect();
            assert_eq!(run(&body, &every), want, "{end:?}, byte by byte");
        }
    }

    #[test]
    fn a_clean_stream_reaches_the_client_whole_even_when_it_ends_mid_event() {
        for body in [
            "data: 1\r\n\r\ndata: 2\r\n\r\n",
            "data: 1\n\ndata: 2\n\ndata: unfinished",
            "\n\ndata: 1\r\rdata: 2\n",
        ] {
            for split in 0..=body.len() {
                assert_eq!(run(body, &[split]), body, "split at {split}");
            }
        }
    }

    #[test]
    fn a_crlf_blank_line_ends_the_event_after_its_lf() {
        let mut ends = Vec::new();
        EventEnds::default().scan(b"data: 1\r\n\r\ndata: 2\n\n", &mut ends);
        assert_eq!(ends, vec![11, 20]);
        // The blank line's \r and \n in two frames: the event ends after the \n.
        let mut scan = EventEnds::default();
        let mut ends = Vec::new();
        scan.scan(b"data: 1\r\n\r", &mut ends);
        assert!(ends.is_empty(), "{ends:?}");
        scan.scan(b"\ndata: 2\r\n\r\n", &mut ends);
        assert_eq!(ends, vec![1, 12]);
        // A blank \r alone: the event ends just past it, told by the next byte.
        let mut scan = EventEnds::default();
        let mut ends = Vec::new();
        scan.scan(b"data: 1\r\r", &mut ends);
        assert!(ends.is_empty(), "{ends:?}");
        scan.scan(b"data: 2\r\r", &mut ends);
        assert_eq!(ends, vec![0]);
    }

    #[test]
    fn an_event_past_the_bound_is_forwarded_and_enforcement_stops() {
        let mut hold = WholeUnits::new(Ends::Events(EventEnds::default()), 8);
        let step = hold.frame(&Bytes::from_static(b"data: a long line"), |_| false);
        assert_eq!(step, Step::GiveUp(Bytes::from_static(b"data: a long line")));
    }
}
