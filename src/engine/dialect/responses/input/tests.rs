//! The input's two reads give the same [`Item`]s: the scan on every text it takes, the tree on
//! the rest; and the scan takes the inputs agents send. Generated inputs repeat keys, escape
//! keys and values, and hold numbers and strings serde refuses.

use proptest::prelude::*;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::*;
use crate::engine::SeverityOverrides;
use crate::engine::dialect::item_list;
use crate::engine::json_scan::tests::{edited, json_text_of};
use crate::engine::violation::{Stage, ViolationSink};

/// The scan's read of a whole input's `text`.
fn scanned(text: &str) -> Option<Vec<Item<'_>>> {
    item_list::scanned::<Items>(text)
}

/// Both reads of `text`: equal whenever the scan takes it, and the scan takes only what the tree
/// reads. Returns whether the scan took it.
fn same_items(text: &str) -> Result<bool, TestCaseError> {
    let tree = match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => Some(items),
        _ => None,
    };
    let Some(scanned) = scanned(text) else {
        return Ok(false);
    };
    let tree = tree.ok_or_else(|| TestCaseError::fail(format!("scan took {text}")))?;
    let from_tree: Vec<Item<'_>> = tree.iter().map(Item::of_tree).collect();
    prop_assert_eq!(scanned, from_tree, "{}", text);
    Ok(true)
}

/// The rule ids and paths `check` finds in `input`.
fn judged(input: &Input<'_>, continues: bool) -> Vec<(String, String)> {
    let mut sink = ViolationSink::new(SeverityOverrides::default());
    check(input, continues, &mut Judge::new(&mut sink, Stage::Request));
    let found = sink.into_vec().into_iter();
    found
        .map(|v| (v.rule.as_str().to_owned(), v.path))
        .collect()
}

/// The findings in `text` kept as serde keeps it; the same when the body's scan reads it.
fn findings(text: &str, continues: bool) -> Vec<(String, String)> {
    let raw = RawValue::from_string(text.to_owned()).expect("JSON");
    let found = judged(&Input::raw(raw), continues);
    if let Some(input) = Input::scan(&mut Scan::new(text)) {
        assert_eq!(judged(&input, continues), found, "{text}");
    }
    found
}

#[test]
fn an_agents_input_is_scanned_and_judged() {
    let long = "c".repeat(65);
    let text = json!([
        {"role":"user","content":"Fix it."},
        {"type":"function_call","call_id":"call_1","name":"read","arguments":"{}"},
        {"type":"function_call_output","call_id":"call_1","output":"x"},
        {"type":"custom_tool_call_output","call_id":"call_9","output":"y"},
        {"type":"function_call","call_id":long,"name":"read","arguments":"{}"},
    ])
    .to_string();
    assert!(same_items(&text).expect("the same items"));
    let expected = [
        (
            "responses.request.function_call_output_orphan",
            "/input/3/call_id",
        ),
        ("responses.request.call_id_too_long", "/input/4/call_id"),
    ];
    let expected: Vec<_> = expected
        .iter()
        .map(|(r, p)| (r.to_string(), p.to_string()))
        .collect();
    assert_eq!(findings(&text, false), expected);
    // A result whose call lives server-side is no orphan.
    assert_eq!(findings(&text, true), expected[1..]);
}

#[test]
fn what_the_scan_leaves_to_the_tree_is_judged_the_same() {
    let deep = format!("{}1{}", "[".repeat(110), "]".repeat(110));
    for text in [
        r#"[{"typ\u0065":"function_call_output","call_id":"a"}]"#.to_owned(),
        format!(r#"[{{"type":"function_call_output","call_id":"a","x":{deep}}}]"#),
    ] {
        assert!(scanned(&text).is_none(), "{text}");
        assert_eq!(findings(&text, false).len(), 1, "{text}");
    }
    // Neither read takes a number serde refuses: nothing is judged.
    let text = r#"[{"type":"function_call_output","call_id":"a","n":1e400}]"#;
    assert!(scanned(text).is_none());
    assert!(findings(text, false).is_empty());
}

#[test]
fn escaped_values_repeated_members_and_odd_shapes_read_as_the_tree_reads_them() {
    for text in [
        r#"[{"type":"function\u005fcall","call_id":"a\"b"},{"type":"function_call_output","call_id":"a\"b"}]"#,
        r#"[{"type":"function_call","call_id":7}, 3, "x", null, {"call_id":null}]"#,
        r#"[{"type":"function_call_output","type":"function_call","call_id":"a","call_id":"b"}]"#,
    ] {
        assert!(same_items(text).expect("the same items"), "{text}");
    }
}

/// JSON text of the keys and values the call rules read (escaped at times), or values serde
/// refuses, or any string; objects may repeat a key.
fn value() -> impl Strategy<Value = String> {
    let keys = vec!["type", "call_id", "output", "name", "typ\\u0065"];
    let leaves = vec![
        "\"function_call\"",
        "\"function_call_output\"",
        "\"custom_tool_call\"",
        "\"custom_tool_call_output\"",
        "\"call_1\"",
        "\"call_2\"",
        "\"function\\u005fcall\"",
        "null",
        "1",
        "1e400",
        "\"\\ud800\"",
        "{}",
        "[]",
    ];
    json_text_of(keys, leaves, 3)
}

/// An input item in the API's shape.
pub(crate) fn item() -> impl Strategy<Value = Value> {
    let kind = prop::sample::select(vec![
        "function_call",
        "function_call_output",
        "custom_tool_call_output",
        "message",
    ]);
    let id = prop::sample::select(vec!["call_1", "call_2", "call_3"]);
    (kind, id).prop_map(|(kind, id)| json!({"type": kind, "call_id": id, "output": "x"}))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]
    #[test]
    fn inputs_in_the_apis_shape_are_scanned(items in prop::collection::vec(item(), 0..6)) {
        let text = serde_json::to_string(&items).unwrap();
        prop_assert!(same_items(&text)?, "{}", text);
    }

    #[test]
    fn any_input_is_read_the_same_both_ways(
        items in prop::collection::vec(value(), 0..5),
        at: usize,
        edit: u8,
        edit_it: bool,
    ) {
        let text = format!("[{}]", items.join(","));
        let text = if edit_it { edited(&text, at, edit) } else { text };
        same_items(&text)?;
    }
}
