//! Property tests: generated valid tool-call streams (1–4 parallel calls, random argument
//! objects, random fragmenting, interleaving, line endings, keep-alives and byte splits) give
//! no violations and reassemble exactly; with one injected defect, exactly the matching rule
//! fires.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Value, json};
use tooltap::engine::{BodyEnd, EngineConfig, Exchange, Report, RuleId, SchemaCache};

const NAMES: [&str; 2] = ["get_weather", "get_time"];

fn request() -> Vec<u8> {
    let city = json!({"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"],"additionalProperties":false});
    json!({
        "model": "m", "stream": true, "messages": [{"role":"user","content":"x"}],
        "tools": [
            {"type":"function","function":{"name":NAMES[0],"parameters":city}},
            {"type":"function","function":{"name":NAMES[1],"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}
        ]
    })
    .to_string()
    .into_bytes()
}

#[derive(Debug, Clone)]
struct Call {
    name: &'static str,
    arguments: String,
    /// Byte offsets (on char boundaries) where the arguments string is cut into fragments.
    cuts: Vec<usize>,
}

fn call_strategy() -> impl Strategy<Value = Call> {
    (
        0..2usize,
        "[a-zA-Z é]{0,10}",
        prop::option::of(prop::bool::ANY),
        prop::collection::vec(0..64usize, 0..6),
    )
        .prop_map(|(which, city, unit, raw_cuts)| {
            let mut args = serde_json::Map::new();
            args.insert("city".into(), json!(city));
            if which == 0
                && let Some(celsius) = unit
            {
                args.insert("unit".into(), json!(if celsius { "c" } else { "f" }));
            }
            let arguments = Value::Object(args).to_string();
            let mut cuts: Vec<usize> = raw_cuts
                .into_iter()
                .map(|c| c % (arguments.len() + 1))
                .filter(|c| arguments.is_char_boundary(*c))
                .collect();
            cuts.sort_unstable();
            cuts.dedup();
            Call {
                name: NAMES[which],
                arguments,
                cuts,
            }
        })
}

/// One defect to inject; `rule` is the one that must fire.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Defect {
    None,
    IdRepeated,
    IdChanged,
    NameRepeated,
    NameChanged,
    NameUndeclared,
    ArgumentsNotObject,
    ArgumentsSchema,
    IndexSkips,
    FinishStop,
    FinishRepeated,
    DoneMissing,
    DataAfterDone,
    DataNotJson,
    ErrorEvent,
}

impl Defect {
    fn rule(self) -> Option<RuleId> {
        match self {
            Defect::None => None,
            Defect::IdRepeated => Some(RuleId::DeltaIdRepeated),
            Defect::IdChanged => Some(RuleId::DeltaIdChanged),
            Defect::NameRepeated => Some(RuleId::DeltaNameRepeated),
            Defect::NameChanged => Some(RuleId::DeltaNameChanged),
            Defect::NameUndeclared => Some(RuleId::ToolCallNameUndeclared),
            Defect::ArgumentsNotObject => Some(RuleId::ToolCallArgumentsNotObject),
            Defect::ArgumentsSchema => Some(RuleId::ToolCallArgumentsSchema),
            Defect::IndexSkips => Some(RuleId::DeltaIndexInvalid),
            Defect::FinishStop => Some(RuleId::FinishReasonNotToolCalls),
            Defect::FinishRepeated => Some(RuleId::FinishReasonRepeated),
            Defect::DoneMissing => Some(RuleId::SseDoneMissing),
            Defect::DataAfterDone => Some(RuleId::SseDataAfterDone),
            Defect::DataNotJson => Some(RuleId::SseDataNotJson),
            Defect::ErrorEvent => Some(RuleId::SseErrorEvent),
        }
    }
}

fn defect_strategy() -> impl Strategy<Value = Defect> {
    prop_oneof![
        Just(Defect::IdRepeated),
        Just(Defect::IdChanged),
        Just(Defect::NameRepeated),
        Just(Defect::NameChanged),
        Just(Defect::NameUndeclared),
        Just(Defect::ArgumentsNotObject),
        Just(Defect::ArgumentsSchema),
        Just(Defect::IndexSkips),
        Just(Defect::FinishStop),
        Just(Defect::FinishRepeated),
        Just(Defect::DoneMissing),
        Just(Defect::DataAfterDone),
        Just(Defect::DataNotJson),
        Just(Defect::ErrorEvent),
    ]
}

#[derive(Debug, Clone)]
struct Plan {
    calls: Vec<Call>,
    /// Picks which call's next fragment goes out next (modulo the calls with fragments left).
    order: Vec<usize>,
    line_end: &'static str,
    keepalive_every: usize,
    usage_chunk: bool,
    byte_cuts: Vec<usize>,
}

fn plan_strategy() -> impl Strategy<Value = Plan> {
    (
        prop::collection::vec(call_strategy(), 1..=4),
        prop::collection::vec(0..4usize, 0..40),
        prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
        0..4usize,
        prop::bool::ANY,
        prop::collection::vec(0..4096usize, 0..12),
    )
        .prop_map(
            |(calls, order, line_end, keepalive_every, usage_chunk, byte_cuts)| Plan {
                calls,
                order,
                line_end,
                keepalive_every,
                usage_chunk,
                byte_cuts,
            },
        )
}

fn chunk(delta: Value, finish: Value) -> Value {
    json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":delta,"finish_reason":finish}]})
}

/// The tool-call items of each call, in order; the first carries id, type and name.
fn fragments(plan: &Plan, defect: Defect) -> Vec<Vec<Value>> {
    let count = plan.calls.len();
    plan.calls
        .iter()
        .enumerate()
        .map(|(k, call)| {
            let index = if defect == Defect::IndexSkips && k == count - 1 { count as u64 + 1 } else { k as u64 };
            let arguments = match (defect, k) {
                (Defect::ArgumentsNotObject, 0) => "[1,2]".to_owned(),
                (Defect::ArgumentsSchema, 0) => r#"{"city":5}"#.to_owned(),
                _ => call.arguments.clone(),
            };
            let mut bounds = vec![0];
            bounds.extend(call.cuts.iter().copied().filter(|c| *c <= arguments.len() && arguments.is_char_boundary(*c)));
            bounds.push(arguments.len());
            let name = if defect == Defect::NameUndeclared && k == 0 { "get_forecast" } else { call.name };
            let mut items: Vec<Value> = bounds
                .windows(2)
                .map(|w| json!({"index": index, "function": {"arguments": &arguments[w[0]..w[1]]}}))
                .collect();
            items[0] = json!({"index": index, "id": format!("call_{k}"), "type": "function", "function": {"name": name, "arguments": &arguments[bounds[0]..bounds[1]]}});
            if k == 0 {
                let extra = match defect {
                    Defect::IdRepeated => Some(json!({"index": index, "id": "call_0"})),
                    Defect::IdChanged => Some(json!({"index": index, "id": "call_other"})),
                    Defect::NameRepeated => Some(json!({"index": index, "function": {"name": name}})),
                    Defect::NameChanged => Some(json!({"index": index, "function": {"name": "get_other"}})),
                    _ => None,
                };
                items.extend(extra);
            }
            items
        })
        .collect()
}

/// Serializes the plan as SSE bytes.
fn render(plan: &Plan, defect: Defect) -> Vec<u8> {
    let mut queues: Vec<std::collections::VecDeque<Value>> = fragments(plan, defect)
        .into_iter()
        .map(Into::into)
        .collect();
    let mut events =
        vec![chunk(json!({"role":"assistant","content":null}), Value::Null).to_string()];
    let mut picks = plan.order.iter().copied().cycle();
    // Indexes open in order (a valid stream never skips one), then interleave freely.
    let mut opened = 0;
    while queues.iter().any(|q| !q.is_empty()) {
        let open: Vec<usize> = (0..queues.len())
            .filter(|k| !queues[*k].is_empty() && *k <= opened)
            .collect();
        let k = open[picks.next().unwrap_or(0) % open.len()];
        if k == opened {
            opened += 1;
        }
        let item = queues[k].pop_front().expect("non-empty queue");
        events.push(chunk(json!({"tool_calls": [item]}), Value::Null).to_string());
        if defect == Defect::DataNotJson && events.len() == 2 {
            events.push("{\"choices\": [".to_owned());
        }
        if defect == Defect::ErrorEvent && events.len() == 2 {
            events.push(json!({"error": {"message": "overloaded"}}).to_string());
        }
    }
    let finish = if defect == Defect::FinishStop {
        "stop"
    } else {
        "tool_calls"
    };
    events.push(chunk(json!({}), json!(finish)).to_string());
    if defect == Defect::FinishRepeated {
        events.push(chunk(json!({}), json!("tool_calls")).to_string());
    }
    if plan.usage_chunk {
        events.push(json!({"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"total_tokens":3}}).to_string());
    }
    if defect != Defect::DoneMissing {
        events.push("[DONE]".to_owned());
    }
    if defect == Defect::DataAfterDone {
        events.push(chunk(json!({}), Value::Null).to_string());
    }
    let eol = plan.line_end;
    let mut out = String::new();
    for (n, event) in events.iter().enumerate() {
        if plan.keepalive_every > 0 && n % plan.keepalive_every == 0 {
            out.push_str(&format!(": ping{eol}"));
        }
        out.push_str(&format!("data: {event}{eol}{eol}"));
    }
    out.into_bytes()
}

fn check(plan: &Plan, bytes: &[u8]) -> Report {
    let config = Arc::new(EngineConfig::default());
    let cache = SchemaCache::default();
    let mut exchange = Exchange::new(&config, &cache, &request());
    exchange.response_head(crate::engine_support::sse_head());
    let mut cuts: Vec<usize> = plan
        .byte_cuts
        .iter()
        .map(|c| c % (bytes.len() + 1))
        .collect();
    cuts.sort_unstable();
    let mut start = 0;
    for cut in cuts.into_iter().chain([bytes.len()]) {
        exchange.feed(&bytes[start..cut]);
        start = cut;
    }
    exchange.finish(BodyEnd::Complete)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn valid_streams_are_clean_and_reassemble_exactly(plan in plan_strategy()) {
        let report = check(&plan, &render(&plan, Defect::None));
        prop_assert!(report.violations.is_empty(), "{:?}", report.violations);
        let calls = &report.choices[0].tool_calls;
        prop_assert_eq!(calls.len(), plan.calls.len());
        for (k, (got, want)) in calls.iter().zip(&plan.calls).enumerate() {
            prop_assert_eq!(got.index as usize, k);
            prop_assert_eq!(got.id.clone(), Some(format!("call_{k}")));
            prop_assert_eq!(got.name.as_deref(), Some(want.name));
            prop_assert_eq!(got.arguments.clone(), Some(Value::String(want.arguments.clone())));
        }
        prop_assert_eq!(report.choices[0].finish_reason.as_deref(), Some("tool_calls"));
        prop_assert_eq!(report.usage.is_some(), plan.usage_chunk);
    }

    #[test]
    fn one_injected_defect_fires_exactly_its_rule(plan in plan_strategy(), defect in defect_strategy()) {
        let report = check(&plan, &render(&plan, defect));
        let fired: std::collections::BTreeSet<RuleId> = report.violations.iter().map(|v| v.rule).collect();
        let expected: std::collections::BTreeSet<RuleId> = defect.rule().into_iter().collect();
        prop_assert_eq!(fired, expected, "{:?}: {:?}", defect, report.violations);
    }
}
