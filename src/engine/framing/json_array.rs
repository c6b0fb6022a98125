//! An incremental framer for a streamed top-level JSON array (Gemini's `streamGenerateContent`
//! without `alt=sse`: `[{...}\r\n,\r\n{...}\r\n]`, sent progressively).
//!
//! Input: decoded response body bytes in arbitrary splits (a bracket, a comma, an escape or a
//! UTF-8 code point may straddle two pushes). Output: each complete element's text, in order,
//! from the push that completed it; an object or array element is complete at its closing
//! bracket, a string at its closing quote, another scalar at the comma, `]` or whitespace after
//! it. Whitespace and commas between elements are skipped; inside an element the framer follows
//! strings (with escaped quotes) and bracket depth only, and leaves the element's own syntax to
//! the dialect's JSON parser. How the array ended is [`JsonArrayFramer::end`]: closed, cut short
//! before its `]`, not an array, malformed between elements, or followed by other bytes.
//! The scanner's state lives across pushes, so every byte is looked at once; only the current
//! element is buffered, bounded by `max_element`, in a [`LineBuffer`] (a large element does not
//! move as it grows).

use super::line_buffer::LineBuffer;

/// The element buffer kept between elements: larger ones are given back after their element.
const KEPT_ELEMENT_CAPACITY: usize = 4 * 1024;

/// One element grew past the configured bound: framing stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a JSON array element exceeded {limit} bytes")]
pub struct ElementTooLarge {
    pub limit: usize,
}

/// How the array's bytes ended, as far as the framer saw them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayEnd {
    /// `]` closed the array and only whitespace followed.
    Closed,
    /// The bytes stopped before the closing `]`: `pending_element` when they stopped inside an
    /// element, whose bytes were not handed out.
    Unterminated { pending_element: bool },
    /// Nothing but whitespace arrived.
    Empty,
    /// The first byte that is not whitespace (at body `offset`) is not `[`: nothing was framed.
    NotAnArray { offset: u64 },
    /// A byte between elements (at body `offset`) is neither whitespace, a comma where one
    /// belongs, nor `]`: framing stopped there.
    Malformed { offset: u64 },
    /// Bytes other than whitespace followed the closing `]`, the first at body `offset`.
    TrailingBytes { offset: u64 },
}

/// Where the scanner is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before the opening `[`.
    Start,
    /// After `[`: an element or `]`.
    Open,
    /// After a comma: an element.
    AfterComma,
    /// Inside an element.
    Element,
    /// After an element: a comma or `]`.
    AfterElement,
    /// After `]`: whitespace only.
    Closed,
    /// Framing stopped; [`JsonArrayFramer::end`] says why.
    Stopped(ArrayEnd),
    /// An element grew past the bound.
    TooLarge,
}

/// What kind of element is being scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// An object or array: complete when its depth returns to zero.
    Container,
    /// A string: complete at its closing quote.
    Text,
    /// A number, `true`, `false`, `null` (or garbage): complete at the byte after it.
    Scalar,
}

/// Incremental JSON-array framer state.
#[derive(Debug)]
pub struct JsonArrayFramer {
    max_element: usize,
    phase: Phase,
    shape: Shape,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// Bytes of the current element taken in by earlier pushes.
    element: LineBuffer,
    /// Body bytes taken in before the current push.
    offset: u64,
}

impl JsonArrayFramer {
    pub fn new(max_element: usize) -> JsonArrayFramer {
        JsonArrayFramer {
            max_element,
            phase: Phase::Start,
            shape: Shape::Scalar,
            depth: 0,
            in_string: false,
            escaped: false,
            element: LineBuffer::default(),
            offset: 0,
        }
    }

    /// What it holds between pushes: the element not yet complete (its buffer's capacity).
    pub fn held_bytes(&self) -> usize {
        self.element.capacity()
    }

    /// Consumes `bytes`, appending every element they complete to `elements`. Past an error
    /// (or a stop, see [`JsonArrayFramer::end`]) further bytes are ignored.
    pub fn push(
        &mut self,
        bytes: &[u8],
        elements: &mut Vec<String>,
    ) -> Result<(), ElementTooLarge> {
        if self.phase == Phase::TooLarge {
            return Err(self.too_large());
        }
        let mut at = 0;
        // Where the current element starts in `bytes`, when it started in this push.
        let mut start = if self.phase == Phase::Element {
            Some(0)
        } else {
            None
        };
        while at < bytes.len() {
            match self.phase {
                Phase::Stopped(_) | Phase::TooLarge => break,
                Phase::Element => {
                    let from = start.unwrap_or(0);
                    match self.scan_element(bytes, at) {
                        Scanned::Complete { end, then } => {
                            self.emit(&bytes[from..end], elements)?;
                            start = None;
                            self.phase = then;
                            at = end;
                        }
                        Scanned::Closing { end } => {
                            // A scalar ended by `]`: the element, then the array.
                            self.emit(&bytes[from..end], elements)?;
                            start = None;
                            self.phase = Phase::Closed;
                            at = end + 1;
                        }
                        Scanned::Bad { at: bad } => {
                            self.element.clear(KEPT_ELEMENT_CAPACITY);
                            start = None;
                            self.stop_malformed(bad);
                            at = bad;
                        }
                        Scanned::NeedMore => {
                            at = bytes.len();
                        }
                    }
                }
                phase => {
                    let byte = bytes[at];
                    if matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
                        at += 1;
                        continue;
                    }
                    let offset = self.offset + at as u64;
                    self.phase = match (phase, byte) {
                        (Phase::Start, b'[') => Phase::Open,
                        (Phase::Start, _) => Phase::Stopped(ArrayEnd::NotAnArray { offset }),
                        (Phase::Open, b']') | (Phase::AfterElement, b']') => Phase::Closed,
                        (Phase::AfterElement, b',') => Phase::AfterComma,
                        (Phase::Open | Phase::AfterComma, b',' | b']' | b'}') => {
                            Phase::Stopped(ArrayEnd::Malformed { offset })
                        }
                        (Phase::Open | Phase::AfterComma, _) => {
                            self.begin_element(byte);
                            start = Some(at);
                            Phase::Element
                        }
                        (Phase::AfterElement, _) => Phase::Stopped(ArrayEnd::Malformed { offset }),
                        (Phase::Closed, _) => Phase::Stopped(ArrayEnd::TrailingBytes { offset }),
                        (Phase::Element | Phase::Stopped(_) | Phase::TooLarge, _) => phase,
                    };
                    at += 1;
                }
            }
        }
        if let (Phase::Element, Some(from)) = (self.phase, start) {
            let rest = &bytes[from..];
            if self.element.len() + rest.len() > self.max_element {
                return Err(self.fail_too_large());
            }
            self.element.extend(rest);
        }
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// How the bytes taken in so far end the array (ask once the body ended).
    pub fn end(&self) -> ArrayEnd {
        match self.phase {
            Phase::Start => ArrayEnd::Empty,
            Phase::Open | Phase::AfterComma | Phase::AfterElement => ArrayEnd::Unterminated {
                pending_element: false,
            },
            Phase::Element | Phase::TooLarge => ArrayEnd::Unterminated {
                pending_element: true,
            },
            Phase::Closed => ArrayEnd::Closed,
            Phase::Stopped(end) => end,
        }
    }

    /// Whether the array was closed by its `]` (the stream ended by its own framing).
    pub fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    /// Whether bytes of an unfinished element are pending (the body ended mid-element).
    pub fn has_pending(&self) -> bool {
        matches!(self.phase, Phase::Element | Phase::TooLarge)
    }

    fn begin_element(&mut self, first: u8) {
        self.escaped = false;
        match first {
            b'{' | b'[' => {
                self.shape = Shape::Container;
                self.depth = 1;
                self.in_string = false;
            }
            b'"' => {
                self.shape = Shape::Text;
                self.depth = 0;
                self.in_string = true;
            }
            _ => {
                self.shape = Shape::Scalar;
                self.depth = 0;
                self.in_string = false;
            }
        }
    }

    /// Scans the element on from `bytes[at]` (its first byte was read by
    /// [`JsonArrayFramer::begin_element`]).
    fn scan_element(&mut self, bytes: &[u8], at: usize) -> Scanned {
        let mut i = at;
        while i < bytes.len() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                    i += 1;
                    continue;
                }
                match memchr::memchr2(b'"', b'\\', &bytes[i..]) {
                    None => return Scanned::NeedMore,
                    Some(found) => {
                        i += found;
                        if bytes[i] == b'\\' {
                            self.escaped = true;
                        } else {
                            self.in_string = false;
                            if self.shape == Shape::Text {
                                return Scanned::Complete {
                                    end: i + 1,
                                    then: Phase::AfterElement,
                                };
                            }
                        }
                        i += 1;
                    }
                }
                continue;
            }
            let byte = bytes[i];
            match (self.shape, byte) {
                (Shape::Scalar, b',') => {
                    return Scanned::Complete {
                        end: i,
                        then: Phase::AfterElement,
                    };
                }
                (Shape::Scalar, b' ' | b'\t' | b'\n' | b'\r') => {
                    return Scanned::Complete {
                        end: i,
                        then: Phase::AfterElement,
                    };
                }
                (Shape::Scalar, b']') => return Scanned::Closing { end: i },
                (Shape::Scalar, b'}' | b'{' | b'[' | b'"') => {
                    return Scanned::Bad { at: i };
                }
                (Shape::Container, b'"') => self.in_string = true,
                (Shape::Container, b'{' | b'[') => self.depth += 1,
                (Shape::Container, b'}' | b']') => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        return Scanned::Complete {
                            end: i + 1,
                            then: Phase::AfterElement,
                        };
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Scanned::NeedMore
    }

    /// Hands out the element: the bytes of earlier pushes followed by `tail`.
    fn emit(&mut self, tail: &[u8], elements: &mut Vec<String>) -> Result<(), ElementTooLarge> {
        if self.element.len() + tail.len() > self.max_element {
            return Err(self.fail_too_large());
        }
        let text = self.element.text(tail, false);
        self.element.clear(KEPT_ELEMENT_CAPACITY);
        elements.push(text);
        Ok(())
    }

    fn stop_malformed(&mut self, at: usize) {
        self.phase = Phase::Stopped(ArrayEnd::Malformed {
            offset: self.offset + at as u64,
        });
    }

    fn fail_too_large(&mut self) -> ElementTooLarge {
        self.phase = Phase::TooLarge;
        self.element = LineBuffer::default();
        self.too_large()
    }

    fn too_large(&self) -> ElementTooLarge {
        ElementTooLarge {
            limit: self.max_element,
        }
    }
}

/// What scanning an element on found.
enum Scanned {
    /// The element ends before `end`; the scanner goes on in `then`.
    Complete { end: usize, then: Phase },
    /// A scalar element ends before `end`, where `]` closes the array.
    Closing { end: usize },
    /// A byte no element of this shape may hold.
    Bad { at: usize },
    /// The element goes on in the next push.
    NeedMore,
}

#[cfg(test)]
#[path = "json_array_tests.rs"]
mod tests;
