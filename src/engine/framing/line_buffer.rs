//! The buffer a framer keeps for a line that straddles pushes (an SSE or NDJSON line, a
//! streamed JSON array's element), grown in fixed segments instead of one doubling `Vec`.
//!
//! A doubling `Vec` moves its bytes at every growth: at 4 MiB it asks for 8 MiB, copies and
//! frees the 4 MiB it had. Where glibc serves that from an arena (after a large free has
//! raised its dynamic mmap threshold, which happens once any large buffer came and went), the
//! freed 4, 2 and 1 MiB chunks may sit below the new one and stay resident: the same 8 MiB line
//! then costs 4-7 MiB more than it did in a fresh process. Segments of [`SEGMENT`] bytes never
//! move, so a long line costs its length in segments whatever the allocator's state. The whole
//! line is joined once, into a buffer of its exact size, only when it ends within the framer's
//! bound; a line past the bound is dropped without ever being joined. A line that fits in one
//! segment, nearly every line, is read in place as before.

use std::borrow::Cow;

/// The size of one segment: a line longer than this is held in several.
pub const SEGMENT: usize = 64 * 1024;

/// The bytes of one unfinished line, in segments of [`SEGMENT`] bytes and a last one being
/// filled.
#[derive(Debug, Default)]
pub struct LineBuffer {
    /// Segments already full ([`SEGMENT`] bytes each), in order.
    full: Vec<Vec<u8>>,
    /// The capacity of the segments in `full`.
    full_capacity: usize,
    /// The segment being filled: the whole line while it is shorter than one segment.
    tail: Vec<u8>,
}

impl LineBuffer {
    /// Bytes of the line taken in so far.
    pub fn len(&self) -> usize {
        self.full.len() * SEGMENT + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the buffer holds in memory: its segments' capacities.
    pub fn capacity(&self) -> usize {
        self.full_capacity + self.tail.capacity()
    }

    /// Appends `bytes` to the line. Inlined for the empty case, which a framer meets after
    /// every push that ends on a line's end.
    #[inline]
    pub fn extend(&mut self, bytes: &[u8]) {
        if !bytes.is_empty() {
            self.append(bytes);
        }
    }

    fn append(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.tail.len() == SEGMENT {
                let full = std::mem::replace(&mut self.tail, Vec::with_capacity(SEGMENT));
                self.full_capacity += full.capacity();
                self.full.push(full);
            }
            let take = bytes.len().min(SEGMENT - self.tail.len());
            let (now, later) = bytes.split_at(take);
            let needed = self.tail.len() + take;
            if needed > self.tail.capacity() {
                // Doubling as a `Vec` would, but never past one segment.
                let wanted = needed.next_power_of_two().min(SEGMENT);
                self.tail.reserve_exact(wanted - self.tail.len());
            }
            self.tail.extend_from_slice(now);
            bytes = later;
        }
    }

    /// The line followed by `end`: borrowed when the line and `end` fit in one segment,
    /// otherwise joined into a buffer of their exact length.
    pub fn whole<'a>(&'a mut self, end: &'a [u8]) -> Cow<'a, [u8]> {
        if self.is_empty() {
            return Cow::Borrowed(end);
        }
        if self.full.is_empty() && self.tail.len() + end.len() <= SEGMENT {
            self.tail.extend_from_slice(end);
            return Cow::Borrowed(&self.tail);
        }
        let mut joined = Vec::with_capacity(self.len() + end.len());
        for segment in &self.full {
            joined.extend_from_slice(segment);
        }
        joined.extend_from_slice(&self.tail);
        joined.extend_from_slice(end);
        Cow::Owned(joined)
    }

    /// The line followed by `end` as text, less a final `\r` when `strip_cr`: valid UTF-8 as it
    /// is, invalid bytes as U+FFFD (as the SSE framer decodes them). A line joined from several
    /// segments becomes the text without another copy: framing a long line holds at most
    /// twice its length at once (its segments and the text), as a doubling `Vec` and a copy of
    /// it could hold three times.
    pub fn text(&mut self, end: &[u8], strip_cr: bool) -> String {
        let kept = |bytes: &[u8]| match bytes.strip_suffix(b"\r") {
            Some(stripped) if strip_cr => stripped.len(),
            _ => bytes.len(),
        };
        match self.whole(end) {
            Cow::Borrowed(bytes) => decode(&bytes[..kept(bytes)]),
            Cow::Owned(mut bytes) => {
                bytes.truncate(kept(&bytes));
                String::from_utf8(bytes)
                    .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
            }
        }
    }

    /// Empties the buffer for the next line, keeping one segment of at most `kept` bytes of
    /// capacity.
    pub fn clear(&mut self, kept: usize) {
        self.full = Vec::new();
        self.full_capacity = 0;
        if self.tail.capacity() > kept {
            self.tail = Vec::new();
        } else {
            self.tail.clear();
        }
    }
}

/// Valid UTF-8 (the common case) is copied as is; invalid bytes become U+FFFD.
fn decode(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

#[cfg(test)]
#[path = "line_buffer_tests.rs"]
mod tests;
