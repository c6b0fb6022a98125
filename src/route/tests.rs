//! Unit tests for `route`: prefix matching, stripping and joining.

use super::*;

fn url(text: &str) -> UpstreamUrl {
    UpstreamUrl::parse(text).expect("valid upstream")
}

fn table() -> RouteTable {
    let groq = Route::new("groq", "/groq", url("https://api.groq.com/openai/")).expect("route");
    let local = Route::new("local", "/groq/local", url("http://127.0.0.1:8000")).expect("route");
    RouteTable::new(url("https://api.openai.com"), vec![groq, local]).expect("table")
}

fn target(path_and_query: &str) -> (String, String) {
    let table = table();
    let (path, query) = match path_and_query.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (path_and_query, None),
    };
    let (route, rest) = table.resolve(path);
    let uri = route.upstream.target(rest, query).expect("uri");
    (route.name.to_string(), uri.to_string())
}

#[test]
fn route_prefix_is_stripped_and_upstream_base_path_joined() {
    assert_eq!(
        target("/groq/v1/chat/completions?stream=true&a=%20b"),
        (
            "groq".into(),
            "https://api.groq.com/openai/v1/chat/completions?stream=true&a=%20b".into()
        )
    );
    assert_eq!(
        target("/groq"),
        ("groq".into(), "https://api.groq.com/openai".into())
    );
}

#[test]
fn longest_prefix_wins_and_prefixes_match_whole_segments() {
    assert_eq!(
        target("/groq/local/v1/models"),
        ("local".into(), "http://127.0.0.1:8000/v1/models".into())
    );
    assert_eq!(
        target("/groqx/v1"),
        ("default".into(), "https://api.openai.com/groqx/v1".into())
    );
}

#[test]
fn default_route_strips_nothing_and_keeps_the_root() {
    assert_eq!(
        target("/"),
        ("default".into(), "https://api.openai.com/".into())
    );
    let with_base = RouteTable::new(url("https://api.groq.com/openai"), vec![]).expect("table");
    let (route, rest) = with_base.resolve("/v1/models");
    let uri = route.upstream.target(rest, None).expect("uri");
    assert_eq!(uri.to_string(), "https://api.groq.com/openai/v1/models");
}

#[test]
fn upstream_urls_are_validated() {
    assert!(matches!(
        UpstreamUrl::parse("ftp://x"),
        Err(RouteError::UnsupportedScheme(_))
    ));
    assert!(matches!(
        UpstreamUrl::parse("https://u:p@x"),
        Err(RouteError::HasUserinfo(_))
    ));
    assert!(matches!(
        UpstreamUrl::parse("https://x/?a=1"),
        Err(RouteError::HasQuery(_))
    ));
    assert!(matches!(
        UpstreamUrl::parse("/just/a/path"),
        Err(RouteError::NotAUrl(_))
    ));
    assert_eq!(url("http://h:8080/base//").as_str(), "http://h:8080/base");
}

#[test]
fn route_definitions_are_validated() {
    let up = url("http://h");
    assert_eq!(
        Route::new("", "/a", up.clone()).err(),
        Some(RouteError::EmptyName)
    );
    assert_eq!(
        Route::new("default", "/a", up.clone()).err(),
        Some(RouteError::ReservedName)
    );
    assert_eq!(
        Route::new("r", "/", up.clone()).err(),
        Some(RouteError::RootPrefix)
    );
    assert!(matches!(
        Route::new("r", "a", up.clone()),
        Err(RouteError::BadPrefix(_))
    ));
    let a = Route::new("a", "/x", up.clone()).expect("a");
    let b = Route::new("b", "/x/", up.clone()).expect("b");
    assert_eq!(
        RouteTable::new(up, vec![a, b]).err(),
        Some(RouteError::DuplicatePrefix("/x".into()))
    );
}

#[test]
fn url_errors_never_quote_a_credential() {
    for (text, kept) in [
        ("https://user:sk-planted-1@x/v1", "https://[REDACTED]@x/v1"),
        ("https://x/v1?key=sk-planted-1&a=1", "?key=[REDACTED]&a=1"),
        ("ftp://u:sk-planted-1@x", "ftp://[REDACTED]@x"),
        ("u:sk-planted-1@x", "[REDACTED]@x"),
    ] {
        let message = UpstreamUrl::parse(text).expect_err(text).to_string();
        assert!(!message.contains("sk-planted-1"), "{message}");
        assert!(message.contains(kept), "{message}");
    }
}

#[test]
fn target_uri_joins_as_target_does_whether_or_not_it_reuses_the_clients_path() {
    let bare = RouteTable::new(url("http://127.0.0.1:8000"), vec![]).expect("table");
    for table in [table(), bare] {
        for client in [
            "/",
            "/v1/chat/completions",
            "/v1/chat/completions?stream=true&a=%20b",
            "/v1beta/models/g:streamGenerateContent?alt=sse&key=k",
            "/groq",
            "/groq/v1/models?x=1",
            "/groq/local/v1/models",
            "/groqx/v1?",
            "http://elsewhere.example/v1/x?y=2",
        ] {
            let client_uri: Uri = client.parse().expect("client uri");
            let (route, rest) = table.resolve(client_uri.path());
            let joined = route
                .upstream
                .target(rest, client_uri.query())
                .expect("target");
            let via = route.target_uri(&client_uri).expect("target_uri");
            assert_eq!(via, joined, "{client}");
            assert_eq!(via.to_string(), joined.to_string(), "{client}");
        }
    }
}
