//! A worst-case cost estimate for validating one instance against one JSON Schema, computed
//! before the real validator runs, so that no schema and no arguments can make one exchange
//! cost unbounded CPU or memory.
//!
//! Input: the schema (as the request declared it) and the parsed arguments. Output: `Ok(steps)`
//! when walking every subschema that could apply to every instance node stays within the
//! budget, `Err(OverBudget)` otherwise. The walk follows local `$ref`s and assumes the worst at
//! every branch: all of `anyOf`/`oneOf`/`allOf`, `not`, `if`/`then`/`else`, every
//! `patternProperties` entry, `dependentSchemas`, `contains`, `propertyNames`, and charges
//! `enum`, `uniqueItems` and `pattern` by the size of what they compare. Recursion through
//! `$ref` combined with branching is what makes real validation exponential in the instance
//! depth; the walk sees the same blow-up and stops at the budget, so its own cost is bounded
//! by the budget too (and its stack by [`MAX_DEPTH`]).

use serde_json::Value;

/// Deepest nesting of schema × instance the walk follows; past it the check is over budget.
pub const MAX_DEPTH: usize = 200;

/// The estimate exceeded the budget: the schema check of this instance is not attempted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget;

/// Estimates the work of validating `instance` against `root`, in steps; at most `budget`.
pub fn estimate(root: &Value, instance: &Value, budget: u64) -> Result<u64, OverBudget> {
    let mut walk = Walk {
        root,
        steps: 0,
        budget,
    };
    walk.visit(root, instance, 0)?;
    Ok(walk.steps)
}

struct Walk<'a> {
    root: &'a Value,
    steps: u64,
    budget: u64,
}

impl<'a> Walk<'a> {
    fn charge(&mut self, steps: u64) -> Result<(), OverBudget> {
        self.steps = self.steps.saturating_add(steps);
        if self.steps > self.budget {
            Err(OverBudget)
        } else {
            Ok(())
        }
    }

    fn visit(
        &mut self,
        schema: &'a Value,
        instance: &Value,
        depth: usize,
    ) -> Result<(), OverBudget> {
        self.charge(1)?;
        if depth > MAX_DEPTH {
            return Err(OverBudget);
        }
        let Value::Object(keywords) = schema else {
            return Ok(());
        };
        let next = depth + 1;
        for (keyword, sub) in keywords {
            self.charge(1)?;
            match keyword.as_str() {
                "$ref" | "$dynamicRef" | "$recursiveRef" => {
                    let target = sub
                        .as_str()
                        .and_then(|r| self.resolve(r))
                        .unwrap_or(self.root);
                    self.visit(target, instance, next)?;
                }
                "allOf" | "anyOf" | "oneOf" => {
                    for branch in sub.as_array().map(Vec::as_slice).unwrap_or_default() {
                        self.visit(branch, instance, next)?;
                    }
                }
                "not" | "if" | "then" | "else" => self.visit(sub, instance, next)?,
                "dependentSchemas" | "dependencies" => {
                    for (name, dependent) in sub.as_object().into_iter().flatten() {
                        if instance.get(name).is_some() {
                            self.visit(dependent, instance, next)?;
                        }
                    }
                }
                "properties" => {
                    for (name, value) in instance.as_object().into_iter().flatten() {
                        if let Some(property) = sub.get(name) {
                            self.visit(property, value, next)?;
                        }
                    }
                }
                "patternProperties" => {
                    for (pattern, property) in sub.as_object().into_iter().flatten() {
                        for (name, value) in instance.as_object().into_iter().flatten() {
                            self.charge(text_cost(name, pattern))?;
                            self.visit(property, value, next)?;
                        }
                    }
                }
                "additionalProperties" | "unevaluatedProperties" => {
                    for value in instance.as_object().into_iter().flat_map(|o| o.values()) {
                        self.visit(sub, value, next)?;
                    }
                }
                "propertyNames" => {
                    for name in instance.as_object().into_iter().flat_map(|o| o.keys()) {
                        self.visit(sub, &Value::String(name.clone()), next)?;
                    }
                }
                "items" | "additionalItems" | "unevaluatedItems" | "contains" => {
                    self.each_item(sub, instance, next)?
                }
                "prefixItems" => {
                    let items = instance.as_array().map(Vec::as_slice).unwrap_or_default();
                    let schemas = sub.as_array().map(Vec::as_slice).unwrap_or_default();
                    for (item_schema, item) in schemas.iter().zip(items) {
                        self.visit(item_schema, item, next)?;
                    }
                }
                "enum" => {
                    let options = sub.as_array().map_or(1, Vec::len) as u64;
                    self.charge(options.saturating_mul(size(instance)))?;
                }
                "const" => self.charge(size(instance))?,
                // jsonschema hashes arrays past 15 items: linear in their size, hashing and all.
                "uniqueItems" if instance.is_array() => {
                    self.charge(size(instance).saturating_mul(2))?
                }
                "pattern" => {
                    if let (Value::String(text), Some(pattern)) = (instance, sub.as_str()) {
                        self.charge(text_cost(text, pattern))?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// `items` as one schema (every element) or, in older drafts, an array (by position).
    fn each_item(
        &mut self,
        sub: &'a Value,
        instance: &Value,
        next: usize,
    ) -> Result<(), OverBudget> {
        let items = instance.as_array().map(Vec::as_slice).unwrap_or_default();
        match sub {
            Value::Array(schemas) => {
                for (item_schema, item) in schemas.iter().zip(items) {
                    self.visit(item_schema, item, next)?;
                }
            }
            single => {
                for item in items {
                    self.visit(single, item, next)?;
                }
            }
        }
        Ok(())
    }

    /// A local reference (`#`, `#/json/pointer`); anything else is charged as the root, the
    /// worst case an unresolved target can be.
    fn resolve(&self, reference: &str) -> Option<&'a Value> {
        let fragment = reference.strip_prefix('#')?;
        if fragment.is_empty() {
            return Some(self.root);
        }
        self.root.pointer(&fragment.replace("%25", "%"))
    }
}

/// A regex match on `text`: linear in the text for each pattern unit (the backtracking engine's
/// own limit bounds the rest).
fn text_cost(text: &str, pattern: &str) -> u64 {
    1 + (text.len() as u64).saturating_mul(1 + pattern.len() as u64 / 16)
}

/// The number of nodes and string bytes in `value` (what comparing it costs).
fn size(value: &Value) -> u64 {
    match value {
        Value::Array(items) => 1 + items.iter().map(size).sum::<u64>(),
        Value::Object(map) => {
            1 + map
                .iter()
                .map(|(k, v)| k.len() as u64 + size(v))
                .sum::<u64>()
        }
        Value::String(text) => 1 + text.len() as u64 / 8,
        Value::Null | Value::Bool(_) | Value::Number(_) => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(depth: usize) -> Value {
        let mut inner = json!(1);
        for _ in 0..depth {
            inner = json!([inner]);
        }
        json!({ "x": inner })
    }

    #[test]
    fn ordinary_schemas_cost_little() {
        let schema = json!({"type":"object","properties":{"city":{"type":"string","pattern":"^[A-Z]"},
            "days":{"type":"integer","enum":[1,2,3]}},"required":["city"]});
        let steps = estimate(&schema, &json!({"city":"Paris","days":2}), 10_000).expect("cheap");
        assert!(steps < 100, "{steps}");
    }

    #[test]
    fn recursive_any_of_grows_exponentially_and_stops_at_the_budget() {
        let schema = json!({"anyOf":[{"type":"array","items":{"$ref":"#"}},
            {"type":"array","items":{"$ref":"#"}},{"type":"object","additionalProperties":{"$ref":"#"}}]});
        let shallow = estimate(&schema, &nested(6), u64::MAX).expect("finite");
        let deeper = estimate(&schema, &nested(8), u64::MAX).expect("finite");
        assert!(deeper > shallow * 3, "{shallow} -> {deeper}");
        assert_eq!(estimate(&schema, &nested(20), 100_000), Err(OverBudget));
    }

    #[test]
    fn a_ref_cycle_without_instance_progress_ends() {
        let schema =
            json!({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"});
        assert_eq!(estimate(&schema, &json!({}), u64::MAX), Err(OverBudget));
    }

    #[test]
    fn unique_items_and_enums_are_charged_by_size() {
        let items: Vec<Value> = (0..5_000).map(|i| json!([i])).collect();
        let schema = json!({"type":"array","uniqueItems":true});
        let steps = estimate(&schema, &Value::Array(items.clone()), 1_000_000).expect("linear");
        assert!(steps >= 20_000, "{steps}");
        assert_eq!(
            estimate(&schema, &Value::Array(items), 10_000),
            Err(OverBudget)
        );
        let options: Vec<Value> = (0..100_000).map(|i| json!(i)).collect();
        let schema = json!({"properties":{"a":{"enum":options}}});
        let instance = json!({"a": (0..100).collect::<Vec<u32>>()});
        assert_eq!(estimate(&schema, &instance, 1_000_000), Err(OverBudget));
    }
}
