//! An incremental Server-Sent Events framer per the HTML living standard.
//!
//! Input: decoded response body bytes in arbitrary splits (a line, a CRLF pair or a UTF-8 code
//! point may straddle two pushes). Output: [`SseEvent`]s, dispatched on each blank line.
//! Lines end in CRLF, LF or CR; `:` starts a comment; several `data:` lines join with `\n`; one
//! space after the colon is stripped; a field without a colon has an empty value; a leading BOM
//! is skipped. Only complete lines are decoded, so split code points survive. Every buffer is
//! bounded by `max_line`. Public so the proxy's enforce mode can reuse it.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when one was given.
    pub event: Option<String>,
    /// The joined `data:` lines.
    pub data: String,
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
    partial_line: Vec<u8>,
    /// The previous push ended in CR, so a leading LF of the next push ends nothing.
    skip_next_lf: bool,
    at_stream_start: bool,
    data: String,
    has_data: bool,
    event: Option<String>,
    comments: u64,
}

impl SseFramer {
    pub fn new(max_line: usize) -> SseFramer {
        SseFramer {
            max_line,
            partial_line: Vec::new(),
            skip_next_lf: false,
            at_stream_start: true,
            data: String::new(),
            has_data: false,
            event: None,
            comments: 0,
        }
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
        while let Some(end) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
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
                let mut whole = std::mem::take(&mut self.partial_line);
                whole.extend_from_slice(line_bytes);
                self.line(&whole, events)?;
                whole.clear();
                self.partial_line = whole;
            }
            bytes = rest;
        }
        self.check_len(self.partial_line.len() + bytes.len())?;
        self.partial_line.extend_from_slice(bytes);
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
        let text = String::from_utf8_lossy(raw);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
                self.check_len(0)?;
            }
            "event" => self.event = Some(value.to_owned()),
            // `id` and `retry` steer reconnection, which a one-shot completion never does.
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, events: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if !self.has_data {
            self.data.clear();
            return;
        }
        self.has_data = false;
        let mut data = std::mem::take(&mut self.data);
        data.pop(); // the `\n` appended after the last data line
        events.push(SseEvent { event, data });
    }
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
