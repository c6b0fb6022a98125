//! What the client received of a recorded exchange: the recorded frames, or, where enforce mode
//! cut the response, the frames up to the cut and the error in its place ([`served_frames`]).
//! `replay` serves these, and `export` writes them.

use std::sync::Arc;

use bytes::Bytes;

use super::read::{RecordedFrame, Recording};

/// The frames the client received, which a replay serves and an export writes: the recorded ones, except where enforce mode cut the response
/// (outcome `enforced`): then what the client got — the 502 in place of a refused buffered body
/// (the served status and headers are rewritten to match), or the stream's frames up to the cut
/// followed by its error event.
pub fn served_frames(recording: &mut Recording) -> Arc<[RecordedFrame]> {
    let Some(cut) = recording.end.as_ref().and_then(|end| end.enforced.clone()) else {
        return recording.frames.iter().cloned().collect();
    };
    let replacement = cut.data.to_bytes().unwrap_or_default();
    if let Some(status) = cut.status {
        let response = &mut recording.meta.response;
        response.status = status;
        response.headers = vec![
            ("content-type".into(), "application/json".into()),
            ("x-should-retry".into(), "false".into()),
        ];
        let t_us = recording.frames.last().map_or(0, |frame| frame.t_us);
        return Arc::from(vec![RecordedFrame {
            seq: 0,
            t_us,
            bytes: replacement,
        }]);
    }
    if let Some(kept) = cut.kept_bytes {
        return kept_then(&recording.frames, kept, replacement);
    }
    let mut frames: Vec<RecordedFrame> = recording.frames.clone();
    let last = if cut.replaced_last {
        frames.pop()
    } else {
        frames.last().cloned()
    };
    frames.push(RecordedFrame {
        seq: frames.len() as u64,
        t_us: last.map_or(0, |frame| frame.t_us),
        bytes: replacement,
    });
    frames.into()
}

/// The recorded frames cut to their first `kept` bytes (a JSON-array stream's whole elements),
/// then the replacement, at the time of the frame the cut fell in.
fn kept_then(recorded: &[RecordedFrame], kept: u64, replacement: Bytes) -> Arc<[RecordedFrame]> {
    let mut frames = Vec::new();
    let mut left = kept;
    let mut t_us = 0;
    for frame in recorded {
        t_us = frame.t_us;
        if left == 0 {
            break;
        }
        let take = (frame.bytes.len() as u64).min(left);
        left -= take;
        frames.push(RecordedFrame {
            seq: frames.len() as u64,
            t_us,
            bytes: frame.bytes.slice(..take as usize),
        });
        if take < frame.bytes.len() as u64 {
            break;
        }
    }
    frames.push(RecordedFrame {
        seq: frames.len() as u64,
        t_us,
        bytes: replacement,
    });
    frames.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_array_cut_serves_the_kept_bytes_then_the_closing() {
        let frame = |seq, t_us, text: &'static str| RecordedFrame {
            seq,
            t_us,
            bytes: bytes::Bytes::from_static(text.as_bytes()),
        };
        let recorded = [frame(0, 10, "[{\"a\":1},{\"b"), frame(1, 20, "ad\":1}]")];
        let closing = bytes::Bytes::from_static(b",{\"error\":{}}]");
        let served = kept_then(&recorded, 8, closing.clone());
        let text: Vec<(&[u8], u64)> = served.iter().map(|f| (&f.bytes[..], f.t_us)).collect();
        assert_eq!(text, [(&b"[{\"a\":1}"[..], 10), (&closing[..], 10)]);
        let none = kept_then(&recorded, 0, closing.clone());
        assert_eq!(none.len(), 1);
        // A cut in a later frame than the last kept byte's takes that frame's time.
        let whole = kept_then(&recorded, 12, closing);
        assert_eq!(whole.iter().map(|f| f.t_us).collect::<Vec<_>>(), [10, 20]);
    }
}
