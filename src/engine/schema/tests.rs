//! Unit tests of the schema cache: content keys, admission on 2xx, the byte bound, the
//! compile bound and the regex backtracking limit.

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
fn only_admitted_arrays_are_kept_and_bytes_stay_under_the_bound() {
    let limits = SchemaLimits {
        max_cache_bytes: 64 * BYTES_PER_SCHEMA_BYTE * 3,
        ..SchemaLimits::default()
    };
    let cache = SchemaCache::new(100, limits);
    let raw = |n: usize| {
        let text = tools_with(json!({"description": "x".repeat(n)})).to_string();
        RawValue::from_string(text).expect("raw")
    };
    let unanswered = cache.tools_for_raw(&raw(40));
    assert!(
        cache.is_empty() && cache.bytes() == 0,
        "not admitted, not kept"
    );
    unanswered.admit();
    assert_eq!(cache.len(), 1);
    for n in 41..60 {
        cache.tools_for_raw(&raw(n)).admit();
        assert!(cache.bytes() <= limits.max_cache_bytes, "{}", cache.bytes());
    }
    assert!(
        cache.len() < 4,
        "evicted by bytes, not count: {}",
        cache.len()
    );
    cache.tools_for_raw(&raw(10_000)).admit();
    assert!(
        cache.bytes() <= limits.max_cache_bytes,
        "an oversized array is not kept"
    );
}

#[test]
fn schemas_past_the_compile_bound_are_over_budget() {
    let limits = SchemaLimits {
        max_compile_bytes: 100,
        ..SchemaLimits::default()
    };
    let cache = SchemaCache::new(4, limits);
    let tools = json!([
        {"type":"function","function":{"name":"a","parameters":{"type":"object"}}},
        {"type":"function","function":{"name":"b","parameters":{"description":"y".repeat(200)}}}
    ]);
    let compiled = cache.tools_for(&tools);
    assert!(matches!(
        compiled.get("a").map(|t| &t.schema),
        Some(ToolSchema::Valid(_))
    ));
    let b = compiled.get("b").map(|t| t.schema.check(&json!({}), 4));
    assert!(matches!(b, Some(SchemaCheck::OverBudget)), "{b:?}");
}

#[test]
fn a_catastrophic_regex_is_over_budget_not_a_failure() {
    let compiled = SchemaCache::default().tools_for(&tools_with(
        json!({"properties":{"s":{"type":"string","pattern":"^(a|aa)+(?=b)\\1$"}}}),
    ));
    let schema = &compiled.get("f").expect("f").schema;
    let text = format!("{}c", "a".repeat(64));
    let checked = schema.check(&json!({ "s": text }), 16);
    assert!(matches!(checked, SchemaCheck::OverBudget), "{checked:?}");
}

#[test]
fn cache_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SchemaCache>();
}
