//! Reads a Bedrock Converse request: what the response and stream rules compare against.
//!
//! Input: the request path (`.../model/{modelId}/converse` or `/converse-stream`: the model and
//! whether it streams) and the parsed body. Output: [`BedrockRequest`]: the report's
//! [`RequestFacts`], the declared tool names (and which are `strict`), the `toolChoice`, and the
//! raw `toolConfig.tools` array the shared schema cache compiles through [`TOOLS`]. Judges
//! nothing.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::engine::report::KeptJson;
use crate::engine::report::RequestFacts;
use crate::engine::schema::{Declaration, ToolReading};

/// How the schema cache reads `toolConfig.tools`: a `toolSpec` item declares a tool, its
/// parameters at `inputSchema.json`; `systemTool` and `cachePoint` items declare none.
pub const TOOLS: ToolReading = ToolReading {
    key_prefix: "bedrock:",
    tool: |item, position| {
        let spec = item.get("toolSpec")?;
        Some(Declaration {
            name: spec.get("name")?.as_str()?,
            parameters_path: format!("/toolConfig/tools/{position}/toolSpec/inputSchema/json"),
            parameters: spec
                .get("inputSchema")
                .and_then(|schema| schema.get("json")),
        })
    },
    grammars: None,
};

/// `toolConfig.toolChoice`, interpreted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Choice {
    /// Absent: the model decides (as `auto`).
    #[default]
    Unspecified,
    Auto,
    /// At least one tool call, no text.
    Any,
    /// This tool, by name.
    Tool(String),
    /// A union that is not one of the three: nothing is judged against it.
    Other,
}

/// Everything the Bedrock rules need from the request (by default: an unparsable body's,
/// declaring nothing).
#[derive(Debug, Clone, Default)]
pub struct BedrockRequest {
    pub(super) facts: RequestFacts,
    /// The declared tool names, each with whether its `toolSpec` set `strict: true`.
    pub(super) declared: BTreeMap<String, bool>,
    pub(super) choice: Choice,
    /// `toolConfig.tools` as sent, for the schema cache.
    pub(super) tools: Option<Box<RawValue>>,
}

/// The members of a Converse request the rules read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body {
    #[serde(default)]
    tool_config: Option<ToolConfig>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolConfig {
    #[serde(default)]
    tools: Option<Box<RawValue>>,
    #[serde(default)]
    tool_choice: Option<Value>,
}

/// Reads the request: `body` when it is a JSON object (else `None`), `path` where known.
pub fn read(body: Option<&[u8]>, path: Option<&str>) -> BedrockRequest {
    let (model, stream) = path.map(from_path).unwrap_or_default();
    let mut request = BedrockRequest::default();
    request.facts.model = model;
    request.facts.stream = stream;
    let Some(body) = body.and_then(|bytes| serde_json::from_slice::<Body>(bytes).ok()) else {
        return request;
    };
    request.facts.parsed = true;
    let Some(config) = body.tool_config else {
        return request;
    };
    if let Some(tools) = &config.tools {
        let items: Vec<Value> = serde_json::from_str(tools.get()).unwrap_or_default();
        for item in &items {
            let Some(spec) = item.get("toolSpec") else {
                continue;
            };
            if let Some(name) = spec.get("name").and_then(Value::as_str) {
                let strict = spec.get("strict").and_then(Value::as_bool) == Some(true);
                request.declared.entry(name.to_owned()).or_insert(strict);
            }
        }
        request.facts.tools = request.declared.keys().cloned().collect();
    }
    request.choice = config
        .tool_choice
        .as_ref()
        .map(read_choice)
        .unwrap_or_default();
    request.facts.tool_choice = config.tool_choice.map(KeptJson::from);
    request.tools = config.tools;
    request
}

fn read_choice(choice: &Value) -> Choice {
    let Some(members) = choice.as_object().filter(|members| members.len() == 1) else {
        return Choice::Other;
    };
    if members.contains_key("auto") {
        Choice::Auto
    } else if members.contains_key("any") {
        Choice::Any
    } else if let Some(name) = members
        .get("tool")
        .and_then(|tool| tool.get("name"))
        .and_then(Value::as_str)
    {
        Choice::Tool(name.to_owned())
    } else {
        Choice::Other
    }
}

/// The model id (percent-decoded: an ARN's `:` and `/` come encoded) and whether the path is
/// `converse-stream`, from `.../model/{modelId}/converse[-stream]` (query ignored).
pub fn from_path(path: &str) -> (Option<String>, bool) {
    let path = path
        .split('?')
        .next()
        .unwrap_or_default()
        .trim_end_matches('/');
    let (rest, stream) = match path.strip_suffix("/converse-stream") {
        Some(rest) => (rest, true),
        None => (path.strip_suffix("/converse").unwrap_or_default(), false),
    };
    let model = rest
        .rsplit_once('/')
        .map(|(_, id)| percent_decode(id))
        .filter(|id| !id.is_empty());
    (model, stream)
}

/// `%XX` sequences decoded (as UTF-8, lossily); anything else kept.
fn percent_decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes
            .get(at + 1..at + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match (bytes[at], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                at += 3;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_names_the_model_and_the_stream() {
        assert_eq!(
            from_path("/model/us.anthropic.claude-sonnet-4-5-v1%3A0/converse-stream"),
            (Some("us.anthropic.claude-sonnet-4-5-v1:0".to_owned()), true)
        );
        assert_eq!(
            from_path(
                "/bedrock/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.x/converse"
            ),
            (
                Some("arn:aws:bedrock:us-east-1:1:inference-profile/us.x".to_owned()),
                false
            )
        );
    }

    #[test]
    fn tools_and_choice_are_read() {
        let body = br#"{"messages":[],"toolConfig":{"tools":[
            {"toolSpec":{"name":"get_weather","inputSchema":{"json":{"type":"object"}},"strict":true}},
            {"cachePoint":{"type":"default"}}],
            "toolChoice":{"tool":{"name":"get_weather"}}}}"#;
        let request = read(Some(body), Some("/model/m/converse"));
        assert!(request.facts.parsed);
        assert_eq!(request.facts.tools, ["get_weather"]);
        assert_eq!(request.declared.get("get_weather"), Some(&true));
        assert_eq!(request.choice, Choice::Tool("get_weather".to_owned()));
        assert!(!request.facts.stream);
    }
}
