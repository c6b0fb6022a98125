//! The JSON report of `tooltap check`: one document with every exchange judged, for machines.
//!
//! Input: the [`Item`]s judged. Output: the document serde_json's pretty printer would write for
//! `{"exchanges": [...], "summary": {...}, "unreadable": [...]}`, keys in alphabetical order,
//! two spaces per level, then a newline. The frame of each exchange is written here directly;
//! every string and number in it goes through serde_json (so escaping is serde's), and the
//! nested values that vary in shape (a completeness other than `complete`, a non-empty
//! violations list) through serde_json's pretty printer, indented to their place.
//! Why: serde's derived serializers make the report a visible share of `tooltap check --format
//! json` (see docs/benchmarks.md#check-reading). The
//! tests compare this writer with serde's on every shape an exchange can take.

use std::io::{self, Write};

use super::checked::{Checked, Item};
use super::output::summarize;
use crate::engine::Completeness;

/// The report is handed to the writer in pieces of about this size.
const PIECE: usize = 64 * 1024;

/// Writes the JSON report of `items` to `out`.
pub fn write(items: &[Item], out: &mut dyn Write) -> io::Result<()> {
    let mut text = Vec::with_capacity(PIECE + 4096);
    text.extend_from_slice(b"{\n  \"exchanges\": ");
    array(
        &mut text,
        out,
        items.iter().filter_map(Item::checked),
        exchange,
    )?;
    let s = summarize(items);
    text.extend_from_slice(b",\n  \"summary\": {\n");
    let counts = [
        ("errors", s.errors),
        ("exchanges", s.exchanges),
        ("incomplete", s.incomplete),
        ("unreadable", s.unreadable),
        ("warnings", s.warnings),
        ("with_violations", s.with_violations),
    ];
    for (at, (key, count)) in counts.iter().enumerate() {
        let comma = if at + 1 < counts.len() { "," } else { "" };
        writeln!(text, "    \"{key}\": {count}{comma}")?;
    }
    text.extend_from_slice(b"  },\n  \"unreadable\": ");
    let message = |text: &mut Vec<u8>, message| Ok(serde_json::to_writer(text, message)?);
    array(
        &mut text,
        out,
        items.iter().filter_map(Item::unreadable),
        message,
    )?;
    text.extend_from_slice(b"\n}\n");
    out.write_all(&text)
}

/// A member's array of `items` (`[]` when empty), each on its own line, indented, written by
/// `item`; `text` is handed to `out` whenever it has grown past [`PIECE`].
fn array<T>(
    text: &mut Vec<u8>,
    out: &mut dyn Write,
    items: impl Iterator<Item = T>,
    mut item: impl FnMut(&mut Vec<u8>, T) -> io::Result<()>,
) -> io::Result<()> {
    text.push(b'[');
    let mut any = false;
    for next in items {
        text.extend_from_slice(if any { b",\n    " } else { b"\n    " });
        any = true;
        item(text, next)?;
        if text.len() >= PIECE {
            out.write_all(text)?;
            text.clear();
        }
    }
    text.extend_from_slice(if any { b"\n  ]" } else { b"]" });
    Ok(())
}

/// One exchange, as an item of `exchanges` (its first line's indentation written already).
fn exchange(text: &mut Vec<u8>, checked: &Checked) -> io::Result<()> {
    text.extend_from_slice(b"{\n      \"completeness\": ");
    match &checked.completeness {
        Completeness::Complete => {
            text.extend_from_slice(b"{\n        \"state\": \"complete\"\n      }");
        }
        other => nested(text, other)?,
    }
    member(text, "id", &checked.id)?;
    text.extend_from_slice(b",\n      \"injected\": ");
    list(text, &checked.injected)?;
    member(text, "live_violations", &checked.live_violations)?;
    member(text, "method", &checked.method)?;
    member(text, "outcome", &checked.outcome)?;
    member(text, "path", &checked.path)?;
    member(text, "route", &checked.route)?;
    member(text, "source", &checked.source)?;
    text.extend_from_slice(b",\n      \"violations\": ");
    list(text, &checked.violations)?;
    text.extend_from_slice(b"\n    }");
    Ok(())
}

/// `,` and a member of an exchange after the first, its value through serde_json (`key` is a
/// plain name: no escaping needed).
fn member(text: &mut Vec<u8>, key: &str, value: &impl serde::Serialize) -> io::Result<()> {
    text.extend_from_slice(b",\n      \"");
    text.extend_from_slice(key.as_bytes());
    text.extend_from_slice(b"\": ");
    serde_json::to_writer(&mut *text, value)?;
    Ok(())
}

/// A list member's value: `[]` when empty, else as serde_json prints it pretty.
fn list<T: serde::Serialize>(text: &mut Vec<u8>, items: &[T]) -> io::Result<()> {
    if items.is_empty() {
        text.extend_from_slice(b"[]");
        Ok(())
    } else {
        nested(text, &items)
    }
}

/// `value` as serde_json prints it pretty (through a `Value`, so object keys come sorted), each
/// line after the first indented to an exchange member's depth. Strings hold no raw line
/// feed (JSON escapes it), so every line feed is one of the printer's.
fn nested(text: &mut Vec<u8>, value: &impl serde::Serialize) -> io::Result<()> {
    let value = serde_json::to_value(value)?;
    for byte in serde_json::to_vec_pretty(&value)? {
        text.push(byte);
        if byte == b'\n' {
            text.extend_from_slice(b"      ");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde::Serialize;

    use super::*;
    use crate::engine::{LimitKind, RuleId, Severity, Stage, Violation};
    use crate::record::Outcome;

    /// The report as serde's derived serializers write it: what [`write`] must equal.
    fn by_serde(items: &[Item]) -> String {
        #[derive(Serialize)]
        struct Document<'a> {
            exchanges: Vec<Exchange<'a>>,
            summary: Summary,
            unreadable: Vec<&'a str>,
        }
        #[derive(Serialize)]
        struct Summary {
            errors: usize,
            exchanges: usize,
            incomplete: usize,
            unreadable: usize,
            warnings: usize,
            with_violations: usize,
        }
        #[derive(Serialize)]
        struct Exchange<'a> {
            completeness: serde_json::Value,
            id: &'a Option<String>,
            injected: &'a Vec<String>,
            live_violations: Option<usize>,
            method: &'a Option<String>,
            outcome: Option<Outcome>,
            path: &'a Option<String>,
            route: &'a Option<String>,
            source: &'a str,
            violations: serde_json::Value,
        }
        let s = summarize(items);
        let document = Document {
            exchanges: items
                .iter()
                .filter_map(|item| match item {
                    Item::Checked(c) => Some(Exchange {
                        completeness: serde_json::to_value(&c.completeness).unwrap(),
                        id: &c.id,
                        injected: &c.injected,
                        live_violations: c.live_violations,
                        method: &c.method,
                        outcome: c.outcome,
                        path: &c.path,
                        route: &c.route,
                        source: &c.source,
                        violations: serde_json::to_value(&c.violations).unwrap(),
                    }),
                    Item::Unreadable(_) => None,
                })
                .collect(),
            summary: Summary {
                errors: s.errors,
                exchanges: s.exchanges,
                incomplete: s.incomplete,
                unreadable: s.unreadable,
                warnings: s.warnings,
                with_violations: s.with_violations,
            },
            unreadable: items
                .iter()
                .filter_map(|item| match item {
                    Item::Unreadable(message) => Some(message.as_str()),
                    Item::Checked(_) => None,
                })
                .collect(),
        };
        serde_json::to_string_pretty(&document).unwrap() + "\n"
    }

    fn written(items: &[Item]) -> String {
        let mut out = Vec::new();
        write(items, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn any_completeness() -> impl Strategy<Value = Completeness> {
        prop_oneof![
            Just(Completeness::Complete),
            Just(Completeness::Partial),
            Just(Completeness::NotInspected),
            (any::<usize>()).prop_map(|bytes| Completeness::TooLarge {
                limit: LimitKind::SseLine,
                bytes
            }),
            any::<String>().prop_map(|reason| Completeness::DecodeFailed { reason }),
            any::<u32>().prop_map(|calls| Completeness::SchemaBudget { calls }),
            any::<u32>().prop_map(|calls| Completeness::SchemaStreaming { calls }),
        ]
    }

    fn any_violation() -> impl Strategy<Value = Violation> {
        (
            any::<Option<u32>>(),
            any::<Option<u64>>(),
            any::<String>(),
            any::<Option<String>>(),
            any::<bool>(),
            prop::sample::select(RuleId::ALL.to_vec()),
        )
            .prop_map(
                |(choice, seq, detail, schema_path, error, rule)| Violation {
                    rule,
                    severity: if error {
                        Severity::Error
                    } else {
                        Severity::Warning
                    },
                    stage: Stage::Complete,
                    choice,
                    tool_call: choice,
                    path: "/choices/0/message/tool_calls/0".into(),
                    seq,
                    schema_path,
                    detail,
                },
            )
    }

    fn any_item() -> impl Strategy<Value = Item> {
        let checked = (
            (
                any::<String>(),
                any::<Option<String>>(),
                any::<Option<String>>(),
            ),
            (any::<Option<String>>(), any::<Option<String>>()),
            prop::option::of(prop::sample::select(vec![
                Outcome::Complete,
                Outcome::ReaderGone,
                Outcome::Enforced,
            ])),
            (
                any::<Option<usize>>(),
                prop::collection::vec(any::<String>(), 0..2),
            ),
            prop::collection::vec(any_violation(), 0..3),
            any_completeness(),
        )
            .prop_map(
                |(
                    (source, id, route),
                    (method, path),
                    outcome,
                    (live, injected),
                    violations,
                    completeness,
                )| {
                    Item::Checked(Box::new(Checked {
                        source,
                        id,
                        route,
                        method,
                        path,
                        started: None,
                        model: None,
                        outcome,
                        live_violations: live,
                        injected,
                        violations,
                        completeness,
                    }))
                },
            );
        prop_oneof![4 => checked, 1 => any::<String>().prop_map(Item::Unreadable)]
    }

    #[test]
    fn an_empty_report_and_a_plain_one_are_serdes() {
        assert_eq!(written(&[]), by_serde(&[]));
        let clean = Item::Checked(Box::new(Checked {
            source: "rec/a.jsonl".into(),
            id: Some("ttp-1".into()),
            route: Some("default".into()),
            method: Some("POST".into()),
            path: Some("/v1/chat/completions".into()),
            started: Some("2026-12-02T12:00:00Z".into()),
            model: Some("gpt-test".into()),
            outcome: Some(Outcome::Complete),
            live_violations: Some(0),
            injected: vec![],
            violations: vec![],
            completeness: Completeness::Complete,
        }));
        let items = [
            clean,
            Item::Unreadable("rec/b.jsonl:3: not a \"line\"".into()),
        ];
        assert_eq!(written(&items), by_serde(&items));
        assert!(written(&items).contains("\"state\": \"complete\""));
    }

    proptest! {
        #[test]
        fn any_report_is_written_as_serde_writes_it(
            items in prop::collection::vec(any_item(), 0..6),
        ) {
            prop_assert_eq!(written(&items), by_serde(&items));
        }
    }

    #[test]
    fn a_long_report_is_written_whole_across_pieces() {
        let items: Vec<Item> = (0..2000)
            .map(|n| Item::Unreadable(format!("file-{n}.jsonl: unreadable")))
            .chain((0..500).map(|n| {
                Item::Checked(Box::new(Checked {
                    source: format!("file-{n}.jsonl"),
                    id: Some(format!("id-{n}")),
                    route: None,
                    method: None,
                    path: None,
                    started: None,
                    model: None,
                    outcome: None,
                    live_violations: None,
                    injected: vec!["chat.arguments_as_object".into()],
                    violations: vec![],
                    completeness: Completeness::Partial,
                }))
            }))
            .collect();
        let text = written(&items);
        assert!(text.len() > PIECE);
        assert_eq!(text, by_serde(&items));
    }
}
