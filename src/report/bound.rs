//! What one recording, and the whole page, may put into the report.
//!
//! Input: texts and bytes on their way into an [`super::model::ExchangeView`], and each view's
//! size on its way into the page. Output: the part that fits, and counts of what did not.
//! Three bounds: [`Shown`] cuts one exchange's decoded text (event data, bodies, piece texts)
//! and, separately, its raw frames to `--max-shown-bytes` each, counting every byte left out so
//! the page can say "cut: N bytes not shown"; [`MAX_LISTED`] caps the fragments and frames one
//! exchange lists; [`MAX_DECODED`] stops decoding a body or an SSE line and
//! [`MAX_DECODED_STREAM`] a stream (a gzip bomb stops there; what was decoded is dropped once
//! the view is built). The page budget
//! (`--max-page-bytes`) is kept by `report::collect` with [`json_size`].

use std::io::{self, Write};

use serde::Serialize;

/// Most fragments, and most raw frames, one exchange lists; the rest are counted.
pub const MAX_LISTED: usize = 5_000;

/// Most bytes decoded from one body (buffered) or held for one SSE line (stream): what the
/// report parses to find pieces. Past it decoding stops and the page says so.
pub const MAX_DECODED: usize = 8 << 20;

/// Most bytes decoded from one stream, event by event (none is held past its event).
pub const MAX_DECODED_STREAM: usize = 64 << 20;

/// Default of `--max-shown-bytes`: decoded text, and raw frame bytes, shown per exchange.
pub const DEFAULT_MAX_SHOWN_BYTES: usize = 256 << 10;

/// Default of `--max-page-bytes`: the data one page holds.
pub const DEFAULT_MAX_PAGE_BYTES: u64 = 64 << 20;

/// What is left of one exchange's allowance for one kind of text, and what was cut from it.
#[derive(Debug, Clone)]
pub struct Shown {
    left: usize,
    /// Bytes left out so far.
    pub cut: u64,
}

impl Shown {
    pub fn new(bytes: usize) -> Shown {
        Shown {
            left: bytes,
            cut: 0,
        }
    }

    /// The first bytes of `bytes` that fit (all of them when they do), and how many did not.
    pub fn take<'a>(&mut self, bytes: &'a [u8]) -> (&'a [u8], u64) {
        let keep = bytes.len().min(self.left);
        self.left -= keep;
        let cut = (bytes.len() - keep) as u64;
        self.cut += cut;
        (&bytes[..keep], cut)
    }

    /// `text` cut to what fits, at a character boundary; returns the bytes left out.
    pub fn text(&mut self, text: &mut String) -> u64 {
        if text.len() <= self.left {
            self.left -= text.len();
            return 0;
        }
        let keep = text.floor_char_boundary(self.left);
        let cut = (text.len() - keep) as u64;
        text.truncate(keep);
        self.left -= keep;
        self.cut += cut;
        cut
    }

    /// Lossy UTF-8 text of what fits of `bytes` (a character split by the cut is dropped whole),
    /// and the bytes left out.
    pub fn lossy(&mut self, bytes: &[u8]) -> (String, u64) {
        let (mut kept, mut cut) = self.take(bytes);
        if kept.len() < bytes.len()
            && let Err(error) = std::str::from_utf8(kept)
            && error.error_len().is_none()
        {
            let whole = error.valid_up_to();
            let split = (kept.len() - whole) as u64;
            self.left += kept.len() - whole;
            self.cut += split;
            cut += split;
            kept = &kept[..whole];
        }
        (String::from_utf8_lossy(kept).into_owned(), cut)
    }
}

/// The marker a cut text carries at its end.
pub fn marker(cut: u64) -> String {
    format!(" … [cut: {cut} bytes not shown]")
}

/// Bytes `value` takes in the page: its JSON with `<`, `>` and `&` written as six-byte escapes
/// and U+2028 and U+2029 (three bytes each) as six-byte escapes too (what `html::render`
/// writes).
pub fn json_size<T: Serialize>(value: &T) -> u64 {
    let mut counter = Counter::default();
    // Serialising a view to a writer that cannot fail cannot fail either.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.bytes
}

#[derive(Default)]
struct Counter {
    bytes: u64,
    /// The last two bytes written, for a separator split between two writes.
    tail: [u8; 2],
}

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut extra = 0;
        for &byte in buf {
            extra += match byte {
                b'<' | b'>' | b'&' => 5,
                0xA8 | 0xA9 if self.tail == [0xE2, 0x80] => 3,
                _ => 0,
            };
            self.tail = [self.tail[1], byte];
        }
        self.bytes += (buf.len() + extra) as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_cut_at_the_allowance_and_every_byte_left_out_is_counted() {
        let mut shown = Shown::new(5);
        let mut text = "abcé".to_string(); // 5 bytes: fits exactly
        assert_eq!(shown.text(&mut text), 0);
        let mut more = "x".to_string();
        assert_eq!((shown.text(&mut more), more.as_str()), (1, ""));
        let mut shown = Shown::new(4);
        let (kept, cut) = shown.lossy("abcé".as_bytes());
        assert_eq!((kept.as_str(), cut), ("abc", 2));
        assert_eq!(shown.take(b"zz"), (&b"z"[..], 1));
        assert_eq!(shown.cut, 3);
    }

    #[test]
    fn the_size_counts_the_escapes_the_page_writes() {
        assert_eq!(json_size(&"<a>"), 5 + 10);
        assert_eq!(json_size(&"a\u{2028}\u{2029}é"), 2 + 1 + 6 + 6 + 2);
        let mut split = Counter::default();
        let _ = split.write_all(&[b'"', 0xE2]);
        let _ = split.write_all(&[0x80]);
        let _ = split.write_all(&[0xA8, b'"']);
        assert_eq!(split.bytes, 8);
    }
}
