//! The drivers the framers' tests share: push chunks until the first error, and the split
//! invariance (a body framed whole, cut at every offset and one byte at a time frames the same).

/// Pushes each chunk in turn through `push`, stopping at the first error, which is returned.
pub fn push_all<E>(
    chunks: &[&[u8]],
    mut push: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), E> {
    chunks.iter().try_for_each(|chunk| push(chunk))
}

/// Frames `bytes` whole with `frame` (given the chunks to push), cut at every offset, and one
/// byte at a time; all must agree. Returns the whole reading.
pub fn frame_every_way<T: PartialEq + std::fmt::Debug>(
    bytes: &[u8],
    frame: impl Fn(&[&[u8]]) -> T,
) -> T {
    let whole = frame(&[bytes]);
    for cut in 0..=bytes.len() {
        assert_eq!(
            frame(&[&bytes[..cut], &bytes[cut..]]),
            whole,
            "cut at {cut}"
        );
    }
    let bytewise: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(frame(&bytewise), whole, "one byte at a time");
    whole
}

/// `body` cut at each of `offsets` (any order; each taken modulo `body.len() + 1`).
pub fn cut_at(body: &[u8], offsets: impl IntoIterator<Item = usize>) -> Vec<&[u8]> {
    let mut offsets: Vec<usize> = offsets
        .into_iter()
        .map(|offset| offset % (body.len() + 1))
        .collect();
    offsets.sort_unstable();
    let mut chunks = Vec::with_capacity(offsets.len() + 1);
    let mut from = 0;
    for offset in offsets {
        chunks.push(&body[from..offset]);
        from = offset;
    }
    chunks.push(&body[from..]);
    chunks
}

/// A JSON object of 300 KiB, several of a line buffer's segments, whose one string holds code
/// points of 2-4 bytes at every offset, so that some straddle a segment's end.
pub fn object_of_many_segments() -> String {
    let text: String = "é€𝄞a".chars().cycle().take(100_000).collect();
    format!("{{\"t\":\"{text}\"}}")
}

/// Frames `body` pushed in pieces of 999 bytes and of a segment's size give or take one; each
/// reading must equal `expected`.
pub fn frame_in_segment_pieces<T: PartialEq + std::fmt::Debug>(
    body: &[u8],
    frame: impl Fn(&[&[u8]]) -> T,
    expected: &T,
) {
    let segment = crate::engine::framing::line_buffer::SEGMENT;
    for piece in [999, segment, segment + 1] {
        let chunks: Vec<&[u8]> = body.chunks(piece).collect();
        assert_eq!(&frame(&chunks), expected, "pieces of {piece}");
    }
}
