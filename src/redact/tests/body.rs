//! Credential-named request body fields: the names and spellings the walk redacts, schemas
//! and counters it leaves, its byte prefilter, any depth at a cost in proportion to the body,
//! and a body as a log line shows it.

use serde_json::{Value, json};

use super::super::*;

#[test]
fn credential_named_body_fields_are_redacted_but_schemas_and_counters_are_not() {
    let mut body = json!({
        "model": "m",
        "max_tokens": 16,
        "api_key": "sk-body",
        "metadata": {"client_secret": "cs-1", "nested": [{"password": "pw"}], "api_keys": ["k1", "k2"]},
        "tools": [{"type": "function", "function": {"name": "login", "parameters": {
            "type": "object", "properties": {"password": {"type": "string"}, "api_key": {"const": "fixed"}}
        }}}]
    });
    let tools_before = body["tools"].clone();
    let mut redacted = Vec::new();
    Redactor::default().body(&mut body, &mut redacted);
    assert_eq!(body["api_key"], REDACTED);
    assert_eq!(body["metadata"]["client_secret"], REDACTED);
    assert_eq!(body["metadata"]["nested"][0]["password"], REDACTED);
    assert_eq!(body["metadata"]["api_keys"], json!([REDACTED, REDACTED]));
    assert_eq!(body["max_tokens"], 16);
    assert_eq!(body["tools"], tools_before);
    assert!(redacted.contains(&"body:/api_key".to_string()));
    assert!(redacted.contains(&"body:/metadata/api_keys/1".to_string()));
}

#[test]
fn thousands_of_credential_fields_are_redacted_with_a_short_list() {
    let items: Vec<_> = (0..5000)
        .map(|i| json!({"api_key": format!("k{i}")}))
        .collect();
    let mut body = json!({ "items": items });
    let mut redacted = Vec::new();
    Redactor::default().body(&mut body, &mut redacted);
    assert!(body.to_string().matches(REDACTED).count() == 5000);
    assert_eq!(redacted.len(), 32);
    assert_eq!(redacted.last().map(String::as_str), Some("body:..."));
}

#[test]
fn a_body_the_prefilter_passes_has_nothing_to_redact() {
    // Every body whose walk redacts something must be caught by the byte prefilter, whatever
    // spelling the credential-named field takes; ordinary bodies must pass it.
    let secret_bodies = [
        r#"{"api_key":"sk"}"#,
        r#"{"API-KEY":"sk"}"#,
        r#"{"Api_Key":1}"#,
        r#"{"apiKey":"x"}"#,
        r#"{"metadata":{"Client_Secret":"x"}}"#,
        r#"{"a":[{"b":[{"PassWord":"x"}]}]}"#,
        r#"{"KEY":"x"}"#,
        r#"{"pwd":"x"}"#,
        r#"{"Jwt":"x"}"#,
        r#"{"refresh-token":"x"}"#,
        r#"{"api\u005fkey":"x"}"#,
        r#"{"k\u0065y":"x"}"#,
        r#"{"k%65y":"x"}"#,
        r#"{"api%5Fkey":"x"}"#,
        r#"{"x-Bearer-y":"x"}"#,
        r#"{"apiToken":"x"}"#,
        r#"{"refreshTokenValue":"x"}"#,
        r#"{"HF-TOKEN":"x"}"#,
        r#"{"openaiKey":"x"}"#,
        r#"{"basicAuth":"x"}"#,
        r#"{"session-id":"x"}"#,
    ];
    for raw in secret_bodies {
        let mut body: serde_json::Value = serde_json::from_str(raw).expect("json");
        let before = body.clone();
        let mut redacted = Vec::new();
        Redactor::default().body(&mut body, &mut redacted);
        assert_ne!(body, before, "{raw}: the walk redacts it");
        assert!(
            Redactor::default().may_redact_body(raw.as_bytes()),
            "{raw}: the prefilter must send it to the walk"
        );
    }
    let clean = [
        r#"{"model":"m","messages":[{"role":"user","content":"What is the weather in Paris?"}],"max_tokens":16,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}"#,
        r#"{"model":"m","input":"hi","keys":["a"],"max_tokens":3}"#,
    ];
    for raw in clean {
        let mut body: serde_json::Value = serde_json::from_str(raw).expect("json");
        let before = body.clone();
        Redactor::default().body(&mut body, &mut Vec::new());
        assert_eq!(body, before, "{raw}");
        assert!(
            !Redactor::default().may_redact_body(raw.as_bytes()),
            "{raw}"
        );
    }
    // Configured body pointers always need the walk.
    let pointed = Redactor::new(&RedactionConfig {
        body_pointers: vec!["/user".into()],
        ..RedactionConfig::default()
    });
    assert!(pointed.may_redact_body(clean[0].as_bytes()));
}

/// Body field names that real traffic carries credentials in, each in the spellings the matcher
/// reads alike (case, `-` for `_`, camel case): the walk redacts every one and the prefilter
/// sends each to it.
#[test]
fn every_body_name_found_in_clear_is_redacted_in_any_spelling() {
    let names = [
        ["api_token", "API-TOKEN", "apiToken"],
        ["hf_token", "HF_Token", "hfToken"],
        ["openai_key", "OpenAI-Key", "openaiKey"],
        ["access_key", "ACCESS_KEY", "accessKey"],
        ["auth", "Auth", "AUTH"],
        ["sessionid", "SessionID", "sessionId"],
    ];
    for name in names.iter().flatten() {
        let raw =
            format!(r#"{{"model":"m","metadata":{{"{name}":"planted-1","n":[{{"{name}":7}}]}}}}"#);
        let mut body: serde_json::Value = serde_json::from_str(&raw).expect("json");
        let mut redacted = Vec::new();
        assert!(
            Redactor::default().may_redact_body(raw.as_bytes()),
            "{name}: the prefilter must send it to the walk"
        );
        Redactor::default().body(&mut body, &mut redacted);
        assert_eq!(body["metadata"][name], REDACTED, "{name}");
        assert_eq!(body["metadata"]["n"][0][name], REDACTED, "{name}");
        assert!(
            redacted.contains(&format!("body:/metadata/{name}")),
            "{redacted:?}"
        );
    }
    // Ordinary fields with a credential's ending or fragment stay.
    let mut body = json!({"prompt_cache_key": "k", "max_tokens": 5, "author": "a", "keys": ["x"],
        "params": {"_meta": {"progressToken": 1}}});
    let before = body.clone();
    Redactor::default().body(&mut body, &mut Vec::new());
    assert_eq!(body, before);
}

/// A credential nested deeper than the walk once went (32) is redacted, and its pointer is
/// spelled out whole: 40 and 120 levels (serde_json refuses past 128).
#[test]
fn a_credential_nested_at_any_parsed_depth_is_redacted() {
    for depth in [40usize, 120] {
        let mut raw = String::new();
        for level in 0..depth {
            raw.push_str(if level % 2 == 0 { r#"{"a/b":"# } else { "[" });
        }
        raw.push_str(r#"{"api_key":"planted-deep"}"#);
        for level in (0..depth).rev() {
            raw.push(if level % 2 == 0 { '}' } else { ']' });
        }
        let mut body: serde_json::Value = serde_json::from_str(&raw).expect("parsed");
        let mut redacted = Vec::new();
        Redactor::default().body(&mut body, &mut redacted);
        assert!(!body.to_string().contains("planted-deep"), "depth {depth}");
        let expected: String = (0..depth)
            .map(|level| if level % 2 == 0 { "/a~1b" } else { "/0" })
            .collect::<String>()
            + "/api_key";
        assert_eq!(redacted, [format!("body:{expected}")], "depth {depth}");
    }
}

#[test]
fn a_body_for_a_log_line_is_redacted_cut_or_only_sized() {
    let redactor = Redactor::default();
    let clean = br#"{"model":"m","messages":[]}"#;
    assert_eq!(
        redactor.body_for_log(clean, 4096),
        r#"{"model":"m","messages":[]}"#
    );
    assert_eq!(redactor.body_for_log(clean, 5), r#"{"mod"#);
    let secret = br#"{"model":"m","api_key":"sk-planted-log","hf_token":"hf-planted"}"#;
    let shown = redactor.body_for_log(secret, 4096);
    assert!(!shown.contains("planted"), "{shown}");
    assert!(shown.contains(r#""model":"m""#), "{shown}");
    let broken = br#"{"api_key":"sk-planted-log","#;
    let shown = redactor.body_for_log(broken, 4096);
    assert!(!shown.contains("planted"), "{shown}");
    assert!(shown.contains("28 bytes"), "{shown}");
}

/// 30 levels of 8 KiB names over 20,000 siblings and a credential: a 455 KB body. Spelling each
/// value's pointer as the walk goes would take ~246 KB for each sibling, ~4.9 GB in all; the
/// walk spells only the listed pointer.
#[test]
fn a_deep_body_with_long_names_is_walked_in_proportion_to_its_size() {
    let name = "n".repeat(8192);
    let mut leaf = serde_json::Map::new();
    for i in 0..20_000 {
        leaf.insert(format!("k{i}"), json!(1));
    }
    leaf.insert("api_key".into(), json!("planted-under-long-names"));
    let mut body = Value::Object(leaf);
    for _ in 0..30 {
        let mut level = serde_json::Map::new();
        level.insert(name.clone(), body);
        body = Value::Object(level);
    }
    let started = std::time::Instant::now();
    let mut redacted = Vec::new();
    Redactor::default().body(&mut body, &mut redacted);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(!body.to_string().contains("planted-under-long-names"));
    let expected = format!("body:{}/api_key", format!("/{name}").repeat(30));
    assert_eq!(redacted, [expected]);
}

#[test]
fn a_body_as_recorded_is_given_only_when_redaction_changes_it() {
    let redactor = Redactor::default();
    let clean = br#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
    assert_eq!(redactor.as_recorded(clean), None, "nothing to redact");
    // Spelled like a credential but holding none (a tools schema): walked, unchanged.
    let schema = br#"{"tools":[{"type":"function","function":{"name":"f","parameters":{"properties":{"api_key":{"type":"string"}}}}}]}"#;
    assert_eq!(redactor.as_recorded(schema), None);
    assert_eq!(
        redactor.as_recorded(b"{\"api_key\": broken"),
        None,
        "not JSON"
    );
    let secret = br#"{"model":"m", "api_key":"sk-1"}"#;
    let recorded = redactor.as_recorded(secret).expect("redacted");
    let value: Value = serde_json::from_slice(&recorded).expect("JSON");
    assert_eq!(value, json!({"model": "m", "api_key": REDACTED}));
}
