//! A strict, hand-written JSON reader for the few shapes read on every event and every body
//! (a chunk, a buffered document, a recording's frame line), taking only what it reads exactly
//! as serde_json does and giving up (`None`) on anything else, so that the caller can hand the
//! text to serde, which decides and words the errors.
//!
//! Input: UTF-8 text. Output: members walked one by one ([`Scan::object`], [`Scan::array`]),
//! `Value`s built as serde_json's `Value` builds them ([`Scan::value`]) or checked as strictly
//! and kept as their text ([`Scan::value_text`]), values skipped but checked ([`Scan::skip`]).
//! Refused here, left to serde: a key holding an escape, a number other than a plain integer
//! that fits a `u64` unless serde reads the token alone to a value
//! ([`Scan::value`]) or it has JSON's grammar ([`Scan::skip`]), a lone surrogate, a raw control
//! character, nesting deeper than [`MAX_DEPTH`], anything after the value but white space.
//! Stricter than serde is safe (serde reads it again); laxer never is, and the tests of each
//! reader compare it with serde's read on every shape they take and on the ones they refuse.
//! Why: serde_json's derived reads go through generic machinery for every key, field name and
//! skipped member, which a direct scan with the same allocations avoids; strings are searched
//! eight bytes at a time (see docs/benchmarks.md#json-scan).

use std::borrow::Cow;

use serde_json::{Map, Value};

/// Deeper nesting is left to serde (whose own limit is 128).
pub const MAX_DEPTH: u32 = 100;

/// Items larger than this (bytes) are given room one by one at first ([`Scan::items`]).
const LARGE_ITEM: usize = 128;

/// A byte that ends a string's plain run: a quote, a backslash or a control character.
const STRING_STOP: u8 = 1;
/// A byte a number token can hold.
const NUMBER: u8 = 2;

/// What each byte is, looked up once per byte in the hot loops.
static CLASS: [u8; 256] = {
    let mut class = [0; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        if b == b'"' || b == b'\\' || b < 0x20 {
            class[byte] |= STRING_STOP;
        }
        if b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E') {
            class[byte] |= NUMBER;
        }
        byte += 1;
    }
    class
};

/// How many bytes of `bytes` come before the first that ends a string's plain run (`None`:
/// there is none). Eight bytes at a time: the plain runs are keys and short values, and a
/// byte-by-byte search costs several instructions a byte (see docs/benchmarks.md#json-scan).
#[inline]
fn plain_run(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut at = 0;
    while let Some(word) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(word.try_into().ok()?);
        // A byte's high bit is set in these where the byte is zero (quote: `word ^ '"'`...)
        // or below 0x20; bits above the lowest may be set wrongly, the lowest never is.
        let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
        let stops = zero(word ^ (ONES * u64::from(b'"')))
            | zero(word ^ (ONES * u64::from(b'\\')))
            | (word.wrapping_sub(ONES * 0x20) & !word & HIGH);
        if stops != 0 {
            return Some(at + (stops.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let tail = bytes[at..]
        .iter()
        .position(|&byte| CLASS[usize::from(byte)] & STRING_STOP != 0)?;
    Some(at + tail)
}

/// A reading position in JSON text.
pub struct Scan<'a> {
    text: &'a str,
    at: usize,
    depth: u32,
}

impl<'a> Scan<'a> {
    pub fn new(text: &'a str) -> Scan<'a> {
        Scan {
            text,
            at: 0,
            depth: 0,
        }
    }

    /// The next byte after white space (JSON's four: space, tab, line feed, carriage return).
    #[inline]
    pub fn peek(&mut self) -> Option<u8> {
        let bytes = self.text.as_bytes();
        loop {
            let byte = *bytes.get(self.at)?;
            if !matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(byte);
            }
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// The byte offset reached in the text (after [`Scan::peek`], where the next value starts).
    pub fn position(&self) -> usize {
        self.at
    }

    /// Only white space is left.
    pub fn end(mut self) -> Option<()> {
        self.peek().is_none().then_some(())
    }

    /// `null` when it comes next (consumed); otherwise nothing is consumed.
    pub fn null(&mut self) -> bool {
        self.peek() == Some(b'n') && self.literal("null", ()).is_some()
    }

    /// An object, each member handed to `member` with its key; `member` reads the value.
    pub fn object(
        &mut self,
        member: impl FnMut(&mut Scan<'a>, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.members(Scan::plain_key, member)
    }

    /// An object whose keys are read by `key` (after their opening quote), each member handed
    /// to `member` with its key.
    fn members<K>(
        &mut self,
        mut key: impl FnMut(&mut Scan<'a>) -> Option<K>,
        mut member: impl FnMut(&mut Scan<'a>, K) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        self.sequence(b'}', |scan| {
            scan.eat(b'"')?;
            let key = key(scan)?;
            scan.eat(b':')?;
            member(scan, key)
        })
    }

    /// The items of an object or array whose opening bracket was just read, up to `close`.
    fn sequence(
        &mut self,
        close: u8,
        mut item: impl FnMut(&mut Scan<'a>) -> Option<()>,
    ) -> Option<()> {
        self.enter()?;
        if self.peek()? == close {
            self.at += 1;
            self.depth -= 1;
            return Some(());
        }
        loop {
            item(self)?;
            match self.peek()? {
                b',' => self.at += 1,
                byte if byte == close => {
                    self.at += 1;
                    self.depth -= 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An array, each item handed to `item`, which reads it.
    pub fn array(&mut self, item: impl FnMut(&mut Scan<'a>) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        self.sequence(b']', item)
    }

    /// An array's items, each read by `item`.
    pub fn items<T>(&mut self, mut item: impl FnMut(&mut Scan<'a>) -> Option<T>) -> Option<Vec<T>> {
        let mut items = Vec::new();
        self.array(|scan| {
            let next = item(scan)?;
            if items.len() == items.capacity() && size_of::<T>() > LARGE_ITEM {
                // Twice the room, from one item on: a `Vec`'s first growth makes room for four,
                // which for a tool call (~300 bytes) is past glibc's per-thread cache, served by
                // its slow path and a consolidation of its free lists, for every response.
                items.reserve_exact(items.len().max(1));
            }
            items.push(next);
            Some(())
        })?;
        Some(items)
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// The next value when it is a string without escapes, its text (not consumed past what it
    /// read when not: the caller then gives up).
    pub fn plain_string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        self.plain_key()
    }

    /// A key whose opening quote was just read, when it holds no escape or control character.
    #[inline]
    fn plain_key(&mut self) -> Option<&'a str> {
        let start = self.at;
        let at = start + plain_run(&self.text.as_bytes()[start..])?;
        if self.text.as_bytes()[at] != b'"' {
            return None;
        }
        self.at = at + 1;
        self.text.get(start..at)
    }

    /// The next value as serde_json's `Value` reads it (an object's members in its map's
    /// order, the last of a repeated key kept).
    pub fn value(&mut self) -> Option<Value> {
        match self.peek()? {
            b'"' => {
                self.at += 1;
                self.string_after_quote().map(Value::String)
            }
            b'{' => {
                let mut map = Map::new();
                self.object_with_escaped_keys(&mut map)?;
                Some(Value::Object(map))
            }
            b'[' => self.items(Scan::value).map(Value::Array),
            b't' => self.literal("true", Value::Bool(true)),
            b'f' => self.literal("false", Value::Bool(false)),
            b'n' => self.literal("null", Value::Null),
            _ => {
                let token = self.number_token()?;
                match plain_integer(token) {
                    Some((value, "")) => Some(Value::from(value)),
                    // Signs, fractions, exponents and large integers: serde reads the token
                    // alone exactly as in context (and refuses what it would refuse there).
                    _ => serde_json::from_str::<Value>(token)
                        .ok()
                        .filter(Value::is_number),
                }
            }
        }
    }

    /// An object read into `map`, keys decoded (a `Value`'s keys may hold escapes).
    fn object_with_escaped_keys(&mut self, map: &mut Map<String, Value>) -> Option<()> {
        self.members(Scan::string_after_quote, |scan, key| {
            map.insert(key, scan.value()?);
            Some(())
        })
    }

    /// The string whose opening quote was just read, decoded.
    fn string_after_quote(&mut self) -> Option<String> {
        let (string, used) = string_body(&self.text[self.at..])?;
        self.at += used;
        Some(string)
    }

    /// The next value as `read` reads it, with its exact text.
    pub fn with_text<T>(
        &mut self,
        read: impl FnOnce(&mut Scan<'a>) -> Option<T>,
    ) -> Option<(&'a str, T)> {
        self.peek()?;
        let start = self.at;
        let read = read(self)?;
        Some((self.text.get(start..self.at)?, read))
    }

    /// The next value decoded when it is a string (borrowed from the text when it holds no
    /// escape), `Some(None)` when it is another value, skipped as [`Scan::value_text`] checks
    /// it: what `Value::as_str` gives of the value serde reads.
    pub fn string_or_other(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.peek()? != b'"' {
            self.value_text()?;
            return Some(None);
        }
        self.at += 1;
        if let Some(plain) = self.plain_key() {
            return Some(Some(Cow::Borrowed(plain)));
        }
        self.string_after_quote()
            .map(|decoded| Some(Cow::Owned(decoded)))
    }

    /// The next value's exact text, checked as [`Scan::skip`] checks it: what serde's
    /// `RawValue` would hold, without serde reading it again.
    pub fn raw_text(&mut self) -> Option<&'a str> {
        self.text_checking(number_grammar)
    }

    /// The next value's exact text when `known` says how long it is from the text at the
    /// value's start (a text read whole as JSON before, such as a cached array: see
    /// [`crate::engine::schema::SchemaCache::known_at`]), stepped over without reading it;
    /// `None` (nothing read) when `known` does not know it.
    pub fn known_text<T>(
        &mut self,
        known: impl FnOnce(&'a str) -> Option<(usize, T)>,
    ) -> Option<(&'a str, T)> {
        self.peek()?;
        let start = self.at;
        let (length, found) = known(self.text.get(start..)?)?;
        let text = self.text.get(start..start + length)?;
        self.at += length;
        Some((text, found))
    }

    /// The next value's exact text, checked exactly as [`Scan::value`] reads it, numbers
    /// included (one that is not a plain integer is read by serde, which refuses one out of
    /// range): text serde reads to the tree [`Scan::value`] would build, kept as text.
    pub fn value_text(&mut self) -> Option<&'a str> {
        self.text_checking(serde_number)
    }

    /// The next value's exact text, skipped with each number token checked by `number`.
    fn text_checking(&mut self, number: fn(&str) -> bool) -> Option<&'a str> {
        let (text, ()) = self.with_text(|scan| scan.skip_checking(number))?;
        Some(text)
    }

    /// Skips the next value, checking it as strictly as [`Scan::value`] reads it (numbers
    /// against JSON's grammar).
    pub fn skip(&mut self) -> Option<()> {
        self.skip_checking(number_grammar)
    }

    /// Skips the next value, each number token checked by `number`.
    fn skip_checking(&mut self, number: fn(&str) -> bool) -> Option<()> {
        match self.peek()? {
            b'"' => {
                self.at += 1;
                self.at += skip_string_body(&self.text.as_bytes()[self.at..])?;
                Some(())
            }
            b'{' => self.skip_object(number),
            b'[' => self.array(|scan| scan.skip_checking(number)),
            b't' => self.literal("true", ()),
            b'f' => self.literal("false", ()),
            b'n' => self.literal("null", ()),
            _ => number(self.number_token()?).then_some(()),
        }
    }

    /// Skips an object, keys with escapes included.
    fn skip_object(&mut self, number: fn(&str) -> bool) -> Option<()> {
        let skip_key = |scan: &mut Scan<'a>| {
            scan.at += skip_string_body(&scan.text.as_bytes()[scan.at..])?;
            Some(())
        };
        self.members(skip_key, |scan, ()| scan.skip_checking(number))
    }

    fn literal<T>(&mut self, word: &str, value: T) -> Option<T> {
        self.text[self.at..].starts_with(word).then(|| {
            self.at += word.len();
            value
        })
    }

    /// The bytes a number can hold, from here on (at least one).
    fn number_token(&mut self) -> Option<&'a str> {
        let rest = &self.text.as_bytes()[self.at..];
        let len = rest
            .iter()
            .position(|&byte| CLASS[usize::from(byte)] & NUMBER == 0)
            .unwrap_or(rest.len());
        if len == 0 {
            return None;
        }
        let token = &self.text[self.at..self.at + len];
        self.at += len;
        Some(token)
    }
}

/// The value of a member read as serde reads an `Option<Value>`: `null` is `None`.
pub fn optional(scan: &mut Scan) -> Option<Option<Value>> {
    optional_with(scan, Scan::value)
}

/// A member read by `read` as serde reads an `Option<T>`: `null` is `None`.
pub fn optional_with<'a, T>(
    scan: &mut Scan<'a>,
    read: impl FnOnce(&mut Scan<'a>) -> Option<T>,
) -> Option<Option<T>> {
    if scan.null() {
        return Some(None);
    }
    read(scan).map(Some)
}

/// The value of a member read as given, `null` included (`Some` whatever it is).
pub fn present(scan: &mut Scan) -> Option<Option<Value>> {
    scan.value().map(Some)
}

/// The members of a struct read so far: a derived struct refuses a member given twice.
#[derive(Default)]
pub struct Seen(u32);

impl Seen {
    /// `None` when member `bit` was seen already.
    pub fn first(&mut self, bit: u32) -> Option<()> {
        let mask = 1 << bit;
        if self.0 & mask != 0 {
            return None;
        }
        self.0 |= mask;
        Some(())
    }

    /// Member `bit`'s value, as read, into `slot`; `None` when the member was seen already or
    /// the read gave up (either way the whole read gives up, so which is checked first does
    /// not matter).
    pub fn fill<T>(
        &mut self,
        bit: u32,
        slot: &mut Option<T>,
        read: Option<Option<T>>,
    ) -> Option<()> {
        self.first(bit)?;
        *slot = read?;
        Some(())
    }
}

/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, the whole token.
/// Whether `token` is a number [`Scan::value`] reads: a plain integer, or one serde reads
/// alone to a number (it refuses one out of range).
fn serde_number(token: &str) -> bool {
    matches!(plain_integer(token), Some((_, "")))
        || serde_json::from_str::<Value>(token).is_ok_and(|value| value.is_number())
}

fn number_grammar(token: &str) -> bool {
    let bytes = token.as_bytes();
    let mut at = usize::from(bytes.first() == Some(&b'-'));
    let digits = |at: usize| {
        bytes[at.min(bytes.len())..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let int = digits(at);
    if int == 0 || (int > 1 && bytes[at] == b'0') {
        return false;
    }
    at += int;
    if bytes.get(at) == Some(&b'.') {
        let frac = digits(at + 1);
        if frac == 0 {
            return false;
        }
        at += 1 + frac;
    }
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(bytes.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        let exp = digits(at);
        if exp == 0 {
            return false;
        }
        at += exp;
    }
    at == bytes.len()
}

/// A JSON integer that fits a `u64` (no sign, fraction, exponent or leading zero), and what
/// follows it.
pub fn plain_integer(text: &str) -> Option<(u64, &str)> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || (digits > 1 && text.starts_with('0')) {
        return None;
    }
    let value = text.as_bytes()[..digits]
        .iter()
        .try_fold(0u64, |value, &digit| {
            value.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
        })?;
    Some((value, &text[digits..]))
}

/// The most room a decoded string's buffer starts with (it grows past it as a `Vec` does).
const FIRST_ROOM: usize = 4096;

/// The JSON string whose opening quote was just read, decoded, and how many bytes it took with
/// its closing quote. A string without escapes is copied whole; one with escapes byte by byte
/// (a body's escaped quotes come every few bytes, where a search for the next one costs more
/// than the bytes it skips; measured, neither a copy per run nor a checking pass first that
/// sizes the buffer exactly was cheaper). The buffer starts with room for at most
/// [`FIRST_ROOM`] bytes, not for all the text after the string: a string decoded early in a
/// large document would otherwise keep the room of the whole rest of it.
pub fn string_body(text: &str) -> Option<(String, usize)> {
    let bytes = text.as_bytes();
    let plain = plain_run(bytes)?;
    if bytes[plain] == b'"' {
        return Some((text[..plain].to_owned(), plain + 1));
    }
    let mut out = Vec::with_capacity(bytes.len().min(FIRST_ROOM));
    out.extend_from_slice(&bytes[..plain]);
    let mut at = plain;
    loop {
        let byte = *bytes.get(at)?;
        match byte {
            b'"' => {
                // Whole UTF-8 sequences copied and whole chars decoded: this check never fails.
                let out = String::from_utf8(out).ok()?;
                return Some((out, at + 1));
            }
            b'\\' => {
                let simple = match *bytes.get(at + 1)? {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 0x08,
                    b'f' => 0x0c,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'u' => {
                        let (decoded, used) = unicode_escape(&bytes[at..])?;
                        out.extend_from_slice(decoded.encode_utf8(&mut [0; 4]).as_bytes());
                        at += used;
                        continue;
                    }
                    _ => return None,
                };
                out.push(simple);
                at += 2;
            }
            // JSON strings hold no raw control characters (serde refuses them too).
            0..0x20 => return None,
            _ => {
                out.push(byte);
                at += 1;
            }
        }
    }
}

/// How many bytes the string whose opening quote was just read takes with its closing quote,
/// checked as [`string_body`] checks it, nothing decoded.
fn skip_string_body(bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    loop {
        at += plain_run(&bytes[at..])?;
        match bytes[at] {
            b'"' => return Some(at + 1),
            b'\\' => match *bytes.get(at + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => at += 2,
                b'u' => at += unicode_escape(&bytes[at..])?.1,
                _ => return None,
            },
            0..0x20 => return None,
            _ => at += 1,
        }
    }
}

/// A `\uXXXX` escape at the start of `bytes` (a surrogate pair takes two), and its length.
fn unicode_escape(bytes: &[u8]) -> Option<(char, usize)> {
    let first = hex4(bytes.get(2..6)?)?;
    match first {
        0xD800..=0xDBFF => {
            if bytes.get(6..8)? != b"\\u" {
                return None;
            }
            let second = hex4(bytes.get(8..12)?)?;
            if !(0xDC00..=0xDFFF).contains(&second) {
                return None;
            }
            let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
            Some((char::from_u32(code)?, 12))
        }
        0xDC00..=0xDFFF => None,
        _ => Some((char::from_u32(first)?, 6)),
    }
}

/// Four hex digits, either case.
fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |value, digit| {
        let nibble = char::from(*digit).to_digit(16)?;
        Some(value * 16 + nibble)
    })
}

#[cfg(test)]
pub(crate) mod tests;
