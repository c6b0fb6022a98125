//! The SSE framer on arbitrary bytes: never panics, and splitting the input at any point yields
//! the same events as feeding it whole (the framer's core invariant).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tooltap::engine::SseFramer;

fuzz_target!(|data: &[u8]| {
    let Some((&split, body)) = data.split_first() else {
        return;
    };
    let split = usize::from(split) % (body.len() + 1);
    let mut whole = SseFramer::new(1 << 16);
    let mut expected = Vec::new();
    let whole_ok = whole.push(body, &mut expected).is_ok();
    let mut parts = SseFramer::new(1 << 16);
    let mut got = Vec::new();
    let parts_ok = parts
        .push(&body[..split], &mut got)
        .and_then(|()| parts.push(&body[split..], &mut got))
        .is_ok();
    if whole_ok && parts_ok {
        assert_eq!(expected, got, "split at {split} changed the events");
        assert_eq!(whole.has_pending(), parts.has_pending());
    }
});
