//! The human and JSON reports of `tooltap check`.
//!
//! Input: the [`Item`]s judged. Output: text on the given writer. The human report lists each
//! exchange that has violations (rule, severity, and where: JSON pointer, choice, tool call and
//! `seq`, the frame to jump to in a replay), then a one-line summary; clean exchanges appear only
//! in the count. The JSON report (one document with every exchange, for machines) is written
//! by [`super::json_report`].
//!
//! Text from a recording (ids, routes, paths, details quoting recorded values) goes through
//! [`printable`] before it reaches a terminal: control characters and bidi overrides are shown
//! escaped (`\u{1b}`), so a recording cannot move the cursor, recolour or hide text.

use std::borrow::Cow;
use std::io::{self, Write};

use super::checked::{Checked, Item};
use crate::engine::{Completeness, Severity, Violation};

/// Counts for the summary line and the JSON summary.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub exchanges: usize,
    pub with_violations: usize,
    pub errors: usize,
    pub warnings: usize,
    pub incomplete: usize,
    pub unreadable: usize,
}

pub fn summarize(items: &[Item]) -> Summary {
    let mut summary = Summary::default();
    for item in items {
        match item {
            Item::Checked(checked) => {
                summary.exchanges += 1;
                summary.with_violations += usize::from(!checked.violations.is_empty());
                for violation in &checked.violations {
                    match violation.severity {
                        Severity::Error => summary.errors += 1,
                        Severity::Warning => summary.warnings += 1,
                    }
                }
                summary.incomplete += usize::from(checked.completeness != Completeness::Complete);
            }
            Item::Unreadable(_) => summary.unreadable += 1,
        }
    }
    summary
}

pub fn human(items: &[Item], out: &mut dyn Write) -> io::Result<()> {
    for item in items {
        let Item::Checked(checked) = item else {
            continue; // named on stderr
        };
        if checked.violations.is_empty() {
            continue;
        }
        writeln!(out, "{}", heading(checked))?;
        if let Some(note) = injected_note(checked) {
            writeln!(out, "  note: {note}")?;
        }
        for violation in &checked.violations {
            writeln!(out, "  {}", describe(violation))?;
        }
        if let Some(live) = checked.live_violations
            && live != checked.violations.len()
        {
            writeln!(out, "  note: {live} violation(s) were recorded live")?;
        }
    }
    let s = summarize(items);
    writeln!(
        out,
        "checked {} exchange(s): {} with violations ({} error(s), {} warning(s)), {} incomplete, {} unreadable",
        s.exchanges, s.with_violations, s.errors, s.warnings, s.incomplete, s.unreadable
    )
}

/// `quirk injected by tooltap: <ids> (...)` for a recording `--inject` made, so nobody blames
/// the provider for a fault tooltap put there on purpose; `None` for a faithful one.
pub fn injected_note(checked: &Checked) -> Option<String> {
    if checked.injected.is_empty() {
        return None;
    }
    let note = format!(
        "quirk injected by tooltap: {} (its violations are tooltap's doing, not the provider's)",
        checked.injected.join(", ")
    );
    Some(printable(&note).into_owned())
}

/// `text` with control characters (C0, DEL, C1) and bidirectional overrides escaped as
/// `\u{..}`; unchanged (and not copied) when there are none.
pub fn printable(text: &str) -> Cow<'_, str> {
    let unsafe_char =
        |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `file  id  route  POST /v1/chat/completions  [truncated]`
pub fn heading(checked: &Checked) -> String {
    printable(&raw_heading(checked)).into_owned()
}

fn raw_heading(checked: &Checked) -> String {
    let mut parts = vec![checked.source.clone()];
    parts.extend(checked.id.clone());
    parts.extend(checked.route.clone());
    if let (Some(method), Some(path)) = (&checked.method, &checked.path) {
        parts.push(format!("{method} {path}"));
    }
    if checked.completeness != Completeness::Complete {
        parts.push(format!("[{}]", completeness_name(&checked.completeness)));
    }
    parts.join("  ")
}

/// `error tool_call.id_missing at /choices/0/... (choice 0, tool call 1, seq 4): detail`
pub fn describe(violation: &Violation) -> String {
    printable(&raw_describe(violation)).into_owned()
}

fn raw_describe(violation: &Violation) -> String {
    let mut place = Vec::new();
    if let Some(choice) = violation.choice {
        place.push(format!("choice {choice}"));
    }
    if let Some(call) = violation.tool_call {
        place.push(format!("tool call {call}"));
    }
    if let Some(seq) = violation.seq {
        place.push(format!("seq {seq}"));
    }
    let path = if violation.path.is_empty() {
        "/"
    } else {
        &violation.path
    };
    let place = if place.is_empty() {
        String::new()
    } else {
        format!(" ({})", place.join(", "))
    };
    format!(
        "{:<7} {} at {path}{place}: {}",
        violation.severity.as_str(),
        violation.rule,
        violation.detail
    )
}

pub fn completeness_name(completeness: &Completeness) -> &'static str {
    match completeness {
        Completeness::Complete => "complete",
        Completeness::Partial => "truncated",
        Completeness::TooLarge { .. } => "too_large",
        Completeness::DecodeFailed { .. } => "decode_failed",
        Completeness::NotInspected => "not_inspected",
        Completeness::SchemaBudget { .. } => "schema_budget",
        Completeness::SchemaStreaming { .. } => "schema_streaming",
    }
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn control_characters_and_bidi_overrides_are_escaped() {
        assert_eq!(printable("plain/path é"), "plain/path é");
        assert_eq!(
            printable("a\u{1b}[2Jb\r\n\u{7}\u{9b}\u{202e}c"),
            "a\\u{1b}[2Jb\\u{d}\\u{a}\\u{7}\\u{9b}\\u{202e}c"
        );
    }
}
