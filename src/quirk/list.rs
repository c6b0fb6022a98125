//! `tooltap quirks`: the catalogue as a table for people or JSON for programs.
//!
//! Input: the format flag. Output: the text to print (no I/O here; the binary prints it).

use clap::{Args, ValueEnum};
use serde_json::json;

use super::catalogue::{QuirkId, Shape};

#[derive(Debug, Args)]
pub struct QuirksArgs {
    /// Output format
    #[arg(long, value_name = "FORMAT", default_value = "human")]
    pub format: ListFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    Human,
    Json,
}

fn shapes(quirk: QuirkId) -> Vec<&'static str> {
    quirk
        .shapes()
        .iter()
        .map(|shape| match shape {
            Shape::Buffered => "buffered",
            Shape::Streamed => "streamed",
        })
        .collect()
}

/// The listing in `format`, ending in a newline.
pub fn render(format: ListFormat) -> String {
    match format {
        ListFormat::Json => {
            let quirks: Vec<serde_json::Value> = QuirkId::ALL
                .iter()
                .map(|&quirk| {
                    let seen = quirk.seen();
                    json!({
                        "id": quirk.as_str(),
                        "dialect": quirk.dialect().as_str(),
                        "shapes": shapes(quirk),
                        "rules": quirk.all_rules(),
                        "description": quirk.description(),
                        "seen": {"provider": seen.provider, "link": seen.link},
                    })
                })
                .collect();
            format!("{}\n", serde_json::Value::Array(quirks))
        }
        ListFormat::Human => {
            let mut out = String::new();
            for quirk in QuirkId::ALL {
                let rules: Vec<String> = quirk.all_rules().iter().map(|r| r.to_string()).collect();
                let rules = if rules.is_empty() {
                    "(no rule)".to_owned()
                } else {
                    rules.join(",")
                };
                out.push_str(&format!(
                    "{:<31} {:<18} {:<18} {}\n{:<31} {}\n",
                    quirk.as_str(),
                    quirk.dialect().as_str(),
                    shapes(quirk).join("+"),
                    quirk.description(),
                    "",
                    rules
                ));
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lists_every_quirk_with_its_rules() {
        let listed: serde_json::Value =
            serde_json::from_str(&render(ListFormat::Json)).expect("json");
        let listed = listed.as_array().expect("array");
        assert_eq!(listed.len(), QuirkId::ALL.len());
        assert_eq!(listed[0]["id"], "args-as-object");
        assert_eq!(listed[0]["rules"][0], "tool_call.arguments_not_string");
        assert!(render(ListFormat::Human).contains("error-event-midstream"));
        let anthropic = listed
            .iter()
            .find(|quirk| quirk["id"] == "anthropic-input-as-string")
            .expect("listed");
        assert_eq!(anthropic["dialect"], "anthropic");
        for quirk in listed {
            let label = quirk["dialect"].as_str().expect("a label");
            assert!(
                crate::engine::Dialect::ALL
                    .iter()
                    .any(|d| d.as_str() == label)
            );
        }
    }
}
