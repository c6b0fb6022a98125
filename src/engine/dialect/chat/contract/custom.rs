//! Judges one `type: "custom"` entry of a message's `tool_calls` (a buffered body, or a stream's
//! reassembly): `{"id","type":"custom","custom":{"name","input"}}`, the input a string, checked
//! against the tool's `regex` grammar or, for a free-form tool, for a JSON wrapper.
//!
//! Input: the call, and the request's declared function and custom tools. Output: the
//! `chat_custom.response.*` violations at [`Stage::Complete`] and the call's
//! [`ToolCallOutcome`] (its `arguments` hold the input as received).

use serde_json::Value;

use super::calls::{SeenIds, unique_id};
use super::view::{CallView, Part, PartName};
use super::{Declared, preview};
use crate::engine::custom_input::{InputProblem, RegexGrammar, judge_input};
use crate::engine::judge::Judge;
use crate::engine::report::ToolCallOutcome;
use crate::engine::rules::RuleId;

/// How a custom call's name stands against the request's tools.
enum Declaration<'d> {
    /// A declared custom tool, with its regex grammar if it has one: its input is judged.
    Custom(Option<&'d RegexGrammar>),
    /// A declared function tool: reported, and nothing more is judged.
    Function,
    /// No name, or one the request did not declare (reported when it declared tools).
    Other,
}

/// Judges one custom call (`judge`: at the call; `index`: its tool-call index).
pub fn check_custom_call<'a>(
    call: CallView<'a>,
    index: u32,
    seen_ids: &mut SeenIds<'a>,
    declared: Declared<'_>,
    judge: &mut Judge<'_>,
) -> ToolCallOutcome {
    let shape = RuleId::ChatCustomResponseCallShapeInvalid;
    let id = match unique_id(call, seen_ids, judge) {
        Ok(id) => Some(id),
        Err(other) => {
            let shown = other.map_or_else(|| "missing".to_owned(), preview);
            let detail = format!("a custom tool call needs a non-empty id, got {shown}");
            judge.flag(shape, "/id", detail);
            None
        }
    };
    let function = call.part(PartName::Function);
    if function.is_non_null() {
        let shown = preview(&function.to_value());
        let detail = format!("a custom tool call carries `function`: {shown}");
        judge.flag(shape, "/function", detail);
    }
    // A `custom` that is not an object has no members: `get` finds none.
    let custom = call.part(PartName::Custom);
    let name = custom_name(custom, judge);
    let input = custom.get("input");
    let declaration = declaration(name.as_deref(), declared, judge);
    let outcome = ToolCallOutcome {
        index,
        id,
        name,
        arguments: input.cloned(),
    };
    if matches!(declaration, Declaration::Function) {
        return outcome;
    }
    // Inputs are judged only for a declared custom tool (its grammar, or free-form text).
    if let Some(text) = input_text(input, judge)
        && let Declaration::Custom(grammar) = declaration
    {
        check_input(grammar, text, judge);
    }
    outcome
}

/// `custom.name`, when a non-empty string.
fn custom_name(custom: Part<'_>, judge: &mut Judge<'_>) -> Option<String> {
    match custom.get("name") {
        Some(Value::String(name)) if !name.is_empty() => Some(name.clone()),
        other => {
            let shown = other.map_or_else(|| "missing".to_owned(), preview);
            let detail = format!("custom.name must be a non-empty string, got {shown}");
            judge.flag(
                RuleId::ChatCustomResponseCallShapeInvalid,
                "/custom/name",
                detail,
            );
            None
        }
    }
}

/// What the request declared under the call's name; a function tool answered as a custom call
/// and an undeclared name are reported.
fn declaration<'d>(
    name: Option<&str>,
    declared: Declared<'d>,
    judge: &mut Judge<'_>,
) -> Declaration<'d> {
    let Some(name) = name else {
        return Declaration::Other;
    };
    if let Some(grammar) = declared.surface.custom.get(name) {
        return Declaration::Custom(grammar.as_ref());
    }
    let Some(tools) = declared.tools else {
        return Declaration::Other;
    };
    if tools.get(name).is_some() {
        let detail =
            format!("{name:?} is a declared function tool and came back as a custom tool call");
        judge.flag(RuleId::ChatCustomResponseCalledAsFunction, "/type", detail);
        return Declaration::Function;
    }
    let detail = format!("{name:?} is not a declared tool");
    judge.flag(RuleId::ToolCallNameUndeclared, "/custom/name", detail);
    Declaration::Other
}

/// `custom.input`, when a string; a missing or non-string input is reported.
fn input_text<'v>(input: Option<&'v Value>, judge: &mut Judge<'_>) -> Option<&'v str> {
    match input {
        None => {
            let detail = "a custom tool call needs custom.input";
            judge.flag(
                RuleId::ChatCustomResponseCallShapeInvalid,
                "/custom/input",
                detail,
            );
            None
        }
        Some(Value::String(text)) => Some(text),
        Some(other) => {
            let detail = format!("custom.input must be a string, got {}", preview(other));
            judge.flag(
                RuleId::ChatCustomResponseInputNotString,
                "/custom/input",
                detail,
            );
            None
        }
    }
}

/// A declared custom tool's input against its regex grammar, or, free-form, for a JSON wrapper.
fn check_input(grammar: Option<&RegexGrammar>, text: &str, judge: &mut Judge<'_>) {
    let (rule, detail) = match judge_input(grammar, text) {
        None => return,
        Some(InputProblem::GrammarOverBudget) => return judge.sink().schema_budget_hit(),
        Some(InputProblem::GrammarMismatch) => (
            RuleId::ChatCustomResponseGrammarMismatch,
            format!(
                "input does not match the declared regex grammar: {}",
                preview(&Value::String(text.to_owned()))
            ),
        ),
        Some(InputProblem::JsonWrapped) => (
            RuleId::ChatCustomResponseInputJsonWrapped,
            "custom tool input is a JSON object wrapping the payload, not raw text".to_owned(),
        ),
    };
    judge.flag(rule, "/custom/input", detail);
}
