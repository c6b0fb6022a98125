//! Reads an Anthropic Messages request body: its facts, client tools and `tool_choice`, and
//! judges the declarations and the tool_use/tool_result history (`anthropic.request.*`).
//!
//! Input: the raw request bytes. Output: [`AnthropicRequest`] (the report's [`RequestFacts`],
//! the client tools by name with their strictness, the interpreted [`Choice`]) plus
//! request-stage violations. Client tools are `{"name","input_schema",...}`; server tools carry
//! a date-versioned `type` (`web_search_20250305`, `bash_20250124`, ...) and pass untouched.
//! The body is read in one pass ([`Fields::scanned`]), `messages` (most of an agent's request)
//! into the few facts the history rules read, which are judged only when it holds tool blocks
//! (see docs/benchmarks.md#anthropic-history).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::history::{self, History};
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

/// How Anthropic's `tools` array declares client tools: `{"name","input_schema"}` (no `type`,
/// or `custom`); server tools (a date-versioned `type`) declare none. Keyed apart too.
pub const TOOLS: ToolReading = ToolReading {
    key_prefix: "anthropic:",
    tool: |tool, position| {
        let kind = tool.get("type").and_then(Value::as_str);
        Some(Declaration {
            name: matches!(kind, None | Some("custom")).then(|| tool.get("name")?.as_str())??,
            parameters_path: format!("/tools/{position}/input_schema"),
            parameters: tool.get("input_schema"),
        })
    },
    grammars: None,
};

/// One declared client tool.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    /// `strict: true`: a schema mismatch is an error, otherwise a warning.
    pub strict: bool,
    /// `eager_input_streaming: true`: partial or invalid streamed input is expected.
    pub eager: bool,
}

/// The request's `tool_choice`, interpreted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Choice {
    #[default]
    Unspecified,
    Auto,
    Any,
    Tool(String),
    None,
    /// Not a valid choice (reported at the request stage): nothing is checked against it.
    Invalid,
    /// Forces a server tool (`web_search`, ...): its block is `server_tool_use`, not judged.
    Unchecked,
}

/// Everything the Anthropic rules need from the request (by default: an unparsable body's,
/// declaring nothing).
#[derive(Debug, Clone, Default)]
pub struct AnthropicRequest {
    pub facts: RequestFacts,
    pub tools: Arc<BTreeMap<String, Tool>>,
    /// Whether `tools` was a non-empty array (of any tool types).
    pub declares: bool,
    pub choice: Choice,
    /// `tool_choice.disable_parallel_tool_use: true`.
    pub single_call: bool,
}

/// What the `tools` array declares, read from its text alone: kept with its compiled schemas
/// when reading it reported nothing (see [`CompiledTools::keep_reading`]), so that an agent's
/// every turn does not parse and judge its array again.
#[derive(Debug, Clone, Default)]
struct Declarations {
    tools: Arc<BTreeMap<String, Tool>>,
    /// The server tools' names (`tool_choice` may force one).
    servers: Vec<String>,
    /// `tools` is a non-empty array.
    declares: bool,
}

/// The body's members the rules read, `messages` read into its history on the way.
#[derive(Default)]
struct Fields<'a> {
    basics: Basics<'a>,
    messages: Option<History<'a>>,
    thread: Option<Value>,
}

/// The same members as serde reads them, where the scan gives up.
#[derive(Deserialize)]
struct SerdeFields {
    model: Option<Value>,
    stream: Option<Value>,
    tools: Option<Box<RawValue>>,
    tool_choice: Option<Value>,
    messages: Option<Box<RawValue>>,
    thread: Option<Value>,
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
            messages: read.messages.map(History::raw),
            thread: read.thread,
        })
    }

    /// The fields read in one pass by [`json_scan`] (the members skipped checked as serde
    /// checks them, the history read as [`History::scan`] reads it), or `None` where it gives
    /// up: serde then reads the body. An agent's request is mostly its history, which serde
    /// would step over once and the rules read again. A `tools` array among `cache`'s recent
    /// ones is stepped over, not read, and comes with its compiled tools.
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
                "messages" => {
                    let history = json_scan::optional_with(scan, History::scan);
                    seen.fill(4, &mut f.messages, history)
                }
                "thread" => seen.fill(5, &mut f.thread, json_scan::optional(scan)),
                _ => scan.skip(),
            }
        })?;
        scan.end()?;
        Some(fields)
    }
}

/// The longest client tool name older platforms allowed (the current docs allow 128).
const OLD_MAX_NAME: usize = 64;

/// Reads the body; never fails (an unparsable body declares nothing). With the request, the
/// `tools` array's compiled tools from `cache` (compiled on first sight).
pub fn parse(
    body: &[u8],
    cache: &SchemaCache,
    sink: &mut ViolationSink,
) -> (AnthropicRequest, Option<Arc<CompiledTools>>) {
    judge_fields(Fields::read(body, Some(cache)), Some(cache), sink)
}

/// The request `fields` make (by default, when the body gave none), judged, and the compiled
/// tools of its array (none without a `cache`).
fn judge_fields(
    fields: Option<Fields<'_>>,
    cache: Option<&SchemaCache>,
    sink: &mut ViolationSink,
) -> (AnthropicRequest, Option<Arc<CompiledTools>>) {
    let Some(mut fields) = fields else {
        return (AnthropicRequest::default(), None);
    };
    let compiled = fields.basics.compiled(cache, &TOOLS);
    let Basics {
        model,
        stream,
        tools: text,
        tool_choice: choice_sent,
        ..
    } = fields.basics;
    let text = text.as_deref();
    let mut judge = Judge::new(sink, Stage::Request);
    let declared = common::kept_reading(compiled.as_deref(), &mut judge, |judge| {
        declarations(text, judge)
    });
    let servers: Vec<&str> = declared.servers.iter().map(String::as_str).collect();
    let (choice, single_call) =
        tool_choice(choice_sent.as_ref(), &declared.tools, &servers, &mut judge);
    if let Some(messages) = fields
        .messages
        .as_ref()
        .filter(|h| history::has_tool_blocks(h))
    {
        let continues = fields
            .thread
            .as_ref()
            .and_then(|thread| thread.get("type"))
            .and_then(Value::as_str)
            == Some("continue");
        history::check(messages, continues, &mut judge);
    }
    let facts = RequestFacts {
        tools: declared.tools.keys().cloned().collect(),
        tool_choice: choice_sent.map(KeptJson::from),
        parallel_tool_calls: single_call.then_some(false),
        ..common::facts(model.as_ref(), stream.as_ref())
    };
    let request = AnthropicRequest {
        facts,
        tools: Arc::clone(&declared.tools),
        declares: declared.declares,
        choice,
        single_call,
    };
    (request, compiled)
}

/// Reads and judges the `tools` array's `text`.
fn declarations(text: Option<&str>, judge: &mut Judge<'_>) -> Declarations {
    let items = common::tool_items(text);
    Declarations {
        tools: Arc::new(declare(&items, judge)),
        servers: items
            .iter()
            .filter(|tool| is_server_tool(tool))
            .filter_map(|tool| tool.get("name").and_then(Value::as_str))
            .map(str::to_owned)
            .collect(),
        declares: !items.is_empty(),
    }
}

/// A server tool: a `type` other than `custom` (date-versioned, e.g. `web_search_20250305`).
fn is_server_tool(tool: &Value) -> bool {
    matches!(tool.get("type").and_then(Value::as_str), Some(kind) if kind != "custom" && kind != "function")
}

/// The client tools by name, judging each declaration (`judge`: at the request's root).
fn declare(items: &[Value], judge: &mut Judge<'_>) -> BTreeMap<String, Tool> {
    let mut tools = BTreeMap::new();
    for (position, tool) in items.iter().enumerate() {
        let mut judge = judge.under_at("/tools/", position);
        let openai = tool.get("function").is_some()
            || tool.get("type").and_then(Value::as_str) == Some("function")
            || (tool.get("parameters").is_some() && tool.get("input_schema").is_none());
        if openai {
            let detail = "an OpenAI tool (`type:\"function\"`, `function{}` or `parameters`) sent to /messages; Anthropic tools are {name, input_schema}";
            judge.flag(RuleId::AnthropicRequestOpenaiToolShape, "", detail);
            continue;
        }
        if is_server_tool(tool) {
            continue;
        }
        let rule = RuleId::AnthropicRequestToolNameInvalid;
        let Some(name) = common::tool_name(tool, rule, judge.site("/name"), judge.sink()) else {
            continue;
        };
        if name.len() > OLD_MAX_NAME {
            let detail = format!(
                "tool name is {} characters: valid today, but older platforms cap names at {OLD_MAX_NAME}",
                name.len()
            );
            judge.warn(rule, "/name", detail);
        }
        check_input_schema(tool, &mut judge);
        tools.insert(
            name.to_owned(),
            Tool {
                strict: tool.get("strict").and_then(Value::as_bool) == Some(true),
                eager: tool.get("eager_input_streaming").and_then(Value::as_bool) == Some(true),
            },
        );
    }
    tools
}

/// `input_schema_invalid` unless a client tool's `input_schema` is an object schema (`judge`:
/// at the tool).
fn check_input_schema(tool: &Value, judge: &mut Judge<'_>) {
    let schema = tool.get("input_schema");
    if schema.and_then(|s| s.get("type")).and_then(Value::as_str) != Some("object") {
        let detail = match schema {
            None => "a client tool without input_schema".to_owned(),
            Some(schema) => format!(
                "input_schema.type must be \"object\", got {}",
                preview(schema)
            ),
        };
        let rule = RuleId::AnthropicRequestInputSchemaInvalid;
        judge.flag(rule, "/input_schema", detail);
    }
}

/// Interprets `tool_choice`, reporting `anthropic.request.tool_choice_invalid`; the second value
/// is `disable_parallel_tool_use`.
fn tool_choice(
    choice: Option<&Value>,
    tools: &BTreeMap<String, Tool>,
    servers: &[&str],
    judge: &mut Judge<'_>,
) -> (Choice, bool) {
    let Some(choice) = choice.filter(|c| !c.is_null()) else {
        return (Choice::Unspecified, false);
    };
    let single = choice
        .get("disable_parallel_tool_use")
        .and_then(Value::as_bool)
        == Some(true);
    let kind = choice.get("type").and_then(Value::as_str);
    let name = choice.get("name").and_then(Value::as_str);
    let (interpreted, problem) = match (choice.is_object(), kind) {
        (false, _) => (
            Choice::Invalid,
            Some(format!(
                "tool_choice must be an object like {{\"type\":\"auto\"}}, got {} (an OpenAI string?)",
                preview(choice)
            )),
        ),
        (true, Some("auto")) => (Choice::Auto, None),
        (true, Some("any")) => (Choice::Any, None),
        (true, Some("none")) => (Choice::None, None),
        (true, Some("tool")) => match name {
            None => (
                Choice::Invalid,
                Some("tool_choice type \"tool\" without a string name".to_owned()),
            ),
            Some(name) if servers.contains(&name) => (Choice::Unchecked, None),
            Some(name) if !tools.contains_key(name) => (
                Choice::Invalid,
                Some(format!(
                    "tool_choice names {name:?}, which no client tool declares"
                )),
            ),
            Some(name) => (Choice::Tool(name.to_owned()), None),
        },
        (true, _) => (
            Choice::Invalid,
            Some(format!(
                "tool_choice.type must be auto, any, tool or none, got {}",
                choice
                    .get("type")
                    .map(preview)
                    .unwrap_or_else(|| "nothing".into())
            )),
        ),
    };
    if let Some(problem) = problem {
        let rule = RuleId::AnthropicRequestToolChoiceInvalid;
        judge.flag(rule, "/tool_choice", problem);
    }
    (interpreted, single)
}

#[cfg(test)]
mod tests;
