//! Gemini's request rules over adversarial requests: 10,000 declarations (every name twice,
//! each with an OBJECT schema to walk), 10,000 history contents (every step of the current turn
//! judged for its signature, every answer paired), one turn of 10,000 parallel calls answered
//! out of order (pairing by name must not search), and 10,000 allowed names. Each costs linear
//! work (CPU at 4x the size at most [`CPU_GROWTH`] times more), and what the rules hold stays
//! within what parsing the request takes: the exchange's peak resident memory exceeds that of a
//! same-sized request the rules find clean (its twin) by at most the parse's peak and the
//! capped violation list.
//!
//! Requests are written as text, never built as a `Value`, so that no freed tree of the same
//! shape is there for the measured parse to reuse.

use std::fmt::Write;
use std::sync::Arc;

use serde_json::Value;
use tooltap::engine::{Dialect, EngineConfig, Stage};

use super::shapes::Case;
use super::{
    CPU_FLOOR, CPU_GROWTH, CPU_TICK, child_measured, measure, measured_field, run, status_bytes,
    verbose,
};

/// A request shape: `n` declarations, contents, calls or names. `twin` is a request of about
/// the same size and shape that the rules find clean.
struct RequestShape {
    name: &'static str,
    make: fn(usize) -> String,
    twin: fn(usize) -> String,
}

/// The smaller size measured (the larger is four times it, the issue's 10,000).
const N: usize = 2_500;

const SHAPES: &[RequestShape] = &[
    RequestShape {
        name: "many_declarations",
        make: |n| declarations(n, true),
        twin: |n| declarations(n, false),
    },
    RequestShape {
        name: "many_contents",
        make: |n| contents(n, true),
        twin: |n| contents(n, false),
    },
    RequestShape {
        name: "many_parallel_answers",
        make: |n| parallel_answers(n, true),
        twin: |n| parallel_answers(n, false),
    },
    RequestShape {
        name: "many_allowed_names",
        make: |n| allowed_names(n, true),
        twin: |n| allowed_names(n, false),
    },
];

const QUESTION: &str = r#"{"role":"user","parts":[{"text":"go"}]}"#;
const SIGNATURE: &str = "c2lnbmF0dXJl";

/// `n` declarations, each with an OBJECT schema holding an inner OBJECT; `broken`: every name
/// twice and the inner OBJECT without properties.
fn declarations(n: usize, broken: bool) -> String {
    let mut out = format!(r#"{{"contents":[{QUESTION}],"tools":[{{"functionDeclarations":["#);
    for i in 0..n {
        let (name, inner) = if broken {
            (i / 2, "{}")
        } else {
            (i, r#"{"b":{"type":"STRING"}}"#)
        };
        let comma = if i == 0 { "" } else { "," };
        let _ = write!(
            out,
            r#"{comma}{{"name":"f{name}","parameters":{{"type":"OBJECT","properties":{{"a":{{"type":"OBJECT","properties":{inner}}}}}}}}}"#
        );
    }
    out.push_str("]}]}");
    out
}

/// `n` contents after one question: model turns of two calls with ids, each answered;
/// `broken`: the first call unsigned and the answers' ids swapped and wrong.
fn contents(n: usize, broken: bool) -> String {
    let mut out = format!(r#"{{"contents":[{QUESTION}"#);
    for i in 0..n / 2 {
        let (signature, first, second) = if broken {
            ("", format!("b{i}"), format!("x{i}"))
        } else {
            (SIGNATURE, format!("a{i}"), format!("b{i}"))
        };
        let _ = write!(
            out,
            r#",{{"role":"model","parts":[{{"functionCall":{{"name":"f","args":{{}},"id":"a{i}"}},"thoughtSignature":"{signature}"}},{{"functionCall":{{"name":"f","args":{{}},"id":"b{i}"}}}}]}},{{"role":"user","parts":[{{"functionResponse":{{"name":"f","response":{{}},"id":"{first}"}}}},{{"functionResponse":{{"name":"f","response":{{}},"id":"{second}"}}}}]}}"#
        );
    }
    out.push_str(r#"],"tools":[{"functionDeclarations":[{"name":"f"}]}]}"#);
    out
}

/// One model turn of `n` calls of one name with ids; `broken`: answered without ids (each
/// paired by name, each an id mismatch), else answered by id in reverse order.
fn parallel_answers(n: usize, broken: bool) -> String {
    let mut out = format!(r#"{{"contents":[{QUESTION},{{"role":"model","parts":["#);
    for i in 0..n {
        let comma = if i == 0 { "" } else { "," };
        let _ = write!(
            out,
            r#"{comma}{{"functionCall":{{"name":"f","args":{{}},"id":"c{i}"}},"thoughtSignature":"{SIGNATURE}"}}"#
        );
    }
    out.push_str(r#"]},{"role":"user","parts":["#);
    for i in (0..n).rev() {
        let comma = if i + 1 == n { "" } else { "," };
        let id = if broken {
            format!("z{i}")
        } else {
            format!("c{i}")
        };
        let _ = write!(
            out,
            r#"{comma}{{"functionResponse":{{"name":"f","response":{{}},"id":"{id}"}}}}"#
        );
    }
    out.push_str(r#"]}],"tools":[{"functionDeclarations":[{"name":"f"}]}]}"#);
    out
}

/// `n` declarations and `n` allowed names with mode VALIDATED; `broken`: half of the names
/// undeclared, mode AUTO.
fn allowed_names(n: usize, broken: bool) -> String {
    let mut out = format!(r#"{{"contents":[{QUESTION}],"tools":[{{"functionDeclarations":["#);
    for i in 0..n {
        let comma = if i == 0 { "" } else { "," };
        let _ = write!(out, r#"{comma}{{"name":"f{i}"}}"#);
    }
    let mode = if broken { "AUTO" } else { "VALIDATED" };
    let _ = write!(
        out,
        r#"]}}],"toolConfig":{{"functionCallingConfig":{{"mode":"{mode}","allowedFunctionNames":["#
    );
    for i in 0..n {
        let comma = if i == 0 { "" } else { "," };
        let name = if broken { 2 * i } else { i };
        let _ = write!(out, r#"{comma}"f{name}""#);
    }
    out.push_str("]}}}");
    out
}

fn case(request: String) -> Case {
    let answer = r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP","index":0}]}"#;
    Case {
        dialect: Dialect::Gemini,
        path: Some("/v1beta/models/gemini-3-flash:generateContent"),
        request: request.into_bytes(),
        content_type: "application/json",
        frames: vec![answer.as_bytes().to_vec()],
    }
}

const CHILD_SPEC: &str = "ENGINE_COST_GEMINI_REQUEST";

/// In a child process: for the shape the environment names (`shape/n/what`), parses the
/// request (`parse`), or runs the whole exchange of the request (`exchange`) or of its twin
/// (`twin`), and prints the peak resident bytes above those before. A no-op in the ordinary
/// test run.
#[test]
fn child_measures_one_gemini_request() {
    let Ok(spec) = std::env::var(CHILD_SPEC) else {
        return;
    };
    let mut parts = spec.split('/');
    let (Some(name), Some(n), Some(what)) = (parts.next(), parts.next(), parts.next()) else {
        panic!("bad spec {spec}");
    };
    let shape = SHAPES.iter().find(|s| s.name == name).expect("shape");
    let n = n.parse().expect("n");
    let request = if what == "twin" {
        (shape.twin)(n)
    } else {
        (shape.make)(n)
    };
    let case = case(request);
    let config = Arc::new(EngineConfig::default());
    let before = status_bytes("VmRSS:");
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let held = match what {
        "parse" => usize::from(serde_json::from_slice::<Value>(&case.request).is_ok()),
        _ => run(&case, &config).1.violations.len(),
    };
    let peak = status_bytes("VmHWM:").saturating_sub(before);
    println!("MEASURED peak={peak} held={held}");
}

fn peak(shape: &RequestShape, n: usize, what: &str) -> usize {
    let line = child_measured(
        "gemini_request::child_measures_one_gemini_request",
        &[(CHILD_SPEC, format!("{}/{n}/{what}", shape.name))],
    );
    measured_field(&line, "peak").parse().unwrap_or(0)
}

/// Room for the violation list (capped at `inspect.max_violations`, each detail bounded) and
/// the allocator's slack.
const SLACK: usize = 4 * 1024 * 1024;

#[test]
fn gemini_request_rules_cost_linear_work_and_memory_within_the_parse() {
    let config = Arc::new(EngineConfig::default());
    let mut failures = Vec::new();
    for shape in SHAPES {
        let small_case = case((shape.make)(N));
        let large_case = case((shape.make)(4 * N));
        let (small, _) = measure(&small_case, &config);
        let (large, _) = measure(&large_case, &config);
        let growth = large.cpu.as_secs_f64() / small.cpu.max(CPU_TICK).as_secs_f64();
        let parse = peak(shape, 4 * N, "parse");
        let exchange = peak(shape, 4 * N, "exchange");
        let twin = peak(shape, 4 * N, "twin");
        if verbose() {
            eprintln!(
                "gemini {:<22} request={:>8}..{:>8} cpu={:>7.1?}..{:>7.1?} ({growth:.1}x) peak: parse={parse} exchange={exchange} twin={twin}",
                shape.name,
                small_case.request.len(),
                large_case.request.len(),
                small.cpu,
                large.cpu,
            );
        }
        if large.cpu > CPU_FLOOR && growth > CPU_GROWTH {
            failures.push(format!(
                "{}: CPU {:?} then {:?} at 4x the size ({growth:.1}x)",
                shape.name, small.cpu, large.cpu
            ));
        }
        if exchange > twin + parse + SLACK {
            failures.push(format!(
                "{}: {exchange} bytes resident at the peak, {twin} for its clean twin, {parse} to parse it",
                shape.name
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The shapes reach the rules (each broken one reports violations, its twin none), so the
/// work and memory measured above are the rules'.
#[test]
fn the_gemini_request_shapes_are_judged_and_their_twins_clean() {
    let config = Arc::new(EngineConfig::default());
    for shape in SHAPES {
        let (_, broken) = run(&case((shape.make)(N)), &config);
        assert!(
            broken.violations.len() + broken.violations_not_listed as usize >= N / 2,
            "{}: {} violations",
            shape.name,
            broken.violations.len()
        );
        let (_, twin) = run(&case((shape.twin)(N)), &config);
        let judged = twin.violations.iter().find(|v| v.stage == Stage::Request);
        assert!(judged.is_none(), "{}: {judged:?}", shape.name);
    }
}
