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
    assert!(rules.ignored().len() == 1, "defaults dropped");
}

#[test]
fn pointers_without_a_leading_slash_are_rejected() {
    assert_eq!(
        MatchRules::new(true, &["model".into()]).map_err(|e| e.pointer),
        Err("model".to_owned())
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
        compare(&recorded, &sent).pointers,
        [
            "/max_tokens",
            "/messages/0/content",
            "/messages/1",
            "/stream",
            "/tool_choice"
        ]
    );
    assert!(compare(&recorded, &recorded).pointers.is_empty());
    assert_eq!(compare(&json!(1), &json!("1")).pointers, [""]);
}

#[test]
fn removing_the_whole_document_or_a_missing_pointer_is_harmless() {
    let remove = |value: &mut Value, pointer: &str| {
        Pattern::parse(pointer).expect("pointer").remove_from(value);
    };
    let mut value = json!({"a": [1, 2]});
    remove(&mut value, "/nope/deeper");
    remove(&mut value, "/a/7");
    remove(&mut value, "/a/01");
    assert_eq!(value, json!({"a": [1, 2]}));
    remove(&mut value, "");
    assert_eq!(value, Value::Null);
}

#[test]
fn an_ignored_array_element_is_blanked_so_the_rest_keep_their_indexes() {
    let rules = MatchRules::new(false, &["/messages/1".into(), "/messages/2".into()]).expect("ok");
    let a = json!({"messages": ["u", "tool-a", "result-a", "next"]});
    let b = json!({"messages": ["u", "tool-b", "result-b", "next"]});
    assert_eq!(key(&rules, &a), key(&rules, &b));
    let shorter = json!({"messages": ["u", "tool-b", "result-b"]});
    assert_ne!(key(&rules, &a), key(&rules, &shorter));
}

#[test]
fn a_wildcard_matches_every_index_and_every_key_at_its_level() {
    let rules = MatchRules::new(
        false,
        &[
            "/messages/*/tool_calls/*/id".into(),
            "/input/*/call_id".into(),
            "/tags/*".into(),
        ],
    )
    .expect("ok");
    let chat = |first: &str, second: &str, tag: &str| {
        json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [
                {"id": first, "function": {"name": "f"}},
                {"id": second, "function": {"name": "g"}}]},
            {"role": "assistant", "tool_calls": [{"id": second, "function": {"name": "h"}}]}
        ], "input": [{"call_id": first}, {"call_id": second, "output": "1"}],
        "tags": {"run": tag, "other": tag}})
    };
    assert_eq!(
        key(&rules, &chat("a", "b", "x")),
        key(&rules, &chat("q", "r", "y"))
    );
    // What is not under a wildcard still counts.
    let mut renamed = chat("a", "b", "x");
    renamed["messages"][2]["tool_calls"][0]["function"]["name"] = json!("other");
    assert_ne!(key(&rules, &chat("a", "b", "x")), key(&rules, &renamed));
}

#[test]
fn a_literal_star_is_written_with_an_escape_and_a_star_inside_a_token_is_refused() {
    let rules = MatchRules::new(false, &["/~2".into(), "/a~1b".into()]).expect("ok");
    assert_eq!(
        key(&rules, &json!({"*": 1, "a/b": 1, "c": 2})),
        key(&rules, &json!({"*": 2, "a/b": 3, "c": 2}))
    );
    assert_ne!(
        key(&rules, &json!({"x": 1, "c": 2})),
        key(&rules, &json!({"x": 2, "c": 2})),
        "~2 is the key named *, not a wildcard"
    );
    for bad in ["/a*b", "/messages/*x/id", "/a~3", "/a~"] {
        let error = MatchRules::new(true, &[bad.into()]).expect_err(bad);
        assert_eq!(error.pointer, bad);
    }
    let message = MatchRules::new(true, &["/a*b".into()])
        .expect_err("bad")
        .to_string();
    assert!(message.contains("write a literal * as ~2"), "{message}");
}

#[test]
fn nested_wildcards_walk_a_large_body_once() {
    let messages: Vec<Value> = (0..20_000)
        .map(|i| json!({"role": "assistant", "tool_calls": [{"id": format!("c{i}")}, {"id": "d"}]}))
        .collect();
    let rules = MatchRules::new(false, &["/messages/*/tool_calls/*/id".into()]).expect("ok");
    let body = json!({"messages": messages}).to_string();
    let normalized = rules.normalize(body.as_bytes()).expect("json");
    let calls = normalized["messages"][19_999]["tool_calls"].clone();
    assert_eq!(calls, json!([{}, {}]));
}

fn loose() -> MatchRules {
    MatchRules::default().with_tool_call_ids(ToolCallIds::Loose)
}

fn chat_loop(call: &str, answered: &str) -> Value {
    json!({"model": "m", "messages": [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "tool_calls": [
            {"id": call, "type": "function", "function": {"name": "w", "arguments": "{}"}},
            {"id": "other", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": answered, "content": "sunny"},
        {"role": "tool", "tool_call_id": if answered == call { "other" } else { call },
         "content": "rain"}
    ]})
}

fn responses_loop(call: &str, answered: &str) -> Value {
    json!({"model": "m", "input": [
        {"role": "user", "content": "weather?"},
        {"type": "function_call", "call_id": call, "name": "w", "arguments": "{}"},
        {"type": "custom_tool_call", "call_id": "other", "name": "c", "input": "x"},
        {"type": "function_call_output", "call_id": answered, "output": "sunny"},
        {"type": "custom_tool_call_output", "call_id": if answered == call { "other" } else { call },
         "output": "rain"}
    ]})
}

fn anthropic_loop(call: &str, answered: &str) -> Value {
    json!({"model": "m", "max_tokens": 9, "messages": [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "looking", "id": "not-a-call"},
            {"type": "tool_use", "id": call, "name": "w", "input": {}},
            {"type": "tool_use", "id": "other", "name": "w", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": answered, "content": "sunny"},
            {"type": "tool_result", "tool_use_id": if answered == call { "other" } else { call },
             "content": "rain"}]}
    ]})
}

#[test]
fn loose_tool_call_ids_match_renamed_ids_but_not_a_result_for_another_call() {
    for (dialect, conversation) in [
        ("chat", chat_loop as fn(&str, &str) -> Value),
        ("responses", responses_loop),
        ("anthropic", anthropic_loop),
    ] {
        let recorded = conversation("call_abc", "call_abc");
        let invented = conversation("pyd_ai_7f3", "pyd_ai_7f3");
        let swapped = conversation("pyd_ai_7f3", "other");
        assert_ne!(
            key(&MatchRules::default(), &recorded),
            key(&MatchRules::default(), &invented),
            "{dialect}: strict compares ids literally"
        );
        assert_eq!(
            key(&loose(), &recorded),
            key(&loose(), &invented),
            "{dialect}"
        );
        assert_ne!(
            key(&loose(), &recorded),
            key(&loose(), &swapped),
            "{dialect}: swapped"
        );
    }
    // A non-call `id` (a text block's) still counts.
    let mut text_id = anthropic_loop("a", "a");
    text_id["messages"][1]["content"][0]["id"] = json!("changed");
    assert_ne!(
        key(&loose(), &anthropic_loop("a", "a")),
        key(&loose(), &text_id)
    );
}

#[test]
fn a_prefix_of_the_conversation_ranks_behind_the_same_turn() {
    let same_turn = chat_loop("call_abc", "call_abc");
    let mut previous_turn = chat_loop("x", "x");
    previous_turn["messages"]
        .as_array_mut()
        .expect("array")
        .truncate(1);
    let sent = chat_loop("pyd_ai_1", "pyd_ai_1");
    let near = compare(&same_turn, &sent);
    let prefix = compare(&previous_turn, &sent);
    assert_eq!(
        near.pointers,
        ["/messages/1/tool_calls/0/id", "/messages/2/tool_call_id"]
    );
    assert_eq!((near.length_mismatches, near.leaves), (0, 2));
    assert_eq!(
        prefix.pointers,
        ["/messages/1", "/messages/2", "/messages/3"]
    );
    assert_eq!(prefix.length_mismatches, 1);
    assert!(prefix.leaves > near.leaves, "{prefix:?}");
}

#[test]
fn wildcards_are_suggested_for_pointers_that_differ_only_in_indexes() {
    let pointers: Vec<String> = [
        "/messages/1/tool_calls/0/id",
        "/messages/3/tool_calls/1/id",
        "/messages/2/tool_call_id",
        "/model",
    ]
    .iter()
    .map(|p| (*p).to_owned())
    .collect();
    assert_eq!(
        diff::wildcard_suggestions(&pointers),
        ["/messages/*/tool_calls/*/id"]
    );
}

#[test]
fn safety_identifier_is_ignored_by_default() {
    let rules = MatchRules::default();
    let a = json!({"model": "m", "safety_identifier": "u-1"});
    let b = json!({"model": "m", "safety_identifier": "u-2"});
    assert_eq!(key(&rules, &a), key(&rules, &b));
}

#[test]
fn the_query_key_keeps_what_selects_the_answer_and_drops_credentials() {
    assert_eq!(query_key(None), "");
    assert_eq!(query_key(Some("")), "");
    // As sent (key in clear, any order) and as recorded (key redacted): the same key.
    assert_eq!(query_key(Some("key=AIzaSyPlanted&alt=sse")), "alt=sse");
    assert_eq!(query_key(Some("alt=sse&key=[REDACTED]")), "alt=sse");
    assert_eq!(
        query_key(Some("b=2&x-goog-api-key=k&a=1&code=c")),
        "a=1&b=2"
    );
    // A parameter redacted by a configured name is left out by its value.
    assert_eq!(
        query_key(Some("tenant=[REDACTED]&api-version=2024")),
        "api-version=2024"
    );
    let rules = MatchRules::default();
    let body = Some(&b"{}"[..]);
    assert_ne!(
        rules.key_with_query("POST", "/p", Some("alt=sse"), body),
        rules.key_with_query("POST", "/p", None, body),
        "an SSE stream and a JSON-array stream of the same request are different answers"
    );
}

#[test]
fn json_rpc_requests_match_by_method_and_params_whatever_their_id_and_progress_token() {
    let rules = MatchRules::default();
    let key = |body: &str| rules.key("POST", "/mcp", Some(body.as_bytes()));
    let recorded = key(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_weather","arguments":{"location":"Paris"}}}"#,
    );
    let sent = key(
        r#"{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"get_weather","arguments":{"location":"Paris"},"_meta":{"progressToken":"c-1"}}}"#,
    );
    assert_eq!(recorded, sent);
    // Another argument, another page, another method: other keys.
    let other = key(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_weather","arguments":{"location":"Oslo"}}}"#,
    );
    assert_ne!(recorded, other);
    let page = |cursor: &str| {
        key(&format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{"cursor":"{cursor}"}}}}"#
        ))
    };
    assert_ne!(page("p-2"), page("p-3"));
    // Other `_meta` members still count; a body without `jsonrpc` keeps its `id`.
    let meta = key(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_weather","arguments":{"location":"Paris"},"_meta":{"trace":"x"}}}"#,
    );
    assert_ne!(recorded, meta);
    assert_ne!(
        key(r#"{"id":1,"model":"m"}"#),
        key(r#"{"id":2,"model":"m"}"#)
    );
}
