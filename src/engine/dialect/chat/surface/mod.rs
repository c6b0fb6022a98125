//! The rest of the Chat Completions tool-calling surface, request side: the legacy
//! `functions`/`function_call`, `type: "custom"` tools and `tool_choice: {"type":
//! "allowed_tools"}` (dialects.md §2(a)).
//!
//! Input: the [`ParsedRequest`] (its raw `tools` and `functions`, `function_call`,
//! `tool_choice`), the request body (read again only for a legacy request's `messages`) and the
//! schema cache. Output: a [`Surface`] the response rules compare against, and the
//! `chat_legacy.request.*`, `chat_custom.request.*` and `chat_allowed.request.*` violations.
//! Whether the request uses `functions`, `tools`, both or neither decides which shape of answer
//! is expected (`message.function_call` or `message.tool_calls`).

mod custom;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::request::ParsedRequest;
use crate::engine::custom_input::RegexGrammar;
use crate::engine::dialect::common;
use crate::engine::dialect::common::preview;
use crate::engine::judge::Judge;
use crate::engine::report::KeptJson;
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, Declaration, SchemaCache, ToolReading};
use crate::engine::violation::{Stage, ViolationSink};

/// How Chat's legacy `functions` array declares functions: `{"name","parameters"}`, no `type`
/// wrapper (keyed apart from `tools` arrays).
pub const FUNCTIONS: ToolReading = ToolReading {
    key_prefix: "functions:",
    tool: |tool, position| {
        Some(Declaration {
            name: tool.get("name")?.as_str()?,
            parameters_path: format!("/functions/{position}/parameters"),
            parameters: tool.get("parameters"),
        })
    },
    grammars: None,
};

/// Which declarations the request sent (non-null keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Neither `tools` nor `functions`.
    #[default]
    Neither,
    /// Only `tools`: answers carry `tool_calls`.
    Tools,
    /// Only the legacy `functions`: answers carry one `function_call`.
    Functions,
    /// Both: providers pick either shape, so neither is a switch.
    Both,
}

/// The request's legacy `function_call`, interpreted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum FunctionCall {
    #[default]
    Unspecified,
    None,
    Auto,
    /// `{"name": X}`: exactly this function must be called.
    Named(String),
    /// Anything else: not checked.
    Unchecked,
}

/// `tool_choice: {"type":"allowed_tools","allowed_tools":{"mode","tools"}}`, when well formed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    /// `mode: "required"` (else `"auto"`).
    pub required: bool,
    /// The names of the allowed tools (functions and custom tools alike).
    pub names: Vec<String>,
}

/// What the response rules of the wider Chat surface need from the request.
#[derive(Debug, Clone, Default)]
pub struct Surface {
    pub mode: Mode,
    /// The compiled legacy `functions` (names and parameter schemas).
    pub functions: Option<Arc<CompiledTools>>,
    pub function_call: FunctionCall,
    /// Declared `type: "custom"` tools by name, with their `regex` grammar if any.
    pub custom: BTreeMap<String, Option<RegexGrammar>>,
    pub allowed: Option<Allowed>,
}

/// The most `functions` the spec allows.
const MAX_FUNCTIONS: usize = 128;

impl Surface {
    /// Reads the surface and reports its request-stage violations. `tools` are the compiled
    /// `tools` function declarations (for `allowed_tools` lookups).
    pub fn new(
        cache: &SchemaCache,
        request: &ParsedRequest,
        body: &[u8],
        tools: Option<&CompiledTools>,
        sink: &mut ViolationSink,
    ) -> Surface {
        let judge = &mut Judge::new(sink, Stage::Request);
        let has_tools = request.tools.as_ref().is_some_and(|t| t.get() != "null");
        let has_functions = request
            .functions
            .as_ref()
            .is_some_and(|f| f.get() != "null");
        let mode = match (has_tools, has_functions) {
            (false, false) => Mode::Neither,
            (true, false) => Mode::Tools,
            (false, true) => Mode::Functions,
            (true, true) => Mode::Both,
        };
        if mode == Mode::Both {
            let detail =
                "both `functions` and `tools` were sent: providers answer with either shape";
            judge.flag(
                RuleId::ChatLegacyRequestMixedFunctionsAndTools,
                "/functions",
                detail,
            );
        }
        let mut surface = Surface {
            mode,
            ..Surface::default()
        };
        if let Some(raw) = request.functions.as_ref().filter(|_| has_functions) {
            let functions = cache.tools_for_text(raw.get(), &FUNCTIONS);
            check_functions(raw.get(), judge);
            surface.functions = Some(functions);
            check_function_messages(body, judge);
        }
        let function_call = interpret_function_call(request, has_functions, &surface, judge);
        surface.function_call = function_call;
        // Custom tools are rare: the array is read again only when it can hold one (an array
        // that declares nothing holds none).
        if let Some(raw) = request
            .tools
            .as_ref()
            .filter(|_| tools.is_some_and(CompiledTools::mentions_custom))
            && let Ok(Value::Array(items)) = serde_json::from_str::<Value>(raw.get())
        {
            surface.custom = custom::declare_custom(&items, tools, judge);
        }
        let choice = custom_choice(request.facts.tool_choice.as_ref());
        let choice = choice.as_deref();
        custom::check_custom_choice(choice, &surface, judge);
        surface.allowed = custom::allowed_tools(choice, tools, &surface.custom, judge);
        surface
    }
}

/// `tool_choice`'s tree when it can be a custom or an allowed_tools choice (both rare): kept as
/// text, it is read only when the text names one of them or holds an escape that could spell one.
fn custom_choice(choice: Option<&KeptJson>) -> Option<Cow<'_, Value>> {
    let choice = choice.filter(|choice| match choice {
        KeptJson::Text(text) => ["custom", "allowed_tools", "\\"]
            .iter()
            .any(|word| text.contains(word)),
        KeptJson::Tree(_) => true,
    })?;
    Some(choice.value())
}

/// Count, names and duplicates of the `functions` array.
fn check_functions(text: &str, judge: &mut Judge<'_>) {
    let count = RuleId::ChatLegacyRequestFunctionsCountInvalid;
    let items = match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) if (1..=MAX_FUNCTIONS).contains(&items.len()) => items,
        Ok(Value::Array(items)) => {
            let detail = format!(
                "functions holds {} entries; the spec allows 1 to {MAX_FUNCTIONS}",
                items.len()
            );
            return judge.flag(count, "/functions", detail);
        }
        other => {
            let shown = other.map_or_else(|_| "not JSON".to_owned(), |v| preview(&v));
            let detail = format!("functions must be an array of 1 to {MAX_FUNCTIONS}, got {shown}");
            return judge.flag(count, "/functions", detail);
        }
    };
    let mut seen = HashSet::new();
    for (position, function) in items.iter().enumerate() {
        let at = || format!("/functions/{position}/name");
        match function.get("name").and_then(Value::as_str) {
            Some(name) if common::valid_name(name, 64) => {
                if !seen.insert(name) {
                    let detail = format!("function name {name:?} is declared twice");
                    judge.flag(RuleId::ChatLegacyRequestFunctionNameDuplicate, at(), detail);
                }
            }
            _ => {
                let shown = function
                    .get("name")
                    .map_or_else(|| "nothing".to_owned(), preview);
                let detail =
                    format!("a function name must match ^[a-zA-Z0-9_-]{{1,64}}$, got {shown}");
                judge.flag(RuleId::ChatLegacyRequestFunctionNameInvalid, at(), detail);
            }
        }
    }
}

/// The legacy request's `messages`, read again (only for a request with `functions`).
#[derive(Deserialize)]
struct Messages {
    messages: Option<Value>,
}

/// Every `role: "function"` result needs a `name` that an earlier assistant `function_call`
/// called.
fn check_function_messages(body: &[u8], judge: &mut Judge<'_>) {
    let Ok(Messages {
        messages: Some(Value::Array(messages)),
    }) = serde_json::from_slice::<Messages>(body)
    else {
        return;
    };
    let mut called = HashSet::new();
    for (position, message) in messages.iter().enumerate() {
        if let Some(name) = message
            .get("function_call")
            .and_then(|call| call.get("name"))
            .and_then(Value::as_str)
        {
            called.insert(name);
        }
        if message.get("role").and_then(Value::as_str) != Some("function") {
            continue;
        }
        let detail = match message.get("name").and_then(Value::as_str) {
            None => "a role \"function\" message without a string name".to_owned(),
            Some(name) if !called.contains(name) => {
                format!(
                    "a function result for {name:?}, which no earlier assistant function_call called"
                )
            }
            Some(_) => continue,
        };
        let rule = RuleId::ChatLegacyRequestFunctionMessageInvalid;
        judge.flag(rule, format_args!("/messages/{position}/name"), detail);
    }
}

/// The request's legacy `function_call`, interpreted; set without `functions`, or naming a
/// function they do not declare, it is reported.
fn interpret_function_call(
    request: &ParsedRequest,
    has_functions: bool,
    surface: &Surface,
    judge: &mut Judge<'_>,
) -> FunctionCall {
    let Some(call) = request.function_call.as_ref().filter(|c| !c.is_null()) else {
        return FunctionCall::Unspecified;
    };
    if !has_functions {
        let detail = format!(
            "function_call {} is set but no functions are declared",
            preview(call)
        );
        let rule = RuleId::ChatLegacyRequestFunctionCallWithoutFunctions;
        judge.flag(rule, "/function_call", detail);
    }
    match call {
        Value::String(mode) if mode == "none" => FunctionCall::None,
        Value::String(mode) if mode == "auto" => FunctionCall::Auto,
        Value::Object(object) => match object.get("name").and_then(Value::as_str) {
            Some(name) => {
                let known = surface.functions.as_ref().map(|f| f.get(name).is_some());
                if known == Some(false) {
                    let detail =
                        format!("function_call names {name:?}, which functions do not declare");
                    let rule = RuleId::ChatLegacyRequestFunctionCallUnknownName;
                    judge.flag(rule, "/function_call/name", detail);
                }
                FunctionCall::Named(name.to_owned())
            }
            None => FunctionCall::Unchecked,
        },
        _ => FunctionCall::Unchecked,
    }
}

#[cfg(test)]
mod tests;
