//! Judges one `type: "custom"` entry of a message's `tool_calls` (a buffered body, or a stream's
//! reassembly): `{"id","type":"custom","custom":{"name","input"}}`, the input a string, checked
//! against the tool's `regex` grammar or, for a free-form tool, for a JSON wrapper.
//!
//! Input: the call, and the request's declared function and custom tools. Output: the
//! `chat_custom.response.*` violations at [`Stage::Complete`] and the call's
//! [`ToolCallOutcome`] (its `arguments` hold the input as received).

use std::collections::HashSet;

use serde_json::Value;

use super::view::{CallView, PartName};
use super::{Declared, preview};
use crate::engine::custom_input::{InputProblem, judge_input};
use crate::engine::report::ToolCallOutcome;
use crate::engine::rules::RuleId;
use crate::engine::violation::{Site, Stage, ViolationSink};

/// Where the call sits: its JSON pointer, choice and tool-call index.
pub struct CallAt<'a> {
    pub path: &'a str,
    pub choice: u32,
    pub index: u32,
}

pub fn check_custom_call<'a>(
    call: CallView<'a>,
    at: &CallAt<'_>,
    seen_ids: &mut HashSet<&'a str>,
    declared: Declared<'_>,
    sink: &mut ViolationSink,
) -> ToolCallOutcome {
    let site = |suffix: &str| {
        Site::at(format!("{}{suffix}", at.path))
            .choice(Some(at.choice))
            .tool_call(Some(at.index))
    };
    let shape = |sink: &mut ViolationSink, suffix: &str, detail: String| {
        sink.push(
            RuleId::ChatCustomResponseCallShapeInvalid,
            Stage::Complete,
            site(suffix),
            detail,
        );
    };
    let id = match call.id() {
        Some(Value::String(id)) if !id.is_empty() => {
            if !seen_ids.insert(id) {
                let detail = format!("id {id:?} is used by an earlier call of this message");
                sink.push(
                    RuleId::ToolCallIdDuplicate,
                    Stage::Complete,
                    site("/id"),
                    detail,
                );
            }
            Some(id.clone())
        }
        other => {
            let shown = other.map_or_else(|| "missing".to_owned(), preview);
            shape(
                sink,
                "/id",
                format!("a custom tool call needs a non-empty id, got {shown}"),
            );
            None
        }
    };
    let function = call.part(PartName::Function);
    if function.is_non_null() {
        let detail = format!(
            "a custom tool call carries `function`: {}",
            preview(&function.to_value())
        );
        shape(sink, "/function", detail);
    }
    // A `custom` that is not an object has no members: `get` finds none.
    let custom = call.part(PartName::Custom);
    let name = match custom.get("name") {
        Some(Value::String(name)) if !name.is_empty() => Some(name.clone()),
        other => {
            let shown = other.map_or_else(|| "missing".to_owned(), preview);
            shape(
                sink,
                "/custom/name",
                format!("custom.name must be a non-empty string, got {shown}"),
            );
            None
        }
    };
    let input = custom.get("input").cloned();
    let outcome = ToolCallOutcome {
        index: at.index,
        id,
        name: name.clone(),
        arguments: input.clone(),
    };
    let grammar = match (&name, declared.tools) {
        (Some(name), _) if declared.surface.custom.contains_key(name) => {
            declared.surface.custom.get(name).and_then(Option::as_ref)
        }
        (Some(name), Some(tools)) if tools.get(name).is_some() => {
            let detail =
                format!("{name:?} is a declared function tool and came back as a custom tool call");
            sink.push(
                RuleId::ChatCustomResponseCalledAsFunction,
                Stage::Complete,
                site("/type"),
                detail,
            );
            return outcome;
        }
        (Some(name), Some(_)) => {
            let detail = format!("{name:?} is not a declared tool");
            sink.push(
                RuleId::ToolCallNameUndeclared,
                Stage::Complete,
                site("/custom/name"),
                detail,
            );
            None
        }
        _ => None,
    };
    let text = match &input {
        None => {
            shape(
                sink,
                "/custom/input",
                "a custom tool call needs custom.input".to_owned(),
            );
            return outcome;
        }
        Some(Value::String(text)) => text,
        Some(other) => {
            let detail = format!("custom.input must be a string, got {}", preview(other));
            sink.push(
                RuleId::ChatCustomResponseInputNotString,
                Stage::Complete,
                site("/custom/input"),
                detail,
            );
            return outcome;
        }
    };
    // Inputs are judged only for a declared custom tool (its grammar, or free-form text).
    if name
        .as_ref()
        .is_none_or(|n| !declared.surface.custom.contains_key(n))
    {
        return outcome;
    }
    let (rule, detail) = match judge_input(grammar, text) {
        None => return outcome,
        Some(InputProblem::GrammarOverBudget) => {
            sink.schema_budget_hit();
            return outcome;
        }
        Some(InputProblem::GrammarMismatch) => (
            RuleId::ChatCustomResponseGrammarMismatch,
            format!(
                "input does not match the declared regex grammar: {}",
                preview(&Value::String(text.clone()))
            ),
        ),
        Some(InputProblem::JsonWrapped) => (
            RuleId::ChatCustomResponseInputJsonWrapped,
            "custom tool input is a JSON object wrapping the payload, not raw text".to_owned(),
        ),
    };
    sink.push(rule, Stage::Complete, site("/custom/input"), detail);
    outcome
}
