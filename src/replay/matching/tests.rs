use serde_json::json;

use super::*;

fn key(rules: &MatchRules, body: &Value) -> MatchKey {
    rules.key(
        "post",
        "/v1/chat/completions",
        Some(body.to_string().as_bytes()),
    )
}

#[test]
fn key_order_and_whitespace_do_not_matter() {
    let rules = MatchRules::default();
    let a = br#"{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}"#;
    let b =
        br#"{ "stream" : true, "messages" : [ {"content":"hi", "role":"user"} ], "model":"m" }"#;
    assert_eq!(
        rules.key("POST", "/v1/x", Some(a)),
        rules.key("post", "/v1/x", Some(b))
    );
}

#[test]
fn default_ignores_drop_user_metadata_seed_and_stream_options_only() {
    let rules = MatchRules::default();
    let base = json!({"model": "m", "messages": [], "stream": true});
    let noisy = json!({
        "model": "m", "messages": [], "stream": true,
        "user": "u-1", "metadata": {"run": 7}, "seed": 42,
        "stream_options": {"include_usage": true}
    });
    assert_eq!(key(&rules, &base), key(&rules, &noisy));
    for counted in [
        json!({"model": "m", "messages": [], "stream": false}),
        json!({"model": "m2", "messages": [], "stream": true}),
        json!({"model": "m", "messages": [], "stream": true, "tools": []}),
        json!({"model": "m", "messages": [], "stream": true, "tool_choice": "required"}),
    ] {
        assert_ne!(key(&rules, &base), key(&rules, &counted), "{counted}");
    }
}

#[test]
fn extra_pointers_reach_into_arrays_and_escape() {
    let rules = MatchRules::new(true, &["/model".into(), "/messages/0/name".into()]).expect("ok");
    let a = json!({"model": "a", "messages": [{"role": "user", "name": "x"}]});
    let b = json!({"model": "b", "messages": [{"role": "user", "name": "y"}]});
    assert_eq!(key(&rules, &a), key(&rules, &b));

    let rules = MatchRules::new(false, &["/a~1b".into()]).expect("ok");
    let a = json!({"a/b": 1, "c": 2});
    let b = json!({"a/b": 9, "c": 2});
    assert_eq!(key(&rules, &a), key(&rules, &b));
    assert!(rules.ignored.len() == 1, "defaults dropped");
}

#[test]
fn pointers_without_a_leading_slash_are_rejected() {
    assert_eq!(
        MatchRules::new(true, &["model".into()]),
        Err(BadPointer("model".into()))
    );
}

#[test]
fn non_json_bodies_compare_as_bytes_and_missing_matches_any() {
    let rules = MatchRules::default();
    let raw = rules.key("POST", "/v1/audio", Some(b"not json"));
    assert_eq!(raw.body, BodyKey::Raw(b"not json".to_vec()));
    assert_eq!(
        rules.key("GET", "/v1/models", Some(b"")).body,
        BodyKey::Raw(vec![])
    );
    assert_eq!(rules.key("GET", "/v1/models", None).body, BodyKey::Any);
}

#[test]
fn canonical_sorts_nested_keys_and_keeps_array_order() {
    let value = json!({"b": [3, {"z": 1, "a": "q\"x"}], "a": null});
    assert_eq!(
        canonical(&value),
        r#"{"a":null,"b":[3,{"a":"q\"x","z":1}]}"#
    );
}

#[test]
fn differing_pointers_name_each_difference() {
    let recorded = json!({
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Weather in Paris."}],
        "tool_choice": "required",
        "max_tokens": 128
    });
    let sent = json!({
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Weather in Oslo."}, {"role": "user", "content": "x"}],
        "tool_choice": "auto",
        "stream": true
    });
    assert_eq!(
        differing_pointers(&recorded, &sent),
        [
            "/max_tokens",
            "/messages/0/content",
            "/messages/1",
            "/stream",
            "/tool_choice"
        ]
    );
    assert!(differing_pointers(&recorded, &recorded).is_empty());
    assert_eq!(differing_pointers(&json!(1), &json!("1")), [""]);
}

#[test]
fn removing_the_whole_document_or_a_missing_pointer_is_harmless() {
    let mut value = json!({"a": [1, 2]});
    remove_pointer(&mut value, "/nope/deeper");
    remove_pointer(&mut value, "/a/7");
    assert_eq!(value, json!({"a": [1, 2]}));
    remove_pointer(&mut value, "/a/0");
    assert_eq!(value, json!({"a": [2]}));
    remove_pointer(&mut value, "");
    assert_eq!(value, Value::Null);
}
