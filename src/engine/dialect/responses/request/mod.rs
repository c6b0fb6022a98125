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

use super::input::{self, Input};
use super::tool_choice;
use std::sync::Arc;

use crate::engine::custom_input::RegexGrammar;
use crate::engine::dialect::common;
use crate::engine::dialect::common::preview;
use crate::engine::dialect::request_basics::Basics;
use crate::engine::json_scan::{self, Scan, Seen};
use crate::engine::judge::Judge;
use crate::engine::report::KeptJson;
use crate::engine::report::RequestFacts;
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, Declaration, SchemaCache, ToolReading};
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
    pub tools: Arc<BTreeMap<String, Tool>>,
    /// Whether `tools` was a non-empty array (of any tool types).
    pub declares: bool,
    pub choice: Choice,
}

/// What the `tools` array declares, read from its text alone: kept with its compiled schemas
/// when reading it reported nothing (see [`common::kept_reading`]).
#[derive(Debug, Clone, Default)]
struct Declarations {
    tools: Arc<BTreeMap<String, Tool>>,
    /// `tools` is a non-empty array.
    declares: bool,
}

/// The body's members the rules read, `input` read into its items on the way.
#[derive(Default)]
struct Fields<'a> {
    basics: Basics<'a>,
    parallel_tool_calls: Option<Value>,
    /// Most of an agent's request: judged only when it holds call ids.
    input: Option<Input<'a>>,
    previous_response_id: Option<Value>,
    conversation: Option<Value>,
}

/// The same members as serde reads them, where the scan gives up.
#[derive(Deserialize)]
struct SerdeFields {
    model: Option<Value>,
    stream: Option<Value>,
    tools: Option<Box<RawValue>>,
    tool_choice: Option<Value>,
    parallel_tool_calls: Option<Value>,
    input: Option<Box<RawValue>>,
    previous_response_id: Option<Value>,
    conversation: Option<Value>,
}

impl<'a> Fields<'a> {
    /// The body's fields, or `None` when it is not one JSON object or does not parse (a member
    /// given twice included: serde's derived read refuses it).
    fn read(body: &'a [u8], cache: Option<&SchemaCache>) -> Option<Fields<'a>> {
        let scanned = |text| Fields::scanned(text, cache);
        common::read_fields(body, scanned, Fields::by_serde)
    }

    /// The fields as serde reads them.
    fn by_serde(body: &[u8]) -> Option<Fields<'a>> {
        let read: SerdeFields = common::from_json_bytes(body).ok()?;
        Some(Fields {
            basics: Basics::of_serde(read.model, read.stream, read.tools, read.tool_choice),
            parallel_tool_calls: read.parallel_tool_calls,
            input: read.input.map(Input::raw),
            previous_response_id: read.previous_response_id,
            conversation: read.conversation,
        })
    }

    /// The fields read in one pass by [`json_scan`] (the members skipped checked as serde
    /// checks them, `input` read as [`Input::scan`] reads it), or `None` where it gives up:
    /// serde then reads the body. A `tools` array among `cache`'s recent ones is stepped over,
    /// not read, and comes with its compiled tools.
    fn scanned(text: &'a str, cache: Option<&SchemaCache>) -> Option<Fields<'a>> {
        let mut fields = Fields::default();
        let mut seen = Seen::default();
        let mut scan = Scan::new(text);
        scan.object(|scan, key| {
            let f = &mut fields;
            if let Some(read) = f.basics.scan_member(key, scan, &mut seen, (cache, &TOOLS)) {
                return read;
            }
            match key {
                "parallel_tool_calls" => {
                    seen.fill(4, &mut f.parallel_tool_calls, json_scan::optional(scan))
                }
                "input" => {
                    let input = json_scan::optional_with(scan, Input::scan);
                    seen.fill(5, &mut f.input, input)
                }
                "previous_response_id" => {
                    seen.fill(6, &mut f.previous_response_id, json_scan::optional(scan))
                }
                "conversation" => seen.fill(7, &mut f.conversation, json_scan::optional(scan)),
                _ => scan.skip(),
            }
        })?;
        scan.end()?;
        Some(fields)
    }
}

/// Reads the body; never fails (an unparsable body declares nothing). With the request, the
/// `tools` array's compiled form from `cache` (compiled on first sight); its grammars are what
/// custom tools are judged by.
pub fn parse(
    body: &[u8],
    cache: &SchemaCache,
    sink: &mut ViolationSink,
) -> (ResponsesRequest, Option<Arc<CompiledTools>>) {
    judge_fields(Fields::read(body, Some(cache)), Some(cache), sink)
}

/// The request `fields` make (by default, when the body gave none), judged, and the compiled
/// tools of its array (none without a `cache`).
fn judge_fields(
    fields: Option<Fields<'_>>,
    cache: Option<&SchemaCache>,
    sink: &mut ViolationSink,
) -> (ResponsesRequest, Option<Arc<CompiledTools>>) {
    let Some(mut fields) = fields else {
        return (ResponsesRequest::default(), None);
    };
    let compiled = fields.basics.compiled(cache, &TOOLS);
    let Basics {
        model,
        stream,
        tools: text,
        tool_choice,
        ..
    } = fields.basics;
    let text = text.as_deref();
    let mut judge = Judge::new(sink, Stage::Request);
    let declared = common::kept_reading(compiled.as_deref(), &mut judge, |judge| {
        let items = common::tool_items(text);
        Declarations {
            tools: Arc::new(declare(&items, compiled.as_deref(), judge)),
            declares: !items.is_empty(),
        }
    });
    if let Some(input) = fields
        .input
        .as_ref()
        .filter(|input| input::has_call_ids(input))
    {
        let continues = [&fields.previous_response_id, &fields.conversation]
            .iter()
            .any(|field| field.as_ref().is_some_and(|v| !v.is_null()));
        input::check(input, continues, &mut judge);
    }
    let choice = tool_choice::interpret(tool_choice.as_ref());
    tool_choice::check_request(&choice, &declared.tools, declared.declares, &mut judge);
    let facts = RequestFacts {
        tools: declared.tools.keys().cloned().collect(),
        tool_choice: tool_choice.map(KeptJson::from),
        parallel_tool_calls: fields.parallel_tool_calls.as_ref().and_then(Value::as_bool),
        ..common::facts(model.as_ref(), stream.as_ref())
    };
    let request = ResponsesRequest {
        facts,
        tools: Arc::clone(&declared.tools),
        declares: declared.declares,
        choice,
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

#[cfg(test)]
mod tests;
