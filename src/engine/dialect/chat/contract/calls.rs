//! Judges one message's `tool_calls`: ids, type, declared names and arguments.
//!
//! Input: the `tool_calls` array of a buffered message or of a stream's reassembled message.
//! Output: [`ToolCallOutcome`]s (arguments exactly as received) and violations. Arguments must
//! be a string that parses to an object valid against the schema the request declared for that
//! tool: that very schema object, compiled by [`crate::engine::schema`].

use std::collections::HashSet;

use serde_json::Value;

use super::custom::{CallAt, check_custom_call};
use super::view::{Calls, PartName};
use super::{Declared, Origin, preview};
use crate::engine::dialect::argument_verdict::ArgumentRules;
use crate::engine::dialect::chat::arguments::judge_call;
use crate::engine::dialect::chat::reassemble::{Assembly, CallKey};
use crate::engine::report::ToolCallOutcome;
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, ToolSchema};
use crate::engine::violation::{Site, Stage, ViolationSink};

/// The rules a `tool_calls` item's arguments are judged by.
pub const TOOL_CALL_ARGUMENTS: ArgumentRules = ArgumentRules {
    not_json: RuleId::ToolCallArgumentsNotJson,
    not_object: RuleId::ToolCallArgumentsNotObject,
    schema: RuleId::ToolCallArgumentsSchema,
    lenient: false,
};

/// The schema `tools` declares for `name` (none when the request declared no such tool).
pub fn declared_schema<'d>(declared: Declared<'d>, name: &str) -> Option<&'d ToolSchema> {
    schema_in(declared.tools, name)
}

/// The schema of the tool named `name` in `tools`.
pub fn schema_in<'t>(tools: Option<&'t CompiledTools>, name: &str) -> Option<&'t ToolSchema> {
    tools?.get(name).map(|tool| &tool.schema)
}

/// Checks every call; `base` is the JSON pointer of the array.
pub fn check_tool_calls<'a>(
    calls: Calls<'a>,
    base: &str,
    choice: u32,
    declared: Declared<'_>,
    origin: Origin,
    mut streamed: Option<&mut Assembly>,
    sink: &mut ViolationSink,
) -> Vec<ToolCallOutcome> {
    // Ids borrowed from the calls; pointers are written out only when a violation is reported.
    let mut seen_ids: HashSet<&'a str> = HashSet::new();
    let mut outcomes = Vec::with_capacity(calls.len());
    for (position, call) in calls.iter().enumerate() {
        // Buffered calls are identified by position; reassembled ones keep their stream index.
        let index = match origin {
            Origin::Buffered => position as u64,
            Origin::Stream => call
                .index()
                .and_then(Value::as_u64)
                .unwrap_or(position as u64),
        };
        let index = u32::try_from(index).unwrap_or(u32::MAX);
        let site = |suffix: &str| {
            Site::at(format!("{base}/{position}{suffix}"))
                .choice(Some(choice))
                .tool_call(Some(index))
        };
        if let Some(call) = call.non_object() {
            let detail = format!("a tool call must be an object, got {}", preview(call));
            sink.push(
                RuleId::ResponseShapeInvalid,
                Stage::Complete,
                site(""),
                detail,
            );
            continue;
        }
        let kind = call.kind().and_then(Value::as_str);
        if kind == Some("custom") || (kind.is_none() && call.part(PartName::Custom).is_present()) {
            let at = CallAt {
                path: &format!("{base}/{position}"),
                choice,
                index,
            };
            outcomes.push(check_custom_call(call, &at, &mut seen_ids, declared, sink));
            continue;
        }
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
                let detail = format!(
                    "id must be a non-empty string (the client echoes it back), got {shown}"
                );
                sink.push(
                    RuleId::ToolCallIdMissing,
                    Stage::Complete,
                    site("/id"),
                    detail,
                );
                None
            }
        };
        let kind = call.kind();
        if kind.and_then(Value::as_str) != Some("function") {
            let shown = kind.map_or_else(|| "missing".to_owned(), preview);
            let detail = format!("type must be \"function\", got {shown}");
            sink.push(
                RuleId::ToolCallTypeInvalid,
                Stage::Complete,
                site("/type"),
                detail,
            );
        }
        let function = call.part(PartName::Function);
        let name = match function.get("name") {
            Some(Value::String(name)) if !name.is_empty() => Some(name.clone()),
            other => {
                let shown = other.map_or_else(|| "missing".to_owned(), preview);
                sink.push(
                    RuleId::ToolCallNameMissing,
                    Stage::Complete,
                    site("/function/name"),
                    format!("function.name must be a non-empty string, got {shown}"),
                );
                None
            }
        };
        if let Some(name) = name.as_deref().filter(|name| {
            declared.surface.custom.contains_key(*name)
                && declared.tools.is_none_or(|tools| tools.get(name).is_none())
        }) {
            let detail = format!(
                "{name:?} is a declared custom tool and came back as a function call (its input wrapped in arguments)"
            );
            sink.push(
                RuleId::ChatCustomResponseCalledAsFunction,
                Stage::Complete,
                site("/type"),
                detail,
            );
            outcomes.push(ToolCallOutcome {
                index,
                id,
                name: Some(name.to_owned()),
                arguments: function.get("arguments").cloned(),
            });
            continue;
        }
        let declared_tool = match (declared.tools, name.as_deref()) {
            (Some(tools), Some(name)) => {
                let found = tools.get(name);
                if found.is_none() {
                    let detail = format!(
                        "{name:?} is not a declared tool (declared: {})",
                        declared_names(tools)
                    );
                    sink.push(
                        RuleId::ToolCallNameUndeclared,
                        Stage::Complete,
                        site("/function/name"),
                        detail,
                    );
                }
                found
            }
            _ => None,
        };
        let arguments = function.get("arguments").cloned();
        let args_site = || site("/function/arguments");
        match &arguments {
            Some(Value::String(text)) => {
                let schema = declared_tool.map(|tool| &tool.schema);
                let key = call.index().and_then(Value::as_i64).map(CallKey::Tool);
                let taken = streamed
                    .as_deref_mut()
                    .zip(key)
                    .and_then(|(assembly, key)| assembly.take_streamed(choice, key));
                let rules = &TOOL_CALL_ARGUMENTS;
                judge_call(taken, schema, text, rules, &args_site, sink);
            }
            other => {
                let shown = other.as_ref().map_or_else(|| "missing".to_owned(), preview);
                let detail = format!("arguments must be a JSON-encoded string, got {shown}");
                sink.push(
                    RuleId::ToolCallArgumentsNotString,
                    Stage::Complete,
                    args_site(),
                    detail,
                );
            }
        }
        outcomes.push(ToolCallOutcome {
            index,
            id,
            name,
            arguments,
        });
    }
    outcomes
}

/// The declared names for a detail, the first few only (a request may declare thousands).
fn declared_names(tools: &CompiledTools) -> String {
    const SHOWN: usize = 16;
    let names: Vec<&str> = tools.iter().take(SHOWN).map(|t| t.name.as_str()).collect();
    let total = tools.iter().count();
    if total > SHOWN {
        format!("{names:?} and {} more", total - SHOWN)
    } else {
        format!("{names:?}")
    }
}
