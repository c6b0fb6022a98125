//! Where an AWS event stream's messages end (Bedrock's ConverseStream), for enforce mode's
//! whole-unit hold ([`super::whole::WholeUnits`]): each message's prelude opens with its total
//! length, big-endian. Only those four bytes are read; CRCs and headers are the engine's. A
//! length under 16 cannot be (the engine reports `bedrock.frame.length_invalid`): no end is
//! found after it, and what is held goes out at the bound or at the stream's end.

/// The prelude's length field, and a message's length.
const LENGTH: usize = 4;
/// The smallest message: prelude and message CRC.
const SMALLEST: usize = 16;

/// The scan's state across frames.
#[derive(Debug, Default)]
pub(super) struct MessageEnds {
    /// Bytes of the current message still to come, once its length is read.
    remaining: Option<usize>,
    /// The length field read so far.
    length: [u8; LENGTH],
    have: usize,
    /// A length under [`SMALLEST`] was read: no end is found any more.
    broken: bool,
}

impl MessageEnds {
    /// Appends to `ends` the offset just past each message that ends in `bytes`.
    pub(super) fn scan(&mut self, bytes: &[u8], ends: &mut Vec<usize>) {
        let mut at = 0;
        while at < bytes.len() && !self.broken {
            match self.remaining {
                Some(remaining) => {
                    let take = remaining.min(bytes.len() - at);
                    at += take;
                    if take == remaining {
                        ends.push(at);
                        self.remaining = None;
                    } else {
                        self.remaining = Some(remaining - take);
                    }
                }
                None => {
                    self.length[self.have] = bytes[at];
                    self.have += 1;
                    at += 1;
                    if self.have == LENGTH {
                        self.have = 0;
                        let total = u32::from_be_bytes(self.length) as usize;
                        if total < SMALLEST {
                            self.broken = true;
                        } else {
                            self.remaining = Some(total - LENGTH);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::engine::framing::event_stream::encode;
    use crate::proxy::enforce::whole::{Ends, Step, WholeUnits};

    fn message(text: &str) -> Vec<u8> {
        encode(&[(":event-type", "contentBlockDelta")], text.as_bytes())
    }

    /// What the client gets before the cut when the message holding `bad` completes a
    /// violation, the body split at `splits`.
    fn before_cut(body: &[u8], splits: &[usize], bad_ends_at: usize) -> Vec<u8> {
        let mut hold = WholeUnits::new(Ends::Messages(MessageEnds::default()), 1 << 16);
        let mut seen = 0;
        let mut client = Vec::new();
        let mut at = 0;
        let mut cuts = splits.to_vec();
        cuts.push(body.len());
        for end in cuts {
            let frame = Bytes::copy_from_slice(&body[at..end]);
            at = end;
            let step = hold.frame(&frame, |piece| {
                seen += piece.len();
                seen >= bad_ends_at
            });
            match step {
                Step::Forward(bytes) => client.extend_from_slice(&bytes),
                Step::Cut { before } => {
                    client.extend_from_slice(&before);
                    return client;
                }
                Step::GiveUp(_) => panic!("within the bound"),
            }
        }
        panic!("no cut");
    }

    #[test]
    fn a_cut_comes_after_whole_messages_only_at_every_split() {
        let (first, bad, later) = (message("{}"), message("bad"), message("later"));
        let body = [first.clone(), bad.clone(), later].concat();
        let bad_ends_at = first.len() + bad.len();
        for split in 0..=body.len() {
            assert_eq!(
                before_cut(&body, &[split], bad_ends_at),
                first,
                "split at {split}"
            );
        }
        let every: Vec<usize> = (1..body.len()).collect();
        assert_eq!(
            before_cut(&body, &every, bad_ends_at),
            first,
            "byte by byte"
        );
    }

    #[test]
    fn a_length_that_cannot_be_finds_no_more_ends() {
        let mut ends = Vec::new();
        let mut scan = MessageEnds::default();
        let good = message("{}");
        scan.scan(&[good.as_slice(), &[0, 0, 0, 8], &good].concat(), &mut ends);
        assert_eq!(ends, [good.len()]);
    }
}
