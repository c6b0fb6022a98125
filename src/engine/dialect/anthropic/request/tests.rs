//! The body's one-pass scan reads what serde's read of it reads: every generated body (members
//! repeated, escaped, edited, of any type) judges the same through both, and the bodies in the
//! API's shape are taken by the scan.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::engine::SeverityOverrides;
use crate::engine::dialect::anthropic::history::tests::{message, value};
use crate::engine::json_scan::tests::edited;
use crate::engine::rules::RuleId;

/// What `fields` judge to without a cache, as text: the request read and its findings.
fn judged(fields: Option<Fields<'_>>) -> String {
    let mut sink = ViolationSink::new(SeverityOverrides::default());
    let (request, _) = judge_fields(fields, None, &mut sink);
    format!("{request:?} {:?}", sink.into_vec())
}

/// `body` judged with `cache`: the request and the rule ids found, and its compiled tools.
fn parsed(
    body: &str,
    cache: &SchemaCache,
    overrides: SeverityOverrides,
) -> (
    AnthropicRequest,
    Vec<&'static str>,
    Option<Arc<CompiledTools>>,
) {
    let mut sink = ViolationSink::new(overrides);
    let (request, compiled) = parse(body.as_bytes(), cache, &mut sink);
    let found = sink
        .into_vec()
        .into_iter()
        .map(|v| v.rule.as_str())
        .collect();
    (request, found, compiled)
}

/// A cache that knows `body`'s `tools` array, as after an agent's first turn answered 2xx.
fn warmed(body: &str) -> SchemaCache {
    let cache = SchemaCache::default();
    let (_, _, compiled) = parsed(body, &cache, SeverityOverrides::default());
    compiled.expect("the body has tools").admit();
    cache
}

/// Both reads of `body` judge alike; returns whether the scan took it.
fn same_reading(body: &str) -> Result<bool, TestCaseError> {
    if !common::is_object_text(body.as_bytes()) {
        return Ok(false);
    }
    let scanned = Fields::scanned(body, None);
    let took = scanned.is_some();
    if took {
        prop_assert!(Fields::by_serde(body.as_bytes()).is_some(), "{}", body);
    }
    let by_serde = judged(Fields::by_serde(body.as_bytes()));
    prop_assert_eq!(
        judged(Fields::read(body.as_bytes(), None)),
        by_serde,
        "{}",
        body
    );
    Ok(took)
}

/// A member's JSON text for one of the keys the request read takes (or one it skips).
fn member() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "model",
        "stream",
        "tools",
        "tool_choice",
        "messages",
        "thread",
        "max_tokens",
        "m\\u006fdel",
    ]);
    let tools = prop::sample::select(vec![
        r#"[{"name":"read","input_schema":{"type":"object"}}]"#,
        r#"[{"name":"read","input_schema":{"type":"string"}},{"type":"web_search_20250305","name":"web_search"}]"#,
        r#"[{"type":"function","function":{"name":"f"}}]"#,
    ]);
    let choice = prop::sample::select(vec![
        r#"{"type":"auto"}"#,
        r#"{"type":"tool","name":"read"}"#,
        r#"{"type":"tool","name":"nope"}"#,
        r#""auto""#,
        r#"{"type":"any","disable_parallel_tool_use":true}"#,
    ]);
    let messages = prop::collection::vec(message(), 0..4)
        .prop_map(|messages| serde_json::to_string(&messages).unwrap());
    let any = prop_oneof![
        3 => tools.prop_map(str::to_owned),
        2 => choice.prop_map(str::to_owned),
        3 => messages,
        1 => Just(r#"{"type":"continue","previous_message_id":"msg_1"}"#.to_owned()),
        2 => value(),
    ];
    (key, any).prop_map(|(key, value)| format!("\"{key}\":{value}"))
}

#[test]
fn an_agents_request_is_scanned_in_one_pass() {
    let body = json!({"model":"m","max_tokens":10,"stream":true,
        "tools":[{"name":"read","input_schema":{"type":"object"}}],
        "tool_choice":{"type":"tool","name":"read"},
        "messages":[{"role":"user","content":"x"},
            {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":{}}]},
            {"role":"user","content":[{"type":"text","text":"y"},
                {"type":"tool_result","tool_use_id":"t1","content":"z"}]}]})
    .to_string();
    assert!(Fields::scanned(&body, None).is_some());
    assert!(same_reading(&body).expect("the same reading"));
    let (request, found, compiled) =
        parsed(&body, &SchemaCache::default(), SeverityOverrides::default());
    assert_eq!(request.choice, Choice::Tool("read".to_owned()));
    assert!(compiled.expect("compiled tools").get("read").is_some());
    assert_eq!(found, ["anthropic.request.tool_result_not_leading"]);
}

#[test]
fn a_member_given_twice_reads_nothing_either_way() {
    let body =
        r#"{"model":"m","tools":[],"tools":[{"name":"a","input_schema":{"type":"object"}}]}"#;
    assert!(Fields::scanned(body, None).is_none());
    assert!(Fields::by_serde(body.as_bytes()).is_none());
    let (request, _, _) = parsed(body, &SchemaCache::default(), SeverityOverrides::default());
    assert!(!request.facts.parsed);
}

#[test]
fn a_clean_array_is_judged_once_and_its_declarations_kept() {
    let tools = r#"[{"name":"read","input_schema":{"type":"object"},"strict":true},{"type":"web_search_20250305","name":"web_search"}]"#;
    let first = format!(r#"{{"model":"m","tools":{tools},"messages":[]}}"#);
    let cache = warmed(&first);
    let next = format!(
        r#"{{"model":"m","tools":{tools},"tool_choice":{{"type":"tool","name":"web_search"}},"messages":[{{"role":"user","content":"x"}}]}}"#
    );
    let (request, found, compiled) = parsed(&next, &cache, SeverityOverrides::default());
    let compiled = compiled.expect("compiled tools");
    assert!(compiled.reading::<Declarations>().is_some());
    // The kept declarations serve the same request a fresh read does.
    let (fresh, fresh_found, _) =
        parsed(&next, &SchemaCache::default(), SeverityOverrides::default());
    assert_eq!(format!("{request:?}"), format!("{fresh:?}"));
    assert_eq!(found, fresh_found);
    assert_eq!(request.choice, Choice::Unchecked);
    assert!(request.tools.get("read").is_some_and(|tool| tool.strict));
    // Stepped over: the scan took the array from the cache's recent ones.
    let Some(scanned) = Fields::scanned(&next, Some(&cache)) else {
        panic!("the body scans");
    };
    let known = scanned.basics.known();
    assert!(known.is_some_and(|known| Arc::ptr_eq(known, &compiled)));
}

#[test]
fn an_array_with_a_finding_is_judged_on_every_request() {
    let body = r#"{"model":"m","tools":[{"type":"function","function":{"name":"f"}},{"name":"g","input_schema":{"type":"object"}}]}"#;
    let cache = warmed(body);
    for _ in 0..2 {
        let (_, found, compiled) = parsed(body, &cache, SeverityOverrides::default());
        assert_eq!(found, ["anthropic.request.openai_tool_shape"]);
        assert!(
            compiled
                .expect("compiled")
                .reading::<Declarations>()
                .is_none()
        );
    }
    // A route that turns the rule off reports nothing, and keeps nothing either: the next
    // route's request still finds it.
    let mut off = SeverityOverrides::default();
    off.set(
        RuleId::AnthropicRequestOpenaiToolShape,
        crate::engine::Level::Off,
    );
    let (_, found, compiled) = parsed(body, &cache, off);
    assert!(found.is_empty());
    assert!(
        compiled
            .expect("compiled")
            .reading::<Declarations>()
            .is_none()
    );
    let (_, found, _) = parsed(body, &cache, SeverityOverrides::default());
    assert_eq!(found, ["anthropic.request.openai_tool_shape"]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]
    #[test]
    fn any_body_reads_the_same_both_ways(
        members in prop::collection::vec(member(), 0..6),
        at: usize,
        edit: u8,
        edit_it: bool,
    ) {
        let body = format!("{{{}}}", members.join(","));
        let body = if edit_it { edited(&body, at, edit) } else { body };
        same_reading(&body)?;
    }

    #[test]
    fn a_body_judges_alike_when_the_cache_knows_its_array(
        members in prop::collection::vec(member(), 0..6),
    ) {
        let body = format!("{{{}}}", members.join(","));
        let cache = SchemaCache::default();
        let fresh = {
            let mut sink = ViolationSink::new(SeverityOverrides::default());
            let (request, _) = judge_fields(Fields::read(body.as_bytes(), None), None, &mut sink);
            let found: Vec<_> = sink.into_vec().into_iter().map(|v| v.rule.as_str()).collect();
            (format!("{request:?}"), found)
        };
        // Twice: the first compiles the array (and may keep its declarations), the second
        // steps over it and takes what was kept.
        for _ in 0..2 {
            let (request, found, compiled) = parsed(&body, &cache, SeverityOverrides::default());
            if let Some(compiled) = compiled {
                compiled.admit();
            }
            prop_assert_eq!(&(format!("{request:?}"), found), &fresh, "{}", body);
        }
    }

    #[test]
    fn bodies_in_the_apis_shape_are_scanned(messages in prop::collection::vec(message(), 0..6)) {
        let body = json!({"model":"m","max_tokens":1,"messages":messages,
            "tools":[{"name":"read","input_schema":{"type":"object"}}]}).to_string();
        prop_assert!(same_reading(&body)?, "{}", body);
    }
}
