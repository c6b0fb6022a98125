//! The body's one-pass scan reads what serde's read of it reads: every generated body (members
//! repeated, escaped, edited, of any type) judges the same through both, and the bodies in the
//! API's shape are taken by the scan.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::engine::SeverityOverrides;
use crate::engine::dialect::anthropic::history::tests::{message, value};
use crate::engine::json_scan::tests::edited;

/// What `fields` judge to, as text: the request read and its findings.
fn judged(fields: Option<Fields<'_>>) -> String {
    let mut sink = ViolationSink::new(SeverityOverrides::default());
    let request = judge_fields(fields, &mut sink);
    format!("{request:?} {:?}", sink.into_vec())
}

/// Both reads of `body` judge alike; returns whether the scan took it.
fn same_reading(body: &str) -> Result<bool, TestCaseError> {
    if !common::is_object_text(body.as_bytes()) {
        return Ok(false);
    }
    let scanned = Fields::scanned(body);
    let took = scanned.is_some();
    if took {
        prop_assert!(Fields::by_serde(body.as_bytes()).is_some(), "{}", body);
    }
    let by_serde = judged(Fields::by_serde(body.as_bytes()));
    prop_assert_eq!(judged(Fields::read(body.as_bytes())), by_serde, "{}", body);
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
    assert!(Fields::scanned(&body).is_some());
    assert!(same_reading(&body).expect("the same reading"));
    let mut sink = ViolationSink::new(SeverityOverrides::default());
    let request = parse(body.as_bytes(), &mut sink);
    assert_eq!(request.choice, Choice::Tool("read".to_owned()));
    let tools = json!([{"name":"read","input_schema":{"type":"object"}}]).to_string();
    assert_eq!(request.raw_tools.as_deref(), Some(tools.as_str()));
    let found: Vec<_> = sink
        .into_vec()
        .into_iter()
        .map(|v| v.rule.as_str())
        .collect();
    assert_eq!(found, ["anthropic.request.tool_result_not_leading"]);
}

#[test]
fn a_member_given_twice_reads_nothing_either_way() {
    let body =
        r#"{"model":"m","tools":[],"tools":[{"name":"a","input_schema":{"type":"object"}}]}"#;
    assert!(Fields::scanned(body).is_none());
    assert!(Fields::by_serde(body.as_bytes()).is_none());
    let mut sink = ViolationSink::new(SeverityOverrides::default());
    assert!(!parse(body.as_bytes(), &mut sink).facts.parsed);
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
    fn bodies_in_the_apis_shape_are_scanned(messages in prop::collection::vec(message(), 0..6)) {
        let body = json!({"model":"m","max_tokens":1,"messages":messages,
            "tools":[{"name":"read","input_schema":{"type":"object"}}]}).to_string();
        prop_assert!(same_reading(&body)?, "{}", body);
    }
}
