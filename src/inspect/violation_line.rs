//! The violations file's lines as types: one [`ViolationLine`] per listed violation and one
//! [`NotListedLine`] when an exchange had more than `inspect.max_violations`.
//!
//! Input: an exchange's identity (its [`LineHead`]) and the engine's
//! [`Violation`]s; output: one JSON object per line, serialized straight from borrowed fields.
//! docs/violations-file.md is the prose version of these structs; a test holds its field table
//! and its example lines to them.

use serde::Serialize;

use crate::engine::{Stage, Violation};

/// The fields every line of one exchange shares.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct LineHead<'a> {
    /// RFC 3339 UTC, millisecond precision: when the exchange's inspection finished.
    pub ts: &'a str,
    pub exchange: &'a str,
    pub route: &'a str,
    /// The request's `model`, as sent; null when absent.
    pub model: Option<&'a str>,
    pub stream: bool,
}

/// One listed violation.
#[derive(Debug, Serialize)]
pub struct ViolationLine<'a> {
    #[serde(flatten)]
    pub head: LineHead<'a>,
    pub dialect: &'a str,
    pub rule: &'a str,
    pub severity: &'a str,
    pub stage: Stage,
    pub path: &'a str,
    pub choice: Option<u32>,
    pub tool_call: Option<u32>,
    pub seq: Option<u64>,
    pub schema_path: Option<&'a str>,
    pub detail: &'a str,
    /// Only under `proxy --inject`: the quirk(s) tooltap applied on purpose.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quirk: Option<&'a str>,
}

impl<'a> ViolationLine<'a> {
    pub fn new(
        head: LineHead<'a>,
        dialect: &'a str,
        violation: &'a Violation,
        quirk: Option<&'a str>,
    ) -> ViolationLine<'a> {
        ViolationLine {
            head,
            dialect,
            rule: violation.rule.as_str(),
            severity: violation.severity.as_str(),
            stage: violation.stage,
            path: &violation.path,
            choice: violation.choice,
            tool_call: violation.tool_call,
            seq: violation.seq,
            schema_path: violation.schema_path.as_deref(),
            detail: &violation.detail,
            quirk,
        }
    }
}

/// The line after the listed ones when an exchange had more violations than the cap.
#[derive(Debug, Serialize)]
pub struct NotListedLine<'a> {
    #[serde(flatten)]
    pub head: LineHead<'a>,
    /// Always `"violations_not_listed"`.
    pub summary: &'static str,
    pub not_listed: u64,
}

impl<'a> NotListedLine<'a> {
    pub fn new(head: LineHead<'a>, not_listed: u64) -> NotListedLine<'a> {
        NotListedLine {
            head,
            summary: "violations_not_listed",
            not_listed,
        }
    }
}

/// One serialized line (without its newline). Serializing borrowed strings and numbers cannot
/// fail; if it ever did, the line says so rather than vanishing.
pub fn to_line(line: &impl Serialize) -> String {
    serde_json::to_string(line)
        .unwrap_or_else(|error| format!("{{\"unserializable\":{:?}}}", error.to_string()))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::engine::{RuleId, Severity};

    fn doc() -> String {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/violations-file.md");
        std::fs::read_to_string(path).unwrap_or_default()
    }

    fn keys(line: &str) -> BTreeSet<String> {
        let value: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
        value
            .as_object()
            .map(|object| object.keys().cloned().collect())
            .unwrap_or_default()
    }

    const HEAD: LineHead<'static> = LineHead {
        ts: "2026-12-02T12:00:00.123Z",
        exchange: "t-1",
        route: "default",
        model: None,
        stream: true,
    };

    fn violation() -> Violation {
        Violation {
            rule: RuleId::ToolCallArgumentsNotString,
            severity: Severity::Error,
            stage: Stage::Complete,
            choice: Some(0),
            tool_call: None,
            path: "/choices/0".into(),
            seq: Some(3),
            schema_path: None,
            detail: "d".into(),
        }
    }

    #[test]
    fn the_doc_field_table_lists_exactly_the_fields_of_a_line() {
        let doc = doc();
        let documented: BTreeSet<String> = doc
            .lines()
            .filter_map(|row| row.strip_prefix("| `")?.split('`').next())
            .map(str::to_string)
            .collect();
        let violation = violation();
        let line = to_line(&ViolationLine::new(HEAD, "chat", &violation, Some("q")));
        assert_eq!(
            keys(&line),
            documented,
            "docs/violations-file.md's table vs {line}"
        );
        let plain = to_line(&ViolationLine::new(HEAD, "chat", &violation, None));
        assert!(
            !keys(&plain).contains("quirk"),
            "quirk only under --inject: {plain}"
        );
    }

    #[test]
    fn the_doc_examples_have_the_shape_of_the_typed_lines() {
        let doc = doc();
        let examples: Vec<&str> = doc
            .lines()
            .filter(|line| line.starts_with("{\"ts\""))
            .collect();
        assert!(!examples.is_empty(), "the doc shows an example line");
        let violation = violation();
        let typed = keys(&to_line(&ViolationLine::new(
            HEAD, "chat", &violation, None,
        )));
        for example in examples {
            assert_eq!(keys(example), typed, "example line: {example}");
        }
        let summary = keys(&to_line(&NotListedLine::new(HEAD, 7)));
        let named: Vec<String> = summary.iter().map(|key| format!("\"{key}\"")).collect();
        let sentence = doc
            .lines()
            .skip_while(|line| !line.contains("one summary line follows them"))
            .take(3)
            .collect::<Vec<_>>()
            .join(" ");
        for key in named {
            assert!(
                sentence.contains(&key),
                "the summary line's {key} is documented: {sentence}"
            );
        }
    }
}
