//! A Gemini declaration's `parameters` (the OpenAPI 3.0 subset `Schema`) read as JSON Schema,
//! so the shared schema cache compiles it as it compiles every other dialect's.
//!
//! Input: the `parameters` value. Output: a JSON Schema that holds the arguments to what the
//! subset says and no more: `type` lower-cased (`OBJECT` → `object`; `TYPE_UNSPECIFIED`
//! dropped), `nullable: true` adding `"null"` to the type, the structural keywords
//! (`properties`, `items`, `required`, `enum`, `anyOf`, bounds, `pattern`) kept and walked,
//! both spellings of the multi-word ones read (`minItems` / `min_items`, ...), the bounds also
//! when proto-JSON writes them as strings. Every other keyword (`format`, `example`,
//! `propertyOrdering`, ...) is left out: a keyword read wrong would judge valid arguments
//! broken, one left out only judges less.

use serde_json::{Map, Value};

/// Keywords kept as they are, by their JSON Schema name and their snake_case spelling.
const KEPT: [(&str, &str); 4] = [
    ("description", "description"),
    ("title", "title"),
    ("enum", "enum"),
    ("required", "required"),
];

/// Numeric keywords: proto-JSON writes the int64 ones as strings (`"minItems": "1"`), which
/// are read as numbers; a value that is neither is left out.
const NUMBERS: [(&str, &str); 8] = [
    ("minItems", "min_items"),
    ("maxItems", "max_items"),
    ("minimum", "minimum"),
    ("maximum", "maximum"),
    ("minLength", "min_length"),
    ("maxLength", "max_length"),
    ("minProperties", "min_properties"),
    ("maxProperties", "max_properties"),
];

/// A number, or a string that spells one.
fn number(value: &Value) -> Option<Value> {
    match value {
        Value::Number(_) => Some(value.clone()),
        Value::String(text) => text
            .parse::<u64>()
            .map(Value::from)
            .or_else(|_| text.parse::<f64>().map(Value::from))
            .ok()
            .filter(Value::is_number),
        _ => None,
    }
}

/// How deep the conversion walks; a deeper schema's rest is left unconstrained.
const MAX_DEPTH: usize = 64;

/// The JSON Schema `schema` (an OpenAPI-subset `Schema`) describes.
pub fn to_json_schema(schema: &Value) -> Value {
    convert(schema, 0)
}

fn convert(schema: &Value, depth: usize) -> Value {
    let Some(members) = schema.as_object() else {
        return Value::Object(Map::new());
    };
    if depth > MAX_DEPTH {
        return Value::Object(Map::new());
    }
    let mut out = Map::new();
    let nullable = members.get("nullable").and_then(Value::as_bool) == Some(true);
    if let Some(kind) = json_type(members, nullable) {
        out.insert("type".into(), kind);
    }
    copy_keywords(members, nullable, &mut out);
    convert_subschemas(members, depth, &mut out);
    Value::Object(out)
}

/// The JSON Schema `type` of an OpenAPI `type` (lower-cased; with `"null"` when `nullable`);
/// none for an absent, empty or `TYPE_UNSPECIFIED` type.
fn json_type(members: &Map<String, Value>, nullable: bool) -> Option<Value> {
    let kind = members
        .get("type")
        .and_then(Value::as_str)
        .map(str::to_ascii_lowercase)
        .filter(|kind| kind != "type_unspecified" && !kind.is_empty())?;
    let kind = Value::String(kind);
    Some(if nullable {
        Value::Array(vec![kind, Value::String("null".into())])
    } else {
        kind
    })
}

/// The keywords that mean the same in both (camelCase or snake_case in, camelCase out), the
/// numeric bounds read as numbers, a string `pattern`, and `null` added to a nullable `enum`.
fn copy_keywords(members: &Map<String, Value>, nullable: bool, out: &mut Map<String, Value>) {
    for (camel, snake) in KEPT {
        if let Some(value) = members.get(camel).or_else(|| members.get(snake)) {
            out.insert(camel.into(), value.clone());
        }
    }
    for (camel, snake) in NUMBERS {
        if let Some(value) = members
            .get(camel)
            .or_else(|| members.get(snake))
            .and_then(number)
        {
            out.insert(camel.into(), value);
        }
    }
    if let Some(pattern) = members.get("pattern").filter(|p| p.is_string()) {
        out.insert("pattern".into(), pattern.clone());
    }
    if nullable
        && let Some(Value::Array(values)) = out.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

/// `properties`, `items` and `anyOf`, each subschema converted one level deeper.
fn convert_subschemas(members: &Map<String, Value>, depth: usize, out: &mut Map<String, Value>) {
    if let Some(properties) = members.get("properties").and_then(Value::as_object) {
        let converted = properties
            .iter()
            .map(|(name, property)| (name.clone(), convert(property, depth + 1)))
            .collect();
        out.insert("properties".into(), Value::Object(converted));
    }
    if let Some(items) = members.get("items") {
        out.insert("items".into(), convert(items, depth + 1));
    }
    if let Some(any_of) = members
        .get("anyOf")
        .or_else(|| members.get("any_of"))
        .and_then(Value::as_array)
    {
        let converted = any_of.iter().map(|s| convert(s, depth + 1)).collect();
        out.insert("anyOf".into(), Value::Array(converted));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn upper_case_types_nullable_and_unknown_keywords() {
        let schema = json!({
            "type": "OBJECT",
            "properties": {
                "city": {"type": "STRING", "format": "place", "example": "Paris"},
                "days": {"type": "INTEGER", "nullable": true, "minimum": 1},
                "units": {"type": "STRING", "enum": ["C", "F"], "nullable": true},
                "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "max_items": 3},
                "code": {"type": "STRING", "minLength": "2", "maxLength": "many"}
            },
            "required": ["city"],
            "propertyOrdering": ["city", "days"]
        });
        assert_eq!(
            to_json_schema(&schema),
            json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": ["integer", "null"], "minimum": 1},
                    "units": {"type": ["string", "null"], "enum": ["C", "F", null]},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                    "code": {"type": "string", "minLength": 2}
                },
                "required": ["city"]
            })
        );
        assert_eq!(to_json_schema(&json!("OBJECT")), json!({}));
        assert_eq!(
            to_json_schema(&json!({"type": "TYPE_UNSPECIFIED"})),
            json!({})
        );
    }
}
