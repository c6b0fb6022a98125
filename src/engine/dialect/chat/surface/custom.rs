//! `type: "custom"` tools and `tool_choice: {"type":"allowed_tools"}` on Chat Completions,
//! request side: the nested shapes (`{"type":"custom","custom":{"name","format"}}`,
//! `{"type":"allowed_tools","allowed_tools":{"mode","tools"}}`), the custom tools' grammars
//! (a `regex` one compiled with the array's schemas, looked up here), and the names they refer
//! to.
//!
//! Input: the parsed `tools` items and `tool_choice`. Output: the declared custom tools, the
//! allowed set, and `chat_custom.request.*` / `chat_allowed.request.*` violations.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Allowed, Surface};
use crate::engine::custom_input::RegexGrammar;
use crate::engine::dialect::common::preview;
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;
use crate::engine::schema::CompiledTools;

/// The declared `type: "custom"` tools by name; shape and grammar problems are reported.
pub(super) fn declare_custom(
    items: &[Value],
    tools: Option<&CompiledTools>,
    judge: &mut Judge<'_>,
) -> BTreeMap<String, Option<RegexGrammar>> {
    let mut custom = BTreeMap::new();
    for (position, tool) in items.iter().enumerate() {
        if tool.get("type").and_then(Value::as_str) != Some("custom") {
            continue;
        }
        let name = tool
            .get("custom")
            .and_then(|c| c.get("name"))
            .and_then(Value::as_str);
        let Some(name) = name else {
            let detail = if tool.get("name").is_some() {
                "a Responses-style flat custom tool (`name` at the top) sent to chat/completions; Chat nests it under `custom`".to_owned()
            } else {
                "a custom tool needs `custom.name`".to_owned()
            };
            let at = format_args!("/tools/{position}/custom");
            judge.flag(RuleId::ChatCustomRequestToolShapeInvalid, at, detail);
            continue;
        };
        let format = tool.get("custom").and_then(|c| c.get("format"));
        let grammar = match format
            .filter(|f| !f.is_null())
            .map(|f| grammar_of(f, tools))
        {
            None | Some(Ok(None)) => None,
            Some(Ok(Some(RegexGrammar::Invalid(problem)))) | Some(Err(problem)) => {
                let at = format_args!("/tools/{position}/custom/format");
                judge.flag(RuleId::ChatCustomRequestGrammarShapeInvalid, at, problem);
                None
            }
            Some(Ok(Some(grammar))) => Some(grammar),
        };
        custom.entry(name.to_owned()).or_insert(grammar);
    }
    custom
}

/// `{"type":"text"}` or `{"type":"grammar","grammar":{"syntax":"lark"|"regex","definition"}}`,
/// nothing more (both objects are closed); a regex grammar is looked up compiled.
fn grammar_of(
    format: &Value,
    tools: Option<&CompiledTools>,
) -> Result<Option<RegexGrammar>, String> {
    let closed = |value: &Value, keys: &[&str]| {
        value
            .as_object()
            .is_some_and(|object| object.keys().all(|key| keys.contains(&key.as_str())))
    };
    match format.get("type").and_then(Value::as_str) {
        Some("text") if closed(format, &["type"]) => return Ok(None),
        Some("grammar") if closed(format, &["type", "grammar"]) => {}
        _ => {
            return Err(format!(
                "format must be {{\"type\":\"text\"}} or {{\"type\":\"grammar\",\"grammar\":{{..}}}}, got {}",
                preview(format)
            ));
        }
    }
    let grammar = format.get("grammar").unwrap_or(&Value::Null);
    let syntax = grammar.get("syntax").and_then(Value::as_str);
    let definition = grammar.get("definition").and_then(Value::as_str);
    match (syntax, definition) {
        _ if !closed(grammar, &["syntax", "definition"]) => {}
        (Some("lark"), Some(_)) => return Ok(None),
        (Some("regex"), Some(definition)) => {
            let compiled = tools.map_or(RegexGrammar::OverBudget, |t| t.grammar(definition));
            return Ok(Some(compiled));
        }
        _ => {}
    }
    Err(format!(
        "grammar must be {{\"syntax\":\"lark\"|\"regex\",\"definition\":string}} (Chat nests it; the Responses API's is flat), got {}",
        preview(grammar)
    ))
}

/// `tool_choice: {"type":"custom","custom":{"name":X}}` must name a declared custom tool.
pub(super) fn check_custom_choice(
    choice: Option<&Value>,
    surface: &Surface,
    judge: &mut Judge<'_>,
) {
    let Some(choice) = choice.filter(|c| c.get("type").and_then(Value::as_str) == Some("custom"))
    else {
        return;
    };
    let name = choice
        .get("custom")
        .and_then(|c| c.get("name"))
        .and_then(Value::as_str);
    if name.is_some_and(|name| surface.custom.contains_key(name)) {
        return;
    }
    let detail = format!(
        "tool_choice {} names no declared custom tool",
        preview(choice)
    );
    judge.flag(
        RuleId::ChatCustomRequestToolChoiceUnknown,
        "/tool_choice",
        detail,
    );
}

/// `tool_choice: {"type":"allowed_tools", ...}`: its nested shape, and that every entry names a
/// declared tool of its kind.
pub(super) fn allowed_tools(
    choice: Option<&Value>,
    tools: Option<&CompiledTools>,
    custom: &BTreeMap<String, Option<RegexGrammar>>,
    judge: &mut Judge<'_>,
) -> Option<Allowed> {
    let choice =
        choice.filter(|c| c.get("type").and_then(Value::as_str) == Some("allowed_tools"))?;
    let nested = choice.get("allowed_tools");
    let mode = nested.and_then(|n| n.get("mode")).and_then(Value::as_str);
    let entries = nested
        .and_then(|n| n.get("tools"))
        .and_then(Value::as_array);
    let (Some(mode @ ("auto" | "required")), Some(entries)) = (mode, entries) else {
        let detail = format!(
            "allowed_tools must be {{\"type\":\"allowed_tools\",\"allowed_tools\":{{\"mode\":\"auto\"|\"required\",\"tools\":[..]}}}} (nested in Chat), got {}",
            preview(choice)
        );
        judge.flag(
            RuleId::ChatAllowedRequestShapeInvalid,
            "/tool_choice",
            detail,
        );
        return None;
    };
    Some(Allowed {
        required: mode == "required",
        names: allowed_names(entries, tools, custom, judge),
    })
}

/// The names of the `allowed_tools` entries; an entry that names no declared tool of its kind
/// (`function` unless its `type` says otherwise) is reported.
fn allowed_names(
    entries: &[Value],
    tools: Option<&CompiledTools>,
    custom: &BTreeMap<String, Option<RegexGrammar>>,
    judge: &mut Judge<'_>,
) -> Vec<String> {
    let mut names = Vec::with_capacity(entries.len());
    for (position, entry) in entries.iter().enumerate() {
        let kind = entry
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("function");
        let name = entry
            .get(kind)
            .and_then(|inner| inner.get("name"))
            .and_then(Value::as_str);
        let declared = match (kind, name) {
            ("function", Some(name)) => tools.is_some_and(|tools| tools.get(name).is_some()),
            ("custom", Some(name)) => custom.contains_key(name),
            _ => false,
        };
        if let Some(name) = name {
            names.push(name.to_owned());
        }
        if !declared {
            let detail = format!("allowed tool {} matches no declared tool", preview(entry));
            let at = format_args!("/tool_choice/allowed_tools/tools/{position}");
            judge.flag(RuleId::ChatAllowedRequestUnknownTool, at, detail);
        }
    }
    names
}
