//! The JUnit XML report of `tooltap check`, for CI dashboards.
//!
//! Input: the [`Item`]s judged and the `--fail-on` threshold. Output: one `<testsuite>` with
//! one `<testcase>` per exchange (classname = route, name = exchange id), a `<failure>` per
//! violation at or above the threshold (`type` = rule id), violations below it in
//! `<system-out>`, and an `<error>` testcase per unreadable input. The `failures` attribute
//! counts `<failure>` elements. Every text is escaped, and characters XML 1.0 forbids (most
//! control characters, which recorded data may contain) are replaced by U+FFFD.

use std::io::{self, Write};

use super::FailOn;
use super::judge::Item;
use super::output::describe;

pub fn write(items: &[Item], fail_on: FailOn, out: &mut dyn Write) -> io::Result<()> {
    let tests = items.len();
    let failures: usize = items
        .iter()
        .map(|item| match item {
            Item::Checked(c) => c
                .violations
                .iter()
                .filter(|v| fail_on.fails(v.severity))
                .count(),
            Item::Unreadable(_) => 0,
        })
        .sum();
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
            Item::Checked(c) => {
                let classname = c.route.as_deref().unwrap_or("capture");
                let name = c.id.as_deref().unwrap_or(&c.source);
                writeln!(
                    out,
                    r#"    <testcase classname="{}" name="{}" file="{}">"#,
                    escape(classname),
                    escape(name),
                    escape(&c.source)
                )?;
                let mut below = Vec::new();
                for violation in &c.violations {
                    let line = describe(violation);
                    if !fail_on.fails(violation.severity) {
                        below.push(line);
                        continue;
                    }
                    writeln!(
                        out,
                        r#"      <failure type="{}" message="{}">{}</failure>"#,
                        escape(violation.rule.as_str()),
                        escape(&format!("{} at {}", violation.rule, violation.path)),
                        escape(&line)
                    )?;
                }
                if !below.is_empty() {
                    let text = escape(&below.join("\n"));
                    writeln!(out, "      <system-out>{text}</system-out>")?;
                }
                writeln!(out, "    </testcase>")?;
            }
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
