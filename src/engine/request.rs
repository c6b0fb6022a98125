//! Parses the chat/completions request body into the facts the contract needs.
//!
//! Input: the raw request bytes handed to [`crate::engine::Exchange::new`]. Output: a
//! serializable [`RequestFacts`] for the report, the [`ToolChoice`] the rules check against, and
//! the raw `tools` array that [`crate::engine::schema::SchemaCache`] compiles.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the request asked for, as it goes into the report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestFacts {
    /// Whether the body parsed as a JSON object.
    pub parsed: bool,
    pub model: Option<String>,
    /// `stream: true` was requested.
    pub stream: bool,
    /// Names of the declared `type: "function"` tools, in declaration order.
    pub tools: Vec<String>,
    /// `tool_choice` exactly as sent.
    pub tool_choice: Option<Value>,
    pub parallel_tool_calls: Option<bool>,
    /// `stream_options.include_usage`.
    pub include_usage: Option<bool>,
}

/// The request's `tool_choice`, interpreted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// Absent: `auto` when tools are declared.
    Unspecified,
    None,
    Auto,
    Required,
    /// `{"type":"function","function":{"name":...}}`.
    Named(String),
    /// Something else (`allowed_tools`, a custom tool, an unknown string): not checked.
    Unchecked,
}

/// The parsed request: facts plus what the rules and the schema cache need.
#[derive(Debug, Clone)]
pub struct ParsedRequest {
    pub facts: RequestFacts,
    pub choice: ToolChoice,
    /// The `tools` array when it declares at least one tool.
    pub tools: Option<Value>,
}

/// Reads a request body. Never fails: an unparsable body gives `parsed: false` and no tools.
pub fn parse_request(body: &[u8]) -> ParsedRequest {
    let Ok(Value::Object(request)) = serde_json::from_slice::<Value>(body) else {
        return ParsedRequest {
            facts: RequestFacts::default(),
            choice: ToolChoice::Unspecified,
            tools: None,
        };
    };
    let tools = match request.get("tools") {
        Some(Value::Array(items)) if !items.is_empty() => Some(Value::Array(items.clone())),
        _ => None,
    };
    let names = tools.as_ref().map(declared_names).unwrap_or_default();
    let tool_choice = request.get("tool_choice").cloned();
    let choice = interpret_choice(tool_choice.as_ref());
    let facts = RequestFacts {
        parsed: true,
        model: request
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_owned),
        stream: request
            .get("stream")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        tools: names,
        tool_choice,
        parallel_tool_calls: request.get("parallel_tool_calls").and_then(Value::as_bool),
        include_usage: request
            .get("stream_options")
            .and_then(|options| options.get("include_usage"))
            .and_then(Value::as_bool),
    };
    ParsedRequest {
        facts,
        choice,
        tools,
    }
}

fn declared_names(tools: &Value) -> Vec<String> {
    let Some(items) = tools.as_array() else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(function_name)
        .map(str::to_owned)
        .collect()
}

/// The function name of a `{"type":"function","function":{"name":...}}` tool declaration.
/// A missing `type` is tolerated, as several SDKs and servers do.
pub fn function_name(tool: &Value) -> Option<&str> {
    let kind = tool
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("function");
    if kind != "function" {
        return None;
    }
    tool.get("function")?.get("name")?.as_str()
}

fn interpret_choice(choice: Option<&Value>) -> ToolChoice {
    match choice {
        None | Some(Value::Null) => ToolChoice::Unspecified,
        Some(Value::String(mode)) => match mode.as_str() {
            "none" => ToolChoice::None,
            "auto" => ToolChoice::Auto,
            "required" => ToolChoice::Required,
            _ => ToolChoice::Unchecked,
        },
        Some(object) => {
            let is_function = object.get("type").and_then(Value::as_str) == Some("function");
            let name = object
                .get("function")
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str);
            match (is_function, name) {
                (true, Some(name)) => ToolChoice::Named(name.to_owned()),
                _ => ToolChoice::Unchecked,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_seed_forced_request() {
        let body = br#"{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{}}}],"tool_choice":{"type":"function","function":{"name":"get_weather"}},"stream":true,"stream_options":{"include_usage":true},"parallel_tool_calls":false}"#;
        let parsed = parse_request(body);
        assert!(parsed.facts.parsed);
        assert_eq!(parsed.facts.tools, vec!["get_weather".to_owned()]);
        assert_eq!(parsed.choice, ToolChoice::Named("get_weather".to_owned()));
        assert!(parsed.facts.stream);
        assert_eq!(parsed.facts.include_usage, Some(true));
        assert_eq!(parsed.facts.parallel_tool_calls, Some(false));
        assert!(parsed.tools.is_some());
    }

    #[test]
    fn garbage_and_toolless_requests_declare_nothing() {
        let garbage = parse_request(b"not json");
        assert!(!garbage.facts.parsed && garbage.tools.is_none());
        let toolless = parse_request(br#"{"messages":[],"tools":[],"tool_choice":"required"}"#);
        assert!(toolless.facts.parsed && toolless.tools.is_none());
        assert_eq!(toolless.choice, ToolChoice::Required);
    }
}
