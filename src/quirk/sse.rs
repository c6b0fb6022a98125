//! Cutting a stream's bytes into whole SSE events, keeping each event's exact bytes.
//!
//! Input: response body bytes (one buffer, or the bytes held so far of a live stream). Output:
//! [`Event`]s: the raw bytes of one event up to and including its blank line, its joined
//! `data:` text parsed as JSON, `[DONE]`, or neither (comments, keep-alives), and the line
//! ending it used, so a rewritten event is written back in the same style. An event the quirk
//! leaves alone is re-sent from its raw bytes, never re-serialized.

use serde_json::Value;

/// What an event carries.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    Json(Value),
    Done,
    /// No data lines, or data that is not JSON: always passed through untouched.
    Other,
}

/// One complete event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub raw: Vec<u8>,
    pub data: Data,
    pub eol: &'static str,
}

impl Event {
    /// Classify the raw bytes of one event.
    pub fn parse(raw: Vec<u8>) -> Event {
        let eol = line_ending(&raw);
        let mut data: Option<String> = None;
        let text = String::from_utf8_lossy(&raw);
        for line in text.split(['\r', '\n']) {
            if let Some(rest) = line.strip_prefix("data:") {
                let rest = rest.strip_prefix(' ').unwrap_or(rest);
                match &mut data {
                    Some(joined) => {
                        joined.push('\n');
                        joined.push_str(rest);
                    }
                    None => data = Some(rest.to_owned()),
                }
            }
        }
        let data = match data {
            Some(text) if text.trim() == "[DONE]" => Data::Done,
            Some(text) => serde_json::from_str(&text).map_or(Data::Other, Data::Json),
            None => Data::Other,
        };
        Event { raw, data, eol }
    }

    /// A new `data:` event in this event's line-ending style.
    pub fn json_bytes(value: &Value, eol: &str) -> Vec<u8> {
        format!("data: {value}{eol}{eol}").into_bytes()
    }

    /// This event with its data replaced by `value`: its other lines (`event:`, `id:`,
    /// comments) keep their place, its data lines become one.
    pub fn with_data(&self, value: &Value) -> Vec<u8> {
        let text = String::from_utf8_lossy(&self.raw);
        let mut out = String::new();
        let mut data_written = false;
        for line in text.split(['\r', '\n']).filter(|line| !line.is_empty()) {
            if line.starts_with("data:") {
                if !data_written {
                    out.push_str(&format!("data: {value}{}", self.eol));
                    data_written = true;
                }
            } else {
                out.push_str(line);
                out.push_str(self.eol);
            }
        }
        out.push_str(self.eol);
        out.into_bytes()
    }
}

fn line_ending(raw: &[u8]) -> &'static str {
    match raw.iter().position(|&b| b == b'\r' || b == b'\n') {
        Some(at) if raw[at] == b'\n' => "\n",
        Some(at) if raw.get(at + 1) == Some(&b'\n') => "\r\n",
        Some(_) => "\r",
        None => "\n",
    }
}

/// The byte ranges `[start, end)` of the complete events in `buf`, in order and contiguous from
/// 0. The bytes after the last returned `end` are an unfinished event. A CR as the very last
/// byte may be half of a CRLF, so it only ends a line when `at_end` says no more bytes come.
pub fn event_ranges(buf: &[u8], at_end: bool) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut start = 0;
    let mut line_start = 0;
    let mut at = 0;
    while at < buf.len() {
        let end_of_line = match buf[at] {
            b'\n' => Some(at + 1),
            b'\r' if at + 1 < buf.len() => Some(if buf[at + 1] == b'\n' { at + 2 } else { at + 1 }),
            b'\r' if at_end => Some(at + 1),
            b'\r' => break,
            _ => None,
        };
        match end_of_line {
            Some(next) => {
                let empty_line = at == line_start;
                if empty_line {
                    ranges.push((start, next));
                    start = next;
                }
                line_start = next;
                at = next;
            }
            None => at += 1,
        }
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_end_at_blank_lines_in_any_line_ending() {
        let buf = b"data: {\"a\":1}\n\n: ping\r\n\r\ndata: [DONE]\r\rdata: {\"b\"";
        let ranges = event_ranges(buf, false);
        assert_eq!(ranges, [(0, 15), (15, 25), (25, 39)]);
        let events: Vec<Event> = ranges
            .iter()
            .map(|&(s, e)| Event::parse(buf[s..e].to_vec()))
            .collect();
        assert_eq!(events[0].data, Data::Json(serde_json::json!({"a": 1})));
        assert_eq!(events[1].data, Data::Other);
        assert_eq!(events[1].eol, "\r\n");
        assert_eq!(events[2].data, Data::Done);
        assert_eq!(events[2].eol, "\r");
    }

    #[test]
    fn with_data_keeps_the_event_line() {
        let event = Event::parse(b"event: x\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n".to_vec());
        assert_eq!(
            event.with_data(&serde_json::json!({"a": 2})),
            b"event: x\r\ndata: {\"a\":2}\r\n\r\n"
        );
    }

    #[test]
    fn a_trailing_cr_waits_for_the_next_byte_unless_at_the_end() {
        let buf = b"data: [DONE]\r\n\r";
        assert!(event_ranges(buf, false).is_empty());
        assert_eq!(event_ranges(buf, true), [(0, 15)]);
    }
}
