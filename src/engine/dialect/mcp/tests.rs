//! The MCP dialect driven through the engine's exchange: the observation the conversation
//! store takes, and rules over splits the fixtures do not cover.

use std::sync::Arc;

use serde_json::json;

use crate::engine::mcp_observation::{MessageKind, Parts};
use crate::engine::{
    BodyEnd, Dialect, EngineConfig, Exchange, Report, RequestParts, ResponseHead, SchemaCache,
};

fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("Content-Type", "application/json");

fn run(
    method: &str,
    request_headers: &[(&str, &str)],
    request: &str,
    head: ResponseHead,
    frames: &[&[u8]],
) -> Report {
    let config = Arc::new(EngineConfig::default());
    let headers = headers(request_headers);
    let parts = RequestParts {
        body: request.as_bytes(),
        path: Some("/mcp"),
        method: Some(method),
        headers: &headers,
    };
    let mut exchange = Exchange::start(&config, &SchemaCache::default(), Dialect::Mcp, parts);
    exchange.response_head(head);
    for frame in frames {
        exchange.feed(frame);
    }
    exchange.finish(BodyEnd::Complete)
}

fn head(status: u16, content_type: Option<&str>, kept: &[(&str, &str)]) -> ResponseHead {
    let mut pairs: Vec<(&str, &str)> = kept.to_vec();
    if let Some(content_type) = content_type {
        pairs.push(("Content-Type", content_type));
    }
    ResponseHead::from_headers(status, pairs)
}

fn rules(report: &Report) -> Vec<&str> {
    report.violations.iter().map(|v| v.rule.as_str()).collect()
}

#[test]
fn an_initialize_exchange_is_observed_for_the_conversation_store() {
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let response = br#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"w","version":"1"}}}"#;
    let report = run(
        "POST",
        &[ACCEPT, JSON],
        request,
        head(200, Some("application/json"), &[("Mcp-Session-Id", "s-1")]),
        &[response],
    );
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    let seen = report.mcp.expect("an observation");
    assert_eq!(seen.method.as_deref(), Some("POST"));
    assert_eq!(seen.status, Some(200));
    assert_eq!(seen.response_session.as_deref(), Some("s-1"));
    assert_eq!(seen.request[0].kind, MessageKind::Request);
    assert_eq!(seen.response[0].seq, Some(0));
    assert_eq!(
        seen.response[0].parts,
        Parts::InitializeResult {
            protocol_version: Some(json!("2025-11-25")),
            capabilities: Some(json!({"tools": {"listChanged": true}})),
        }
    );
}

#[test]
fn an_sse_answer_with_priming_crlf_and_multiline_data_is_whole_and_clean() {
    let request = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"f","arguments":{},"_meta":{"progressToken":"p"}}}"#;
    let body: &[u8] = b"id: 5_0\r\ndata: \r\n\r\n: ping - 2026\r\n\r\nid: 5_1\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\r\ndata: \"params\":{\"progressToken\":\"p\",\"progress\":1}}\r\n\r\nid: 5_2\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\r\n\r\n";
    let version = ("MCP-Protocol-Version", "2025-11-25");
    let report = run(
        "POST",
        &[ACCEPT, JSON, version],
        request,
        head(200, Some("text/event-stream"), &[]),
        &[body],
    );
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    let seen = report.mcp.expect("an observation");
    assert_eq!(seen.response.len(), 2);
    assert_eq!(seen.response[0].event_id.as_deref(), Some("5_1"));
    assert!(matches!(
        seen.response[1].parts,
        Parts::ToolsCallResult { .. }
    ));
}

#[test]
fn a_big_value_past_the_cap_is_left_out_and_said() {
    let big = "x".repeat(12 * 1024);
    let request = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"f","arguments":{{"a":"{big}"}}}}}}"#
    );
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":2,"result":{{"content":[],"structuredContent":{{"b":"{big}"}}}}}}"#
    );
    let config = Arc::new(EngineConfig {
        max_reassembled: 20 * 1024,
        ..EngineConfig::default()
    });
    let parts = RequestParts {
        body: request.as_bytes(),
        ..RequestParts::default()
    };
    let mut exchange = Exchange::start(&config, &SchemaCache::default(), Dialect::Mcp, parts);
    exchange.response_head(head(200, Some("text/event-stream"), &[]));
    exchange.feed(format!("data: {body}\n\n").as_bytes());
    let report = exchange.finish(BodyEnd::Complete);
    let seen = report.mcp.expect("an observation");
    assert!(seen.capped);
    assert!(seen.bytes <= 20 * 1024, "{}", seen.bytes);
    let Parts::ToolsCallResult {
        structured_content, ..
    } = &seen.response[0].parts
    else {
        panic!("a call result: {:?}", seen.response[0].parts);
    };
    assert_eq!(structured_content, &None, "left out past the cap");
    assert_eq!(report.completeness, crate::engine::Completeness::Complete);
}

#[test]
fn get_and_delete_exchanges_are_judged_by_their_status() {
    let legacy = [
        ACCEPT,
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Mcp-Session-Id", "s"),
    ];
    let report = run(
        "GET",
        &legacy,
        "",
        head(200, Some("application/json"), &[]),
        &[],
    );
    assert_eq!(rules(&report), ["mcp.http.get_status"]);
    let report = run("GET", &legacy, "", head(405, None, &[]), &[]);
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    let report = run("DELETE", &legacy, "", head(200, None, &[]), &[]);
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    let modern = [ACCEPT, ("MCP-Protocol-Version", "2026-07-28")];
    let report = run("DELETE", &modern, "", head(200, None, &[]), &[]);
    assert_eq!(rules(&report), ["mcp.http.get_status"]);
    assert_eq!(
        report.violations[0].severity,
        crate::engine::Severity::Warning
    );
}

/// What a case expects: no violation, the rules exactly, or a rule among others.
enum Expect {
    Clean,
    Exactly(&'static [&'static str]),
    Includes(&'static str),
}

/// A POST and its answer: the request, the answer's status, content type and body.
struct Case {
    what: &'static str,
    request: &'static str,
    status: u16,
    content_type: Option<&'static str>,
    body: &'static [&'static [u8]],
    expect: Expect,
}

#[test]
fn a_post_answer_is_judged_by_its_status() {
    const NOTIFICATION: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    const LIST: &str = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
    const NULL_ID_ERROR: &[u8] = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}"#;
    let version = ("MCP-Protocol-Version", "2025-11-25");
    let cases = [
        Case {
            what: "a notification answered 202",
            request: NOTIFICATION,
            status: 202,
            content_type: None,
            body: &[],
            expect: Expect::Clean,
        },
        Case {
            what: "a notification answered 200 with a body",
            request: NOTIFICATION,
            status: 200,
            content_type: Some("application/json"),
            body: &[br#"{"jsonrpc":"2.0","id":null}"#],
            expect: Expect::Includes("mcp.http.notification_status"),
        },
        Case {
            what: "a null-id error on a 4xx refusal",
            request: LIST,
            status: 400,
            content_type: Some("application/json"),
            body: &[NULL_ID_ERROR],
            expect: Expect::Clean,
        },
        Case {
            what: "a null-id error on a 200",
            request: LIST,
            status: 200,
            content_type: Some("application/json"),
            body: &[NULL_ID_ERROR],
            expect: Expect::Exactly(&["mcp.jsonrpc.error_id_invalid"]),
        },
    ];
    for case in cases {
        let report = run(
            "POST",
            &[ACCEPT, JSON, version],
            case.request,
            head(case.status, case.content_type, &[]),
            case.body,
        );
        let (what, found) = (case.what, rules(&report));
        match case.expect {
            Expect::Clean => assert!(found.is_empty(), "{what}: {found:?}"),
            Expect::Exactly(expected) => assert_eq!(found, expected, "{what}"),
            Expect::Includes(rule) => assert!(found.contains(&rule), "{what}: {found:?}"),
        }
    }
}

const V4: [(&str, &str); 3] = [ACCEPT, JSON, ("MCP-Protocol-Version", "2026-07-28")];
const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

#[test]
fn progress_on_a_listen_stream_is_wrong_wherever_the_frames_split() {
    let listen = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{{{META},"notifications":{{"toolsListChanged":true}}}}}}"#
    );
    let stream = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":1}}}\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p\",\"progress\":1}}\n\n";
    let mut headers = V4.to_vec();
    headers.push(("Mcp-Method", "subscriptions/listen"));
    let sse = || {
        head(
            200,
            Some("text/event-stream"),
            &[("X-Accel-Buffering", "no")],
        )
    };
    for cut in [1, stream.len() / 2, stream.len() - 1] {
        let (a, b) = stream.as_bytes().split_at(cut);
        let report = run("POST", &headers, &listen, sse(), &[a, b]);
        assert_eq!(rules(&report), ["mcp.progress.wrong_stream"], "cut {cut}");
        assert_eq!(report.violations[0].path, "/method");
        assert_eq!(report.violations[0].seq, Some(1));
    }
    // The same progress on a tools/call stream is where it belongs.
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"x","arguments":{{}},{META}}}}}"#
    );
    let mut headers = V4.to_vec();
    headers.extend([("Mcp-Method", "tools/call"), ("Mcp-Name", "x")]);
    let answered = format!(
        "data: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":\"p\",\"progress\":1}}}}\n\ndata: {}\n\n",
        r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]}}"#
    );
    let report = run("POST", &headers, &call, sse(), &[answered.as_bytes()]);
    assert!(report.violations.is_empty(), "{:?}", report.violations);
}

#[test]
fn param_headers_and_mrtr_members_are_observed() {
    let retry = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"login","arguments":{{"user":"octo"}},"inputResponses":{{"k":{{"action":"accept"}}}},"requestState":"S1",{META}}}}}"#
    );
    let mut headers = V4.to_vec();
    headers.extend([
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "login"),
        ("MCP-PARAM-User", "octo"),
    ]);
    let body = r#"{"jsonrpc":"2.0","id":2,"result":{"resultType":"input_required","inputRequests":{"k2":{"method":"elicitation/create","params":{}}},"requestState":"S2"}}"#;
    let report = run(
        "POST",
        &headers,
        &retry,
        head(200, Some("application/json"), &[]),
        &[body.as_bytes()],
    );
    let seen = report.mcp.expect("an observation");
    assert_eq!(seen.param_headers, [("User".to_owned(), "octo".to_owned())]);
    let Parts::ToolsCallRequest {
        input_responses,
        request_state,
        ..
    } = &seen.request[0].parts
    else {
        panic!("a call: {:?}", seen.request[0].parts);
    };
    assert_eq!(input_responses, &Some(json!({"k":{"action":"accept"}})));
    assert_eq!(request_state, &Some(json!("S1")));
    let Parts::ToolsCallResult {
        input_requests,
        request_state,
        ..
    } = &seen.response[0].parts
    else {
        panic!("a call result: {:?}", seen.response[0].parts);
    };
    assert!(
        input_requests
            .as_ref()
            .is_some_and(|r| r.get("k2").is_some())
    );
    assert_eq!(request_state, &Some(json!("S2")));
}
