//! The JUnit XML report of `tooltap check`, for CI dashboards.
//!
//! Input: the [`Item`]s judged and the `--fail-on` threshold. Output: one `<testsuite>` with
//! one `<testcase>` per exchange and an `<error>` testcase per unreadable input. A testcase is
//! named for a human (`POST /v1/chat/completions gpt-4o 2026-12-02T12:00:00Z [<exchange id>]`:
//! request, model, start time, the id kept at the tail) with the route as `classname` and the
//! recording as `file`. An exchange with violations at or above the threshold has ONE
//! `<failure>` (`type` = the first such rule id, `message` = how many and which rules, the body
//! one line per violation), so `failures` counts failed testcases, as JUnit readers expect;
//! violations below the threshold go to `<system-out>`. A recording made with `proxy --inject`
//! says so (`quirk injected by tooltap: <ids>`) in its failure's message and body and in its
//! `<system-out>`, so CI does not blame the provider. Every text is escaped, and characters
//! XML 1.0 forbids (most control characters, which recorded data may contain) are replaced by
//! U+FFFD.

use std::io::{self, Write};

use super::FailOn;
use super::checked::{Checked, Item};
use super::output::{describe, injected_note};

pub fn write(items: &[Item], fail_on: FailOn, out: &mut dyn Write) -> io::Result<()> {
    let tests = items.len();
    let failures = items
        .iter()
        .filter_map(Item::checked)
        .filter(|c| c.violations.iter().any(|v| fail_on.fails(v.severity)))
        .count();
    let errors = items
        .iter()
        .filter(|i| matches!(i, Item::Unreadable(_)))
        .count();
    let counts = format!(r#"tests="{tests}" failures="{failures}" errors="{errors}""#);
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(out, r#"<testsuites name="tooltap check" {counts}>"#)?;
    writeln!(out, r#"  <testsuite name="tooltap check" {counts}>"#)?;
    for item in items {
        match item {
            Item::Checked(c) => testcase(c, fail_on, out)?,
            Item::Unreadable(message) => {
                writeln!(
                    out,
                    r#"    <testcase classname="tooltap.unreadable" name="{0}"><error message="{0}"/></testcase>"#,
                    escape(message)
                )?;
            }
        }
    }
    writeln!(out, "  </testsuite>")?;
    writeln!(out, "</testsuites>")
}

/// One exchange's testcase: one `<failure>` listing every violation at or above the threshold.
fn testcase(c: &Checked, fail_on: FailOn, out: &mut dyn Write) -> io::Result<()> {
    let classname = c.route.as_deref().unwrap_or("capture");
    writeln!(
        out,
        r#"    <testcase classname="{}" name="{}" file="{}">"#,
        escape(classname),
        escape(&name(c)),
        escape(&c.source)
    )?;
    let (failing, below): (Vec<_>, Vec<_>) =
        c.violations.iter().partition(|v| fail_on.fails(v.severity));
    if let Some(first) = failing.first() {
        let mut rules: Vec<&str> = Vec::new();
        for violation in &failing {
            if !rules.contains(&violation.rule.as_str()) {
                rules.push(violation.rule.as_str());
            }
        }
        let mut message = format!("{} violations: {}", failing.len(), rules.join(", "));
        let mut body: Vec<String> = failing.iter().map(|v| describe(v)).collect();
        if let Some(note) = injected_note(c) {
            message = format!("{message} ({note})");
            body.insert(0, note);
        }
        writeln!(
            out,
            r#"      <failure type="{}" message="{}">{}</failure>"#,
            escape(first.rule.as_str()),
            escape(&message),
            escape(&body.join("\n"))
        )?;
    }
    let note = injected_note(c);
    if !below.is_empty() || note.is_some() {
        let lines: Vec<String> = note
            .into_iter()
            .chain(below.iter().map(|v| describe(v)))
            .collect();
        writeln!(
            out,
            "      <system-out>{}</system-out>",
            escape(&lines.join("\n"))
        )?;
    }
    writeln!(out, "    </testcase>")
}

/// What a human maps back to an exchange: request, model, start time, then the id (or, for a
/// capture, the file it came from).
fn name(c: &Checked) -> String {
    let parts = [
        c.method.as_deref(),
        c.path.as_deref(),
        c.model.as_deref(),
        c.started.as_deref(),
    ];
    let mut name: Vec<&str> = parts.into_iter().flatten().collect();
    let tail = match &c.id {
        Some(id) => format!("[{id}]"),
        None => c.source.clone(),
    };
    name.push(&tail);
    name.join(" ")
}

/// Escapes text for an attribute or element; replaces characters XML 1.0 does not allow.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_markup_and_forbidden_characters() {
        assert_eq!(
            escape("a<b>&\"c'\u{1}\td"),
            "a&lt;b&gt;&amp;&quot;c&apos;\u{fffd}\td"
        );
    }
}
