//! An incremental Server-Sent Events framer per the HTML living standard.
//!
//! Input: decoded response body bytes in arbitrary splits (a line, a CRLF pair or a UTF-8 code
//! point may straddle two pushes). Output: [`SseEvent`]s, dispatched on each blank line.
//! Lines end in CRLF, LF or CR; `:` starts a comment; several `data:` lines join with `\n`; one
//! space after the colon is stripped; a field without a colon has an empty value; a leading BOM
//! is skipped. Only complete lines are decoded, so split code points survive. Every buffer is
//! bounded by `max_line`; a line that straddles pushes is held in a [`LineBuffer`] (a long one
//! does not move as it grows). Public so the proxy's enforce mode can reuse it.

use super::line_buffer::LineBuffer;

/// The data buffer kept between events: larger ones are given back after their event.
const KEPT_DATA_CAPACITY: usize = 4 * 1024;

/// The line buffer kept between lines: larger ones (a long line split across pushes grew it)
/// are given back once their line is read.
const KEPT_LINE_CAPACITY: usize = 4 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when one was given.
    pub event: Option<String>,
    /// The joined `data:` lines.
    pub data: String,
    /// The event's own `id:` field, when it gave one (MCP's resumable streams number their
    /// events; a one-shot completion never reads it).
    pub id: Option<String>,
}

/// A line or event grew past the configured bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an SSE line or event exceeded {limit} bytes")]
pub struct LineTooLong {
    pub limit: usize,
}

/// Incremental SSE parser state.
#[derive(Debug)]
pub struct SseFramer {
    max_line: usize,
    /// Bytes of the current, not yet terminated line.
    partial_line: LineBuffer,
    /// The previous push ended in CR, so a leading LF of the next push ends nothing.
    skip_next_lf: bool,
    at_stream_start: bool,
    data: String,
    has_data: bool,
    event: Option<String>,
    id: Option<String>,
    comments: u64,
}

impl SseFramer {
    pub fn new(max_line: usize) -> SseFramer {
        SseFramer {
            max_line,
            partial_line: LineBuffer::default(),
            skip_next_lf: false,
            at_stream_start: true,
            data: String::new(),
            has_data: false,
            event: None,
            id: None,
            comments: 0,
        }
    }

    /// What it holds between pushes: the unterminated line and the event being built (their
    /// buffers' capacities).
    pub fn held_bytes(&self) -> usize {
        let field = |text: &Option<String>| text.as_ref().map_or(0, String::capacity);
        self.partial_line.capacity() + self.data.capacity() + field(&self.event) + field(&self.id)
    }

    /// Consumes `bytes`, appending every event they complete to `events`.
    pub fn push(
        &mut self,
        mut bytes: &[u8],
        events: &mut Vec<SseEvent>,
    ) -> Result<(), LineTooLong> {
        if self.skip_next_lf && !bytes.is_empty() {
            self.skip_next_lf = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) {
            let line_bytes = &bytes[..end];
            let ending_in_cr = bytes[end] == b'\r';
            let mut rest = &bytes[end + 1..];
            if ending_in_cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.skip_next_lf = true,
                }
            }
            if self.partial_line.is_empty() {
                self.check_len(line_bytes.len())?;
                self.line(line_bytes, events)?;
            } else {
                self.check_len(self.partial_line.len() + line_bytes.len())?;
                let mut partial = std::mem::take(&mut self.partial_line);
                let whole = partial.whole(line_bytes);
                let read = self.line(&whole, events);
                drop(whole);
                partial.clear(KEPT_LINE_CAPACITY);
                self.partial_line = partial;
                read?;
            }
            bytes = rest;
        }
        self.check_len(self.partial_line.len() + bytes.len())?;
        self.partial_line.extend(bytes);
        Ok(())
    }

    /// Whether bytes of an unfinished line or event are pending (the body ended mid-event).
    pub fn has_pending(&self) -> bool {
        !self.partial_line.is_empty() || self.has_data
    }

    /// Comment lines seen so far (`: ping` keep-alives and the like).
    pub fn comments(&self) -> u64 {
        self.comments
    }

    fn check_len(&self, len: usize) -> Result<(), LineTooLong> {
        if len > self.max_line || self.data.len() > self.max_line {
            return Err(LineTooLong {
                limit: self.max_line,
            });
        }
        Ok(())
    }

    fn line(&mut self, raw: &[u8], events: &mut Vec<SseEvent>) -> Result<(), LineTooLong> {
        let mut raw = raw;
        if self.at_stream_start {
            self.at_stream_start = false;
            raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
        }
        if raw.is_empty() {
            self.dispatch(events);
            return Ok(());
        }
        if raw[0] == b':' {
            self.comments += 1;
            return Ok(());
        }
        // The field name is ASCII when it is one we read: split on the byte, decode the value
        // alone (valid UTF-8, the common case, is borrowed rather than copied).
        let (field, value) = match memchr::memchr(b':', raw) {
            Some(colon) => {
                let value = &raw[colon + 1..];
                (&raw[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (raw, &b""[..]),
        };
        match field {
            b"data" => {
                // `from_utf8` first: its ASCII fast path is cheaper than `from_utf8_lossy`'s
                // chunked scan, for the same result (see docs/benchmarks.md#sse-data-utf8).
                match std::str::from_utf8(value) {
                    Ok(text) => self.data.push_str(text),
                    Err(_) => self.data.push_str(&String::from_utf8_lossy(value)),
                }
                self.data.push('\n');
                self.has_data = true;
                self.check_len(0)?;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            b"id" => self.id = Some(String::from_utf8_lossy(value).into_owned()),
            // `retry` steers reconnection, which the engine never does.
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, events: &mut Vec<SseEvent>) {
        let event = self.event.take();
        let id = self.id.take();
        if !self.has_data {
            self.data.clear();
            return;
        }
        self.has_data = false;
        // One allocation of the exact size; the framer keeps its buffer for the next event,
        // unless a large event grew it (what a stream holds between events stays small).
        let data = self.data[..self.data.len() - 1].to_owned(); // drop the last line's `\n`
        if self.data.capacity() > KEPT_DATA_CAPACITY {
            self.data = String::new();
        } else {
            self.data.clear();
        }
        events.push(SseEvent { event, data, id });
    }
}

/// Where each SSE event of `body` ends: after each blank line (CR, LF or CRLF line ends), and
/// at the body's end when bytes follow the last blank line. Empty for an empty body.
pub fn event_ends(body: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let (mut frame_start, mut line_start, mut i) = (0, 0, 0);
    while i < body.len() {
        if body[i] == b'\n' || body[i] == b'\r' {
            let blank = i == line_start;
            if body[i] == b'\r' && body.get(i + 1) == Some(&b'\n') {
                i += 1;
            }
            i += 1;
            line_start = i;
            if blank {
                ends.push(i);
                frame_start = i;
            }
        } else {
            i += 1;
        }
    }
    if frame_start < body.len() {
        ends.push(body.len());
    }
    ends
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(chunks: &[&[u8]]) -> (Vec<SseEvent>, bool) {
        let mut framer = SseFramer::new(1024);
        let mut events = Vec::new();
        for chunk in chunks {
            framer.push(chunk, &mut events).expect("within bounds");
        }
        (events, framer.has_pending())
    }

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn handles_every_line_ending_and_comment() {
        let (events, pending) = frame(&[b"data: a\r\n\r\n: ping\n\ndata: b\r\rdata:c\n\n"]);
        assert_eq!(data(&events), ["a", "b", "c"]);
        assert!(!pending);
    }

    #[test]
    fn joins_data_lines_and_reads_fields_without_colon() {
        let (events, _) = frame(&[b"\xEF\xBB\xBFevent: error\ndata: x\ndata:  y\ndata\n\n"]);
        assert_eq!(events[0].event.as_deref(), Some("error"));
        assert_eq!(events[0].data, "x\n y\n");
    }

    /// The field and value of a line as the standard reads them: decode the whole line (invalid
    /// bytes become U+FFFD), then split at the first colon. The framer splits the bytes first.
    fn by_whole_line(line: &[u8]) -> (String, String) {
        let text = String::from_utf8_lossy(line);
        let (field, value) = text.split_once(':').unwrap_or((text.as_ref(), ""));
        (
            field.to_owned(),
            value.strip_prefix(' ').unwrap_or(value).to_owned(),
        )
    }

    #[test]
    fn invalid_utf8_decodes_as_if_the_whole_line_were_decoded_first() {
        let lines: [&[u8]; 8] = [
            b"data: \xff x",
            b"data:\xc3",
            b"data: \xe2\x82: y",
            b"da\xffta: z",
            b"data\xc3: w",
            b"event:\xe9rror",
            b"event: \xf0\x9f\x98",
            b"data",
        ];
        for line in lines {
            let (field, value) = by_whole_line(line);
            let mut bytes = line.to_vec();
            bytes.extend_from_slice(b"\n\n");
            let (events, _) = frame(&[&bytes]);
            match field.as_str() {
                "data" => assert_eq!(data(&events), [value.as_str()], "{line:?}"),
                "event" => assert!(events.is_empty(), "{line:?}: an event without data"),
                _ => assert!(events.is_empty(), "{line:?}: field {field:?} is not read"),
            }
            let mut with_data = line.to_vec();
            with_data.extend_from_slice(b"\ndata: d\n\n");
            let (events, _) = frame(&[&with_data]);
            let event = (field == "event").then_some(value.as_str());
            assert_eq!(events[0].event.as_deref(), event, "{line:?}");
        }
    }

    #[test]
    fn a_large_event_does_not_leave_a_large_buffer_behind() {
        let mut framer = SseFramer::new(1 << 20);
        let mut events = Vec::new();
        let big = format!("data: {}\n\n", "x".repeat(64 * 1024));
        framer
            .push(big.as_bytes(), &mut events)
            .expect("within bounds");
        assert_eq!(events[0].data.len(), 64 * 1024);
        assert!(framer.data.capacity() <= KEPT_DATA_CAPACITY);
        framer
            .push(b"data: small\n\n", &mut events)
            .expect("within bounds");
        assert_eq!(events[1].data, "small");
        assert!(framer.data.capacity() > 0, "a small event's buffer is kept");
    }

    #[test]
    fn a_large_line_split_across_pushes_does_not_leave_a_large_buffer_behind() {
        let mut framer = SseFramer::new(8 << 20);
        let mut events = Vec::new();
        let big = format!("data: {}\n\n", "x".repeat(4 << 20));
        for piece in big.as_bytes().chunks(1024) {
            framer.push(piece, &mut events).expect("within bounds");
        }
        assert_eq!(events[0].data.len(), 4 << 20);
        assert!(framer.partial_line.capacity() <= KEPT_LINE_CAPACITY);
        for piece in [&b"data: sm"[..], b"all\n\n"] {
            framer.push(piece, &mut events).expect("within bounds");
        }
        assert_eq!(events[1].data, "small");
        assert!(
            framer.partial_line.capacity() > 0,
            "a short line's buffer is kept"
        );
    }

    #[test]
    fn crlf_and_code_points_split_across_pushes() {
        let bytes = "data: h\u{e9}\r\n\r\n".as_bytes();
        for cut in 0..bytes.len() {
            let (events, pending) = frame(&[&bytes[..cut], &bytes[cut..]]);
            assert_eq!(data(&events), ["h\u{e9}"], "cut at {cut}");
            assert!(!pending);
        }
    }

    #[test]
    fn unterminated_event_is_pending_and_lines_are_bounded() {
        let (events, pending) = frame(&[b"data: {\"a\"\n"]);
        assert!(events.is_empty() && pending);
        let mut framer = SseFramer::new(8);
        let mut events = Vec::new();
        assert!(framer.push(b"data: 0123456789", &mut events).is_err());
    }
}
