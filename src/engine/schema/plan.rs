//! A tool's parameters schema laid out for judging arguments as they stream
//! ([`super::stream::StreamCheck`]): one node per subschema, with the keywords the streaming
//! checker follows itself and a validator of the node's value keywords alone.
//!
//! Input: a schema that compiled ([`super::CheckedSchema`]). Output: a [`StreamPlan`], built
//! once per schema on first need and kept with it. Followed as the value streams: `type`,
//! `properties`, `required`, `additionalProperties`, `items` (one schema), `minItems`,
//! `maxItems`, `minProperties`, `maxProperties`. Judged on each scalar (and on a container
//! held whole, up to the hold bound, under `enum`/`const`) by jsonschema itself, compiled from
//! the node's value keywords only: `type`, `enum`, `const`, `minimum`, `maximum`,
//! `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`, `minLength`, `maxLength`, `pattern`,
//! `format`, so each verdict and message is the whole-document validator's. Any other keyword
//! jsonschema knows (`$ref`, `oneOf`, `uniqueItems`...) makes the plan [`StreamPlan::Whole`]:
//! the arguments are held up to the bound and judged whole. Unknown keywords are ignored, as
//! jsonschema ignores them.

use std::collections::HashMap;

use jsonschema::Validator;
use serde_json::{Map, Value};

/// A property or required name longer than this makes the plan whole: a key past it is not
/// kept for an error's path.
pub const NAME_BOUND: usize = 1024;

/// The keywords judged per value by a validator of their own.
const VALUE_KEYWORDS: [&str; 12] = [
    "type",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
];

/// Keywords that only annotate.
const ANNOTATIONS: [&str; 9] = [
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$defs",
];

/// Keywords jsonschema judges that the streaming checker does not follow.
const NOT_FOLLOWED: [&str; 34] = [
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "$schema",
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "$recursiveAnchor",
    "$vocabulary",
    "definitions",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "dependentRequired",
    "dependencies",
    "prefixItems",
    "additionalItems",
    "contains",
    "minContains",
    "maxContains",
    "unevaluatedItems",
    "unevaluatedProperties",
    "patternProperties",
    "propertyNames",
    "uniqueItems",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
    "discriminator",
];

pub type NodeId = usize;

/// How a schema's arguments can be judged as they stream.
#[derive(Debug)]
pub enum StreamPlan {
    /// Every keyword is followed or judged per value.
    Streamed(Vec<Node>),
    /// The schema uses this keyword (or shape) the checker does not follow.
    Whole(&'static str),
}

/// One subschema.
#[derive(Debug)]
pub enum Node {
    /// `true` or `{}`-like: anything goes.
    Any,
    /// `false`: nothing goes; its schema path.
    Never(String),
    Rules(Box<Rules>),
}

/// What `additionalProperties` says of a member `properties` does not name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Additional {
    Any,
    Refused,
    Schema(NodeId),
}

/// JSON types as bits.
pub mod types {
    pub const NULL: u8 = 1;
    pub const BOOLEAN: u8 = 2;
    pub const OBJECT: u8 = 4;
    pub const ARRAY: u8 = 8;
    pub const NUMBER: u8 = 16;
    pub const STRING: u8 = 32;
    pub const INTEGER: u8 = 64;
}

/// The keywords of one object subschema.
#[derive(Debug)]
pub struct Rules {
    /// Its schema path (a JSON pointer into the parameters).
    pub location: String,
    /// `type` as bits, when given.
    pub types: Option<u8>,
    /// Its value keywords compiled alone.
    pub value: Option<Validator>,
    /// `enum` or `const`: a container is held whole to be judged.
    pub whole_value: bool,
    /// A string past the hold bound cannot be judged (`enum`, `const`, `pattern`, `format`).
    pub whole_text: bool,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub properties: HashMap<String, NodeId>,
    pub required: Vec<String>,
    pub additional: Additional,
    pub items: Option<NodeId>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub min_properties: Option<u64>,
    pub max_properties: Option<u64>,
}

impl StreamPlan {
    /// Lays `schema` out, compiling each node's value keywords with `compile`.
    pub fn new(schema: &Value, compile: &dyn Fn(&Value) -> Option<Validator>) -> StreamPlan {
        let mut builder = Builder {
            nodes: Vec::new(),
            compile,
        };
        match builder.node(schema, String::new()) {
            Ok(_) => StreamPlan::Streamed(builder.nodes),
            Err(keyword) => StreamPlan::Whole(keyword),
        }
    }
}

struct Builder<'c> {
    nodes: Vec<Node>,
    compile: &'c dyn Fn(&Value) -> Option<Validator>,
}

/// A JSON pointer segment.
pub fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

fn count(value: &Value) -> Result<u64, &'static str> {
    value
        .as_u64()
        .or_else(|| {
            let float = value.as_f64()?;
            (float >= 0.0 && float.fract() == 0.0 && float < 1e19).then_some(float as u64)
        })
        .ok_or("a count that is not a whole number")
}

fn type_bits(value: &Value) -> Result<u8, &'static str> {
    let one = |name: &Value| match name.as_str() {
        Some("null") => Ok(types::NULL),
        Some("boolean") => Ok(types::BOOLEAN),
        Some("object") => Ok(types::OBJECT),
        Some("array") => Ok(types::ARRAY),
        Some("number") => Ok(types::NUMBER),
        Some("string") => Ok(types::STRING),
        Some("integer") => Ok(types::INTEGER),
        _ => Err("type"),
    };
    match value {
        Value::Array(names) => names.iter().try_fold(0, |bits, name| Ok(bits | one(name)?)),
        name => one(name),
    }
}

impl Builder<'_> {
    fn node(&mut self, schema: &Value, location: String) -> Result<NodeId, &'static str> {
        let node = match schema {
            Value::Bool(true) => Node::Any,
            Value::Bool(false) => Node::Never(location),
            Value::Object(keywords) => self.rules(keywords, location)?,
            _ => return Err("a schema that is not an object"),
        };
        self.nodes.push(node);
        Ok(self.nodes.len() - 1)
    }

    fn rules(
        &mut self,
        keywords: &Map<String, Value>,
        location: String,
    ) -> Result<Node, &'static str> {
        let mut rules = Rules {
            location,
            types: None,
            value: None,
            whole_value: false,
            whole_text: false,
            min_length: None,
            max_length: None,
            properties: HashMap::new(),
            required: Vec::new(),
            additional: Additional::Any,
            items: None,
            min_items: None,
            max_items: None,
            min_properties: None,
            max_properties: None,
        };
        let mut value_keywords = Map::new();
        for (keyword, value) in keywords {
            let keyword = keyword.as_str();
            if let Some(&known) = NOT_FOLLOWED.iter().find(|&&known| known == keyword) {
                return Err(known);
            }
            if VALUE_KEYWORDS.contains(&keyword) {
                value_keywords.insert(keyword.to_owned(), value.clone());
            }
            let at = |name: &str| format!("{}/{name}", rules.location);
            match keyword {
                "type" => rules.types = Some(type_bits(value)?),
                "enum" | "const" => {
                    rules.whole_value = true;
                    rules.whole_text = true;
                }
                "pattern" | "format" => rules.whole_text = true,
                "minLength" => rules.min_length = Some(count(value)?),
                "maxLength" => rules.max_length = Some(count(value)?),
                "minItems" => rules.min_items = Some(count(value)?),
                "maxItems" => rules.max_items = Some(count(value)?),
                "minProperties" => rules.min_properties = Some(count(value)?),
                "maxProperties" => rules.max_properties = Some(count(value)?),
                "required" => {
                    for name in value.as_array().ok_or("required")? {
                        let name = name.as_str().ok_or("required")?;
                        if name.len() > NAME_BOUND {
                            return Err("a long required name");
                        }
                        rules.required.push(name.to_owned());
                    }
                }
                "properties" => {
                    let properties = value.as_object().ok_or("properties")?;
                    let base = at("properties");
                    for (name, schema) in properties {
                        if name.len() > NAME_BOUND {
                            return Err("a long property name");
                        }
                        let node = self.node(schema, format!("{base}/{}", escape(name)))?;
                        rules.properties.insert(name.clone(), node);
                    }
                }
                "additionalProperties" => {
                    rules.additional = match value {
                        Value::Bool(true) => Additional::Any,
                        Value::Bool(false) => Additional::Refused,
                        schema => {
                            Additional::Schema(self.node(schema, at("additionalProperties"))?)
                        }
                    };
                }
                "items" => {
                    if value.is_array() {
                        return Err("items");
                    }
                    rules.items = Some(self.node(value, at("items"))?);
                }
                _ => {}
            }
        }
        if !value_keywords.is_empty() {
            let alone = Value::Object(value_keywords);
            rules.value =
                Some((self.compile)(&alone).ok_or("a value keyword that does not compile alone")?);
        }
        let annotations_only = keywords
            .keys()
            .all(|keyword| ANNOTATIONS.contains(&keyword.as_str()));
        if annotations_only {
            return Ok(Node::Any);
        }
        Ok(Node::Rules(Box::new(rules)))
    }
}
