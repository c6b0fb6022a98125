//! What a quirk needs to know about the request: the tool choice and the declared schemas.
//!
//! Input: the request body bytes of any dialect (anything; a body that is not JSON gives the
//! empty context; Anthropic's `tool_choice` `any` requires a call, `tool` names one; Gemini's
//! `allowedFunctionNames` under mode `ANY`/`VALIDATED` restricts the names).
//! Output: a [`RequestContext`]. `tool-choice-ignored` only applies when the request forced a
//! call (else prose is a legal answer), and `args-schema-violation` breaks the declared schema
//! of the called function, so both read it from here.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::catalogue::RequestKind;

#[derive(Debug, Clone, Default)]
pub struct RequestContext {
    /// `tool_choice` names a function.
    pub forced_function: bool,
    /// `tool_choice` is `"required"` or names a function: prose is not a legal answer.
    pub call_required: bool,
    /// Gemini's `allowedFunctionNames` under mode `ANY` or `VALIDATED` (either spelling).
    pub names_restricted: bool,
    /// Declared `parameters` by function name.
    pub schemas: HashMap<String, Value>,
    /// The request uses Chat's legacy `functions`, a `type: "custom"` tool or `allowed_tools`,
    /// which no quirk models: none applies.
    pub other_surface: bool,
}

impl RequestContext {
    pub fn parse(body: &[u8]) -> RequestContext {
        let Ok(Value::Object(request)) = serde_json::from_slice::<Value>(body) else {
            return RequestContext::default();
        };
        // An object names a tool, except Anthropic's `{"type": "auto" | "any" | "none"}`.
        let choice_type = request
            .get("tool_choice")
            .and_then(|choice| choice.get("type"))
            .and_then(Value::as_str);
        let forced_function = matches!(request.get("tool_choice"), Some(Value::Object(_)))
            && !matches!(choice_type, Some("auto" | "any" | "none"));
        let call_required = forced_function
            || request.get("tool_choice") == Some(&Value::from("required"))
            || choice_type == Some("any");
        let schemas = request
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|tool| {
                let function = tool.get("function")?;
                let name = function.get("name")?.as_str()?.to_owned();
                let parameters = function.get("parameters").cloned().unwrap_or(Value::Null);
                Some((name, parameters))
            })
            .collect();
        let custom_tool = request
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|tools| {
                tools
                    .iter()
                    .any(|tool| tool.get("type").and_then(Value::as_str) == Some("custom"))
            });
        let other_surface = request.get("functions").is_some_and(|f| !f.is_null())
            || request.get("function_call").is_some_and(|f| !f.is_null())
            || custom_tool
            || matches!(choice_type, Some("custom" | "allowed_tools"));
        RequestContext {
            forced_function,
            call_required,
            names_restricted: gemini_names_restricted(&request),
            schemas,
            other_surface,
        }
    }

    pub fn kind(&self) -> RequestKind {
        RequestKind {
            forced_function: self.forced_function,
            call_required: self.call_required,
            names_restricted: self.names_restricted,
        }
    }

    /// `arguments` rewritten to break `name`'s declared schema: the first required property
    /// dropped, else an undeclared property added where `additionalProperties` is false.
    /// `None` when the arguments are not an object or the schema leaves nothing to break.
    pub fn violate_schema(&self, name: &str, arguments: &str) -> Option<String> {
        let schema = self.schemas.get(name)?;
        let Ok(Value::Object(mut args)) = serde_json::from_str::<Value>(arguments) else {
            return None;
        };
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .and_then(|required| required.iter().find_map(Value::as_str));
        if let Some(property) = required.filter(|property| args.contains_key(*property)) {
            args.remove(property);
        } else if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
            args.insert("tooltap_quirk".to_owned(), Value::Bool(true));
        } else {
            return None;
        }
        Some(Value::Object(args).to_string())
    }
}

/// Whether a Gemini request holds its calls to `allowedFunctionNames`: mode `ANY` or
/// `VALIDATED` (any case) with a non-empty list, in camelCase or snake_case.
fn gemini_names_restricted(request: &Map<String, Value>) -> bool {
    let field = |object: &Map<String, Value>, camel: &str, snake: &str| {
        object.get(camel).or_else(|| object.get(snake)).cloned()
    };
    let Some(Value::Object(tool_config)) = field(request, "toolConfig", "tool_config") else {
        return false;
    };
    let Some(Value::Object(config)) = field(
        &tool_config,
        "functionCallingConfig",
        "function_calling_config",
    ) else {
        return false;
    };
    let mode = field(&config, "mode", "mode");
    let allowed = field(&config, "allowedFunctionNames", "allowed_function_names");
    let mode = mode
        .as_ref()
        .and_then(Value::as_str)
        .map(str::to_ascii_uppercase);
    matches!(mode.as_deref(), Some("ANY" | "VALIDATED"))
        && allowed
            .as_ref()
            .and_then(Value::as_array)
            .is_some_and(|names| !names.is_empty())
}

/// The prose a model writes instead of calling: the call spelled out as text.
pub fn call_as_prose(name: &str, arguments: &str) -> String {
    format!("I would call {name} with {arguments}.")
}

/// `object[key]` as a mutable object, when it is one.
pub fn object_mut<'v>(value: &'v mut Value, key: &str) -> Option<&'v mut Map<String, Value>> {
    value.get_mut(key).and_then(Value::as_object_mut)
}
