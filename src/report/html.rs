//! The page: a fixed HTML shell with the stylesheet and script inlined, and the data embedded
//! as JSON that no byte sequence inside it can end early.
//!
//! Input: [`ReportData`]. Output: the page's text. The JSON goes into
//! `<script type="application/json" id="tooltap-data">`; every `<`, `>` and `&` in it is written
//! as a `\u00XX` escape (valid JSON, identical after `JSON.parse`), so a recorded `</script>` or
//! `<!--` cannot close or confuse the element. The page is written as it is serialized: neither
//! the JSON nor the page is ever held whole.

use std::io::{self, Write};

use super::ReportData;

const SHELL: &str = include_str!("assets/report.html");
const STYLE: &str = include_str!("assets/report.css");
const SCRIPT: &str = include_str!("assets/report.js");

/// Renders the page into a string.
pub fn render(data: &ReportData) -> Result<String, serde_json::Error> {
    let mut page = Vec::new();
    write_page(data, &mut page).map_err(serde_json::Error::io)?;
    String::from_utf8(page).map_err(|error| serde_json::Error::io(io::Error::other(error)))
}

/// Writes the page to `out`, the data serialized straight through the escaping writer.
pub fn write_page(data: &ReportData, out: &mut dyn Write) -> io::Result<()> {
    let mut parts = SHELL.splitn(2, "{/*DATA*/}");
    let head = parts.next().unwrap_or_default();
    let tail = parts.next().unwrap_or_default();
    out.write_all(
        head.replacen("/*STYLE*/", STYLE, 1)
            .replacen("/*SCRIPT*/", SCRIPT, 1)
            .as_bytes(),
    )?;
    let mut escaping = Escaping {
        out,
        held: Vec::new(),
    };
    serde_json::to_writer(&mut escaping, data)?;
    escaping.finish()?;
    out.write_all(
        tail.replacen("/*STYLE*/", STYLE, 1)
            .replacen("/*SCRIPT*/", SCRIPT, 1)
            .as_bytes(),
    )
}

/// Writes JSON through to `out` with `<`, `>`, `&` and U+2028/9 (for old parsers) as `\u`
/// escapes; the first bytes of a U+2028/9 split between two writes are held until the next.
struct Escaping<'a> {
    out: &'a mut dyn Write,
    held: Vec<u8>,
}

impl Escaping<'_> {
    fn finish(&mut self) -> io::Result<()> {
        let held = std::mem::take(&mut self.held);
        self.out.write_all(&held)
    }
}

impl Write for Escaping<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut bytes = std::mem::take(&mut self.held);
        bytes.extend_from_slice(buf);
        // A trailing E2 or E2 80 may begin a separator: keep it for the next write.
        let keep = match bytes.as_slice() {
            [.., 0xE2] => 1,
            [.., 0xE2, 0x80] => 2,
            _ => 0,
        };
        let (text, rest) = bytes.split_at(bytes.len() - keep);
        let mut from = 0;
        let mut at = 0;
        while at < text.len() {
            let escape: Option<(&[u8], usize)> = match text[at] {
                b'<' => Some((b"\\u003c", 1)),
                b'>' => Some((b"\\u003e", 1)),
                b'&' => Some((b"\\u0026", 1)),
                0xE2 if text[at..].starts_with(&[0xE2, 0x80, 0xA8]) => Some((b"\\u2028", 3)),
                0xE2 if text[at..].starts_with(&[0xE2, 0x80, 0xA9]) => Some((b"\\u2029", 3)),
                _ => None,
            };
            match escape {
                Some((with, len)) => {
                    self.out.write_all(&text[from..at])?;
                    self.out.write_all(with)?;
                    at += len;
                    from = at;
                }
                None => at += 1,
            }
        }
        self.out.write_all(&text[from..])?;
        self.held = rest.to_vec();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The escapes [`Escaping`] writes, on a whole string: the reference it is tested against.
    pub fn escape_json_for_script(json: &str) -> String {
        let mut out = String::with_capacity(json.len() + json.len() / 16);
        for c in json.chars() {
            match c {
                '<' => out.push_str("\\u003c"),
                '>' => out.push_str("\\u003e"),
                '&' => out.push_str("\\u0026"),
                '\u{2028}' => out.push_str("\\u2028"),
                '\u{2029}' => out.push_str("\\u2029"),
                c => out.push(c),
            }
        }
        out
    }

    #[test]
    fn script_closers_cannot_escape_the_data_element() {
        let json = serde_json::to_string(&serde_json::json!({"t": "</script><!-- a&b \u{2028}"}))
            .unwrap_or_default();
        let escaped = escape_json_for_script(&json);
        assert!(!escaped.contains('<') && !escaped.contains('>'));
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap_or_default();
        assert_eq!(back["t"], "</script><!-- a&b \u{2028}");
    }

    #[test]
    fn the_streaming_writer_escapes_as_the_function_does_across_any_split() {
        let json = serde_json::to_string(&serde_json::json!({"t": "a<b>&\u{2028}c\u{2029}é"}))
            .unwrap_or_default();
        for split in 0..=json.len() {
            let mut out = Vec::new();
            let mut escaping = Escaping {
                out: &mut out,
                held: Vec::new(),
            };
            let (a, b) = json.as_bytes().split_at(split);
            let _ = escaping.write_all(a);
            let _ = escaping.write_all(b);
            let _ = escaping.finish();
            assert_eq!(
                out,
                escape_json_for_script(&json).into_bytes(),
                "split at {split}"
            );
        }
    }

    #[test]
    fn the_page_has_no_external_reference() {
        let page = render(&ReportData {
            generated_by: "t".into(),
            exchanges: Vec::new(),
            tools: Default::default(),
            pointers: Default::default(),
            unreadable: Vec::new(),
            skipped: Vec::new(),
            omitted: 0,
            cut: Default::default(),
            mcp: Vec::new(),
            filter_aliases: crate::report::filter_aliases(),
        })
        .unwrap_or_default();
        assert!(page.contains("id=\"tooltap-data\""));
        for needle in ["http://", "https://", "src=\"", "@import", "url("] {
            assert!(!page.contains(needle), "{needle} in the page");
        }
    }
}
