//! An incremental framer for newline-delimited JSON (Ollama's `/api/chat` stream,
//! `application/x-ndjson`: one `json.Marshal` object and `\n` per line, sent progressively).
//!
//! Input: decoded response body bytes in arbitrary splits (a line ending, a `\r\n` pair or a
//! UTF-8 code point may straddle two pushes). Output: each line's text, without its `\n` or
//! `\r\n`, in order, from the push that completed it. A blank line (nothing, or only `\r`,
//! before its `\n`) is not a JSON line and is skipped, but counted, with the body offset of the
//! first, so that the dialect can judge it (the `ollama` Python client raises on one). The
//! framer does not parse: each line's JSON is the dialect's to read. A last line without its
//! final newline is handed out by [`NdjsonFramer::finish`] once the body ended, and said
//! ([`NdjsonEnd::MissingFinalNewline`]). Only the current line is buffered, bounded by
//! `max_line`, in a [`LineBuffer`] (a long line does not move as it grows).

use super::line_buffer::LineBuffer;

/// The line buffer kept between lines: larger ones are given back after their line.
const KEPT_LINE_CAPACITY: usize = 4 * 1024;

/// One line grew past the configured bound: framing stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an NDJSON line exceeded {limit} bytes")]
pub struct NdjsonLineTooLong {
    pub limit: usize,
}

/// How the body's bytes ended, as far as the framer saw them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NdjsonEnd {
    /// Every line ended with its newline.
    Complete,
    /// The last line had no final newline; [`NdjsonFramer::finish`] handed it out.
    MissingFinalNewline,
    /// No bytes arrived.
    Empty,
    /// A line grew past the bound; framing stopped there.
    TooLong,
}

/// Incremental NDJSON framer state.
#[derive(Debug)]
pub struct NdjsonFramer {
    max_line: usize,
    /// Bytes of the current line taken in by earlier pushes.
    line: LineBuffer,
    /// Body bytes taken in so far.
    offset: u64,
    blank_lines: u64,
    first_blank: Option<u64>,
    missing_newline: bool,
    too_long: bool,
}

impl NdjsonFramer {
    pub fn new(max_line: usize) -> NdjsonFramer {
        NdjsonFramer {
            max_line,
            line: LineBuffer::default(),
            offset: 0,
            blank_lines: 0,
            first_blank: None,
            missing_newline: false,
            too_long: false,
        }
    }

    /// What it holds between pushes: the line not yet complete (its buffer's capacity).
    pub fn held_bytes(&self) -> usize {
        self.line.capacity()
    }

    /// Consumes `bytes`, appending every line they complete to `lines`. Past an error further
    /// bytes are ignored.
    pub fn push(&mut self, bytes: &[u8], lines: &mut Vec<String>) -> Result<(), NdjsonLineTooLong> {
        if self.too_long {
            return Err(self.error());
        }
        let mut start = 0;
        for newline in memchr::memchr_iter(b'\n', bytes) {
            let piece = &bytes[start..newline];
            if self.line.len() + piece.len() > self.max_line {
                return Err(self.fail());
            }
            let line_start = self.offset + start as u64 - self.line.len() as u64;
            self.emit(piece, line_start, lines);
            start = newline + 1;
        }
        let rest = &bytes[start..];
        if self.line.len() + rest.len() > self.max_line {
            return Err(self.fail());
        }
        self.line.extend(rest);
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Ends the body (call once, when it ended whole): a last line without its newline is
    /// handed out to `lines`.
    pub fn finish(&mut self, lines: &mut Vec<String>) -> NdjsonEnd {
        if !self.too_long && !self.line.is_empty() {
            let line_start = self.offset - self.line.len() as u64;
            self.emit(&[], line_start, lines);
            self.missing_newline = true;
        }
        self.end()
    }

    /// How the bytes taken in so far end the body.
    pub fn end(&self) -> NdjsonEnd {
        if self.too_long {
            NdjsonEnd::TooLong
        } else if self.offset == 0 {
            NdjsonEnd::Empty
        } else if self.missing_newline || !self.line.is_empty() {
            NdjsonEnd::MissingFinalNewline
        } else {
            NdjsonEnd::Complete
        }
    }

    /// Whether bytes of an unfinished line are pending (the body stopped mid-line).
    pub fn has_pending(&self) -> bool {
        !self.line.is_empty() || self.too_long
    }

    /// Blank lines skipped so far, and the body offset of the first.
    pub fn blank_lines(&self) -> (u64, Option<u64>) {
        (self.blank_lines, self.first_blank)
    }

    /// Hands out the line: the bytes of earlier pushes followed by `tail`, less a final `\r`.
    fn emit(&mut self, tail: &[u8], line_start: u64, lines: &mut Vec<String>) {
        let text = self.line.text(tail, true);
        if text.is_empty() {
            self.blank_lines += 1;
            self.first_blank.get_or_insert(line_start);
        } else {
            lines.push(text);
        }
        self.line.clear(KEPT_LINE_CAPACITY);
    }

    fn fail(&mut self) -> NdjsonLineTooLong {
        self.too_long = true;
        self.line = LineBuffer::default();
        self.error()
    }

    fn error(&self) -> NdjsonLineTooLong {
        NdjsonLineTooLong {
            limit: self.max_line,
        }
    }
}

#[cfg(test)]
#[path = "ndjson_tests.rs"]
mod tests;
