//! The body's one-pass scan reads what serde's read of it reads, and a clean `tools` array's
//! declarations, kept with its compiled tools, judge a later request as a fresh read does.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::engine::SeverityOverrides;
use crate::engine::dialect::responses::input::tests::item;
use crate::engine::json_scan::tests::edited;

/// `body` judged with `cache` (or none), as text: the request read and its findings.
fn judged(body: &str, scan: bool, cache: Option<&SchemaCache>) -> String {
    let fields = if scan {
        Fields::read(body.as_bytes(), cache)
    } else if common::is_object_text(body.as_bytes()) {
        Fields::by_serde(body.as_bytes())
    } else {
        None
    };
    let mut sink = ViolationSink::new(SeverityOverrides::default());
    let (request, compiled) = judge_fields(fields, cache, &mut sink);
    if let Some(compiled) = compiled {
        compiled.admit();
    }
    format!("{request:?} {:?}", sink.into_vec())
}

/// A member's JSON text for one of the keys the request read takes (or one it skips).
fn member() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "model",
        "tools",
        "tool_choice",
        "input",
        "previous_response_id",
        "max_output_tokens",
        "t\\u006fols",
    ]);
    let value = prop::sample::select(vec![
        r#"[{"type":"function","name":"read","parameters":{"type":"object"}}]"#,
        r#"[{"type":"function","function":{"name":"f"}}]"#,
        r#"[{"type":"function","name":"a"},{"type":"function","name":"a"}]"#,
        r#"{"type":"function","name":"read"}"#,
        r#""required""#,
        r#"[{"type":"function_call","call_id":"c1"},{"type":"function_call_output","call_id":"c2"}]"#,
        r#""a prompt""#,
        "null",
        "1e400",
        r#""resp_1""#,
    ]);
    (key, value).prop_map(|(key, value)| format!("\"{key}\":{value}"))
}

#[test]
fn a_clean_array_is_judged_once_and_a_finding_on_every_request() {
    let clean = json!({"model":"m","tools":[{"type":"function","name":"read","parameters":{"type":"object"}}],
        "tool_choice":{"type":"function","name":"read"},"input":"x"})
    .to_string();
    let broken =
        json!({"model":"m","tools":[{"type":"function","function":{"name":"f"}}],"input":"x"})
            .to_string();
    let cache = SchemaCache::default();
    for body in [&clean, &broken] {
        let fresh = judged(body, true, None);
        for _ in 0..3 {
            assert_eq!(judged(body, true, Some(&cache)), fresh);
        }
    }
    let mut sink = ViolationSink::new(SeverityOverrides::default());
    let (_, compiled) = parse(clean.as_bytes(), &cache, &mut sink);
    assert!(
        compiled
            .expect("compiled")
            .reading::<Declarations>()
            .is_some()
    );
    let (_, compiled) = parse(broken.as_bytes(), &cache, &mut sink);
    assert!(
        compiled
            .expect("compiled")
            .reading::<Declarations>()
            .is_none()
    );
    // Stepped over: the scan took the clean array from the cache's recent ones.
    let scanned = Fields::scanned(&clean, Some(&cache)).expect("the body scans");
    assert!(scanned.basics.known().is_some());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]
    #[test]
    fn any_body_reads_the_same_both_ways_and_with_a_warm_cache(
        members in prop::collection::vec(member(), 0..6),
        at: usize,
        edit: u8,
        edit_it: bool,
    ) {
        let body = format!("{{{}}}", members.join(","));
        let body = if edit_it { edited(&body, at, edit) } else { body };
        let by_serde = judged(&body, false, None);
        prop_assert_eq!(&judged(&body, true, None), &by_serde, "{}", body);
        let cache = SchemaCache::default();
        for _ in 0..2 {
            prop_assert_eq!(&judged(&body, true, Some(&cache)), &by_serde, "{}", body);
        }
    }

    #[test]
    fn bodies_in_the_apis_shape_are_scanned(items in prop::collection::vec(item(), 0..6)) {
        let body = json!({"model":"m","input":items,
            "tools":[{"type":"function","name":"read","parameters":{"type":"object"}}]}).to_string();
        prop_assert!(Fields::scanned(&body, None).is_some(), "{}", body);
        prop_assert_eq!(judged(&body, true, None), judged(&body, false, None), "{}", body);
    }
}
