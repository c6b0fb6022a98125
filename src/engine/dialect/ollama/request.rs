//! Reads an Ollama `/api/chat` request and judges it (`ollama.request.*`).
//!
//! Input: the parsed request body. Output: [`OllamaRequest`]: the report's [`RequestFacts`]
//! (`stream` defaults to TRUE: Ollama streams unless `stream: false`), the declared function
//! names, the raw `tools` for the shared schema cache ([`TOOLS`]); and the request rules: a tool
//! that is not a function or has no `parameters`, history `tool_calls` whose `arguments` are not
//! an object, a message `content` that is not a string, `tool_choice` / `parallel_tool_calls`
//! (fields Ollama does not have), a tool result without `tool_name`.

use std::collections::BTreeSet;

use serde_json::Value;
use serde_json::value::RawValue;

use super::super::common;
use crate::engine::judge::Judge;
use crate::engine::report::KeptJson;
use crate::engine::report::RequestFacts;
use crate::engine::rules::RuleId;
use crate::engine::schema::{Declaration, ToolReading};
use crate::engine::violation::{Stage, ViolationSink};

/// How the schema cache reads Ollama's OpenAI-shaped `tools[]`:
/// `{"type":"function","function":{"name","parameters"}}`.
pub const TOOLS: ToolReading = ToolReading {
    key_prefix: "ollama:",
    tool: |tool, position| {
        let kind = tool
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("function");
        if kind != "function" {
            return None;
        }
        let function = tool.get("function")?;
        Some(Declaration {
            name: function.get("name")?.as_str()?,
            parameters_path: format!("/tools/{position}/function/parameters"),
            parameters: function.get("parameters"),
        })
    },
    grammars: None,
};

/// Everything the Ollama rules need from the request (by default: an unparsable body's,
/// declaring nothing).
#[derive(Debug, Clone, Default)]
pub struct OllamaRequest {
    pub facts: RequestFacts,
    /// The declared function names.
    pub declared: BTreeSet<String>,
    /// Whether `tools` declared any function.
    pub declares: bool,
    /// `tools` as sent, for the schema cache.
    pub raw_tools: Option<Box<RawValue>>,
}

/// Reads the request and judges its `ollama.request.*` rules.
pub fn read(body: Option<&Value>, sink: &mut ViolationSink) -> OllamaRequest {
    let Some(body) = body else {
        return OllamaRequest::default();
    };
    let mut judge = Judge::new(sink, Stage::Request);
    let mut facts = common::facts(body.get("model"), None);
    facts.stream = body.get("stream").and_then(Value::as_bool).unwrap_or(true);
    let tools = body.get("tools").and_then(Value::as_array);
    let mut declared = BTreeSet::new();
    for (position, tool) in tools.into_iter().flatten().enumerate() {
        judge_tool(tool, position, &mut judge);
        if let Some(declaration) = (TOOLS.tool)(tool, position) {
            declared.insert(declaration.name.to_owned());
        }
    }
    facts.tools = declared.iter().cloned().collect();
    for field in ["tool_choice", "parallel_tool_calls"] {
        if let Some(value) = body.get(field) {
            facts.tool_choice = (field == "tool_choice").then(|| KeptJson::from(value.clone()));
            judge.flag(
                RuleId::OllamaRequestToolChoiceIgnored,
                format!("/{field}"),
                format!("Ollama's ChatRequest has no {field}: it is silently ignored"),
            );
        }
    }
    let messages = body.get("messages").and_then(Value::as_array);
    for (position, message) in messages.into_iter().flatten().enumerate() {
        judge_message(message, position, &mut judge);
    }
    let raw_tools = body
        .get("tools")
        .filter(|_| !declared.is_empty())
        .and_then(|tools| serde_json::value::to_raw_value(tools).ok());
    OllamaRequest {
        facts,
        declares: !declared.is_empty(),
        declared,
        raw_tools,
    }
}

fn judge_tool(tool: &Value, position: usize, judge: &mut Judge<'_>) {
    let kind = tool.get("type");
    if kind.and_then(Value::as_str) != Some("function") {
        let shown = kind
            .map(common::preview)
            .unwrap_or_else(|| "nothing".into());
        judge.flag(
            RuleId::OllamaRequestToolTypeNotFunction,
            format!("/tools/{position}/type"),
            format!("a tool's type must be \"function\", got {shown}"),
        );
    }
    let function = tool.get("function");
    if function.is_some_and(|f| f.get("parameters").is_none_or(Value::is_null)) {
        let name = function
            .and_then(|f| f.get("name"))
            .map(common::preview)
            .unwrap_or_else(|| "a tool".into());
        judge.flag(
            RuleId::OllamaRequestToolMissingParameters,
            format!("/tools/{position}/function"),
            format!("{name} declares no parameters (Ollama's ToolDefinition requires them)"),
        );
    }
}

fn judge_message(message: &Value, position: usize, judge: &mut Judge<'_>) {
    let mut judge = judge.under_at("/messages/", position);
    if let Some(content) = message
        .get("content")
        .filter(|c| c.is_array() || c.is_object())
    {
        let kind = if content.is_array() {
            "an array"
        } else {
            "an object"
        };
        judge.flag(
            RuleId::OllamaRequestContentNotString,
            "/content",
            format!("a message's content must be a string, got {kind} (Ollama answers 400)"),
        );
    }
    let calls = message.get("tool_calls").and_then(Value::as_array);
    for (index, call) in calls.into_iter().flatten().enumerate() {
        let arguments = call.get("function").and_then(|f| f.get("arguments"));
        if let Some(arguments) = arguments.filter(|a| !a.is_object()) {
            judge.flag(
                RuleId::OllamaRequestArgumentsNotObject,
                format_args!("/tool_calls/{index}/function/arguments"),
                format!(
                    "history arguments must be a JSON object, got {} (Ollama answers 400: \
                     cannot unmarshal into api.ToolCallFunctionArguments)",
                    common::preview(arguments)
                ),
            );
        }
    }
    let role = message.get("role").and_then(Value::as_str);
    let named = message
        .get("tool_name")
        .and_then(Value::as_str)
        .is_some_and(|name| !name.is_empty());
    if role == Some("tool") && !named {
        let detail = if message.get("tool_call_id").is_some() {
            "a tool result carries tool_call_id and no tool_name: Ollama's templates name the \
             tool a result answers by tool_name"
        } else {
            "a tool result names no tool (no tool_name)"
        };
        judge.flag(RuleId::OllamaRequestToolResultUnnamed, "", detail);
    }
}
