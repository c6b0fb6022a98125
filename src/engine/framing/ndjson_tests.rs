//! The NDJSON framer's cases and its split invariance (property).

use proptest::prelude::*;

use super::*;
use crate::engine::framing::split_driver::{self, push_all};

fn frame_with(
    max: usize,
    chunks: &[&[u8]],
) -> (Vec<String>, Result<(), NdjsonLineTooLong>, NdjsonEnd, u64) {
    let mut framer = NdjsonFramer::new(max);
    let mut lines = Vec::new();
    let result = push_all(chunks, |chunk| framer.push(chunk, &mut lines));
    let end = framer.finish(&mut lines);
    (lines, result, end, framer.blank_lines().0)
}

fn frame(chunks: &[&[u8]]) -> (Vec<String>, NdjsonEnd, u64) {
    let (lines, result, end, blanks) = frame_with(1 << 20, chunks);
    assert_eq!(result, Ok(()));
    (lines, end, blanks)
}

/// Frames `bytes` whole, cut at every offset, and one byte at a time; all must agree.
fn frame_every_way(bytes: &[u8]) -> (Vec<String>, NdjsonEnd, u64) {
    split_driver::frame_every_way(bytes, frame)
}

#[test]
fn lines_end_at_lf_or_crlf_and_blank_lines_are_counted_not_handed_out() {
    let (lines, end, blanks) = frame_every_way(b"{\"a\":1}\n\r\n{\"b\":\"x\\ny\"}\r\n\n{}\n");
    assert_eq!(lines, ["{\"a\":1}", "{\"b\":\"x\\ny\"}", "{}"]);
    assert_eq!(end, NdjsonEnd::Complete);
    assert_eq!(blanks, 2);
    let mut framer = NdjsonFramer::new(64);
    let mut out = Vec::new();
    framer.push(b"{}\n\n", &mut out).expect("within the bound");
    assert_eq!(
        framer.blank_lines(),
        (1, Some(3)),
        "the first blank's offset"
    );
}

#[test]
fn a_last_line_without_its_newline_is_handed_out_at_the_end_and_said() {
    let (lines, end, _) = frame_every_way(b"{\"done\":false}\n{\"done\":true}");
    assert_eq!(lines, ["{\"done\":false}", "{\"done\":true}"]);
    assert_eq!(end, NdjsonEnd::MissingFinalNewline);
    let mut framer = NdjsonFramer::new(64);
    let mut out = Vec::new();
    framer.push(b"{\"a\":", &mut out).expect("within the bound");
    assert!(out.is_empty() && framer.has_pending());
    assert_eq!(framer.end(), NdjsonEnd::MissingFinalNewline);
}

#[test]
fn empty_bodies_and_split_utf8_read_as_they_should() {
    assert_eq!(frame_every_way(b""), (Vec::new(), NdjsonEnd::Empty, 0));
    let (lines, _, _) = frame_every_way("{\"t\":\"é😀\"}\n".as_bytes());
    assert_eq!(lines, ["{\"t\":\"é😀\"}"]);
    let (lines, _, _) = frame_every_way(b"data: {\"sse\":1}\n\xff\n");
    assert_eq!(
        lines,
        ["data: {\"sse\":1}", "\u{fffd}"],
        "non-JSON lines still handed out"
    );
}

#[test]
fn a_line_past_the_bound_stops_framing_whatever_the_split() {
    let body = b"{\"a\":1}\n{\"long\":\"0123456789\"}\n{}\n";
    for cut in 0..=body.len() {
        let (lines, result, end, _) = frame_with(12, &[&body[..cut], &body[cut..]]);
        assert_eq!(lines, ["{\"a\":1}"], "cut at {cut}");
        assert_eq!(result, Err(NdjsonLineTooLong { limit: 12 }));
        assert_eq!(end, NdjsonEnd::TooLong);
    }
    let mut framer = NdjsonFramer::new(4);
    let mut out = Vec::new();
    assert!(framer.push(b"12345", &mut out).is_err());
    assert!(framer.push(b"\n{}\n", &mut out).is_err(), "stays stopped");
    assert!(out.is_empty());
}

#[test]
fn a_line_exactly_at_the_bound_passes() {
    let (lines, result, _, _) = frame_with(4, &[b"1234\n", b"12", b"3\r\n"]);
    assert_eq!(result, Ok(()));
    assert_eq!(lines, ["1234", "123"]);
    let (_, result, _, _) = frame_with(4, &[b"1234\r\n"]);
    assert!(
        result.is_err(),
        "the `\\r` counts: it is part of the line until `\\n` ends it"
    );
}

#[test]
fn a_line_of_many_segments_comes_back_whole_however_it_was_pushed() {
    let line = split_driver::object_of_many_segments();
    let body = format!("{line}\n{{\"n\":1}}\n");
    let expected = (vec![line, "{\"n\":1}".to_owned()], NdjsonEnd::Complete, 0);
    split_driver::frame_in_segment_pieces(body.as_bytes(), frame, &expected);
}

/// A body of lines with their endings, and where to cut it.
fn body_strategy() -> impl Strategy<Value = (Vec<String>, Vec<u8>, bool, Vec<usize>)> {
    (
        prop::collection::vec(("[a-z{}:\" é]{1,12}", any::<bool>(), 0u8..3), 0..8),
        any::<bool>(),
        prop::collection::vec(any::<usize>(), 0..6),
    )
        .prop_map(|(items, final_newline, cuts)| {
            let mut body = String::new();
            let mut lines = Vec::new();
            for (text, crlf, blanks) in items {
                let text = text.trim_matches(' ').to_owned();
                if text.is_empty() {
                    continue;
                }
                body.push_str(&text);
                body.push_str(if crlf { "\r\n" } else { "\n" });
                for _ in 0..blanks {
                    body.push('\n');
                }
                lines.push(text);
            }
            if !final_newline && body.ends_with('\n') && !lines.is_empty() {
                // Drop every ending after the last line.
                while body.ends_with('\n') || body.ends_with('\r') {
                    body.pop();
                }
            }
            (lines, body.into_bytes(), final_newline, cuts)
        })
}

proptest! {
    #[test]
    fn splitting_anywhere_yields_the_same_lines_and_ending(
        (expected, body, _final_newline, raw_cuts) in body_strategy()
    ) {
        let whole = frame(&[&body]);
        prop_assert_eq!(&whole.0, &expected);
        let chunks = split_driver::cut_at(&body, raw_cuts);
        prop_assert_eq!(frame(&chunks), whole.clone());
        let bytewise: Vec<&[u8]> = body.chunks(1).collect();
        prop_assert_eq!(frame(&bytewise), whole);
    }

    /// What the fuzz target checks, over bytes from a small alphabet: a split changes nothing,
    /// and the lines are the body's non-blank lines.
    #[test]
    fn any_bytes_frame_as_the_body_split_on_newlines(
        body in prop::collection::vec(prop::sample::select(b"{}\"a\r\n \xc3\xa9".to_vec()), 0..40),
        cut in any::<usize>(),
    ) {
        let cut = cut % (body.len() + 1);
        let whole = frame(&[&body]);
        prop_assert_eq!(frame(&[&body[..cut], &body[cut..]]), whole.clone());
        let expected: Vec<String> = body
            .split(|b| *b == b'\n')
            .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
            .filter(|line| !line.is_empty())
            .map(|line| String::from_utf8_lossy(line).into_owned())
            .collect();
        prop_assert_eq!(whole.0, expected);
    }
}
