//! An incremental decoder of AWS event-stream messages (`application/vnd.amazon.eventstream`,
//! Bedrock's ConverseStream), sans-IO.
//!
//! Input: decoded response body bytes in arbitrary splits (a prelude, a header or a CRC may
//! straddle two pushes). Output: each whole message, in order, from the push that completed it:
//! its headers (every value type: true, false, byte, short, int, long, bytes, string, timestamp,
//! uuid) and its payload. A message is `total_length | headers_length | prelude_crc | headers |
//! payload | message_crc`, integers big-endian; the prelude CRC is the CRC32 (IEEE, zlib's) of
//! the first 8 bytes, the message CRC that of every byte before it. Both are verified.
//!
//! A corrupted message (a CRC that does not match, lengths that cannot be, a header type byte
//! over 9, a header running past its block) stops decoding: everything after it is
//! unreadable, as it is for the SDKs. [`EventStreamDecoder::end`] says how the bytes ended.
//! Only the current message is buffered (its allocation becomes the payload handed out),
//! bounded by `max_message`: a prelude announcing more
//! stops decoding with [`MessageTooLarge`] (our bound, not the message's fault).
//! [`to_event`] hands a message to a dialect as an SSE-like event.

use super::SseEvent;

/// The prelude: total length, headers length, prelude CRC.
const PRELUDE: usize = 12;
/// The prelude and the trailing message CRC.
const OVERHEAD: usize = PRELUDE + 4;
/// The most header bytes a message may carry (botocore's `_MAX_HEADERS_LENGTH`).
pub const MAX_HEADERS: usize = 128 * 1024;
/// The most payload bytes a message may carry (botocore's `_MAX_PAYLOAD_LENGTH`).
pub const MAX_PAYLOAD: usize = 24 * 1024 * 1024;

/// One message announced more bytes than the configured bound: decoding stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an event-stream message exceeded {limit} bytes")]
pub struct MessageTooLarge {
    pub limit: usize,
}

/// A header's value, by its type byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderValue {
    /// Types 0 (true) and 1 (false): no value bytes.
    Bool(bool),
    Byte(i8),
    Short(i16),
    Int(i32),
    Long(i64),
    /// Type 6: a `u16` length and the bytes.
    Bytes(Vec<u8>),
    /// Type 7: a `u16` length and UTF-8.
    String(String),
    /// Type 8: milliseconds since the epoch.
    Timestamp(i64),
    Uuid([u8; 16]),
}

/// One whole, verified message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub headers: Vec<(String, HeaderValue)>,
    pub payload: Vec<u8>,
}

impl Message {
    /// A string header's value (`:event-type`, `:message-type`, ...).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|(key, value)| match value {
            HeaderValue::String(text) if key == name => Some(text.as_str()),
            _ => None,
        })
    }
}

/// Why a message could not be read (decoding stopped there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Corruption {
    PreludeCrc {
        expected: u32,
        actual: u32,
    },
    MessageCrc {
        expected: u32,
        actual: u32,
    },
    /// `total_length` / `headers_length` that cannot be, or over the protocol's limits.
    Length {
        total: u32,
        headers: u32,
    },
    /// A header type byte over 9.
    HeaderType {
        byte: u8,
    },
    /// A header that runs past the headers block, or a name or string that is not UTF-8.
    HeaderMalformed,
}

impl Corruption {
    /// The problem's name, as the dialect's `bedrock.frame.*` rule spells it.
    pub fn problem(&self) -> &'static str {
        match self {
            Corruption::PreludeCrc { .. } => "prelude_crc_mismatch",
            Corruption::MessageCrc { .. } => "message_crc_mismatch",
            Corruption::Length { .. } | Corruption::HeaderMalformed => "length_invalid",
            Corruption::HeaderType { .. } => "header_type_unknown",
        }
    }

    /// What went wrong, for a violation's detail.
    pub fn detail(&self) -> String {
        match self {
            Corruption::PreludeCrc { expected, actual } => format!(
                "prelude CRC {actual:#010x} is not the CRC32 of the first 8 bytes ({expected:#010x})"
            ),
            Corruption::MessageCrc { expected, actual } => format!(
                "message CRC {actual:#010x} is not the CRC32 of the bytes before it ({expected:#010x})"
            ),
            Corruption::Length { total, headers } => format!(
                "total length {total} with headers length {headers}: a message is at least 16 \
                 bytes, its headers at most {MAX_HEADERS} and its payload at most {MAX_PAYLOAD}"
            ),
            Corruption::HeaderType { byte } => {
                format!("header value type {byte} is none of 0-9: the rest is unreadable")
            }
            Corruption::HeaderMalformed => {
                "a header runs past the headers block or is not UTF-8".to_owned()
            }
        }
    }
}

/// How the body's bytes ended, as far as the decoder saw them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeEnd {
    /// Every byte belonged to a whole message (or there were none).
    Clean,
    /// The bytes stopped inside a message: `pending` bytes of it were held.
    Truncated { pending: usize },
    /// A message at body `offset` was corrupt: decoding stopped there.
    Corrupt { offset: u64, corruption: Corruption },
    /// A message at body `offset` announced more than `max_message` bytes.
    TooLarge { offset: u64 },
}

/// The decoder's state between pushes.
#[derive(Debug)]
pub struct EventStreamDecoder {
    /// The current message's bytes so far.
    buffer: Vec<u8>,
    /// Its total length, once its prelude is read and checked.
    expected: Option<usize>,
    /// Body offset of the current message's first byte.
    offset: u64,
    max_message: usize,
    stopped: Option<DecodeEnd>,
}

impl EventStreamDecoder {
    /// A decoder holding at most `max_message` bytes of one message.
    pub fn new(max_message: usize) -> EventStreamDecoder {
        EventStreamDecoder {
            buffer: Vec::new(),
            expected: None,
            offset: 0,
            max_message,
            stopped: None,
        }
    }

    /// What it holds between pushes: the message not yet complete (its buffer's capacity).
    pub fn held_bytes(&self) -> usize {
        self.buffer.capacity()
    }

    /// Decodes `bytes`, appending each message they complete to `out`. A corrupt message stops
    /// decoding silently (see [`EventStreamDecoder::end`]); a message over `max_message` stops it
    /// with an error.
    pub fn push(
        &mut self,
        mut bytes: &[u8],
        out: &mut Vec<Message>,
    ) -> Result<(), MessageTooLarge> {
        while !bytes.is_empty() && self.stopped.is_none() {
            let want = self.expected.unwrap_or(PRELUDE);
            let take = want.saturating_sub(self.buffer.len()).min(bytes.len());
            let (head, rest) = bytes.split_at(take);
            self.buffer.extend_from_slice(head);
            bytes = rest;
            if self.buffer.len() < want {
                break;
            }
            match self.expected {
                None => {
                    if let Err(end) = self.read_prelude() {
                        let too_large = matches!(end, DecodeEnd::TooLarge { .. });
                        self.stop(end);
                        if too_large {
                            return Err(MessageTooLarge {
                                limit: self.max_message,
                            });
                        }
                    }
                }
                Some(total) => {
                    match decode(std::mem::take(&mut self.buffer)) {
                        Ok(message) => out.push(message),
                        Err(corruption) => {
                            let offset = self.offset;
                            self.stop(DecodeEnd::Corrupt { offset, corruption });
                            break;
                        }
                    }
                    self.offset += total as u64;
                    self.expected = None;
                }
            }
        }
        Ok(())
    }

    /// Checks the 12 buffered prelude bytes and sets the message's length.
    fn read_prelude(&mut self) -> Result<(), DecodeEnd> {
        let total = be_u32(&self.buffer, 0);
        let headers = be_u32(&self.buffer, 4);
        let actual = be_u32(&self.buffer, 8);
        let expected = crc32fast::hash(&self.buffer[..8]);
        let offset = self.offset;
        if actual != expected {
            return Err(DecodeEnd::Corrupt {
                offset,
                corruption: Corruption::PreludeCrc { expected, actual },
            });
        }
        let (total_len, headers_len) = (total as usize, headers as usize);
        let invalid = total_len < OVERHEAD
            || headers_len > total_len - OVERHEAD
            || headers_len > MAX_HEADERS
            || total_len - OVERHEAD - headers_len > MAX_PAYLOAD;
        if invalid {
            return Err(DecodeEnd::Corrupt {
                offset,
                corruption: Corruption::Length { total, headers },
            });
        }
        if total_len > self.max_message {
            return Err(DecodeEnd::TooLarge { offset });
        }
        self.expected = Some(total_len);
        self.buffer
            .reserve_exact(total_len.saturating_sub(self.buffer.len()));
        Ok(())
    }

    fn stop(&mut self, end: DecodeEnd) {
        self.stopped = Some(end);
        self.buffer = Vec::new();
        self.expected = None;
    }

    /// Whether bytes of an unfinished message are held.
    pub fn has_pending(&self) -> bool {
        self.stopped.is_none() && !self.buffer.is_empty()
    }

    /// How the bytes ended so far.
    pub fn end(&self) -> DecodeEnd {
        match &self.stopped {
            Some(end) => end.clone(),
            None if self.buffer.is_empty() => DecodeEnd::Clean,
            None => DecodeEnd::Truncated {
                pending: self.buffer.len(),
            },
        }
    }
}

/// Whether `body` opens with an event-stream prelude whose CRC holds (what `tooltap check`
/// sniffs a capture by).
pub fn starts_with_prelude(body: &[u8]) -> bool {
    body.len() >= PRELUDE && crc32fast::hash(&body[..8]) == be_u32(body, 8)
}

/// Where each message of `body` ends, by the preludes' total lengths, and the body's end when
/// bytes follow the last whole message (a message cut short, lengths that cannot be). Empty
/// for an empty body.
pub fn message_ends(body: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut at = 0;
    while body.len() >= at + PRELUDE {
        let total = be_u32(body, at) as usize;
        if total < OVERHEAD || body.len() - at < total {
            break;
        }
        at += total;
        ends.push(at);
    }
    if at < body.len() {
        ends.push(body.len());
    }
    ends
}

fn be_u32(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    if let Some(slice) = bytes.get(at..at + 4) {
        word.copy_from_slice(slice);
    }
    u32::from_be_bytes(word)
}

/// Reads one whole message whose prelude was checked: its message CRC, then its headers; the
/// payload keeps the message's own allocation (moved down in place, not copied out).
fn decode(mut message: Vec<u8>) -> Result<Message, Corruption> {
    let crc_at = message.len() - 4;
    let actual = be_u32(&message, crc_at);
    let expected = crc32fast::hash(&message[..crc_at]);
    if actual != expected {
        return Err(Corruption::MessageCrc { expected, actual });
    }
    let headers_len = be_u32(&message, 4) as usize;
    let headers_end = PRELUDE + headers_len;
    let headers = read_headers(&message[PRELUDE..headers_end])?;
    message.truncate(crc_at);
    message.drain(..headers_end);
    Ok(Message {
        headers,
        payload: message,
    })
}

/// The headers block: `name_len: u8 | name | type: u8 | value`, repeated.
fn read_headers(mut block: &[u8]) -> Result<Vec<(String, HeaderValue)>, Corruption> {
    let mut headers = Vec::new();
    while let Some((&name_len, rest)) = block.split_first() {
        let (name, rest) = take(rest, usize::from(name_len))?;
        let name = std::str::from_utf8(name)
            .map_err(|_| Corruption::HeaderMalformed)?
            .to_owned();
        let (&kind, rest) = rest.split_first().ok_or(Corruption::HeaderMalformed)?;
        let (value, rest) = read_value(kind, rest)?;
        headers.push((name, value));
        block = rest;
    }
    Ok(headers)
}

fn take(bytes: &[u8], len: usize) -> Result<(&[u8], &[u8]), Corruption> {
    if bytes.len() < len {
        return Err(Corruption::HeaderMalformed);
    }
    Ok(bytes.split_at(len))
}

fn fixed<const N: usize>(bytes: &[u8]) -> Result<([u8; N], &[u8]), Corruption> {
    let (head, rest) = take(bytes, N)?;
    let mut array = [0u8; N];
    array.copy_from_slice(head);
    Ok((array, rest))
}

fn read_value(kind: u8, bytes: &[u8]) -> Result<(HeaderValue, &[u8]), Corruption> {
    Ok(match kind {
        0 => (HeaderValue::Bool(true), bytes),
        1 => (HeaderValue::Bool(false), bytes),
        2 => {
            let (b, rest) = fixed::<1>(bytes)?;
            (HeaderValue::Byte(i8::from_be_bytes(b)), rest)
        }
        3 => {
            let (b, rest) = fixed::<2>(bytes)?;
            (HeaderValue::Short(i16::from_be_bytes(b)), rest)
        }
        4 => {
            let (b, rest) = fixed::<4>(bytes)?;
            (HeaderValue::Int(i32::from_be_bytes(b)), rest)
        }
        5 | 8 => {
            let (b, rest) = fixed::<8>(bytes)?;
            let value = i64::from_be_bytes(b);
            let value = if kind == 5 {
                HeaderValue::Long(value)
            } else {
                HeaderValue::Timestamp(value)
            };
            (value, rest)
        }
        6 | 7 => {
            let (len, rest) = fixed::<2>(bytes)?;
            let (value, rest) = take(rest, usize::from(u16::from_be_bytes(len)))?;
            let value = if kind == 6 {
                HeaderValue::Bytes(value.to_vec())
            } else {
                let text = std::str::from_utf8(value).map_err(|_| Corruption::HeaderMalformed)?;
                HeaderValue::String(text.to_owned())
            };
            (value, rest)
        }
        9 => {
            let (uuid, rest) = fixed::<16>(bytes)?;
            (HeaderValue::Uuid(uuid), rest)
        }
        byte => return Err(Corruption::HeaderType { byte }),
    })
}

/// A message as the event a dialect's `on_event` reads: an event message's `event` is its
/// `:event-type` (`None` when it has none) and its `data` the payload; an exception message's
/// `event` is `:exception:` and its `:exception-type`, an error message's `:error:` and its
/// `:error-code` (its data the `:error-message`, or the payload when it has none); a payload that
/// is not UTF-8 is `:frame:payload_not_utf8`. Names the framing makes start with `:`, which no
/// `:event-type` does.
pub fn to_event(message: Message) -> SseEvent {
    let Message { headers, payload } = message;
    let header = |name: &str| {
        headers.iter().find_map(|(key, value)| match value {
            HeaderValue::String(text) if key == name => Some(text.clone()),
            _ => None,
        })
    };
    let Ok(payload) = String::from_utf8(payload) else {
        return SseEvent {
            event: Some(":frame:payload_not_utf8".to_owned()),
            data: String::new(),
            id: None,
        };
    };
    match header(":message-type").as_deref() {
        Some("exception") => SseEvent {
            event: Some(format!(
                ":exception:{}",
                header(":exception-type").unwrap_or_default()
            )),
            data: payload,
            id: None,
        },
        Some("error") => SseEvent {
            event: Some(format!(
                ":error:{}",
                header(":error-code").unwrap_or_default()
            )),
            data: header(":error-message").unwrap_or(payload),
            id: None,
        },
        _ => SseEvent {
            event: header(":event-type"),
            data: payload,
            id: None,
        },
    }
}

/// Writes one message with string headers (what tests, fixtures and enforce mode's
/// `:exception` need), through [`Message::encode`].
pub fn encode(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let message = Message {
        headers: headers
            .iter()
            .map(|(name, value)| ((*name).to_owned(), HeaderValue::String((*value).to_owned())))
            .collect(),
        payload: payload.to_vec(),
    };
    message.encode()
}

impl Message {
    /// The message's bytes, as [`EventStreamDecoder`] reads them: the prelude with both
    /// lengths and its CRC, every header by its own type, the payload, the message CRC. A
    /// decoded message re-encodes to its original bytes (the quirks rewrite a payload and
    /// write the message again through this).
    pub fn encode(&self) -> Vec<u8> {
        let mut block = Vec::new();
        for (name, value) in &self.headers {
            block.push(u8::try_from(name.len()).unwrap_or(u8::MAX));
            block.extend_from_slice(name.as_bytes());
            write_value(value, &mut block);
        }
        let total = OVERHEAD + block.len() + self.payload.len();
        let mut message = Vec::with_capacity(total);
        message.extend_from_slice(&u32::try_from(total).unwrap_or(u32::MAX).to_be_bytes());
        message.extend_from_slice(&u32::try_from(block.len()).unwrap_or(u32::MAX).to_be_bytes());
        let prelude_crc = crc32fast::hash(&message);
        message.extend_from_slice(&prelude_crc.to_be_bytes());
        message.extend_from_slice(&block);
        message.extend_from_slice(&self.payload);
        let message_crc = crc32fast::hash(&message);
        message.extend_from_slice(&message_crc.to_be_bytes());
        message
    }
}

/// A header's type byte and value bytes, as [`read_value`] reads them.
fn write_value(value: &HeaderValue, out: &mut Vec<u8>) {
    let sized = |kind: u8, bytes: &[u8], out: &mut Vec<u8>| {
        out.push(kind);
        out.extend_from_slice(&u16::try_from(bytes.len()).unwrap_or(u16::MAX).to_be_bytes());
        out.extend_from_slice(bytes);
    };
    match value {
        HeaderValue::Bool(true) => out.push(0),
        HeaderValue::Bool(false) => out.push(1),
        HeaderValue::Byte(b) => {
            out.push(2);
            out.extend_from_slice(&b.to_be_bytes());
        }
        HeaderValue::Short(s) => {
            out.push(3);
            out.extend_from_slice(&s.to_be_bytes());
        }
        HeaderValue::Int(i) => {
            out.push(4);
            out.extend_from_slice(&i.to_be_bytes());
        }
        HeaderValue::Long(l) => {
            out.push(5);
            out.extend_from_slice(&l.to_be_bytes());
        }
        HeaderValue::Bytes(bytes) => sized(6, bytes, out),
        HeaderValue::String(text) => sized(7, text.as_bytes(), out),
        HeaderValue::Timestamp(t) => {
            out.push(8);
            out.extend_from_slice(&t.to_be_bytes());
        }
        HeaderValue::Uuid(uuid) => {
            out.push(9);
            out.extend_from_slice(uuid);
        }
    }
}

#[cfg(test)]
#[path = "event_stream_tests.rs"]
mod tests;
