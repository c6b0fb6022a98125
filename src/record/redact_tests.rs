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
        headers: vec!["X-Tenant-Secret".into()],
        body_pointers: vec![],
    });
    let map = headers(&[("x-tenant-secret", "one"), ("x-tenant-secret", "two")]);
    let mut redacted = Vec::new();
    let out = redactor.headers(&map, &mut redacted);
    assert!(out.iter().all(|(_, v)| v == REDACTED));
    assert_eq!(out.len(), 2);
    assert_eq!(redacted, vec!["header:x-tenant-secret"]);
    assert!(!Redactor::default().is_secret_header("x-tenant-secret"));
}

#[test]
fn body_pointers_replace_whole_values() {
    let redactor = Redactor::new(&RedactionConfig {
        headers: vec![],
        body_pointers: vec!["/user".into(), "/metadata".into(), "/absent".into()],
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
