//! Framing invariance: for every fixture, the body split at every offset, and fed one byte at a
//! time, gives the same reassembly, usage, completeness and violations (all but `seq`, which
//! numbers frames and so legitimately moves with the split) as the body fed in one piece.

use crate::engine_support;

use engine_support::{Fixture, comparable, load_all, run_frames};
use tooltap::engine::{Report, SchemaCache};

fn assert_same(fixture: &Fixture, how: &str, reference: &Report, other: &Report) {
    assert_eq!(
        reference.choices, other.choices,
        "{} ({how}): reassembly differs",
        fixture.name
    );
    assert_eq!(
        reference.usage, other.usage,
        "{} ({how}): usage differs",
        fixture.name
    );
    assert_eq!(
        reference.completeness, other.completeness,
        "{} ({how})",
        fixture.name
    );
    assert_eq!(
        comparable(reference, false),
        comparable(other, false),
        "{} ({how}): violations differ",
        fixture.name
    );
}

#[test]
fn every_split_offset_gives_the_same_report() {
    let cache = SchemaCache::default();
    let mut checked = 0;
    for fixture in load_all() {
        let body = fixture.body.as_slice();
        let reference = run_frames(&fixture, &cache, &[body]);
        for cut in 0..=body.len() {
            let split = run_frames(&fixture, &cache, &[&body[..cut], &body[cut..]]);
            assert_same(&fixture, &format!("split at {cut}"), &reference, &split);
        }
        checked += 1;
    }
    assert!(checked >= 60, "only {checked} fixtures");
}

#[test]
fn one_byte_at_a_time_gives_the_same_report() {
    let cache = SchemaCache::default();
    // Streams (SSE, Gemini's JSON arrays, Ollama's NDJSON, Bedrock's event streams) and encoded
    // bodies.
    for fixture in load_all().into_iter().filter(|f| {
        f.is_sse
            || f.is_ndjson()
            || f.event_stream
            || f.head.content_encoding.is_some()
            || f.path().contains(":streamGenerateContent")
    }) {
        let body = fixture.body.as_slice();
        let reference = run_frames(&fixture, &cache, &[body]);
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        let trickled = run_frames(&fixture, &cache, &bytes);
        assert_same(&fixture, "one byte at a time", &reference, &trickled);
        assert_seq_is_the_completing_byte(&fixture, &cache, &trickled);
    }
}

/// With one frame per byte, a violation's `seq` is the offset of the byte that completed its
/// event: cut the body just before that byte and the violation moves to the second frame, just
/// after it and it stays in the first.
fn assert_seq_is_the_completing_byte(fixture: &Fixture, cache: &SchemaCache, trickled: &Report) {
    let body = fixture.body.as_slice();
    for (i, violation) in trickled.violations.iter().enumerate() {
        let Some(seq) = violation.seq else { continue };
        let name = &fixture.name;
        let at = usize::try_from(seq).expect("a byte offset");
        assert!(
            at < body.len(),
            "{name}: violation {i}: seq {seq} past the last byte"
        );
        for (cut, frame) in [(at, 1), (at + 1, 0)] {
            let split = run_frames(fixture, cache, &[&body[..cut], &body[cut..]]);
            assert_eq!(
                split.violations.get(i).and_then(|v| v.seq),
                Some(frame),
                "{name}: violation {i} ({:?}), cut at {cut}: byte {at} completes its event",
                violation.rule
            );
        }
    }
}

#[test]
fn split_offsets_also_hold_for_three_way_splits_of_crlf_streams() {
    let cache = SchemaCache::default();
    let fixture = load_all()
        .into_iter()
        .find(|f| f.name == "pair_keepalive_crlf_sse")
        .expect("crlf fixture");
    let body = fixture.body.as_slice();
    let reference = run_frames(&fixture, &cache, &[body]);
    for first in (0..body.len()).step_by(7) {
        for second in (first..=body.len()).step_by(5) {
            let parts = [&body[..first], &body[first..second], &body[second..]];
            assert_same(
                &fixture,
                &format!("cuts {first},{second}"),
                &reference,
                &run_frames(&fixture, &cache, &parts),
            );
        }
    }
}
