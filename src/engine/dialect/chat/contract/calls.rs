//! Judges one message's `tool_calls`: ids, type, declared names and arguments.
//!
//! Input: the `tool_calls` array of a buffered message or of a stream's reassembled message.
//! Output: [`ToolCallOutcome`]s (arguments exactly as received) and violations. Arguments must
//! be a string that parses to an object valid against the schema the request declared for that
//! tool: that very schema object, compiled by [`crate::engine::schema`].

use serde_json::Value;

use super::custom::check_custom_call;
use super::view::{CallView, Calls, PartName};
use super::{Declared, Origin, preview};
use crate::engine::dialect::argument_verdict::ArgumentRules;
use crate::engine::dialect::chat::arguments::{FollowedArguments, judge_call};
use crate::engine::dialect::chat::reassemble::{Assembly, CallKey};
use crate::engine::judge::Judge;
use crate::engine::report::ToolCallOutcome;
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, DeclaredTool, ToolSchema};
use crate::engine::small_map::SmallMap;

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

/// Which call is judged: its choice and its tool-call index.
#[derive(Debug, Clone, Copy)]
struct CallAt {
    choice: u32,
    index: u32,
}

/// Checks every call (`judge`: at the array, in choice `choice`).
pub fn check_tool_calls<'a>(
    calls: Calls<'a>,
    choice: u32,
    declared: Declared<'_>,
    origin: Origin,
    mut streamed: Option<&mut Assembly>,
    judge: &mut Judge<'_>,
) -> Vec<ToolCallOutcome> {
    // Ids borrowed from the calls.
    let mut seen_ids = SeenIds::default();
    let mut outcomes = Vec::with_capacity(calls.len());
    for (position, call) in calls.iter().enumerate() {
        let index = call_index(call, position, origin);
        let mut judge = judge.under_at("/", position).tool_call(Some(index));
        if let Some(call) = call.non_object() {
            let detail = format!("a tool call must be an object, got {}", preview(call));
            judge.flag(RuleId::ResponseShapeInvalid, "", detail);
            continue;
        }
        let kind = call.kind().and_then(Value::as_str);
        let outcome = if kind == Some("custom")
            || (kind.is_none() && call.part(PartName::Custom).is_present())
        {
            check_custom_call(call, index, &mut seen_ids, declared, &mut judge)
        } else {
            let at = CallAt { choice, index };
            let streamed = streamed.as_deref_mut();
            check_function_call(call, at, &mut seen_ids, declared, streamed, &mut judge)
        };
        outcomes.push(outcome);
    }
    outcomes
}

/// A call's tool-call index: a buffered call's position; a reassembled one keeps its stream
/// index.
fn call_index(call: CallView<'_>, position: usize, origin: Origin) -> u32 {
    let index = match origin {
        Origin::Buffered => position as u64,
        Origin::Stream => call
            .index()
            .and_then(Value::as_u64)
            .unwrap_or(position as u64),
    };
    u32::try_from(index).unwrap_or(u32::MAX)
}

/// A call's `id` when it is a non-empty string (reported when an earlier call of the message
/// used it); else what was sent, for the caller's rule.
/// The ids of a message's calls seen so far: a message has one or a few, kept in a short `Vec`
/// (no hashing, one small allocation), a `BTreeMap` past a handful.
pub type SeenIds<'a> = SmallMap<&'a str, ()>;

pub fn unique_id<'a>(
    call: CallView<'a>,
    seen_ids: &mut SeenIds<'a>,
    judge: &mut Judge<'_>,
) -> Result<String, Option<&'a Value>> {
    match call.id() {
        Some(Value::String(id)) if !id.is_empty() => {
            if seen_ids.contains_key(&id.as_str()) {
                let detail = format!("id {id:?} is used by an earlier call of this message");
                judge.flag(RuleId::ToolCallIdDuplicate, "/id", detail);
            } else {
                seen_ids.insert(id, ());
            }
            Ok(id.clone())
        }
        other => Err(other),
    }
}

/// One `type: "function"` call (`judge`: at the call): its id, type, name and arguments.
fn check_function_call<'a>(
    call: CallView<'a>,
    at: CallAt,
    seen_ids: &mut SeenIds<'a>,
    declared: Declared<'_>,
    streamed: Option<&mut Assembly>,
    judge: &mut Judge<'_>,
) -> ToolCallOutcome {
    let id = match unique_id(call, seen_ids, judge) {
        Ok(id) => Some(id),
        Err(other) => {
            let shown = other.map_or_else(|| "missing".to_owned(), preview);
            let detail =
                format!("id must be a non-empty string (the client echoes it back), got {shown}");
            judge.flag(RuleId::ToolCallIdMissing, "/id", detail);
            None
        }
    };
    let kind = call.kind();
    if kind.and_then(Value::as_str) != Some("function") {
        let shown = kind.map_or_else(|| "missing".to_owned(), preview);
        let detail = format!("type must be \"function\", got {shown}");
        judge.flag(RuleId::ToolCallTypeInvalid, "/type", detail);
    }
    let function = call.part(PartName::Function);
    let name = function_name(function.get("name"), judge);
    let arguments = function.get("arguments").cloned();
    let index = at.index;
    if name
        .as_deref()
        .is_some_and(|name| custom_called_as_function(name, declared, judge))
    {
        return ToolCallOutcome {
            index,
            id,
            name,
            arguments,
        };
    }
    let schema = match (declared.tools, name.as_deref()) {
        (Some(tools), Some(name)) => declared_tool(tools, name, judge).map(|tool| &tool.schema),
        _ => None,
    };
    let key = call.index().and_then(Value::as_i64).map(CallKey::Tool);
    let taken = streamed
        .zip(key)
        .and_then(|(assembly, key)| assembly.take_streamed(at.choice, key));
    check_arguments(arguments.as_ref(), schema, taken, judge);
    ToolCallOutcome {
        index,
        id,
        name,
        arguments,
    }
}

/// `function.name`, when a non-empty string.
fn function_name(name: Option<&Value>, judge: &mut Judge<'_>) -> Option<String> {
    match name {
        Some(Value::String(name)) if !name.is_empty() => Some(name.clone()),
        other => {
            let shown = other.map_or_else(|| "missing".to_owned(), preview);
            let detail = format!("function.name must be a non-empty string, got {shown}");
            judge.flag(RuleId::ToolCallNameMissing, "/function/name", detail);
            None
        }
    }
}

/// Whether `name` is a declared custom tool (and no function tool) that came back as a function
/// call: reported, and its arguments are not judged.
fn custom_called_as_function(name: &str, declared: Declared<'_>, judge: &mut Judge<'_>) -> bool {
    let custom = declared.surface.custom.contains_key(name)
        && declared.tools.is_none_or(|tools| tools.get(name).is_none());
    if custom {
        let detail = format!(
            "{name:?} is a declared custom tool and came back as a function call (its input wrapped in arguments)"
        );
        judge.flag(RuleId::ChatCustomResponseCalledAsFunction, "/type", detail);
    }
    custom
}

/// The declared tool named `name`; an undeclared name is reported.
fn declared_tool<'t>(
    tools: &'t CompiledTools,
    name: &str,
    judge: &mut Judge<'_>,
) -> Option<&'t DeclaredTool> {
    let found = tools.get(name);
    if found.is_none() {
        let detail = format!(
            "{name:?} is not a declared tool (declared: {})",
            declared_names(tools)
        );
        judge.flag(RuleId::ToolCallNameUndeclared, "/function/name", detail);
    }
    found
}

/// `function.arguments`: a JSON-encoded string, judged against the tool's `schema` (from its
/// `streamed` reading when the call streamed).
fn check_arguments(
    arguments: Option<&Value>,
    schema: Option<&ToolSchema>,
    streamed: Option<Box<FollowedArguments>>,
    judge: &mut Judge<'_>,
) {
    const AT: &str = "/function/arguments";
    match arguments {
        Some(Value::String(text)) => {
            let (sink, site) = judge.sink_and_site(AT);
            judge_call(streamed, schema, text, &TOOL_CALL_ARGUMENTS, &site, sink);
        }
        other => {
            let shown = other.map_or_else(|| "missing".to_owned(), preview);
            let detail = format!("arguments must be a JSON-encoded string, got {shown}");
            judge.flag(RuleId::ToolCallArgumentsNotString, AT, detail);
        }
    }
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
