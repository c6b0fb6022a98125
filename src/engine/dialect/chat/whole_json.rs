//! Whether streamed text is one whole JSON value, answered in time proportional to the text's
//! new bytes, however often it is asked.
//!
//! A legacy `function_call` asks on every `name` fragment whether its arguments are already
//! whole (a name after whole arguments opens a second call). Parsing the whole text each time
//! made a stream that names the function on every fragment quadratic. [`WholeJson`] follows
//! the text's structure as it grows (nesting depth, strings and their escapes) and parses only
//! when the structure says the top-level value just closed, once: appending whitespace cannot
//! change the answer, and appending anything else after a closed value makes it never whole.
//! A top-level bare number or literal (which no function takes as arguments) is parsed while it
//! is at most [`SCALAR_PARSED`] bytes long, and past that is never whole.

use serde_json::Value;

/// The longest bare top-level scalar that is parsed to decide.
pub const SCALAR_PARSED: usize = 1024;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Top {
    /// Only whitespace so far.
    #[default]
    Nothing,
    /// Inside an object or array, or a top-level string.
    Open,
    /// A bare number or literal, this many bytes long so far.
    Scalar(usize),
    /// The top-level value closed; `Some(whole)` once it was parsed.
    Closed(Option<bool>),
    /// Text that can never become one JSON value.
    Never,
}

/// The structure of text seen so far.
#[derive(Debug, Default, Clone)]
pub struct WholeJson {
    top: Top,
    depth: u32,
    in_string: bool,
    escaped: bool,
}

impl WholeJson {
    /// Follows `piece`, the bytes appended to the text.
    pub fn push(&mut self, piece: &str) {
        for &byte in piece.as_bytes() {
            if self.top == Top::Never {
                return;
            }
            self.step(byte);
        }
    }

    fn step(&mut self, byte: u8) {
        let space = matches!(byte, b' ' | b'\t' | b'\n' | b'\r');
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
                if self.depth == 0 {
                    self.top = Top::Closed(None);
                }
            }
            return;
        }
        self.top = match self.top {
            Top::Never => Top::Never,
            Top::Closed(known) if space => Top::Closed(known),
            Top::Closed(_) => Top::Never,
            Top::Scalar(len) if space => {
                if len > SCALAR_PARSED {
                    Top::Never
                } else {
                    Top::Closed(None)
                }
            }
            Top::Scalar(_) if matches!(byte, b'{' | b'[' | b'"' | b'}' | b']' | b',' | b':') => {
                Top::Never
            }
            Top::Scalar(len) => Top::Scalar(len + 1),
            Top::Nothing if space => Top::Nothing,
            Top::Nothing | Top::Open => match byte {
                b'"' => {
                    self.in_string = true;
                    Top::Open
                }
                b'{' | b'[' => {
                    self.depth += 1;
                    Top::Open
                }
                b'}' | b']' if self.depth == 0 => Top::Never,
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        Top::Closed(None)
                    } else {
                        Top::Open
                    }
                }
                _ if self.top == Top::Nothing => Top::Scalar(1),
                _ => Top::Open,
            },
        };
    }

    /// Whether the top-level value closed (and nothing but whitespace followed): the text is
    /// whole when it is also JSON, which a caller that no longer holds it knows otherwise.
    pub fn is_closed(&self) -> bool {
        matches!(self.top, Top::Closed(_))
    }

    /// Whether `text` (everything pushed so far) is one whole JSON value.
    pub fn is_whole(&mut self, text: &str) -> bool {
        match self.top {
            Top::Nothing | Top::Open | Top::Never => false,
            Top::Scalar(len) if len > SCALAR_PARSED => false,
            // A growing scalar may change its answer with each byte: parsed each time asked,
            // at most `SCALAR_PARSED` bytes.
            Top::Scalar(_) => serde_json::from_str::<Value>(text).is_ok(),
            Top::Closed(Some(whole)) => whole,
            Top::Closed(None) => {
                let whole = serde_json::from_str::<Value>(text).is_ok();
                self.top = if whole {
                    Top::Closed(Some(true))
                } else {
                    Top::Never
                };
                whole
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `pieces` and compares every answer with a full parse of the text so far.
    fn agrees_with_a_parse(pieces: &[&str]) {
        let mut shape = WholeJson::default();
        let mut text = String::new();
        for piece in pieces {
            text.push_str(piece);
            shape.push(piece);
            let parsed = serde_json::from_str::<Value>(&text).is_ok();
            assert_eq!(shape.is_whole(&text), parsed, "{text:?}");
        }
    }

    #[test]
    fn answers_as_a_full_parse_does_at_every_step() {
        agrees_with_a_parse(&["{\"a\":", " 1", "}", " ", "\n"]);
        agrees_with_a_parse(&["{", "}", "{", "}"]);
        agrees_with_a_parse(&["{\"a\":\"}\\\"", "\"", "}"]);
        agrees_with_a_parse(&["[1,", "[2]", "]", "x"]);
        agrees_with_a_parse(&["{,}", " ", " "]);
        agrees_with_a_parse(&["}", "{}"]);
        agrees_with_a_parse(&[" ", "1", "2", " ", "3"]);
        agrees_with_a_parse(&["tr", "ue", " "]);
        agrees_with_a_parse(&["\"a", "b\"", " "]);
        agrees_with_a_parse(&["1", "e", "5"]);
        agrees_with_a_parse(&["nul", "l", "{"]);
        agrees_with_a_parse(&["{\"a\":[\"\\\\\"]}", ""]);
    }

    #[test]
    fn a_bare_scalar_past_the_parsed_length_is_never_whole() {
        let mut shape = WholeJson::default();
        let digits = "1".repeat(SCALAR_PARSED + 1);
        shape.push(&digits);
        assert!(!shape.is_whole(&digits));
    }
}
