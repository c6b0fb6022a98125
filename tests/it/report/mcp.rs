//! MCP conversations in the page: recordings of one MCP session (written as `tooltap proxy`
//! writes them, out of order on disk) render as one conversation, its tool catalogue (both
//! pages of a paginated `tools/list`) first, then its exchanges on a timeline in arrival order,
//! each linked to its exchange; another session is another conversation; the rows carry the
//! `mcp` dialect.

use serde_json::{Value, json};
use tooltap::record::format::{RequestPart, ResponsePart};
use tooltap::record::{EndLine, FrameData, FrameLine, Line, Meta, Outcome, RecordedBody};

use crate::report::support::*;
use crate::support::TempDir;

/// Writes one MCP exchange: `POST /mcp` with `request` (or a bodiless `method`), the session
/// header when given, answered `status` with `body` as JSON or one SSE event.
fn write_exchange(
    dir: &std::path::Path,
    id: &str,
    started: &str,
    session: Option<&str>,
    request: Option<Value>,
    status: u16,
    body: Option<(&str, Value)>,
) {
    let mut headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        (
            "accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
    ];
    if let Some(session) = session {
        headers.push(("mcp-session-id".into(), session.into()));
        headers.push(("mcp-protocol-version".into(), "2025-11-25".into()));
    }
    let mut response_headers = Vec::new();
    let frame = body.map(|(kind, value)| {
        let text = match kind {
            "sse" => format!("event: message\r\ndata: {value}\r\n\r\n"),
            _ => value.to_string(),
        };
        let content_type = if kind == "sse" {
            "text/event-stream"
        } else {
            "application/json"
        };
        response_headers.push(("content-type".to_owned(), content_type.to_owned()));
        text
    });
    if request.as_ref().and_then(|r| r.get("method")) == Some(&json!("initialize")) {
        response_headers.push(("mcp-session-id".into(), "s-1".into()));
    }
    let meta = Meta {
        v: tooltap::record::VERSION,
        id: id.into(),
        started: started.into(),
        route: "default".into(),
        upstream: "http://127.0.0.1:9".into(),
        method: if request.is_some() { "POST" } else { "DELETE" }.into(),
        path: "/mcp".into(),
        dialect: None,
        query: None,
        request: RequestPart {
            headers,
            body: request
                .as_ref()
                .map_or(RecordedBody::Missing, RecordedBody::json),
        },
        response: ResponsePart {
            status,
            headers: response_headers,
        },
        redacted: Vec::new(),
        injected: Vec::new(),
        credential: None,
    };
    let mut lines = vec![Line::Exchange(Box::new(meta))];
    if let Some(text) = &frame {
        lines.push(Line::Frame(FrameLine {
            seq: 0,
            t_us: 900,
            data: FrameData::from_bytes(text.as_bytes()),
        }));
    }
    lines.push(Line::End(Box::new(EndLine {
        outcome: Outcome::Complete,
        t_us: 1_000,
        dropped_frames: 0,
        frames: u64::from(frame.is_some()),
        bytes: frame.as_ref().map_or(0, |t| t.len() as u64),
        completeness: tooltap::engine::Completeness::Complete,
        violations: Vec::new(),
        enforced: None,
    })));
    let text: String = lines
        .iter()
        .map(|line| serde_json::to_string(line).expect("serializes") + "\n")
        .collect();
    std::fs::write(dir.join(format!("{id}.jsonl")), text).expect("written");
}

/// Writes the `initialize` exchange that mints session `s-1` (2025-11-25, a tools server).
fn write_initialize(dir: &std::path::Path, id: &str, started: &str) {
    write_exchange(
        dir,
        id,
        started,
        None,
        Some(
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}),
        ),
        200,
        Some((
            "json",
            json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"w","version":"1"}}}),
        )),
    );
}

#[test]
fn an_mcp_session_shows_its_catalogue_then_its_calls_in_arrival_order() {
    let dir = TempDir::new("mcp-report");
    let recs = dir.join("recs");
    std::fs::create_dir_all(&recs).expect("dir");
    let s = Some("s-1");
    let at = |second: u32| format!("2026-12-06T10:00:{second:02}.000Z");
    let tool = |name: &str| json!({"name": name, "inputSchema": {"type": "object"}});
    // Written in reverse: the page orders by arrival, not by file name.
    write_exchange(&recs, "t-7", &at(6), s, None, 200, None);
    write_exchange(
        &recs,
        "t-6",
        &at(5),
        s,
        Some(
            json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_weather","arguments":{"location":"Paris"}}}),
        ),
        200,
        Some((
            "sse",
            json!({"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"22.5"}],"isError":true}}),
        )),
    );
    write_exchange(
        &recs,
        "t-5",
        &at(4),
        s,
        Some(json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"p2"}})),
        200,
        Some((
            "json",
            json!({"jsonrpc":"2.0","id":2,"result":{"tools":[tool("shout")]}}),
        )),
    );
    write_exchange(
        &recs,
        "t-4",
        &at(3),
        s,
        Some(json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}})),
        200,
        Some((
            "json",
            json!({"jsonrpc":"2.0","id":1,"result":{"tools":[tool("get_weather")],"nextCursor":"p2"}}),
        )),
    );
    write_exchange(
        &recs,
        "t-3",
        &at(2),
        s,
        Some(json!({"jsonrpc":"2.0","method":"notifications/initialized"})),
        202,
        None,
    );
    write_initialize(&recs, "t-2", &at(1));
    write_exchange(
        &recs,
        "t-1",
        &at(0),
        Some("s-other"),
        Some(json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"nope"}})),
        200,
        Some((
            "json",
            json!({"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"Unknown tool: nope"}}),
        )),
    );
    let page = dir.join("report.html");
    let data = build(&[recs], &page);
    assert!(data.unreadable.is_empty(), "{:?}", data.unreadable);
    assert!(data.exchanges.iter().all(|x| x.dialect == "mcp"));
    assert_eq!(data.mcp.len(), 2);
    let dom = dump_dom(&page, "");
    assert_clean(&dom);
    let conversations: Vec<&str> = dom.split("class=\"mcp-conversation\"").skip(1).collect();
    assert_eq!(conversations.len(), 2, "two sessions");
    let (one, other) = (conversations[0], conversations[1]);
    assert!(
        one.contains("session s-1") && one.contains("2025-11-25"),
        "{one}"
    );
    assert!(one.contains("Catalogue (complete)"), "{one}");
    let weather = one
        .find("<code>get_weather</code>")
        .expect("first page's tool");
    let shout = one.find("<code>shout</code>").expect("second page's tool");
    let timeline = one.find("Timeline").expect("a timeline");
    assert!(weather < shout && shout < timeline, "catalogue first");
    let rows: Vec<usize> = ["t-2", "t-3", "t-4", "t-5", "t-6", "t-7"]
        .iter()
        .map(|id| {
            one.find(&format!("data-exchange=\"{id}\""))
                .unwrap_or_else(|| panic!("no row for {id}"))
        })
        .collect();
    assert!(rows.windows(2).all(|w| w[0] < w[1]), "arrival order");
    assert!(
        one.contains("href=\"#exchange=t-6\""),
        "rows link to their exchange"
    );
    for outcome in ["accepted", "isError", "+5000 ms"] {
        assert!(one.contains(outcome), "{outcome}: {one}");
    }
    assert!(other.contains("session s-other"), "{other}");
    assert!(
        other.contains("error -32602: Unknown tool: nope"),
        "{other}"
    );
    assert!(other.contains("incomplete"), "{other}");
}

/// An initialized session that lists one tool, then calls another name (t-4): a verdict only
/// the conversation store finds (`mcp.tools_call.name_unlisted`).
fn write_unlisted_call(recs: &std::path::Path) {
    std::fs::create_dir_all(recs).expect("dir");
    let s = Some("s-1");
    let at = |second: u32| format!("2026-12-06T10:00:{second:02}.000Z");
    write_initialize(recs, "t-1", &at(0));
    write_exchange(
        recs,
        "t-2",
        &at(1),
        s,
        Some(json!({"jsonrpc":"2.0","method":"notifications/initialized"})),
        202,
        None,
    );
    write_exchange(
        recs,
        "t-3",
        &at(2),
        s,
        Some(json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}})),
        200,
        Some((
            "json",
            json!({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_weather","inputSchema":{"type":"object"}}]}}),
        )),
    );
    write_exchange(
        recs,
        "t-4",
        &at(3),
        s,
        Some(
            json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_wether","arguments":{}}}),
        ),
        200,
        Some((
            "json",
            json!({"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"ok"}]}}),
        )),
    );
}

/// A call of a tool the session's catalogue does not list is found by the conversation store
/// (`mcp.tools_call.name_unlisted` needs the earlier `tools/list`): the page shows it on the
/// exchange marked as a conversation rule, naming and linking its conversation, and lists it
/// on that exchange's row of the conversation's timeline. The same verdict as `tooltap check`.
#[test]
fn a_conversation_rule_is_marked_with_its_conversation() {
    let dir = TempDir::new("mcp-report-conversation-rule");
    let recs = dir.join("recs");
    write_unlisted_call(&recs);
    let page = dir.join("report.html");
    let data = build(std::slice::from_ref(&recs), &page);
    const RULE: &str = "mcp.tools_call.name_unlisted";
    let marked: Vec<(&str, Value)> = data
        .exchanges
        .iter()
        .flat_map(|x| {
            x.violations.iter().map(move |v| {
                let v = serde_json::to_value(v).expect("serializes");
                (x.id.as_str(), v)
            })
        })
        .filter(|(_, v)| v.get("conversation").is_some())
        .collect();
    assert_eq!(marked.len(), 1, "{marked:?}");
    let (exchange, violation) = &marked[0];
    assert_eq!((*exchange, violation["rule"].as_str()), ("t-4", Some(RULE)));
    assert_eq!(
        violation["conversation"],
        json!({"key": "session s-1", "upstream": "http://127.0.0.1:9"})
    );
    // `check` finds the same conversation verdict in the same recordings.
    let checked = crate::support::check::check_json(&recs);
    let found: Vec<(String, String)> = checked.report["exchanges"]
        .as_array()
        .expect("exchanges")
        .iter()
        .flat_map(|x| {
            let id = x["id"].as_str().unwrap_or_default().to_owned();
            let rules: Vec<String> = x["violations"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .filter_map(|v| v["rule"].as_str().map(str::to_owned))
                .collect();
            rules.into_iter().map(move |rule| (id.clone(), rule))
        })
        .filter(|(_, rule)| {
            tooltap::engine::mcp_conversation::RULES
                .iter()
                .any(|r| r.as_str() == rule)
        })
        .collect();
    assert_eq!(found, [("t-4".to_owned(), RULE.to_owned())]);
    // The exchange's page marks it and links its conversation, which the overview lists.
    let dom = dump_dom(&page, "#exchange=t-4");
    assert_clean(&dom);
    let row = dom
        .split("<tr class=\"violation\"")
        .skip(1)
        .filter_map(|row| row.split("</tr>").next())
        .find(|row| row.contains(RULE))
        .expect("the violation's row");
    assert!(
        row.contains("conversation rule, in") && row.contains("href=\"#mcp-0\""),
        "{row}"
    );
    assert!(row.contains("session s-1 · http://127.0.0.1:9"), "{row}");
    let overview = dump_dom(&page, "#mcp-0");
    assert_clean(&overview);
    let conversation = overview
        .split("id=\"mcp-0\"")
        .nth(1)
        .expect("the conversation the link names");
    let timeline_row = conversation
        .split("data-exchange=\"t-4\"")
        .nth(1)
        .and_then(|rest| rest.split("</tr>").next())
        .expect("t-4 on the timeline");
    assert!(timeline_row.contains(RULE), "{timeline_row}");
}

/// The observations the conversation pass holds are charged to the page budget: with a budget
/// that holds the exchanges but not also their observations, the page judges no conversation
/// rule (none marked, not a partial verdict), counts the MCP exchanges left unjudged and says so
/// in its header; the observations held never pass the budget.
#[test]
fn past_the_page_budget_the_conversation_rules_are_not_judged_and_counted() {
    const RULE: &str = "mcp.tools_call.name_unlisted";
    let dir = TempDir::new("mcp-report-conversation-budget");
    let recs = dir.join("recs");
    write_unlisted_call(&recs);
    let collect = |max_page_bytes| {
        tooltap::report::collect(&tooltap::report::ReportArgs {
            paths: vec![recs.clone()],
            output: dir.join("unused.html"),
            severity: None,
            docs_base: String::new(),
            max_exchanges: 100,
            max_shown_bytes: tooltap::report::bound::DEFAULT_MAX_SHOWN_BYTES,
            max_page_bytes,
        })
    };
    let marked = |data: &tooltap::report::ReportData| {
        data.exchanges
            .iter()
            .flat_map(|x| &x.violations)
            .filter(|v| v.conversation.is_some())
            .count()
    };
    let whole = collect(tooltap::report::bound::DEFAULT_MAX_PAGE_BYTES);
    assert_eq!((whole.cut.conversations_unjudged, marked(&whole)), (0, 1));
    assert!(whole.cut.most_held > 0);
    let mut unjudged_with_every_exchange = None;
    for budget in (1..=whole.cut.used + whole.cut.most_held).step_by(97) {
        let data = collect(budget);
        assert!(data.cut.most_held <= budget, "{:?}", data.cut);
        if data.cut.conversations_unjudged > 0 {
            assert_eq!(marked(&data), 0, "budget {budget}: {:?}", data.cut);
            assert!(data.cut.conversations_unjudged <= data.exchanges.len());
            if data.exchanges.len() == 4 {
                unjudged_with_every_exchange.get_or_insert(data);
            }
        }
    }
    let data = unjudged_with_every_exchange
        .expect("a budget that shows every exchange but holds not all their observations");
    assert_eq!(data.cut.conversations_unjudged, 4, "{:?}", data.cut);
    assert!(data.exchanges.iter().all(|x| {
        x.violations
            .iter()
            .all(|v| v.violation.rule.as_str() != RULE)
    }));
    let page = dir.join("report.html");
    std::fs::write(&page, tooltap::report::render(&data).expect("renders")).expect("written");
    let dom = dump_dom(&page, "");
    assert_clean(&dom);
    let note = dom
        .split("id=\"page-cut\"")
        .nth(1)
        .and_then(|rest| rest.split("</div>").next())
        .expect("the page's cut note");
    assert!(
        note.contains("MCP conversation rules not judged on 4 exchanges"),
        "{note}"
    );
}
