//! Reads the exchange lines tooltap writes without serde's derived machinery: the [`Meta`] as
//! serialised by the writer, keys in its order (`type`, `v`, `id`, `started`, `route`,
//! `upstream`, `method`, `path`, optional `dialect` and `query`, `request`, `response`,
//! `redacted`), no white space, nothing else on the line.
//!
//! Input: one line of a recording that is UTF-8 text. Output: the [`Meta`] serde would read
//! from it, or `None` for anything this path does not take (another key order or an unknown
//! key, white space, a body kind written another way, a number that is not a plain integer, an
//! escape JSON does not allow); the caller then reads the line with serde, which also words the
//! errors. The request body's JSON is read by serde_json alone, as the `RawValue` it is.
//! Why: through serde the exchange line is a large share of what `tooltap check` spends on a
//! recording (see docs/benchmarks.md#check-reading): a derived visitor per struct, a scratch
//! buffer per string and a generic skip over the request body.

use serde_json::value::RawValue;

use super::format::{Meta, RecordedBody, RequestPart, ResponsePart};
use crate::engine::Dialect;
use crate::engine::json_scan::{plain_integer, string_body};

/// The meta of exchange line `line`, or `None` when this path does not take it.
pub fn read(line: &str) -> Option<Meta> {
    let mut at = Cursor(line);
    at.literal(r#"{"type":"exchange","v":"#)?;
    let v = u32::try_from(at.integer()?).ok()?;
    let id = at.member_string(r#","id":"#)?;
    let started = at.member_string(r#","started":"#)?;
    let route = at.member_string(r#","route":"#)?;
    let upstream = at.member_string(r#","upstream":"#)?;
    let method = at.member_string(r#","method":"#)?;
    let path = at.member_string(r#","path":"#)?;
    let dialect = match at.optional_string(r#","dialect":"#)? {
        Some(name) => Some(dialect_named(&name)?),
        None => None,
    };
    let query = at.optional_string(r#","query":"#)?;
    at.literal(r#","request":{"headers":"#)?;
    let request_headers = at.headers()?;
    at.literal(r#","body":"#)?;
    let body = at.body()?;
    at.literal(r#"},"response":{"status":"#)?;
    let status = u16::try_from(at.integer()?).ok()?;
    let response_headers = at.member(r#","headers":"#, Cursor::headers)?;
    let redacted = at.member(r#"},"redacted":"#, Cursor::strings)?;
    at.literal("}")?;
    at.0.is_empty().then_some(Meta {
        v,
        id,
        started,
        route,
        upstream,
        method,
        path,
        dialect,
        query,
        request: RequestPart {
            headers: request_headers,
            body,
        },
        response: ResponsePart {
            status,
            headers: response_headers,
        },
        redacted,
        injected: Vec::new(),
        credential: None,
    })
}

/// The dialect a recording names, as serde reads [`Dialect`] (old spellings included).
fn dialect_named(name: &str) -> Option<Dialect> {
    Dialect::from_name(name)
}

/// What is left of the line.
struct Cursor<'a>(&'a str);

impl Cursor<'_> {
    fn literal(&mut self, text: &str) -> Option<()> {
        self.0 = self.0.strip_prefix(text)?;
        Some(())
    }

    fn integer(&mut self) -> Option<u64> {
        let (value, rest) = plain_integer(self.0)?;
        self.0 = rest;
        Some(value)
    }

    fn string(&mut self) -> Option<String> {
        self.literal("\"")?;
        let (value, used) = string_body(self.0)?;
        self.0 = &self.0[used..];
        Some(value)
    }

    /// `key` (with its comma and colon) then what `value` reads.
    fn member<T>(&mut self, key: &str, value: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        self.literal(key)?;
        value(self)
    }

    fn member_string(&mut self, key: &str) -> Option<String> {
        self.member(key, Cursor::string)
    }

    /// A member the writer leaves out when it is `None`: absent, or a string.
    fn optional_string(&mut self, key: &str) -> Option<Option<String>> {
        if !self.0.starts_with(key) {
            return Some(None);
        }
        self.member_string(key).map(Some)
    }

    /// `[` items `]`, each read by `item`, separated by commas.
    fn list<T>(&mut self, mut item: impl FnMut(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        self.literal("[")?;
        let mut items = Vec::new();
        if self.0.starts_with(']') {
            self.0 = &self.0[1..];
            return Some(items);
        }
        loop {
            items.push(item(self)?);
            match self.0.as_bytes().first()? {
                b',' => self.0 = &self.0[1..],
                b']' => {
                    self.0 = &self.0[1..];
                    return Some(items);
                }
                _ => return None,
            }
        }
    }

    fn strings(&mut self) -> Option<Vec<String>> {
        self.list(Cursor::string)
    }

    /// `[["name","value"],...]`: each pair exactly two strings.
    fn headers(&mut self) -> Option<Vec<(String, String)>> {
        self.list(|at| {
            at.literal("[")?;
            let name = at.string()?;
            at.literal(",")?;
            let value = at.string()?;
            at.literal("]")?;
            Some((name, value))
        })
    }

    /// `{"json":…}`, `{"text":"…"}`, `{"base64":"…"}` or `"missing"`.
    fn body(&mut self) -> Option<RecordedBody> {
        if self.0.starts_with(r#""missing""#) {
            self.0 = &self.0[r#""missing""#.len()..];
            return Some(RecordedBody::Missing);
        }
        let body = if self.0.starts_with(r#"{"json":"#) {
            self.literal(r#"{"json":"#)?;
            // serde_json reads the value alone, as it reads it inside the line.
            let mut values = serde_json::Deserializer::from_str(self.0).into_iter::<&RawValue>();
            let raw = values.next()?.ok()?;
            let used = values.byte_offset();
            if raw.get().len() != used {
                return None; // white space before the value
            }
            self.0 = &self.0[used..];
            RecordedBody::Json(raw.to_owned())
        } else if self.0.starts_with(r#"{"text":"#) {
            RecordedBody::Text(self.member(r#"{"text":"#, Cursor::string)?)
        } else {
            RecordedBody::Base64(self.member(r#"{"base64":"#, Cursor::string)?)
        };
        self.literal("}")?;
        Some(body)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::record::format::Line;

    /// What serde reads from the line, as `read` must give it when it takes the line.
    fn by_serde(line: &str) -> Option<Meta> {
        match serde_json::from_str::<Meta>(line) {
            Ok(meta) if line.starts_with(r#"{"type":"exchange","#) => Some(meta),
            _ => None,
        }
    }

    fn written(meta: &Meta) -> String {
        serde_json::to_string(&Line::Exchange(Box::new(meta.clone()))).unwrap()
    }

    fn meta(body: RecordedBody) -> Meta {
        Meta {
            v: 1,
            id: "ttp-1".into(),
            started: "2026-12-04T11:32:59.732Z".into(),
            route: "default".into(),
            upstream: "http://127.0.0.1:1".into(),
            method: "POST".into(),
            path: "/v1/chat/completions".into(),
            dialect: Some(Dialect::Chat),
            query: None,
            request: RequestPart {
                headers: vec![("content-type".into(), "application/json".into())],
                body,
            },
            response: ResponsePart {
                status: 200,
                headers: vec![("content-length".into(), "399".into())],
            },
            redacted: vec![],
            injected: Vec::new(),
            credential: None,
        }
    }

    fn json(text: &str) -> RecordedBody {
        RecordedBody::Json(RawValue::from_string(text.to_owned()).unwrap())
    }

    #[test]
    fn every_body_kind_the_writer_writes_is_read_as_serde_reads_it() {
        let bodies = [
            json(r#"{"model":"m","messages":[{"role":"user","content":"caf\u00e9 \"q\""}]}"#),
            json(r#"[1,-2.5e3,true,false,null,{"a\u0041":{}}]"#),
            json("\"\\ud83d\\ude00\""),
            RecordedBody::Text("not json \u{1} \"quoted\"".into()),
            RecordedBody::Base64("/w==".into()),
            RecordedBody::Missing,
        ];
        for body in bodies {
            let mut meta = meta(body);
            let line = written(&meta);
            assert_eq!(read(&line), by_serde(&line), "{line}");
            assert_eq!(read(&line), Some(meta.clone()), "{line}");
            meta.dialect = None;
            meta.query = Some("a=1&key=[redacted]".into());
            meta.redacted = vec!["header:authorization".into(), "body:/api_key".into()];
            meta.request.headers.clear();
            let line = written(&meta);
            assert_eq!(read(&line), Some(meta), "{line}");
        }
    }

    #[test]
    fn old_dialect_labels_read_as_the_dialect_they_named() {
        let mut meta = meta(json(r#"{"a":1}"#));
        meta.dialect = Some(Dialect::Anthropic);
        let line = written(&meta);
        for old in ["anthropic_messages", "anthropic"] {
            let line = line.replacen(
                r#""dialect":"anthropic""#,
                &format!(r#""dialect":"{old}""#),
                1,
            );
            assert_eq!(read(&line), Some(meta.clone()), "{line}");
            assert_eq!(by_serde(&line), Some(meta.clone()), "{line}");
        }
    }

    #[test]
    fn lines_written_another_way_are_left_to_serde() {
        let line = written(&meta(json(r#"{"a":1}"#)));
        let left = [
            line.replacen(r#""v":1"#, r#""v": 1"#, 1),
            line.replacen(r#""v":1"#, r#""v":1.0"#, 1),
            line.replacen(r#""v":1"#, r#""v":4294967296"#, 1),
            line.replacen(r#""status":200"#, r#""status":70000"#, 1),
            line.replacen(r#""dialect":"chat""#, r#""dialect":"cohere""#, 1),
            line.replacen(r#"{"json":{"a":1}}"#, r#"{"json": {"a":1}}"#, 1),
            line.replacen(r#"{"json":{"a":1}}"#, r#"{"json":{"a":01}}"#, 1),
            line.replacen(r#"{"json":{"a":1}}"#, r#"{"missing":null}"#, 1),
            line.replacen(r#""redacted":[]"#, r#""redacted":[],"extra":1"#, 1),
            line.replacen(r#""route":"default","#, "", 1),
            line.replacen(
                r#"["content-type","application/json"]"#,
                r#"["content-type","application/json","x"]"#,
                1,
            ),
            format!("{line} "),
        ];
        for line in &left {
            assert_ne!(
                *line,
                written(&meta(json(r#"{"a":1}"#))),
                "the edit must change it"
            );
            assert_eq!(read(line), None, "{line}");
        }
        // serde takes five of them (white space in three places, `missing` written as an
        // object, an unknown member): the general path reads those.
        let serde_takes = left.iter().filter(|line| by_serde(line).is_some()).count();
        assert_eq!(serde_takes, 5, "{left:#?}");
        // A body's JSON is serde's to judge: a lone surrogate, which its `RawValue` lets
        // through, is read the same either way.
        let surrogate = line.replacen(r#"{"a":1}"#, r#"{"a":"\uDE00"}"#, 1);
        assert!(read(&surrogate).is_some());
        assert_eq!(read(&surrogate), by_serde(&surrogate));
    }

    fn any_body() -> impl Strategy<Value = RecordedBody> {
        prop_oneof![
            any::<String>().prop_map(|text| json(&serde_json::to_string(&text).unwrap())),
            prop::collection::btree_map(any::<String>(), any::<i64>(), 0..4)
                .prop_map(|map| json(&serde_json::to_string(&map).unwrap())),
            any::<String>().prop_map(RecordedBody::Text),
            "[A-Za-z0-9+/]{0,12}".prop_map(RecordedBody::Base64),
            Just(RecordedBody::Missing),
        ]
    }

    proptest! {
        #[test]
        fn any_meta_written_is_read_back_exactly(
            strings in prop::collection::vec(any::<String>(), 6),
            v: u32,
            status: u16,
            query in any::<Option<String>>(),
            dialect in prop::option::of(prop::sample::select(Dialect::ALL.to_vec())),
            headers in prop::collection::vec((any::<String>(), any::<String>()), 0..4),
            redacted in prop::collection::vec(any::<String>(), 0..3),
            body in any_body(),
        ) {
            let meta = Meta {
                v,
                id: strings[0].clone(),
                started: strings[1].clone(),
                route: strings[2].clone(),
                upstream: strings[3].clone(),
                method: strings[4].clone(),
                path: strings[5].clone(),
                dialect,
                query,
                request: RequestPart { headers: headers.clone(), body },
                response: ResponsePart { status, headers },
                redacted,
                injected: Vec::new(),
                credential: None,
            };
            let line = written(&meta);
            prop_assert_eq!(read(&line), Some(meta));
        }
    }
}
