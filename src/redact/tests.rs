//! Unit tests of redaction: default and configured headers, body pointers, query parameters
//! and URL user-info, each checked for both the replaced value and the `redacted` list.

use http::{HeaderMap, HeaderValue};
use serde_json::json;

use super::*;

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(*name, HeaderValue::from_static(value));
    }
    map
}

#[test]
fn default_headers_are_redacted_and_listed() {
    let map = headers(&[
        ("content-type", "application/json"),
        ("authorization", "Bearer sk-secret"),
        ("x-api-key", "sk-other"),
        ("cookie", "a=b"),
        ("openai-project", "proj_1"),
    ]);
    let mut redacted = Vec::new();
    let out = Redactor::default().headers(&map, &mut redacted);
    assert_eq!(
        out,
        vec![
            ("content-type".into(), "application/json".into()),
            ("authorization".into(), REDACTED.into()),
            ("x-api-key".into(), REDACTED.into()),
            ("cookie".into(), REDACTED.into()),
            ("openai-project".into(), REDACTED.into()),
        ]
    );
    assert_eq!(
        redacted,
        vec![
            "header:authorization",
            "header:x-api-key",
            "header:cookie",
            "header:openai-project"
        ]
    );
}

#[test]
fn configured_headers_match_case_insensitively_and_repeat_once_in_the_list() {
    let redactor = Redactor::new(&RedactionConfig {
        headers: vec!["X-Tenant-Id".into()],
        body_pointers: vec![],
        ..RedactionConfig::default()
    });
    let map = headers(&[("x-tenant-id", "one"), ("x-tenant-id", "two")]);
    let mut redacted = Vec::new();
    let out = redactor.headers(&map, &mut redacted);
    assert!(out.iter().all(|(_, v)| v == REDACTED));
    assert_eq!(out.len(), 2);
    assert_eq!(redacted, vec!["header:x-tenant-id"]);
    assert!(!Redactor::default().is_secret_header("x-tenant-id"));
}

#[test]
fn body_pointers_replace_whole_values() {
    let redactor = Redactor::new(&RedactionConfig {
        headers: vec![],
        body_pointers: vec!["/user".into(), "/metadata".into(), "/absent".into()],
        ..RedactionConfig::default()
    });
    let mut body = json!({"model": "m", "user": "alice", "metadata": {"k": "v"}});
    let mut redacted = Vec::new();
    redactor.body(&mut body, &mut redacted);
    assert_eq!(
        body,
        json!({"model": "m", "user": REDACTED, "metadata": REDACTED})
    );
    assert_eq!(redacted, vec!["body:/user", "body:/metadata"]);
}

#[test]
fn credential_like_query_parameters_are_redacted() {
    let mut redacted = Vec::new();
    let out = query(
        "key=AIza123&n=2&access_token=t0k&x-goog-api-key=g&api%5Fkey=p&flag",
        &mut redacted,
    );
    assert_eq!(
        out,
        "key=[REDACTED]&n=2&access_token=[REDACTED]&x-goog-api-key=[REDACTED]&api%5Fkey=[REDACTED]&flag"
    );
    assert_eq!(
        redacted,
        vec![
            "query:key",
            "query:access_token",
            "query:x-goog-api-key",
            "query:api%5Fkey"
        ]
    );
    assert!(!is_secret_param("model"));
    assert!(!is_secret_param("stream"));
}

#[test]
fn urls_lose_user_info_and_secret_parameters() {
    let mut redacted = Vec::new();
    assert_eq!(
        url(
            "https://user:pw@api.example.com:8443/v1?key=s",
            &mut redacted
        ),
        "https://api.example.com:8443/v1?key=[REDACTED]"
    );
    assert_eq!(redacted, vec!["upstream:userinfo", "query:key"]);
    let mut none = Vec::new();
    assert_eq!(
        url("http://127.0.0.1:9/openai", &mut none),
        "http://127.0.0.1:9/openai"
    );
    assert!(none.is_empty());
}

#[test]
fn credential_headers_are_redacted_by_pattern_not_by_list() {
    let map = headers(&[
        ("x-goog-api-key", "g-1"),
        ("X-Auth-Token", "t-1"),
        ("Ocp-Apim-Subscription-Key", "o-1"),
        ("Helicone-Auth", "h-1"),
        ("x-portkey-api-key", "p-1"),
        ("X-Amz-Security-Token", "a-1"),
        ("x-session-id", "s-1"),
        ("x-amz-signature", "sig-1"),
        ("x-db-password", "pw-1"),
        ("x-bearer", "b-1"),
        ("X-JWT", "j-1"),
        ("x-pass", "p-2"),
        ("x-pwd", "p-3"),
        ("x-jwt-assertion", "j-2"),
        ("content-type", "application/json"),
        ("x-bypass-cache", "1"),
        ("x-ratelimit-remaining-tokens", "9000"),
        ("x-request-id", "req-1"),
    ]);
    let mut redacted = Vec::new();
    let out = Redactor::default().headers(&map, &mut redacted);
    let kept: Vec<&str> = out
        .iter()
        .filter(|(_, v)| v != REDACTED)
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(
        kept,
        [
            "content-type",
            "x-bypass-cache",
            "x-ratelimit-remaining-tokens",
            "x-request-id"
        ]
    );
    assert_eq!(redacted.len(), 14);
}

#[test]
fn allow_and_deny_lists_override_the_patterns() {
    let redactor = Redactor::new(&RedactionConfig {
        headers: vec!["x-tenant".into()],
        allow_headers: vec!["X-Session-Id".into(), "authorization".into()],
        query_params: vec!["tenant".into()],
        allow_query_params: vec!["page_token".into()],
        ..RedactionConfig::default()
    });
    assert!(redactor.is_secret_header("x-tenant"));
    assert!(!redactor.is_secret_header("x-session-id"));
    // The built-in list is never allowed away.
    assert!(redactor.is_secret_header("Authorization"));
    let mut redacted = Vec::new();
    assert_eq!(
        redactor.query("tenant=t1&page_token=p2&jwt=j3", &mut redacted),
        format!("tenant={REDACTED}&page_token=p2&jwt={REDACTED}")
    );
}

#[test]
fn weak_query_names_are_credentials_too() {
    let mut redacted = Vec::new();
    let out = query(
        "pwd=a&pass=b&jwt=c&bearer=d&sessionid=e&model=gpt&n=2&x-pwd=f&bypass=g",
        &mut redacted,
    );
    assert_eq!(
        out,
        format!(
            "pwd={REDACTED}&pass={REDACTED}&jwt={REDACTED}&bearer={REDACTED}&sessionid={REDACTED}&model=gpt&n=2&x-pwd={REDACTED}&bypass=g"
        )
    );
}

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
fn a_response_header_echoing_a_request_credential_is_redacted() {
    let redactor = Redactor::default();
    let request = headers(&[("authorization", "Bearer sk-echoed-123456")]);
    let secrets = redactor.secret_values(&request);
    let response = headers(&[
        ("x-debug-echo", "caller=sk-echoed-123456"),
        ("content-type", "application/json"),
    ]);
    let mut redacted = Vec::new();
    let out = redactor.response_headers(&response, &secrets, &mut redacted);
    assert_eq!(out[0].1, REDACTED);
    assert_eq!(out[1].1, "application/json");
    assert_eq!(redacted, ["header:x-debug-echo"]);
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
fn the_window_scan_finds_fragments_like_str_contains() {
    for name in [
        "",
        "k",
        "key",
        "x-api-key",
        "authorization",
        "tok",
        "x-token-id",
        "keyk",
    ] {
        for fragment in SECRET_FRAGMENTS {
            assert_eq!(
                super::contains(name, fragment),
                name.contains(fragment),
                "{name} / {fragment}"
            );
        }
    }
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

/// The names issue 33 found in clear, each in the spellings the matcher reads alike (case,
/// `-` for `_`, camel case): the walk redacts every one and the prefilter sends each to it.
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
    let mut body = json!({"prompt_cache_key": "k", "max_tokens": 5, "author": "a", "keys": ["x"]});
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

/// 30 levels of 8 KiB names over 20,000 siblings and a credential: a 455 KB body. The walk
/// once built each value's pointer as it went (~246 KB for each sibling, ~4.9 GB in all: it
/// aborted under a 3 GB address-space limit); it now spells only the listed pointer.
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
