//! Compiles the JSON Schemas a request declares, once per distinct `tools` array.
//!
//! Input: the request's `tools` array (from [`crate::engine::request`]). Output: shared
//! [`CompiledTools`] that the argument checks in [`crate::engine::contract`] validate against.
//! Validators are built offline: a `$ref` to a URL or a file is never fetched, it makes the
//! schema invalid (reported as `request.schema_invalid`), so a client cannot make tooltap read
//! files or open connections. This is the one module that imports `jsonschema`.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use jsonschema::{ValidationError, Validator};
use serde_json::Value;
use serde_json::value::RawValue;

use super::request::function_name;

/// How many distinct `tools` arrays stay compiled; the oldest is evicted first.
const DEFAULT_CAPACITY: usize = 256;

/// Compiled validators keyed by the exact content of the `tools` array. `Send + Sync`; share it
/// across exchanges with an `Arc`.
#[derive(Debug)]
pub struct SchemaCache {
    capacity: usize,
    entries: Mutex<CacheEntries>,
}

#[derive(Debug, Default)]
struct CacheEntries {
    by_key: HashMap<String, Arc<CompiledTools>>,
    insertion_order: VecDeque<String>,
}

impl Default for SchemaCache {
    fn default() -> Self {
        SchemaCache::with_capacity(DEFAULT_CAPACITY)
    }
}

impl SchemaCache {
    /// A cache holding at most `capacity` (at least 1) distinct tools arrays.
    pub fn with_capacity(capacity: usize) -> SchemaCache {
        SchemaCache {
            capacity: capacity.max(1),
            entries: Mutex::new(CacheEntries::default()),
        }
    }

    /// The compiled form of `tools`, compiling it on first sight.
    pub fn tools_for(&self, tools: &Value) -> Arc<CompiledTools> {
        // serde_json serializes a `Value` deterministically, so equal content gives equal keys.
        self.lookup(&tools.to_string(), || CompiledTools::compile(tools, false))
    }

    /// The same for the `tools` array exactly as the request carried it: the key is its text,
    /// borrowed, and the array is parsed only on a miss. (Building the key from a parsed
    /// `Value` on every request showed in the benchmark's profile.) The same array sent with
    /// other whitespace is compiled once more, never confused with another.
    pub fn tools_for_raw(&self, tools: &RawValue) -> Arc<CompiledTools> {
        self.lookup(tools.get(), || {
            let value = serde_json::from_str(tools.get()).unwrap_or(Value::Null);
            CompiledTools::compile(&value, false)
        })
    }

    /// The same for a Responses API `tools` array, whose function tools are flat
    /// (`{"type":"function","name":..,"parameters":..}`). Keyed apart from Chat arrays.
    pub fn tools_for_flat(&self, tools: &RawValue) -> Arc<CompiledTools> {
        let key = format!("flat:{}", tools.get());
        self.lookup(&key, || {
            let value = serde_json::from_str(tools.get()).unwrap_or(Value::Null);
            CompiledTools::compile(&value, true)
        })
    }

    /// Keeping the full text as the key (not a hash) rules out collisions handing out wrong
    /// validators. Compilation happens outside the lock, so two exchanges racing on a new
    /// array may both compile it; one result wins.
    fn lookup(&self, key: &str, compile: impl FnOnce() -> CompiledTools) -> Arc<CompiledTools> {
        if let Ok(entries) = self.entries.lock()
            && let Some(found) = entries.by_key.get(key)
        {
            return Arc::clone(found);
        }
        let compiled = Arc::new(compile());
        // A poisoned lock only means another thread panicked mid-insert; skip caching then.
        if let Ok(mut entries) = self.entries.lock()
            && !entries.by_key.contains_key(key)
        {
            while entries.by_key.len() >= self.capacity {
                match entries.insertion_order.pop_front() {
                    Some(oldest) => entries.by_key.remove(&oldest),
                    None => break,
                };
            }
            entries.insertion_order.push_back(key.to_owned());
            entries.by_key.insert(key.to_owned(), Arc::clone(&compiled));
        }
        compiled
    }

    /// How many distinct tools arrays are compiled right now.
    pub fn len(&self) -> usize {
        self.entries
            .lock()
            .map(|entries| entries.by_key.len())
            .unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The declared function tools of one request, with their argument validators.
#[derive(Debug)]
pub struct CompiledTools {
    tools: Vec<DeclaredTool>,
    /// Whether `tools` was a non-empty array (an empty one declares nothing).
    declares: bool,
}

/// One declared function tool.
#[derive(Debug)]
pub struct DeclaredTool {
    pub name: String,
    /// JSON pointer to the tool's `parameters` in the request body.
    pub parameters_path: String,
    pub schema: ToolSchema,
}

/// The state of one tool's `parameters` schema.
#[derive(Debug)]
pub enum ToolSchema {
    /// No `parameters`: an empty parameter list, nothing to validate against.
    Absent,
    Valid(Box<Validator>),
    /// Not a usable schema; the human reason. Arguments of this tool are not schema-checked.
    Invalid(String),
}

impl CompiledTools {
    fn compile(tools: &Value, flat: bool) -> CompiledTools {
        let items = tools.as_array().map(Vec::as_slice).unwrap_or_default();
        let declares = !items.is_empty();
        let tools = items
            .iter()
            .enumerate()
            .filter_map(|(position, tool)| {
                let (name, parameters_path, parameters) = if flat {
                    let kind = tool.get("type").and_then(Value::as_str);
                    (
                        (kind == Some("function")).then(|| tool.get("name")?.as_str())??,
                        format!("/tools/{position}/parameters"),
                        tool.get("parameters"),
                    )
                } else {
                    (
                        function_name(tool)?,
                        format!("/tools/{position}/function/parameters"),
                        tool.get("function").and_then(|f| f.get("parameters")),
                    )
                };
                let name = name.to_owned();
                let schema = match parameters {
                    None | Some(Value::Null) => ToolSchema::Absent,
                    Some(parameters) => compile_one(parameters),
                };
                Some(DeclaredTool {
                    name,
                    parameters_path,
                    schema,
                })
            })
            .collect();
        CompiledTools { tools, declares }
    }

    /// Whether the request declared tools at all (a non-empty `tools` array).
    pub fn declares(&self) -> bool {
        self.declares
    }

    pub fn get(&self, name: &str) -> Option<&DeclaredTool> {
        self.tools.iter().find(|tool| tool.name == name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &DeclaredTool> {
        self.tools.iter()
    }
}

fn compile_one(parameters: &Value) -> ToolSchema {
    match jsonschema::options().offline().build(parameters) {
        Ok(validator) => ToolSchema::Valid(Box::new(validator)),
        Err(error) => ToolSchema::Invalid(explain_invalid_schema(&error)),
    }
}

/// jsonschema reports a bad schema with the error type of a bad instance (`"5" is not of type
/// "string"`), which reads as if the arguments were wrong. Say what is wrong with the schema.
fn explain_invalid_schema(error: &ValidationError<'_>) -> String {
    let location = match error.instance_path().as_str() {
        "" => "the schema root".to_owned(),
        path => format!("`{path}`"),
    };
    if let jsonschema::error::ValidationErrorKind::Referencing(reason) = error.kind() {
        return format!(
            "a $ref could not be resolved offline ({reason}); tooltap never fetches remote or file references"
        );
    }
    let mut found = error.instance().to_string();
    if found.len() > 80 {
        found.truncate(77);
        found.push_str("...");
    }
    format!(
        "not a valid JSON Schema: {found} at {location} breaks the meta-schema's `{}` rule",
        error.kind().keyword()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools_with(parameters: Value) -> Value {
        json!([{"type":"function","function":{"name":"f","parameters":parameters}}])
    }

    #[test]
    fn caches_by_content_and_evicts_oldest() {
        let cache = SchemaCache::with_capacity(2);
        let first = cache.tools_for(&tools_with(json!({"type":"object"})));
        let again = cache.tools_for(&tools_with(json!({"type":"object"})));
        assert!(Arc::ptr_eq(&first, &again));
        cache.tools_for(&tools_with(json!({"type":"string"})));
        cache.tools_for(&tools_with(json!({"type":"number"})));
        assert_eq!(cache.len(), 2);
        let recompiled = cache.tools_for(&tools_with(json!({"type":"object"})));
        assert!(!Arc::ptr_eq(&first, &recompiled));
    }

    #[test]
    fn invalid_and_remote_schemas_are_reported_not_fetched() {
        let cache = SchemaCache::default();
        let bad = cache.tools_for(&tools_with(json!({"type": 5})));
        assert!(matches!(
            bad.get("f").map(|t| &t.schema),
            Some(ToolSchema::Invalid(_))
        ));
        let remote = cache.tools_for(&tools_with(
            json!({"$ref": "https://example.invalid/s.json"}),
        ));
        match remote.get("f").map(|t| &t.schema) {
            Some(ToolSchema::Invalid(reason)) => assert!(reason.contains("$ref"), "{reason}"),
            other => panic!("expected invalid, got {other:?}"),
        }
        let file = cache.tools_for(&tools_with(json!({"$ref": "file:///etc/passwd"})));
        assert!(matches!(
            file.get("f").map(|t| &t.schema),
            Some(ToolSchema::Invalid(_))
        ));
    }

    #[test]
    fn cache_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<SchemaCache>();
    }
}
