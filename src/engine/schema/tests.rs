//! Unit tests of the schema cache: content keys, admission on 2xx, the byte bound, the
//! compile bound and the regex backtracking limit.

use super::*;
use crate::engine::dialect::chat::request::TOOLS;
use serde_json::json;

fn tools_with(parameters: Value) -> Value {
    json!([{"type":"function","function":{"name":"f","parameters":parameters}}])
}

#[test]
fn caches_by_content_and_evicts_oldest() {
    let cache = SchemaCache::with_capacity(2);
    let first = cache.tools_for(&tools_with(json!({"type":"object"})), &TOOLS);
    let again = cache.tools_for(&tools_with(json!({"type":"object"})), &TOOLS);
    assert!(Arc::ptr_eq(&first, &again));
    cache.tools_for(&tools_with(json!({"type":"string"})), &TOOLS);
    cache.tools_for(&tools_with(json!({"type":"number"})), &TOOLS);
    assert_eq!(cache.len(), 2);
    let recompiled = cache.tools_for(&tools_with(json!({"type":"object"})), &TOOLS);
    assert!(!Arc::ptr_eq(&first, &recompiled));
}

#[test]
fn invalid_and_remote_schemas_are_reported_not_fetched() {
    let cache = SchemaCache::default();
    let bad = cache.tools_for(&tools_with(json!({"type": 5})), &TOOLS);
    assert!(matches!(
        bad.get("f").map(|t| &t.schema),
        Some(ToolSchema::Invalid(_))
    ));
    let remote = cache.tools_for(
        &tools_with(json!({"$ref": "https://example.invalid/s.json"})),
        &TOOLS,
    );
    match remote.get("f").map(|t| &t.schema) {
        Some(ToolSchema::Invalid(reason)) => assert!(reason.contains("$ref"), "{reason}"),
        other => panic!("expected invalid, got {other:?}"),
    }
    let file = cache.tools_for(&tools_with(json!({"$ref": "file:///etc/passwd"})), &TOOLS);
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
    let unanswered = cache.tools_for_raw(&raw(40), &TOOLS);
    assert!(
        cache.is_empty() && cache.bytes() == 0,
        "not admitted, not kept"
    );
    unanswered.admit();
    assert_eq!(cache.len(), 1);
    for n in 41..60 {
        cache.tools_for_raw(&raw(n), &TOOLS).admit();
        assert!(cache.bytes() <= limits.max_cache_bytes, "{}", cache.bytes());
    }
    assert!(
        cache.len() < 4,
        "evicted by bytes, not count: {}",
        cache.len()
    );
    cache.tools_for_raw(&raw(10_000), &TOOLS).admit();
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
    let compiled = cache.tools_for(&tools, &TOOLS);
    assert!(matches!(
        compiled.get("a").map(|t| &t.schema),
        Some(ToolSchema::Valid(_))
    ));
    let b = compiled.get("b").map(|t| t.schema.check(&json!({}), 4));
    assert!(matches!(b, Some(SchemaCheck::OverBudget)), "{b:?}");
}

#[test]
fn a_catastrophic_regex_is_over_budget_not_a_failure() {
    let compiled = SchemaCache::default().tools_for(
        &tools_with(json!({"properties":{"s":{"type":"string","pattern":"^(a|aa)+(?=b)\\1$"}}})),
        &TOOLS,
    );
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

#[test]
fn a_backtracking_pattern_is_refused_and_thousands_of_strings_cost_nothing() {
    let cache = SchemaCache::default();
    let schema = json!({"type":"array","items":{"type":"string","pattern":"^(?:(a)\\1?)*$"}});
    let compiled = cache.tools_for(
        &tools_with(json!({"type":"object","properties":{"s": schema.clone()}})),
        &TOOLS,
    );
    let tool = &compiled.get("f").expect("f").schema;
    assert!(matches!(tool, ToolSchema::OverBudget), "{tool:?}");
    let strings: Vec<String> = (0..7_000).map(|_| format!("{}b", "a".repeat(21))).collect();
    let instance = json!({ "s": strings });
    let source = json!({"type":"object","properties":{"s": schema}});
    let steps = schema_cost::estimate(&source, &instance, SchemaLimits::default().max_steps);
    assert!(
        steps.is_ok(),
        "inside the step budget: the estimate alone lets it run"
    );
    let started = std::time::Instant::now();
    let checked = tool.check(&instance, 16);
    assert!(matches!(checked, SchemaCheck::OverBudget), "{checked:?}");
    assert!(
        started.elapsed().as_millis() < 500,
        "{:?}",
        started.elapsed()
    );
    // The same shape with a linear pattern is checked, every string, within the budget.
    let linear = cache.tools_for(
        &tools_with(json!({"type":"object","properties":{
        "s":{"type":"array","items":{"type":"string","pattern":"^(?:a|aa)*$"}}}})),
        &TOOLS,
    );
    let tool = &linear.get("f").expect("f").schema;
    let strings: Vec<String> = (0..2_000).map(|_| format!("{}b", "a".repeat(30))).collect();
    match tool.check(&json!({ "s": strings }), 4) {
        SchemaCheck::Checked(failures) => assert_eq!(failures.len(), 4),
        other => panic!("expected failures, got {other:?}"),
    }
    // A pattern neither engine takes makes the schema invalid.
    let broken = cache.tools_for(
        &tools_with(json!({"properties":{"s":{"pattern":"("}}})),
        &TOOLS,
    );
    assert!(matches!(
        broken.get("f").map(|t| &t.schema),
        Some(ToolSchema::Invalid(_))
    ));
}

#[test]
fn grammars_are_compiled_with_their_array_once_and_never_in_lookup_only_mode() {
    let custom = |k: usize| {
        json!({"type":"custom","custom":{"name":format!("c{k}"),"format":{"type":"grammar",
            "grammar":{"syntax":"regex","definition":format!("\\w{{9}}{k}")}}}})
    };
    let tools = Value::Array((0..40).map(custom).collect());
    let text = tools.to_string();
    let raw = RawValue::from_string(text).expect("raw");
    let cache = SchemaCache::default();
    // Not cached: lookup-only mode compiles nothing and says so.
    let started = std::time::Instant::now();
    let (stand_in, facts) = SchemaCache::lookup_only(|| cache.tools_for_raw(&raw, &TOOLS));
    assert!(facts.missed && started.elapsed().as_millis() < 50);
    assert!(matches!(
        stand_in.grammar("\\w{9}0"),
        RegexGrammar::OverBudget
    ));
    let first = cache.tools_for_raw(&raw, &TOOLS);
    let RegexGrammar::Compiled(grammar) = first.grammar("\\w{9}0") else {
        panic!("compiled");
    };
    assert!(!first.plain(), "matching a grammar is not plain");
    assert!(
        first.weight() > 40 * 100_000,
        "weighed as compiled: {}",
        first.weight()
    );
    first.admit();
    assert!(cache.bytes() >= first.weight());
    // Every later exchange with the array gets the same compiled grammars, lookup-only too.
    let (again, facts) = SchemaCache::lookup_only(|| cache.tools_for_raw(&raw, &TOOLS));
    assert!(!facts.missed && !facts.plain);
    let RegexGrammar::Compiled(same) = again.grammar("\\w{9}0") else {
        panic!("compiled");
    };
    assert!(Arc::ptr_eq(&grammar, &same));
    // Past the array's grammar bytes, the rest are over budget.
    let small = SchemaCache::new(
        4,
        SchemaLimits {
            max_grammar_bytes: 2 << 20,
            ..SchemaLimits::default()
        },
    );
    let bounded = small.tools_for_raw(&raw, &TOOLS);
    assert!(matches!(
        bounded.grammar("\\w{9}39"),
        RegexGrammar::OverBudget
    ));
}

#[test]
fn observing_compiles_misses_and_says_whether_everything_found_or_compiled_is_plain() {
    let raw = |parameters: Value| {
        let text = json!([{"type":"function","function":{"name":"f","parameters":parameters}}]);
        RawValue::from_string(text.to_string()).expect("raw")
    };
    let plain = raw(json!({"type":"object","properties":{"a":{"type":"string"}}}));
    let costly = raw(json!({"anyOf":[{"type":"object"},{"type":"string"}]}));
    let cache = SchemaCache::default();
    // A miss compiles (unlike lookup-only mode), and what it compiled counts.
    let (compiled, is_plain) = SchemaCache::observing(|| cache.tools_for_raw(&plain, &TOOLS));
    assert!(is_plain && compiled.plain() && compiled.get("f").is_some());
    let (compiled, is_plain) = SchemaCache::observing(|| cache.tools_for_raw(&costly, &TOOLS));
    assert!(!is_plain && !compiled.plain());
    // Cached arrays count as in lookup-only mode; one array not plain makes the whole start not.
    compiled.admit();
    let (_, both) = SchemaCache::observing(|| {
        (
            cache.tools_for_raw(&plain, &TOOLS),
            cache.tools_for_raw(&costly, &TOOLS),
        )
    });
    assert!(!both);
    // The mode ends with its scope: lookup-only afterwards still compiles nothing on a miss.
    let (_, facts) = SchemaCache::lookup_only(|| cache.tools_for_raw(&raw(json!({})), &TOOLS));
    assert!(facts.missed);
}
