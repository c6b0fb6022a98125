//! Reads the frame lines tooltap writes without serde: `{"type":"frame","seq":N,"t_us":N,
//! "text":"…"}` (or `"base64":"…"`), keys in that order and nothing else on the line.
//!
//! Input: one line of a recording that is UTF-8 text. Output: the [`FrameLine`] serde would read
//! from it, or `None` for anything this path does not take (another key order, white space, a
//! number that is not a plain integer, an escape or control character JSON does not allow, a
//! lone surrogate); the caller then reads the line with serde, which also words the errors.
//! Why: a frame's text is the body as a JSON string, whose escaped quotes serde_json stops at
//! one by one, and whose scratch buffer it grows again for every line: a large share of
//! `tooltap check`'s work (see docs/benchmarks.md#check-reading).

use super::format::{FrameData, FrameLine};
use crate::engine::json_scan::{plain_integer, string_body};

const PREFIX: &str = r#"{"type":"frame","seq":"#;

/// The frame line `line`, or `None` when this path does not take it (see the module doc).
pub fn read(line: &str) -> Option<FrameLine> {
    let rest = line.strip_prefix(PREFIX)?;
    let (seq, rest) = plain_integer(rest)?;
    let rest = rest.strip_prefix(r#","t_us":"#)?;
    let (t_us, rest) = plain_integer(rest)?;
    let (is_text, rest) = match rest.strip_prefix(r#","text":""#) {
        Some(rest) => (true, rest),
        None => (false, rest.strip_prefix(r#","base64":""#)?),
    };
    let (value, used) = string_body(rest)?;
    if &rest[used..] != "}" {
        return None;
    }
    let data = if is_text {
        FrameData::Text(value)
    } else {
        FrameData::Base64(value)
    };
    Some(FrameLine { seq, t_us, data })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What serde reads from the line, as `read` must give it when it takes the line.
    fn by_serde(line: &str) -> Option<FrameLine> {
        match serde_json::from_str::<super::super::format::Line>(line) {
            Ok(super::super::format::Line::Frame(frame)) => Some(frame),
            _ => None,
        }
    }

    fn written(text: &str) -> String {
        let frame = FrameLine {
            seq: 7,
            t_us: 12_345,
            data: FrameData::Text(text.to_owned()),
        };
        serde_json::to_string(&super::super::format::Line::Frame(frame)).unwrap()
    }

    #[test]
    fn the_lines_tooltap_writes_are_read_as_serde_reads_them() {
        let texts = [
            "",
            "data: {\"a\":\"b\\\\c\"}\n\n",
            "tab\there, cr\r, nul \u{0}, bell \u{7}, del \u{7f}",
            "caf\u{e9} \u{1F600} \u{2028}",
            "\"\"\\\\//",
        ];
        for text in texts {
            let line = written(text);
            assert_eq!(read(&line), by_serde(&line), "{line}");
            assert!(read(&line).is_some(), "the fast path must take {line}");
        }
        let base64 = r#"{"type":"frame","seq":0,"t_us":0,"base64":"/w=="}"#;
        assert_eq!(read(base64), by_serde(base64));
        assert!(read(base64).is_some());
    }

    #[test]
    fn escapes_serde_takes_decode_the_same_and_the_rest_is_left_to_serde() {
        let line = |body: &str| format!(r#"{{"type":"frame","seq":1,"t_us":2,"text":"{body}"}}"#);
        let taken = [
            r"\/\b\f\n\r\t",
            r"\u0041\u00e9\u00E9\u20AC",
            r"\uD83D\uDE00 \ud83d\ude00",
            r"\u0000",
        ];
        for body in taken {
            let line = line(body);
            assert!(read(&line).is_some(), "{line}");
            assert_eq!(read(&line), by_serde(&line), "{line}");
        }
        // Not taken: serde decides (and refuses all of these but the white space variants and
        // the unknown member).
        let left = [
            line(r"\x"),
            line(r"\u12"),
            line(r"\u+123"),
            line(r"\uDE00"),
            line(r"\uD83D"),
            line(r"\uD83D\u0041"),
            line("raw\ttab"),
            line(r"unterminated\"),
            r#"{"type":"frame","seq":01,"t_us":2,"text":"a"}"#.to_owned(),
            r#"{"type":"frame","seq":1.0,"t_us":2,"text":"a"}"#.to_owned(),
            r#"{"type":"frame","seq":18446744073709551616,"t_us":2,"text":"a"}"#.to_owned(),
            r#"{"type":"frame","seq":1,"t_us":2,"text":"a"} "#.to_owned(),
            r#"{"type":"frame","seq":1, "t_us":2,"text":"a"}"#.to_owned(),
            r#"{"type":"frame","seq":1,"t_us":2,"text":"a","x":1}"#.to_owned(),
            r#"{"type":"frame","seq":1,"t_us":2,"base64":1}"#.to_owned(),
        ];
        for line in &left {
            assert_eq!(read(line), None, "{line}");
        }
        let serde_takes: Vec<&String> = left.iter().filter(|l| by_serde(l).is_some()).collect();
        assert_eq!(
            serde_takes.len(),
            3,
            "white space, unknown member: {serde_takes:?}"
        );
    }

    proptest! {
        #[test]
        fn any_text_written_is_read_back_exactly(text in any::<String>(), seq: u64, t_us: u64) {
            let frame = FrameLine { seq, t_us, data: FrameData::Text(text) };
            let line = serde_json::to_string(&super::super::format::Line::Frame(frame.clone()))
                .unwrap();
            prop_assert_eq!(read(&line), Some(frame));
        }
    }
}
