//! The page: a fixed HTML shell with the stylesheet and script inlined, and the data embedded
//! as JSON that no byte sequence inside it can end early.
//!
//! Input: [`ReportData`]. Output: the page's text. The JSON goes into
//! `<script type="application/json" id="tooltap-data">`; every `<`, `>` and `&` in it is written
//! as a `\u00XX` escape (valid JSON, identical after `JSON.parse`), so a recorded `</script>` or
//! `<!--` cannot close or confuse the element.

use super::ReportData;

const SHELL: &str = include_str!("assets/report.html");
const STYLE: &str = include_str!("assets/report.css");
const SCRIPT: &str = include_str!("assets/report.js");

/// Renders the page.
pub fn render(data: &ReportData) -> Result<String, serde_json::Error> {
    let json = serde_json::to_string(data)?;
    let escaped = escape_json_for_script(&json);
    Ok(SHELL
        .replacen("/*STYLE*/", STYLE, 1)
        .replacen("/*SCRIPT*/", SCRIPT, 1)
        .replacen("{/*DATA*/}", &escaped, 1))
}

/// Escapes the characters HTML's script-data parsing reacts to (and U+2028/9 for old parsers).
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn the_page_has_no_external_reference() {
        let page = render(&ReportData {
            generated_by: "t".into(),
            exchanges: Vec::new(),
            tools: Default::default(),
            pointers: Default::default(),
            unreadable: Vec::new(),
            omitted: 0,
        })
        .unwrap_or_default();
        assert!(page.contains("id=\"tooltap-data\""));
        for needle in ["http://", "https://", "src=\"", "@import", "url("] {
            assert!(!page.contains(needle), "{needle} in the page");
        }
    }
}
