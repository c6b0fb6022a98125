//! The declaration rules: `gemini.request.function_name_invalid`, `function_name_over_64`,
//! `duplicate_function_name`, `parameters_and_json_schema_both`,
//! `parameters_json_schema_not_object` and `object_without_properties`.
//!
//! Input: the parsed request body. Output: request-stage violations at pointers into
//! `tools[].functionDeclarations[]` (or `function_declarations`). A name is valid when it starts
//! with a letter or an underscore, uses only `[A-Za-z0-9_.:-]` and is at most 128 characters
//! (the `FunctionDeclaration.name` docstring); a valid name of 65 to 128 characters is the
//! over-64 warning. The work is one pass over the declarations plus one over each `parameters`
//! tree, remembering each name once (borrowed) for the duplicate check.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use serde_json::Value;

use super::keyed;
use crate::engine::dialect::common::preview;
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;
use crate::engine::violation::pointer_token;

/// The longest name the docstring allows.
const MAX_NAME: usize = 128;
/// The older limit some models and routes still answer 400 with.
const OLD_MAX_NAME: usize = 64;

/// Where a declaration sits: tool position, the declarations key the tool spelled, position.
type Place = (usize, &'static str, usize);

fn pointer((tool, key, position): Place, suffix: &str) -> String {
    format!("/tools/{tool}/{key}/{position}{suffix}")
}

/// Judges every declaration of `tools[]`.
pub(super) fn check(request: &Value, judge: &mut Judge<'_>) {
    let Some(tools) = request.get("tools").and_then(Value::as_array) else {
        return;
    };
    let mut seen: HashMap<&str, Place> = HashMap::new();
    for (tool_at, tool) in tools.iter().enumerate() {
        let Some((key, Value::Array(list))) =
            keyed(tool, "functionDeclarations", "function_declarations")
        else {
            continue;
        };
        for (position, declaration) in list.iter().enumerate() {
            let place = (tool_at, key, position);
            if let Some(name) = name(declaration, place, judge) {
                match seen.entry(name) {
                    Entry::Occupied(first) => duplicate(name, place, *first.get(), judge),
                    Entry::Vacant(slot) => {
                        slot.insert(place);
                    }
                }
            }
            schemas(declaration, place, judge);
        }
    }
}

fn duplicate(name: &str, place: Place, first: Place, judge: &mut Judge<'_>) {
    judge.flag(
        RuleId::GeminiRequestDuplicateFunctionName,
        pointer(place, "/name"),
        format!(
            "{} is declared already at {}",
            preview(&Value::String(name.to_owned())),
            pointer(first, "")
        ),
    );
}

/// Judges a declaration's name; gives it back when it is a string (valid or not), for the
/// duplicate check.
fn name<'v>(declaration: &'v Value, place: Place, judge: &mut Judge<'_>) -> Option<&'v str> {
    let at = pointer(place, "/name");
    let invalid = RuleId::GeminiRequestFunctionNameInvalid;
    let Some(name) = declaration.get("name").and_then(Value::as_str) else {
        let shown = declaration
            .get("name")
            .map(preview)
            .unwrap_or_else(|| "nothing".into());
        let detail = format!("a function declaration needs a string name, got {shown}");
        judge.flag(invalid, &at, detail);
        return None;
    };
    let shown = || preview(&Value::String(name.to_owned()));
    if let Some(fault) = name_fault(name) {
        judge.flag(
            invalid,
            &at,
            format!("the function name {} {fault}", shown()),
        );
    } else if name.len() > OLD_MAX_NAME {
        judge.flag(
            RuleId::GeminiRequestFunctionNameOver64,
            &at,
            format!(
                "the function name {} has {} characters: some models and routes still allow {OLD_MAX_NAME}",
                shown(),
                name.len()
            ),
        );
    }
    Some(name)
}

/// What is wrong with a name, if anything.
fn name_fault(name: &str) -> Option<String> {
    let Some(first) = name.bytes().next() else {
        return Some("is empty".into());
    };
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return Some("must start with a letter or an underscore".into());
    }
    let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-');
    if !name.bytes().all(allowed) {
        return Some("has a character outside [A-Za-z0-9_.:-]".into());
    }
    (name.len() > MAX_NAME).then(|| format!("has {} characters, past {MAX_NAME}", name.len()))
}

/// `parameters` beside `parametersJsonSchema`, a JSON schema that is not an object's, and
/// OBJECT schemas without properties inside `parameters`.
fn schemas(declaration: &Value, place: Place, judge: &mut Judge<'_>) {
    let parameters = declaration.get("parameters").filter(|p| !p.is_null());
    let json_schema = keyed(
        declaration,
        "parametersJsonSchema",
        "parameters_json_schema",
    );
    if let (Some(_), Some((key, _))) = (parameters, json_schema) {
        judge.flag(RuleId::GeminiRequestParametersAndJsonSchemaBoth, pointer(place, &format!("/{key}")), format!("parameters and {key} are both set: they are mutually exclusive (tooltap checks calls against {key})"));
    }
    if let Some((key, schema)) = json_schema {
        json_schema_not_object(schema, &pointer(place, &format!("/{key}")), judge);
    }
    if let Some(parameters) = parameters {
        objects_without_properties(parameters, pointer(place, "/parameters"), judge);
    }
}

/// A JSON schema describes an object unless it is not a schema object or its `type` names no
/// `object` (a schema without `type` may still describe one, and is not judged).
fn json_schema_not_object(schema: &Value, at: &str, judge: &mut Judge<'_>) {
    let is_object = |kind: &Value| kind.as_str() == Some("object");
    let fault = match schema {
        Value::Object(members) => match members.get("type") {
            None | Some(Value::Null) => None,
            Some(Value::Array(kinds)) if kinds.iter().any(is_object) => None,
            Some(kind) if is_object(kind) => None,
            Some(kind) => Some((format!("{at}/type"), format!("type {}", preview(kind)))),
        },
        other => Some((at.to_owned(), preview(other))),
    };
    if let Some((path, shown)) = fault {
        judge.flag(
            RuleId::GeminiRequestParametersJsonSchemaNotObject,
            path,
            format!("parametersJsonSchema must describe an object, got {shown}"),
        );
    }
}

/// Every schema of type OBJECT (any case) in a `parameters` tree, reached through
/// `properties`, `items` and `anyOf`, whose `properties` is missing or empty: Google answers
/// 400 "should be non-empty for OBJECT type". An explicit stack, so depth costs no recursion.
fn objects_without_properties(parameters: &Value, at: String, judge: &mut Judge<'_>) {
    let mut stack = vec![(parameters, at)];
    while let Some((schema, at)) = stack.pop() {
        let Value::Object(members) = schema else {
            continue;
        };
        let properties = members.get("properties").and_then(Value::as_object);
        let is_object = members
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|kind| kind.eq_ignore_ascii_case("object"));
        if is_object && properties.is_none_or(|p| p.is_empty()) {
            let (path, what) = match members.get("properties") {
                Some(_) => (format!("{at}/properties"), "empty properties"),
                None => (at.clone(), "no properties"),
            };
            judge.flag(RuleId::GeminiRequestObjectWithoutProperties, path, format!("a parameters schema of type OBJECT with {what}: Gemini answers 400 \"should be non-empty for OBJECT type\""));
        }
        for (name, child) in properties.into_iter().flatten() {
            stack.push((child, format!("{at}/properties/{}", pointer_token(name))));
        }
        if let Some(items) = members.get("items") {
            stack.push((items, format!("{at}/items")));
        }
        if let Some(Value::Array(options)) = members.get("anyOf") {
            for (position, option) in options.iter().enumerate() {
                stack.push((option, format!("{at}/anyOf/{position}")));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{judged, one};
    use super::*;

    const PATH: &str = "/v1beta/models/gemini-2.5-flash:generateContent";

    fn declaring(declarations: Value) -> Value {
        json!({"tools": [{"functionDeclarations": declarations}]})
    }

    fn named(name: &str) -> Value {
        declaring(json!([{"name": name}]))
    }

    #[test]
    fn names_are_judged_at_the_64_and_128_character_boundaries() {
        let at = "/tools/0/functionDeclarations/0/name".to_owned();
        for length in [1, 63, 64] {
            assert!(
                judged(&named(&"a".repeat(length)), PATH).is_empty(),
                "{length}"
            );
        }
        for length in [65, 128] {
            assert_eq!(
                judged(&named(&"a".repeat(length)), PATH),
                one(
                    "gemini.request.function_name_over_64",
                    at.clone(),
                    "warning"
                ),
                "{length}"
            );
        }
        assert_eq!(
            judged(&named(&"a".repeat(129)), PATH),
            one("gemini.request.function_name_invalid", at.clone(), "error")
        );
    }

    #[test]
    fn names_start_with_a_letter_or_underscore_and_use_the_allowed_characters() {
        for valid in ["get_weather", "_private", "ns.get:weather-2", "A"] {
            assert!(judged(&named(valid), PATH).is_empty(), "{valid}");
        }
        for invalid in ["", "1st", "-x", ".x", "get weather", "wetter_für", "a/b"] {
            assert_eq!(
                judged(&named(invalid), PATH),
                one(
                    "gemini.request.function_name_invalid",
                    "/tools/0/functionDeclarations/0/name",
                    "error"
                ),
                "{invalid:?}"
            );
        }
        for not_string in [json!([{}]), json!([{"name": 7}]), json!([{"name": null}])] {
            assert_eq!(
                judged(&declaring(not_string.clone()), PATH).len(),
                1,
                "{not_string}"
            );
        }
    }

    #[test]
    fn a_name_declared_twice_across_tools_is_a_duplicate_at_the_second() {
        let body = json!({"tools": [
            {"functionDeclarations": [{"name": "a"}, {"name": "b"}]},
            {"googleSearch": {}},
            {"function_declarations": [{"name": "b"}, {"name": "b"}]}
        ]});
        assert_eq!(
            judged(&body, PATH),
            [
                (
                    "gemini.request.duplicate_function_name",
                    "/tools/2/function_declarations/0/name".into(),
                    "warning"
                ),
                (
                    "gemini.request.duplicate_function_name",
                    "/tools/2/function_declarations/1/name".into(),
                    "warning"
                ),
            ]
        );
    }

    #[test]
    fn parameters_and_a_json_schema_are_exclusive_in_either_spelling() {
        for key in ["parametersJsonSchema", "parameters_json_schema"] {
            let body = declaring(json!([{
                "name": "f",
                "parameters": {"type": "OBJECT", "properties": {"x": {"type": "STRING"}}},
                key: {"type": "object"}
            }]));
            assert_eq!(
                judged(&body, PATH),
                one(
                    "gemini.request.parameters_and_json_schema_both",
                    format!("/tools/0/functionDeclarations/0/{key}"),
                    "error"
                )
            );
        }
        let null_parameters = declaring(
            json!([{"name": "f", "parameters": null, "parametersJsonSchema": {"type": "object"}}]),
        );
        assert!(judged(&null_parameters, PATH).is_empty());
    }

    #[test]
    fn a_json_schema_must_describe_an_object() {
        for clean in [
            json!({"type": "object"}),
            json!({"type": ["object", "null"]}),
            json!({"properties": {}}),
            json!({}),
        ] {
            let body = declaring(json!([{"name": "f", "parametersJsonSchema": clean.clone()}]));
            assert!(judged(&body, PATH).is_empty(), "{clean}");
        }
        let at = "/tools/0/functionDeclarations/0/parametersJsonSchema";
        for (schema, path) in [
            (json!({"type": "string"}), format!("{at}/type")),
            (json!({"type": "OBJECT"}), format!("{at}/type")),
            (json!({"type": ["array", "null"]}), format!("{at}/type")),
            (json!(true), at.to_owned()),
            (json!("object"), at.to_owned()),
        ] {
            let body = declaring(json!([{"name": "f", "parametersJsonSchema": schema.clone()}]));
            assert_eq!(
                judged(&body, PATH),
                one(
                    "gemini.request.parameters_json_schema_not_object",
                    path,
                    "error"
                ),
                "{schema}"
            );
        }
    }

    #[test]
    fn object_schemas_need_properties_at_every_depth() {
        let at = "/tools/0/functionDeclarations/0/parameters";
        for (parameters, path) in [
            (
                json!({"type": "OBJECT", "properties": {}}),
                format!("{at}/properties"),
            ),
            (json!({"type": "object"}), at.to_owned()),
            (
                json!({"type": "OBJECT", "properties": {"a/b": {"type": "OBJECT", "properties": {}}}}),
                format!("{at}/properties/a~1b/properties"),
            ),
            (
                json!({"type": "OBJECT", "properties": {"list": {"type": "ARRAY", "items": {"type": "OBJECT"}}}}),
                format!("{at}/properties/list/items"),
            ),
            (
                json!({"type": "OBJECT", "properties": {"x": {"anyOf": [{"type": "STRING"}, {"type": "OBJECT"}]}}}),
                format!("{at}/properties/x/anyOf/1"),
            ),
        ] {
            let body = declaring(json!([{"name": "f", "parameters": parameters.clone()}]));
            assert_eq!(
                judged(&body, PATH),
                one("gemini.request.object_without_properties", path, "warning"),
                "{parameters}"
            );
        }
        let fine = json!({"type": "OBJECT", "properties": {"x": {"type": "STRING"}, "y": {"type": "ARRAY", "items": {"type": "INTEGER"}}}});
        assert!(judged(&declaring(json!([{"name": "f", "parameters": fine}])), PATH).is_empty());
        // A JSON schema is not the OpenAPI subset: an object without properties is fine there.
        let json_schema =
            declaring(json!([{"name": "f", "parametersJsonSchema": {"type": "object"}}]));
        assert!(judged(&json_schema, PATH).is_empty());
    }
}
