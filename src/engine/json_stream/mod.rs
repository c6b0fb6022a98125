//! A push-fed JSON parser for tool-call arguments that arrive as fragments: it holds the
//! nesting (one byte per open container, at most [`MAX_DEPTH`]) and at most one value being
//! built (a string or number up to its hold bound), never the text.
//!
//! Input: the text's bytes in any split ([`JsonStream::push`], then [`JsonStream::finish`]).
//! Output: structural [`Event`]s handed to a callback as they complete (a string or number past
//! the hold bound as [`Text::Long`]: its length, not its bytes), and the byte offset at which
//! the text first became impossible JSON ([`Broken`]), which is the same for every split.
//! Accepts exactly what `serde_json::from_str::<Value>` accepts (a test compares both on
//! written and edited text): strict UTF-8, paired surrogate escapes, no raw control characters
//! in strings, nesting below serde's limit of 128, numbers serde's float parse keeps finite,
//! nothing after the value but white space. Written here rather than taken from a crate:
//! `actson` and `json-event-parser` (push-fed) accept lone surrogates and unbounded nesting,
//! and hold a long string whole before handing it out; `struson` pulls from a blocking
//! reader. Their differences from serde would be differences from the whole-text verdict.

mod number;

use number::NumberScan;

/// The deepest nesting serde_json reads; its 128th open bracket is refused.
pub const MAX_DEPTH: usize = 127;

/// Bytes of a number token held for serde to judge its range; a longer one is judged from its
/// summary ([`number::NumberScan`]).
const NUMBER_HOLD: usize = 1024;

/// A string, key or number token as it is handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Text<'a> {
    /// The whole value: a string unescaped, a number as its token.
    Held(&'a str),
    /// Past the hold bound: its unescaped length in bytes and in chars (a number's token
    /// length in both).
    Long { bytes: u64, chars: u64 },
}

/// One structural step of the text, in document order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    BeginObject,
    EndObject,
    BeginArray,
    EndArray,
    Key(Text<'a>),
    String(Text<'a>),
    Number(Text<'a>),
    Bool(bool),
    Null,
}

/// Where and why the text became impossible JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Broken {
    /// The offset of the byte that made every continuation impossible; the text's length when
    /// it ended too early, or when a number that ended there is out of range.
    pub offset: u64,
    pub reason: &'static str,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.offset)
    }
}

/// Where the parser stands between two bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A value must come: at the start, after `:`, after `,` in an array.
    Value,
    /// Just after `[`: a value or `]`.
    ValueOrClose,
    /// Just after `{`: a key or `}`.
    KeyOrClose,
    /// After `,` in an object: a key.
    Key,
    Colon,
    CommaOrClose,
    /// The top-level value closed: white space only.
    Done,
    Str {
        key: bool,
        escape: Escape,
    },
    Number,
    Literal {
        word: &'static [u8],
        at: u8,
    },
}

/// Inside a string: how far an escape has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    None,
    Backslash,
    /// `\u` and this many hex digits of `code`; `high` is the leading surrogate it pairs with.
    Hex {
        code: u16,
        digits: u8,
        high: Option<u16>,
    },
    /// A leading surrogate was read: its `\` must follow.
    WantBackslash {
        high: u16,
    },
    WantU {
        high: u16,
    },
}

/// The parser of one JSON text. See the module doc.
#[derive(Debug)]
pub struct JsonStream {
    hold: usize,
    offset: u64,
    /// One entry per open container: `true` for an object.
    open: Vec<bool>,
    state: State,
    /// The string (unescaped) or number token being built, while within its bound.
    text: Vec<u8>,
    text_bytes: u64,
    text_chars: u64,
    long: bool,
    /// UTF-8 continuation bytes still due, and the range the next one must fall in.
    utf8_due: u8,
    utf8_range: (u8, u8),
    number: NumberScan,
    broken: Option<Broken>,
}

impl JsonStream {
    /// A parser that hands out strings up to `hold` bytes whole.
    pub fn new(hold: usize) -> JsonStream {
        JsonStream {
            hold,
            offset: 0,
            open: Vec::new(),
            state: State::Value,
            text: Vec::new(),
            text_bytes: 0,
            text_chars: 0,
            long: false,
            utf8_due: 0,
            utf8_range: (0x80, 0xBF),
            number: NumberScan::default(),
            broken: None,
        }
    }

    /// Bytes read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Where the text broke, once it has.
    pub fn broken(&self) -> Option<Broken> {
        self.broken
    }

    /// Heap bytes this parser holds (its nesting and the value being built).
    pub fn held_bytes(&self) -> usize {
        self.open.capacity() + self.text.capacity()
    }

    /// Reads the next bytes of the text, handing each completed event to `on`.
    pub fn push(&mut self, bytes: &[u8], on: &mut impl FnMut(Event<'_>)) -> Result<(), Broken> {
        if let Some(broken) = self.broken {
            return Err(broken);
        }
        let mut at = 0;
        while at < bytes.len() {
            let step = self.step(&bytes[at..], on);
            match step {
                Ok(used) => {
                    at += used;
                    self.offset += used as u64;
                }
                Err(reason) => return Err(self.break_here(reason)),
            }
        }
        Ok(())
    }

    /// The end of the text: a number at the top closes, anything still open breaks it.
    pub fn finish(&mut self, on: &mut impl FnMut(Event<'_>)) -> Result<(), Broken> {
        if let Some(broken) = self.broken {
            return Err(broken);
        }
        if self.state == State::Number {
            self.end_number(on)
                .map_err(|reason| self.break_here(reason))?;
        }
        match self.state {
            State::Done => Ok(()),
            State::Value if self.open.is_empty() => Err(self.break_here("no value")),
            _ => Err(self.break_here("ends before the value closes")),
        }
    }

    fn break_here(&mut self, reason: &'static str) -> Broken {
        let broken = Broken {
            offset: self.offset,
            reason,
        };
        self.broken = Some(broken);
        self.text = Vec::new();
        broken
    }

    /// Reads from the start of `bytes`; how many bytes it used (at least one, or none when a
    /// number ended before its first byte, which is then read again in the next state).
    fn step(
        &mut self,
        bytes: &[u8],
        on: &mut impl FnMut(Event<'_>),
    ) -> Result<usize, &'static str> {
        let byte = bytes[0];
        match self.state {
            State::Str { key, escape } => return self.string(bytes, key, escape, on),
            State::Number => {
                if self.number.takes(byte) {
                    self.number_byte(byte)?;
                    return Ok(1);
                }
                self.end_number(on)?;
                return Ok(0);
            }
            State::Literal { word, at } => {
                if word.get(usize::from(at)) != Some(&byte) {
                    return Err("not a literal");
                }
                let at = at + 1;
                if usize::from(at) < word.len() {
                    self.state = State::Literal { word, at };
                } else {
                    on(match word {
                        b"true" => Event::Bool(true),
                        b"false" => Event::Bool(false),
                        _ => Event::Null,
                    });
                    self.value_done();
                }
                return Ok(1);
            }
            _ => {}
        }
        if matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
            return Ok(1);
        }
        match (self.state, byte) {
            (State::Value | State::ValueOrClose, _) if byte != b']' => {
                self.value_start(byte, on)?
            }
            (State::ValueOrClose | State::CommaOrClose, b']')
                if self.open.last() == Some(&false) =>
            {
                self.close(on, Event::EndArray)
            }
            (State::KeyOrClose | State::CommaOrClose, b'}') if self.open.last() == Some(&true) => {
                self.close(on, Event::EndObject)
            }
            (State::KeyOrClose | State::Key, b'"') => self.open_string(true),
            (State::Colon, b':') => self.state = State::Value,
            (State::CommaOrClose, b',') => {
                self.state = if self.open.last() == Some(&true) {
                    State::Key
                } else {
                    State::Value
                };
            }
            (State::Done, _) => return Err("trailing characters"),
            _ => return Err("unexpected character"),
        }
        Ok(1)
    }

    fn value_start(
        &mut self,
        byte: u8,
        on: &mut impl FnMut(Event<'_>),
    ) -> Result<(), &'static str> {
        match byte {
            b'{' | b'[' => {
                if self.open.len() >= MAX_DEPTH {
                    return Err("nesting too deep");
                }
                let object = byte == b'{';
                self.open.push(object);
                if object {
                    on(Event::BeginObject);
                    self.state = State::KeyOrClose;
                } else {
                    on(Event::BeginArray);
                    self.state = State::ValueOrClose;
                }
            }
            b'"' => self.open_string(false),
            b't' => {
                self.state = State::Literal {
                    word: b"true",
                    at: 1,
                }
            }
            b'f' => {
                self.state = State::Literal {
                    word: b"false",
                    at: 1,
                }
            }
            b'n' => {
                self.state = State::Literal {
                    word: b"null",
                    at: 1,
                }
            }
            b'-' | b'0'..=b'9' => {
                self.number = NumberScan::default();
                self.reset_text();
                self.state = State::Number;
                self.number_byte(byte)?;
            }
            _ => return Err("expected a value"),
        }
        Ok(())
    }

    fn close(&mut self, on: &mut impl FnMut(Event<'_>), event: Event<'static>) {
        self.open.pop();
        on(event);
        self.value_done();
    }

    fn value_done(&mut self) {
        self.state = if self.open.is_empty() {
            State::Done
        } else {
            State::CommaOrClose
        };
    }

    fn reset_text(&mut self) {
        self.text.clear();
        self.text_bytes = 0;
        self.text_chars = 0;
        self.long = false;
    }

    /// Keeps `piece` of the value being built, or only counts it past the hold bound (a
    /// parser that holds nothing, as the argument driver's break search is, only counts).
    #[inline(always)]
    fn keep(&mut self, piece: &[u8], limit: usize) {
        self.text_bytes += piece.len() as u64;
        if !self.long {
            self.hold_piece(piece, limit);
        }
    }

    fn hold_piece(&mut self, piece: &[u8], limit: usize) {
        if self.text.len() + piece.len() > limit {
            self.long = true;
            self.text = Vec::new();
        } else {
            let needed = self.text.len() + piece.len();
            if needed > self.text.capacity() {
                // Doubling, but never past the bound: a held value costs at most its bound.
                let room = needed.max(self.text.capacity() * 2).min(limit);
                self.text.reserve_exact(room - self.text.len());
            }
            self.text.extend_from_slice(piece);
        }
    }

    fn held(&self) -> Text<'_> {
        match std::str::from_utf8(&self.text) {
            Ok(text) if !self.long => Text::Held(text),
            _ => Text::Long {
                bytes: self.text_bytes,
                chars: self.text_chars,
            },
        }
    }

    fn number_byte(&mut self, byte: u8) -> Result<(), &'static str> {
        self.number.step(byte)?;
        self.text_chars += 1;
        self.keep(&[byte], NUMBER_HOLD);
        Ok(())
    }

    fn end_number(&mut self, on: &mut impl FnMut(Event<'_>)) -> Result<(), &'static str> {
        if !self.number.complete() {
            return Err("invalid number");
        }
        let finite = match self.held() {
            Text::Held(token) => number::finite_token(token)?,
            Text::Long { .. } => self.number.finite()?,
        };
        if !finite {
            return Err("number out of range");
        }
        on(Event::Number(self.held()));
        self.value_done();
        Ok(())
    }

    fn open_string(&mut self, key: bool) {
        self.reset_text();
        self.state = State::Str {
            key,
            escape: Escape::None,
        };
    }

    /// Reads string bytes from the start of `bytes`: plain runs and one-character escapes at once.
    fn string(
        &mut self,
        bytes: &[u8],
        key: bool,
        escape: Escape,
        on: &mut impl FnMut(Event<'_>),
    ) -> Result<usize, &'static str> {
        if escape != Escape::None {
            self.escape_byte(bytes[0], key, escape)?;
            return Ok(1);
        }
        if self.utf8_due > 0 {
            let byte = bytes[0];
            let (low, high) = self.utf8_range;
            if byte < low || byte > high {
                return Err("invalid UTF-8");
            }
            self.utf8_due -= 1;
            self.utf8_range = (0x80, 0xBF);
            self.keep(&[byte], self.hold);
            return Ok(1);
        }
        let used = self.plain_and_simple(bytes);
        if used > 0 {
            return Ok(used);
        }
        let byte = bytes[0];
        match byte {
            b'"' => {
                let text = self.held();
                on(if key {
                    Event::Key(text)
                } else {
                    Event::String(text)
                });
                self.reset_text();
                if key {
                    self.state = State::Colon;
                } else {
                    self.value_done();
                }
            }
            b'\\' => {
                // `\u`, an escape split across pushes, or an invalid one (a one-character
                // escape whole in this push was read by `plain_and_simple`).
                self.state = State::Str {
                    key,
                    escape: Escape::Backslash,
                }
            }
            0x00..=0x1F => return Err("control character in a string"),
            _ => {
                let (due, range) = match byte {
                    0xC2..=0xDF => (1, (0x80, 0xBF)),
                    0xE0 => (2, (0xA0, 0xBF)),
                    0xE1..=0xEC | 0xEE..=0xEF => (2, (0x80, 0xBF)),
                    0xED => (2, (0x80, 0x9F)),
                    0xF0 => (3, (0x90, 0xBF)),
                    0xF1..=0xF3 => (3, (0x80, 0xBF)),
                    0xF4 => (3, (0x80, 0x8F)),
                    _ => return Err("invalid UTF-8"),
                };
                self.utf8_due = due;
                self.utf8_range = range;
                self.text_chars += 1;
                self.keep(&[byte], self.hold);
            }
        }
        Ok(1)
    }

    /// Reads the plain runs and whole one-character escapes at the start of `bytes` in one
    /// go (a code file's text is mostly that: a run, `\n` or `\"`, a run...), rather than a
    /// step of the caller's loop for each; how many bytes it read (none when `bytes` starts
    /// with something else: the string's end, a `\u`, a split escape, a non-ASCII or a
    /// control byte, which the caller's step reads).
    fn plain_and_simple(&mut self, bytes: &[u8]) -> usize {
        let mut at = 0;
        loop {
            let run = plain_run(&bytes[at..]);
            if run > 0 {
                self.text_chars += run as u64;
                self.keep(&bytes[at..at + run], self.hold);
                at += run;
            }
            if bytes.get(at) != Some(&b'\\') {
                return at;
            }
            let Some(plain) = bytes.get(at + 1).copied().and_then(simple_escape) else {
                return at;
            };
            self.text_chars += 1;
            self.keep(&[plain], self.hold);
            at += 2;
        }
    }

    fn escape_byte(&mut self, byte: u8, key: bool, escape: Escape) -> Result<(), &'static str> {
        let next = match escape {
            Escape::None => Escape::None,
            Escape::Backslash => {
                let plain = match byte {
                    b'u' => 0,
                    other => simple_escape(other).ok_or("invalid escape")?,
                };
                if byte == b'u' {
                    Escape::Hex {
                        code: 0,
                        digits: 0,
                        high: None,
                    }
                } else {
                    self.text_chars += 1;
                    self.keep(&[plain], self.hold);
                    Escape::None
                }
            }
            Escape::WantBackslash { high } if byte == b'\\' => Escape::WantU { high },
            Escape::WantU { high } if byte == b'u' => Escape::Hex {
                code: 0,
                digits: 0,
                high: Some(high),
            },
            Escape::WantBackslash { .. } | Escape::WantU { .. } => {
                return Err("unexpected end of hex escape");
            }
            Escape::Hex { code, digits, high } => {
                let digit = match byte {
                    b'0'..=b'9' => byte - b'0',
                    b'a'..=b'f' => byte - b'a' + 10,
                    b'A'..=b'F' => byte - b'A' + 10,
                    _ => return Err("invalid hex escape"),
                };
                let code = (code << 4) | u16::from(digit);
                if digits < 3 {
                    Escape::Hex {
                        code,
                        digits: digits + 1,
                        high,
                    }
                } else {
                    self.escaped_code(code, high)?
                }
            }
        };
        self.state = State::Str { key, escape: next };
        Ok(())
    }

    /// A complete `\uXXXX`: a char, or a leading surrogate waiting for its pair.
    fn escaped_code(&mut self, code: u16, high: Option<u16>) -> Result<Escape, &'static str> {
        let scalar = match (high, code) {
            (None, 0xDC00..=0xDFFF) => return Err("lone surrogate in hex escape"),
            (None, 0xD800..=0xDBFF) => return Ok(Escape::WantBackslash { high: code }),
            (None, _) => u32::from(code),
            (Some(high), 0xDC00..=0xDFFF) => {
                (((u32::from(high) - 0xD800) << 10) | (u32::from(code) - 0xDC00)) + 0x1_0000
            }
            (Some(_), _) => return Err("lone surrogate in hex escape"),
        };
        let decoded = char::from_u32(scalar).ok_or("invalid hex escape")?;
        let mut utf8 = [0; 4];
        self.text_chars += 1;
        self.keep(decoded.encode_utf8(&mut utf8).as_bytes(), self.hold);
        Ok(Escape::None)
    }
}

/// The byte a one-character escape (`\n`, `\"`...) stands for; `None` for `u` and the rest.
fn simple_escape(byte: u8) -> Option<u8> {
    Some(match byte {
        b'"' => b'"',
        b'\\' => b'\\',
        b'/' => b'/',
        b'b' => 0x08,
        b'f' => 0x0C,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        _ => return None,
    })
}

/// How many bytes at the start of `bytes` are plain string bytes: not a quote, a backslash, a
/// control character or a non-ASCII byte (which the UTF-8 states check one at a time). Eight
/// bytes at a time: argument text is mostly such runs.
fn plain_run(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut at = 0;
    while let Some(word) = bytes
        .get(at..at + 8)
        .and_then(|word| <[u8; 8]>::try_from(word).ok())
    {
        let word = u64::from_le_bytes(word);
        // A byte's high bit is set where it is a quote or a backslash (`word ^ '"'` zero), below
        // 0x20 or non-ASCII; bits above the lowest may be set wrongly (a borrow starts only at
        // a byte that stops the run), the lowest never is.
        let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
        let stops = zero(word ^ (ONES * u64::from(b'"')))
            | zero(word ^ (ONES * u64::from(b'\\')))
            | (word.wrapping_sub(ONES * 0x20) & !word & HIGH)
            | (word & HIGH);
        if stops != 0 {
            return at + (stops.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + bytes[at..]
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b))
        .unwrap_or(bytes.len() - at)
}

#[cfg(test)]
mod tests;
