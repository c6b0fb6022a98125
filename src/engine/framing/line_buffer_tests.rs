//! Tests for the segmented line buffer: the bytes come back whole and in order however they
//! were pushed, a long line never holds more than its segments, and clearing gives back all
//! but a small buffer.

use super::*;

fn pushed(line: &[u8], piece: usize) -> LineBuffer {
    let mut buffer = LineBuffer::default();
    for part in line.chunks(piece) {
        buffer.extend(part);
    }
    buffer
}

fn line(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

#[test]
fn the_line_comes_back_whole_and_in_order_however_it_was_pushed() {
    for len in [
        0,
        1,
        100,
        SEGMENT - 1,
        SEGMENT,
        SEGMENT + 1,
        3 * SEGMENT + 17,
    ] {
        let bytes = line(len);
        for piece in [1, 7, 4096, SEGMENT, SEGMENT + 5] {
            if len > 20_000 && piece < 4096 {
                continue;
            }
            let mut buffer = pushed(&bytes, piece);
            assert_eq!(buffer.len(), len, "len {len}, pieces of {piece}");
            let mut expected = bytes.clone();
            expected.extend_from_slice(b"end");
            assert_eq!(
                &*buffer.whole(b"end"),
                &expected[..],
                "len {len}, pieces of {piece}"
            );
        }
    }
}

#[test]
fn a_short_line_is_read_in_place_and_a_long_one_is_joined() {
    let mut short = pushed(&line(100), 10);
    assert!(matches!(short.whole(b"x"), Cow::Borrowed(_)));
    let mut long = pushed(&line(SEGMENT + 1), 1000);
    assert!(matches!(long.whole(b""), Cow::Owned(_)));
    let mut empty = LineBuffer::default();
    assert!(matches!(empty.whole(b"tail"), Cow::Borrowed(b"tail")));
}

#[test]
fn a_long_line_holds_its_length_in_whole_segments_and_never_more() {
    // Pieces of 1000 bytes do not divide a segment: the tail never grows past one.
    let len = 8 << 20;
    let buffer = pushed(&line(len), 1000);
    assert_eq!(buffer.len(), len);
    assert_eq!(buffer.capacity(), len, "8 MiB is 128 whole segments");
    let odd = pushed(&line(5 * SEGMENT + 3), 999);
    assert!(odd.capacity() <= 6 * SEGMENT, "{}", odd.capacity());
}

#[test]
fn clearing_keeps_a_small_buffer_and_gives_back_a_large_one() {
    let mut small = pushed(&line(1000), 100);
    small.clear(4096);
    assert!(small.is_empty());
    assert!(small.capacity() > 0 && small.capacity() <= 4096);
    let mut large = pushed(&line(3 * SEGMENT), 4096);
    large.clear(4096);
    assert!(large.is_empty());
    assert_eq!(large.capacity(), 0);
}

#[test]
fn text_strips_a_final_cr_when_asked_and_decodes_short_and_joined_lines_alike() {
    for len in [10, 3 * SEGMENT] {
        let mut line = vec![b'a'; len];
        line.extend_from_slice(b"\xFF\r");
        let mut expected = "a".repeat(len);
        expected.push('\u{FFFD}');
        let mut buffer = pushed(&line, 4096);
        assert_eq!(buffer.text(b"", true), expected, "len {len}");
        let mut buffer = pushed(&line, 4096);
        expected.push('\r');
        assert_eq!(buffer.text(b"", false), expected, "len {len}");
        let mut buffer = pushed(&line[..len], 4096);
        assert_eq!(buffer.text(b"\r", true), "a".repeat(len), "len {len}");
    }
}
