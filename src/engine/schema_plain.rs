//! Whether a tool's JSON Schema is *plain*: validating against it costs work in proportion to
//! the instance, so a small exchange can be judged on the inspector's own thread.
//!
//! Input: a tool's `parameters` schema as the request declared it. Output: `true` when no
//! keyword in it can multiply the work per instance node. Each instance node of a plain schema
//! meets one subschema (`properties` route members by name, `items` and
//! `additionalProperties` apply one subschema each): no combinators (`anyOf`, `oneOf`, `allOf`,
//! `not`, `if`), no references (which can recurse), no regular expressions (`pattern`,
//! `patternProperties`, the `regex` format), no `uniqueItems` (quadratic), no applicators that
//! try a subschema on every member (`contains`, `propertyNames`, `dependentSchemas`,
//! `unevaluated*`), no long `enum` list, and few nodes in all. A false "not plain" only sends
//! an exchange to the analysis pool, where everything else goes; the schema budget
//! ([`super::schema_cost`]) bounds the checks either way. A member of `properties` with one of
//! these keywords as its name is taken for the keyword: conservative, never wrong.

use serde_json::Value;

/// Keywords that make a schema not plain.
const COSTLY_KEYWORDS: &[&str] = &[
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "pattern",
    "patternProperties",
    "uniqueItems",
    "contains",
    "propertyNames",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "unevaluatedItems",
];
/// Most values a plain `enum` lists.
const MAX_ENUM: usize = 64;
/// Most JSON nodes (objects, arrays, values) a plain schema has, all tools of a request
/// together; and the deepest nesting.
pub const MAX_NODES: usize = 512;
const MAX_DEPTH: usize = 32;

/// Counts the nodes of plain schemas across the tools of one request.
#[derive(Debug, Default)]
pub struct PlainCount {
    nodes: usize,
}

impl PlainCount {
    /// Whether `schema` is plain, counting its nodes against the request's total.
    pub fn plain(&mut self, schema: &Value) -> bool {
        self.walk(schema, 0)
    }

    fn walk(&mut self, value: &Value, depth: usize) -> bool {
        self.nodes += 1;
        if self.nodes > MAX_NODES || depth > MAX_DEPTH {
            return false;
        }
        match value {
            Value::Object(members) => members
                .iter()
                .all(|(key, member)| !costly(key, member) && self.walk(member, depth + 1)),
            Value::Array(items) => items.iter().all(|item| self.walk(item, depth + 1)),
            _ => true,
        }
    }
}

/// Whether one keyword (with its value) can multiply the work per instance node.
fn costly(key: &str, value: &Value) -> bool {
    COSTLY_KEYWORDS.contains(&key)
        || (key == "enum" && value.as_array().is_some_and(|list| list.len() > MAX_ENUM))
        || (key == "format" && value.as_str() == Some("regex"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typed_objects_are_plain_and_costly_keywords_or_size_are_not() {
        let plain = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "format": "email", "maxLength": 64},
                "days": {"type": "array", "items": {"type": "integer", "minimum": 1}},
                "unit": {"enum": ["c", "f"]}
            },
            "required": ["city"],
            "additionalProperties": false
        });
        assert!(PlainCount::default().plain(&plain));
        for costly in [
            json!({"anyOf": [{"type": "string"}, {"type": "number"}]}),
            json!({"properties": {"a": {"$ref": "#"}}}),
            json!({"properties": {"a": {"type": "string", "pattern": "^(a+)+$"}}}),
            json!({"type": "array", "uniqueItems": true}),
            json!({"properties": {"a": {"format": "regex"}}}),
            json!({"enum": (0..65).collect::<Vec<u32>>()}),
            json!({"type": "object", "patternProperties": {"^x": {}}}),
        ] {
            assert!(!PlainCount::default().plain(&costly), "{costly}");
        }
        // Nodes count across the tools of a request: each small, too many together.
        let mut count = PlainCount::default();
        let small = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let plain_ones = (0..200).take_while(|_| count.plain(&small)).count();
        assert!(
            plain_ones < 200 && plain_ones * 5 >= MAX_NODES - 5,
            "{plain_ones}"
        );
        let mut deep = json!({"type": "string"});
        for _ in 0..40 {
            deep = json!({"type": "array", "items": deep});
        }
        assert!(!PlainCount::default().plain(&deep));
    }
}
