//! The NDJSON framer on arbitrary bytes: never panics, splitting the input at any point yields
//! the same lines, blank-line count and ending as feeding it whole, and the lines are exactly
//! the body's non-blank lines (a final `\r` dropped).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tooltap::engine::framing::{NdjsonEnd, NdjsonFramer};

fn frame(chunks: &[&[u8]]) -> Option<(Vec<String>, NdjsonEnd, u64)> {
    let mut framer = NdjsonFramer::new(1 << 16);
    let mut lines = Vec::new();
    for chunk in chunks {
        framer.push(chunk, &mut lines).ok()?;
    }
    let end = framer.finish(&mut lines);
    Some((lines, end, framer.blank_lines().0))
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, body)) = data.split_first() else {
        return;
    };
    let split = usize::from(split) % (body.len() + 1);
    let whole = frame(&[body]);
    let parts = frame(&[&body[..split], &body[split..]]);
    assert_eq!(whole, parts, "split at {split} changed the lines or ending");
    if let Some((lines, _, _)) = whole {
        let expected: Vec<String> = body
            .split(|b| *b == b'\n')
            .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
            .filter(|line| !line.is_empty())
            .map(|line| String::from_utf8_lossy(line).into_owned())
            .collect();
        assert_eq!(lines, expected, "the body's non-blank lines");
    }
});
