//! Writing cassettes: a small YAML emitter for exactly what a cassette holds, in the form
//! PyYAML (vcrpy's loader, YAML 1.1) and YAML 1.2 readers read back to the same bytes.
//!
//! Input: keys, strings, numbers, byte bodies and JSON values. Output: block-style YAML text.
//! Strings are double-quoted with every character outside printable ASCII escaped (`\n`,
//! `\u2028`, `\U0001F600`), because PyYAML folds a raw NEL, LS or PS into a line break. A body
//! is a literal block (`|+` keeps every trailing newline, `|-` when there is none) when that is
//! exact: no CR (a YAML reader turns CRLF into LF), no character a reader refuses or folds, and
//! a first line that does not start with a space (the block's indentation is read from it);
//! else a quoted string; bytes that are not UTF-8 are `!!binary` base64.

use std::fmt::Write as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

/// Appends YAML text; `indent` is the column of the keys being written.
#[derive(Default)]
pub struct Emitter {
    pub out: String,
}

impl Emitter {
    fn pad(&mut self, indent: usize) {
        self.out.extend(std::iter::repeat_n(' ', indent));
    }

    /// `key:` opening a nested block.
    pub fn open(&mut self, indent: usize, key: &str) {
        self.pad(indent);
        self.out.push_str(&quoted_key(key));
        self.out.push_str(":\n");
    }

    /// `key: "value"`.
    pub fn string(&mut self, indent: usize, key: &str, value: &str) {
        self.pad(indent);
        let _ = writeln!(self.out, "{}: {}", quoted_key(key), quoted(value));
    }

    /// `key: 200`.
    pub fn number(&mut self, indent: usize, key: &str, value: u64) {
        self.pad(indent);
        let _ = writeln!(self.out, "{}: {value}", quoted_key(key));
    }

    /// `key: null`.
    pub fn null(&mut self, indent: usize, key: &str) {
        self.pad(indent);
        let _ = writeln!(self.out, "{}: null", quoted_key(key));
    }

    /// `key: [values]` as a block sequence of strings (an empty one as `[]`).
    pub fn strings(&mut self, indent: usize, key: &str, values: &[&str]) {
        self.pad(indent);
        if values.is_empty() {
            let _ = writeln!(self.out, "{}: []", quoted_key(key));
            return;
        }
        let _ = writeln!(self.out, "{}:", quoted_key(key));
        for value in values {
            self.pad(indent);
            let _ = writeln!(self.out, "- {}", quoted(value));
        }
    }

    /// `key: <body>`: a literal block when exact, else a quoted string, else `!!binary`.
    pub fn bytes(&mut self, indent: usize, key: &str, body: &[u8]) {
        self.pad(indent);
        let key = quoted_key(key);
        let Ok(text) = std::str::from_utf8(body) else {
            let _ = writeln!(self.out, "{key}: !!binary |");
            let encoded = BASE64.encode(body);
            for line in encoded.as_bytes().chunks(76) {
                self.pad(indent + 2);
                self.out.push_str(&String::from_utf8_lossy(line));
                self.out.push('\n');
            }
            return;
        };
        if !literal_is_exact(text) {
            let _ = writeln!(self.out, "{key}: {}", quoted(text));
            return;
        }
        let chomp = if text.ends_with('\n') { '+' } else { '-' };
        let _ = writeln!(self.out, "{key}: |{chomp}");
        for line in text.split_inclusive('\n') {
            let content = line.strip_suffix('\n').unwrap_or(line);
            if !content.is_empty() {
                self.pad(indent + 2);
                self.out.push_str(content);
            }
            self.out.push('\n');
        }
    }

    /// `key:` and a JSON value as block YAML (objects and arrays nested, scalars inline).
    pub fn json(&mut self, indent: usize, key: &str, value: &serde_json::Value) {
        use serde_json::Value;
        self.pad(indent);
        let key = quoted_key(key);
        match value {
            Value::Object(map) if !map.is_empty() => {
                let _ = writeln!(self.out, "{key}:");
                for (name, inner) in map {
                    self.json(indent + 2, name, inner);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                let _ = writeln!(self.out, "{key}:");
                for inner in items {
                    self.json_item(indent + 2, inner);
                }
            }
            scalar => {
                let _ = writeln!(self.out, "{key}: {}", json_scalar(scalar));
            }
        }
    }

    fn json_item(&mut self, indent: usize, value: &serde_json::Value) {
        use serde_json::Value;
        self.pad(indent);
        match value {
            Value::Object(map) if !map.is_empty() => {
                self.out.push_str("-\n");
                for (name, inner) in map {
                    self.json(indent + 2, name, inner);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                self.out.push_str("-\n");
                for inner in items {
                    self.json_item(indent + 2, inner);
                }
            }
            scalar => {
                let _ = writeln!(self.out, "- {}", json_scalar(scalar));
            }
        }
    }
}

/// A JSON scalar (or empty collection) as YAML.
fn json_scalar(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => quoted(s),
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

/// A key as it can stand plain (letters, digits, `_`, `-`, `.` and not starting like a
/// number or an indicator), else quoted.
fn quoted_key(key: &str) -> String {
    let plain = key
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        && key.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && !matches!(
            key.to_ascii_lowercase().as_str(),
            "null" | "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n"
        );
    if plain { key.to_owned() } else { quoted(key) }
}

/// A double-quoted YAML string that every reader takes back to the same text.
pub fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            ' '..='~' => out.push(c),
            c if (c as u32) <= 0xff => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c if (c as u32) <= 0xffff => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08X}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// Whether a literal block reads back as exactly `text` (see the module doc).
fn literal_is_exact(text: &str) -> bool {
    let starts_well = text
        .chars()
        .next()
        .is_some_and(|c| c != ' ' && c != '\n' && c != '\t');
    starts_well
        && text.chars().all(|c| match c {
            '\n' | '\t' => true,
            ' '..='~' => true,
            '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' => {
                !matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')
            }
            c => (c as u32) >= 0x10000,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interop::yaml_read::{Node, load};

    fn round_trip(body: &[u8]) -> Vec<u8> {
        let mut emitter = Emitter::default();
        emitter.open(0, "response");
        emitter.bytes(2, "string", body);
        emitter.number(2, "after", 1);
        let docs = load(&emitter.out).unwrap();
        let Some(Node::Scalar(scalar)) = docs[0].get("response").and_then(|r| r.get("string"))
        else {
            panic!("no string in {}", emitter.out)
        };
        assert_eq!(
            docs[0]
                .get("response")
                .and_then(|r| r.get("after"))
                .and_then(Node::as_u64),
            Some(1)
        );
        if scalar.core_tag.as_deref() == Some("binary") {
            let clean: String = scalar.text.split_whitespace().collect();
            return BASE64.decode(clean).unwrap();
        }
        scalar.text.as_bytes().to_vec()
    }

    #[test]
    fn bodies_come_back_byte_for_byte() {
        let bodies: [&[u8]; 12] = [
            b"data: {\"a\":1}\n\ndata: [DONE]\n\n",
            b"data: x\r\n\r\n",
            b"{\"a\": \"\xe2\x80\xa8 line sep\"}",
            b"  leading spaces\n",
            b"no newline at end",
            b"trailing spaces   \n   \n\n\n",
            b"",
            b"\n\nstarts blank",
            b"\xff\xfe binary \x00",
            b"tab\there \"quotes\" \\ back \xf0\x9f\x98\x80 emoji \xc2\x85 nel",
            b": ping\n\nevent: x\ndata: {}\n\n",
            b"---\n...\n# not a comment\n",
        ];
        for body in bodies {
            assert_eq!(
                round_trip(body),
                body,
                "{:?}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn json_values_come_back() {
        let value = serde_json::json!({"v": 1, "frames": [[0, 10], [5, 3]], "empty": [],
            "s": "a\"b", "null": null, "nested": {"x": [true, 1.5]}, "o": {}});
        let mut emitter = Emitter::default();
        emitter.json(0, "x_tooltap", &value);
        let docs = load(&emitter.out).unwrap();
        assert_eq!(docs[0].get("x_tooltap").unwrap().to_json(), value);
    }
}
