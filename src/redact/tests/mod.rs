//! Unit tests of redaction: default and configured headers, body pointers, query parameters
//! and URL user-info, each checked for both the replaced value and the `redacted` list; the
//! credential-named body fields in `body`.

use http::{HeaderMap, HeaderValue};
use serde_json::json;

use super::*;

pub(super) fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
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
fn bedrock_credentials_are_redacted_and_its_signing_metadata_kept() {
    // SigV4 (boto3 with access keys) and a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK).
    let map = headers(&[
        (
            "authorization",
            "AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/20261206/us-east-1/bedrock/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date, Signature=abc123",
        ),
        ("x-amz-security-token", "IQoJb3JpZ2luX2VjEXAMPLE"),
        ("x-amz-date", "20261206T030000Z"),
        ("x-amz-content-sha256", "e3b0c44298fc1c149afbf4c8996fb924"),
        (
            "amz-sdk-invocation-id",
            "0b6f2c1e-0000-4000-8000-000000000000",
        ),
    ]);
    let mut redacted = Vec::new();
    let out = Redactor::default().headers(&map, &mut redacted);
    let value = |name: &str| {
        out.iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    assert_eq!(value("authorization"), Some(REDACTED));
    assert_eq!(value("x-amz-security-token"), Some(REDACTED));
    assert_eq!(value("x-amz-date"), Some("20261206T030000Z"));
    assert_eq!(
        value("x-amz-content-sha256"),
        Some("e3b0c44298fc1c149afbf4c8996fb924")
    );
    assert_eq!(
        redacted,
        vec!["header:authorization", "header:x-amz-security-token"]
    );
    let bearer = headers(&[("authorization", "Bearer ABSKQmVkcm9ja0FQSUtleS1leGFtcGxl")]);
    let out = Redactor::default().headers(&bearer, &mut Vec::new());
    assert_eq!(out, vec![("authorization".into(), REDACTED.into())]);
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
fn a_response_header_echoing_a_query_credential_is_redacted() {
    let redactor = Redactor::default();
    let secrets = redactor.query_secret_values("alt=sse&key=AIza%2Dplanted-77&n=12345678");
    assert_eq!(secrets, ["AIza%2Dplanted-77", "AIza-planted-77"]);
    assert!(redactor.query_secret_values("key=short").is_empty());
    let response = headers(&[
        ("x-goog-echo", "url=...?key=AIza-planted-77"),
        ("x-goog-request", "alt=sse"),
    ]);
    let mut redacted = Vec::new();
    let out = redactor.response_headers(&response, &secrets, &mut redacted);
    assert_eq!(out[0].1, REDACTED);
    assert_eq!(out[1].1, "alt=sse");
    assert_eq!(redacted, ["header:x-goog-echo"]);
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

mod body;
