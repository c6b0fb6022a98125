//! The streaming checker against the whole-document validator, on generated schemas and
//! instances split anywhere: the same failures (instance and schema paths) when it says
//! `Checked`, a subset when it says `Incomplete`, and `Incomplete` only for what it cannot hold.

use std::collections::BTreeSet;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::super::{SchemaCheck, ToolSchema, compile_one};
use super::*;
use crate::engine::json_stream::JsonStream;

const MAX: usize = 16;

fn compiled(schema: &Value) -> ToolSchema {
    compile_one(schema, u64::MAX)
}

/// The streamed verdict of `text` cut at `cuts`; `None` when it is not JSON.
fn streamed(schema: &ToolSchema, text: &str, cuts: &[usize], hold: usize) -> Option<StreamVerdict> {
    let plan = schema.stream_plan()?;
    let mut parser = JsonStream::new(hold);
    let mut check = StreamCheck::new(plan, hold, MAX);
    let bytes = text.as_bytes();
    let mut cuts: Vec<usize> = cuts.iter().map(|&cut| cut.min(bytes.len())).collect();
    cuts.sort_unstable();
    let mut from = 0;
    for cut in cuts.into_iter().chain([bytes.len()]) {
        parser
            .push(&bytes[from..cut], &mut |event| check.event(event))
            .ok()?;
        from = cut;
    }
    parser.finish(&mut |event| check.event(event)).ok()?;
    Some(check.verdict())
}

fn paths(failures: &[SchemaFailure]) -> BTreeSet<(String, String)> {
    failures
        .iter()
        .map(|failure| (failure.instance_path.clone(), failure.schema_path.clone()))
        .collect()
}

/// Compares the two verdicts; `must_check`: the streamed one may not be incomplete.
fn agree(
    schema: &Value,
    text: &str,
    cuts: &[usize],
    hold: usize,
    must_check: bool,
) -> Result<(), TestCaseError> {
    let tool = compiled(schema);
    let Ok(instance) = serde_json::from_str::<Value>(text) else {
        prop_assert!(streamed(&tool, text, cuts, hold).is_none());
        return Ok(());
    };
    let SchemaCheck::Checked(whole) = tool.check(&instance, usize::MAX) else {
        return Ok(());
    };
    let whole = paths(&whole);
    let Some(plan) = tool.stream_plan() else {
        return Ok(());
    };
    let verdict = streamed(&tool, text, cuts, hold);
    match verdict {
        Some(StreamVerdict::Checked(failures)) => {
            prop_assert!(failures.len() <= MAX);
            if whole.len() <= MAX {
                prop_assert_eq!(paths(&failures), whole, "{} against {}", text, schema);
            } else {
                prop_assert!(
                    paths(&failures).is_subset(&whole),
                    "{} against {}",
                    text,
                    schema
                );
            }
        }
        Some(StreamVerdict::Incomplete(failures)) => {
            let streamable = matches!(*plan, StreamPlan::Streamed(_));
            prop_assert!(
                !(must_check && streamable),
                "incomplete: {} against {}",
                text,
                schema
            );
            prop_assert!(
                paths(&failures).is_subset(&whole),
                "{} against {}",
                text,
                schema
            );
        }
        None => prop_assert!(false, "{} is JSON", text),
    }
    Ok(())
}

fn small_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..5).prop_map(Value::from),
        prop_oneof![Just(1.0), Just(2.5), Just(-0.5), Just(1e3)].prop_map(Value::from),
        prop_oneof![
            Just(""),
            Just("a"),
            Just("ab"),
            Just("abc"),
            Just("b~/c"),
            Just("é😀")
        ]
        .prop_map(|text: &str| Value::from(text)),
    ]
}

fn instance() -> impl Strategy<Value = Value> {
    small_value().prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![Just("a"), Just("b"), Just("c"), Just("b~/c"), Just("")]
                    .prop_map(str::to_owned),
                inner,
                0..5
            )
            .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

fn type_name() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just("null"),
        Just("boolean"),
        Just("object"),
        Just("array"),
        Just("number"),
        Just("string"),
        Just("integer")
    ]
    .prop_map(Value::from)
}

/// One value keyword.
fn value_keyword() -> impl Strategy<Value = (String, Value)> {
    prop_oneof![
        type_name().prop_map(|name| ("type".to_owned(), name)),
        prop::collection::vec(type_name(), 1..3)
            .prop_map(|names| ("type".to_owned(), Value::Array(names))),
        (-2i64..4).prop_map(|n| ("minimum".to_owned(), json!(n))),
        (-2i64..4).prop_map(|n| ("maximum".to_owned(), json!(n))),
        (-2i64..4).prop_map(|n| ("exclusiveMinimum".to_owned(), json!(n))),
        Just(("exclusiveMaximum".to_owned(), json!(2.5))),
        Just(("multipleOf".to_owned(), json!(2))),
        (0u64..4).prop_map(|n| ("minLength".to_owned(), json!(n))),
        (0u64..4).prop_map(|n| ("maxLength".to_owned(), json!(n))),
        Just(("pattern".to_owned(), json!("^a"))),
        Just(("format".to_owned(), json!("email"))),
        prop::collection::vec(instance(), 1..3)
            .prop_map(|values| ("enum".to_owned(), Value::Array(values))),
        instance().prop_map(|value| ("const".to_owned(), value)),
        Just(("description".to_owned(), json!("annotated"))),
        Just(("x-unknown".to_owned(), json!({"type": "string"}))),
    ]
}

fn schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        1 => any::<bool>().prop_map(Value::Bool),
        6 => prop::collection::vec(value_keyword(), 0..3)
            .prop_map(|keywords| Value::Object(keywords.into_iter().collect())),
        1 => Just(json!({"oneOf": [{"type": "string"}, {"type": "integer"}]})),
        1 => Just(json!({"uniqueItems": true})),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        let name = prop_oneof![Just("a"), Just("b"), Just("c"), Just("b~/c"), Just("")]
            .prop_map(str::to_owned);
        let structural = prop_oneof![
            prop::collection::btree_map(name.clone(), inner.clone(), 0..4).prop_map(|members| (
                "properties".to_owned(),
                Value::Object(members.into_iter().collect())
            )),
            prop::collection::vec(name.prop_map(Value::from), 0..3)
                .prop_map(|names| ("required".to_owned(), Value::Array(names))),
            any::<bool>().prop_map(|flag| ("additionalProperties".to_owned(), json!(flag))),
            inner
                .clone()
                .prop_map(|schema| ("additionalProperties".to_owned(), schema)),
            inner
                .clone()
                .prop_map(|schema| ("items".to_owned(), schema)),
            (0u64..3).prop_map(|n| ("minItems".to_owned(), json!(n))),
            (0u64..3).prop_map(|n| ("maxItems".to_owned(), json!(n))),
            (0u64..3).prop_map(|n| ("minProperties".to_owned(), json!(n))),
            (0u64..3).prop_map(|n| ("maxProperties".to_owned(), json!(n))),
            value_keyword(),
        ];
        prop::collection::vec(structural, 1..5)
            .prop_map(|keywords| Value::Object(keywords.into_iter().collect()))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn streamed_verdicts_are_the_whole_documents(
        schema in schema(),
        instance in instance(),
        cuts in prop::collection::vec(0usize..200, 0..6),
    ) {
        let text = instance.to_string();
        agree(&schema, &text, &cuts, 1 << 20, true)?;
        agree(&schema, &text, &cuts, 4, false)?;
    }
}

#[test]
fn keywords_it_does_not_follow_make_the_plan_whole() {
    for schema in [
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {}}}),
        json!({"anyOf": [{"type": "string"}]}),
        json!({"type": "array", "uniqueItems": true}),
        json!({"type": "object", "patternProperties": {"^a": {}}}),
    ] {
        let plan = compiled(&schema).stream_plan();
        assert!(
            matches!(plan.as_deref(), Some(StreamPlan::Whole(_))),
            "{schema}"
        );
    }
}

#[test]
fn a_long_string_is_judged_by_length_and_type_or_said_incomplete() {
    let long = "é".repeat(40);
    let text = json!({"content": long, "n": 1}).to_string();
    let length =
        json!({"type": "object", "properties": {"content": {"type": "string", "maxLength": 10}}});
    match streamed(&compiled(&length), &text, &[], 16) {
        Some(StreamVerdict::Checked(failures)) => {
            assert_eq!(
                paths(&failures),
                BTreeSet::from([(
                    "/content".to_owned(),
                    "/properties/content/maxLength".to_owned()
                )])
            );
        }
        other => panic!("{other:?}"),
    }
    let typed = json!({"properties": {"content": {"type": "integer"}}});
    assert!(matches!(
        streamed(&compiled(&typed), &text, &[], 16),
        Some(StreamVerdict::Checked(failures)) if failures.len() == 1
    ));
    let pattern = json!({"properties": {"content": {"type": "string", "pattern": "^a"}}});
    assert!(matches!(
        streamed(&compiled(&pattern), &text, &[], 16),
        Some(StreamVerdict::Incomplete(failures)) if failures.is_empty()
    ));
}

#[test]
fn a_key_given_twice_is_incomplete_not_judged_twice() {
    let schema = json!({"properties": {"a": {"type": "integer"}}});
    let verdict = streamed(&compiled(&schema), r#"{"a":"x","a":1}"#, &[], 1 << 20);
    assert!(matches!(verdict, Some(StreamVerdict::Incomplete(failures)) if failures.is_empty()));
}

#[test]
fn an_enum_container_past_the_bound_is_incomplete() {
    let schema = json!({"properties": {"a": {"enum": [[1, 2]]}}});
    let text = json!({"a": (0..100).collect::<Vec<u32>>()}).to_string();
    let verdict = streamed(&compiled(&schema), &text, &[], 64);
    assert!(
        matches!(verdict, Some(StreamVerdict::Incomplete(_))),
        "{verdict:?}"
    );
    let verdict = streamed(&compiled(&schema), r#"{"a":[1,2]}"#, &[], 64);
    assert!(
        matches!(verdict, Some(StreamVerdict::Checked(ref failures)) if failures.is_empty()),
        "{verdict:?}"
    );
}

/// jsonschema 0.61 reported `required` for a present, undeclared property when
/// `additionalProperties` is false and `required` names one property (the case proptest found).
#[test]
fn a_present_undeclared_required_property_fails_additional_properties_only() {
    let schema = json!({"additionalProperties": false, "properties": {}, "required": ["b"]});
    let tool = compiled(&schema);
    let SchemaCheck::Checked(whole) = tool.check(&json!({"b": null}), usize::MAX) else {
        panic!("checked");
    };
    let expected = BTreeSet::from([(String::new(), "/additionalProperties".to_owned())]);
    assert_eq!(paths(&whole), expected);
    agree(&schema, r#"{"b":null}"#, &[3], 1 << 20, true).expect("the two verdicts agree");
    let SchemaCheck::Checked(missing) = tool.check(&json!({}), usize::MAX) else {
        panic!("checked");
    };
    assert_eq!(
        paths(&missing),
        BTreeSet::from([(String::new(), "/required".to_owned())])
    );
}
