//! The proxy is transparent: bodies, statuses and end-to-end headers arrive exactly as a direct
//! connection delivers them; only hop-by-hop headers and Host change; routes rewrite paths.

use std::time::Duration;

use bytes::Bytes;

use crate::support::client::{exchange, request};
use crate::support::proxy;
use crate::support::upstream::{Script, Upstream};

const COMPLETION: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}]}"#;

fn scripted(path: &str) -> Script {
    match path {
        "/v1/chat/completions" => Script::full(200, "application/json", COMPLETION)
            .header("x-request-id", "req_123")
            .header("openai-processing-ms", "42")
            .header("date", "Wed, 02 Dec 2026 12:00:00 GMT"),
        "/chunked" => Script {
            status: 200,
            headers: vec![("content-type".into(), "application/octet-stream".into())],
            chunks: (0..5u8)
                .map(|i| (Duration::from_millis(5), Bytes::from(vec![i; 1000 + i as usize])))
                .collect(),
            silent: false,
            abort: false,
        },
        "/e429" => Script::full(
            429,
            "application/json",
            r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
        )
        .header("retry-after", "20"),
        "/e500" => Script::full(500, "text/plain", "upstream exploded"),
        _ => Script::full(404, "text/plain", "no such path"),
    }
}

#[tokio::test]
async fn buffered_and_chunked_bodies_are_identical_to_a_direct_request() {
    let upstream = Upstream::start(|received| scripted(&received.uri), None).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    for (method, path, body) in [
        (
            "POST",
            "/v1/chat/completions",
            r#"{"model":"m","messages":[]}"#,
        ),
        ("GET", "/chunked", ""),
        ("POST", "/e429", "{}"),
        ("GET", "/e500", ""),
    ] {
        let direct = exchange(
            upstream.addr(),
            request(upstream.addr(), method, path, body),
        )
        .await;
        let mut via = exchange(
            tooltap.local_addr(),
            request(tooltap.local_addr(), method, path, body),
        )
        .await;
        assert_eq!(via.status, direct.status, "{path}");
        // The one header tooltap adds: the exchange id, so a user can find it in logs.
        let id = via.headers.remove("x-tooltap-exchange");
        assert!(
            id.is_some_and(|id| id.len() > 2),
            "{path}: no x-tooltap-exchange"
        );
        assert_eq!(via.headers, direct.headers, "{path}");
        assert_eq!(via.body, direct.body, "{path}");
        assert_eq!(
            via.frames, direct.frames,
            "{path}: body frames merged or split"
        );
        assert!(
            !via.body.is_empty(),
            "{path}: an empty body would prove nothing"
        );
    }
}

#[tokio::test]
async fn upstream_4xx_and_5xx_pass_with_their_bodies_and_headers() {
    let upstream = Upstream::start(|received| scripted(&received.uri), None).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let addr = tooltap.local_addr();

    let limited = exchange(addr, request(addr, "POST", "/e429", "{}")).await;
    assert_eq!(limited.status, 429);
    assert_eq!(limited.headers["retry-after"], "20");
    assert_eq!(limited.json()["error"]["code"], "rate_limit_exceeded");

    let exploded = exchange(addr, request(addr, "GET", "/e500", "")).await;
    assert_eq!(exploded.status, 500);
    assert_eq!(exploded.body, "upstream exploded");
}

#[tokio::test]
async fn hop_by_hop_headers_are_stripped_host_rewritten_and_the_rest_preserved() {
    let upstream = Upstream::serving(
        Script::full(200, "application/json", "{}")
            .header("connection", "x-response-hop")
            .header("x-response-hop", "must not reach the client")
            .header("proxy-authenticate", "Basic realm=upstream")
            .header("x-end-to-end", "kept"),
    )
    .await;
    let mut upstream = upstream;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let addr = tooltap.local_addr();

    let mut sent = request(addr, "POST", "/v1/chat/completions", "{}");
    for (name, value) in [
        ("connection", "keep-alive, X-Named-Hop"),
        ("x-named-hop", "must not reach the upstream"),
        ("keep-alive", "timeout=5"),
        ("te", "trailers"),
        ("proxy-authorization", "Basic dG9vbHRhcDp4"),
        ("proxy-connection", "keep-alive"),
        ("authorization", "Bearer sk-test-123"),
        ("content-type", "application/json"),
        ("accept-encoding", "gzip, br"),
        ("openai-organization", "org-abc"),
        ("x-stainless-lang", "python"),
    ] {
        sent.headers_mut()
            .insert(name, value.parse().expect("value"));
    }
    let response = exchange(addr, sent).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.headers["x-end-to-end"], "kept");
    for gone in ["x-response-hop", "proxy-authenticate", "connection"] {
        assert!(
            !response.headers.contains_key(gone),
            "{gone} reached the client"
        );
    }

    let seen = upstream.next_request().await;
    assert_eq!(seen.headers["host"], upstream.addr().to_string());
    for gone in [
        "connection",
        "x-named-hop",
        "keep-alive",
        "te",
        "proxy-authorization",
        "proxy-connection",
    ] {
        assert!(
            !seen.headers.contains_key(gone),
            "{gone} reached the upstream"
        );
    }
    for (name, value) in [
        ("authorization", "Bearer sk-test-123"),
        ("content-type", "application/json"),
        ("accept-encoding", "gzip, br"),
        ("openai-organization", "org-abc"),
        ("x-stainless-lang", "python"),
        ("content-length", "2"),
    ] {
        assert_eq!(seen.headers[name], value, "{name}");
    }

    // Nothing is added: without Accept-Encoding from the app, none reaches the upstream.
    exchange(addr, request(addr, "GET", "/v1/models", "")).await;
    let plain = upstream.next_request().await;
    assert!(!plain.headers.contains_key("accept-encoding"));
    assert!(!plain.headers.contains_key("via"));
}

#[tokio::test]
async fn routes_strip_their_prefix_join_upstream_paths_and_keep_queries() {
    let mut openai = Upstream::serving(Script::full(200, "text/plain", "default")).await;
    let mut groq = Upstream::serving(Script::full(200, "text/plain", "groq")).await;
    let mut raw = proxy::raw_config(&format!("{}/openai/", openai.url()));
    raw.routes = vec![proxy::route("groq", "/groq", &format!("{}/v2", groq.url()))];
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();

    let answer = exchange(addr, request(addr, "GET", "/v1/models?limit=2&q=a%20b", "")).await;
    assert_eq!(answer.body, "default");
    assert_eq!(
        openai.next_request().await.uri,
        "/openai/v1/models?limit=2&q=a%20b"
    );

    let answer = exchange(
        addr,
        request(
            addr,
            "POST",
            "/groq/v1/chat/completions?stream=true",
            "{\"a\":1}",
        ),
    )
    .await;
    assert_eq!(answer.body, "groq");
    let seen = groq.next_request().await;
    assert_eq!(seen.uri, "/v2/v1/chat/completions?stream=true");
    assert_eq!(
        (seen.method.as_str(), &seen.body[..]),
        ("POST", &b"{\"a\":1}"[..])
    );
    assert_eq!(seen.headers["host"], groq.addr().to_string());

    // A prefix matches whole segments only: /groqx belongs to the default route.
    exchange(addr, request(addr, "DELETE", "/groqx/files/1", "")).await;
    let seen = openai.next_request().await;
    assert_eq!(
        (seen.method.as_str(), seen.uri.as_str()),
        ("DELETE", "/openai/groqx/files/1")
    );
}
