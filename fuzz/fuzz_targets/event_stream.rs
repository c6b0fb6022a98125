//! The AWS event-stream decoder on arbitrary bytes: never panics, splitting the input at any
//! point (or byte by byte) yields the same messages and ending as feeding it whole, and every
//! message it hands out becomes an event for the dialect without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tooltap::engine::framing::event_stream::{EventStreamDecoder, Message, DecodeEnd};

fn decode(chunks: &[&[u8]]) -> (Vec<Message>, DecodeEnd, bool) {
    let mut decoder = EventStreamDecoder::new(1 << 16);
    let mut messages = Vec::new();
    let mut too_large = false;
    for chunk in chunks {
        too_large |= decoder.push(chunk, &mut messages).is_err();
    }
    (messages, decoder.end(), too_large)
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, body)) = data.split_first() else {
        return;
    };
    let split = usize::from(split) % (body.len() + 1);
    let whole = decode(&[body]);
    let parts = decode(&[&body[..split], &body[split..]]);
    assert_eq!(
        whole, parts,
        "split at {split} changed the messages or ending"
    );
    let bytes: Vec<&[u8]> = body.chunks(1).collect();
    assert_eq!(
        whole,
        decode(&bytes),
        "byte by byte changed the messages or ending"
    );
    for message in whole.0 {
        let _ = tooltap::engine::framing::event_stream::to_event(message);
    }
});
