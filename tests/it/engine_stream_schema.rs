//! The streaming argument checker against the whole-document validator on the fixture corpus:
//! every schema a fixture's request declares, against every argument text its request or
//! response carries (whole strings, streamed fragments joined per key, and input objects),
//! split at every offset: JSON refused where serde refuses it, and the same schema failures
//! (instance and schema paths) whenever the stream says it checked everything; with a tiny
//! hold bound, `Incomplete` may replace a verdict but never adds or hides a failure.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use tooltap::engine::SchemaCache;
use tooltap::engine::dialect::chat::request::TOOLS;
use tooltap::engine::json_stream::JsonStream;
use tooltap::engine::schema::{SchemaCheck, StreamCheck, StreamPlan, StreamVerdict, ToolSchema};

use crate::engine_support::fixtures_dir;

const SCHEMA_KEYS: [&str; 5] = [
    "parameters",
    "input_schema",
    "inputSchema",
    "json",
    "parametersJsonSchema",
];

/// Every value under one of `keys` anywhere in `value`.
fn under<'v>(value: &'v Value, keys: &[&'static str], found: &mut Vec<(&'static str, &'v Value)>) {
    match value {
        Value::Object(members) => {
            for (key, member) in members {
                if let Some(&key) = keys.iter().find(|&&wanted| wanted == key) {
                    found.push((key, member));
                }
                under(member, keys, found);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| under(item, keys, found)),
        _ => {}
    }
}

/// The JSON documents of a fixture: its request, a buffered response, each SSE event's data.
fn documents(dir: &std::path::Path) -> Vec<Value> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let mut documents: Vec<Value> = ["request.json", "response.json"]
        .iter()
        .filter_map(|name| serde_json::from_str(&read(name)?).ok())
        .collect();
    if let Some(sse) = read("response.sse") {
        documents.extend(
            sse.lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .filter_map(|data| serde_json::from_str(data.trim()).ok()),
        );
    }
    documents
}

/// Argument texts: whole strings, fragments joined per key in order, objects written out.
fn argument_texts(documents: &[Value]) -> Vec<String> {
    let mut found = Vec::new();
    for document in documents {
        under(
            document,
            &["arguments", "partial_json", "input", "args"],
            &mut found,
        );
    }
    let mut texts: Vec<String> = Vec::new();
    let mut joined: Vec<(&str, String)> = Vec::new();
    for (key, value) in found {
        match value {
            Value::String(text) => {
                texts.push(text.clone());
                match joined.iter_mut().find(|(name, _)| *name == key) {
                    Some((_, all)) => all.push_str(text),
                    None => joined.push((key, text.clone())),
                }
            }
            Value::Object(_) => texts.push(value.to_string()),
            _ => {}
        }
    }
    texts.extend(joined.into_iter().map(|(_, all)| all));
    texts.sort();
    texts.dedup();
    texts
}

fn streamed(schema: &ToolSchema, text: &str, cut: usize, hold: usize) -> Option<StreamVerdict> {
    let plan = schema.stream_plan()?;
    let mut parser = JsonStream::new(hold);
    let mut check = StreamCheck::new(plan, hold, 16);
    let (head, tail) = text.as_bytes().split_at(cut);
    for piece in [head, tail] {
        parser.push(piece, &mut |event| check.event(event)).ok()?;
    }
    parser.finish(&mut |event| check.event(event)).ok()?;
    Some(check.verdict())
}

fn paths(failures: &[tooltap::engine::schema::SchemaFailure]) -> BTreeSet<(String, String)> {
    failures
        .iter()
        .map(|failure| (failure.instance_path.clone(), failure.schema_path.clone()))
        .collect()
}

#[test]
fn every_fixture_argument_is_judged_alike_streamed_and_whole() {
    let cache = SchemaCache::default();
    let mut pairs = 0;
    let mut failing = 0;
    let mut dirs: Vec<_> = std::fs::read_dir(fixtures_dir())
        .expect("fixtures")
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let documents = documents(&dir);
        let texts = argument_texts(&documents);
        let mut schemas = Vec::new();
        if let Some(request) = documents.first() {
            under(request, &SCHEMA_KEYS, &mut schemas);
        }
        for (_, schema) in schemas.into_iter().filter(|(_, schema)| schema.is_object()) {
            let tools =
                json!([{"type": "function", "function": {"name": "f", "parameters": schema}}]);
            let compiled = cache.tools_for(&tools, &TOOLS);
            let Some(tool) = compiled.get("f") else {
                continue;
            };
            let Some(plan) = tool.schema.stream_plan() else {
                continue;
            };
            for text in &texts {
                let whole = serde_json::from_str::<Value>(text)
                    .ok()
                    .map(|instance| tool.schema.check(&instance, 16));
                for cut in
                    (0..=text.len()).filter(|&cut| text.is_char_boundary(cut) || cut % 3 == 0)
                {
                    let verdict = streamed(&tool.schema, text, cut, 1 << 20);
                    let small = streamed(&tool.schema, text, cut, 4);
                    let shown =
                        || format!("{}: {text} against {schema}, cut at {cut}", dir.display());
                    let Some(SchemaCheck::Checked(expected)) = &whole else {
                        assert_eq!(verdict.is_none(), whole.is_none(), "{}", shown());
                        continue;
                    };
                    let expected = paths(expected);
                    match (verdict, matches!(*plan, StreamPlan::Streamed(_))) {
                        (Some(StreamVerdict::Checked(failures)), true) => {
                            assert_eq!(paths(&failures), expected, "{}", shown())
                        }
                        (Some(StreamVerdict::Incomplete(failures)), false) => {
                            assert!(failures.is_empty())
                        }
                        (other, _) => panic!("{other:?}: {}", shown()),
                    }
                    match small {
                        Some(StreamVerdict::Checked(failures)) => {
                            assert_eq!(paths(&failures), expected, "{}", shown())
                        }
                        Some(StreamVerdict::Incomplete(failures)) => {
                            assert!(paths(&failures).is_subset(&expected), "{}", shown())
                        }
                        None => panic!("refused: {}", shown()),
                    }
                    if cut == 0 {
                        pairs += 1;
                        failing += usize::from(!expected.is_empty());
                    }
                }
            }
        }
    }
    eprintln!("{pairs} schema and argument pairs, {failing} of them failing");
    // The corpus has schemas with arguments that pass and arguments that fail them.
    assert!(
        pairs > 200 && failing > 10,
        "{pairs} pairs, {failing} failing"
    );
}
