use std::path::PathBuf;

use bytes::Bytes;
use serde_json::json;

use super::*;
use crate::record::format::{RequestPart, ResponsePart};
use crate::record::{Meta, RecordedBody, RecordedFrame};

/// An MCP recording: exchange `t-<n>` started at second `at`, with these headers and body.
fn recording(
    n: u64,
    at: u32,
    request: (&[(&str, &str)], Option<Value>),
    response: (u16, &[(&str, &str)], &str),
) -> Recording {
    let pairs = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    };
    Recording {
        path: PathBuf::from("x.jsonl"),
        meta: Meta {
            v: 1,
            id: format!("t-{n}"),
            started: format!("2026-12-06T10:00:{at:02}.000Z"),
            route: "default".into(),
            upstream: "http://127.0.0.1:9".into(),
            method: if request.1.is_some() { "POST" } else { "GET" }.into(),
            path: "/mcp".into(),
            dialect: None,
            query: None,
            request: RequestPart {
                headers: pairs(request.0),
                body: request
                    .1
                    .as_ref()
                    .map_or(RecordedBody::Missing, RecordedBody::json),
            },
            response: ResponsePart {
                status: response.0,
                headers: pairs(response.1),
            },
            redacted: vec![],
            injected: Vec::new(),
            credential: None,
        },
        frames: vec![RecordedFrame {
            seq: 0,
            t_us: 10,
            bytes: Bytes::copy_from_slice(response.2.as_bytes()),
        }],
        end: None,
    }
}

const JSON: &[(&str, &str)] = &[("content-type", "application/json")];
const SSE: &[(&str, &str)] = &[("content-type", "text/event-stream")];

#[test]
fn a_session_becomes_one_conversation_catalogue_first_then_calls_in_arrival_order() {
    let session: &[(&str, &str)] = &[
        ("mcp-session-id", "s-1"),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let mut conversations = Conversations::new(1 << 10);
    // Added out of order: the conversation is ordered by start, then by exchange number.
    conversations.add(
        &recording(
            5,
            3,
            (session, Some(json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_weather","arguments":{}}}))),
            (200, SSE, "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"content\":[]}}\r\n\r\n"),
        ),
        vec!["mcp.tools_call.structured_content_missing".into()],
        1,
    );
    conversations.add(
        &recording(
            1,
            1,
            (
                &[],
                Some(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{}})),
            ),
            (
                200,
                &[
                    ("content-type", "application/json"),
                    ("mcp-session-id", "s-1"),
                ],
                r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}"#,
            ),
        ),
        vec![],
        0,
    );
    conversations.add(
        &recording(
            2,
            2,
            (session, Some(json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}))),
            (200, JSON, r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_weather","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}}],"nextCursor":"p2"}}"#),
        ),
        vec![],
        0,
    );
    conversations.add(
        &recording(
            3,
            2,
            (session, Some(json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"p2"}}))),
            (200, JSON, r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"shout","inputSchema":{"type":"object"}}]}}"#),
        ),
        vec![],
        0,
    );
    conversations.add(
        &recording(
            4,
            2,
            (
                session,
                Some(json!({"jsonrpc":"2.0","method":"notifications/initialized"})),
            ),
            (202, &[], ""),
        ),
        vec![],
        0,
    );
    // Another session: another conversation.
    conversations.add(
        &recording(
            6,
            4,
            (&[("mcp-session-id", "s-2")], Some(json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"nope"}}))),
            (200, JSON, r#"{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"Unknown tool: nope"}}"#),
        ),
        vec![],
        0,
    );
    let views = conversations.finish();
    assert_eq!(views.len(), 2);
    let one = &views[0];
    assert_eq!(one.key, "session s-1");
    assert_eq!(one.version.as_deref(), Some("2025-11-25"));
    assert!(one.catalog_complete);
    let names: Vec<&str> = one.catalog.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["get_weather", "shout"]);
    assert_eq!(
        one.catalog[0].output_schema.as_deref(),
        Some(r#"{"type":"object"}"#)
    );
    let order: Vec<(&str, u64, &str)> = one
        .calls
        .iter()
        .map(|c| (c.exchange.as_str(), c.t_ms, c.outcome.as_str()))
        .collect();
    assert_eq!(
        order,
        [
            ("t-1", 0, "result"),
            ("t-2", 1000, "result"),
            ("t-3", 1000, "result"),
            ("t-4", 1000, "accepted"),
            ("t-5", 2000, "result"),
        ]
    );
    assert_eq!(one.calls[4].name.as_deref(), Some("get_weather"));
    assert_eq!(
        one.calls[4].rules,
        ["mcp.tools_call.structured_content_missing"]
    );
    assert_eq!(views[1].key, "session s-2");
    assert_eq!(
        views[1].calls[0].outcome,
        "error -32602: Unknown tool: nope"
    );
    assert!(!views[1].catalog_complete);
}

#[test]
fn a_walk_without_its_last_page_is_incomplete_and_long_schemas_are_cut() {
    let mut conversations = Conversations::new(16 / CATALOG_SHARE);
    let long = "x".repeat(100);
    conversations.add(
        &recording(
            1,
            1,
            (&[], Some(json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}))),
            (200, JSON, &format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{{"name":"a","inputSchema":{{"type":"object","description":"{long}"}}}}],"nextCursor":"p2"}}}}"#)),
        ),
        vec![],
        0,
    );
    let views = conversations.finish();
    assert_eq!(views[0].key, "no session");
    assert!(!views[0].catalog_complete);
    assert_eq!(views[0].catalog.len(), 1);
    let schema = &views[0].catalog[0].input_schema;
    assert!(
        schema.starts_with(r#"{"type":"object","#) || schema.starts_with(r#"{"description""#),
        "{schema}"
    );
    assert!(schema.len() < 100, "{schema}");
    assert!(schema.contains("cut"), "{schema}");
}

#[test]
fn a_large_catalogue_shares_one_schema_budget_for_the_page() {
    let max_shown = 1024;
    let mut conversations = Conversations::new(max_shown);
    let big = "y".repeat(10_000);
    for session in ["a", "b"] {
        let tools: Vec<Value> = (0..50)
            .map(|i| json!({"name": format!("t{i}"), "inputSchema": {"type": "object", "description": big}}))
            .collect();
        let body = json!({"jsonrpc":"2.0","id":1,"result":{"tools": tools}}).to_string();
        conversations.add(
            &recording(
                1,
                1,
                (&[("mcp-session-id", session)], Some(json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}))),
                (200, JSON, &body),
            ),
            vec![],
            0,
        );
    }
    let views = conversations.finish();
    let shown: usize = views
        .iter()
        .flat_map(|v| &v.catalog)
        .map(|t| t.input_schema.len())
        .sum();
    // 100 tools of 10 KB: every tool listed, their schemas within the budget plus one cut
    // marker each.
    assert_eq!(views.iter().map(|v| v.catalog.len()).sum::<usize>(), 100);
    let markers = 100 * bound::marker(1_000_000).len();
    assert!(shown <= max_shown * CATALOG_SHARE + markers, "{shown}");
}
