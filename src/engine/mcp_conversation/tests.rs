//! The store's rules on constructed conversations (the §2.1 exchanges of the MCP reference),
//! and its bounds attacked.

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;

/// One exchange under construction: owned messages, borrowed into a [`Seen`] to settle.
pub(super) struct Ex {
    pub(super) method: HttpMethod,
    pub(super) status: u16,
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) req_sid: Option<String>,
    pub(super) resp_sid: Option<String>,
    pub(super) header: Option<String>,
    pub(super) resumed: bool,
    pub(super) last_event: Option<String>,
    pub(super) params: Vec<(String, String)>,
    pub(super) sent: Vec<Value>,
    pub(super) received: Vec<(Value, Option<String>)>,
}

pub(super) fn post(at: u64, sent: Value, received: Vec<Value>) -> Ex {
    Ex {
        method: HttpMethod::Post,
        status: if received.is_empty() { 202 } else { 200 },
        start: at,
        end: at + 5,
        req_sid: Some("s1".into()),
        resp_sid: None,
        header: Some("2025-11-25".into()),
        resumed: false,
        last_event: None,
        params: Vec::new(),
        sent: vec![sent],
        received: received.into_iter().map(|v| (v, None)).collect(),
    }
}

impl Ex {
    pub(super) fn settle(&self, store: &mut ConversationStore) -> Settled {
        let paths: Vec<String> = (0..self.received.len()).map(|_| String::new()).collect();
        let seen = Seen {
            upstream: "http://127.0.0.1:1/mcp",
            method: self.method,
            status: self.status,
            start_us: self.start,
            end_us: self.end,
            request_session: self.req_sid.as_deref(),
            response_session: self.resp_sid.as_deref(),
            protocol_header: self.header.as_deref(),
            credential: 7,
            resumed: self.resumed,
            last_event_id: self.last_event.as_deref(),
            param_headers: &self.params,
            sent: self
                .sent
                .iter()
                .map(|value| Msg {
                    value,
                    path: "",
                    seq: None,
                    event_id: None,
                })
                .collect(),
            received: self
                .received
                .iter()
                .zip(&paths)
                .enumerate()
                .map(|(k, ((value, event_id), path))| Msg {
                    value,
                    path,
                    seq: Some(k as u64),
                    event_id: event_id.as_deref(),
                })
                .collect(),
            whole: true,
            answers: Default::default(),
        };
        store.settle(&seen)
    }
}

pub(super) fn store() -> ConversationStore {
    store_with(StoreLimits::default())
}

pub(super) fn store_with(limits: StoreLimits) -> ConversationStore {
    ConversationStore::new(
        limits,
        Arc::new(crate::engine::SchemaCache::default()),
        crate::engine::SeverityOverrides::default(),
        100,
    )
}

pub(super) fn rules(settled: &Settled) -> Vec<&'static str> {
    settled.violations.iter().map(|v| v.rule.as_str()).collect()
}

pub(super) fn initialize(store: &mut ConversationStore, capabilities: Value) {
    let mut ex = post(
        0,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}),
        vec![
            json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":capabilities,"serverInfo":{"name":"w","version":"1"}}}),
        ],
    );
    ex.req_sid = None;
    ex.header = None;
    ex.resp_sid = Some("s1".into());
    assert_eq!(rules(&ex.settle(store)), Vec::<&str>::new());
    let note = post(
        10,
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        vec![],
    );
    assert_eq!(rules(&note.settle(store)), Vec::<&str>::new());
}

pub(super) fn weather_tool() -> Value {
    json!({"name":"get_weather_data","inputSchema":{"type":"object","properties":{"location":{"type":"string"},"filters":{"type":"object"}},"required":["location"],"additionalProperties":false},"outputSchema":{"type":"object","properties":{"temperature":{"type":"number"}},"required":["temperature"]}})
}

fn list_two_pages(store: &mut ConversationStore) {
    let page1 = post(
        20,
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}),
        vec![
            json!({"jsonrpc":"2.0","id":2,"result":{"tools":[weather_tool()],"nextCursor":"page-2"}}),
        ],
    );
    let page2 = post(
        30,
        json!({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"page-2"}}),
        vec![
            json!({"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}),
        ],
    );
    assert!(rules(&page1.settle(store)).is_empty());
    assert!(rules(&page2.settle(store)).is_empty());
}

pub(super) fn call(at: u64, id: u64, name: &str, args: Value, answer: Value) -> Ex {
    post(
        at,
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":args}}),
        vec![json!({"jsonrpc":"2.0","id":id,"result":answer})],
    )
}

#[test]
fn a_good_conversation_gives_nothing() {
    let mut store = store();
    initialize(&mut store, json!({"tools":{"listChanged":true}}));
    list_two_pages(&mut store);
    let good = call(
        40,
        4,
        "get_weather_data",
        json!({"location":"Paris"}),
        json!({"content":[{"type":"text","text":"{\"temperature\":22.5}"}],"structuredContent":{"temperature":22.5}}),
    );
    let settled = good.settle(&mut store);
    assert!(settled.violations.is_empty(), "{:?}", settled.violations);
    assert!(settled.unjudged.is_empty());
}

#[test]
fn catalog_rules_judge_calls_against_the_listed_schemas() {
    let mut store = store();
    initialize(&mut store, json!({"tools":{}}));
    list_two_pages(&mut store);
    let unlisted = call(
        40,
        4,
        "get_wether",
        json!({}),
        json!({"content":[{"type":"text","text":"MCP error -32602: Tool get_wether not found"}],"isError":true}),
    );
    assert_eq!(
        rules(&unlisted.settle(&mut store)),
        [
            "mcp.tools_call.name_unlisted",
            "mcp.tools_call.unknown_tool_as_result"
        ]
    );
    let bad_args = call(
        50,
        5,
        "get_weather_data",
        json!({"location":"Paris","filters":"{\"lang\":\"en\"}"}),
        json!({"content":[],"structuredContent":{"temperature":1}}),
    );
    assert_eq!(
        rules(&bad_args.settle(&mut store)),
        [
            "mcp.tools_call.arguments_schema",
            "mcp.tools_call.argument_json_string"
        ]
    );
    let missing = call(
        60,
        6,
        "get_weather_data",
        json!({"location":"Paris"}),
        json!({"content":[{"type":"text","text":"22.5 C"}]}),
    );
    assert_eq!(
        rules(&missing.settle(&mut store)),
        ["mcp.tools_call.structured_content_missing"]
    );
    let off_schema = call(
        70,
        7,
        "get_weather_data",
        json!({"location":"Paris"}),
        json!({"content":[],"structuredContent":{"temperature":"warm"}}),
    );
    let settled = off_schema.settle(&mut store);
    assert_eq!(
        rules(&settled),
        ["mcp.tools_call.structured_content_schema"]
    );
    assert_eq!(
        settled.violations[0].path,
        "/result/structuredContent/temperature"
    );
    let is_error = call(
        80,
        8,
        "get_weather_data",
        json!({"location":"Atlantis"}),
        json!({"content":[],"isError":true}),
    );
    assert!(rules(&is_error.settle(&mut store)).is_empty());
}

#[test]
fn without_a_complete_catalog_calls_are_unjudged_not_guessed() {
    let mut store = store();
    initialize(&mut store, json!({"tools":{}}));
    let page1 = post(
        20,
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}),
        vec![
            json!({"jsonrpc":"2.0","id":2,"result":{"tools":[weather_tool()],"nextCursor":"page-2"}}),
        ],
    );
    page1.settle(&mut store);
    let settled = call(40, 4, "echo", json!({}), json!({"content":[]})).settle(&mut store);
    assert!(settled.violations.is_empty());
    assert_eq!(settled.unjudged, [Unjudged::NoCatalog]);
    // Joined mid-session: no initialize, no list.
    let mut late = store_with(StoreLimits::default());
    let settled = call(40, 4, "anything", json!({}), json!({"content":[]})).settle(&mut late);
    assert!(settled.violations.is_empty());
    assert_eq!(settled.unjudged, [Unjudged::NoCatalog]);
}

#[test]
fn list_changed_invalidates_and_is_a_warning_when_undeclared() {
    let mut store = store();
    initialize(&mut store, json!({"tools":{}}));
    list_two_pages(&mut store);
    let mut get = post(
        35,
        json!(null),
        vec![json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})],
    );
    get.method = HttpMethod::Get;
    get.sent.clear();
    assert_eq!(
        rules(&get.settle(&mut store)),
        ["mcp.lifecycle.list_changed_undeclared"]
    );
    let settled =
        call(40, 4, "get_weather_data", json!({}), json!({"content":[]})).settle(&mut store);
    assert_eq!(settled.unjudged, [Unjudged::NoCatalog]);
}

#[test]
fn session_rules_follow_delete_and_404_by_request_start() {
    let mut store = store();
    initialize(&mut store, json!({"tools":{}}));
    let mut delete = post(100, json!(null), vec![]);
    delete.method = HttpMethod::Delete;
    delete.sent.clear();
    delete.status = 200;
    assert!(rules(&delete.settle(&mut store)).is_empty());
    // A GET stream that began before the DELETE and ended after it used no ended session.
    let mut get = post(50, json!(null), vec![]);
    get.method = HttpMethod::Get;
    get.sent.clear();
    get.end = 200;
    get.status = 200;
    assert!(rules(&get.settle(&mut store)).is_empty());
    let stale = post(
        300,
        json!({"jsonrpc":"2.0","id":9,"method":"tools/list"}),
        vec![json!({"jsonrpc":"2.0","id":9,"result":{"tools":[]}})],
    );
    assert_eq!(
        rules(&stale.settle(&mut store)),
        ["mcp.session.stale_not_404"]
    );
    let mut gone = post(
        400,
        json!({"jsonrpc":"2.0","id":10,"method":"ping"}),
        vec![],
    );
    gone.req_sid = Some("s2".into());
    gone.status = 404;
    assert!(rules(&gone.settle(&mut store)).is_empty());
    let mut again = post(
        500,
        json!({"jsonrpc":"2.0","id":11,"method":"ping"}),
        vec![],
    );
    again.req_sid = Some("s2".into());
    again.status = 404;
    assert_eq!(
        rules(&again.settle(&mut store)),
        ["mcp.session.no_reinit_after_404"]
    );
}

#[test]
fn a_request_without_the_minted_session_id_and_a_changed_one() {
    let mut store = store();
    initialize(&mut store, json!({"tools":{}}));
    let mut missing = post(
        20,
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
        vec![],
    );
    missing.req_sid = None;
    missing.status = 400;
    assert_eq!(
        rules(&missing.settle(&mut store)),
        ["mcp.session.id_missing_on_request"]
    );
    let mut changed = post(
        30,
        json!({"jsonrpc":"2.0","id":3,"method":"ping"}),
        vec![json!({"jsonrpc":"2.0","id":3,"result":{}})],
    );
    changed.resp_sid = Some("other".into());
    assert_eq!(
        rules(&changed.settle(&mut store)),
        ["mcp.session.id_changed"]
    );
}

#[test]
fn id_rules_across_exchanges() {
    let mut store = store();
    initialize(&mut store, json!({"tools":{}}));
    // Overlapping: id 5 still in flight when the second starts.
    let mut first = post(
        20,
        json!({"jsonrpc":"2.0","id":5,"method":"ping"}),
        vec![json!({"jsonrpc":"2.0","id":5,"result":{}})],
    );
    first.end = 100;
    first.settle(&mut store);
    let reused = post(
        30,
        json!({"jsonrpc":"2.0","id":5,"method":"ping"}),
        vec![json!({"jsonrpc":"2.0","id":5,"result":{}})],
    );
    let settled = reused.settle(&mut store);
    assert_eq!(rules(&settled), ["mcp.jsonrpc.request_id_reused"]);
    assert_eq!(
        settled.violations[0].severity,
        crate::engine::Severity::Error
    );
    let later = post(
        200,
        json!({"jsonrpc":"2.0","id":5,"method":"ping"}),
        vec![json!({"jsonrpc":"2.0","id":5,"result":{}})],
    );
    let settled = later.settle(&mut store);
    assert_eq!(
        settled.violations[0].severity,
        crate::engine::Severity::Warning
    );
    let mut get = post(
        300,
        json!(null),
        vec![
            json!({"jsonrpc":"2.0","id":77,"result":{}}),
            json!({"jsonrpc":"2.0","id":5,"result":{}}),
        ],
    );
    get.method = HttpMethod::Get;
    get.sent.clear();
    let mut got = rules(&get.settle(&mut store));
    got.sort_unstable();
    assert_eq!(
        got,
        [
            "mcp.jsonrpc.response_duplicate",
            "mcp.jsonrpc.response_id_unknown",
            "mcp.sse.response_on_get_stream",
            "mcp.sse.response_on_get_stream",
        ]
    );
}

#[test]
fn progress_and_event_ids() {
    let mut store = store();
    initialize(&mut store, json!({"tools":{}}));
    let mut ex = post(
        20,
        json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"p"}}}),
        vec![
            json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":2}}),
            json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":2}}),
            json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"q","progress":1}}),
            json!({"jsonrpc":"2.0","id":5,"result":{"content":[]}}),
            json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":3}}),
        ],
    );
    for (k, item) in ex.received.iter_mut().enumerate() {
        item.1 = Some(format!("e{}", k.min(3)));
    }
    assert_eq!(
        rules(&ex.settle(&mut store)),
        [
            "mcp.progress.not_increasing",
            "mcp.progress.token_unknown",
            "mcp.sse.event_id_reused",
            "mcp.progress.after_completion",
        ]
    );
}

#[test]
fn version_header_rules_warn_on_2025_versions() {
    let mut store = store();
    initialize(&mut store, json!({"tools":{}}));
    let mut old = post(
        20,
        json!({"jsonrpc":"2.0","id":2,"method":"ping"}),
        vec![json!({"jsonrpc":"2.0","id":2,"result":{}})],
    );
    old.header = Some("2025-03-26".into());
    let settled = old.settle(&mut store);
    assert_eq!(
        rules(&settled),
        ["mcp.http.protocol_version_header_mismatch"]
    );
    assert_eq!(
        settled.violations[0].severity,
        crate::engine::Severity::Warning
    );
    let mut none = post(
        30,
        json!({"jsonrpc":"2.0","id":3,"method":"ping"}),
        vec![json!({"jsonrpc":"2.0","id":3,"result":{}})],
    );
    none.header = None;
    assert_eq!(
        rules(&none.settle(&mut store)),
        ["mcp.http.protocol_version_header_missing"]
    );
}

#[test]
fn lifecycle_rules() {
    let mut store = store();
    let mut init = post(
        0,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}),
        vec![
            json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}),
        ],
    );
    init.req_sid = None;
    init.resp_sid = Some("s1".into());
    init.settle(&mut store);
    let list = post(
        10,
        json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
        vec![json!({"jsonrpc":"2.0","id":1,"result":{"tools":[]}})],
    );
    assert_eq!(
        rules(&list.settle(&mut store)),
        [
            "mcp.lifecycle.initialized_missing",
            "mcp.lifecycle.tools_capability_missing"
        ]
    );
}

#[test]
fn listing_warnings_and_the_catalog_bound() {
    let mut store = store_with(StoreLimits {
        max_catalog_bytes: 200,
        ..StoreLimits::default()
    });
    initialize(&mut store, json!({"tools":{}}));
    let dup = post(
        20,
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
        vec![
            json!({"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"a","inputSchema":{"type":"object"}}]}}),
        ],
    );
    assert_eq!(
        rules(&dup.settle(&mut store)),
        ["mcp.tools_list.name_duplicate"]
    );
    let first = post(
        30,
        json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}),
        vec![json!({"jsonrpc":"2.0","id":3,"result":{"tools":[],"nextCursor":"c"}})],
    );
    first.settle(&mut store);
    let looped = post(
        40,
        json!({"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"c"}}),
        vec![json!({"jsonrpc":"2.0","id":4,"result":{"tools":[],"nextCursor":"c"}})],
    );
    assert_eq!(
        rules(&looped.settle(&mut store)),
        ["mcp.tools_list.cursor_loop"]
    );
    // A listing over the bound: dropped whole, the calls unjudged with the reason.
    let big: Vec<Value> = (0..20)
        .map(|k| json!({"name":format!("tool_{k}"),"inputSchema":{"type":"object"}}))
        .collect();
    let huge = post(
        50,
        json!({"jsonrpc":"2.0","id":5,"method":"tools/list"}),
        vec![json!({"jsonrpc":"2.0","id":5,"result":{"tools":big}})],
    );
    assert_eq!(huge.settle(&mut store).cuts.catalogs_too_large, 1);
    let settled = call(60, 6, "tool_1", json!({}), json!({"content":[]})).settle(&mut store);
    assert!(settled.violations.is_empty());
    assert_eq!(settled.unjudged, [Unjudged::CatalogTooLarge]);
}

#[test]
fn minted_sessions_cost_at_most_the_bound() {
    // 50,000 here to keep the debug test short; a million measured the same flat cost
    // (docs/reliability.md).
    let mut store = store_with(StoreLimits {
        max_conversations: 1000,
        ..StoreLimits::default()
    });
    let mut evicted = 0;
    let started = std::time::Instant::now();
    for k in 0..50_000u64 {
        let mut ex = post(k, json!({"jsonrpc":"2.0","id":1,"method":"ping"}), vec![]);
        ex.req_sid = Some(format!("attacker-{k}"));
        evicted += ex.settle(&mut store).cuts.conversations_evicted;
    }
    assert_eq!(store.len(), 1000);
    assert_eq!(evicted, 49_000);
    // Debug build, one core: the bound keeps the cost per exchange flat.
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn request_ids_per_conversation_are_bounded() {
    let mut store = store_with(StoreLimits {
        max_ids: 100,
        ..StoreLimits::default()
    });
    initialize(&mut store, json!({"tools":{}}));
    let mut evicted = 0;
    for k in 0..10_000u64 {
        let ex = post(
            100 + k,
            json!({"jsonrpc":"2.0","id":k + 1,"method":"ping"}),
            vec![],
        );
        evicted += ex.settle(&mut store).cuts.ids_evicted;
    }
    assert!(evicted >= 9_900, "evicted {evicted}");
    // An answer for an evicted id is not called unknown: the table lost it.
    let mut get = post(
        20_000,
        json!(null),
        vec![json!({"jsonrpc":"2.0","id":1,"result":{}})],
    );
    get.method = HttpMethod::Get;
    get.sent.clear();
    get.resumed = true;
    assert!(rules(&get.settle(&mut store)).is_empty());
}

#[test]
fn a_fifty_megabyte_listing_is_dropped_at_the_bound_without_reading_it_all() {
    let mut store = store();
    initialize(&mut store, json!({"tools":{}}));
    let description = "x".repeat(50 * 1024);
    let tools: Vec<Value> = (0..1000)
        .map(|k| json!({"name":format!("tool_{k}"),"description":description,"inputSchema":{"type":"object"}}))
        .collect();
    let huge = post(
        20,
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
        vec![json!({"jsonrpc":"2.0","id":2,"result":{"tools":tools}})],
    );
    let started = std::time::Instant::now();
    let settled = huge.settle(&mut store);
    let took = started.elapsed();
    assert_eq!(settled.cuts.catalogs_too_large, 1);
    assert!(settled.violations.is_empty());
    // Only the tools up to the 4 MiB bound were weighed (about 80 of the 1,000).
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    let settled = call(30, 3, "tool_1", json!({}), json!({"content":[]})).settle(&mut store);
    assert_eq!(settled.unjudged, [Unjudged::CatalogTooLarge]);
}

#[test]
fn without_a_session_the_clients_ids_and_lifecycles_are_not_judged_but_the_catalog_is() {
    let mut store = store();
    let stateless = |mut ex: Ex| {
        ex.req_sid = None;
        ex
    };
    let mut init = stateless(post(
        0,
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}),
        vec![
            json!({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}}}}),
        ],
    ));
    init.header = None;
    init.settle(&mut store);
    let list = stateless(post(
        10,
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
        vec![json!({"jsonrpc":"2.0","id":2,"result":{"tools":[weather_tool()]}})],
    ));
    // Another client's request, no `initialized` from it, the same id in flight: not judged.
    let mut first = stateless(call(
        20,
        3,
        "get_weather_data",
        json!({"location":"Paris"}),
        json!({"content":[],"structuredContent":{"temperature":1}}),
    ));
    first.end = 100;
    let second = stateless(call(
        30,
        3,
        "get_weather_data",
        json!({}),
        json!({"content":[]}),
    ));
    assert!(rules(&list.settle(&mut store)).is_empty());
    assert!(rules(&first.settle(&mut store)).is_empty());
    assert_eq!(
        rules(&second.settle(&mut store)),
        [
            "mcp.tools_call.arguments_schema",
            "mcp.tools_call.structured_content_missing"
        ]
    );
}
