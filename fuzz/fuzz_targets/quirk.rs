//! Every quirk rewriter on arbitrary request and response bytes, recorded and live: never
//! panics (a panic under `tooltap proxy --inject` would be on the client's path). Layout of the
//! input: one byte picking the quirk, one byte of content type and cut, one byte of request
//! length, the request, then the response body as two frames cut where the second byte says.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use tooltap::engine::ResponseHead;
use tooltap::quirk::{LiveQuirks, QuirkId, TimedFrame, apply};

fuzz_target!(|data: &[u8]| {
    let [pick, flags, request_len, rest @ ..] = data else {
        return;
    };
    let quirk = QuirkId::ALL[usize::from(*pick) % QuirkId::ALL.len()];
    let request_len = usize::from(*request_len).min(rest.len());
    let (request, body) = rest.split_at(request_len);
    let content_type = match flags & 0b11 {
        0 => "text/event-stream",
        1 => "application/json",
        2 => "application/x-ndjson",
        _ => "application/vnd.amazon.eventstream",
    };
    let head = ResponseHead {
        status: 200,
        content_type: Some(content_type.to_owned()),
        content_encoding: None,
        ..ResponseHead::default()
    };
    let cut = (usize::from(flags >> 2) * body.len() / 63).min(body.len());
    let frames: Vec<TimedFrame> = [&body[..cut], &body[cut..]]
        .into_iter()
        .enumerate()
        .map(|(i, part)| TimedFrame {
            t_us: 1000 * i as u64,
            bytes: Bytes::copy_from_slice(part),
        })
        .collect();
    let _ = apply(&[quirk], quirk.dialect(), request, &head, &frames);
    if let Ok(mut live) = LiveQuirks::new(&[quirk], quirk.dialect(), request, &head, 1 << 16) {
        for frame in &frames {
            let _ = live.push(&frame.bytes);
        }
        let _ = live.finish();
    }
});
