//! Reads a Responses API request body: its facts, declared tools and `tool_choice`, and judges
//! the declarations (`responses.request.*`).
//!
//! Input: the raw request bytes. Output: [`ResponsesRequest`] (the report's [`RequestFacts`],
//! the function and custom tools by name with their effective strictness and custom format, the
//! interpreted [`Choice`]), plus request-stage violations. Responses tools are flat
//! (`{"type":"function","name":..,"parameters":..}`); the Chat shape is reported, not guessed.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::tool_choice;
use std::sync::Arc;

use crate::engine::custom_input::RegexGrammar;
use crate::engine::dialect::common;
use crate::engine::dialect::common::preview;
use crate::engine::judge::Judge;
use crate::engine::report::KeptJson;
use crate::engine::report::RequestFacts;
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, Declaration, ToolReading};
use crate::engine::violation::{Stage, ViolationSink};

/// How the Responses API's `tools` array declares function tools: flat,
/// `{"type":"function","name","parameters"}`; custom tools' grammars flat too (`format`). Keyed
/// apart from Chat arrays.
pub const TOOLS: ToolReading = ToolReading {
    key_prefix: "flat:",
    tool: |tool, position| {
        let kind = tool.get("type").and_then(Value::as_str);
        Some(Declaration {
            name: (kind == Some("function")).then(|| tool.get("name")?.as_str())??,
            parameters_path: format!("/tools/{position}/parameters"),
            parameters: tool.get("parameters"),
        })
    },
    grammars: Some(false),
};

/// A declared tool's kind; hosted tools (web_search, mcp, ...) are counted, never judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Function,
    Custom,
}

impl Kind {
    pub fn item_type(self) -> &'static str {
        match self {
            Kind::Function => "function_call",
            Kind::Custom => "custom_tool_call",
        }
    }

    pub fn parse(text: Option<&str>) -> Option<Kind> {
        match text {
            Some("function") => Some(Kind::Function),
            Some("custom") => Some(Kind::Custom),
            _ => None,
        }
    }
}

/// One declared function or custom tool.
#[derive(Debug, Clone)]
pub struct Tool {
    pub kind: Kind,
    /// Responses function tools are strict unless `strict:false` (spec; openai-python).
    pub strict: bool,
    /// A custom tool's `regex` grammar (compiled with the array's schemas); `None` otherwise.
    pub grammar: Option<RegexGrammar>,
}

/// The request's `tool_choice`, interpreted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Choice {
    #[default]
    Unspecified,
    None,
    Auto,
    Required,
    Named(Kind, String),
    Allowed {
        required: bool,
        names: Vec<String>,
    },
    /// A hosted tool or MCP choice: not checked.
    Unchecked,
}

/// Everything the Responses rules need from the request (by default: an unparsable body's,
/// declaring nothing).
#[derive(Debug, Clone, Default)]
pub struct ResponsesRequest {
    pub facts: RequestFacts,
    pub tools: BTreeMap<String, Tool>,
    /// Whether `tools` was a non-empty array (of any tool types).
    pub declares: bool,
    pub choice: Choice,
    pub raw_tools: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct Fields {
    model: Option<Value>,
    stream: Option<Value>,
    tools: Option<Box<RawValue>>,
    tool_choice: Option<Value>,
    parallel_tool_calls: Option<Value>,
    /// Kept unparsed: it is most of a request's bytes, and read only when it holds call ids.
    input: Option<Box<RawValue>>,
    previous_response_id: Option<Value>,
    conversation: Option<Value>,
}

/// Reads the body; never fails (an unparsable body declares nothing). `compile` gives the
/// `tools` array's compiled form (the schema cache's), returned beside the request; its
/// grammars are what custom tools are judged by.
pub fn parse(
    body: &[u8],
    compile: impl FnOnce(&RawValue) -> Arc<CompiledTools>,
    sink: &mut ViolationSink,
) -> (ResponsesRequest, Option<Arc<CompiledTools>>) {
    let Some(fields) = common::read_object::<Fields>(body) else {
        return (ResponsesRequest::default(), None);
    };
    let mut judge = Judge::new(sink, Stage::Request);
    let compiled = fields.tools.as_deref().map(compile);
    let items = common::tool_items(fields.tools.as_deref().map(RawValue::get));
    let tools = declare(&items, compiled.as_deref(), &mut judge);
    if let Some(input) = fields
        .input
        .as_ref()
        .filter(|raw| raw.get().contains("call_id"))
    {
        let continues = [&fields.previous_response_id, &fields.conversation]
            .iter()
            .any(|field| field.as_ref().is_some_and(|v| !v.is_null()));
        check_input(input, continues, &mut judge);
    }
    let choice = tool_choice::interpret(fields.tool_choice.as_ref());
    tool_choice::check_request(&choice, &tools, !items.is_empty(), &mut judge);
    let facts = RequestFacts {
        tools: tools.keys().cloned().collect(),
        tool_choice: fields.tool_choice.map(KeptJson::from),
        parallel_tool_calls: fields.parallel_tool_calls.as_ref().and_then(Value::as_bool),
        ..common::facts(fields.model.as_ref(), fields.stream.as_ref())
    };
    let request = ResponsesRequest {
        facts,
        tools,
        declares: !items.is_empty(),
        choice,
        raw_tools: fields.tools,
    };
    (request, compiled)
}

/// The function and custom tools by name, judging each declaration (`judge`: at the request's
/// root).
fn declare(
    items: &[Value],
    compiled: Option<&CompiledTools>,
    judge: &mut Judge<'_>,
) -> BTreeMap<String, Tool> {
    let mut tools = BTreeMap::new();
    for (position, tool) in items.iter().enumerate() {
        let mut judge = judge.under_at("/tools/", position);
        let Some(kind) = Kind::parse(tool.get("type").and_then(Value::as_str)) else {
            continue;
        };
        let name = tool.get("name").and_then(Value::as_str);
        if kind == Kind::Function && name.is_none() && tool.get("function").is_some() {
            let detail = "a Chat Completions tool (nested `function` object) sent to /responses; Responses tools are flat";
            let rule = RuleId::ResponsesRequestToolShapeChatStyle;
            judge.flag(rule, "/function", detail);
            continue;
        }
        let rule = RuleId::ResponsesRequestToolNameInvalid;
        let Some(name) = common::tool_name(tool, rule, judge.site("/name"), judge.sink()) else {
            continue;
        };
        if tools.contains_key(name) {
            let detail = format!("tool name {name:?} is declared twice");
            judge.flag(RuleId::ResponsesRequestToolNameDuplicate, "/name", detail);
            continue;
        }
        let grammar = match kind {
            Kind::Function => {
                check_parameters(tool, &mut judge.under("/parameters"));
                None
            }
            Kind::Custom => {
                custom_format(tool.get("format"), compiled, &mut judge.under("/format"))
            }
        };
        let strict = tool.get("strict").and_then(Value::as_bool).unwrap_or(true);
        tools.insert(
            name.to_owned(),
            Tool {
                kind,
                strict,
                grammar,
            },
        );
    }
    tools
}

/// A function tool's `parameters` (`judge`: at them): an object schema, within strict mode's
/// subset when `strict` is true.
fn check_parameters(tool: &Value, judge: &mut Judge<'_>) {
    let Some(parameters) = tool.get("parameters").filter(|p| !p.is_null()) else {
        return;
    };
    if parameters.get("type").and_then(Value::as_str) != Some("object") {
        let detail = format!(
            "parameters should be an object schema, got {}",
            preview(parameters)
        );
        let rule = RuleId::ResponsesRequestParametersNotObjectSchema;
        return judge.flag(rule, "", detail);
    }
    if tool.get("strict").and_then(Value::as_bool) == Some(true)
        && let Some(reason) = strict_gap(parameters, "", 0)
    {
        judge.flag(RuleId::ResponsesRequestStrictSchemaIncompatible, "", reason);
    }
}

/// The first place a schema leaves strict mode's subset, searched to a bounded depth.
fn strict_gap(schema: &Value, path: &str, depth: usize) -> Option<String> {
    if depth > 16 {
        return None;
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    if schema.get("type").and_then(Value::as_str) == Some("object") || properties.is_some() {
        if schema.get("additionalProperties") != Some(&Value::Bool(false)) {
            return Some(format!(
                "strict: the object at `{path}` lacks additionalProperties:false"
            ));
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (key, property) in properties.into_iter().flatten() {
            if !required.contains(&key.as_str()) {
                return Some(format!(
                    "strict: property {key:?} at `{path}` is not required"
                ));
            }
            if let Some(gap) = strict_gap(property, &format!("{path}/properties/{key}"), depth + 1)
            {
                return Some(gap);
            }
        }
    }
    if let Some(items) = schema.get("items") {
        return strict_gap(items, &format!("{path}/items"), depth + 1);
    }
    None
}

/// A custom tool's `format` (`judge`: at it), and its regex grammar when it has one.
fn custom_format(
    format: Option<&Value>,
    compiled: Option<&CompiledTools>,
    judge: &mut Judge<'_>,
) -> Option<RegexGrammar> {
    let format = format.filter(|f| !f.is_null())?;
    let kind = format.get("type").and_then(Value::as_str);
    let syntax = format.get("syntax").and_then(Value::as_str);
    let definition = format.get("definition").and_then(Value::as_str);
    let problem = match (kind, syntax, definition) {
        (Some("text"), _, _) => return None,
        (Some("grammar"), Some("lark"), Some(_)) => return None,
        (Some("grammar"), Some("regex"), Some(definition)) => {
            match compiled.map_or(RegexGrammar::OverBudget, |c| c.grammar(definition)) {
                RegexGrammar::Invalid(problem) => problem,
                grammar => return Some(grammar),
            }
        }
        (Some("grammar"), _, _) => {
            "a grammar needs syntax \"lark\" or \"regex\" and a string definition".to_owned()
        }
        _ => format!(
            "format.type must be \"text\" or \"grammar\", got {}",
            preview(format)
        ),
    };
    judge.flag(RuleId::ResponsesRequestCustomFormatInvalid, "", problem);
    None
}

/// The longest `call_id` the spec allows on input items.
const MAX_CALL_ID: usize = 64;

/// `call_id_too_long` and `function_call_output_orphan` over the input items. A result whose
/// call is not in `input` is fine when the call lives server-side (`previous_response_id` or
/// `conversation` set).
fn check_input(input: &RawValue, continues: bool, judge: &mut Judge<'_>) {
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(input.get()) else {
        return;
    };
    let mut calls = std::collections::HashSet::new();
    for item in &items {
        if matches!(
            item.get("type").and_then(Value::as_str),
            Some("function_call" | "custom_tool_call")
        ) && let Some(id) = item.get("call_id").and_then(Value::as_str)
        {
            calls.insert(id);
        }
    }
    for (position, item) in items.iter().enumerate() {
        let Some(id) = item.get("call_id").and_then(Value::as_str) else {
            continue;
        };
        let mut judge = judge.under(format_args!("/input/{position}/call_id"));
        if id.len() > MAX_CALL_ID {
            let detail = format!(
                "call_id is {} characters; the spec allows {MAX_CALL_ID}",
                id.len()
            );
            judge.flag(RuleId::ResponsesRequestCallIdTooLong, "", detail);
        }
        let output = matches!(
            item.get("type").and_then(Value::as_str),
            Some("function_call_output" | "custom_tool_call_output")
        );
        if output && !continues && !calls.contains(id) {
            let detail = format!("a tool result for call_id {id:?}, which no call in input has");
            judge.flag(RuleId::ResponsesRequestFunctionCallOutputOrphan, "", detail);
        }
    }
}
