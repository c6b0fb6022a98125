//! The history's two reads give the same [`Turn`]s: the scan on every text it takes, the tree on
//! the rest; and the scan takes the histories agents send. Generated histories repeat keys,
//! escape keys and values, nest past the scan's depth and hold numbers and strings serde
//! refuses, so that both sides of every give-up are compared.

use proptest::prelude::*;
use serde_json::Value;
use serde_json::value::RawValue;

use super::*;
use crate::engine::SeverityOverrides;
use crate::engine::dialect::item_list;
use crate::engine::json_scan::tests::{edited, json_text_of};
use crate::engine::violation::{Stage, ViolationSink};

/// The scan's read of a whole history's `text`.
fn scanned(text: &str) -> Option<Vec<Turn<'_>>> {
    item_list::scanned::<Messages>(text)
}

/// The tree's read of `text`, `None` when it is not a JSON array.
fn tree(text: &str) -> Option<Vec<Value>> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(messages)) => Some(messages),
        _ => None,
    }
}

/// Both reads of `text`: equal whenever the scan takes it, and the scan takes only what the tree
/// reads. Returns whether the scan took it.
fn same_turns(text: &str) -> Result<bool, TestCaseError> {
    let messages = tree(text);
    let Some(scanned) = scanned(text) else {
        return Ok(false);
    };
    let messages = messages.ok_or_else(|| TestCaseError::fail(format!("scan took {text}")))?;
    let from_tree: Vec<Turn<'_>> = messages.iter().map(Turn::of_tree).collect();
    prop_assert_eq!(scanned, from_tree, "{}", text);
    Ok(true)
}

/// The rule ids and paths `check` finds in `history`.
fn judged(history: &History<'_>, continues: bool) -> Vec<(String, String)> {
    let mut sink = ViolationSink::new(SeverityOverrides::default());
    check(
        history,
        continues,
        &mut Judge::new(&mut sink, Stage::Request),
    );
    sink.into_vec()
        .into_iter()
        .map(|v| (v.rule.as_str().to_owned(), v.path))
        .collect()
}

/// The findings in `text`, kept as serde keeps it; the same when the body's scan reads it.
fn findings(text: &str, continues: bool) -> Vec<(String, String)> {
    let raw = RawValue::from_string(text.to_owned()).expect("JSON");
    let found = judged(&History::raw(raw), continues);
    let mut scan = Scan::new(text);
    if let Some(history) = History::scan(&mut scan) {
        assert_eq!(judged(&history, continues), found, "{text}");
    }
    found
}

#[test]
fn an_agents_history_is_scanned_and_judged() {
    let text = r#"[
        {"role":"user","content":"Fix it."},
        {"role":"assistant","content":[{"type":"text","text":"Reading."},
            {"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"a"}},
            {"type":"tool_use","id":"toolu_2","name":"read","input":"a"}]},
        {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"x"},
            {"type":"text","text":"and"},
            {"type":"tool_result","tool_use_id":"toolu_9","content":[{"type":"text","text":"y"}]}]}
    ]"#;
    assert!(scanned(text).is_some());
    assert!(same_turns(text).expect("the same turns"));
    let found = findings(text, false);
    let expected = [
        (
            "anthropic.request.history_tool_use_input_not_object",
            "/messages/1/content/2/input",
        ),
        (
            "anthropic.request.tool_use_unanswered",
            "/messages/1/content/2/id",
        ),
        (
            "anthropic.request.tool_result_not_leading",
            "/messages/2/content/2",
        ),
        (
            "anthropic.request.tool_result_orphan",
            "/messages/2/content/2/tool_use_id",
        ),
    ];
    let expected: Vec<_> = expected
        .iter()
        .map(|(r, p)| (r.to_string(), p.to_string()))
        .collect();
    assert_eq!(found, expected);
}

#[test]
fn what_the_scan_leaves_to_the_tree_is_read_there() {
    let deep = format!("{}1{}", "[".repeat(110), "]".repeat(110));
    let cases = [
        // A key with an escape: the tree decodes it.
        r#"[{"r\u006fle":"assistant","content":[{"type":"tool_use","id":"a","input":1}]},{"role":"user","content":"ok"}]"#.to_owned(),
        // Nesting deeper than the scan goes, inside a member the rules skip.
        format!(
            r#"[{{"role":"assistant","content":[{{"type":"tool_use","id":"a","x":{deep}}}]}},{{"role":"user","content":"ok"}}]"#
        ),
    ];
    for text in &cases {
        assert!(scanned(text).is_none(), "{text}");
        assert!(tree(text).is_some(), "{text}");
    }
    // From the tree: the unanswered call and its input are found all the same.
    assert_eq!(findings(&cases[0], false).len(), 2);
    assert_eq!(findings(&cases[1], false).len(), 2);
}

#[test]
fn what_neither_read_takes_is_not_judged() {
    // A number serde refuses, and a lone surrogate, in members the rules skip.
    for text in [
        r#"[{"role":"assistant","content":[{"type":"tool_use","id":"a","n":1e400}]}]"#,
        r#"[{"role":"assistant","content":[{"type":"tool_use","id":"a","t":"\ud800"}]}]"#,
    ] {
        assert!(scanned(text).is_none(), "{text}");
        assert!(tree(text).is_none(), "{text}");
        assert!(findings(text, false).is_empty(), "{text}");
    }
}

#[test]
fn escaped_values_null_inputs_and_odd_shapes_read_as_the_tree_reads_them() {
    for text in [
        r#"[{"role":"assist\u0061nt","content":[{"type":"tool\u005fuse","id":"a\"b","input":null}]}]"#,
        r#"[{"role":"assistant","content":[{"type":"tool_use","id":7,"input":[1, 2]}]}, 3, "x"]"#,
        r#"[{"role":"user","content":"text"}, {"role":"user","content":{"type":"tool_result"}}]"#,
        r#"[{"role":"assistant","content":[1,{"type":"tool_use"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":null}]}]"#,
        r#"[{"role":null,"content":null},{"content":[{"input":{"a":[1.5e3,-0,"\u00e9"]}}]}]"#,
        // A member given twice: the last one, as a `Value` keeps it.
        r#"[{"role":"user","role":"assistant","content":[{"type":"text","type":"tool_use","input":{},"input":2}]}]"#,
    ] {
        assert!(same_turns(text).expect("the same turns"), "{text}");
    }
}

/// JSON text of the keys and values the history rules read (escaped at times), or values
/// serde refuses, or any string; objects may repeat a key.
pub(crate) fn value() -> impl Strategy<Value = String> {
    let keys = vec![
        "role",
        "content",
        "type",
        "id",
        "tool_use_id",
        "input",
        "text",
        "name",
        "r\\u006fle",
        "typ\\u0065",
    ];
    let leaves = vec![
        "\"assistant\"",
        "\"user\"",
        "\"tool_use\"",
        "\"tool_result\"",
        "\"toolu_1\"",
        "\"toolu_2\"",
        "\"assist\\u0061nt\"",
        "\"tool\\u005fuse\"",
        "null",
        "1",
        "1e400",
        "-0.5",
        "true",
        "\"\\ud800\"",
        "{}",
        "[]",
    ];
    json_text_of(keys, leaves, 4)
}

/// A message in the API's shape: a role, and blocks of the kinds the rules read.
pub(crate) fn message() -> impl Strategy<Value = Value> {
    let role = prop::sample::select(vec!["assistant", "user"]);
    let kind = prop::sample::select(vec!["tool_use", "tool_result", "text"]);
    let id = prop::sample::select(vec!["toolu_1", "toolu_2", "toolu_3"]);
    let input = prop::sample::select(vec![
        None,
        Some(Value::Null),
        Some(serde_json::json!({"a":1})),
    ]);
    let block = (kind, id, input).prop_map(|(kind, id, input)| {
        let mut block = serde_json::json!({"type": kind, "id": id, "tool_use_id": id, "text": "x"});
        if let Some(input) = input {
            block["input"] = input;
        }
        block
    });
    (role, prop::collection::vec(block, 0..4))
        .prop_map(|(role, blocks)| serde_json::json!({"role": role, "content": blocks}))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]
    #[test]
    fn histories_in_the_apis_shape_are_scanned(messages in prop::collection::vec(message(), 0..6), pretty: bool) {
        let text = if pretty {
            serde_json::to_string_pretty(&messages).unwrap()
        } else {
            serde_json::to_string(&messages).unwrap()
        };
        prop_assert!(same_turns(&text)?, "{}", text);
    }

    #[test]
    fn any_history_is_read_the_same_both_ways(
        messages in prop::collection::vec(value(), 0..5),
        at: usize,
        edit: u8,
        edit_it: bool,
    ) {
        let text = format!("[{}]", messages.join(","));
        let text = if edit_it { edited(&text, at, edit) } else { text };
        same_turns(&text)?;
    }
}
