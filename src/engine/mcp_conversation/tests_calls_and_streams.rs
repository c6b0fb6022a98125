//! The store's call and stream rules judged last: `mcp.http.param_header_mismatch`,
//! `mcp.tools_call.task_not_allowed`, `retry_same_id`, `input_responses_mismatch`,
//! `mcp.cancel.response_after_cancel` and `mcp.sse.resume_wrong_stream`, on constructed
//! conversations; and the tables they keep, attacked.

use serde_json::{Value, json};

use super::tests::{Ex, initialize, post, rules, store, store_with};
use super::*;

/// Arguments, `Mcp-Param-*` headers, and the rules wanted.
type ParamCase = (
    Value,
    &'static [(&'static str, &'static str)],
    &'static [&'static str],
);
/// A retry's id, `inputResponses` keys and `requestState`, and the rules wanted.
type RetryCase = (
    Value,
    &'static [&'static str],
    Option<&'static str>,
    &'static [&'static str],
);

/// A 2026-07-28 exchange: no session, the version header.
fn modern(mut ex: Ex) -> Ex {
    ex.req_sid = None;
    ex.header = Some(seen::MODERN.into());
    ex
}

fn with_params(mut ex: Ex, params: &[(&str, &str)]) -> Ex {
    ex.params = params
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
    ex
}

fn list(at: u64, tools: Value) -> Ex {
    post(
        at,
        json!({"jsonrpc":"2.0","id":format!("l-{at}"),"method":"tools/list"}),
        vec![
            json!({"jsonrpc":"2.0","id":format!("l-{at}"),"result":{"tools":tools,"ttlMs":300000,"cacheScope":"public","resultType":"complete"}}),
        ],
    )
}

fn located_call(at: u64, args: Value) -> Ex {
    post(
        at,
        json!({"jsonrpc":"2.0","id":format!("c-{at}"),"method":"tools/call","params":{"name":"weather","arguments":args}}),
        vec![
            json!({"jsonrpc":"2.0","id":format!("c-{at}"),"result":{"resultType":"complete","content":[]}}),
        ],
    )
}

#[test]
fn param_headers_are_judged_against_the_listed_marks() {
    let mut store = store();
    let early = with_params(
        modern(located_call(5, json!({"location":"Paris"}))),
        &[("Location", "London")],
    );
    let settled = early.settle(&mut store);
    assert!(settled.violations.is_empty(), "no catalog: not judged");
    assert_eq!(settled.unjudged, [Unjudged::NoCatalog]);
    let tool = json!([{"name":"weather","inputSchema":{"type":"object","properties":{
        "location":{"type":"string","x-mcp-header":"Location"},
        "days":{"type":"integer","x-mcp-header":"Days"}}}}]);
    assert!(rules(&modern(list(10, tool)).settle(&mut store)).is_empty());
    let cases: [ParamCase; 6] = [
        (
            json!({"location":"Paris","days":3}),
            &[("location", "Paris"), ("DAYS", "3.0")],
            &[],
        ),
        (
            json!({"location":"Paris"}),
            &[("Location", "London")],
            &["mcp.http.param_header_mismatch"],
        ),
        (
            json!({"location":"Paris"}),
            &[],
            &["mcp.http.param_header_mismatch"],
        ),
        (
            json!({"location":null}),
            &[("Location", "Paris")],
            &[
                "mcp.tools_call.arguments_schema",
                "mcp.http.param_header_mismatch",
            ],
        ),
        (
            json!({"location":"Zürich"}),
            &[("Location", "=?base64?WsO8cmljaA==?=")],
            &[],
        ),
        (
            json!({"location":"Paris","days":3}),
            &[("Location", "Paris"), ("Days", "4")],
            &["mcp.http.param_header_mismatch"],
        ),
    ];
    for (k, (args, headers, wanted)) in cases.into_iter().enumerate() {
        let ex = with_params(modern(located_call(20 + k as u64, args)), headers);
        let settled = ex.settle(&mut store);
        assert_eq!(rules(&settled), wanted, "case {k}");
        if let Some(violation) = settled.violations.first() {
            assert!(violation.path.starts_with("/params/arguments/"), "{k}");
        }
    }
    // A 2025-era session's call is not judged by its Mcp-Param headers.
    let mut legacy = super::tests::store();
    initialize(&mut legacy, json!({"tools":{}}));
    let tool = json!([{"name":"weather","inputSchema":{"type":"object","properties":{"location":{"type":"string","x-mcp-header":"Location"}}}}]);
    list(20, tool).settle(&mut legacy);
    let ex = with_params(
        located_call(30, json!({"location":"Paris"})),
        &[("Location", "London")],
    );
    assert!(rules(&ex.settle(&mut legacy)).is_empty());
}

fn task_call(at: u64, name: &str, task: bool) -> Ex {
    let mut params = json!({"name":name,"arguments":{}});
    if task {
        params["task"] = json!({"ttl":60000});
    }
    post(
        at,
        json!({"jsonrpc":"2.0","id":at,"method":"tools/call","params":params}),
        vec![json!({"jsonrpc":"2.0","id":at,"result":{"content":[]}})],
    )
}

#[test]
fn task_augmentation_follows_the_capability_and_the_tools_support() {
    let mut store = store();
    initialize(&mut store, json!({"tools":{}}));
    assert_eq!(
        rules(&task_call(20, "any", true).settle(&mut store)),
        ["mcp.tools_call.task_not_allowed"],
        "no tasks.requests.tools.call"
    );
    let mut store = super::tests::store();
    initialize(
        &mut store,
        json!({"tools":{},"tasks":{"requests":{"tools":{"call":{}}}}}),
    );
    let object = json!({"type":"object"});
    let tools = json!([
        {"name":"plain","inputSchema":object},
        {"name":"forbidden","inputSchema":object,"execution":{"taskSupport":"forbidden"}},
        {"name":"optional","inputSchema":object,"execution":{"taskSupport":"optional"}},
        {"name":"required","inputSchema":object,"execution":{"taskSupport":"required"}},
    ]);
    assert!(rules(&list(20, tools).settle(&mut store)).is_empty());
    let cases = [
        ("plain", true, true),
        ("forbidden", true, true),
        ("optional", true, false),
        ("required", false, true),
        ("required", true, false),
        ("plain", false, false),
        ("optional", false, false),
    ];
    for (k, (name, task, fires)) in cases.into_iter().enumerate() {
        let settled = task_call(30 + k as u64, name, task).settle(&mut store);
        let wanted: &[&str] = if fires {
            &["mcp.tools_call.task_not_allowed"]
        } else {
            &[]
        };
        assert_eq!(rules(&settled), wanted, "{name} task={task}");
    }
}

/// A 2026-07-28 `tools/call` answered `input_required` (`state`: its `requestState`).
fn asked(at: u64, id: Value, args: Value, keys: &[&str], state: Option<&str>) -> Ex {
    let requests: serde_json::Map<String, Value> = keys
        .iter()
        .map(|k| {
            (
                (*k).to_owned(),
                json!({"method":"elicitation/create","params":{}}),
            )
        })
        .collect();
    let mut result = json!({"resultType":"input_required","inputRequests":requests});
    if let Some(state) = state {
        result["requestState"] = json!(state);
    }
    modern(post(
        at,
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"login","arguments":args}}),
        vec![json!({"jsonrpc":"2.0","id":id,"result":result})],
    ))
}

/// Its retry: `inputResponses` with `keys`, and `state` echoed.
fn retried(at: u64, id: Value, args: Value, keys: &[&str], state: Option<&str>) -> Ex {
    let responses: serde_json::Map<String, Value> = keys
        .iter()
        .map(|k| ((*k).to_owned(), json!({"action":"accept","content":{}})))
        .collect();
    let mut params = json!({"name":"login","arguments":args,"inputResponses":responses});
    if let Some(state) = state {
        params["requestState"] = json!(state);
    }
    modern(post(
        at,
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params}),
        vec![json!({"jsonrpc":"2.0","id":id,"result":{"resultType":"complete","content":[]}})],
    ))
}

#[test]
fn mrtr_retries_are_matched_by_request_state_or_by_their_params() {
    let mut store = store();
    let args = json!({"user":"octo"});
    let judge = |store: &mut ConversationStore, ex: Ex| rules(&ex.settle(store));
    assert!(
        judge(
            &mut store,
            asked(10, json!("a"), args.clone(), &["github_login"], Some("S1"))
        )
        .is_empty()
    );
    let cases: [RetryCase; 5] = [
        (
            json!("a"),
            &["github_login"],
            Some("S1"),
            &["mcp.tools_call.retry_same_id"],
        ),
        (
            json!("b"),
            &["other"],
            Some("S1"),
            &["mcp.tools_call.input_responses_mismatch"],
        ),
        (json!("c"), &["github_login"], Some("S1"), &[]),
        // Never answered input_required: not judged.
        (json!("a"), &["x"], Some("never-seen"), &[]),
        // The state dropped: matched by the params, which were not asked without a state.
        (json!("a"), &["github_login"], None, &[]),
    ];
    for (k, (id, keys, state, wanted)) in cases.into_iter().enumerate() {
        let ex = retried(20 + k as u64, id, args.clone(), keys, state);
        assert_eq!(judge(&mut store, ex), wanted, "case {k}");
    }
    // Without a requestState the retry is matched by its tool name and arguments.
    let other = json!({"user":"cat"});
    assert!(judge(&mut store, asked(40, json!(7), other.clone(), &["k"], None)).is_empty());
    assert_eq!(
        judge(
            &mut store,
            retried(41, json!(7), other.clone(), &["k"], None)
        ),
        ["mcp.tools_call.retry_same_id"]
    );
    assert_eq!(
        judge(&mut store, retried(42, json!(8), other.clone(), &[], None)),
        ["mcp.tools_call.input_responses_mismatch"]
    );
    // Two clients (one shared conversation) got one state for two ids: ambiguous, silent.
    let shared = json!({"user":"both"});
    judge(
        &mut store,
        asked(50, json!(1), shared.clone(), &["k"], Some("SAME")),
    );
    judge(
        &mut store,
        asked(51, json!(2), shared.clone(), &["k"], Some("SAME")),
    );
    assert!(
        judge(
            &mut store,
            retried(52, json!(1), shared.clone(), &["k"], Some("SAME"))
        )
        .is_empty()
    );
    // A retry answered input_required again takes its original's place: its own id is next.
    judge(
        &mut store,
        asked(60, json!(30), args.clone(), &["a"], Some("S2")),
    );
    let mut again = retried(61, json!(31), args.clone(), &["a"], Some("S2"));
    again.received[0].0["result"] =
        json!({"resultType":"input_required","inputRequests":{"b":{}},"requestState":"S2"});
    assert!(judge(&mut store, again).is_empty());
    assert_eq!(
        judge(
            &mut store,
            retried(62, json!(31), args.clone(), &["b"], Some("S2"))
        ),
        ["mcp.tools_call.retry_same_id"]
    );
}

/// A 2025-era SSE POST whose last event is `received`'s last.
fn streamed(start: u64, end: u64, sent: Value, received: Vec<(Value, &str)>) -> Ex {
    let mut ex = post(start, sent, Vec::new());
    ex.end = end;
    ex.status = 200;
    ex.received = received
        .into_iter()
        .map(|(value, id)| (value, (!id.is_empty()).then(|| id.to_owned())))
        .collect();
    ex
}

fn cancel(at: u64, id: u64) -> Ex {
    post(
        at,
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":id}}),
        vec![],
    )
}

fn tools_call(id: u64) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"slow"}})
}

fn answer_of(id: u64) -> Value {
    json!({"jsonrpc":"2.0","id":id,"result":{"content":[]}})
}

fn get(start: u64, last_event: Option<&str>, received: Vec<(Value, &str)>) -> Ex {
    let mut ex = streamed(start, start + 100, json!(null), received);
    ex.method = HttpMethod::Get;
    ex.sent.clear();
    ex.resumed = last_event.is_some();
    ex.last_event = last_event.map(str::to_owned);
    ex
}

#[test]
fn a_response_long_after_its_cancellation_is_a_warning_either_way_round() {
    let mut store = store();
    initialize(&mut store, json!({"tools":{}}));
    // The call's POST settles first; its answer ended the stream 20 s in.
    let slow = streamed(100, 20_000_000, tools_call(5), vec![(answer_of(5), "")]);
    assert!(rules(&slow.settle(&mut store)).is_empty());
    let settled = cancel(200, 5).settle(&mut store);
    assert_eq!(rules(&settled), ["mcp.cancel.response_after_cancel"]);
    assert_eq!(settled.violations[0].path, "/params/requestId");
    // Within the grace (5 s): a race, allowed.
    streamed(300, 3_000_000, tools_call(6), vec![(answer_of(6), "")]).settle(&mut store);
    assert!(rules(&cancel(400, 6).settle(&mut store)).is_empty());
    // The stream broke; the answer came on a GET that began after the grace.
    let progress = json!({"jsonrpc":"2.0","method":"notifications/message","params":{}});
    streamed(600, 700, tools_call(8), vec![(progress, "")]).settle(&mut store);
    assert!(rules(&cancel(800, 8).settle(&mut store)).is_empty());
    let late = get(6_000_000, Some("x"), vec![(answer_of(8), "")]);
    let settled = late.settle(&mut store);
    assert_eq!(rules(&settled), ["mcp.cancel.response_after_cancel"]);
    assert_eq!(settled.violations[0].path, "/id");
    // A GET that began within the grace may have carried it in time: not judged.
    streamed(900, 950, tools_call(9), vec![]).settle(&mut store);
    cancel(1000, 9).settle(&mut store);
    assert!(rules(&get(1_100, Some("y"), vec![(answer_of(9), "")]).settle(&mut store)).is_empty());
    // A grace configured shorter catches the 3 s answer.
    let mut strict = store_with(StoreLimits {
        cancel_grace_us: 1_000_000,
        ..StoreLimits::default()
    });
    initialize(&mut strict, json!({"tools":{}}));
    streamed(300, 3_000_000, tools_call(6), vec![(answer_of(6), "")]).settle(&mut strict);
    assert_eq!(
        rules(&cancel(400, 6).settle(&mut strict)),
        ["mcp.cancel.response_after_cancel"]
    );
}

#[test]
fn a_resumption_that_replays_another_streams_messages() {
    let mut store = store();
    initialize(&mut store, json!({"tools":{}}));
    let note = json!({"jsonrpc":"2.0","method":"notifications/message","params":{}});
    // Call 5's stream broke after e1; call 6's stream ended with its answer (f2).
    streamed(20, 25, tools_call(5), vec![(note.clone(), "e1")]).settle(&mut store);
    streamed(
        30,
        35,
        tools_call(6),
        vec![(note.clone(), "f1"), (answer_of(6), "f2")],
    )
    .settle(&mut store);
    // A good resumption of e1's stream: call 5's answer.
    let good = get(40, Some("e1"), vec![(answer_of(5), "e2")]);
    assert!(rules(&good.settle(&mut store)).is_empty());
    // Replaying f2 (call 6's stream); call 6's answer under a new event id.
    let replayed = get(50, Some("e1"), vec![(answer_of(6), "f2")]);
    let answered = get(55, Some("e1"), vec![(answer_of(6), "e9")]);
    for wrong in [replayed, answered] {
        assert_eq!(
            rules(&wrong.settle(&mut store)),
            ["mcp.sse.resume_wrong_stream"]
        );
    }
    // A standalone GET stream resumed: it carries no responses.
    get(60, None, vec![(note.clone(), "g1")]).settle(&mut store);
    assert_eq!(
        rules(&get(70, Some("g1"), vec![(answer_of(5), "g2")]).settle(&mut store)),
        ["mcp.sse.resume_wrong_stream"]
    );
    // A Last-Event-ID tooltap never saw: not judged.
    assert!(rules(&get(80, Some("zz"), vec![(answer_of(6), "f1")]).settle(&mut store)).is_empty());
}

#[test]
fn cancellations_streams_and_input_required_answers_are_bounded() {
    let limits = StoreLimits {
        max_ids: 100,
        ..StoreLimits::default()
    };
    // 10,000 cancellations in one session: at most 100 kept.
    let mut store = store_with(limits);
    initialize(&mut store, json!({"tools":{}}));
    let mut evicted = 0;
    for k in 0..10_000u64 {
        evicted += cancel(20 + k, 1_000_000 + k)
            .settle(&mut store)
            .cuts
            .ids_evicted;
    }
    assert!(evicted >= 9_900, "cancellations evicted {evicted}");
    // 5,000 streams with event ids: the oldest streams and ids go; a resumption of a lost
    // one judges nothing.
    let mut store = store_with(limits);
    initialize(&mut store, json!({"tools":{}}));
    let note = json!({"jsonrpc":"2.0","method":"notifications/message","params":{}});
    let mut evicted = 0;
    for k in 0..5_000u64 {
        let ex = streamed(
            20 + k,
            21 + k,
            tools_call(k),
            vec![(note.clone(), &format!("s{k}"))],
        );
        evicted += ex.settle(&mut store).cuts.ids_evicted;
    }
    assert!(
        evicted >= 3 * 4_900,
        "streams, event and request ids evicted {evicted}"
    );
    let lost = get(10_000, Some("s0"), vec![(answer_of(4_999), "x")]);
    assert!(rules(&lost.settle(&mut store)).is_empty());
    let kept = get(10_001, Some("s4999"), vec![(answer_of(4_998), "y")]);
    assert_eq!(
        rules(&kept.settle(&mut store)),
        ["mcp.sse.resume_wrong_stream"]
    );
    // 10,000 input_required answers: the oldest forgotten, its retry not judged.
    let mut store = store_with(limits);
    let mut evicted = 0;
    for k in 0..10_000u64 {
        let ex = asked(k, json!(k), json!({}), &["k"], Some(&format!("state-{k}")));
        evicted += ex.settle(&mut store).cuts.ids_evicted;
    }
    assert!(
        evicted >= 2 * 9_900,
        "answers and request ids evicted {evicted}"
    );
    let forgotten = retried(20_000, json!(0), json!({}), &["k"], Some("state-0"));
    assert!(rules(&forgotten.settle(&mut store)).is_empty());
    let recent = retried(20_001, json!(9_999), json!({}), &["k"], Some("state-9999"));
    assert_eq!(
        rules(&recent.settle(&mut store)),
        ["mcp.tools_call.retry_same_id"]
    );
}

#[test]
fn the_rules_list_names_each_new_rule_once() {
    for rule in [
        RuleId::McpHttpParamHeaderMismatch,
        RuleId::McpSseResumeWrongStream,
        RuleId::McpToolsCallTaskNotAllowed,
        RuleId::McpToolsCallRetrySameId,
        RuleId::McpToolsCallInputResponsesMismatch,
        RuleId::McpCancelResponseAfterCancel,
    ] {
        assert_eq!(RULES.iter().filter(|r| **r == rule).count(), 1, "{rule}");
        assert!(only_across_exchanges(rule), "{rule}");
    }
    assert!(!RULES.contains(&RuleId::McpProgressWrongStream));
}
