//! Reads a Gemini `generateContent` / `streamGenerateContent` request: what the response and
//! stream rules compare against.
//!
//! Input: the request path (the model and the method name; `alt=sse` from the query) and the
//! parsed body. Output: [`GeminiRequest`]: the report's [`RequestFacts`], the declared function
//! names, the `functionCallingConfig` mode and allowed names, and the declarations flattened for
//! the shared schema cache ([`TOOLS`]). Every request field is read in both spellings proto-JSON
//! accepts (`functionDeclarations` and `function_declarations`, ...). The path and its query are
//! read, never kept: the query may carry a `key=` credential. Judges nothing: the request rules
//! (`gemini.request.*`) live in `request_rules` and its siblings.

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::openapi;
use crate::engine::report::KeptJson;
use crate::engine::report::RequestFacts;
use crate::engine::schema::{Declaration, ToolReading};

/// How the schema cache reads the flattened declarations [`GeminiRequest::flat_tools`] holds:
/// one item per declaration, `{"name","path","parameters"}`, `parameters` already JSON Schema.
pub const TOOLS: ToolReading = ToolReading {
    key_prefix: "gemini:",
    tool: |item, _| {
        Some(Declaration {
            name: item.get("name")?.as_str()?,
            parameters_path: item.get("path")?.as_str()?.to_owned(),
            parameters: item.get("parameters"),
        })
    },
    grammars: None,
};

/// `toolConfig.functionCallingConfig.mode`, interpreted (case-insensitively).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Mode {
    /// Absent, or `MODE_UNSPECIFIED`: the API's default, AUTO.
    #[default]
    Unspecified,
    Auto,
    /// Function calls only.
    Any,
    /// As if nothing were declared.
    None,
    /// Calls or text, the calls held to the allowed names and the declarations.
    Validated,
    /// A value the API does not have: nothing is judged against it.
    Other(String),
}

/// One declared function.
#[derive(Debug, Clone)]
pub struct Declared {
    /// JSON pointer to the declaration in the request body.
    pub path: String,
}

/// Everything the Gemini rules need from the request (by default: an unparsable body's,
/// declaring nothing).
#[derive(Debug, Clone, Default)]
#[allow(
    dead_code,
    reason = "the response rules and the request rules read these"
)]
pub struct GeminiRequest {
    pub(super) facts: RequestFacts,
    /// The declared functions by name (the first declaration of a repeated name).
    pub(super) declared: BTreeMap<String, Declared>,
    /// Whether any `functionDeclarations` array was non-empty.
    pub(super) declares: bool,
    pub(super) mode: Mode,
    /// `allowedFunctionNames`, when given as an array (its string items).
    pub(super) allowed: Option<Vec<String>>,
    /// The query asked for SSE framing (`alt=sse`).
    pub(super) alt_sse: bool,
    /// The path is Vertex AI's (`.../publishers/google/models/...`).
    pub(super) vertex: bool,
    /// `toolConfig.functionCallingConfig.streamFunctionCallArguments: true` (Vertex only).
    pub(super) stream_arguments: bool,
    /// The declarations flattened for the schema cache (see [`TOOLS`]); `None` when there are
    /// none.
    pub(super) flat_tools: Option<Box<RawValue>>,
}

/// What the path says: the model, the method's stream-ness, and the query's `alt=sse`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathFacts {
    pub model: Option<String>,
    pub stream: bool,
    pub alt_sse: bool,
    pub vertex: bool,
}

/// Reads the path (with its query). Nothing of it is kept but these facts.
pub fn path_facts(path: Option<&str>) -> PathFacts {
    let Some(path) = path else {
        return PathFacts::default();
    };
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    let path = path.trim_end_matches('/');
    let (resource, method) = path.rsplit_once(':').unwrap_or((path, ""));
    let model = resource
        .rsplit_once('/')
        .map(|(_, model)| model)
        .filter(|model| !model.is_empty())
        .map(str::to_owned);
    PathFacts {
        model,
        stream: method == "streamGenerateContent",
        alt_sse: query
            .split('&')
            .any(|pair| pair.eq_ignore_ascii_case("alt=sse")),
        vertex: resource.contains("/publishers/google/"),
    }
}

/// A member by either spelling: lowerCamel first, then snake_case.
pub fn member<'v>(value: &'v Value, camel: &str, snake: &str) -> Option<&'v Value> {
    value
        .get(camel)
        .or_else(|| value.get(snake))
        .filter(|member| !member.is_null())
}

/// `toolConfig.functionCallingConfig`, in either spelling.
pub fn calling_config(body: &Value) -> Option<&Value> {
    let config = member(body, "toolConfig", "tool_config")?;
    member(config, "functionCallingConfig", "function_calling_config")
}

/// Every `(tool position, declaration position, declaration)` across `tools[]`.
pub fn declarations(body: &Value) -> Vec<(usize, usize, &Value)> {
    let tools = body.get("tools").and_then(Value::as_array);
    let mut out = Vec::new();
    for (at, tool) in tools.into_iter().flatten().enumerate() {
        let list =
            member(tool, "functionDeclarations", "function_declarations").and_then(Value::as_array);
        for (position, declaration) in list.into_iter().flatten().enumerate() {
            out.push((at, position, declaration));
        }
    }
    out
}

/// The name of the `functionDeclarations` member a tool spells (for pointers).
fn declarations_key(tool: &Value) -> &'static str {
    if tool.get("functionDeclarations").is_some() {
        "functionDeclarations"
    } else {
        "function_declarations"
    }
}

/// Reads the request from its parsed body (`None`: not a JSON object) and its path.
pub fn read(body: Option<&Value>, path: Option<&str>) -> GeminiRequest {
    let on_path = path_facts(path);
    let Some(body) = body.filter(|body| body.is_object()) else {
        return GeminiRequest {
            facts: RequestFacts {
                model: on_path.model,
                stream: on_path.stream,
                ..RequestFacts::default()
            },
            alt_sse: on_path.alt_sse,
            vertex: on_path.vertex,
            ..GeminiRequest::default()
        };
    };
    let (declared, flat) = declared_functions(body);
    let config = calling_config(body);
    let mode = calling_mode(config);
    let allowed = allowed_names(config);
    let stream_arguments = config
        .and_then(|c| {
            member(
                c,
                "streamFunctionCallArguments",
                "stream_function_call_arguments",
            )
        })
        .and_then(Value::as_bool)
        == Some(true);
    let declares = !flat.is_empty();
    let flat_tools = declares
        .then(|| serde_json::value::to_raw_value(&Value::Array(flat)).ok())
        .flatten();
    let facts = RequestFacts {
        parsed: true,
        model: on_path.model,
        stream: on_path.stream,
        tools: declared.keys().cloned().collect(),
        tool_choice: member(body, "toolConfig", "tool_config")
            .cloned()
            .map(KeptJson::from),
        ..RequestFacts::default()
    };
    GeminiRequest {
        facts,
        declared,
        declares,
        mode,
        allowed,
        alt_sse: on_path.alt_sse,
        vertex: on_path.vertex,
        stream_arguments,
        flat_tools,
    }
}

/// The declared functions by name (the first declaration of a name wins), and every named
/// declaration flattened to `{name, path, parameters?}` for the schema cache.
fn declared_functions(body: &Value) -> (BTreeMap<String, Declared>, Vec<Value>) {
    let mut declared = BTreeMap::new();
    let mut flat = Vec::new();
    let tools = body.get("tools").and_then(Value::as_array);
    for (at, position, declaration) in declarations(body) {
        let key = tools
            .and_then(|tools| tools.get(at))
            .map(declarations_key)
            .unwrap_or("functionDeclarations");
        let path = format!("/tools/{at}/{key}/{position}");
        let Some(name) = declaration.get("name").and_then(Value::as_str) else {
            continue;
        };
        let mut item = Map::new();
        item.insert("name".into(), Value::String(name.to_owned()));
        if let Some((pointer, schema)) = parameters(declaration, &path) {
            item.insert("path".into(), Value::String(pointer));
            item.insert("parameters".into(), schema);
        } else {
            item.insert("path".into(), Value::String(path.clone()));
        }
        flat.push(Value::Object(item));
        declared.entry(name.to_owned()).or_insert(Declared { path });
    }
    (declared, flat)
}

/// `functionCallingConfig.mode`, read case-insensitively; absent is `MODE_UNSPECIFIED`.
fn calling_mode(config: Option<&Value>) -> Mode {
    match config.and_then(|c| c.get("mode")).and_then(Value::as_str) {
        None => Mode::Unspecified,
        Some(mode) => match mode.to_ascii_uppercase().as_str() {
            "MODE_UNSPECIFIED" => Mode::Unspecified,
            "AUTO" => Mode::Auto,
            "ANY" => Mode::Any,
            "NONE" => Mode::None,
            "VALIDATED" => Mode::Validated,
            _ => Mode::Other(mode.to_owned()),
        },
    }
}

/// `functionCallingConfig.allowedFunctionNames`, its string entries.
fn allowed_names(config: Option<&Value>) -> Option<Vec<String>> {
    config
        .and_then(|c| member(c, "allowedFunctionNames", "allowed_function_names"))
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
}

/// A declaration's parameters as JSON Schema, with the pointer to them: `parametersJsonSchema`
/// as it is, else `parameters` (the OpenAPI subset) converted ([`openapi::to_json_schema`]).
fn parameters(declaration: &Value, path: &str) -> Option<(String, Value)> {
    for key in ["parametersJsonSchema", "parameters_json_schema"] {
        if let Some(schema) = declaration.get(key).filter(|s| !s.is_null()) {
            return Some((format!("{path}/{key}"), schema.clone()));
        }
    }
    let schema = declaration.get("parameters").filter(|s| !s.is_null())?;
    Some((
        format!("{path}/parameters"),
        openapi::to_json_schema(schema),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_names_model_stream_and_framing_and_keeps_nothing_else() {
        let facts = path_facts(Some(
            "/v1beta/models/gemini-3-flash:streamGenerateContent?key=secret&alt=sse",
        ));
        assert_eq!(
            facts,
            PathFacts {
                model: Some("gemini-3-flash".into()),
                stream: true,
                alt_sse: true,
                vertex: false,
            }
        );
        let vertex = path_facts(Some(
            "/v1beta1/projects/p/locations/l/publishers/google/models/m:generateContent",
        ));
        assert_eq!(vertex.model.as_deref(), Some("m"));
        assert!(!vertex.stream && !vertex.alt_sse && vertex.vertex);
        let array = path_facts(Some("/v1/models/m:streamGenerateContent"));
        assert!(array.stream && !array.alt_sse);
        assert_eq!(path_facts(None), PathFacts::default());
    }

    #[test]
    fn declarations_mode_and_allowed_names_read_in_both_spellings() {
        for body in [
            serde_json::json!({
                "tools": [{"googleSearch": {}}, {"functionDeclarations": [
                    {"name": "a", "parameters": {"type": "OBJECT"}},
                    {"name": "b", "parametersJsonSchema": {"type": "object"}}
                ]}],
                "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["a"]}}
            }),
            serde_json::json!({
                "tools": [{"google_search": {}}, {"function_declarations": [
                    {"name": "a", "parameters": {"type": "OBJECT"}},
                    {"name": "b", "parameters_json_schema": {"type": "object"}}
                ]}],
                "tool_config": {"function_calling_config": {"mode": "any", "allowed_function_names": ["a"]}}
            }),
        ] {
            let request = read(Some(&body), Some("/v1beta/models/m:generateContent"));
            assert_eq!(request.facts.tools, ["a", "b"]);
            assert_eq!(request.mode, Mode::Any);
            assert_eq!(request.allowed.as_deref(), Some(&["a".to_owned()][..]));
            assert!(request.declares);
            let flat: Value =
                serde_json::from_str(request.flat_tools.as_deref().expect("flat").get())
                    .expect("json");
            assert_eq!(flat[0]["parameters"], serde_json::json!({"type": "object"}));
            assert!(flat[1]["path"].as_str().is_some_and(|p| {
                p.starts_with("/tools/1/")
                    && p.to_ascii_lowercase()
                        .replace('_', "")
                        .ends_with("jsonschema")
            }));
        }
    }
}
